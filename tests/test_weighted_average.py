"""The weighted average of the iterates with the value update's own weights: the weights against a
literal reference written from the papers, and its value, Nash gap and duality gap, carried in the
compiled loop, against a NumPy computation from the trajectory (to 1e-10) through every surface:
``run``, ``run_batch``, resume, the command line, sweeps, ``load_results``, ``summarize`` and ``plot``.

The NumPy side is independent of the engine and of `markovgames._schedules.average_weights`: the
averages are built here, with the recursion ``bar pi^t = (1 - alpha_t) bar pi^{t-1} + alpha_t pi^t``
of the smooth updates (Zhang et al. 2022, Yang and Ma 2023: ``alpha_t = (H+1)/(H+t)``; 1/t and
2/(t+1) for the uniform and linear averagings) or the stages' means (the stage lengths written
out), and evaluated by the NumPy backward induction (`markovgames.evaluation.nash_gap`).
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import StopRun, case, examples, stop_after
from markovgames._schedules import average_weights
from markovgames.cli import main
from markovgames.dynamics import run, run_batch
from markovgames.evaluation import average_iterate, duality_gap, nash_gap
from markovgames.experiments import load_results, load_run_directory, parse_sweep_config, plot_sweep, run_sweep
from markovgames.experiments.figures._run import _lines
from markovgames.experiments.sweeps._summary import summarize_results
from markovgames.games import paper_game, random_discounted_game, random_game, save_game

TOL = 1e-10
GAME = random_game(2, 2, 2, (2, 3), seed_or_rng=3, zero_sum=True)
#: Prefixes around the stage ends of H = 2 (stages 1..2, 3..5, 6..9, 10..14, ...) and beyond.
PREFIXES = [1, 2, 3, 4, 5, 6, 9, 10, 13, 14, 15, 40, 61]


def _alpha(kind: str, t: int, H: int) -> Fraction:
    """The step size of the value update ``kind`` at iteration ``t`` (the papers' formulas)."""
    k = {"smooth": H, "smooth-uniform": 0, "smooth-linear": 1}[kind]
    return Fraction(k + 1, k + t)


def _stage_lengths(H: int, T: int) -> list[int]:
    """``L_1 = H``, ``L_{k+1} = floor((1 + 1/H) L_k)`` (Mao et al. 2024, Algorithm 2), until ``T``."""
    lengths = [H]
    while sum(lengths) < T:
        lengths.append((H + 1) * lengths[-1] // H)
    return lengths


def _numpy_averages(kind: str, policies, prefixes, H: int) -> dict[int, list[np.ndarray]]:
    """Per prefix ``T'`` the weighted average of ``pi^1..pi^{T'}``, in plain NumPy from the trajectory."""
    out = {}
    if kind == "stage":
        ends = np.cumsum(_stage_lengths(H, max(prefixes)))
        for T_prime in prefixes:
            complete = ends[ends <= T_prime]
            if complete.size == 0:  # within stage 1: its iterations so far
                lo, hi = 0, T_prime
            else:
                hi = int(complete[-1])
                lo = int(ends[len(complete) - 2]) if len(complete) > 1 else 0
            out[T_prime] = [np.mean(np.asarray(p[lo:hi], dtype=np.float64), axis=0) for p in policies]
        return out
    bar = [np.zeros(p.shape[1:]) for p in policies]
    for t in range(1, max(prefixes) + 1):
        a = float(_alpha(kind, t, H))
        bar = [(1.0 - a) * b + a * np.asarray(p[t - 1], dtype=np.float64) for b, p in zip(bar, policies, strict=True)]
        if t in prefixes:
            out[t] = bar
    return out


def _expected(game, kind, policies, prefixes):
    """``(L, 2, N)``: the NumPy averages' values and best-response values per prefix."""
    averages = _numpy_averages(kind, policies, prefixes, game.horizon)
    rows = []
    for T_prime in prefixes:
        res = nash_gap(game, averages[T_prime])
        rows.append([res.value, res.best_response_value])
    return np.asarray(rows)


# ----------------------------------------------------------------------------- the weights


def test_the_weights_are_the_papers_literally():
    # The smooth update's alpha_T^t = alpha_t prod_{j=t+1}^T (1 - alpha_j), in exact arithmetic.
    for kind, H, T in (("smooth", 3, 7), ("smooth", 1, 5), ("smooth-uniform", 2, 6), ("smooth-linear", 4, 6)):
        literal = []
        for t in range(1, T + 1):
            w = _alpha(kind, t, H)
            for j in range(t + 1, T + 1):
                w *= 1 - _alpha(kind, j, H)
            literal.append(float(w))
        np.testing.assert_allclose(average_weights(kind, T, H), literal, rtol=1e-15, atol=0)
    # Closed forms: uniform 1/T, linear 2t/(T(T+1)).
    np.testing.assert_array_equal(average_weights("smooth-uniform", 4, 9), [0.25] * 4)
    np.testing.assert_allclose(average_weights("smooth-linear", 4, 9), [0.1, 0.2, 0.3, 0.4], rtol=1e-15)
    # Stage-based, H = 2: stages 1..2, 3..5, 6..9; the last stage complete after T iterations.
    stage = {
        1: [1.0],
        2: [0.5, 0.5],
        4: [0.5, 0.5, 0, 0],
        5: [0, 0, 1 / 3, 1 / 3, 1 / 3],
        8: [0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0, 0],
        9: [0, 0, 0, 0, 0, 0.25, 0.25, 0.25, 0.25],
    }
    for T, literal in stage.items():
        np.testing.assert_allclose(average_weights("stage", T, 2), literal, rtol=1e-15, atol=0)


@settings(max_examples=examples(20, 200), deadline=None)
@given(kind=st.sampled_from(["smooth", "smooth-uniform", "smooth-linear"]), H=st.integers(1, 40), T=st.integers(2, 3000))
def test_the_weights_follow_the_running_recursion(kind, H, T):
    """w^T = (1 - alpha_T) (w^{T-1}, 0) + alpha_T e_T: what the loop carries; non-negative, summing to 1."""
    alpha = float(_alpha(kind, T, H))
    before = np.append(average_weights(kind, T - 1, H), 0.0)
    after = average_weights(kind, T, H)
    expected = (1.0 - alpha) * before
    expected[-1] += alpha
    np.testing.assert_allclose(after, expected, rtol=1e-12, atol=1e-300)
    assert np.all(after >= 0) and after.sum() == pytest.approx(1.0, abs=1e-12)


# ----------------------------------------------------------------------------- run, run_batch, resume


# Each case compiles two loops at the long runs' level: by default the uniform averaging and the
# stage means, the paper's and the linear averagings in the full mode (the smooth loop's average
# is one code for every averaging: by default the paper's weights are checked against NumPy in
# the batch and sweep tests below, the linear ones in the segments test and the textbook duality
# gap).
@pytest.mark.parametrize(
    ("algorithm", "kind"),
    [
        case("hedge+smooth", "smooth", default=False, id="hedge+smooth-smooth"),
        case("rm-plus+smooth-uniform", "smooth-uniform", default=True, id="rm-plus+smooth-uniform-smooth-uniform"),
        case("hedge+smooth-linear", "smooth-linear", default=False, id="hedge+smooth-linear-smooth-linear"),
        case("stage_cce", "stage", default=True, id="stage_cce-stage"),
    ],
)
def test_the_loops_weighted_average_equals_numpy_from_the_trajectory(algorithm, kind, level_two):
    result = run(GAME, algorithm, T=61, eta=0.4, weighted_average=PREFIXES)
    np.testing.assert_array_equal(result.weighted_average_prefixes, PREFIXES)
    expected = _expected(GAME, kind, result.policies, PREFIXES)
    np.testing.assert_allclose(result.weighted_average_value, expected[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.weighted_average_best_response, expected[:, 1], rtol=0, atol=TOL)
    gaps = expected[:, 1] - expected[:, 0]
    np.testing.assert_allclose(result.weighted_average_nash_gap, gaps.max(axis=-1), rtol=0, atol=TOL)
    np.testing.assert_allclose(result.weighted_average_duality_gap, gaps.sum(axis=-1), rtol=0, atol=TOL)
    # The public helpers agree: the average of the value update's weights, and its duality gap.
    names = {"smooth": "paper", "smooth-uniform": "uniform", "smooth-linear": "linear", "stage": "stage"}
    bar = average_iterate([p[:40] for p in result.policies], names[kind])
    assert duality_gap(GAME, bar) == pytest.approx(result.weighted_average_duality_gap[PREFIXES.index(40)], abs=TOL)
    # The per-prefix metrics do not change when the average is carried too.
    plain = run(GAME, algorithm, T=61, eta=0.4, record_trajectory=False)
    np.testing.assert_array_equal(plain.value, result.value)
    assert plain.weighted_average_value is None and plain.weighted_average_duality_gap is None


# Beyond the quick runs the smooth loops evaluate the average at the ends of stretches of
# iterations that test nothing (`segmented_scan`), or at every prefix in every iteration: chunks of
# 1 and 5 iterations and one whole chunk, with the other per-iteration outputs beside it (the last
# iterate, regret rows, sampled feedback's draws): the same average as NumPy, and the other outputs
# unchanged bit for bit (at the quick runs' level 0 a program with other outputs may change the
# last bits: docs/numerics.md; the threshold is 0 here).
@pytest.mark.parametrize(
    ("chunk_size", "prefixes"),
    [
        case(1, PREFIXES, default=False, id="1-some"),
        case(5, True, default=True, id="5-every"),
        case(None, [2, 3, 29, 30, 31, 61], default=True, id="whole-some"),
    ],
)
def test_the_smooth_loops_segments_change_nothing_else(chunk_size, prefixes, monkeypatch):
    from markovgames.dynamics import _engine, _loop

    monkeypatch.setattr(_engine, "QUICK_RUN_WORK", 0)
    monkeypatch.setattr(_loop, "QUICK_RUN_WORK", 0)
    every = list(range(1, 62)) if prefixes is True else prefixes
    kwargs = dict(T=61, eta=0.4, chunk_size=chunk_size, last_iterate=PREFIXES, regret=True, feedback="sampled:2", seed=3)
    result = run(GAME, "hedge+smooth-linear", weighted_average=prefixes, **kwargs)
    expected = _expected(GAME, "smooth-linear", result.policies, every)
    np.testing.assert_array_equal(result.weighted_average_prefixes, every)
    np.testing.assert_allclose(result.weighted_average_value, expected[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.weighted_average_best_response, expected[:, 1], rtol=0, atol=TOL)
    plain = run(GAME, "hedge+smooth-linear", **kwargs)
    names = ("value", "certified_cce_bound", "certified_ce_bound", "external_regret", "swap_regret", "last_iterate_value")
    for name in names + ("last_iterate_best_response", "identity_residual"):
        np.testing.assert_array_equal(getattr(result, name), getattr(plain, name), err_msg=name)
    for ours, theirs in zip(result.policies, plain.policies, strict=True):
        np.testing.assert_array_equal(ours, theirs)


# With the average at marked prefixes, a short run's iterations test their marks, and a longer
# one's loop runs stretches with no test between them (`segmented_scan`; here beyond a threshold
# of 0): either way a run's numbers do not depend on its chunks. The discounted update's loop is of
# the same form (its iterates evaluated on the host).
# By default the smooth update's loop in stretches and the discounted update's quick loop (each
# setting of each once); the other two in the full mode.
@pytest.mark.parametrize(
    ("stretches", "discounted"),
    [case(s, d, default=s != d, id=f"{s}-{d}") for s, d in itertools.product((False, True), (False, True))],
)
def test_the_smooth_loops_numbers_do_not_depend_on_the_chunks(discounted, stretches, monkeypatch):
    from markovgames.dynamics import _engine, _loop

    if stretches:  # (and compiled as the runs beyond the threshold are)
        monkeypatch.setattr(_loop, "QUICK_RUN_WORK", 0)
        monkeypatch.setattr(_engine, "QUICK_RUN_WORK", 0)
    prefixes = [1, 2, 3, 9, 10, 11, 29, 30, 31, 40, 97]
    game = random_discounted_game(2, 2, (2, 3), 0.8, seed_or_rng=3) if discounted else GAME
    algorithm = "hedge+discounted-smooth" if discounted else "hedge+smooth"
    kwargs = dict(T=97, eta=0.4, weighted_average=prefixes, record_trajectory=False)
    whole = run(game, algorithm, **kwargs)
    names = ("value_estimate",) if discounted else ("value", "certified_ce_bound")
    cut = run(game, algorithm, chunk_size=7, **kwargs)  # 13 chunks of 7 and one of 6
    for name in (*names, "weighted_average_value", "weighted_average_best_response"):
        np.testing.assert_array_equal(getattr(cut, name), getattr(whole, name), err_msg=name)


# After stage 1 the stage-based loop evaluates the average once per stage end and fills the rows
# between from there: chunks that start inside stage 1 (1) or inside later stages (5), with the
# last iterate evaluated beside it, give the rows of every prefix.
@pytest.mark.parametrize("chunk_size", [1, 5])
def test_the_stage_loops_average_rows_hold_across_chunks(chunk_size):
    every = list(range(1, 62))
    result = run(GAME, "stage_cce", T=61, eta=0.4, weighted_average=True, last_iterate=PREFIXES, chunk_size=chunk_size)
    expected = _expected(GAME, "stage", result.policies, every)
    np.testing.assert_array_equal(result.weighted_average_prefixes, every)
    np.testing.assert_allclose(result.weighted_average_value, expected[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.weighted_average_best_response, expected[:, 1], rtol=0, atol=TOL)
    last = [nash_gap(GAME, [p[t - 1] for p in result.policies]).gap for t in PREFIXES]
    np.testing.assert_allclose(result.last_iterate_nash_gap, last, rtol=0, atol=TOL)


# The stage means are the marginals of the stage's joint sum: with three players, and actions of
# three sizes, each player's is the sum over the two others' axes.
def test_the_stage_means_of_three_players_are_their_own():
    game = random_game(3, 3, 2, (2, 3, 2), seed_or_rng=5)
    prefixes = [1, 2, 3, 4, 7, 8, 12, 30]
    result = run(game, "stage_cce", T=30, eta=0.4, weighted_average=prefixes)
    expected = _expected(game, "stage", result.policies, prefixes)
    np.testing.assert_allclose(result.weighted_average_value, expected[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.weighted_average_best_response, expected[:, 1], rtol=0, atol=TOL)


# The stage-based loop's run axis is the last iterate's code; its batch runs in the full mode. A
# batch's smooth loop beyond the quick runs (a threshold of 0 here) runs stretches that write
# their outputs in place, in groups of a static trip count and a rest. (The quick runs' batch:
# by default in the sweep test, whose seeds run as one, in the full mode here too.)
@pytest.mark.parametrize(
    ("algorithm", "stretches"),
    [
        case("hedge+smooth", False, default=False, id="hedge+smooth"),
        case("hedge+smooth", True, default=True, id="hedge+smooth-stretches"),
        case("stage_cce", False, default=False, id="stage_cce"),
    ],
)
def test_a_batch_gives_each_runs_weighted_average(algorithm, stretches, monkeypatch):
    from markovgames.dynamics import _engine, _loop

    other = random_game(2, 2, 2, (2, 3), seed_or_rng=8, zero_sum=True)
    runs = ((GAME, 0.4), (other, 0.3))
    # Each run's trajectory, from a quick single run (the sweep test's single runs: its compiled loop).
    singles = [run(game, algorithm, T=61, eta=eta) for game, eta in runs]
    if stretches:
        monkeypatch.setattr(_loop, "QUICK_RUN_WORK", 0)
        monkeypatch.setattr(_engine, "QUICK_RUN_WORK", 0)
    batch = run_batch([GAME, other], algorithm, T=61, etas=[0.4, 0.3], checkpoints=PREFIXES, weighted_average=True)
    for b, ((game, _), single) in enumerate(zip(runs, singles, strict=True)):
        expected = _expected(game, "stage" if algorithm == "stage_cce" else "smooth", single.policies, PREFIXES)
        np.testing.assert_allclose(batch.weighted_average_value[b], expected[:, 0], rtol=0, atol=TOL)
        np.testing.assert_allclose(batch.run(b).weighted_average_best_response, expected[:, 1], rtol=0, atol=TOL)


def test_the_rows_kept_are_taken_on_the_host_and_other_prefixes_compile_nothing(monkeypatch):
    # On the CPU a chunk's outputs reach the host as views: the checkpoints' metrics and regret
    # and the iterates evaluated at prefixes are taken there, and the groups of runs joined there,
    # with NumPy. On the device each shape of a selection was a small program of its own.
    import jax

    if jax.default_backend() != "cpu":
        pytest.skip("off the CPU the rows are taken on the device, in programs of their own")
    other = random_game(2, 2, 2, (2, 3), seed_or_rng=8, zero_sum=True)
    common = {"T": 61, "etas": [0.4, 0.3], "group_size": 1, "regret": True}

    def batch(checkpoints, last, average):
        return run_batch(
            [GAME, other], "hedge+smooth", checkpoints=checkpoints, last_iterate=last, weighted_average=average, **common
        )

    batch([10, 61], [5, 61], [7, 61])  # compiles the chunk (one per group shape)
    compiled = []

    def listen(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiled.append(kwargs.get("fun_name"))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        kept = batch([3, 20, 40, 61], [2, 9, 30, 61], [4, 50, 61])
        # (Every prefix but the first: at every one the loop evaluates in a program of its own.)
        every = batch(None, list(range(2, 62)), list(range(2, 62)))
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert compiled == []
    # The rows kept are the every-prefix run's rows, bit for bit, for both runs.
    rows = np.array([3, 20, 40, 61]) - 1
    for name in ("value", "certified_ce_bound", "certified_cce_bound", "external_regret", "swap_regret"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(every, name)[:, rows], err_msg=name)
    for prefix, (name, chosen) in itertools.product(
        ("value", "best_response"), (("last_iterate", [2, 9, 30, 61]), ("weighted_average", [4, 50, 61]))
    ):
        field = f"{name}_{prefix}"
        at = np.searchsorted(getattr(every, f"{name}_prefixes"), chosen)
        np.testing.assert_array_equal(getattr(kept, field), getattr(every, field)[:, at], err_msg=field)
    # Off the CPU the rows are taken on the device before the copy: the same numbers.
    from markovgames.dynamics import _loop

    monkeypatch.setattr(_loop, "_outputs_on_the_host", lambda: False)
    on_device = batch([3, 20, 40, 61], [2, 9, 30, 61], [4, 50, 61])
    for field in ("value", "external_regret", "last_iterate_value", "weighted_average_best_response"):
        np.testing.assert_array_equal(getattr(on_device, field), getattr(kept, field), err_msg=field)


@pytest.mark.parametrize("algorithm", ["hedge+smooth", "stage_cce"])
def test_a_resumed_run_carries_the_same_weighted_average(tmp_path, algorithm):
    kwargs = dict(T=61, eta=0.4, weighted_average=PREFIXES, record_trajectory=False)
    full = run(GAME, algorithm, **kwargs)
    state = dict(state_file=tmp_path / "state.npz", state_every=7)
    with pytest.raises(StopRun):
        run(GAME, algorithm, progress=stop_after(30), **state, **kwargs)
    resumed = run(GAME, algorithm, **state, **kwargs)
    np.testing.assert_array_equal(resumed.weighted_average_value, full.weighted_average_value)
    np.testing.assert_array_equal(resumed.weighted_average_best_response, full.weighted_average_best_response)
    # Another set of evaluated prefixes is another run: its saved state is refused.
    with pytest.raises(ValueError, match="different run"):
        run(GAME, algorithm, **state, **{**kwargs, "weighted_average": [1, 61]})


def test_bad_weighted_average_arguments_are_refused():
    with pytest.raises(ValueError, match=r"weighted_average: checkpoints must lie in 1..T = 10"):
        run(GAME, "hedge+smooth", T=10, weighted_average=[0, 5])
    game = random_game(2, 1, 1, (2, 2), seed_or_rng=1)
    trajectory = [np.full((3, 1, 1, 2), 0.5), np.full((3, 1, 1, 2), 0.5)]
    with pytest.raises(ValueError, match="weights: unknown averaging 'papers'"):
        average_iterate(trajectory, "papers")
    with pytest.raises(ValueError, match="weights: must sum to 1"):
        average_iterate(trajectory, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match=r"weights: expected 3 weights"):
        average_iterate(trajectory, [1.0])
    with pytest.raises(ValueError, match=r"give horizon="):
        average_iterate([p[:, 0] for p in trajectory], "paper")
    with pytest.raises(ValueError, match=r"trajectory\[1\]: expected an array \(T, \.\.\.\) with T = 3 rows"):
        average_iterate([trajectory[0], trajectory[1][:2]])
    with pytest.raises(ValueError, match="defined for two-player constant-sum games"):
        duality_gap(game, average_iterate(trajectory, "uniform"))


def test_the_duality_gap_is_the_textbook_one_on_a_matrix_game():
    """On a zero-sum normal-form game, max_a (A y)_a - min_b (x^T A)_b of the average strategies."""
    game = random_game(2, 1, 1, (3, 4), seed_or_rng=7, zero_sum=True)
    A = game.rewards[0, 0, 0]
    result = run(game, "hedge+smooth-linear", T=50, eta=0.3, weighted_average=[50])
    t = np.arange(1, 51)
    w = 2 * t / (50 * 51)
    x, y = (np.tensordot(w, p[:, 0, 0], axes=(0, 0)) for p in result.policies)
    textbook = float((A @ y).max() - (x @ A).min())
    assert result.weighted_average_duality_gap[0] == pytest.approx(textbook, abs=1e-12)
    assert duality_gap(game, [x[None, None], y[None, None]]) == pytest.approx(textbook, abs=1e-12)


# ----------------------------------------------------------------------------- the command line


def test_the_command_line_records_the_weighted_average(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    save_game(GAME, tmp_path / "z.json")
    base = ["run", "--game", "z.json", "--algorithm", "stage_cce", "-T", "61", "--eta", "0.4", "--checkpoints", "5,13,61"]
    assert main([*base, "--weighted-average", "--uniform-average", "--out", "r"]) == 0
    assert capsys.readouterr().out.count("duality") == 2  # a column each for the weighted and the uniform average
    stored = load_run_directory("r")
    assert stored.metrics["weighted_average"] == {"weights": "stage", "every_prefix": False}
    assert stored.weighted_average_value is None  # checkpoints only: curve.npz holds no curve of it
    expected = _expected(GAME, "stage", stored.check_trajectory(), [5, 13, 61])
    uniform = [nash_gap(GAME, [np.mean(p[:t], axis=0) for p in stored.policies]) for t in (5, 13, 61)]
    for k, record in enumerate(stored.metrics["checkpoints"]):
        np.testing.assert_allclose(record["weighted_average_value"], expected[k, 0], rtol=0, atol=TOL)
        gaps = expected[k, 1] - expected[k, 0]
        assert record["weighted_average_nash_gap"] == pytest.approx(gaps.max(), abs=TOL)
        assert record["weighted_average_duality_gap"] == pytest.approx(gaps.sum(), abs=TOL)
        assert record["uniform_average_duality_gap"] == pytest.approx(uniform[k].per_player.sum(), abs=TOL)
        assert not any(key.startswith("average_iterate") for key in record)
    # The figure's line at the checkpoints; the uniform average's older field names (a directory
    # written before the rename: --average-iterate is still accepted) read as the new ones.
    lines, _ = _lines(stored, "weighted_average_duality_gap", "auto")
    np.testing.assert_allclose(lines[0][2], (expected[:, 1] - expected[:, 0]).sum(axis=-1), rtol=0, atol=TOL)
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    for record in metrics["checkpoints"]:
        for key in [k for k in record if k.startswith("uniform_average")]:
            record[key.replace("uniform_average", "average_iterate")] = record.pop(key)
    (tmp_path / "r" / "metrics.json").write_text(json.dumps(metrics))
    lines, _ = _lines(load_run_directory("r"), "uniform_average_duality_gap", "auto")
    np.testing.assert_allclose(lines[0][2], [u.per_player.sum() for u in uniform], rtol=0, atol=TOL)
    # Every prefix: curve.npz holds it, and the figure draws it from there.
    assert main([*base, "--weighted-average", "all", "--average-iterate", "--quiet", "--out", "s"]) == 0
    every = load_run_directory("s")
    assert every.metrics["weighted_average"]["every_prefix"] is True
    assert "uniform_average_nash_gap" in every.metrics["checkpoints"][0]  # the former option's fields, new names
    expected = _expected(GAME, "stage", every.check_trajectory(), list(range(1, 62)))
    np.testing.assert_allclose(every.weighted_average_value, expected[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(every.weighted_average_best_response, expected[:, 1], rtol=0, atol=TOL)
    assert main(["plot", "s", "--metric", "weighted_average_duality_gap"]) == 0
    assert "metric-weighted_average_duality_gap.png" in capsys.readouterr().out
    assert main(["plot", "s", "--metric", "last_iterate_nash_gap"]) == 2
    assert "the run recorded no Nash gap of its last iterate (run it with --last-iterate)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- sweeps


def test_sweeps_record_the_weighted_average(tmp_path, capsys):
    config = parse_sweep_config(
        {
            "T": 61,
            "checkpoints": [5, 13, 40, 61],
            "games": [{"random": {"players": 2, "horizon": 2, "states": 2, "actions": [2, 3], "zero_sum": True}}],
            "seeds": 2,
            "algorithms": ["hedge+smooth", "stage_cce"],
            "etas": [0.4],
            "weighted_average": True,
        }
    )
    run_sweep(config, tmp_path / "sw", workers=1)
    df = load_results(tmp_path / "sw")
    assert df["weighted_average_duality_gap"].notna().all()
    for algorithm, kind in (("hedge+smooth", "smooth"), ("stage_cce", "stage")):
        rows = df[(df.algorithm == algorithm) & (df.seed_index == 1)].sort_values("checkpoint")
        game = random_game(2, 2, 2, (2, 3), seed_or_rng=int(rows.game_seed.iloc[0]), zero_sum=True)
        single = run(game, algorithm, T=61, eta=0.4)
        expected = _expected(game, kind, single.policies, [5, 13, 40, 61])
        for k, row in enumerate(rows.itertuples()):
            np.testing.assert_allclose(row.weighted_average_value, expected[k, 0], rtol=0, atol=TOL)
            assert row.weighted_average_duality_gap == pytest.approx((expected[k, 1] - expected[k, 0]).sum(), abs=TOL)
    summary = summarize_results(tmp_path / "sw", metric="weighted_average_duality_gap")
    final = df[df.checkpoint == 61].groupby("algorithm")["weighted_average_duality_gap"].median()
    for row in summary:
        assert row.metric == "weighted_average_duality_gap"
        assert row.final_gap == pytest.approx(final[row.algorithm], abs=1e-15)
    assert main(["summarize", str(tmp_path / "sw"), "--metric", "weighted_average_nash_gap"]) == 0
    assert "weighted_average_nash_gap at T" in capsys.readouterr().out
    files = plot_sweep(tmp_path / "sw", metric="weighted_average_duality_gap")
    assert files and all("metric-weighted_average_duality_gap" in f.name for f in files)
    with pytest.raises(ValueError, match="no run of these results recorded uniform_average_nash_gap"):
        summarize_results(tmp_path / "sw", metric="uniform_average_nash_gap")


def test_a_sweep_of_v_learning_refuses_the_weighted_average():
    with pytest.raises(
        ValueError, match="weighted_average: algorithms\\[0\\]: 'cce-v' under bandit:1 records no weighted average"
    ):
        parse_sweep_config(
            {"T": 10, "games": ["paper"], "algorithms": ["cce-v"], "weighted_average": True},
        )


def test_a_general_sum_game_has_no_duality_gap_field():
    result = run(paper_game(), "smooth_cce", T=20, eta=0.2, weighted_average=[20])
    assert result.weighted_average_nash_gap[0] >= 0.0
    with pytest.raises(ValueError, match="two-player constant-sum"):
        duality_gap(paper_game(), average_iterate(result.policies, "paper"))
