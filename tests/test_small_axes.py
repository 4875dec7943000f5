"""Reductions by slices over short axes equal jnp.sum / jnp.max (float64), and float32 keeps XLA's own;
`materialized` is the identity, bit for bit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames._small_axes import materialized, small_max, small_sum


@settings(max_examples=examples(15, 40), deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
    keepdims=st.booleans(),
)
def test_small_reductions_equal_numpy(shape, data, keepdims):
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim, unique_by=lambda a: a % ndim))
    x = np.random.default_rng(len(shape) + sum(shape)).normal(size=shape)
    with jax.enable_x64(True):
        # Both reductions in one compiled call (as in the engine) rather than op by op.
        reduce = jax.jit(lambda y: (small_sum(y, tuple(axes), keepdims=keepdims), small_max(y, tuple(axes), keepdims=keepdims)))
        got_sum, got_max = map(np.asarray, reduce(jnp.asarray(x)))
    np.testing.assert_allclose(got_sum, np.sum(x, axis=tuple(axes), keepdims=keepdims), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(got_max, np.max(x, axis=tuple(axes), keepdims=keepdims))


def test_single_axis_and_float32_path():
    x = np.arange(24.0).reshape(2, 3, 4)
    with jax.enable_x64(True):
        assert small_sum(jnp.asarray(x), -1).shape == (2, 3)
        np.testing.assert_array_equal(small_sum(jnp.asarray(x), 1, keepdims=True), x.sum(axis=1, keepdims=True))
    x32 = jnp.asarray(x, dtype=jnp.float32)
    np.testing.assert_array_equal(small_sum(x32, (0, 2)), x.sum(axis=(0, 2)).astype(np.float32))


@settings(max_examples=examples(20, 60), deadline=None)
@given(dtype=st.sampled_from([np.float64, np.float32]), data=st.data())
def test_materialized_is_the_identity_bit_for_bit(dtype, data):
    width = 64 if dtype == np.float64 else 32
    values = data.draw(st.lists(st.floats(width=width), min_size=1, max_size=12))
    # Signed zeros, infinities, NaN and subnormals always included: max(x, -inf) returns x itself.
    tiny = float(np.finfo(dtype).smallest_subnormal)
    x = np.array(values + [0.0, -0.0, -np.inf, np.inf, np.nan, tiny, -tiny], dtype=dtype)
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(materialized)(jnp.asarray(x)))
    assert got.dtype == x.dtype
    bits = np.uint64 if dtype == np.float64 else np.uint32
    number = ~np.isnan(x)
    np.testing.assert_array_equal(got[number].view(bits), x[number].view(bits))
    assert np.isnan(got[~number]).all()
