"""The last iterate: the value and Nash gap of the product policy pi^{T'} itself, computed inside the
compiled loop, against an independent backward induction (``markovgames.evaluation.nash_gap``,
NumPy), on the command line, in sweeps, and the zero-sum theory."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import beyond_default_in_full, interrupting_progress, make_random_game
from markovgames.cli import main
from markovgames.dynamics import run, run_batch
from markovgames.evaluation import nash_gap
from markovgames.experiments import load_results, parse_sweep_config, run_sweep, staging_directory
from markovgames.games import paper_game, random_game
from markovgames.solvers import solve_equilibrium

TOL = 1e-12


def _independent(game, policies, prefixes):
    """The value and best-response values of pi^{T'} by the NumPy evaluator, per prefix: (L, 2, N)."""
    out = []
    for T in prefixes:
        res = nash_gap(game, [np.asarray(p[T - 1]) for p in policies])
        out.append([res.value, res.best_response_value])
    return np.asarray(out)


# Each case compiles two loops at the long runs' level: both value updates by default (the last
# iterate is evaluated from the strategies played, whatever the learner), the other learners in
# the full mode.
@pytest.mark.parametrize(
    "algorithm",
    beyond_default_in_full(
        ["smooth_ce", "stage_cce", "smooth_cce", "bm-rm-plus+stage", "rm-plus+smooth"],
        {"smooth_ce", "stage_cce"},
    ),
)
def test_the_loops_last_iterate_equals_an_independent_backward_induction(algorithm, level_two):
    # Three players at two steps (the loops compile at the optimisation level of long runs, whose
    # compile time grows with H; H > 8 is test_batches_long_horizons_and_sparse_games').
    game = make_random_game(6, 3, 2, 2, (2, 3, 2))
    prefixes = [1, 2, 3, 7, 40, 41, 60]
    result = run(game, algorithm, T=60, eta=0.4, last_iterate=prefixes)
    np.testing.assert_array_equal(result.last_iterate_prefixes, prefixes)
    expected = _independent(game, result.policies, prefixes)
    np.testing.assert_allclose(result.last_iterate_value, expected[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.last_iterate_best_response, expected[:, 1], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.last_iterate_nash_gap, np.max(expected[:, 1] - expected[:, 0], axis=-1), rtol=0, atol=TOL)
    # The per-prefix metrics do not change when the last iterate is evaluated too.
    plain = run(game, algorithm, T=60, eta=0.4)
    np.testing.assert_array_equal(result.value, plain.value)
    assert plain.last_iterate_value is None and plain.last_iterate_nash_gap is None


# The last iterate's scanned steps (H > 8) and sparse kernels are the same code for both value
# updates; stage_cce's case (whose H = 10 loop takes about 10 s to compile) runs in the full mode.
@pytest.mark.parametrize("algorithm", beyond_default_in_full(["smooth_cce", "stage_cce"], {"smooth_cce"}))
def test_batches_long_horizons_and_sparse_games(algorithm):
    # A batch (run axis last), a horizon beyond the unrolled steps (H = 10: the scanned form),
    # and a sparse kernel: each against the single run / the independent evaluator.
    game = random_game(2, 10, 3, (2, 2), seed_or_rng=3)
    batch = run_batch([game, game], algorithm, T=60, etas=[0.3, 0.5], last_iterate=True, checkpoints=[5, 60])
    for b, eta in enumerate((0.3, 0.5)):
        single = run(game, algorithm, T=60, eta=eta, last_iterate=[5, 60])
        np.testing.assert_allclose(batch.last_iterate_value[b], single.last_iterate_value, rtol=0, atol=TOL)
        expected = _independent(game, single.policies, [5, 60])
        np.testing.assert_allclose(single.last_iterate_best_response, expected[:, 1], rtol=0, atol=TOL)
    dense = run(game, algorithm, T=60, eta=0.3, last_iterate=[5, 60])
    sparse = run(game.to_sparse(), algorithm, T=60, eta=0.3, last_iterate=[5, 60])
    np.testing.assert_allclose(sparse.last_iterate_best_response, dense.last_iterate_best_response, rtol=0, atol=TOL)
    np.testing.assert_allclose(sparse.last_iterate_value, dense.last_iterate_value, rtol=0, atol=TOL)


# Both value updates by default (Hedge's); Blum-Mansour's smooth_ce in the full mode.
@pytest.mark.parametrize(
    "algorithm", beyond_default_in_full(["smooth_cce", "stage_cce", "smooth_ce"], {"smooth_cce", "stage_cce"})
)
def test_zero_sum_last_iterate_value_lies_within_its_nash_gaps_of_the_game_value(algorithm):
    """Theory: against the last iterate pi = (x, y), player 0's best response is worth at least the
    game's value v* and player 1's at least H - v*; with the Nash gaps g_i, v* - g_0 <= V_0(pi)
    <= v* + g_1 at every prefix."""
    game = random_game(2, 3, 3, (2, 3), seed_or_rng=5, zero_sum=True)
    v_star = solve_equilibrium(game, "cce", "welfare").value[0]
    result = run(game, algorithm, T=3000, eta=0.2, record_trajectory=False, last_iterate=True)
    value = result.last_iterate_value
    gaps = result.last_iterate_best_response - value
    np.testing.assert_allclose(value.sum(axis=1), game.horizon, atol=1e-9)
    assert np.all(gaps >= -1e-12)
    assert np.all(value[:, 0] >= v_star - gaps[:, 0] - 1e-9)
    assert np.all(value[:, 0] <= v_star + gaps[:, 1] + 1e-9)
    # Not vacuous: both bounds are tight somewhere (the interval is not always wide).
    assert np.min(gaps.max(axis=1)) < 0.5 * gaps[0].max()


def test_the_command_line_writes_the_last_iterate_and_resumes_it(tmp_path, monkeypatch):

    from markovgames.cli import _run as cli_run

    out = tmp_path / "run"
    args = [
        "run",
        "--game",
        "paper",
        "--algorithm",
        "stage_cce",
        "-T",
        "3000",
        "--checkpoints",
        "1,10,1000,3000",
        "--last-iterate",
        "--out",
        str(out),
        "--quiet",
        "--checkpoint-every",
        "500",
    ]

    with monkeypatch.context() as patch:
        patch.setattr(cli_run, "iteration_progress", interrupting_progress(1500))
        assert main(args) == 130
    assert (staging_directory(out) / "state.npz").exists()
    assert main(args + ["--resume"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    # In the command's chunks of 500 iterations: its compiled loop (the numbers do not depend on the chunks).
    reference = run(paper_game(), "stage_cce", T=3000, eta=0.2, last_iterate=[1, 10, 1000, 3000], chunk_size=500)
    for k, record in enumerate(metrics["checkpoints"]):
        np.testing.assert_allclose(record["last_iterate_value"], reference.last_iterate_value[k], rtol=0, atol=TOL)
        assert record["last_iterate_nash_gap"] == pytest.approx(reference.last_iterate_nash_gap[k], abs=TOL)
        assert max(record["last_iterate_nash_gap_per_player"]) == record["last_iterate_nash_gap"]
    assert metrics["config"]["last_iterate"] is True


def test_sweeps_record_the_last_iterate_in_the_results_table(tmp_path):
    config = parse_sweep_config(
        {
            "T": 300,
            "games": [{"random": {"players": 2, "horizon": 2, "states": 2, "actions": 2, "zero_sum": True}}],
            "seeds": 2,
            "algorithms": ["smooth_cce", "stage_cce"],
            "etas": [0.2],
            "last_iterate": True,
        }
    )
    run_sweep(config, tmp_path / "sw", workers=1)
    df = load_results(tmp_path / "sw")
    assert df["last_iterate_nash_gap"].notna().all() and (df["last_iterate_nash_gap"] >= -1e-12).all()
    rows = df[(df.algorithm == "stage_cce") & (df.checkpoint == 300)]
    assert len(rows) == 2
    # The library's batch of the two games (the sweep's compiled loop).
    games = [random_game(2, 2, 2, 2, seed_or_rng=int(seed), zero_sum=True) for seed in rows.game_seed]
    batch = run_batch(games, "stage_cce", T=300, etas=[0.2, 0.2], last_iterate=[300])
    for k, row in enumerate(rows.itertuples()):
        assert row.last_iterate_nash_gap == pytest.approx(batch.run(k).last_iterate_nash_gap[0], abs=TOL)
        np.testing.assert_allclose(row.last_iterate_value, batch.run(k).last_iterate_value[0], rtol=0, atol=TOL)


def test_bad_last_iterate_prefixes_are_refused():
    with pytest.raises(ValueError, match=r"last_iterate: checkpoints must lie in 1..T = 10"):
        run(paper_game(), "smooth_ce", T=10, last_iterate=[0, 5])
