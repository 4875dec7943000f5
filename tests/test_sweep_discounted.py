"""Sweeps of discounted games: the results table against ``run_batch`` called directly with the same
games and seeds, the weighted average iterate's columns against the average rebuilt in NumPy from
the trajectory and evaluated by an independent NumPy evaluator, resuming, summarize and plot on a
discounted sweep, the run files read back checked, and the reading side's checks of the new
columns (docs/discounted.md, "In a sweep").

One small shape (two players, three states, two actions each, gamma = 0.9: the zero-sum game's of
tests/test_discounted_dynamics.py), T = 20; the refusals are cases of the bad-input catalogue
(tests/test_bad_input_sweeps.py).
"""

from __future__ import annotations

import json
import pickle
import shutil
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from discounted_reference import alpha_weights
from markovgames.cli import main
from markovgames.dynamics import run_batch
from markovgames.experiments import load_results, parse_sweep_config, plan_sweep, summarize_results
from markovgames.experiments.sweeps._files import SweepFileError, read_run_file
from markovgames.experiments.sweeps._plan import derive_game_seeds
from markovgames.experiments.sweeps._sweep import RESULTS_FILE, RUNS_DIR, run_sweep
from markovgames.experiments.sweeps._table import ResultsError
from markovgames.games import DiscountedMarkovGame, random_discounted_game, save_game

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

T = 20
CHECKPOINTS = [5, 12, 20]
SEEDS = 2
ETAS = [0.3, 0.5]
GAMMA = 0.9
ALGORITHM = "hedge+discounted-smooth"
#: A general-sum discounted game of the same shape, given as a file (no duality gap).
FILE_SEED = 11
CONFIG = textwrap.dedent(
    f"""
    T = {T}
    checkpoints = {CHECKPOINTS}
    seeds = {SEEDS}
    etas = {ETAS}
    last_iterate = true
    weighted_average = true
    regret = true
    games = [
      {{random = {{players = 2, discount = {GAMMA}, states = 3, actions = 2, zero_sum = true}}}},
      {{file = "g.json", label = "general-sum"}},
    ]
    algorithms = ["{ALGORITHM}"]
    """
)


def _games() -> list[DiscountedMarkovGame]:
    """The sweep's games built here, as `games random --discount` draws them: the random entry's
    once per seed (spawned from base_seed 0), then the file's."""
    seeds = derive_game_seeds(0, SEEDS)
    drawn = [random_discounted_game(2, 3, 2, GAMMA, seed_or_rng=s, zero_sum=True) for s in seeds]
    return [*drawn, random_discounted_game(2, 3, 2, GAMMA, seed_or_rng=FILE_SEED)]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("discounted")
    save_game(_games()[-1], root / "g.json")
    (root / "sweep.toml").write_text(CONFIG)
    report = run_sweep(root / "sweep.toml", root / "out", workers=1)
    assert not report.failures and report.total_runs == (SEEDS + 1) * len(ETAS) == report.computed_runs
    return root


@pytest.fixture(scope="module")
def direct():
    """The same runs through run_batch, called directly (their trajectories kept)."""
    games = _games()
    pairs = [(g, eta) for g in games for eta in ETAS]
    result = run_batch(
        [g for g, _ in pairs],
        ALGORITHM,
        T=T,
        etas=[eta for _, eta in pairs],
        checkpoints=CHECKPOINTS,
        last_iterate=True,
        weighted_average=True,
        regret=True,
        record_trajectory=True,
    )
    return pairs, result


def _rows_of(df, game: DiscountedMarkovGame, eta: float):
    rows = df[(df["game_sha256"] == _sha(game)) & (df["eta_value"] == eta)].sort_values("checkpoint")
    assert list(rows["checkpoint"]) == CHECKPOINTS
    return rows


def _sha(game) -> str:
    from markovgames.experiments.sweeps._plan import game_content_hash

    return game_content_hash(game)


def test_table_equals_run_batch_called_directly(sweep, direct):
    """Every number of a discounted sweep's table is run_batch's on the same games, to 1e-12; the
    columns without meaning for a discounted run are null, and the finite-horizon names mean the same."""
    df = load_results(sweep / "out")
    pairs, result = direct
    assert set(df["discount"]) == {GAMMA} and df["H"].isna().all()
    for column in ("value", "certified_ce_bound", "certified_cce_gap", "gap", "gap_times_T", "exact_cce_gap"):
        assert df[column].isna().all(), column
    for b, (game, eta) in enumerate(pairs):
        rows = _rows_of(df, game, eta)
        rows_at = [result.row(c) for c in CHECKPOINTS]
        np.testing.assert_allclose(np.stack(rows["value_estimate"]), result.value_estimate[b][rows_at], rtol=0, atol=1e-12)
        np.testing.assert_allclose(rows["last_iterate_nash_gap"], result.last_iterate_nash_gap[b], rtol=0, atol=1e-12)
        np.testing.assert_allclose(rows["weighted_average_nash_gap"], result.weighted_average_nash_gap[b], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.stack(rows["weighted_average_value"]), result.weighted_average_value[b], atol=1e-12)
        np.testing.assert_allclose(rows["external_regret"], result.external_regret[b][rows_at].max(axis=-1), atol=1e-12)
        np.testing.assert_allclose(rows["swap_regret"], result.swap_regret[b][rows_at].max(axis=-1), atol=1e-12)
        if game.is_constant_sum:
            gains = result.weighted_average_best_response[b] - result.weighted_average_value[b]
            np.testing.assert_allclose(rows["weighted_average_duality_gap"], gains.sum(axis=-1), rtol=0, atol=1e-12)
            gains = result.last_iterate_best_response[b] - result.last_iterate_value[b]
            np.testing.assert_allclose(rows["last_iterate_duality_gap"], gains.sum(axis=-1), rtol=0, atol=1e-12)
        else:  # a general-sum game has no duality gap
            assert rows["weighted_average_duality_gap"].isna().all() and rows["last_iterate_duality_gap"].isna().all()
    # The random entry's games are its seeds' (the labels say the discount, not a horizon).
    random_rows = df[df["game_kind"] == "random"]
    assert random_rows["game"].iloc[0].startswith("random(N=2,gamma=0.9,S=3,A=2x2,zero-sum")
    seeds = {s for s in pq.read_table(sweep / "out" / RESULTS_FILE).column("game_seed").to_pylist() if s is not None}
    assert sorted(seeds) == sorted(derive_game_seeds(0, SEEDS)) and set(random_rows["seed_index"]) == {0, 1}


# ---------------------------------------------------------------------------------------
# The weighted average iterate, rebuilt and evaluated in NumPy
# ---------------------------------------------------------------------------------------
def _evaluate(game: DiscountedMarkovGame, policies) -> tuple[np.ndarray, np.ndarray]:
    """Each player's value at rho of the stationary product policy ``policies`` (a linear solve) and
    its best-response value against the other's (value iteration to convergence): NumPy only."""
    r, P, gamma, rho = game.rewards, game.transitions, game.discount, game.initial_distribution
    p0, p1 = policies
    joint = p0[:, :, None] * p1[:, None, :]  # (S, A0, A1)
    values, best = np.empty(2), np.empty(2)
    for i in range(2):
        r_pi = np.einsum("sab,sab->s", joint, r[i])
        P_pi = np.einsum("sab,sabt->st", joint, P)
        values[i] = rho @ np.linalg.solve(np.eye(len(rho)) - gamma * P_pi, r_pi)
        # Player i's MDP against the other's policy: its own action a, the other's marginalised out.
        other = p1 if i == 0 else p0
        r_i = np.einsum("sb,sab->sa", other, r[i]) if i == 0 else np.einsum("sa,sab->sb", other, r[i])
        P_i = np.einsum("sb,sabt->sat", other, P) if i == 0 else np.einsum("sa,sabt->sbt", other, P)
        V = np.zeros(len(rho))
        for _ in range(600):  # gamma^600 < 1e-27
            V = np.max(r_i + gamma * P_i @ V, axis=1)
        best[i] = rho @ V
    return values, best


def test_weighted_average_columns_equal_the_average_rebuilt_in_numpy(sweep, direct):
    """The weighted average iterate sum_j alpha_T'^j pi^j (alpha_t = (k+1)/(k+t), k = 1/(1-gamma)),
    rebuilt from the trajectory with the literal weights and evaluated by NumPy's own solve and
    value iteration, against the sweep's columns at every checkpoint, to 1e-10 (so are the last iterate's)."""
    df = load_results(sweep / "out")
    pairs, result = direct
    k = 1.0 / (1.0 - GAMMA)
    for b, (game, eta) in enumerate(pairs):
        rows = _rows_of(df, game, eta)
        trajectory = [np.asarray(p[b], dtype=np.float64) for p in result.policies]  # (T, S, A_i)
        for (_, row), t in zip(rows.iterrows(), CHECKPOINTS, strict=True):
            w = np.asarray(alpha_weights(k, t))
            average = [np.einsum("j,jsa->sa", w, p[:t]) for p in trajectory]
            value, best = _evaluate(game, average)
            np.testing.assert_allclose(row["weighted_average_value"], value, rtol=0, atol=1e-10)
            assert row["weighted_average_nash_gap"] == pytest.approx(np.max(best - value), abs=1e-10)
            if game.is_constant_sum:
                assert row["weighted_average_duality_gap"] == pytest.approx(np.sum(best - value), abs=1e-10)
            value, best = _evaluate(game, [p[t - 1] for p in trajectory])
            np.testing.assert_allclose(row["last_iterate_value"], value, rtol=0, atol=1e-10)
            assert row["last_iterate_nash_gap"] == pytest.approx(np.max(best - value), abs=1e-10)


# ---------------------------------------------------------------------------------------
# Resume, summarize, plot
# ---------------------------------------------------------------------------------------
_TIMING = ("wall_time_s", "batch_id", "batch_size", "batch_wall_time_s")


def test_resume_computes_only_what_is_missing(sweep, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(sweep / "out", out)
    shutil.copy(sweep / "g.json", tmp_path / "g.json")
    (tmp_path / "sweep.toml").write_text(CONFIG)
    before = load_results(out).sort_values(["run_id", "checkpoint"]).reset_index(drop=True)
    nothing = run_sweep(tmp_path / "sweep.toml", out, workers=1)
    assert nothing.computed_runs == 0 and nothing.skipped_runs == len(before) // len(CHECKPOINTS)
    victim = sorted((out / RUNS_DIR).glob("*.json"))[0]
    victim.unlink()
    again = run_sweep(tmp_path / "sweep.toml", out, workers=1)
    assert again.computed_runs == 1 and again.skipped_runs == nothing.skipped_runs - 1
    after = load_results(out).sort_values(["run_id", "checkpoint"]).reset_index(drop=True)
    keep = [c for c in before.columns if c not in _TIMING]
    assert before[keep].astype(str).equals(after[keep].astype(str))


def test_summarize_and_plot_a_discounted_sweep(sweep, tmp_path):
    df = load_results(sweep / "out")
    rows = summarize_results(sweep / "out", metric="weighted_average_duality_gap")
    # Only the zero-sum entry's runs have a duality gap: one row per learning rate, over its 2 seeds.
    assert [(r.eta, r.runs) for r in rows] == [(repr(eta), SEEDS) for eta in ETAS]
    for r in rows:
        final = df[(df["game_kind"] == "random") & (df["eta_value"] == float(r.eta)) & (df["checkpoint"] == T)]
        assert r.final_gap == pytest.approx(float(np.median(final["weighted_average_duality_gap"])), rel=1e-14)
    nash = summarize_results(sweep / "out", metric="last_iterate_nash_gap")
    assert sorted({r.game for r in nash}) == sorted(set(df["game"])) and all(np.isfinite(r.slope) for r in nash)
    # A discounted game's runs have no certified gap: the default metric says which to ask for.
    with pytest.raises(ResultsError, match=r"no run of these results recorded gap .*last_iterate_nash_gap"):
        summarize_results(sweep / "out")
    figures = tmp_path / "figs"
    argv = ["plot", str(sweep / "out"), "--metric", "weighted_average_nash_gap", "--out", str(figures)]
    assert main([*argv, "--x", "discount", "--decades", "12,20"]) == 0
    names = sorted(p.name for p in figures.glob("*.png"))
    # One figure per game, the label's "gamma=0.9" kept whole in the file name, and the one across games.
    assert "gaps_general-sum_metric-weighted_average_nash_gap.png" in names
    assert "gaps_random_N2_gamma0.9_S3_A2x2_zero-sum_metric-weighted_average_nash_gap.png" in names
    assert any(n.startswith("gap_times_T_vs_discount") for n in names) and len(names) == 3


# ---------------------------------------------------------------------------------------
# The run files and the results, read back checked
# ---------------------------------------------------------------------------------------
def test_run_files_are_checked_as_a_discounted_runs(sweep, tmp_path):
    path = sorted((sweep / "out" / RUNS_DIR).glob("*.json"))[0]
    doc = json.loads(path.read_text())
    assert doc["discount"] == GAMMA and "H" not in doc["shape"] and doc["spec"]["game"]["discount"] == GAMMA
    assert "value_estimate" in doc["records"][0] and "certified_ce_gap" not in doc["records"][0]
    assert read_run_file(path, path.stem) is not None
    spoilt = [
        (lambda d: d.update(discount=0.5), "discount: 0.5 differs from the spec's game's 0.9"),
        (lambda d: d.pop("discount"), r"shape: missing key\(s\): 'H'"),  # read as a finite-horizon run's
        (lambda d: d["spec"]["game"].pop("discount"), "spec: its hash is"),
        (lambda d: d["records"][1].update(certified_ce_gap=0.1), r"records\[1\]: unknown key\(s\): 'certified_ce_gap'"),
        (lambda d: d["records"][0].pop("value_estimate"), r"records\[0\]: missing key\(s\): 'value_estimate'"),
        (lambda d: d["shape"].update(H=2), r"shape: unknown key\(s\): 'H'"),
        (lambda d: d.update(feedback="bandit:1"), "feedback"),
    ]
    for spoil, message in spoilt:
        changed = json.loads(json.dumps(doc))
        spoil(changed)
        target = tmp_path / path.name
        target.write_text(json.dumps(changed))
        with pytest.raises(SweepFileError, match=message):
            read_run_file(target, path.stem)


def test_results_rows_of_either_kind_are_checked(sweep, tmp_path):
    """A finite-horizon row must have its certified gaps and no value estimate; a discounted row
    the reverse; a file of either kind as written reads back."""
    table = pq.read_table(sweep / "out" / RESULTS_FILE)

    def refused(edit, message):
        rows = table.to_pylist()
        edit(rows)
        (tmp_path / "x").mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), tmp_path / "x" / RESULTS_FILE)
        with pytest.raises(ResultsError, match=message):
            load_results(tmp_path / "x")

    refused(lambda rows: rows[3].update(value_estimate=None), r"row 3, column 'value_estimate': is null on a discounted")
    refused(lambda rows: rows[0].update(H=2), r"row 0, column 'H': is set on a discounted game's row .* no horizon")
    refused(lambda rows: rows[1].update(discount=None), r"row 1, column 'H': is null on a finite-horizon game's row")
    refused(lambda rows: rows[2].update(discount=0.99), r"run .*: its rows disagree on column 'discount'")
    refused(
        lambda rows: rows[4].update(weighted_average_nash_gap=11.0),
        r"row 4 .*'weighted_average_nash_gap': 11.0 is outside \[0, 1/\(1-gamma\)\] \(gamma = 0.9",
    )


def test_a_discounted_batch_task_travels_to_a_worker(sweep):
    """A batch's discounted games pickle as the spawned workers receive them, and the plan batches
    one discount and one kernel form per batch."""
    config = parse_sweep_config(
        {
            "T": T,
            "games": [
                {"random": {"players": 2, "discount": 0.9, "states": 3, "actions": 2, "seed": 1}},
                {"random": {"players": 2, "discount": 0.5, "states": 3, "actions": 2, "seed": 1}},
                {"random": {"players": 2, "discount": 0.5, "states": 3, "actions": 2, "seed": 2, "successors": 2}},
            ],
            "algorithms": [ALGORITHM],
        }
    )
    tasks = plan_sweep(config).batches()
    assert len(tasks) == 3 and {t.shape["discount"] for t in tasks} == {0.9, 0.5}
    back = pickle.loads(pickle.dumps(tasks[0]))
    assert back.games == tasks[0].games and back.discounted and back.shape == tasks[0].shape


@pytest.mark.full
def test_worker_processes_run_a_discounted_sweep(sweep, tmp_path):
    """Two batches (two algorithms) in two spawned worker processes: the same numbers as inline."""
    shutil.copy(sweep / "g.json", tmp_path / "g.json")
    text = CONFIG.replace(f'algorithms = ["{ALGORITHM}"]', f'algorithms = ["{ALGORITHM}", "ogda+discounted-smooth-linear"]')
    (tmp_path / "sweep.toml").write_text(text)
    report = run_sweep(tmp_path / "sweep.toml", tmp_path / "out", workers=2)
    assert not report.failures and report.batches == 2
    df, inline = load_results(tmp_path / "out"), load_results(sweep / "out")
    mine = df[df["algorithm"] == ALGORITHM].sort_values(["run_id", "checkpoint"]).reset_index(drop=True)
    theirs = inline.sort_values(["run_id", "checkpoint"]).reset_index(drop=True)
    np.testing.assert_allclose(np.stack(mine["value_estimate"]), np.stack(theirs["value_estimate"]), rtol=0, atol=1e-12)


def test_a_sparse_and_a_dense_game_of_one_shape_batch_apart():
    """run_batch takes one kernel form per batch: a finite-horizon random game with successors and
    a dense one of the same shape are planned in batches of their own (they were one batch, which
    run_batch refused)."""
    spec = {"players": 2, "horizon": 2, "states": 3, "actions": 2}
    config = parse_sweep_config(
        {
            "T": T,
            "games": [{"random": {**spec, "seed": 1}}, {"random": {**spec, "seed": 2, "successors": 2}}],
            "algorithms": ["hedge+smooth"],
        }
    )
    tasks = plan_sweep(config).batches()
    assert sorted(task.games[0].is_sparse for task in tasks) == [False, True]


def test_the_example_config_is_the_documented_sweep():
    """``examples/sweep_discounted.toml`` (docs/discounted.md runs it in the full mode) plans the 24
    runs the page says, on discounted games, each batch of one discount."""
    from pathlib import Path

    from markovgames.experiments.sweeps._config import load_sweep_config

    path = Path(__file__).resolve().parents[1] / "examples" / "sweep_discounted.toml"
    config, _ = load_sweep_config(path)
    plan = plan_sweep(config, path.parent)
    assert len(plan.runs) == 2 * 3 * 2 * 2 == 24
    assert all(isinstance(r.game, DiscountedMarkovGame) for r in plan.runs)
    for batch in plan.batches():
        assert len({g.discount for g in batch.games}) == 1
