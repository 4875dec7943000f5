"""Sweeps of discounted games: the results table against the library's discounted runs, the
weighted average's gaps against NumPy from the trajectory, and summarize, plot, resume and the
table's checks on them (docs/howto-sweep.md, "Discounted games")."""

from __future__ import annotations

import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from discounted_reference import alpha_weights
from markovgames.cli import main
from markovgames.dynamics import run_batch
from markovgames.evaluation import discounted_nash_gap
from markovgames.experiments import ResultsError, load_results, summarize_results
from markovgames.experiments.sweeps._plan import derive_game_seeds
from markovgames.experiments.sweeps._sweep import RESULTS_FILE, run_sweep
from markovgames.games import get_discounted_builtin, random_discounted_game

T = 20
CHECKPOINTS = [5, 20]
SEEDS = 2
ETA = 0.3
# A random zero-sum discounted game per seed (the duality gap) and a built-in one; the discounted
# smooth update with Hedge and with OGDA (the papers' compositions: Zhang et al., Wei et al.).
CONFIG = textwrap.dedent(
    f"""
    T = {T}
    checkpoints = {CHECKPOINTS}
    seeds = {SEEDS}
    etas = [{ETA}]
    last_iterate = true
    weighted_average = true
    games = [
        {{random = {{players = 2, discount = 0.8, states = 3, actions = 2, zero_sum = true}}, label = "zs"}},
        "matching_pennies_discounted",
    ]
    algorithms = ["hedge+discounted-smooth", "ogda+discounted-smooth"]
    """
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("discounted")
    (root / "sweep.toml").write_text(CONFIG)
    report = run_sweep(root / "sweep.toml", root / "out", workers=1)
    assert not report.failures and report.total_runs == 2 * (SEEDS + 1)
    return root


def _games():
    seeds = derive_game_seeds(0, SEEDS)
    zs = [random_discounted_game(2, 3, 2, 0.8, seed_or_rng=s, zero_sum=True) for s in seeds]
    return {"zs": zs, "matching_pennies_discounted": [get_discounted_builtin("matching_pennies_discounted")]}


def test_the_table_is_the_librarys_discounted_runs(sweep):
    """Each run's rows are ``run_batch`` on the discounted game called directly (value estimates,
    the last iterate's and the weighted average's values, Nash and duality gaps), to 1e-12; the
    columns a discounted run has no form of are null, its discount recorded."""
    df = load_results(sweep / "out")
    assert len(df) == 2 * (SEEDS + 1) * len(CHECKPOINTS)
    assert df["H"].isna().all() and df[["certified_ce_gap", "certified_cce_gap", "gap", "gap_times_T"]].isna().all().all()
    compared = 0
    for label, games in _games().items():
        for algorithm in ("hedge+discounted-smooth", "ogda+discounted-smooth"):
            direct = run_batch(
                games, algorithm, T=T, etas=[ETA] * len(games), checkpoints=CHECKPOINTS, last_iterate=True, weighted_average=True
            )
            rows = df[(df["game"] == label) & (df["algorithm"] == algorithm)].sort_values(["seed_index", "checkpoint"])
            assert len(rows) == len(games) * len(CHECKPOINTS) and set(rows["discount"]) == {games[0].discount}
            for b in range(len(games)):
                mine = rows.iloc[b * len(CHECKPOINTS) : (b + 1) * len(CHECKPOINTS)]
                for j, (_, row) in enumerate(mine.iterrows()):
                    assert row["checkpoint"] == CHECKPOINTS[j]
                    np.testing.assert_allclose(row["value"], direct.value_estimate[b, j], rtol=0, atol=1e-12)
                    np.testing.assert_allclose(row["last_iterate_value"], direct.last_iterate_value[b, j], rtol=0, atol=1e-12)
                    assert row["last_iterate_nash_gap"] == pytest.approx(direct.last_iterate_nash_gap[b, j], abs=1e-12)
                    assert row["weighted_average_nash_gap"] == pytest.approx(direct.weighted_average_nash_gap[b, j], abs=1e-12)
                    if direct.weighted_average_duality_gap is not None:  # (both games are zero-sum)
                        assert row["weighted_average_duality_gap"] == pytest.approx(
                            direct.weighted_average_duality_gap[b, j], abs=1e-12
                        )
                    compared += 1
    assert compared == len(df)


def test_the_weighted_average_is_numpys_from_the_trajectory(sweep):
    """The sweep's weighted average gaps are those of ``sum_j alpha_t^j pi^j`` (the smooth update's
    weights, ``k = 1/(1 - gamma)``) built in NumPy from the run's stored iterates, evaluated by the
    discounted evaluator: to 1e-10."""
    df = load_results(sweep / "out")
    game = _games()["zs"][0]
    run = run_batch([game], "ogda+discounted-smooth", T=T, etas=[ETA], record_trajectory=True).run(0)
    for t in CHECKPOINTS:
        weights = alpha_weights(1.0 / (1.0 - game.discount), t)
        average = [sum(weights[j] * p[j] for j in range(t)) for p in run.policies]
        want = discounted_nash_gap(game, average)
        row = df[(df["game"] == "zs") & (df["algorithm"] == "ogda+discounted-smooth") & (df["seed_index"] == 0)]
        row = row[row["checkpoint"] == t].iloc[0]
        assert row["weighted_average_nash_gap"] == pytest.approx(want.gap, abs=1e-10)
        assert row["weighted_average_duality_gap"] == pytest.approx(want.duality_gap, abs=1e-10)
        np.testing.assert_allclose(row["weighted_average_value"], want.value, rtol=0, atol=1e-10)


def test_summarize_plot_and_resume(sweep, tmp_path, capsys):
    """summarize and plot take the discounted measures (the certified gap, the default, is refused
    naming them); a second sweep into the directory computes nothing."""
    rows = summarize_results(sweep / "out", metric="weighted_average_duality_gap")
    # (Both games are zero-sum: matching pennies is too.)
    assert [(r.game, r.runs) for r in rows] == [("zs", SEEDS)] * 2 + [("matching_pennies_discounted", 1)] * 2
    assert all(r.final_gap >= 0 for r in rows) and any(r.final_gap > 0 for r in rows)
    assert main(["summarize", str(sweep / "out")]) == 2
    assert "has a certified gap" in capsys.readouterr().err
    figures = tmp_path / "figures"
    assert main(["plot", str(sweep / "out"), "--metric", "weighted_average_nash_gap", "--out", str(figures)]) == 0
    assert any(f.suffix == ".png" and f.stat().st_size > 1000 for f in figures.iterdir())
    again = run_sweep(sweep / "sweep.toml", sweep / "out", workers=1)
    assert again.computed_runs == 0 and again.total_runs == 2 * (SEEDS + 1)


@pytest.mark.parametrize("column", ["gap", "H"])
def test_a_discounted_row_with_a_finite_horizon_column_is_refused(sweep, tmp_path, column):
    """The table's kinds hold: a discounted game's row with a certified gap (or a horizon) is refused,
    and so is a finite-horizon row without one (the discount erased)."""
    table = pq.read_table(sweep / "out" / RESULTS_FILE)
    index = table.schema.get_field_index(column)
    filled = pa.array([1 if column == "H" else 0.1] * table.num_rows, table.schema.field(column).type)
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(table.set_column(index, table.schema.field(column), filled), bad / RESULTS_FILE)
    with pytest.raises(ResultsError, match=f"column '{column}': row 0: a discounted game's row holds one"):
        load_results(bad)
    k = table.schema.get_field_index("discount")
    erased = table.set_column(k, table.schema.field("discount"), pa.nulls(table.num_rows, pa.float64()))
    pq.write_table(erased, bad / RESULTS_FILE)
    with pytest.raises(ResultsError, match="a finite-horizon game's row has none"):
        load_results(bad)
