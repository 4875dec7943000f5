"""Numerical extremes: long horizons and runs, extreme learning rates and inputs, float32.

The figures quoted in ``docs/numerics.md`` come from these tests (run with ``-s`` to see them).
The suite's full mode (``MARKOVGAMES_FULL_TESTS=1``, or ``MARKOVGAMES_NUMERICS_FULL=1`` for this
file) runs the longer variants quoted there (an engine run of 10^6 iterations at H = 50, the
stationary distribution at 50 actions; a few minutes in all).

1. The normalised cumulative sum ``G^t = rho_t G^{t-1} + u^t`` against exact integer binomial
   arithmetic (docs/explanation.md, step sizes and weights): per learner at T = 10^7 for H up to 200, and inside the engine at
   H = 50 from the engine's own utilities and policies.
2. The log-barrier solve, its Newton iteration count and KKT residual, and the stationary
   distribution on extreme inputs; short engine runs with extreme learning rates and rewards.
3. float32 against float64 on the paper's game and three random games.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from conftest import FULL_TESTS, beyond_default_in_full, case, make_paper_game, make_random_game
from markovgames import MarkovGame
from markovgames.dynamics import get_algorithm, max_learning_rate, oftrl_decay, run_batch
from markovgames.learners import (
    OFTRLState,
    SwapState,
    blum_mansour,
    log_barrier_argmax,
    optimistic_hedge,
    stationary_distribution,
)
from markovgames.learners._regularizers import NEWTON_MAX_ITERATIONS, _log_barrier_solve

FULL = FULL_TESTS or os.environ.get("MARKOVGAMES_NUMERICS_FULL", "") not in ("", "0")
EPS64 = float(np.finfo(np.float64).eps)

#: The stated worst case of the log-barrier Newton loop (docs/numerics.md); measured maximum 12.
NEWTON_ITERATION_BOUND = 16


def _report(*parts) -> None:
    print("[numerics]", *parts)


# ----------------------------------------------------------------------------------------------
# Exact arithmetic helpers
# ----------------------------------------------------------------------------------------------


def _exact_ints(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Float64 array -> (object array of Python ints ``n``, ``K``) with ``x = n / 2^K`` exactly."""
    x = np.asarray(x, np.float64)
    mantissa, exponent = np.frexp(x)
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: 53-bit mantissas
    nonzero = x != 0
    scale = int(max(0, 53 - exponent[nonzero].min())) if nonzero.any() else 0
    shift = np.where(nonzero, exponent.astype(np.int64) - 53 + scale, 0)
    assert shift.min() >= 0
    powers = np.left_shift(np.ones(shift.shape, dtype=object), shift.astype(object))
    return ints.astype(object) * powers, scale


def _weight(H: int, j: int) -> int:
    """``w_j = binom(H + j - 1, H)``."""
    return math.comb(H + j - 1, H)


def _cumulative_weight(H: int, n: int) -> int:
    """``W_n = sum_{j<=n} w_j = binom(H + n, H + 1)``."""
    return math.comb(H + n, H + 1)


def _relative_error(approx: np.ndarray, exact: np.ndarray) -> float:
    approx, exact = np.asarray(approx, np.float64), np.asarray(exact, np.float64)
    nonzero = exact != 0
    assert np.all(approx[~nonzero] == 0)
    return float(np.max(np.abs(approx[nonzero] - exact[nonzero]) / np.abs(exact[nonzero]), initial=0.0))


# ----------------------------------------------------------------------------------------------
# 1(b). The per-iteration recursion at T = 10^7 with non-constant utility streams
# ----------------------------------------------------------------------------------------------


def _block_streams(T: int, seed: int, num_streams: int = 6):
    """Piecewise-constant utility streams: blocks ``[start_k, end_k]`` with values spanning 8 decades.

    Block ends are log-spaced (so small and large ``t`` are both sampled) plus random ones; 10% of
    the values are exactly 0 and 10% exactly 1. An extra column is an impulse: ``u^1 = 1``, then 0.
    """
    rng = np.random.default_rng(seed)
    ends = np.round(np.geomspace(1, T, 300)).astype(np.int64)
    ends = np.unique(np.concatenate([ends, rng.integers(1, T, 40), [T]]))
    starts = np.concatenate([[1], ends[:-1] + 1])
    values = 10.0 ** rng.uniform(-6, 2, size=(len(ends), num_streams))
    values[rng.random(values.shape) < 0.1] = 0.0
    values[rng.random(values.shape) < 0.1] = 1.0
    impulse = np.zeros((len(ends), 1))
    impulse[0] = 1.0  # the first block is t = 1 alone
    assert ends[0] == 1
    return starts, ends, np.concatenate([values, impulse], axis=1)


def _learner_recursion(H: int, starts, ends, values, dtype=jnp.float64):
    """Feed the streams (and a linear one, ``u^t = t 2^-24``) to the library's OFTRL learner.

    Uses :func:`optimistic_hedge`'s ``observe`` and :func:`oftrl_decay`; returns ``G^t`` at every
    block end, shape ``(blocks, streams + 1)``.
    """
    learner = optimistic_hedge()

    def block(state, x):
        first, last, value = x

        def body(t, st_):
            tf = t.astype(dtype)
            u = jnp.concatenate([value, (tf * 2.0**-24)[None]]).astype(dtype)
            return learner.observe(st_, u, oftrl_decay(tf, H))

        state = jax.lax.fori_loop(first, last + 1, body, state)
        return state, state.cumulative

    state = learner.init((values.shape[1] + 1,), dtype)
    xs = (jnp.asarray(starts), jnp.asarray(ends), jnp.asarray(values, dtype))
    _, out = jax.jit(lambda s, x: jax.lax.scan(block, s, x))(state, xs)
    return np.asarray(out, np.float64)


def _exact_block_sums(H: int, starts, ends, values) -> np.ndarray:
    """Exact ``G^t`` at every block end: ``sum_k c_k (W_{end_k} - W_{start_k - 1}) / w_t``, rounded once."""
    out = np.zeros((len(ends), values.shape[1] + 1))
    totals = [Fraction(0)] * values.shape[1]
    for k, (first, last) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        mass = _cumulative_weight(H, last) - _cumulative_weight(H, first - 1)
        w_t = _weight(H, last)
        for m in range(values.shape[1]):
            totals[m] += Fraction(float(values[k, m])) * mass
            out[k, m] = float(totals[m] / w_t)
        # sum_{j<=t} w_j j = (H+1) binom(H+t+1, H+2) - H W_t  (since w_j j = (H+1) binom(H+j, H+1) - H w_j)
        linear = (H + 1) * math.comb(H + last + 1, H + 2) - H * _cumulative_weight(H, last)
        out[k, -1] = float(Fraction(linear, w_t * 2**24))
    return out


# By default H = 2 (the largest error measured) and 200 (the largest H); 1 and 50 in the full mode
# (each H is a compilation of its own: the decay's exponent is static).
@pytest.mark.parametrize("H", beyond_default_in_full([1, 2, 50, 200], {2, 200}))
def test_normalised_sum_exact_for_non_constant_streams_at_ten_million(H):
    T = 10_000_000
    starts, ends, values = _block_streams(T, seed=H)
    with jax.enable_x64(True):
        got = _learner_recursion(H, starts, ends, values)
    exact = _exact_block_sums(H, starts, ends, values)
    assert np.all(np.isfinite(got))
    # Exact values below float64's normal range (the impulse's 1/w_t at large H and t) are
    # negligible next to any later utility; there only an absolute check makes sense.
    normal = np.abs(exact) > 1e-290
    assert np.all(np.abs(got[~normal]) <= 1e-290)
    err = _relative_error(got[normal], exact[normal])
    _report(f"recursion H={H} T={T}: max relative error {err:.2e} over {normal.sum()} sampled values")
    # Recursive summation: the error grows at most like eps * T_eff (docs/numerics.md); measured
    # at most 1.7e-11 (H = 2), below 2e-13 for H >= 50.
    assert err <= 2e-10


def test_float32_recursion_error_is_as_documented():
    # The same recursion in float32 (what dtype="float32" runs): u = 1 and u = t 2^-24 at H = 2.
    H, T = 2, 10_000
    starts, ends, values = np.array([1]), np.array([T]), np.ones((1, 1))
    got = _learner_recursion(H, starts, ends, values, dtype=jnp.float32)
    exact = _exact_block_sums(H, starts, ends, values)
    err = _relative_error(got, exact)
    _report(f"float32 recursion H={H} T={T}: max relative error {err:.2e}")
    assert err <= 1e-4


# ----------------------------------------------------------------------------------------------
# 1(a). Inside the engine at H = 50
# ----------------------------------------------------------------------------------------------


def _cumulative(state):
    """The normalised cumulative utility of an OFTRL state or of a Blum–Mansour state's base learners."""
    return state.base.cumulative if isinstance(state, SwapState) else state.cumulative


def _engine_trace(algorithm: str, game: MarkovGame, T: int, steps, eta: float = 0.2):
    """Run the engine's own per-iteration step (``_smooth_step``) and emit, at every ``t``, the
    utilities, learner states and policies at the steps ``steps`` (state 0), plus simplex and
    finiteness summaries over all steps and the per-prefix metrics. float64."""
    from markovgames.dynamics._smooth import SMOOTH, _smooth_step, split_steps, splits_steps, stack_steps
    from markovgames.dynamics._value_update import GameArrays

    spec = get_algorithm(algorithm)
    arrays = GameArrays(
        jnp.asarray(game.rewards), jnp.asarray(game.transitions), jnp.asarray(0, jnp.int32), jnp.full(game.num_players, eta)
    )
    # Short horizons carry one array per step inside the loop (as compiled_chunk does).
    split = splits_steps(arrays.rewards)
    carry = SMOOTH.init_carry(spec.learner, game.shape_key, np.float64, None)
    carry = split_steps(carry) if split else carry
    step = _smooth_step(spec.learner, True, True, False, arrays, run_axes=0)  # one run: no run axis
    hs = jnp.asarray(steps)

    def traced(c, x):
        c_new, out = step(c, x)
        new = stack_steps(c_new) if split else c_new
        policies = out["policies"]
        emit = {
            "u": tuple(u[hs, 0] for u in new.prediction),  # optimistic: prediction = u^t
            "G": tuple(_cumulative(state)[hs, 0] for state in new.learners),
            "pi": tuple(p[hs, 0] for p in policies),
            "simplex": jnp.max(jnp.stack([jnp.max(jnp.abs(p.sum(-1) - 1.0)) for p in policies])),
            "min": jnp.min(jnp.stack([jnp.min(p) for p in policies])),
            "finite": jnp.all(jnp.stack([jnp.all(jnp.isfinite(p)) for p in policies])) & jnp.all(jnp.isfinite(new.q)),
            "metrics": out["metrics"],
        }
        return c_new, emit

    xs = jnp.arange(1, T + 1, dtype=jnp.float64)[:, None]
    carry, emitted = jax.jit(lambda c, x: jax.lax.scan(traced, c, (x, None, None)))(carry, xs)
    return (stack_steps(carry) if split else carry), jax.tree_util.tree_map(np.asarray, emitted)


def _engine_exact_errors(algorithm: str, H: int, emitted, sample_ts) -> float:
    """Max relative error of the engine's ``G^t`` against ``sum_{j<=t} w_j u^j / w_t`` in exact
    integers, from the engine's own ``u^j`` (and, for Blum–Mansour, ``pi^j(a) u^j``)."""
    worst = 0.0
    sample = set(sample_ts)
    last = max(sample_ts)
    for player in range(len(emitted["u"])):
        u = emitted["u"][player]  # (T, steps, A)
        if algorithm == "smooth_ce":
            # Base learner a observes pi^j(a) u^j (the product is exact in integers).
            n_u, k_u = _exact_ints(u)
            n_pi, k_pi = _exact_ints(emitted["pi"][player])
            terms, scale = n_pi[..., :, None] * n_u[..., None, :], k_u + k_pi
        else:
            terms, scale = _exact_ints(u)
        total = np.zeros(terms.shape[1:], dtype=object)
        total[...] = 0
        w = 1  # w_1
        got = emitted["G"][player]
        for j in range(1, last + 1):
            total = total + terms[j - 1] * w
            if j in sample:
                denominator = w << scale
                exact = np.vectorize(lambda n, d=denominator: float(Fraction(n, d)), otypes=[np.float64])(total)
                worst = max(worst, _relative_error(got[j - 1], exact))
            w = w * (H + j) // j  # w_{j+1} = w_j (H + j) / j, exact
    return worst


@pytest.mark.parametrize("algorithm", ["smooth_ce", pytest.param("smooth_cce", marks=pytest.mark.full)])
def test_engine_at_horizon_50_keeps_exact_normalised_sums(algorithm):
    H, T = 50, (1_000_000 if FULL else 10_000)
    game = make_random_game(50, 2, H, 1, (2, 2))
    with jax.enable_x64(True):
        carry, emitted = _engine_trace(algorithm, game, T, steps=(0, H // 2, H - 1))
    assert emitted["finite"].all()
    assert emitted["simplex"].max() <= 1e-12
    assert emitted["min"].min() >= 0.0
    metrics = emitted["metrics"]  # (T, 3, N): value, CCE bound, CE bound at s_1
    assert np.all(np.isfinite(metrics))
    assert np.all((metrics[:, 0] >= -1e-9) & (metrics[:, 0] <= H + 1e-9))
    assert np.all(metrics[:, 2] >= metrics[:, 0] - 1e-9)  # CE bound >= value
    residual = float(carry.identity_residual)
    assert residual <= 1e-9  # Q^t_h = r_h + P_h V^t_{h+1} (the paper's lemma) still holds
    rng = np.random.default_rng(0)
    sample_ts = sorted({1, 2, 3, 10, 51, 100, 1000, 10_000, T // 2, T, *rng.integers(1, T, 5).tolist()})
    err = _engine_exact_errors(algorithm, H, emitted, sample_ts)
    _report(
        f"engine {algorithm} H={H} T={T}: max relative error of G^t {err:.2e} at t in {sample_ts}; "
        f"simplex deviation {emitted['simplex'].max():.1e}; identity residual {residual:.1e}"
    )
    assert err <= 1e-12


# ----------------------------------------------------------------------------------------------
# 2. Log-barrier solve, Newton iterations, stationary distribution: extreme inputs
# ----------------------------------------------------------------------------------------------


_log_barrier_argmax = jax.jit(log_barrier_argmax)


@jax.jit
def _solve_rows(g):
    """Per-row ``(c, d, iterations)`` of the log-barrier solve (``vmap``: counts are per row)."""
    return jax.vmap(_log_barrier_solve)(g)


def _check_log_barrier_rows(g: np.ndarray) -> int:
    """Newton count bound, KKT residual at rounding level, and the argmax on the simplex; returns the max count."""
    num_actions = g.shape[-1]
    with jax.enable_x64(True):
        x = np.asarray(_log_barrier_argmax(jnp.asarray(g)))
        assert np.all(np.isfinite(x)) and np.all(x > 0)
        assert np.max(np.abs(x.sum(axis=-1) - 1.0)) <= 1e-12
        if num_actions < 3:
            return 0
        c, d, iterations = (np.asarray(a) for a in _solve_rows(jnp.asarray(g)))
    # KKT: x_k = 1/(c + d_k) with sum_k x_k = 1; the sum of A rounded terms is exact to (A + 2) eps.
    residual = np.abs((1.0 / (c + d)).sum(axis=-1) - 1.0)
    assert residual.max() <= (num_actions + 2) * EPS64, residual.max()
    assert np.all(c >= 1.0) and np.all(c <= num_actions)
    assert iterations.max() <= NEWTON_ITERATION_BOUND < NEWTON_MAX_ITERATIONS
    return int(iterations.max())


def _adversarial_rows(num_actions: int, seed: int) -> np.ndarray:
    """Ties, one dominant action, k tied leaders over a sweep of gaps, huge magnitudes, random spreads."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(1, num_actions + 1):
        for gap in np.geomspace(1e-6, 1e16, 45):
            rows.append(np.r_[np.zeros(k), -np.full(num_actions - k, gap)])  # k leaders, the rest tied below
    for scale in (1e-4, 1.0, 1e3, 1e12, 1e15):
        rows.append(np.full(num_actions, scale))  # all equal
        rows.append(np.r_[scale, np.zeros(num_actions - 1)])  # one dominant
        rows.append(np.r_[np.zeros(num_actions - 1), scale])
        rows.append(scale * (1.0 + 1e-13 * np.arange(num_actions)))  # near-ties at a huge offset
        rows.append(rng.integers(0, 2, num_actions).astype(float) * scale)  # exactly 0 and 1, scaled
    for _ in range(300):
        scale = 10.0 ** rng.uniform(-6, 15)
        rows.append(rng.normal(size=num_actions) * scale)
        rows.append(-np.sort(rng.pareto(0.5, size=num_actions)) * scale)
    return np.asarray(rows)


#: A one-dominant-action input on which the previous stopping rule cycled at rounding level until
#: NEWTON_MAX_ITERATIONS (64): 25 actions, one leader 10^1.5 above 24 tied ones.
_CYCLING_INPUT = np.r_[0.0, np.full(24, float.fromhex("-0x1.f9f6e4990f227p+4"))]

_ACTION_COUNTS = [1, 2, 3, 4, 5, 7, 10, 16, 25, 37, 50]
#: By default: one and two actions (no Newton loop, the closed form), three (the Newton loop's
#: smallest) and the cycling input's 25 (each count is two compilations of its own: the argmax and
#: the solve); every count in the full mode.
_DEFAULT_ACTION_COUNTS = _ACTION_COUNTS if FULL else [1, 2, 3, 25]


def _family_size(num_actions: int) -> int:
    """The rows of `_adversarial_rows` for ``num_actions``: 45 gaps per number of leaders, 5 rows
    per scale and 2 per random draw."""
    return 45 * num_actions + 5 * 5 + 2 * 300


def _as_a_family(g: np.ndarray) -> np.ndarray:
    """The row ``g`` repeated to the shape of its action count's adversarial rows: the compiled
    solves of test_log_barrier_newton_worst_case_on_adversarial_families (one program per shape),
    with every row ``g``'s (so its Newton count is the batch's)."""
    return np.tile(g, (_family_size(g.size), 1))


def test_log_barrier_newton_worst_case_on_adversarial_families():
    worst = {}
    for num_actions in _DEFAULT_ACTION_COUNTS:
        rows = _adversarial_rows(num_actions, seed=num_actions)
        assert rows.shape == (_family_size(num_actions), num_actions)
        worst[num_actions] = _check_log_barrier_rows(rows)
    assert _check_log_barrier_rows(_as_a_family(_CYCLING_INPUT)) <= NEWTON_ITERATION_BOUND
    _report(f"log-barrier Newton iterations, worst per A: {worst}")


@st.composite
def _hard_inputs(draw):
    num_actions = draw(st.sampled_from([n for n in _DEFAULT_ACTION_COUNTS if n >= 3]))
    scale = 10.0 ** draw(st.floats(-8, 15))
    kind = draw(st.sampled_from(["levels", "free"]))
    if kind == "levels":
        # A few distinct levels with multiplicities: ties, one dominant action, clusters.
        levels = draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4))
        counts = draw(st.lists(st.integers(1, num_actions), min_size=len(levels), max_size=len(levels)))
        g = np.concatenate([np.full(n, -lv) for lv, n in zip(levels, counts, strict=True)])[:num_actions]
        g = np.resize(g, num_actions)
    else:
        values = draw(st.lists(st.floats(-1.0, 1.0), min_size=num_actions, max_size=num_actions))
        g = np.asarray(values)
    return g * scale


@given(_hard_inputs())
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
def test_log_barrier_newton_bound_property(g):
    count = _check_log_barrier_rows(_as_a_family(g))
    target(float(count), label="newton iterations")
    if count > _PROPERTY_WORST[0]:
        _PROPERTY_WORST[0] = count
        _report(f"log-barrier Newton iterations, hypothesis worst so far: {count} (A = {g.size})")


_PROPERTY_WORST = [0]


_SWAP = blum_mansour()
_HEDGE = optimistic_hedge()
_swap_play = jax.jit(lambda *args: _SWAP.play(*args)[0])  # eta is traced: one compilation per action count
_hedge_play = jax.jit(lambda *args: _HEDGE.play(*args)[0])


def test_learners_stay_on_simplex_for_extreme_states():
    # BM-OFTRL (log-barrier rows + GTH) and optimistic Hedge on all-equal, 0/1, huge and dominant
    # cumulative utilities, with learning rates 1e-4 .. 1e3: eta * G reaches ~1e15.
    rng = np.random.default_rng(100)
    # GTH at A = 50 compiles for ~20 s, at A = 12 for ~5 s: by default 1 (a single action), 2 (the
    # closed forms) and 5 (the Newton loop and GTH's elimination), each count two compilations (the
    # engine's extreme-rate test runs BM-OFTRL's GTH at 12 actions inside its loop).
    counts = _ACTION_COUNTS if FULL else [1, 2, 5]
    with jax.enable_x64(True):
        for num_actions in counts:
            magnitudes = np.array([0.0, 1.0, 1e6, 1e12])[:, None, None]
            cumulative = rng.normal(size=(4, num_actions, num_actions)) * magnitudes
            cumulative[0] = 0.5  # all equal
            cumulative[2, :, 0] += 1e12  # one dominant action in every row
            binary = rng.integers(0, 2, (2, num_actions, num_actions)).astype(float)  # exactly 0 and 1
            cumulative = np.concatenate([cumulative, binary])
            batch = len(cumulative)
            prediction = jnp.asarray(rng.random((batch, num_actions)) * 1e3)
            last = jnp.asarray(rng.dirichlet(np.ones(num_actions), size=batch))
            swap_state = _SWAP.init((batch, num_actions), jnp.float64)._replace(
                base=OFTRLState(jnp.asarray(cumulative)), last_strategy=last
            )
            hedge_state = _HEDGE.init((batch, num_actions), jnp.float64)._replace(cumulative=jnp.asarray(cumulative[:, 0]))
            for eta in (1e-4, 1e-2, 1.0, 1e3):
                for x in (_swap_play(swap_state, prediction, eta, 1.0), _hedge_play(hedge_state, prediction, eta, 1.0)):
                    x = np.asarray(x)
                    assert np.all(np.isfinite(x)) and np.all(x >= 0.0)
                    assert np.max(np.abs(x.sum(axis=-1) - 1.0)) <= 1e-12
                # All-equal utilities: every base learner plays uniform, and so does pi.
                pi = np.asarray(_swap_play(swap_state, jnp.zeros_like(prediction), eta, 1.0))
                np.testing.assert_allclose(pi[0], 1.0 / num_actions, rtol=1e-13)


def test_stationary_distribution_on_extreme_log_barrier_rows():
    # By default 2 (the closed form) and 5 (the elimination); 3, 12, 25 and 50 actions in the full
    # mode: the compiled elimination takes about 5 s to compile at 12 and 6.4 s at 25
    # (test_engine_extreme_learning_rates_and_rewards runs it at 12 actions).
    counts = [2, 3, 5, 12, 25, 50] if FULL else [2, 5]
    rng = np.random.default_rng(7)
    with jax.enable_x64(True):
        for num_actions in counts:
            scales = np.array([1e-4, 1.0, 1e3, 1e6, 1e12, 1e15])[:, None, None]
            g = rng.normal(size=(6, num_actions, num_actions)) * scales
            g[0] = 0.0  # identical uniform rows
            rows = np.asarray(_log_barrier_argmax(jnp.asarray(g)))  # entries down to ~1e-15
            pi = np.asarray(jax.jit(stationary_distribution)(jnp.asarray(rows)))
            assert np.all(np.isfinite(pi)) and np.all(pi >= 0.0)
            assert np.max(np.abs(pi.sum(axis=-1) - 1.0)) <= 1e-12
            # Stationarity pi Q = pi, entrywise relative to pi (GTH has no cancellation).
            residual = np.abs(np.einsum("ba,bak->bk", pi, rows) - pi) / pi
            assert residual.max() <= 1e-10, residual.max()
            np.testing.assert_allclose(pi[0], 1.0 / num_actions, rtol=1e-13)


# Short engine runs: (N, H, S, A) shapes with a 1-action player and up to 12 actions.
_ENGINE_SHAPES = [(2, 2, 2, (12, 3)), (3, 2, 2, (1, 2, 5))]


def _extreme_games(shape) -> list[MarkovGame]:
    num_players, horizon, num_states, actions = shape
    rng = np.random.default_rng(sum(actions))
    transitions = rng.dirichlet(np.ones(num_states), size=(horizon, num_states, *actions))
    reward_shape = (horizon, num_players, num_states, *actions)
    return [
        MarkovGame(np.full(reward_shape, 0.5), transitions, name="all-equal"),
        MarkovGame(np.zeros(reward_shape), transitions, name="all-zero"),
        MarkovGame(np.ones(reward_shape), transitions, name="all-one"),
        MarkovGame(rng.integers(0, 2, reward_shape).astype(float), transitions, name="zero-one"),
    ]


# smooth_ce on both shapes; the Hedge learners on the small one (compile time grows with A).
_ENGINE_CASES = [("smooth_ce", _ENGINE_SHAPES[0])] + [(a, _ENGINE_SHAPES[1]) for a in ("smooth_ce", "smooth_cce", "stage_cce")]


@pytest.mark.parametrize(
    "algorithm,shape",
    # smooth_cce's learner (Hedge) at extreme rates is stage_cce's: its case runs in the full mode.
    # So does smooth_ce's on the small shape: by default smooth_ce runs at 12 actions and the small
    # shape (three players, one with a single action) with stage_cce; Blum-Mansour's play at 1, 2,
    # 3 and 5 actions on extreme states is test_learners_stay_on_simplex_for_extreme_states'.
    [
        case(
            a, s, default=(a, s) != ("smooth_ce", _ENGINE_SHAPES[1]) and a != "smooth_cce", id=f"{a}-A={'x'.join(map(str, s[3]))}"
        )
        for a, s in _ENGINE_CASES
    ],
)
def test_engine_extreme_learning_rates_and_rewards(algorithm, shape):
    games = _extreme_games(shape)
    # Up to the largest rate a run accepts: logits eta (T + H) of 8 / eps, where XLA's two
    # roundings of a softmax's logits differ by a few units (the softmax and the log barrier clamp).
    etas = [1e-4, 1e-2, 1.0, 1e3, max_learning_rate(120, shape[1])]
    batch_games = [g for g in games for _ in etas]
    batch_etas = etas * len(games)
    # One group of runs (one compiled call): Blum-Mansour's 12-action state would otherwise cut the
    # batch in two groups, each a loop of its own (groups are test_engine_properties').
    result = run_batch(batch_games, algorithm, T=120, etas=batch_etas, record_trajectory=True, group_size=len(batch_games))
    for pol in result.policies:
        assert np.all(np.isfinite(pol)) and np.all(pol >= 0.0)
        assert np.max(np.abs(pol.sum(axis=-1) - 1.0)) <= 1e-12
    horizon = shape[1]
    for arr in (result.value, result.certified_ce_bound, result.certified_cce_bound):
        assert np.all(np.isfinite(arr))
    assert np.all((result.value >= -1e-12) & (result.value <= horizon + 1e-12))
    assert np.all(result.certified_ce_gap >= -1e-12)
    # Constant rewards c: every policy is worth c H, every gap is 0.
    for k, game in enumerate(batch_games):
        if game.name in ("all-equal", "all-zero", "all-one"):
            c = float(game.rewards.flat[0])
            np.testing.assert_allclose(result.value[k], c * horizon, atol=1e-12)
            np.testing.assert_allclose(result.certified_ce_gap[k], 0.0, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# 3. float32 against float64
# ----------------------------------------------------------------------------------------------

#: Documented tolerance (docs/numerics.md): |float32 - float64| on values and certified gaps,
#: T <= 10^4, games with rewards in [0, 1] and H <= 3. Measured worst case: 6.6e-6.
FLOAT32_TOLERANCE = 2e-5


# smooth_cce by default: Hedge's float32 error depends on how XLA compiles the loop (5.9e-5 at
# T = 10^4 with XLA's classic CPU emitters, 2.0e-6 with its default ones), smooth_ce's much less.
@pytest.mark.parametrize(
    "algorithm", beyond_default_in_full(["smooth_ce", "stage_cce", "smooth_cce"], {"stage_cce", "smooth_cce"})
)
def test_float32_error_against_float64(algorithm):
    T = 10_000
    prefixes = [1, 10, 100, 1000, 3000, T]
    batches = {
        "paper+random(2x2)": [make_paper_game()] + [make_random_game(s, 2, 2, 2, (2, 2)) for s in (1, 2, 3)],
    }
    if FULL:
        batches["random(3x2,H=3,S=3)"] = [make_random_game(s, 2, 3, 3, (3, 2)) for s in (4, 5, 6)]
    for label, games in batches.items():
        a = run_batch(games, algorithm, T=T, etas=0.2, dtype="float64", checkpoints=prefixes)
        b = run_batch(games, algorithm, T=T, etas=0.2, dtype="float32", checkpoints=prefixes)
        assert b.value.dtype == np.float32
        errors = {
            "value": np.abs(a.value - b.value).max(axis=-1),
            "ce_gap": np.abs(a.certified_ce_gap - b.certified_ce_gap),
            "cce_gap": np.abs(a.certified_cce_gap - b.certified_cce_gap),
        }
        by_prefix = {name: err.max(axis=0) for name, err in errors.items()}  # (P,) worst over games
        _report(
            f"float32 {algorithm} {label}: max |f32 - f64| per prefix {prefixes}: "
            + "; ".join(f"{name} " + " ".join(f"{e:.1e}" for e in errs) for name, errs in by_prefix.items())
        )
        for err in errors.values():
            assert err.max() <= FLOAT32_TOLERANCE
