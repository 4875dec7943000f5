"""Learners and their argmax maps: KKT conditions, closed forms against independent solvers, purity."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reference_impl as ref
from conftest import beyond_default_in_full, case, examples
from markovgames.learners import (
    BUILTIN_LEARNERS,
    OFTRLState,
    SwapState,
    blum_mansour,
    entropy_argmax,
    log_barrier_argmax,
    optimistic_hedge,
    stationary_distribution,
)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


#: Compiled once per shape, as the engine calls them (run eagerly, every call of a loop would
#: compile its body again).
_log_barrier_argmax = jax.jit(log_barrier_argmax)
_stationary_distribution = jax.jit(stationary_distribution)


def _lb(g):
    # NumPy arrays go to the compiled solve as they are (jnp.asarray would compile a copy per shape).
    return np.asarray(_log_barrier_argmax(np.asarray(g, dtype=np.float64)))


#: The rows of the KKT test's batches.
ROWS = 64


def _lb_rows(g):
    """``_lb(g)`` for a row or up to ``ROWS`` rows, solved in a batch of ``ROWS`` (``g``'s rows
    repeated): the KKT test's shape, one compiled solve per action count for the tests below. A
    row's result does not depend on its neighbours (test_log_barrier_rows_do_not_depend_on_their_neighbours)."""
    rows = np.atleast_2d(np.asarray(g, dtype=np.float64))
    assert len(rows) <= ROWS
    return _lb(np.resize(rows, (ROWS, rows.shape[-1])))[: len(rows)].reshape(np.shape(g))


# 50 actions in the full mode (its Newton solve compiles for seconds; test_numerical_extremes.py
# checks the same conditions on adversarial rows at up to 25 actions by default).
@pytest.mark.parametrize("num_actions", beyond_default_in_full([1, 2, 3, 5, 17, 50], {1, 2, 3, 5, 17}))
@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e3, 1e6])
def test_log_barrier_kkt_and_simplex(num_actions, scale):
    rng = np.random.default_rng(num_actions)
    g = rng.normal(size=(ROWS, num_actions)) * scale
    x = _lb(g)
    assert np.all(x > 0)
    np.testing.assert_allclose(x.sum(axis=-1), 1.0, atol=1e-12)
    if num_actions > 1:
        # Stationarity: 1/x_k - g_k is the same multiplier lambda for every k.
        lam = 1.0 / x + g
        spread = np.ptp(lam, axis=-1) / np.maximum(1.0, np.abs(lam).max(axis=-1))
        assert spread.max() < 1e-12


# 4 actions in the full mode: the closed form (2) and Newton's loop (3, and 7 with the
# neighbours test's compiled solve) by default.
@pytest.mark.parametrize("num_actions", beyond_default_in_full([2, 3, 4, 7], {2, 3, 7}))
def test_log_barrier_matches_bisection(num_actions):
    rng = np.random.default_rng(10 + num_actions)
    rows = rng.normal(size=(40, num_actions)) * rng.choice([1e-3, 1.0, 30.0, 1e4], size=(40, 1))
    for g, x in zip(rows, _lb_rows(rows), strict=True):
        np.testing.assert_allclose(x, ref.log_barrier_argmax(g), rtol=1e-12, atol=1e-15)


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=12))
@settings(max_examples=examples(60, 200), deadline=None)
def test_log_barrier_property(values):
    g = np.asarray(values)
    x = _lb(g)  # (one row: its own compiled solve per length, quicker to compile than a batch's)
    assert np.all(np.isfinite(x)) and np.all(x > 0)
    assert abs(x.sum() - 1.0) < 1e-12
    # The argmax prefers larger utilities: the order of x follows the order of g.
    order = np.argsort(g, kind="stable")
    assert np.all(np.diff(x[order]) >= -1e-15)


def test_log_barrier_two_actions_closed_form_edge_cases():
    # d = 0 (ties), d = 2 (branch switch), tiny and huge gaps.
    for d in [0.0, 1e-12, 1e-3, 1.999999, 2.0, 2.000001, 1e3, 1e12]:
        g = np.array([0.0, -d])
        np.testing.assert_allclose(_lb_rows(g), ref.log_barrier_argmax(g), rtol=1e-12, atol=1e-300)


# 4, 6 and 9 actions in the full mode (the elimination is unrolled over the actions: 6 and 9
# compile for seconds). Batches of 6 chains, as in test_numerical_extremes.py's extreme rows
# (at 2, 3 and 5 actions by default): one compiled elimination per count for both.
@pytest.mark.parametrize("num_actions", beyond_default_in_full([1, 2, 3, 4, 5, 6, 9], {1, 2, 3, 5}))
def test_stationary_distribution_is_stationary(num_actions):
    rng = np.random.default_rng(num_actions)
    q = rng.random((6, num_actions, num_actions)) + 1e-9
    q /= q.sum(axis=-1, keepdims=True)
    pi = np.asarray(_stationary_distribution(q))
    np.testing.assert_allclose(pi.sum(axis=-1), 1.0, atol=1e-14)
    assert np.all(pi >= 0)
    np.testing.assert_allclose(np.einsum("ba,bak->bk", pi, q), pi, atol=1e-14)
    for k in range(3):
        np.testing.assert_allclose(pi[k], ref.stationary_distribution(q[k]), atol=1e-12)


def test_stationary_distribution_nearly_reducible_chain_stays_accurate():
    # Two nearly-absorbing blocks joined by tiny probabilities: GTH has no cancellation.
    eps = 1e-10
    q = np.array(
        [
            [1 - eps, eps / 2, eps / 2, 0.0],
            [0.3, 0.7 - eps, 0.0, eps],
            [eps, 0.0, 0.5 - eps, 0.5],
            [0.0, eps, 0.4, 0.6 - eps],
        ]
    )
    pi = np.asarray(_stationary_distribution(q))
    residual = np.abs(pi @ q - pi) / np.maximum(pi, 1e-300)
    assert residual.max() < 1e-6  # relative accuracy on every entry, including the tiny ones
    np.testing.assert_allclose(pi.sum(), 1.0, atol=1e-15)


def test_entropy_argmax_is_softmax():
    g = np.array([[0.0, 1.0, -2.0], [1e3, 1e3, 0.0]])
    x = np.asarray(jax.jit(entropy_argmax)(g))  # compiled, as the engine calls it: one program
    expected = np.exp(g - g.max(axis=-1, keepdims=True))
    expected /= expected.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(x, expected, rtol=1e-14)


LEARNER_IDS = list(BUILTIN_LEARNERS)
LEARNERS = [BUILTIN_LEARNERS[name].build for name in LEARNER_IDS]
#: The action count of each learner's default case in the run-axis test below (2 or 3,
#: alternating): the purity test takes the same, so that both run one compiled iteration.
DEFAULT_ACTIONS = {name: (2, 3)[k % 2] for k, name in enumerate(LEARNER_IDS)}
#: The run-axis test's copies: states and runs of a strategy ``(S, R, A)``.
STATES, RUNS = 3, 4


@functools.cache
def _iteration(make):
    """``play``, then ``observe`` of the utility that follows, for the learner in both layouts,
    ``make(-1)`` and ``make(-2)`` (the run axis after the action axis), as one compiled program
    (as in the loop: one program per iteration, not one per operation): one per learner, shared
    by the tests below. Each layout takes its own ``(state, prediction, eta, utility)``."""
    layouts = make(-1), make(-2)

    def both(rho, *per_layout):
        out = []
        for learner, (state, prediction, eta, utility) in zip(layouts, per_layout, strict=True):
            strategy, state = learner.play(state, prediction, eta, rho)
            out.append((strategy, state, learner.observe_with(state, utility, rho, eta)))
        return tuple(out)

    return jax.jit(both)


def _eta_shape(learner, num_actions: int) -> tuple[int, ...]:
    """In the default layout a per-run rate broadcasts against (S, R, A) or BM's (S, R, A, A)."""
    swap = isinstance(learner.init((STATES, RUNS, num_actions), jnp.float64), SwapState)
    return (RUNS, 1, 1) if swap else (RUNS, 1)


def _trailing(a: np.ndarray) -> np.ndarray:
    """An array of the default layout ``(S, R, A)`` in the trailing one, ``(S, A, R)``."""
    return np.ascontiguousarray(np.moveaxis(a, -1, -2))


@pytest.mark.parametrize("name", LEARNER_IDS, ids=LEARNER_IDS)
def test_learner_is_pure_and_starts_uniform(name):
    # The run-axis test's compiled iteration and shapes (its default case's action count), in
    # both layouts.
    make, num_actions = BUILTIN_LEARNERS[name].build, DEFAULT_ACTIONS[name]
    last, trailing = make(-1), make(-2)
    states = last.init((STATES, RUNS, num_actions), jnp.float64), trailing.init((STATES, num_actions, RUNS), jnp.float64)
    eta = np.full(RUNS, 0.5)
    u = np.random.default_rng(0).random((STATES, RUNS, num_actions))
    zeros = np.zeros((STATES, RUNS, num_actions))
    before = [jax.tree_util.tree_map(np.array, state) for state in states]
    outputs = _iteration(make)(
        0.0,
        (states[0], zeros, eta.reshape(_eta_shape(last, num_actions)), u),
        (states[1], _trailing(zeros), eta, _trailing(u)),
    )
    for (x, played, new), state, old in zip(outputs, states, before, strict=True):
        np.testing.assert_allclose(np.asarray(x), 1.0 / num_actions, atol=1e-15)
        # The old state is untouched (no mutation) and the state after observe differs from the
        # one after play.
        for a, b in zip(jax.tree_util.tree_leaves(old), jax.tree_util.tree_leaves(state), strict=True):
            np.testing.assert_array_equal(a, np.asarray(b))
        assert any(
            not np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(played), strict=True)
        )


def test_oftrl_decay_implements_normalised_weighted_sum():
    # G^t = rho_t G^{t-1} + u^t must equal sum_j w_j u^j / w_t with w_j = binom(H+j-1, H).
    H, T = 3, 12
    learner = optimistic_hedge()
    rng = np.random.default_rng(3)
    us = rng.random((T + 1, 5))
    state = learner.init((5,), jnp.float64)
    observe = jax.jit(learner.observe)  # one program for every step, not one per operation
    for t in range(1, T + 1):
        rho = (t - 1) / (H + t - 1)
        state = observe(state, us[t], rho)
        raw = sum(ref.weight(H, j) * us[j] for j in range(1, t + 1)) / ref.weight(H, t)
        np.testing.assert_allclose(np.asarray(state.cumulative), raw, rtol=1e-13)


def test_blum_mansour_with_identical_rows_plays_that_row():
    learner = blum_mansour()
    state = learner.init((3,), jnp.float64)
    u = np.array([0.2, 0.5, 0.9])
    # All base learners see the same cumulative utility: every row equals q, and so does pi.
    state = state._replace(base=OFTRLState(np.tile(u, (3, 1))))
    pi, _ = jax.jit(learner.play)(state, np.zeros(3), 2.0, 1.0)  # (compiled: one program, not one per operation)
    pi = np.asarray(pi)
    np.testing.assert_allclose(pi, _lb_rows(2.0 * np.asarray(u)), atol=1e-14)


# Each learner at 2 or 3 actions by default, alternating (the log-barrier learner at 3, its Newton
# solve, and Blum-Mansour's log-barrier rows at 2, their closed form); every learner at 2, 3 and 5
# in the full mode.
@pytest.mark.parametrize(
    "make,num_actions",
    [
        case(make, num_actions, default=num_actions == (2, 3)[k % 2], id=f"{num_actions}-{name}")
        for num_actions in (2, 3, 5)
        for k, (make, name) in enumerate(zip(LEARNERS, LEARNER_IDS, strict=True))
    ],
)
def test_learner_with_a_trailing_run_axis_equals_the_default_layout(make, num_actions):
    """The compiled loop keeps a run axis after the action axis (``axis=-2``): every state,
    strategy and utility must be the default layout's (``axis=-1``) with the axes moved, over a
    few optimistic iterations with different rates per run. Both layouts are compiled, as in the
    loop (an iteration's ``play`` and ``observe`` of both layouts one program, not one per
    operation); XLA may fuse the two layouts' operations differently, so they agree to a few units
    in the last place, not bit for bit."""
    runs, states = RUNS, STATES
    rng = np.random.default_rng(num_actions)
    last, trailing = make(-1), make(-2)
    step = _iteration(make)

    def same(a, b):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)

    eta_shape = _eta_shape(last, num_actions)
    s_last = last.init((states, runs, num_actions), jnp.float64)
    s_trail = trailing.init((states, num_actions, runs), jnp.float64)
    assert jax.tree_util.tree_map(lambda x: x.shape[-1], s_trail) == jax.tree_util.tree_map(lambda _: runs, s_trail)
    eta = rng.uniform(0.1, 3.0, runs)
    prediction = np.zeros((states, runs, num_actions))
    eta_last, eta_trail = eta.reshape(eta_shape), eta
    for t in range(1, 6):
        rho = (t - 1) / (2 + t - 1)
        utility = rng.normal(size=(states, runs, num_actions))
        (pi_last, played_last, s_last), (pi_trail, played_trail, s_trail) = step(
            rho,
            (s_last, prediction, eta_last, utility),
            (s_trail, _trailing(prediction), eta_trail, _trailing(utility)),
        )
        same(np.moveaxis(np.asarray(pi_trail), -2, -1), np.asarray(pi_last))
        for a, b in zip(jax.tree_util.tree_leaves(played_last), jax.tree_util.tree_leaves(played_trail), strict=True):
            same(np.moveaxis(np.asarray(b), -1, 1), np.asarray(a))  # the state after play too
        prediction = utility
    for a, b in zip(jax.tree_util.tree_leaves(s_last), jax.tree_util.tree_leaves(s_trail), strict=True):
        # The trailing layout has the run axis last: (S, A[, A], R) against (S, R, A[, A]).
        same(np.moveaxis(np.asarray(b), -1, 1), np.asarray(a))


def test_log_barrier_rows_do_not_depend_on_their_neighbours():
    """Newton's loop runs until every row converges; a converged row must not move again, so a
    row's result is the same alone and next to rows that need more iterations."""
    rng = np.random.default_rng(11)
    hard = rng.normal(size=(ROWS, 7)) * np.logspace(-3, 3, ROWS)[:, None]  # (the bisection test's 7-action solve)
    for k in range(0, ROWS, 9):
        alone = _lb(hard[k : k + 1])
        together = _lb(hard)[k : k + 1]
        np.testing.assert_array_equal(alone, together)
