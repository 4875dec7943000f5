"""Sweeps end to end: results equal single runs, resume after a kill, retries, plot, summarize, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import fresh_python
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments.sweeps import _execute as _sweep_execute
from markovgames.experiments.sweeps import _sweep
from markovgames.experiments.sweeps._config import load_sweep_config
from markovgames.experiments.sweeps._summary import result_rows, summarize_results, summary_markdown
from markovgames.experiments.sweeps._sweep import MANIFEST_FILE, RESULTS_FILE, RUNS_DIR, plan_sweep, run_sweep
from markovgames.games import random_game

# JAX warns about any fork once it runs threads; the subprocesses here fork only to exec.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

# One random shape, 2 seeds: smooth_ce (2 etas x 2 seeds: one batch of 4) and stage_cce with a
# constant and the theory rate (two batches of 2: they cannot share a run_batch call).
CONFIG = textwrap.dedent(
    """
    name = "small"
    T = 60
    etas = [0.1, 0.2]
    seeds = 2
    base_seed = 5
    games = [{random = {players = 2, horizon = 2, states = 2, actions = [2, 3]}, label = "r2x3"}]
    algorithms = ["smooth_ce", {name = "stage_cce", etas = [0.2, "theory"]}]
    """
)


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    config = root / "small.toml"
    config.write_text(CONFIG)
    events = []
    report = run_sweep(config, root / "out", workers=1, progress=events.append)
    return root, config, report, events


def test_sweep_writes_runs_results_and_manifest(small_sweep):
    root, config, report, events = small_sweep
    out = root / "out"
    assert report.total_runs == 8 and report.computed_runs == 8 and report.skipped_runs == 0 and report.batches == 3
    assert not report.failures and report.retries == 0
    assert sorted(p.stem for p in (out / RUNS_DIR).glob("*.json")) == sorted(
        plan_sweep(load_sweep_config(config)[0], root).run_ids
    )
    assert events[-1].done_runs == 8 and events[-1].total_runs == 8 and events[-1].done_batches == 3
    assert events[-1].latest["median_gap"] > 0
    table = pq.read_table(out / RESULTS_FILE)
    for column in (
        "run_id",
        "game",
        "game_seed",
        "algorithm",
        "optimistic",
        "eta",
        "T",
        "checkpoint",
        "value",
        "certified_ce_gap",
        "certified_cce_gap",
        "ce_gap_times_T",
        "cce_gap_times_T",
        "wall_time_s",
    ):
        assert column in table.schema.names
    rows = table.to_pylist()
    n_checkpoints = len({r["checkpoint"] for r in rows})
    assert len(rows) == 8 * n_checkpoints and {r["checkpoint"] for r in rows} >= {1, 10, 60}
    assert {r["game"] for r in rows} == {"r2x3"} and {r["eta"] for r in rows} == {"0.1", "0.2", "theory"}
    for r in rows:
        assert r["ce_gap_times_T"] == pytest.approx(r["certified_ce_gap"] * r["checkpoint"])
        assert len(r["value"]) == 2 and r["wall_time_s"] > 0
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["status"] == "complete" and manifest["runs"]["total"] == 8
    assert manifest["config"]["T"] == 60 and manifest["config_file"] == "small.toml"
    assert manifest["seeds"]["base_seed"] == 5 and len(manifest["seeds"]["game_seeds"]) == 2
    assert {"markovgames", "jax", "numpy"} <= set(manifest["versions"])
    assert manifest["machine"]["cpu_count"] == os.cpu_count() and manifest["machine"]["platform"]
    assert manifest["retries"] == 0 and manifest["wall_time_s"] > 0 and len(manifest["batches"]) == 3
    assert all(b["attempts"] == 1 and b["status"] == "finished" for b in manifest["batches"])


def test_sweep_results_equal_single_runs(small_sweep):
    root, config, _, _ = small_sweep
    rows = result_rows(root / "out")
    checkpoints = sorted({r["checkpoint"] for r in rows})
    picks = [("smooth_ce", "0.1", 0), ("stage_cce", "theory", 1)]
    for algorithm, eta, seed_index in picks:
        mine = sorted(
            (r for r in rows if r["algorithm"] == algorithm and r["eta"] == eta and r["seed_index"] == seed_index),
            key=lambda r: r["checkpoint"],
        )
        assert len(mine) == len(checkpoints)
        game = random_game(2, 2, 2, (2, 3), seed_or_rng=mine[0]["game_seed"])
        single = run(
            game,
            algorithm,
            T=60,
            eta="theory" if eta == "theory" else float(eta),
            record_trajectory=False,
            checkpoints=checkpoints,
        )
        np.testing.assert_allclose([r["value"] for r in mine], single.value, rtol=0, atol=1e-12)
        np.testing.assert_allclose([r["certified_ce_bound"] for r in mine], single.certified_ce_bound, rtol=0, atol=1e-12)
        np.testing.assert_allclose([r["certified_cce_bound"] for r in mine], single.certified_cce_bound, rtol=0, atol=1e-12)
        np.testing.assert_allclose([r["certified_ce_gap"] for r in mine], single.certified_ce_gap, rtol=0, atol=1e-12)
        np.testing.assert_allclose([r["certified_cce_gap"] for r in mine], single.certified_cce_gap, rtol=0, atol=1e-12)


def test_rerun_skips_finished_runs_and_progress_draws_on_a_terminal(small_sweep, capsys, monkeypatch):
    root, config, _, _ = small_sweep
    out = root / "out"
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out / RUNS_DIR).glob("*.json")}
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    assert main(["sweep", str(config), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "8/8" in text and "8 already finished" in text  # the rich display, then the closing line
    assert {p.name: p.stat().st_mtime_ns for p in (out / RUNS_DIR).glob("*.json")} == mtimes
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["sessions"][-1]["runs_computed"] == 0 and manifest["sessions"][-1]["runs_skipped_as_finished"] == 8
    assert len(manifest["sessions"]) == 2 and len(manifest["batches"]) == 3


def test_progress_is_silent_off_a_terminal(small_sweep, capsys):
    root, config, _, _ = small_sweep
    assert main(["sweep", str(config), "--out", str(root / "out")]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines() == [out.strip()]  # only the closing line
    assert main(["sweep", str(config), "--out", str(root / "out"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_summarize_table_and_markdown(small_sweep, capsys):
    root, _, _, _ = small_sweep
    md = root / "summary.md"
    assert main(["summarize", str(root / "out"), "--markdown", str(md)]) == 0
    shown = capsys.readouterr().out
    assert "final gap" in shown and "smooth_ce" in shown and "theory" in shown
    text = md.read_text()
    assert text.count("| r2x3 |") == 4  # smooth_ce x 2 etas, stage_cce x 2 etas
    summary = summarize_results(root / "out")
    assert [(s.algorithm, s.eta) for s in summary] == [
        ("smooth_ce", "0.1"),
        ("smooth_ce", "0.2"),
        ("stage_cce", "0.2"),
        ("stage_cce", "theory"),
    ]
    rows = result_rows(root / "out")
    for s in summary:
        finals = [r["gap"] for r in rows if r["algorithm"] == s.algorithm and r["eta"] == s.eta and r["checkpoint"] == 60]
        assert s.runs == 2 and s.T == 60 and s.final_gap == pytest.approx(float(np.median(finals)), rel=1e-15)
        assert s.gap_times_T == pytest.approx(60 * s.final_gap)
        assert np.isfinite(s.slope) and s.slope < 0.5
        assert f"{s.final_gap:.3e}" in text
    ce = summarize_results(root / "out", "ce")
    assert {s.concept for s in ce} == {"ce"} and summary_markdown(ce).startswith("| game |")


def test_plot_writes_png_and_pdf_per_game(small_sweep, capsys):
    root, _, _, _ = small_sweep
    figs = root / "figs"
    assert main(["plot", str(root / "out"), "--out", str(figs), "--concept", "cce"]) == 0
    files = sorted(p.name for p in figs.iterdir())
    assert files == [".markovgames-figures.json", "gaps_r2x3_concept-cce.pdf", "gaps_r2x3_concept-cce.png"]
    assert (figs / "gaps_r2x3_concept-cce.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (figs / "gaps_r2x3_concept-cce.pdf").read_bytes()[:5] == b"%PDF-"
    assert "wrote" in capsys.readouterr().out
    assert main(["plot", str(root / "out")]) == 0  # default: RESULTS_DIR/figures
    assert (root / "out" / "figures" / "gaps_r2x3.png").exists()


def test_a_failing_batch_is_retried_and_recorded(tmp_path, monkeypatch):
    config = tmp_path / "one.toml"
    config.write_text('T = 8\ngames = ["paper"]\nalgorithms = ["smooth_cce"]\nmax_retries = 2\n')
    real = _sweep_execute.execute_batch
    calls = []

    def flaky(task):
        calls.append(task.batch_id)
        if len(calls) == 1:
            raise RuntimeError("transient failure")
        return real(task)

    monkeypatch.setattr(_sweep_execute, "execute_batch", flaky)
    report = run_sweep(config, tmp_path / "out", workers=1)
    assert report.retries == 1 and report.computed_runs == 1 and not report.failures and len(calls) == 2
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["retries"] == 1 and manifest["batches"][0]["attempts"] == 2 and manifest["status"] == "complete"


def test_a_batch_failing_every_attempt_is_reported_and_exit_1(tmp_path, monkeypatch, capsys):
    config = tmp_path / "one.toml"
    config.write_text('T = 8\ngames = ["paper"]\nalgorithms = ["smooth_cce"]\nmax_retries = 1\n')

    def broken(task):
        raise RuntimeError("always broken")

    monkeypatch.setattr(_sweep_execute, "execute_batch", broken)
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--workers", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 of 1 runs failed" in err[0]
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["status"] == "incomplete" and manifest["runs"]["failed"] == 1 and manifest["retries"] == 1
    assert "always broken" in manifest["failures"][0]
    assert pq.read_table(tmp_path / "out" / RESULTS_FILE).num_rows == 0


# ---------------------------------------------------------------------------------------
# Interrupt and resume (the CLI in a subprocess, with its worker pool, killed mid-sweep)
# ---------------------------------------------------------------------------------------
def test_interrupted_sweep_resumes_without_recomputing(tmp_path):
    # The small sweep (8 runs in 3 batches, the loops the fixture above compiles), in two workers:
    # killed once one batch has written its runs, before the third could start.
    config = tmp_path / "resume.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    runs = out / RUNS_DIR
    total = len(plan_sweep(load_sweep_config(config)[0], tmp_path).runs)
    assert total == 8
    proc = subprocess.Popen(
        [sys.executable, "-m", "markovgames", "sweep", str(config), "--out", str(out), "--workers", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the kill reaches its worker processes
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if runs.is_dir() and any(runs.glob("*.json")):
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"the sweep ended before it could be interrupted: {proc.stderr.read().decode()}"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    time.sleep(0.2)
    before = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert 1 <= len(before) < total, len(before)
    for name in before:  # every file under its final name is complete (atomic writes)
        assert json.loads((runs / name).read_text())["run_id"] == name[:-5]
    assert not (out / RESULTS_FILE).exists()
    assert json.loads((out / MANIFEST_FILE).read_text())["status"] == "running"

    # Resumed in this process (one worker: inline), which needs no worker processes started.
    report = run_sweep(config, out, workers=1)
    assert report.skipped_runs == len(before) and report.computed_runs == total - len(before)
    after = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert len(after) == total
    assert {k: after[k] for k in before} == before  # finished runs were not recomputed
    assert not list(runs.glob(".*.tmp"))
    table = pq.read_table(out / RESULTS_FILE)
    assert len(set(table.column("run_id").to_pylist())) == total
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["status"] == "complete" and len(manifest["sessions"]) == 2
    assert manifest["sessions"][0]["status"] == "running"  # the killed session never finished
    assert manifest["sessions"][1]["runs_skipped_as_finished"] == len(before)


# ---------------------------------------------------------------------------------------
# CLI errors: one line, exit 2
# ---------------------------------------------------------------------------------------
def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        return stop.code


@pytest.mark.parametrize(
    "config_text,args,needle",
    [
        (
            CONFIG.replace('"smooth_ce"', '"foo"'),
            [],
            "small.toml: algorithms[0]: unknown algorithm 'foo'; choose one of: smooth_ce, stage_cce, smooth_cce",
        ),
        (CONFIG, ["--set", "T=0"], "small.toml: T: expected a positive integer, got 0"),
        (CONFIG, ["--set", "T"], "--set 'T': expected KEY=VALUE"),
        (CONFIG, ["--set", "games[0].random.colour=3"], "small.toml: games[0].random: unknown key 'colour'"),
        (CONFIG, ["--workers", "0"], "--workers: expected a positive integer, got 0"),
        (CONFIG, ["--address", "auto"], "--address: needs --executor ray"),
        (CONFIG, ["--executor", "slurm"], "argument --executor: invalid choice"),
        ("T = [", [], "small.toml: invalid TOML"),
    ],
)
def test_sweep_cli_errors_are_one_line_exit_2(tmp_path, capsys, config_text, args, needle):
    config = tmp_path / "small.toml"
    config.write_text(config_text)
    code = _exit_code(["sweep", str(config), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("markovgames: error: ") and needle in err[0], err
    assert not (tmp_path / "out").exists()


def test_other_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    config = tmp_path / "small.toml"
    config.write_text(CONFIG)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    cases = [
        (["sweep", str(tmp_path / "absent.toml")], "absent.toml: no such configuration file"),
        (["sweep", str(config), "--out", str(busy)], "not empty and not a sweep directory"),
        (["plot", str(tmp_path)], "is a directory, not a sweep directory (with results.parquet) or a run directory"),
        (["summarize", str(tmp_path / "nowhere")], "nowhere: no such file or directory; expected a sweep directory"),
    ]
    for argv, needle in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err
    (tmp_path / RESULTS_FILE).write_text("not parquet")
    assert main(["summarize", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read results" in err[0]
    assert _exit_code(["plot", str(tmp_path), "--concept", "nash"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_dry_run_shows_the_plan(tmp_path, capsys):
    config = tmp_path / "small.toml"
    config.write_text(CONFIG)
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "8 runs on 2 distinct games; 8 pending in 3 batches" in text and text.count("batch ") == 3
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def fresh_imports(small_sweep, tmp_path_factory):
    """One fresh interpreter for the two tests below (a Python and its imports to start, not two):
    ``summarize`` and ``plot`` of the small sweep first, then what they loaded; then the imports
    of the package, its experiments and the command line, and whether Ray is loaded."""
    root, *_ = small_sweep
    figures = tmp_path_factory.mktemp("fresh-figures")
    code = (
        "import sys, contextlib, io\n"
        "from markovgames.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    codes = [main(['summarize', {str(root / 'out')!r}]), main(['plot', {str(root / 'out')!r}, '--out', {str(figures)!r}])]\n"
        "print(codes, [m for m in ('jax', 'scipy', 'markovgames.dynamics') if m in sys.modules])\n"
        "import markovgames, markovgames.experiments, markovgames.cli._main as m; m.build_parser()\n"
        "import markovgames.experiments.sweeps._sweep, markovgames.cli._sweep; print('ray' in sys.modules)\n"
    )
    results, ray_loaded = fresh_python(code).splitlines()
    return results, ray_loaded, figures


def test_importing_markovgames_never_imports_ray(fresh_imports):
    _, ray_loaded, _ = fresh_imports
    assert ray_loaded == "False"


def test_summarize_and_plot_load_neither_jax_nor_scipy(fresh_imports):
    """Reading results needs no engine: ``summarize`` and ``plot`` start in about half the time
    of a command that computes (JAX alone takes about 0.45 s to import)."""
    results, _, figures = fresh_imports
    assert results == "[0, 0] []"
    assert any(figures.glob("*.png"))


def test_the_paper_order_of_results_is_the_registrys():
    """Results tables and figures list the paper's algorithms first, in the registry's order,
    which the results modules write out so as not to import the engine."""
    from markovgames.dynamics import ALGORITHMS
    from markovgames.experiments.sweeps._summary import PAPER_ORDER

    assert PAPER_ORDER == tuple(ALGORITHMS)


def test_example_config_is_valid():
    path = Path(__file__).resolve().parents[1] / "examples" / "sweep.toml"
    config, _ = load_sweep_config(path)
    plan = plan_sweep(config, path.parent)
    assert len(config.algorithms) == 3 and len(config.etas) == 2 and config.seeds == 5 and len(config.games) == 2
    assert len(plan.runs) == 3 * 2 * 5 * 2 and len(plan.batches()) == 6


# ---------------------------------------------------------------------------------------
# A sweep in worker processes: one that dies (SIGKILL) is replaced and its batch retried, and the
# workers use the driver's compilation cache


@pytest.fixture(scope="module")
def pool_sweep(tmp_path_factory):
    """A sweep of two batches in two worker processes (one pool to start for the two tests below):
    the first worker to take a batch kills itself once, and the driver keeps a compilation cache
    it configured in code. The pool's results and failures as the executor reports them."""
    import jax

    import sweep_worker_helpers
    from markovgames.experiments.sweeps._execute import _execute_processes

    root = tmp_path_factory.mktemp("pool")
    config = root / "two.toml"
    config.write_text('T = 8\ngames = ["paper"]\nalgorithms = ["smooth_cce", "stage_cce"]\nmax_retries = 2\n')
    tasks = plan_sweep(load_sweep_config(config, [])[0], root).batches()
    assert len(tasks) == 2
    cache = root / "cache"
    cache.mkdir()
    results, failures = {}, []

    def dying_pool(tasks, workers, max_retries, on_result, on_failure):
        def result(task, output, attempt):
            results[task.batch_id] = (output, attempt)
            on_result(task, output, attempt)

        def failure(task, attempt, detail, final):
            failures.append((task.batch_id, attempt, final, detail))
            on_failure(task, attempt, detail, final)

        _execute_processes(tasks, workers, max_retries, result, failure, execute=sweep_worker_helpers.die_once_then_run)

    settings = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    before = {name: getattr(jax.config, name) for name in settings}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MARKOVGAMES_TEST_MARKER", str(root / "marker"))
        patch.setattr(_sweep, "_execute_processes", dying_pool)
        jax.config.update("jax_compilation_cache_dir", str(cache))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        try:
            report = run_sweep(config, root / "out", workers=2)
        finally:
            for name, value in before.items():
                jax.config.update(name, value)
    return root, tasks, report, results, failures


def test_a_dying_worker_is_replaced_and_its_batch_retried(pool_sweep):
    root, tasks, _, results, failures = pool_sweep
    assert (root / "marker").exists()  # a worker really died
    assert set(results) == {t.batch_id for t in tasks}  # and every batch still finished
    assert failures and not any(final for _, _, final, _ in failures)
    # The failure says what usually kills a worker: a script without a main guard.
    assert all('if __name__ == "__main__":' in detail for *_, detail in failures)
    assert max(attempt for _, attempt in results.values()) >= 2


def test_worker_processes_use_the_drivers_compilation_cache(pool_sweep):
    """A worker is a fresh interpreter, which reads JAX's configuration from the environment only:
    the persistent compilation cache a driver configured in code reaches it through the pool's
    initializer (without it, this sweep's workers write nothing into the driver's cache)."""
    root, _, report, _, _ = pool_sweep
    assert report.computed_runs == 2 and not report.failures
    manifest = json.loads((root / "out" / MANIFEST_FILE).read_text())
    assert "inline" not in manifest["executor"]  # two batches in two worker processes
    assert any(p.is_file() for p in (root / "cache").rglob("*"))  # the workers' compiled loops


def test_sweep_over_sparse_random_games(tmp_path):
    config = tmp_path / "sparse.toml"
    config.write_text(
        "T = 40\netas = [0.2]\nseeds = 2\nbase_seed = 3\n"
        "games = [{random = {players = 2, horizon = 2, states = 5, actions = 2, successors = 2}}]\n"
        'algorithms = ["smooth_cce"]\n'
    )
    run_sweep(config, tmp_path / "out", workers=1)
    rows = [r for r in result_rows(tmp_path / "out") if r["checkpoint"] == 40]
    assert len(rows) == 2 and all(",K=2" in r["game"] for r in rows), [r["game"] for r in rows]
    for r in rows:
        game = random_game(2, 2, 5, 2, seed_or_rng=r["game_seed"], num_successors=2)
        assert game.is_sparse
        single = run(game, "smooth_cce", T=40, eta=0.2, record_trajectory=False)
        np.testing.assert_allclose(r["certified_cce_gap"], single.certified_cce_gap[-1], rtol=0, atol=1e-12)


def test_unreachable_ray_address_is_refused_at_once(tmp_path, capsys):
    """``--address`` where no Ray cluster answers is one error line naming it (``ray.init`` would
    retry for minutes and ignore Ctrl-C); Ray need not be installed for the check."""
    import socket

    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(_sweep.SweepConfigError, match=rf"^address {address}: no Ray cluster answers there"):
            _sweep_execute._check_reachable(address, timeout=5.0)
    with socket.socket() as server:  # and a listening one passes
        server.bind(("127.0.0.1", 0))
        server.listen()
        _sweep_execute._check_reachable(f"127.0.0.1:{server.getsockname()[1]}", timeout=5.0)
    for address in (None, "auto", "local"):
        _sweep_execute._check_reachable(address)
