"""The sampled feedback's estimators: unbiased, with the variance they are documented to have.

Each statistical test draws ``M`` independent estimates (the draws of iterations ``1..M`` of one
run key: independent by construction) and compares their mean and variance with the exact
expectation and variance, entry by entry, with z-scores. The seeds are fixed, so each test is
deterministic; the thresholds are set so that an estimator that *is* unbiased with the stated
variance would fail a test with probability at most ``FALSE_ALARM`` (two-sided normal tails,
Bonferroni over the entries). The normal approximation is good at these ``M`` (the estimates are
bounded).

``sample_onehot`` (the loop's draw) and ``sample_index`` (the literal one) are checked to pick
the same item for every uniform number, so the literal references fed the same numbers draw the
same actions and states.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import case, examples
from markovgames._schedules import smooth_step_size
from markovgames.dynamics._feedback import (
    Estimator,
    parse_feedback,
    run_key_data,
    sample_index,
    sample_onehot,
    smoothed_target_variance,
    target_variance,
    utility_variance,
)
from markovgames.dynamics._smooth import smooth_q_update
from markovgames.dynamics._value_update import GameArrays

#: The probability that a test of an unbiased estimator with the stated variance fails.
FALSE_ALARM = 1e-6

#: Independent estimates per test.
M = 20_000


def _threshold(entries: int) -> float:
    """The |z| beyond which one of ``entries`` z-scores fails, at `FALSE_ALARM` in all (Bonferroni)."""
    return NormalDist().inv_cdf(1.0 - FALSE_ALARM / (2 * entries))


def _game(rng, num_players: int, num_actions: int, num_states: int = 2, horizon: int = 2) -> GameArrays:
    shape = (horizon, num_states) + (num_actions,) * num_players
    transitions = rng.dirichlet(np.full(num_states, 0.7), size=shape)
    transitions[0, 0, (0,) * num_players] = np.eye(num_states)[1]  # a deterministic row
    return GameArrays(
        rewards=jnp.asarray(rng.random((horizon, num_players, num_states) + (num_actions,) * num_players)),
        transitions=jnp.asarray(transitions),
        initial_state=jnp.asarray(0, jnp.int32),
        eta=jnp.ones(num_players),
        key=jnp.asarray(run_key_data(20261128)),
    )


def _policies(rng, num_players: int, num_actions: int, num_states: int = 2, horizon: int = 2) -> tuple:
    out = []
    for i in range(num_players):
        p = rng.dirichlet(np.ones(num_actions), size=(horizon, num_states))
        if i == 0:
            p[0, 0] = np.eye(num_actions)[0]  # a pure strategy (zero-probability actions)
        out.append(jnp.asarray(p))
    return tuple(out)


def _moments_of_mean(values: np.ndarray, probs: np.ndarray, samples: int):
    """Exact mean, variance and fourth central moment of the mean of ``samples`` independent draws
    of a discrete variable taking ``values`` with ``probs`` (along the last axis)."""
    mean = np.sum(probs * values, axis=-1)
    centred = values - mean[..., None]
    var1 = np.sum(probs * centred**2, axis=-1)
    mu4 = np.sum(probs * centred**4, axis=-1)
    var_k = var1 / samples
    mu4_k = (mu4 + 3 * (samples - 1) * var1**2) / samples**3
    return mean, var_k, mu4_k


def _check_mean_and_variance(estimates: np.ndarray, mean, var, mu4, label: str, limit: float) -> None:
    """z-scores of the sample mean and the sample variance of ``estimates`` (``M`` along axis 0),
    each within ``limit`` (`_threshold` of all the z-scores of the test)."""
    stochastic = var > 1e-15  # deterministic entries must be exact
    observed_mean = estimates.mean(axis=0)
    np.testing.assert_allclose(observed_mean[~stochastic], mean[~stochastic], rtol=0, atol=1e-12, err_msg=label)
    observed_var = estimates.var(axis=0, ddof=1)
    z_mean = (observed_mean - mean)[stochastic] / np.sqrt(var[stochastic] / M)
    # Var(s^2) ~ (mu4 - sigma^4) / M for large M.
    z_var = (observed_var - var)[stochastic] / np.sqrt((mu4 - var**2)[stochastic] / M)
    if not stochastic.any():
        return
    assert np.max(np.abs(z_mean)) < limit, f"{label}: mean off by z = {np.max(np.abs(z_mean)):.2f}"
    assert np.max(np.abs(z_var)) < limit, f"{label}: variance off by z = {np.max(np.abs(z_var)):.2f}"


def _estimates(game: GameArrays, samples: int, fn):
    """``fn(estimator)`` for the draws of iterations 1..M (one compiled vmap)."""
    feedback = parse_feedback(f"sampled:{samples}")
    with jax.enable_x64(True):
        ts = jnp.arange(1, M + 1, dtype=jnp.int32)
        return np.asarray(jax.jit(jax.vmap(lambda t: fn(Estimator(feedback, game, t, 0))))(ts))


# Two and three players, one sample and several: by default each player count with one of them
# (the estimates of two players and of more are two codes; the samples are an axis of the draws,
# summed by one code at these sizes); all four in the full mode.
@pytest.mark.parametrize(
    ("num_players", "samples"),
    [
        case(2, 1, default=False, id="2-1"),
        case(2, 3, default=True, id="2-3"),
        case(3, 1, default=True, id="3-1"),
        case(3, 4, default=False, id="3-4"),
    ],
)
def test_the_utility_estimate_is_unbiased_with_the_stated_variance(num_players, samples):
    rng = np.random.default_rng(100 + 10 * num_players + samples)
    with jax.enable_x64(True):
        game = _game(rng, num_players, num_actions=2)
        policies = _policies(rng, num_players, num_actions=2)
        q = jnp.asarray(rng.random(game.rewards.shape))  # (H, N, S, A...)
    estimates = _estimates(game, samples, lambda e: jnp.stack(e.utilities(q, policies)))  # (M, N, H, S, A)
    q_np, pols = np.asarray(q), [np.asarray(p) for p in policies]
    horizon, _, num_states = q_np.shape[:3]
    limit = _threshold(2 * estimates[0].size)  # a mean and a variance per entry
    for i in range(num_players):
        # Exact distribution of one sample Q_i(s, a_i, a_-i): over the others' joint actions.
        others = [j for j in range(num_players) if j != i]
        for h in range(horizon):
            for s in range(num_states):
                q_i = np.moveaxis(q_np[h, i, s], i, 0).reshape(2, -1)  # (A_i, joint others)
                probs = np.ones(1)
                for j in others:
                    probs = np.multiply.outer(probs, pols[j][h, s]).ravel()
                mean, var, mu4 = _moments_of_mean(q_i, np.broadcast_to(probs, q_i.shape), samples)
                # The documented variance formula agrees with the exact one.
                stated = utility_variance(q_np[h, i], [p[h] for p in pols], i, samples)[s]
                np.testing.assert_allclose(stated, var, rtol=1e-12, atol=1e-15)
                _check_mean_and_variance(estimates[:, i, h, s], mean, var, mu4, f"player {i}, h={h}, s={s}", limit)


@pytest.mark.parametrize("samples", [1, 5])
def test_the_bellman_target_estimate_is_unbiased_with_the_stated_variance(samples):
    rng = np.random.default_rng(7 + samples)
    with jax.enable_x64(True):
        game = _game(rng, num_players=2, num_actions=2, num_states=3)
    v_next = rng.random(3)
    estimates = _estimates(game, samples, lambda e: e.kernel(game.transitions)[:-1] @ jnp.asarray(v_next))
    p = np.asarray(game.transitions)[:-1]  # (H-1, S, A, A, S')
    mean, var, mu4 = _moments_of_mean(np.broadcast_to(v_next, p.shape), p, samples)
    np.testing.assert_allclose(target_variance(p, v_next, samples), var, rtol=1e-12, atol=1e-15)
    _check_mean_and_variance(estimates, mean, var, mu4, "P_h V", _threshold(2 * mean.size))


def test_the_smooth_update_averages_the_targets_variance():
    """The smooth update's ``Q_hat^T`` (its recursion, `smooth_q_update`, fed the loop's own target
    draws of ``T`` iterations, with values ``V^j`` that change every iteration) has the mean
    ``sum_j alpha_T^j P V^j`` and the variance ``sum_j (alpha_T^j)^2 sigma_j^2 / K``
    (`smoothed_target_variance`, docs/feedback.md), far below one draw's ``sigma_T^2 / K``."""
    rng = np.random.default_rng(29)
    T, R, samples, H = 30, 4000, 2, 2
    with jax.enable_x64(True):
        game = _game(rng, num_players=2, num_actions=2, num_states=3, horizon=H)
    values = rng.random((T, 3))  # V^j_{h+1}: another one at every iteration
    feedback = parse_feedback(f"sampled:{samples}")
    with jax.enable_x64(True):
        ts = jnp.arange(1, R * T + 1, dtype=jnp.int32)  # replication r: iterations r T + 1 .. r T + T
        vs = jnp.asarray(np.tile(values, (R, 1)))
        draw = jax.vmap(lambda t, v: Estimator(feedback, game, t, 0).kernel(game.transitions)[:-1] @ v)
        targets = np.asarray(jax.jit(draw)(ts, vs))
    targets = targets.reshape(R, T, *targets.shape[1:])
    q = np.zeros((R, *targets.shape[2:]))
    for j in range(T):
        q = np.asarray(smooth_q_update(q, targets[:, j], smooth_step_size(j + 1.0, H)))
    p = np.asarray(game.transitions)[:-1]
    expected_var = smoothed_target_variance(np.stack([target_variance(p, v, samples) for v in values]), H)
    weights = smoothed_target_variance(np.eye(T), H) ** 0.5  # alpha_T^j (the variance of unit draws j)
    expected_mean = np.tensordot(weights, np.stack([p @ v for v in values]), axes=(0, 0))
    stochastic = expected_var > 1e-15  # the deterministic row: exact
    np.testing.assert_allclose(q.mean(axis=0)[~stochastic], expected_mean[~stochastic], rtol=0, atol=1e-12)
    z_mean = (q.mean(axis=0) - expected_mean)[stochastic] / np.sqrt(expected_var[stochastic] / R)
    # Q_hat^T sums T independent bounded terms: nearly normal, Var(s^2) ~ 2 sigma^4 / R.
    z_var = (q.var(axis=0, ddof=1)[stochastic] / expected_var[stochastic] - 1.0) / np.sqrt(2.0 / R)
    limit = _threshold(2 * int(stochastic.sum()))
    assert np.max(np.abs(z_mean)) < limit and np.max(np.abs(z_var)) < limit, (z_mean, z_var)
    # One draw's variance, the figure docs/feedback.md gave before, is far above it (over all
    # entries, about 18 times at T = 30: sum_j (alpha_T^j)^2 = 0.055).
    one_draw = np.mean([target_variance(p, v, samples) for v in values], axis=0)
    assert q.var(axis=0).sum() < 0.25 * one_draw.sum()


def test_the_last_step_is_not_sampled():
    # Nothing follows the last step: its rows stay the game's, and no draw is spent on them.
    rng = np.random.default_rng(3)
    with jax.enable_x64(True):
        game = _game(rng, num_players=2, num_actions=2)
        # One compiled call (as in the loop), not dozens of operations compiled one by one.
        kernel = jax.jit(lambda g: Estimator(parse_feedback("sampled:2"), g, 1, 0).kernel(g.transitions))(game)
    np.testing.assert_array_equal(np.asarray(kernel[-1]), np.asarray(game.transitions[-1]))
    assert np.all(np.isin(np.asarray(kernel[:-1]) * 2, [0.0, 1.0, 2.0]))  # counts of 2 samples


def test_the_estimates_of_one_iteration_are_independent_across_players():
    # Each player's profiles are its own draws: with 2 players and K = 1, player 0's sampled
    # opponent action and player 1's are independent (their joint frequencies factor).
    rng = np.random.default_rng(11)
    with jax.enable_x64(True):
        game = _game(rng, num_players=2, num_actions=2)
        half = tuple(jnp.full((2, 2, 2), 0.5) for _ in range(2))
        q = jnp.zeros(game.rewards.shape).at[:, 0, :, :, 1].set(1.0).at[:, 1, :, 1, :].set(1.0)
    # u_0(a_0) = 1[a_1 drawn = 1]; u_1(a_1) = 1[a_0 drawn = 1].
    u = _estimates(game, 1, lambda e: jnp.stack([x[0, 0, 0] for x in e.utilities(q, half)]))  # (M, 2)
    both = np.mean(u[:, 0] * u[:, 1])
    z = (both - 0.25) / math.sqrt(0.25 * 0.75 / M)
    assert abs(z) < _threshold(1), z


@jax.jit
def _draw_eight(probs, u):
    """`sample_onehot` of one distribution for 8 numbers, compiled once per number of items."""
    return sample_onehot(jnp.broadcast_to(probs, (8, probs.shape[0])), u, -1)


@settings(max_examples=examples(50, 200), deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=6).filter(lambda w: sum(w) > 0),
    st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=8),
)
def test_the_loop_draw_and_the_literal_draw_pick_the_same_item(weights, us):
    probs = np.asarray(weights, np.float64) / sum(weights)
    u = np.asarray(us)
    # The draw compiled (as in the loop) for 8 numbers: each row is drawn on its own, so the rows
    # beyond len(u) (zeros) change nothing, and there is one program per number of items.
    padded = np.zeros(8)
    padded[: len(u)] = u
    with jax.enable_x64(True):
        onehot = np.asarray(_draw_eight(jnp.asarray(probs), jnp.asarray(padded)))[: len(u)]
    index = sample_index(np.broadcast_to(probs, (len(u), len(probs))), u)
    np.testing.assert_array_equal(onehot.argmax(axis=-1), index)
    assert np.all(onehot.sum(axis=-1) == 1)
    assert np.all(probs[index] > 0)  # never an item of probability zero
