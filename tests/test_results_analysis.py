"""Studies across games: load_results as a DataFrame, the provenance in results.parquet, game hashes,
one slope for summarize and plot, gap x T' against grid parameters, exact gaps and zero-sum games
in sweeps.

Each number is checked against an independent route: pandas group-bys and NumPy fits written
here, single runs and exact evaluations of the library, SHA-256 computed here from the documented
recipe.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import markovgames
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.evaluation import exact_cce_gap, exact_ce_gap
from markovgames.experiments import (
    game_content_hash,
    gap_times_T_across,
    load_results,
    plot_sweep,
    results_provenance,
    run_slope,
    slope_distributions,
    summarize_results,
    versions,
)
from markovgames.experiments.sweeps._summary import ResultsError, result_rows
from markovgames.experiments.sweeps._sweep import MANIFEST_FILE, RESULTS_FILE, run_sweep
from markovgames.games import paper_game, random_game, save_game
from markovgames.policies import IndexChainPolicy

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

T = 200
# Two zero-sum families that differ in the horizon (2 seeds each), and a fixed game whose exact CE
# gap is too large to compute (N=2, H=3, S=5, A=3: its branch and bound is refused).
CONFIG = textwrap.dedent(
    f"""
    name = "study"
    T = {T}
    seeds = 2
    base_seed = 3
    exact = true
    etas = [0.1, 0.2]
    games = [
      {{random = {{players = 2, horizon = 1, states = 2, actions = 2, zero_sum = true}}, label = "zs-H1"}},
      {{random = {{players = 2, horizon = 2, states = 2, actions = 2, zero_sum = true}}, label = "zs-H2"}},
      {{random = {{players = 2, horizon = 3, states = 5, actions = 3, seed = 1}}, label = "big"}},
    ]
    algorithms = ["smooth_ce", "smooth_cce"]
    """
)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    config = root / "study.toml"
    config.write_text(CONFIG)
    report = run_sweep(config, root / "out", workers=1)
    assert not report.failures
    return root


# ----------------------------------------------------------------------------------------------
# load_results and provenance
# ----------------------------------------------------------------------------------------------
def test_load_results_is_a_dataframe_with_config_columns_and_provenance(study):
    df = markovgames.load_results(study / "out")
    assert markovgames.load_results is load_results
    assert isinstance(df, pd.DataFrame)
    rows = result_rows(study / "out")
    assert len(df) == len(rows) == df["run_id"].nunique() * df["checkpoint"].nunique()
    assert df.groupby("run_id").size().nunique() == 1  # every run has every checkpoint
    for column in (
        "game",
        "game_kind",
        "game_seed",
        "game_sha256",
        "N",
        "H",
        "S",
        "A",
        "algorithm",
        "optimistic",
        "eta",
        "eta_value",
        "T",
        "dtype",
        "checkpoint",
        "gap",
        "gap_times_T",
        "exact_ce_gap",
        "exact_cce_gap",
    ):
        assert column in df.columns, column
    assert set(df["H"]) == {1, 2, 3} and set(df["dtype"]) == {"float64"} and set(df["T"]) == {T}
    # 2 algorithms x 2 etas x (2 + 2 seeds + 1 fixed game)
    assert df["run_id"].nunique() == 20
    assert {10, 100} <= set(df["checkpoint"])  # the log grid's decades
    manifest = json.loads((study / "out" / MANIFEST_FILE).read_text())
    assert df.attrs["config"] == manifest["config"] and df.attrs["config"]["exact"] is True
    assert df.attrs["raw_config"] == manifest["raw_config"]
    assert df.attrs["games"] == manifest["games"]
    assert df.attrs["checkpoints"] == manifest["checkpoints"]
    assert df.attrs["versions"]["markovgames"] == markovgames.__version__
    assert set(df.attrs["versions"]) == set(versions())
    assert df.attrs["format"] == "markovgames-results/1"
    # Every run's game hash is one of the provenance's games.
    assert set(df["game_sha256"]) == {g["sha256"] for g in df.attrs["games"]}


def test_a_copied_results_file_describes_itself(study, tmp_path):
    copy = tmp_path / "elsewhere.parquet"
    shutil.copy(study / "out" / RESULTS_FILE, copy)
    meta = pq.read_schema(copy).metadata[b"markovgames"]
    provenance = json.loads(meta)
    assert provenance["config"]["T"] == T and provenance["versions"]["jax"]
    assert results_provenance(copy) == provenance
    assert load_results(copy).attrs == provenance


def test_provenance_game_hashes_are_the_games_of_the_grid(study):
    df = load_results(study / "out")
    for g in df.attrs["games"]:
        if g["kind"] == "random":
            shape = g["shape"]
            game = random_game(
                shape["N"], shape["H"], shape["S"], tuple(shape["A"]), seed_or_rng=g["seed"], zero_sum=g["label"].startswith("zs")
            )
            assert game_content_hash(game) == g["sha256"]


def test_load_results_errors_name_the_file(tmp_path):
    with pytest.raises(ResultsError, match=r"is an empty directory, not a sweep directory \(with results.parquet\)"):
        load_results(tmp_path)
    (tmp_path / "sweep.toml").write_text("T = 10\n")  # a configuration given for its results
    with pytest.raises(ResultsError, match=r"sweep.toml: is a file \(a sweep configuration\?\), not a sweep directory"):
        load_results(tmp_path / "sweep.toml")
    with pytest.raises(ResultsError, match=r"swep.toml: no such file or directory; expected a sweep directory"):
        load_results(tmp_path / "swep.toml")
    (tmp_path / RESULTS_FILE).write_bytes(b"not parquet")
    with pytest.raises(ResultsError, match="cannot read results"):
        load_results(tmp_path)


# ----------------------------------------------------------------------------------------------
# games hash
# ----------------------------------------------------------------------------------------------
def documented_hash(game) -> str:
    """The recipe of docs/howto-sweep.md, written out here."""
    n, horizon, num_s, acts = game.num_players, game.horizon, game.num_states, list(game.num_actions)
    h = hashlib.sha256()
    h.update(
        json.dumps({"shape": [n, horizon, num_s, acts], "s1": game.initial_state}, sort_keys=True, separators=(",", ":")).encode()
    )
    h.update(np.ascontiguousarray(game.rewards, dtype="<f8").tobytes())
    if game.is_sparse:
        sparse = game.sparse_transitions
        h.update(
            b"sparse"
            + np.ascontiguousarray(sparse.successors, dtype="<i8").tobytes()
            + np.ascontiguousarray(sparse.probabilities + 0.0, dtype="<f8").tobytes()
        )
    else:
        h.update(np.ascontiguousarray(game.transitions + 0.0, dtype="<f8").tobytes())
    return h.hexdigest()


def test_games_hash_prints_the_manifest_hash(study, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["games", "hash", "paper"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [documented_hash(paper_game()), "paper"]
    game = random_game(2, 2, 3, (2, 3), seed_or_rng=4, zero_sum=True)
    save_game(game, tmp_path / "g.json")
    sparse = random_game(2, 2, 6, 2, seed_or_rng=4, num_successors=2)
    save_game(sparse, tmp_path / "s.npz")
    for name, g in (("g.json", game), ("s.npz", sparse)):
        assert main(["games", "hash", name]) == 0
        assert capsys.readouterr().out.split() == [documented_hash(g), name]
    # The manifest of a sweep records the same hash for its games.
    manifest = json.loads((study / "out" / MANIFEST_FILE).read_text())
    big = next(g for g in manifest["games"] if g["label"] == "big")
    assert big["sha256"] == documented_hash(random_game(2, 3, 5, 3, seed_or_rng=1))


# ----------------------------------------------------------------------------------------------
# One slope for summarize and plot
# ----------------------------------------------------------------------------------------------
def independent_slopes(df: pd.DataFrame, window) -> dict[tuple, float]:
    """Median over runs of numpy.polyfit(log T', log gap) on the window's checkpoints, per group."""
    out = {}
    inside = df[(df["checkpoint"] >= window[0]) & (df["checkpoint"] <= window[1])]
    for key, group in inside.groupby(["game", "algorithm", "eta"]):
        slopes = [np.polyfit(np.log(r["checkpoint"]), np.log(r["gap"]), 1)[0] for _, r in group.groupby("run_id")]
        out[key] = float(np.median(slopes))
    return out


def _saved_legends(monkeypatch) -> list[str]:
    """The legend texts of every figure the sweep's plots save from now on (filled as they are
    saved). The figures are not rendered: each format gets a placeholder file (rendering PNG and
    PDF takes seconds; test_plot_cli_draws_the_study_figures renders the study's figures)."""
    import matplotlib.pyplot as plt

    from markovgames.experiments.figures import _curves as _plots
    from markovgames.experiments.figures import _sweep as _sweep_plot

    legends: list[str] = []

    def placeholder(fig, stem, dpi=150):
        paths = [Path(stem).with_suffix(suffix) for suffix in (".png", ".pdf")]
        for path in paths:
            path.write_text("placeholder\n")
        plt.close(fig)
        return paths

    def capture(fig, stem, dpi=150):
        for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
            legends.extend(t.get_text() for t in legend.get_texts())
        return placeholder(fig, stem, dpi)

    monkeypatch.setattr(_sweep_plot, "save_figure", capture)
    monkeypatch.setattr(_plots, "save_figure", placeholder)
    return legends


@pytest.mark.parametrize("window", [(10, 200), (20, 150)])
def test_summarize_and_plot_show_one_slope(study, tmp_path, monkeypatch, window):
    df = load_results(study / "out")
    expected = independent_slopes(df, window)
    summary = summarize_results(study / "out", window=window)
    assert {(s.game, s.algorithm, s.eta): pytest.approx(s.slope, abs=1e-12) for s in summary} == expected
    legends = _saved_legends(monkeypatch)
    plot_sweep(study / "out", tmp_path / "figs", window=window)
    for s in summary:
        label = f"{s.algorithm}, eta={s.eta} [{s.runs} run{'s' if s.runs != 1 else ''}]: slope {s.slope:+.2f}"
        assert label in legends, (label, legends)


def test_summarize_and_plot_share_the_default_window(study, tmp_path, monkeypatch):
    """Without a window (the last two decades), the plot's legends give the summary's slopes."""
    legends = _saved_legends(monkeypatch)
    default = summarize_results(study / "out")
    assert default
    plot_sweep(study / "out", tmp_path / "figs")
    for s in default:
        assert f"slope {s.slope:+.2f}" in " ".join(legends)


def test_run_slope_of_a_power_law():
    cp = np.array([1, 10, 100, 1000, 10000])
    assert run_slope(cp, 3.0 / cp, 10000) == pytest.approx(-1.0, abs=1e-12)
    assert run_slope(cp, cp**-0.5, 10000, (1, 100)) == pytest.approx(-0.5, abs=1e-12)
    assert np.isnan(run_slope(cp, 1.0 / cp, 10000, (2, 9)))  # one point cannot fit a line
    with pytest.raises(ValueError, match="window"):
        run_slope(cp, 1.0 / cp, 10000, (100, 10))


def test_slope_distribution_pools_runs_over_games(study):
    rows = result_rows(study / "out")
    window = (10, 200)
    dist = slope_distributions(rows, window)
    df = load_results(study / "out")
    inside = df[(df["checkpoint"] >= 10) & (df["checkpoint"] <= 200)]
    for (algorithm, eta), group in inside.groupby(["algorithm", "eta"]):
        slopes = sorted(np.polyfit(np.log(r["checkpoint"]), np.log(r["gap"]), 1)[0] for _, r in group.groupby("run_id"))
        np.testing.assert_allclose(sorted(dist[f"{algorithm}, eta={eta}"]), slopes, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# gap x T' against a grid parameter
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("x, column", [("horizon", "H"), ("states", "S"), ("eta", "eta_value")])
def test_gap_times_T_across_matches_a_pandas_group_by(study, x, column):
    rows = result_rows(study / "out")
    series = gap_times_T_across(rows, x, [10, 100])
    df = load_results(study / "out")
    df = df[df["checkpoint"].isin([10, 100])]
    keys = ["algorithm", "checkpoint", column] + ([] if x == "eta" else ["eta"])
    medians = df.groupby(keys)["gap_times_T"].median()
    seen = 0
    for s in series:
        for k, value in enumerate(s.x):
            key = (s.algorithm, s.decade, value) + (() if x == "eta" else (s.eta,))
            assert s.median[k] == pytest.approx(medians.loc[key], rel=1e-12)
            seen += 1
    assert seen == len(medians)


def test_gap_times_T_across_refuses_what_it_cannot_draw(study):
    rows = result_rows(study / "out")
    with pytest.raises(ResultsError, match=r"^decades: T' = 50 is not a checkpoint of every run \(decades they share: 10, 100\)"):
        gap_times_T_across(rows, "horizon", [50])
    with pytest.raises(ResultsError, match="^x: expected one of horizon, states, players, actions, eta"):
        gap_times_T_across(rows, "colour", [10])
    defaults = gap_times_T_across(rows, "players")
    assert sorted({s.decade for s in defaults}) == [10, 100]


def test_plot_cli_draws_the_study_figures(study, tmp_path, capsys):
    out = tmp_path / "figs"
    assert (
        main(["plot", str(study / "out"), "--out", str(out), "--x", "horizon", "--decades", "10,1e2", "--window", "1e1,2e2"]) == 0
    )
    written = capsys.readouterr().out
    # Each file's name says its options (the decades and the window given here).
    for name in (
        "gap_times_T_vs_horizon_decades-1e1-1e2.png",
        "slopes_1e1-2e2.png",
        "gaps_zs-H1_window-1e1-2e2.png",
        "gaps_big_window-1e1-2e2.pdf",
    ):
        assert (out / name).stat().st_size > 1000 and name in written
    assert main(["summarize", str(study / "out"), "--window", "10,200"]) == 0
    assert "log-log slope" in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------
# Exact gaps and zero-sum games in sweeps
# ----------------------------------------------------------------------------------------------
def test_sweep_exact_gaps_equal_the_library_and_large_games_are_skipped_with_the_reason(study):
    df = load_results(study / "out")
    checkpoints = sorted(df["checkpoint"].unique())
    pick = df[(df["game"] == "zs-H2") & (df["algorithm"] == "smooth_ce") & (df["eta"] == "0.2") & (df["seed_index"] == 1)]
    pick = pick.sort_values("checkpoint")
    game = random_game(2, 2, 2, 2, seed_or_rng=int(pick["game_seed"].iloc[0]), zero_sum=True)
    result = run(game, "smooth_ce", T=T, eta=0.2)
    for T_prime in (1, 10, 100, T):
        row = pick[pick["checkpoint"] == T_prime].iloc[0]
        policy = IndexChainPolicy.from_run(result, T_prime)
        assert row["exact_ce_gap"] == pytest.approx(exact_ce_gap(game, policy).gap, abs=1e-12)
        assert row["exact_cce_gap"] == pytest.approx(exact_cce_gap(game, policy).gap, abs=1e-12)
        assert pd.isna(row["exact_skipped"])
        assert row["exact_ce_gap"] <= row["certified_ce_gap"] + 1e-12
    assert pick["exact_ce_gap"].notna().all() and len(pick) == len(checkpoints)
    # The larger game (H = 3, S = 5, A = 3: about 4e8 CE search nodes at worst) is computed: its
    # search's bounds prune, as the work estimate counts (docs/gaps.md), and its gaps are below the
    # certified ones.
    big = df[df["game"] == "big"]
    assert big["exact_ce_gap"].notna().all() and big["exact_skipped"].isna().all()
    assert (big["exact_ce_gap"] <= big["certified_ce_gap"] + 1e-12).all()
    assert (big["exact_cce_gap"] <= big["certified_cce_gap"] + 1e-12).all()


def test_an_exact_gap_over_the_limit_is_skipped_with_the_reason():
    """What a sweep's record and row hold when an exact gap is over ``max_work``: ``None`` and the
    refusal, one concept at a time, and the row's ``exact_skipped`` naming the field. (A zero-sum
    game of zs-H2's shape, ``T`` and ``eta``: the compiled loop of the exact-gap test's single run.)"""
    from markovgames.evaluation import estimate_work
    from markovgames.experiments.rundirs._exact import exact_policy_gaps
    from markovgames.experiments.sweeps._results import _skipped

    game = random_game(2, 2, 2, 2, seed_or_rng=3, zero_sum=True)
    result = run(game, "smooth_ce", T=T, eta=0.2)
    policy = IndexChainPolicy.from_run(result, 20)
    est = estimate_work(game, policy)
    limit = (est.ce_work + est.cce_work) / 2  # between the two: one refused, the other computed
    fields = exact_policy_gaps(game, policy, max_work=limit)
    refused, kept = ("exact_ce_gap", "exact_cce_gap") if est.ce_work > est.cce_work else ("exact_cce_gap", "exact_ce_gap")
    assert fields[refused] is None and fields[refused + "_per_player"] is None
    assert fields[kept] is not None and kept + "_skipped" not in fields
    concept = "CE" if refused == "exact_ce_gap" else "CCE"
    assert _skipped(fields).startswith(f"{refused}: exact {concept} gap refused: estimated work")


def test_zero_sum_sweep_games_are_constant_sum(study):
    df = load_results(study / "out")
    zs = df[df["game"].str.startswith("zs")]
    values = np.stack(zs["value"].to_numpy())
    np.testing.assert_allclose(values.sum(axis=1), zs["H"].to_numpy(), atol=1e-9)
    labels = {g["label"]: g for g in df.attrs["games"]}
    assert {"zs-H1", "zs-H2", "big"} == set(labels)
