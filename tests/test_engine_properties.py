"""Properties of the compiled engine: simplex, invariances, reductions, batching, chunking, precision."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import (
    FULL_TESTS,
    PAPER_ALGORITHMS,
    beyond_default_in_full,
    case,
    examples,
    in_this_mode,
    make_paper_game,
    make_random_game,
)
from markovgames import MarkovGame
from markovgames.dynamics import run, run_batch


def _assert_on_simplex(policies, atol=1e-12):
    for pol in policies:
        assert np.all(pol >= 0.0)
        np.testing.assert_allclose(pol.sum(axis=-1), 1.0, atol=atol)


#: The optimism setting each paper algorithm takes by default where a test draws it (the full mode
#: draws both): each setting once, and with optimism the loop the tests below share.
DEFAULT_OPTIMISM = {"smooth_ce": True, "stage_cce": False}


# One shape per algorithm keeps compilation to a minimum; hypothesis varies the numbers.
@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
@given(
    seed=st.integers(0, 2**31 - 1),
    eta=st.sampled_from([1e-4, 0.01, 0.2, 3.0, 100.0, 1e3]),
    # Both settings in the full mode; by default one per algorithm (`DEFAULT_OPTIMISM`: None here).
    optimistic=st.booleans() if FULL_TESTS else st.none(),
)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_policies_on_simplex_and_certified_gap_order(algorithm, seed, eta, optimistic):
    if optimistic is None:
        optimistic = DEFAULT_OPTIMISM[algorithm]
    game = make_random_game(seed, 2, 2, 2, (2, 3))
    result = run(game, algorithm, T=20, eta=eta, optimistic=optimistic)  # (as test_theory_rates_match_reference)
    _assert_on_simplex(result.policies)
    for arr in (result.value, result.certified_ce_bound, result.certified_cce_bound):
        assert np.all(np.isfinite(arr))
    # The CE bound dominates the CCE bound (sum_a max_b >= max_b sum_a) and the value (phi = id);
    # the CCE bound need not dominate the value: a certified CCE gap can be negative.
    assert np.all(result.certified_ce_bound >= result.certified_cce_bound - 1e-12)
    assert np.all(result.certified_ce_bound >= result.value - 1e-12)
    assert np.all(result.certified_ce_gap >= -1e-12)


def test_extreme_rewards_keep_policies_valid():
    # All-equal rewards and rewards at exactly 0 and 1, with a large learning rate (eta T far
    # beyond exp's range). The shape and T of test_relabelling_actions_permutes_policies_and_keeps_metrics: its loops.
    rng = np.random.default_rng(0)
    transitions = rng.dirichlet(np.ones(2), size=(2, 2, 2, 3))
    for rewards in (np.full((2, 2, 2, 2, 3), 0.5), rng.integers(0, 2, size=(2, 2, 2, 2, 3)).astype(float)):
        game = MarkovGame(rewards, transitions)
        # smooth_ce and stage_cce (both learners, both value updates); smooth_cce in the full mode.
        for algorithm in in_this_mode(PAPER_ALGORITHMS):
            _assert_on_simplex(run(game, algorithm, T=20, eta=1e3).policies)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_relabelling_actions_permutes_policies_and_keeps_metrics(algorithm):
    game = make_random_game(11, 2, 2, 2, (2, 3))
    perm = np.array([2, 0, 1])  # new action k is old action perm[k] for player 1
    permuted = MarkovGame(game.rewards[:, :, :, :, perm], game.transitions[:, :, :, perm, :])
    # (The shape and T of test_policies_on_simplex_and_certified_gap_order: its loop, compiled once.)
    a = run(game, algorithm, T=20, eta=0.5)
    b = run(permuted, algorithm, T=20, eta=0.5)
    np.testing.assert_allclose(b.policies[0], a.policies[0], atol=1e-12)
    np.testing.assert_allclose(b.policies[1], a.policies[1][..., perm], atol=1e-12)
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), atol=1e-12)


#: ``(game's shape, T)`` of the swapping test: by default the paper game's shape and the ``T`` of
#: test_chunking_and_trajectory_files_do_not_change_results' whole run (the game and its swap
#: share that loop); in the full mode also two and three actions (the swap is another shape).
SWAP_SHAPES = [((2, 2, 2, (2, 2)), 90)] + ([((2, 2, 2, (2, 3)), 20)] if FULL_TESTS else [])


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_swapping_players_swaps_everything(algorithm):
    for shape, T in SWAP_SHAPES:
        game = make_random_game(12, *shape)
        swapped = MarkovGame(
            np.swapaxes(game.rewards[:, ::-1], 3, 4),
            np.swapaxes(game.transitions, 2, 3),
        )
        a = run(game, algorithm, T=T, eta=0.5)
        b = run(swapped, algorithm, T=T, eta=0.5)
        np.testing.assert_allclose(b.policies[0], a.policies[1], atol=1e-12)
        np.testing.assert_allclose(b.policies[1], a.policies[0], atol=1e-12)
        for field in ("value", "certified_ce_bound", "certified_cce_bound"):
            np.testing.assert_allclose(getattr(b, field), getattr(a, field)[:, ::-1], atol=1e-12)


def test_smooth_cce_on_a_matrix_game_reduces_to_linearly_weighted_optimistic_hedge():
    # H = 1, S = 1: alpha_1 = 1 makes Q^t = r for every t, and w_j = binom(j, 1) = j. So smooth_cce
    # is optimistic Hedge on the fixed bimatrix game with weights j (independent NumPy loop here).
    rng = np.random.default_rng(5)
    payoff = rng.random((2, 3, 2))  # [player, a, b]
    game = MarkovGame(payoff[None, :, None], np.ones((1, 1, 3, 2, 1)))
    eta, T = 0.9, 30  # (the shape and T of test_each_learner_reduces_to_its_textbook_form: compiled once)
    result = run(game, "smooth_cce", T=T, eta=eta)
    x, y = np.full(3, 1 / 3), np.full(2, 1 / 2)
    cum_x, cum_y = np.zeros(3), np.zeros(2)
    last_x, last_y = np.zeros(3), np.zeros(2)
    for t in range(1, T + 1):
        lx = (cum_x + t * last_x) / t
        ly = (cum_y + t * last_y) / t
        x = np.exp(eta * lx - (eta * lx).max())
        x /= x.sum()
        y = np.exp(eta * ly - (eta * ly).max())
        y /= y.sum()
        ux, uy = payoff[0] @ y, payoff[1].T @ x
        cum_x += t * ux
        cum_y += t * uy
        last_x, last_y = ux, uy
        np.testing.assert_allclose(result.policies[0][t - 1, 0, 0], x, atol=1e-12)
        np.testing.assert_allclose(result.policies[1][t - 1, 0, 0], y, atol=1e-12)
    # The output policy's value: alpha_T^j-weighted average of the stage values x^j' R y^j.
    w = np.arange(1, T + 1) / (T * (T + 1) / 2)
    vals = np.array([result.policies[0][j, 0, 0] @ payoff[0] @ result.policies[1][j, 0, 0] for j in range(T)])
    np.testing.assert_allclose(result.value[-1, 0], w @ vals, atol=1e-12)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_single_index_certified_bounds_are_best_responses(algorithm):
    # After T' = 1 the output policy is the product policy pi^1 (uniform): the certified CCE
    # bound is the best-response value against uniform opponents (backward induction here).
    # Row 1 of a run's per-prefix metrics is T' = 1's: by default that of a run of the paper
    # game's shape and T = 90 (test_chunking_and_trajectory_files_do_not_change_results' loop),
    # in the full mode also of a run of one iteration.
    game = make_random_game(21, 2, 2, 2, (2, 2))
    H, S = game.horizon, game.num_states
    for T in (90, 1) if FULL_TESTS else (90,):
        result = run(game, algorithm, T=T, eta=0.3)
        for i in range(2):
            v = np.zeros(S)
            for h in range(H - 1, -1, -1):
                q = game.rewards[h, i] + game.transitions[h] @ v  # (S, A, A)
                v = (q.mean(axis=2) if i == 0 else q.mean(axis=1)).max(axis=1)
            assert result.certified_cce_bound[0, i] == pytest.approx(v[game.initial_state], abs=1e-12)


#: A three-player game's shape for the tests below (two steps: compile time grows with H).
THREE_PLAYERS = (3, 2, 2, (2, 3, 2))

#: The paper game's shape: random games of it at T = 90 share the loops of
#: test_chunking_and_trajectory_files_do_not_change_results' whole run.
PAPER_SHAPE = (2, 2, 2, (2, 2))


def _batch_shapes(algorithm: str) -> list:
    """``(shape, T)`` of test_batch_equals_single_runs' batches: the three-player shape (the loops
    of test_per_step_carry_equals_the_scanned_steps) with smooth_ce by default, the paper game's
    (the loops of test_batch_groups_do_not_change_results) with stage_cce; both in the full mode."""
    if FULL_TESTS:
        return [(THREE_PLAYERS, 60), (PAPER_SHAPE, 90)]
    return [(THREE_PLAYERS, 60)] if algorithm == "smooth_ce" else [(PAPER_SHAPE, 90)]


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_batch_equals_single_runs(algorithm):
    for shape, T in _batch_shapes(algorithm):
        games = [make_random_game(s, *shape) for s in (31, 32)]
        etas = [0.1, 0.9]
        batch = run_batch(games, algorithm, T=T, etas=etas, record_trajectory=True)
        for k in range(2):
            single = run(games[k], algorithm, T=T, eta=etas[k])
            other = batch.run(k)
            for a, b in zip(single.policies, other.policies, strict=True):
                np.testing.assert_allclose(a, b, atol=1e-12)
            for field in ("value", "certified_ce_bound", "certified_cce_bound"):
                np.testing.assert_allclose(getattr(single, field), getattr(other, field), atol=1e-12)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_chunking_and_trajectory_files_do_not_change_results(algorithm, tmp_path):
    game = make_paper_game()
    # T = 90 in chunks of 6 (the largest divisor up to 7); the whole run is test_checkpoint_only's.
    whole = run(game, algorithm, T=90, eta=0.2)
    chunked = run(game, algorithm, T=90, eta=0.2, chunk_size=7, trajectory_dir=tmp_path / "traj")
    assert isinstance(chunked.policies[0], np.memmap)
    for a, b in zip(whole.policies, chunked.policies, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(whole.value, chunked.value)
    np.testing.assert_array_equal(whole.certified_ce_bound, chunked.certified_ce_bound)


# The smooth update's identity: smooth_ce by default, smooth_cce (the same update with Hedge) in
# the full mode.
@pytest.mark.parametrize("algorithm", beyond_default_in_full(["smooth_ce", "smooth_cce"], {"smooth_ce"}))
def test_smooth_identity_holds_inside_the_run(algorithm):
    # Q^t_h = r_h + P_h V^t_{h+1} with V the output policy's value (the paper's lemma). By default
    # on the three-player shape and T of test_batch_equals_single_runs (its loop); in the full mode
    # also three steps and states for 500 iterations.
    games = [(make_random_game(41, *THREE_PLAYERS), 60)]
    if FULL_TESTS:
        games.append((make_random_game(41, 2, 3, 3, (2, 3)), 500))
    for game, T in games:
        result = run(game, algorithm, T=T, eta=0.2)
        assert result.identity_residual < 1e-12


# smooth_ce by default: stage_cce's and smooth_cce's float32 runs (the paper game among a batch,
# T = 10^4, a tolerance five times tighter) are test_numerical_extremes.py's default cases.
@pytest.mark.parametrize("algorithm", beyond_default_in_full(["smooth_ce", "stage_cce", "smooth_cce"], {"smooth_ce"}))
def test_float32_is_close_to_float64(algorithm):
    # Measured error of the float32 path on the paper's game (documented tolerance 1e-4).
    game = make_paper_game()
    a = run(game, algorithm, T=2000, eta=0.2)
    b = run(game, algorithm, T=2000, eta=0.2, dtype="float32")
    assert b.value.dtype == np.float32
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        assert np.max(np.abs(getattr(a, field) - getattr(b, field))) < 1e-4


def test_no_trajectory_mode_keeps_metrics():
    game = make_paper_game()
    a = run(game, "stage_cce", T=90)  # (test_checkpoint_only's run: compiled once)
    # (In test_checkpoint_only's chunks without a trajectory: its loop. Chunks change no number.)
    b = run(game, "stage_cce", T=90, record_trajectory=False, chunk_size=20)
    assert b.policies is None
    np.testing.assert_array_equal(a.certified_cce_bound, b.certified_cce_bound)


@given(T=st.integers(1, 400), chunk_size=st.integers(1, 40))
@settings(max_examples=200, deadline=None)
def test_chunk_plans_cover_t_with_at_most_two_lengths_and_no_needless_single_steps(T, chunk_size):
    """A plan's chunks sum to ``T``, none longer than ``chunk_size``, with one length where a divisor
    from ``chunk_size / 4`` (at least 2) up allows, else chunks of ``chunk_size`` and a shorter last
    one: never chunks of 1 under a ``chunk_size`` above 1 (a prime ``T`` took the divisor 1, one
    compiled call per iteration)."""
    from markovgames.dynamics._plan import chunk_plan

    plan = chunk_plan(T, 8, chunk_size)
    assert sum(plan) == T and max(plan) <= chunk_size and len(set(plan)) <= 2
    if T <= chunk_size or chunk_size == 1:
        assert plan == [T] if T <= chunk_size else plan == [1] * T
    elif len(set(plan)) == 1:
        assert max(chunk_size // 4, 2) <= plan[0] and T % plan[0] == 0
    else:
        assert plan[:-1] == [chunk_size] * (len(plan) - 1) and plan[-1] < chunk_size
        assert all(T % d for d in range(max(chunk_size // 4, 2), chunk_size + 1))
    if chunk_size > 1 and T > 1:
        assert plan.count(1) <= 1
    assert chunk_plan(97, 8, 7) == [7] * 13 + [6]


def test_bad_arguments_raise_clear_errors():
    game = make_paper_game()
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; choose one of: smooth_ce"):
        run(game, "nope", T=10)
    with pytest.raises(ValueError, match="T must be at least 1"):
        run(game, "smooth_ce", T=0)
    with pytest.raises(ValueError, match="learning rate"):
        run(game, "smooth_ce", T=10, eta=-1.0)
    with pytest.raises(ValueError, match="learning rate"):
        run(game, "smooth_ce", T=10, eta=float("nan"))
    with pytest.raises(ValueError, match="shape"):
        run_batch([game, make_random_game(0, 2, 2, 3, (2, 2))], "smooth_ce", T=5)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_checkpoint_only_metrics_equal_the_full_curve(algorithm):
    game = make_paper_game()
    full = run(game, algorithm, T=90, eta=0.2)
    some = run(game, algorithm, T=90, eta=0.2, checkpoints=[90, 1, 7, 45], chunk_size=20, record_trajectory=False)
    np.testing.assert_array_equal(some.prefixes, [1, 7, 45, 90])
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_array_equal(getattr(some, field), getattr(full, field)[some.prefixes - 1])
    assert some.row(45) == 2
    if FULL_TESTS or algorithm == "smooth_ce":  # (a batch's checkpoints: one algorithm by default)
        batch = run_batch([game], algorithm, T=90, etas=[0.2, 0.3], checkpoints=[10, 90])
        # A batch's kernels run over the run axis, so they may round differently from a single run's
        # (as in test_batch_equals_single_runs); the checkpoint rows are the ones asked for.
        np.testing.assert_allclose(batch.value[0], full.value[[9, 89]], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="checkpoints must lie in 1..T"):
        run(game, algorithm, T=10, checkpoints=[11])


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_batch_groups_do_not_change_results(algorithm, tmp_path):
    """A batch split into groups of compiled calls (uneven last group) equals one call, and each run equals its single run."""
    # Games of the paper game's shape at T = 90: the single run is test_chunking_and_trajectory_
    # files_do_not_change_results' whole one, a group of two test_batch_equals_single_runs' batch.
    games = [make_random_game(seed, *PAPER_SHAPE) for seed in range(3)]
    etas = [0.1, 0.2, 0.3]
    whole = run_batch(games, algorithm, T=90, etas=etas, record_trajectory=True, group_size=3)
    grouped = run_batch(games, algorithm, T=90, etas=etas, record_trajectory=True, group_size=2, trajectory_dir=tmp_path)
    for name in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(grouped, name), getattr(whole, name), rtol=0, atol=1e-13)
    for a, b in zip(grouped.policies, whole.policies, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    single = run(games[2], algorithm, T=90, eta=0.3)  # (the last group's run)
    np.testing.assert_allclose(grouped.value[2], single.value, rtol=0, atol=1e-13)
    if algorithm != "stage_cce":
        assert grouped.identity_residual.shape == (3,)
    with pytest.raises(ValueError, match="group_size must be a positive integer"):
        run_batch(games, algorithm, T=5, group_size=0)


def _fresh_compiled_loops(monkeypatch):
    """From now on until the test ends, the run loops are compiled anew (for settings the test
    changes) into a cache of their own: the loops compiled before stay cached for later tests."""
    from markovgames.dynamics import _engine, _loop

    monkeypatch.setattr(_loop, "compiled_chunk", functools.cache(_engine.compiled_chunk.__wrapped__))


# The per-step carry is the smooth update's: smooth_cce (the same update with Hedge) in the full mode.
@pytest.mark.parametrize("algorithm", beyond_default_in_full(["smooth_ce", "smooth_cce"], {"smooth_ce"}))
def test_per_step_carry_equals_the_scanned_steps(algorithm, monkeypatch):
    """Short float64 horizons carry one array per step through the loop (``split_steps``);
    forcing the scanned form with stacked arrays gives the same runs, single and batched."""
    from markovgames.dynamics import _smooth

    # The paper game's run is test_chunking_and_trajectory_files_do_not_change_results' whole one;
    # the three-player game's shape, T and batch are test_batch_equals_single_runs' (their loops,
    # compiled once). By default a single run of the
    # paper game and a batch of the three-player game (each compiled again with scanned steps);
    # in the full mode also the three-player game's single run.
    three = make_random_game(11, *THREE_PLAYERS)
    singles = [(make_paper_game(), 90), (three, 60)][: 2 if FULL_TESTS else 1]
    per_step = [run(g, algorithm, T=T, eta=0.2) for g, T in singles]
    batch = run_batch(three, algorithm, T=60, etas=[0.3, 0.1], record_trajectory=True)
    assert _smooth.splits_steps(np.zeros((three.horizon, 1), np.float64))
    monkeypatch.setattr(_smooth, "_UNROLL_HORIZON", 0)
    _fresh_compiled_loops(monkeypatch)
    assert not _smooth.splits_steps(np.zeros((three.horizon, 1), np.float64))
    scanned = [run(g, algorithm, T=T, eta=0.2) for g, T in singles]
    scanned_batch = run_batch(three, algorithm, T=60, etas=[0.3, 0.1], record_trajectory=True)
    for a, b in [*zip(per_step, scanned, strict=True), (batch, scanned_batch)]:
        for name in ("value", "certified_ce_bound", "certified_cce_bound"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-13)
        for x, y in zip(a.policies, b.policies, strict=True):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)
        np.testing.assert_allclose(a.identity_residual, b.identity_residual, rtol=0, atol=1e-13)


#: ``(T, kept suffix)`` of each default case of test_blocked_inner_loops_equal_the_plain_loops:
#: smooth_ce in blocked chunks and a prime one (T = 301 in chunks of 36: 8 of 36 and 1 of 13),
#: stage_cce in blocked chunks only (T = 288: 8 of 36) and with a kept suffix of the trajectory
#: (which compiles no other loop there). Every case takes both in the full mode.
BLOCKED_RUNS = {"smooth_ce": (301, False), "stage_cce": (288, True)}


# Both value updates by default; PRM+'s two-array learner state in the stage loop's blocks in
# the full mode (the blocks carry any learner state alike).
@pytest.mark.parametrize(
    "algorithm", beyond_default_in_full(["smooth_ce", "stage_cce", "rm-plus+stage"], {"smooth_ce", "stage_cce"})
)
def test_blocked_inner_loops_equal_the_plain_loops(algorithm, monkeypatch):
    """On small games the loops run in blocks whose outputs fit XLA's sequential path
    (``_value_update.sequential_block``); with blocking off they must give the same numbers, for
    chunks cut into blocks (36 iterations: blocks of 6) and a chunk that cannot be (13, a prime:
    one plain loop), stages cut by chunks, a kept suffix of the trajectory and last-iterate
    evaluation at scattered prefixes."""
    from markovgames.dynamics import _engine, _value_update

    game = make_paper_game()
    T, suffix = (301, True) if FULL_TESTS else BLOCKED_RUNS[algorithm]
    kwargs = dict(T=T, eta=0.3, chunk_size=36, last_iterate=[1, 2, 35, 36, 37, 150, T])
    # Bit for bit at the optimisation level of long runs (a short run's level 0 gives the blocked
    # and the plain loops other machine code, equal to the last bit or two).
    monkeypatch.setattr(_engine, "QUICK_RUN_WORK", 0)

    def both():
        runs = [run(game, algorithm, **kwargs)]
        if suffix:
            runs.append(run(game, algorithm, trajectory_tolerance=0.2, **kwargs))
        return runs

    arrays = _value_update.GameArrays(game.rewards, game.transitions, np.int32(0), np.float64(0.3))
    assert _value_update.sequential_block(arrays, (), 48) > 1  # the paper game does take the blocked path
    blocked = both()
    monkeypatch.setattr(_value_update, "SEQUENTIAL_BUFFER_BYTES", 0)
    _fresh_compiled_loops(monkeypatch)
    plain = both()
    for a, b in zip(blocked, plain, strict=True):
        for name in ("value", "certified_ce_bound", "certified_cce_bound", "last_iterate_value", "last_iterate_best_response"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        for x, y in zip(a.policies, b.policies, strict=True):
            np.testing.assert_array_equal(x, y)


# By default one length of each kind (1; a prime; divisible by 4 only: 100, in 25 blocks; by
# every block: 16); the others in the full mode (each length compiles the scan and its four blockings).
@pytest.mark.parametrize("size", beyond_default_in_full([1, 2, 3, 7, 12, 13, 16, 36, 97, 100], {1, 7, 16, 100}))
def test_blocked_scan_is_the_plain_scan(size):
    """`blocked_scan` runs the same iterations in the same order as ``lax.scan``, whatever the
    length: blocks of a divisor of it (12, 16, 36, 100), or one plain loop (primes, 1, 2)."""
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics._loop import precision
    from markovgames.dynamics._value_update import blocked_scan

    def step(c, x):
        c = jnp.sin(c) * x + c * c / (1.0 + x)  # not associative: a changed order would show
        return c, (c, x * c)

    with precision("float64"):
        xs = jnp.linspace(0.1, 0.9, size, dtype=jnp.float64)
        want = jax.lax.scan(step, jnp.float64(0.3), xs)
        assert want[0].dtype == jnp.float64
        for block in (1, 4, 8, 16):
            got = blocked_scan(step, jnp.float64(0.3), xs, block)
            for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# Stretches that end at rows the host gives (`segment_ends`): one compiled program per block,
# hypothesis varies the rows (data, not shapes). Eager ops, so the step's numbers are the scan's
# (the plain scans do not depend on the rows: run once, `_plain_scans`).
@given(rows=st.sets(st.integers(0, 12), max_size=13), block=st.sampled_from([1, 4]))
@settings(max_examples=examples(12, 60), deadline=None)
def test_segmented_scan_is_the_scan_with_values_after_the_given_rows(rows, block):
    """`segmented_scan` runs the scan's iterations in order and evaluates ``at_end`` after each
    given row and at the chunk's end: row ``k`` of its values after the ``k``-th stretch, zeros
    past the last; `segment_ends` refuses a capacity too small for the stretches."""
    import jax.numpy as jnp

    from markovgames.dynamics._loop import precision
    from markovgames.dynamics._value_update import segment_ends

    size, capacity = 13, 16
    rows = np.array(sorted(rows), dtype=np.int64)

    with precision("float64"):
        xs = jnp.linspace(0.1, 0.9, size, dtype=jnp.float64)
        ends = segment_ends(rows, size, capacity)
        carry, out, values = _segmented(block, capacity)(jnp.float64(0.3), xs, jnp.asarray(ends))
    want_carry, want_out, carries = _plain_scans(size)
    np.testing.assert_array_equal(np.asarray(carry), np.asarray(want_carry))
    np.testing.assert_array_equal(np.asarray(out["out"]), np.asarray(want_out["out"]))
    stretch_ends = list(rows) + ([] if len(rows) and rows[-1] == size - 1 else [size - 1])
    expected = np.zeros((capacity, 2))
    for k, row in enumerate(stretch_ends):
        expected[k] = [float(carries[row]), row]
    np.testing.assert_array_equal(np.asarray(values), expected)
    with pytest.raises(AssertionError, match="do not fit in a capacity of"):
        segment_ends(np.arange(size - 1), size, size - 1)


@functools.cache
def _plain_scans(size: int):
    """``lax.scan`` of the test above's step (eager) over its ``size`` inputs: the final carry,
    the outputs and the carry after each iteration."""
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics._loop import precision

    def step(c, x):
        c = jnp.sin(c) * x + c * c / (1.0 + x)  # not associative: a changed order would show
        return c, {"out": x * c}

    with precision("float64"):
        xs = jnp.linspace(0.1, 0.9, size, dtype=jnp.float64)
        want_carry, want_out = jax.lax.scan(step, jnp.float64(0.3), xs)
        _, carries = jax.lax.scan(lambda c, x: (step(c, x)[0], step(c, x)[0]), jnp.float64(0.3), xs)
    return want_carry, want_out, carries


@functools.cache
def _segmented(block: int, capacity: int):
    """The compiled `segmented_scan` of the test above: ``at_end`` gives the carry and the number
    of iterations run, one program per block."""
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics._value_update import segmented_scan

    def step(c, x):
        c, n = c
        new = jnp.sin(c) * x + c * c / (1.0 + x)
        return (new, n + 1.0), {"out": x * new}

    def fn(c, xs, ends):
        (c, _), out, values = segmented_scan(step, (c, jnp.float64(-1.0)), xs, ends, lambda s: jnp.stack(s), block)
        return c, out, values

    return jax.jit(fn)


def test_compiler_options_this_jaxlib_does_not_know_are_left_out():
    """The compiled loop's XLA options are probed: an option the installed jaxlib does not know is
    dropped, the ones it knows are kept (a newer jaxlib that drops one still compiles the loop)."""
    import jax

    from markovgames.dynamics._engine import _supported_options

    if jax.default_backend() != "cpu":
        pytest.skip("the loop's XLA options are CPU options")
    known = ("xla_cpu_enable_fast_math", False)  # an option every supported jaxlib knows
    assert _supported_options((("xla_cpu_no_such_option_of_markovgames", True), known)) == (known,)
    assert _supported_options((("xla_cpu_no_such_option_of_markovgames", True),)) == ()


def test_the_classic_emitters_compile_tiny_games_and_short_runs():
    """A single run of a tiny game (every array at most 512 bytes) compiles with XLA's classic
    emitters at any T (faster to compile, as fast to run); a batch or a larger game only while
    its run's work (T times its game arrays' entries, every run of a batch) is at most
    SHORT_RUN_WORK, beyond which the default emitters' faster loops pay off; the shortest runs
    (QUICK_RUN_WORK) also at LLVM's optimisation level 0 (benchmarks/README.md)."""
    import jax

    from markovgames.dynamics._engine import QUICK_RUN_WORK, SHORT_RUN_WORK, _size_options, run_work
    from markovgames.dynamics._loop import device_game, precision

    if jax.default_backend() != "cpu":
        pytest.skip("the emitters are a CPU option")
    classic = {"xla_cpu_use_fusion_emitters": False}
    with precision("float64"):
        paper = device_game([make_paper_game()], [0.2], "float64", batched=False)
        assert _size_options(paper, False, run_work(10**9, paper)) == classic
        three = make_random_game(1, 3, 3, 4, (2, 3, 2))
        for games, batched in [([make_paper_game()] * 2, True), ([three], False), ([three] * 3, True)]:
            arrays = device_game(games, [0.2] * len(games), "float64", batched=batched)
            entries = sum(leaf.size for leaf in jax.tree_util.tree_leaves(arrays))
            longest = SHORT_RUN_WORK // entries  # the longest run that is still short
            assert run_work(longest, arrays) <= SHORT_RUN_WORK < run_work(longest + 1, arrays)
            assert _size_options(arrays, batched, run_work(longest, arrays)) == classic
            assert _size_options(arrays, batched, run_work(longest + 1, arrays)) is None
            assert _size_options(arrays, batched, SHORT_RUN_WORK) == classic
            assert _size_options(arrays, batched, SHORT_RUN_WORK + 1) is None
            # ... and at LLVM's level 0 too while the work is at most QUICK_RUN_WORK.
            assert _size_options(arrays, batched, QUICK_RUN_WORK) == {**classic, "xla_backend_optimization_level": 0}
            assert _size_options(arrays, batched, QUICK_RUN_WORK + 1) == classic
        assert _size_options(paper, False, run_work(10, paper)) == {**classic, "xla_backend_optimization_level": 0}


def _record_size_options(monkeypatch) -> list:
    """``(work, options)`` of every compilation from now on, in order (`_engine._size_options`)."""
    from markovgames.dynamics import _engine

    calls: list = []
    original = _engine._size_options

    def recording(game, batched, work):
        calls.append((work, original(game, batched, work)))
        return calls[-1][1]

    monkeypatch.setattr(_engine, "_size_options", recording)
    return calls


# A single run of a game larger than tiny (arrays over 512 bytes) and a batch of two: each is one of
# the two update loops by default, and both are in the full mode (each case compiles its loop with
# both emitters).
@pytest.mark.parametrize(
    "algorithm, batched",
    [
        case("smooth_ce", False, default=True),
        case("stage_cce", True, default=True),
        case("smooth_ce", True, default=False),
        case("stage_cce", False, default=False),
        case("smooth_cce", False, default=False),
        case("smooth_cce", True, default=False),
    ],
)
def test_both_emitters_give_the_same_runs(algorithm, batched, monkeypatch):
    """The suite's runs are short, so they compile with the classic emitters at LLVM's level 0;
    the default ones at the default level compile long runs of batches and larger games. Forced on
    the same short run, they give the same numbers but for rounding in the last bits."""
    import jax

    from markovgames.dynamics import _engine

    options = _record_size_options(monkeypatch)

    def once():
        options.clear()
        if batched:
            # Two of test_batch_groups_do_not_change_results' games: its short loop of two runs.
            games = [make_random_game(seed, *PAPER_SHAPE) for seed in range(2)]
            result = run_batch(games, algorithm, T=90, etas=[0.1, 0.3], record_trajectory=True)
        else:
            # Two players with three actions each: 576 bytes of rewards, compiled in less time
            # than a three-player game's loop with the default emitters.
            result = run(make_random_game(5, 2, 2, 2, (3, 3)), algorithm, T=60, eta=0.3)
        return result, [chosen for _, chosen in options]

    short, short_options = once()
    monkeypatch.setattr(_engine, "SHORT_RUN_WORK", 0)
    long, long_options = once()
    # The runs did compile with the two emitters (on the CPU, where the classic ones exist).
    if jax.default_backend() == "cpu":
        quick = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0}
        assert short_options == [quick] and long_options == [None]
    for name in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(short, name), getattr(long, name), rtol=0, atol=1e-12)
    for x, y in zip(short.policies, long.policies, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)


def test_a_runs_whole_work_picks_the_emitters_of_every_group_and_resumption(tmp_path, monkeypatch):
    """Every compiled call of a run gets the whole run's work (T times every run's game entries),
    whatever its group of runs, and so does a resumed run's: the emitters, and with them the
    last bits of the numbers, never change within a run."""
    from markovgames.dynamics import _engine
    from markovgames.dynamics._loop import device_game, precision

    seen = _record_size_options(monkeypatch)
    # The runs of test_batch_groups_do_not_change_results and test_api_resume_is_bit_identical
    # (their compiled loops are shared).
    games = [make_random_game(seed, *PAPER_SHAPE) for seed in range(3)]
    etas = [0.1, 0.2, 0.3]
    run_batch(games, "stage_cce", T=90, etas=etas, record_trajectory=True, group_size=2)  # groups of 2 and 1
    with precision("float64"):
        whole = _engine.run_work(90, device_game(games, etas, "float64", batched=True))
    assert [work for work, _ in seen] == [whole, whole]  # a group of two and one of one: two programs

    class Stop(Exception):
        pass

    def stop_after_300(done):
        if done >= 300:
            raise Stop

    seen.clear()
    game = make_paper_game()
    kwargs = dict(T=700, trajectory_dir=tmp_path / "part", state_file=tmp_path / "state.npz", state_every=100)
    with pytest.raises(Stop):
        run(game, "smooth_ce", progress=stop_after_300, **kwargs)
    run(game, "smooth_ce", **kwargs)
    with precision("float64"):
        whole = _engine.run_work(700, device_game([game], [0.2], "float64", batched=False))
    assert [work for work, _ in seen] == [whole, whole]
