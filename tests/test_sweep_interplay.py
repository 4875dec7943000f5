"""Sweeps over update orders, step-size schedules and regret curves: the grid, the results columns
(with the last iterate's duality gap and the game's units), summarize and plot with ``--metric``
(of a sweep and of a run directory), the refusals, and results written before these columns."""

from __future__ import annotations

import hashlib
import json
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import FULL_TESTS, beyond_default_in_full
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments import load_results, parse_sweep_config, plan_sweep, summarize_results
from markovgames.experiments.sweeps._sweep import RESULTS_FILE, RUNS_DIR, run_sweep
from markovgames.games import get_builtin, random_game

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

T = 60
CHECKPOINTS = [10, 30, 60]
#: stage_cce's step-size schedules: both in the full mode; by default the one that is not the
#: default (hedge runs both, in every order: summarize's groups need the whole product there).
STAGE_SCHEDULES = ["constant", "sqrt"] if FULL_TESTS else ["sqrt"]
# A game in its own units (prisoners_dilemma: r01 = 0.2 r) and a zero-sum random game (constant-sum:
# the last iterate's duality gap); one shape, so that a batch holds both games. hedge over both
# orders and both schedules with its regrets; stage_cce (its regrets within each stage) simultaneous only.
CONFIG = textwrap.dedent(
    f"""
    T = {T}
    checkpoints = {CHECKPOINTS}
    last_iterate = true
    regret = true
    orders = ["simultaneous", "alternating"]
    eta_schedules = ["constant", "sqrt"]
    games = ["prisoners_dilemma", {{random = {{players = 2, horizon = 1, states = 1, actions = 2, zero_sum = true, seed = 7}}, label = "zs"}}]
    algorithms = ["hedge+smooth-uniform", {{name = "stage_cce", orders = ["simultaneous"], eta_schedules = {json.dumps(STAGE_SCHEDULES)}}}]
    """
)
#: The runs of the module's sweep, per game: hedge's four (order, schedule) pairs and stage_cce's schedules.
RUNS = 2 * (4 + len(STAGE_SCHEDULES))
#: hedge's (order, schedule) pairs compared with single runs: one per order and per schedule by
#: default (each a compiled loop of its own), all four in the full mode.
SINGLE_RUN_PAIRS = (
    {("simultaneous", "constant"), ("simultaneous", "sqrt"), ("alternating", "constant"), ("alternating", "sqrt")}
    if FULL_TESTS
    else {("simultaneous", "constant"), ("alternating", "sqrt")}
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("interplay")
    config = root / "sweep.toml"
    config.write_text(CONFIG)
    report = run_sweep(config, root / "out", workers=1)
    assert not report.failures and report.total_runs == RUNS
    return root


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        return stop.code


def _zero_sum_game():
    return random_game(2, 1, 1, (2, 2), seed_or_rng=7, zero_sum=True)


def test_results_columns_equal_single_runs(sweep):
    df = load_results(sweep / "out")
    for column in ("order", "eta_schedule", "external_regret", "swap_regret", "last_iterate_duality_gap"):
        assert column in df.columns, column
    assert set(df["order"]) == {"simultaneous", "alternating"} and set(df["eta_schedule"]) == {"constant", "sqrt"}
    assert sorted(df["checkpoint"].unique()) == CHECKPOINTS
    hedge = df[(df["game"] == "zs") & (df["algorithm"] == "hedge+smooth-uniform")]
    for (order, schedule), rows in hedge.groupby(["order", "eta_schedule"]):
        if (order, schedule) not in SINGLE_RUN_PAIRS:
            continue
        direct = run(
            _zero_sum_game(),
            "hedge+smooth-uniform",
            T=T,
            order=order,
            step_schedule=schedule,
            regret=True,
            last_iterate=CHECKPOINTS,
        )
        for _, row in rows.iterrows():
            k = row["checkpoint"] - 1
            assert row["external_regret"] == pytest.approx(np.max(direct.external_regret[k]), abs=1e-12)
            assert row["swap_regret"] == pytest.approx(np.max(direct.swap_regret[k]), abs=1e-12)
            j = CHECKPOINTS.index(row["checkpoint"])
            duality = np.sum(direct.last_iterate_best_response[j] - direct.last_iterate_value[j])
            assert row["last_iterate_duality_gap"] == pytest.approx(duality, abs=1e-12)
    assert hedge["swap_regret"].max() > 0 and hedge["last_iterate_duality_gap"].max() > 0
    stage = df[df["algorithm"] == "stage_cce"]
    assert set(stage["order"]) == {"simultaneous"} and stage["external_regret"].notna().all()
    for schedule, rows in stage[stage["game"] == "zs"].groupby("eta_schedule"):
        direct = run(_zero_sum_game(), "stage_cce", T=T, step_schedule=schedule, regret=True)
        for _, row in rows.iterrows():
            k = row["checkpoint"] - 1
            assert row["external_regret"] == pytest.approx(np.max(direct.external_regret[k]), abs=1e-12)
            assert row["swap_regret"] == pytest.approx(np.max(direct.swap_regret[k]), abs=1e-12)
    # prisoners_dilemma is not constant-sum: its last iterate has no duality gap.
    assert df[df["game"] == "prisoners_dilemma"]["last_iterate_duality_gap"].isna().all()


def test_original_units_columns(sweep):
    df = load_results(sweep / "out")
    units = get_builtin("prisoners_dilemma").units
    pd_rows = df[df["game"] == "prisoners_dilemma"]
    for _, row in pd_rows.iterrows():
        np.testing.assert_allclose(row["value_original"], units.original_value(row["value"], 1), rtol=1e-12)
        assert row["gap_original"] == pytest.approx(row["gap"] / units.scale, rel=1e-12)
        assert row["certified_cce_gap_original"] == pytest.approx(row["certified_cce_gap"] / units.scale, rel=1e-12)
        assert row["external_regret_original"] == pytest.approx(row["external_regret"] / units.scale, rel=1e-12)
        assert row["swap_regret_original"] == pytest.approx(row["swap_regret"] / units.scale, rel=1e-12)
    zs = df[df["game"] == "zs"]  # a random game is given in [0, 1]: no other units
    assert zs["value_original"].isna().all() and zs["gap_original"].isna().all()
    run_file = next((sweep / "out" / RUNS_DIR).glob("*.json"))
    docs = [json.loads(p.read_text()) for p in (sweep / "out" / RUNS_DIR).glob("*.json")]
    assert run_file.exists()
    assert {json.dumps(d.get("units")) for d in docs} == {"null", json.dumps({"scale": units.scale, "offset": units.offset})}


def test_summarize_groups_by_order_and_schedule(sweep, capsys):
    rows = summarize_results(sweep / "out")
    assert len(rows) == RUNS
    assert {(r.order, r.eta_schedule) for r in rows if r.algorithm == "hedge+smooth-uniform"} == {
        ("simultaneous", "constant"),
        ("simultaneous", "sqrt"),
        ("alternating", "constant"),
        ("alternating", "sqrt"),
    }
    assert main(["summarize", str(sweep / "out")]) == 0
    out = capsys.readouterr().out
    assert "order" in out and "eta schedule" in out and "alternating" in out


# A regret and the duality gap by default; external_regret (a column of the results like
# swap_regret, drawn by the same code) in the full mode.
@pytest.mark.parametrize(
    "metric", beyond_default_in_full(["external_regret", "swap_regret", "duality_gap"], {"swap_regret", "duality_gap"})
)
def test_plot_a_sweeps_metric(sweep, tmp_path, capsys, metric):
    figures = tmp_path / "figures"
    assert main(["plot", str(sweep / "out"), "--out", str(figures), "--metric", metric, "--window", "10,60"]) == 0
    written = capsys.readouterr().out
    for stem in (f"gaps_zs_metric-{metric}_window-1e1-6e1", f"slopes_1e1-6e1_metric-{metric}"):
        for suffix in (".png", ".pdf"):
            path = figures / (stem + suffix)
            assert path.stat().st_size > 0 and str(path) in written
    record = json.loads((figures / ".markovgames-figures.json").read_text())
    assert record["figures"][f"gaps_zs_metric-{metric}_window-1e1-6e1.png"]["options"]["metric"] == metric


def test_plot_refuses_a_concept_with_a_metric_and_a_metric_that_was_not_recorded(sweep, schedule_sweep, capsys):
    assert _exit_code(["plot", str(sweep / "out"), "--metric", "swap_regret", "--concept", "ce"]) == 2
    assert "--concept: chooses which certified gap is drawn" in capsys.readouterr().err
    # A sweep without regret curves (the user's schedule's): the metric is named, with how to record it.
    assert _exit_code(["plot", str(schedule_sweep / "out"), "--metric", "external_regret"]) == 2
    err = capsys.readouterr().err
    assert "--metric: no run of these results recorded external_regret" in err and "regret = true" in err


def test_plot_a_run_directory(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "80", "--out", str(out), "--quiet"]
    assert main([*argv, "--regret", "--order", "alternating"]) == 0
    for metric, stem in (("gap", "gaps_paper"), ("swap_regret", "gaps_paper_metric-swap_regret")):
        assert main(["plot", str(out), "--metric", metric]) == 0
        for suffix in (".png", ".pdf"):
            assert (out / "figures" / (stem + suffix)).stat().st_size > 0
    capsys.readouterr()
    assert _exit_code(["plot", str(out), "--metric", "duality_gap"]) == 2
    assert "--metric: " in capsys.readouterr().err
    assert _exit_code(["plot", str(out), "--x", "eta"]) == 2
    assert "--x: compares the runs of a sweep" in capsys.readouterr().err
    # A run without regret curves: the metric is refused, naming how to record it.
    assert main([*argv[:-3], "--out", str(tmp_path / "plain"), "--quiet"]) == 0
    assert _exit_code(["plot", str(tmp_path / "plain"), "--metric", "external_regret"]) == 2
    assert "the run recorded no regret curves (run it with --regret" in capsys.readouterr().err


def test_a_sweep_without_the_new_keys_plans_the_runs_it_always_did(tmp_path):
    """Runs with the paper's settings keep their ids: nothing of the order, schedule or regret is in their spec."""
    config = parse_sweep_config({"T": 10, "games": ["paper"], "algorithms": ["smooth_ce", "hedge+smooth"]})
    plan = plan_sweep(config, tmp_path)
    for planned in plan.runs:
        assert not {"order", "eta_schedule", "eta_schedule_sha256", "regret"} & set(planned.spec)
        assert (planned.order, planned.eta_schedule, planned.regret) == ("simultaneous", "constant", False)
    assert len(plan.batches()) == 2


@pytest.fixture(scope="module")
def schedule_sweep(tmp_path_factory):
    """A sweep with a user's step-size schedule (and without regret curves: the plot test's refusal)."""
    root = tmp_path_factory.mktemp("schedule")
    (root / "schedule.py").write_text("def f(t):\n    return t ** -0.25\n")
    config = root / "sweep.toml"
    config.write_text('T = 20\ngames = ["paper"]\nalgorithms = ["hedge+smooth"]\neta_schedules = ["schedule.py:f", "sqrt"]\n')
    report = run_sweep(config, root / "out", workers=1)
    assert not report.failures
    return root


def test_a_users_schedule_in_a_sweep(schedule_sweep):
    source = schedule_sweep / "schedule.py"
    df = load_results(schedule_sweep / "out")
    assert set(df["eta_schedule"]) == {"schedule.py:f", "sqrt"}
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    specs = [json.loads(p.read_text())["spec"] for p in (schedule_sweep / "out" / RUNS_DIR).glob("*.json")]
    assert {s.get("eta_schedule_sha256") for s in specs} == {digest, None}
    from markovgames.dynamics import StepSchedule

    direct = run(get_builtin("paper"), "hedge+smooth", T=20, step_schedule=StepSchedule("f", lambda t: t**-0.25))
    final = df[(df["eta_schedule"] == "schedule.py:f") & (df["checkpoint"] == 20)].iloc[0]
    assert final["certified_cce_gap"] == pytest.approx(direct.certified_cce_gap[-1], abs=1e-12)


CONFIG_BASE = 'T = 20\ngames = ["paper"]\n'


@pytest.mark.parametrize(
    "text,needle",
    [
        ('algorithms = ["smooth_ce"]\norders = ["sideways"]\n', "sweep.toml: orders[0]: unknown order 'sideways'"),
        (
            'algorithms = ["smooth_ce"]\neta_schedules = ["fast"]\n',
            "sweep.toml: eta_schedules[0]: unknown step-size schedule 'fast'",
        ),
        (
            'algorithms = ["smooth_ce"]\neta_schedules = ["power:2"]\n',
            "sweep.toml: eta_schedules[0]: step-size schedule 'power:2'",
        ),
        (
            'algorithms = ["smooth_ce"]\neta_schedules = ["nope.py:f"]\n',
            "sweep.toml: eta_schedules[0]: 'nope.py:f': no such file",
        ),
        ('algorithms = ["smooth_ce"]\nregret = "yes"\n', "sweep.toml: regret: expected true or false"),
        ('algorithms = [{name = "smooth_ce", orders = []}]\n', "sweep.toml: algorithms[0].orders: expected an update order"),
        (
            'algorithms = ["extragradient+smooth-uniform"]\norders = ["alternating"]\n',
            "sweep.toml: orders: algorithms[0]: learner 'extragradient' makes two utility queries",
        ),
        (
            'algorithms = ["exrm-plus+smooth-uniform"]\noptimistic = [false]\n',
            "sweep.toml: optimistic: algorithms[0]: learner 'exrm-plus' makes two utility queries",
        ),
    ],
)
def test_bad_sweep_settings_are_one_line_exit_2(tmp_path, capsys, text, needle):
    config = tmp_path / "sweep.toml"
    config.write_text(CONFIG_BASE + text)
    code = _exit_code(["sweep", str(config), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("markovgames: error: ") and needle in err[0], err
    assert not (tmp_path / "out").exists()


def test_results_written_before_the_new_columns_still_load(sweep, tmp_path, capsys):
    """A results file without the order, schedule, regret and units columns (an earlier version's)
    reads with their defaults, and summarize and plot work on it."""
    table = pq.read_table(sweep / "out" / RESULTS_FILE)
    old = [
        c
        for c in table.column_names
        if c in ("order", "eta_schedule", "last_iterate_duality_gap") or "regret" in c or c.endswith("_original")
    ]
    keep = table.drop_columns(old)
    # One run per (game, algorithm, optimism, eta): an earlier sweep had no order or schedule axes.
    # The zero-sum game's (one figure to draw; the plot tests draw both games' figures).
    first = keep.filter(np.isin(keep.column("run_id").to_numpy(), _one_run_per_curve(table)))
    first = first.filter(np.asarray(first.column("game").to_pylist()) == "zs")
    folder = tmp_path / "old"
    folder.mkdir()
    pq.write_table(first, folder / RESULTS_FILE)
    df = load_results(folder)
    assert set(df["order"]) == {"simultaneous"} and set(df["eta_schedule"]) == {"constant"}
    assert df["external_regret"].isna().all() and df["swap_regret"].isna().all()
    assert main(["summarize", str(folder)]) == 0
    assert "eta schedule" not in capsys.readouterr().out  # the table as it always was
    assert main(["plot", str(folder)]) == 0
    assert (folder / "figures" / "gaps_zs.png").stat().st_size > 0


def _one_run_per_curve(table) -> list[str]:
    """Each game's and algorithm's simultaneous run with its first schedule (stage_cce runs only
    ``sqrt`` by default)."""
    rows = table.select(["run_id", "game", "algorithm", "order", "eta_schedule"]).to_pylist()
    first = {}
    for r in sorted(rows, key=lambda r: r["eta_schedule"]):
        if r["order"] == "simultaneous":
            first.setdefault((r["game"], r["algorithm"]), r["eta_schedule"])
    return sorted(
        {r["run_id"] for r in rows if r["order"] == "simultaneous" and r["eta_schedule"] == first[r["game"], r["algorithm"]]}
    )


def test_a_run_file_whose_order_disagrees_with_its_spec_is_refused(sweep, tmp_path, capsys):
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(sweep / "out", copy)
    path = next(p for p in (copy / RUNS_DIR).glob("*.json") if json.loads(p.read_text())["spec"].get("order") == "alternating")
    doc = json.loads(path.read_text())
    del doc["order"]
    path.write_text(json.dumps(doc))
    assert _exit_code(["sweep", str(sweep / "sweep.toml"), "--out", str(copy)]) == 2
    err = capsys.readouterr().err
    assert path.name in err and 'order: "simultaneous" differs from the spec\'s "alternating"' in err
