"""``--executor ray`` against a local Ray instance started by the test (skipped without Ray)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import needs_extra

ray = needs_extra("ray", "ray")

# JAX warns about any fork once it runs threads; the subprocesses here fork only to exec.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

from markovgames.dynamics import run  # noqa: E402
from markovgames.experiments.sweeps._sweep import MANIFEST_FILE, RESULTS_FILE, run_sweep  # noqa: E402
from markovgames.games import random_game  # noqa: E402

CONFIG = textwrap.dedent(
    """
    T = 40
    etas = [0.2]
    seeds = 2
    base_seed = 3
    games = [{random = {players = 2, horizon = 2, states = 2, actions = 2}}]
    algorithms = ["smooth_cce", {name = "stage_cce", optimistic = [false]}]
    max_retries = 2
    """
)


def test_ray_executor_starts_and_stops_a_local_instance_by_default(tmp_path):
    assert not ray.is_initialized()
    config = tmp_path / "one.toml"
    config.write_text('T = 12\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\netas = [0.1, 0.2]\n')
    report = run_sweep(config, tmp_path / "out", executor="ray", workers=1)
    assert report.computed_runs == 2 and report.batches == 1 and not report.failures
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    assert manifest["executor"]["started_local_cluster"] is True and manifest["executor"]["cluster_cpus"] == 1
    assert not ray.is_initialized()  # the instance it started is shut down again
    single = run(__import__("markovgames").games.paper_game(), "smooth_ce", T=12, eta=0.2, record_trajectory=False)
    rows = [r for r in pq.read_table(tmp_path / "out" / RESULTS_FILE).to_pylist() if r["eta"] == "0.2" and r["checkpoint"] == 12]
    np.testing.assert_allclose(rows[0]["value"], single.value[-1], rtol=0, atol=1e-12)


@pytest.fixture
def local_ray():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _rows(out):
    rows = pq.read_table(out / RESULTS_FILE).to_pylist()
    return {(r["run_id"], r["checkpoint"]): r for r in rows}


@pytest.mark.full
def test_ray_executor_runs_the_sweep_and_a_cli_driver_joins_by_address(tmp_path, local_ray):
    config = tmp_path / "ray.toml"
    config.write_text(CONFIG)
    report = run_sweep(config, tmp_path / "ray", executor="ray")
    assert report.total_runs == 4 and report.computed_runs == 4 and report.batches == 2 and not report.failures
    manifest = json.loads((tmp_path / "ray" / MANIFEST_FILE).read_text())
    assert manifest["executor"]["kind"] == "ray" and manifest["executor"]["ray_version"] == ray.__version__
    assert manifest["executor"]["started_local_cluster"] is False  # it used the instance of this process
    assert ray.is_initialized()  # and left it running
    rows = _rows(tmp_path / "ray")

    # The same numbers as one run() call of one of the runs.
    mine = sorted(
        (r for r in rows.values() if r["algorithm"] == "stage_cce" and r["seed_index"] == 1), key=lambda r: r["checkpoint"]
    )
    game = random_game(2, 2, 2, 2, seed_or_rng=mine[0]["game_seed"])
    single = run(
        game, "stage_cce", T=40, eta=0.2, optimistic=False, record_trajectory=False, checkpoints=[r["checkpoint"] for r in mine]
    )
    np.testing.assert_allclose([r["value"] for r in mine], single.value, rtol=0, atol=1e-12)
    np.testing.assert_allclose([r["certified_cce_gap"] for r in mine], single.certified_cce_gap, rtol=0, atol=1e-12)

    # A separate driver process (the CLI) connects to the cluster by --address; same results.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "markovgames",
            "sweep",
            str(config),
            "--out",
            str(tmp_path / "cli"),
            "--executor",
            "ray",
            "--address",
            local_ray,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "4 runs (4 computed in 2 batches" in proc.stdout
    cli_rows = _rows(tmp_path / "cli")
    assert cli_rows.keys() == rows.keys()
    for key, r in rows.items():
        np.testing.assert_allclose(cli_rows[key]["value"], r["value"], rtol=0, atol=1e-12)
        assert cli_rows[key]["certified_ce_gap"] == pytest.approx(r["certified_ce_gap"], abs=1e-12)
    manifest = json.loads((tmp_path / "cli" / MANIFEST_FILE).read_text())
    assert manifest["executor"]["address"] == local_ray and manifest["executor"]["started_local_cluster"] is False


@pytest.mark.full
def test_a_ray_worker_that_dies_is_retried_and_counted(tmp_path, monkeypatch):
    """(In the full mode: a second Ray instance and a worker's death and restart take about a
    minute. The default suite runs a sweep on Ray once, above, and kills a worker of the process
    pool in test_sweep_run.py.)"""
    from pathlib import Path

    import sweep_worker_helpers
    from markovgames.experiments.sweeps._execute import _execute_ray
    from markovgames.experiments.sweeps._sweep import load_sweep_config, plan_sweep

    config_file = tmp_path / "two.toml"
    config_file.write_text('T = 8\ngames = ["paper"]\nalgorithms = ["smooth_cce", "stage_cce"]\nmax_retries = 2\n')
    config, _ = load_sweep_config(config_file, [])
    tasks = plan_sweep(config, tmp_path).batches()
    marker = tmp_path / "marker"
    monkeypatch.setenv("MARKOVGAMES_TEST_MARKER", str(marker))
    results, failures = {}, []
    # The workers import the tests' helper module from the tests folder. The local instance's
    # processes inherit this process's environment (a runtime_env would start Ray's agent for it).
    tests_dir = str(Path(sweep_worker_helpers.__file__).resolve().parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests_dir, *filter(None, [os.environ.get("PYTHONPATH")])]))
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        _execute_ray(
            tasks,
            None,
            1,
            2,
            lambda task, output, attempt: results.__setitem__(task.batch_id, attempt),
            lambda task, attempt, detail, final: failures.append((attempt, final, detail)),
            execute=sweep_worker_helpers.die_once_then_run,
        )
    finally:
        ray.shutdown()
    assert marker.exists()  # a worker was killed
    assert set(results) == {t.batch_id for t in tasks}
    assert len(failures) == 1 and not failures[0][1] and "Worker" in failures[0][2]
    assert sorted(results.values()) == [1, 2]
