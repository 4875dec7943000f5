"""Step sizes, weights and stage lengths (docs/explanation.md: step sizes and weights, stage_cce), against exact rational arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from markovgames.dynamics import (
    oftrl_decay,
    smooth_step_size,
    stage_lengths,
    stage_schedule,
    theory_eta_smooth,
    theory_eta_stage,
)


def _alpha_exact(H, t):
    return Fraction(H + 1, H + t)


@pytest.mark.parametrize("H", [1, 2, 5, 50])
def test_alpha_weights_are_binomial_ratios_and_sum_to_one(H):
    for t in [1, 2, 7, 30]:
        weights = []
        for j in range(1, t + 1):
            a = _alpha_exact(H, j)
            for k in range(j + 1, t + 1):
                a *= 1 - _alpha_exact(H, k)
            weights.append(a)
        assert sum(weights) == 1
        W_t = math.comb(H + t, H + 1)
        for j, a in enumerate(weights, start=1):
            assert a == Fraction(math.comb(H + j - 1, H), W_t)  # alpha_t^j = w_j / W_t
        assert float(smooth_step_size(t, H)) == float(_alpha_exact(H, t))


@pytest.mark.parametrize("H", [1, 2, 5, 50])
def test_decay_recursion_equals_exact_normalised_sum(H):
    # G^t = rho_t G^{t-1} + u^t equals sum_j w_j u^j / w_t: compare floats to exact rationals.
    rng = np.random.default_rng(H)
    us = rng.random(200)
    g = 0.0
    exact_num = Fraction(0)
    for t in range(1, 201):
        g = float(oftrl_decay(t, H)) * g + us[t - 1]
        exact_num += math.comb(H + t - 1, H) * Fraction(us[t - 1])
        exact = exact_num / math.comb(H + t - 1, H)
        assert abs(g - float(exact)) <= 1e-13 * float(exact)


@pytest.mark.parametrize("H", [2, 50])
def test_decay_recursion_exact_at_ten_million_iterations(H):
    # With u = 1, sum_{j<=t} w_j / w_t = W_t / w_t = (H + t) / (H + 1) in closed form.
    T = 10_000_000
    with jax.enable_x64(True):

        def step(g, t):
            g = (t - 1.0) / (H + t - 1.0) * g + 1.0
            return g, None

        g, _ = jax.lax.scan(step, jnp.float64(0.0), jnp.arange(1, T + 1, dtype=jnp.float64))
    expected = (H + T) / (H + 1)
    assert abs(float(g) - expected) / expected < 1e-9


def test_stage_lengths_golden():
    # L_1 = H, L_{tau+1} = floor((1 + 1/H) L_tau); computed by hand.
    assert stage_lengths(2, 40) == [2, 3, 4, 6, 9, 13, 19]
    assert stage_lengths(1, 10) == [1, 2, 4, 8]
    assert stage_lengths(3, 20) == [3, 4, 5, 6, 8]


@pytest.mark.parametrize("H,T", [(1, 1), (2, 1), (2, 37), (3, 100), (5, 1000)])
def test_stage_schedule_consistency(H, T):
    sched = stage_schedule(H, T)
    assert sched.num_iterations == T
    ends = np.flatnonzero(sched.is_end) + 1
    complete = np.cumsum(sched.lengths)
    np.testing.assert_array_equal(ends, complete[complete <= T])
    assert sched.position.min() == 1
    assert np.all(sched.position <= sched.length)
    assert np.all(np.diff(sched.stage) >= 0)


def test_theory_rates():
    assert theory_eta_smooth(2, 2, 2) == pytest.approx(1 / (256 * 2 * 2 * 2))
    np.testing.assert_allclose(theory_eta_stage(2, [1, 2, 100]), [0.5, 0.5, 1 / (2 * math.log(100) ** 4)])
