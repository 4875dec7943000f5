"""The engine's joint-action contractions (``markovgames.dynamics._tensor``) against NumPy einsum.

Each contraction has two paths: a broadcast multiply and sum (joint action spaces up to
``FUSED_CONTRACTION_MAX_JOINT``) and ``einsum`` (larger ones); both are checked, for a single
run (no run axis) and for a batch (a trailing run axis), against an einsum written from the
formulas in the module docstring.
"""

from __future__ import annotations

import string

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames.dynamics import _tensor

LETTERS = string.ascii_lowercase


def _references(x, joint, policies, player, num_players, runs):
    """NumPy einsums of the five contractions, leading axis ``s``, trailing run axis ``z`` if ``runs``."""
    acts = LETTERS[:num_players]
    z = "z" if runs else ""
    own = "y"
    x_axes = acts[:player] + own + acts[player + 1 :]
    others = ",".join(f"s{acts[k]}{z}" for k in range(num_players) if k != player)
    return {
        "others": np.einsum(
            f"s{acts}{z}" + ("," + others if others else "") + f"->s{acts[player]}{z}",
            x,
            *[p for k, p in enumerate(policies) if k != player],
        ),
        "joint": np.einsum(",".join(f"s{a}{z}" for a in acts) + f"->s{acts}{z}", *policies),
        "joint_expectation": np.einsum(f"s{acts}{z},s{acts}{z}->s{z}", x, joint),
        "marginal": np.einsum(f"s{x_axes}{z},s{acts}{z}->s{own}{z}", x, joint),
        "swap": np.einsum(f"s{acts}{z},s{x_axes}{z}->s{acts[player]}{own}{z}", joint, x),
    }


@settings(max_examples=examples(8, 40), deadline=None)
@given(
    actions=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    player_seed=st.integers(0, 10**6),
    runs=st.sampled_from([0, 1, 3]),
    fused=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_contractions_match_einsum(actions, player_seed, runs, fused, seed):
    num_players = len(actions)
    player = player_seed % num_players
    rng = np.random.default_rng(seed)
    run_shape = (runs,) if runs else ()
    states = 3
    # x_i has player i's own action (b in the formulas) at its axis; with equal A_i that is the
    # same shape as a joint-action tensor.
    x = rng.random((states, *actions, *run_shape))
    policies = [rng.dirichlet(np.ones(a), size=(states, *run_shape)) for a in actions]
    if runs:
        policies = [np.moveaxis(p, -1, -2) for p in policies]  # (S, A_k, R)
    joint_np = np.einsum(
        ",".join(f"s{LETTERS[k]}{'z' if runs else ''}" for k in range(num_players))
        + f"->s{LETTERS[:num_players]}{'z' if runs else ''}",
        *policies,
    )
    want = _references(x, joint_np, policies, player, num_players, runs)
    run_axes = 1 if runs else 0

    def contractions(xj, pj):
        joint = _tensor.joint_product(pj, run_axes)
        return {
            "others": _tensor.others_expectation(xj, pj, player, run_axes),
            "joint": joint,
            "joint_expectation": _tensor.joint_expectation(xj, joint, num_players, run_axes),
            "marginal": _tensor.marginal_expectation(xj, joint, player, num_players, run_axes),
            "swap": _tensor.swap_expectation(joint, xj, player, num_players, run_axes),
        }

    limit = _tensor.FUSED_CONTRACTION_MAX_JOINT
    try:
        _tensor.FUSED_CONTRACTION_MAX_JOINT = limit if fused else 0
        with jax.enable_x64(True):
            # One compiled call (as in the engine), traced while the path is forced: the five
            # contractions compile together instead of op by op.
            got = jax.jit(contractions)(jnp.asarray(x), [jnp.asarray(p) for p in policies])
    finally:
        _tensor.FUSED_CONTRACTION_MAX_JOINT = limit
    for name, value in want.items():
        np.testing.assert_allclose(np.asarray(got[name]), value, rtol=1e-13, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("run_axes", [0, 1])
def test_swap_expectation_of_a_product_is_an_outer_product(run_axes):
    """For a product distribution, ``sum_{a_-i} pi(a, a_-i) x(b, a_-i) = pi_i(a) [x pi_-i](b)``:
    the identity the smooth recursion uses instead of the swap matrix (Algorithm 3's CE bound)."""
    rng = np.random.default_rng(3)
    shape = (4, 2, 3, 2) + ((5,) if run_axes else ())
    policies = [rng.dirichlet(np.ones(a), size=(4,) + ((5,) if run_axes else ())) for a in (2, 3, 2)]
    if run_axes:
        policies = [np.moveaxis(p, -1, -2) for p in policies]
    x = rng.random((4, 2, 3, 2) + ((5,) if run_axes else ()))
    # x for player 1 has that player's played action b at axis 2: A_1 = 3 there too.
    assert x.shape == shape

    def swap_and_utility(xj, pj):
        joint = _tensor.joint_product(pj, run_axes)
        return _tensor.swap_expectation(joint, xj, 1, 3, run_axes), _tensor.others_expectation(xj, pj, 1, run_axes)

    with jax.enable_x64(True):
        swap, u = map(np.asarray, jax.jit(swap_and_utility)(jnp.asarray(x), [jnp.asarray(p) for p in policies]))
    own = policies[1]
    outer = own[:, :, None] * u[:, None, :]  # (S, a, b, R?)
    np.testing.assert_allclose(swap, outer, rtol=1e-13, atol=1e-15)
