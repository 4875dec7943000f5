"""The same command on the same machine writes the same numbers, bit for bit.

Each test runs a command twice in separate processes (fresh interpreters, so different hash
seeds, and the second one loading the compiled loops from the persistent compilation cache the
first one filled; the run and the sweep one after the other in each, so two processes in all, not
four) and compares every results file of the two output directories: arrays and
data files byte for byte, JSON documents field by field. Only what measures time (or names the
machine and the date) may differ:

* ``run``: ``metrics.json``'s ``created``, ``wall_time_s``, ``compile_time_s``, ``versions``;
* ``sweep``: the wall-time columns of ``results.parquet``; in the run files and the manifest,
  timings, hosts, dates and versions;
* ``reproduce``: ``summary.json``'s ``wall_time_s`` and ``versions``, the per-evaluation
  ``*_seconds`` columns of the exact gaps, and the report's last line ("Produced by ... in N s").

Files whose container format stamps the time of writing (``.npz`` is a zip archive with member
dates, ``.parquet`` and the figures carry creation metadata) are compared by content.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import commands_in_one_child


def _cli(tmp_path: Path, *argv: str) -> None:
    env = dict(os.environ, MARKOVGAMES_CACHE_DIR=str(tmp_path / "jax-cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "markovgames", *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


def _twice(tmp_path: Path, *argv: str) -> tuple[Path, Path]:
    """Run ``markovgames argv --out A`` and ``... --out B``; return ``(A, B)``."""
    for out in ("A", "B"):
        _cli(tmp_path, *argv, "--out", out)
    return tmp_path / "A", tmp_path / "B"


RUN = ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "300", "--eta", "0.2"]
RUN += ["--checkpoints", "1,10,100,300", "--exact", "--quiet"]
SWEEP = ["sweep", "sweep.toml", "--workers", "1", "--quiet"]
SWEEP_CONFIG = (
    "T = 200\n"
    'checkpoints = "decades"\n'
    "etas = [0.1, 0.2]\n"
    "seeds = 2\n"
    "base_seed = 7\n"
    # Random games of the paper's shape: every (algorithm, optimism) is one batch of 6 runs.
    'games = ["paper", {random = {players = 2, horizon = 2, states = 2, actions = [2, 2]}}]\n'
    'algorithms = ["smooth_ce", {name = "stage_cce", optimistic = [true, false]}]\n'
)


@pytest.fixture(scope="module")
def run_and_sweep_twice(tmp_path_factory) -> Path:
    """``RUN --out run-A`` and ``SWEEP --out sweep-A`` one after the other in a child process
    (`commands_in_one_child`, with a compilation cache of its own), then ``run-B`` and ``sweep-B``
    in another one, which loads the compiled loops from that cache."""
    root = tmp_path_factory.mktemp("determinism")
    (root / "sweep.toml").write_text(SWEEP_CONFIG)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MARKOVGAMES_CACHE_DIR", str(root / "jax-cache"))
        for out in ("A", "B"):
            done = commands_in_one_child(
                [(root, [*RUN, "--out", f"run-{out}"]), (root, [*SWEEP, "--out", f"sweep-{out}"])], timeout=300
            )
            for proc in done:
                assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return root


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _drop(doc, keys: set[str]):
    """``doc`` without the given keys, at any depth."""
    if isinstance(doc, dict):
        return {k: _drop(v, keys) for k, v in doc.items() if k not in keys}
    if isinstance(doc, list):
        return [_drop(v, keys) for v in doc]
    return doc


def _drop_suffix(doc, suffix: str):
    if isinstance(doc, dict):
        return {k: _drop_suffix(v, suffix) for k, v in doc.items() if not k.endswith(suffix)}
    if isinstance(doc, list):
        return [_drop_suffix(v, suffix) for v in doc]
    return doc


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _same_npz(a: Path, b: Path) -> None:
    with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
        assert sorted(x.files) == sorted(y.files)
        for key in x.files:
            assert x[key].dtype == y[key].dtype and x[key].shape == y[key].shape, key
            assert x[key].tobytes() == y[key].tobytes(), f"{a.name}[{key}] differs"


def _same_parquet(a: Path, b: Path, *, sort_by: list[str], ignore: set[str]) -> int:
    import pyarrow.parquet as pq

    x, y = pq.read_table(a), pq.read_table(b)
    assert x.schema == y.schema
    keep = [c for c in x.column_names if c not in ignore]
    rows_x = sorted(x.select(keep).to_pylist(), key=lambda r: [r[k] for k in sort_by])
    rows_y = sorted(y.select(keep).to_pylist(), key=lambda r: [r[k] for k in sort_by])
    # json: NaN compares equal to NaN in text, and floats are written repr-exactly.
    assert json.dumps(rows_x) == json.dumps(rows_y)
    return len(rows_x)


# ---------------------------------------------------------------------------------------
def test_run_writes_identical_results(run_and_sweep_twice):
    a, b = run_and_sweep_twice / "run-A", run_and_sweep_twice / "run-B"
    assert _files(a) == _files(b)
    assert "trajectory/policy_0.npy" in _files(a) and "curve.npz" in _files(a)
    _same_npz(a / "curve.npz", b / "curve.npz")
    for name in _files(a):
        if name.endswith(".npy") or name == "game.json":
            assert (a / name).read_bytes() == (b / name).read_bytes(), f"{name} differs"
    timing = {"created", "wall_time_s", "compile_time_s", "versions"}
    ma, mb = _json(a / "metrics.json"), _json(b / "metrics.json")
    assert "exact_ce_gap" in ma["checkpoints"][-1]
    assert _drop(ma, timing) == _drop(mb, timing)


def test_sweep_writes_identical_results(run_and_sweep_twice):
    a, b = run_and_sweep_twice / "sweep-A", run_and_sweep_twice / "sweep-B"
    assert _files(a) == _files(b)
    rows = _same_parquet(
        a / "results.parquet",
        b / "results.parquet",
        sort_by=["run_id", "checkpoint"],
        ignore={"wall_time_s", "batch_wall_time_s"},
    )
    # (paper + a random game x 2 seeds) x 3 (algorithm, optimism) x 2 etas = 18 runs, 4 checkpoints each.
    assert rows == 18 * 4
    timing = {
        "wall_time_s",
        "compile_time_s",
        "finished_at",
        "host",
        "versions",
        "machine",
        "started_at",
        "wall_time_s_all_sessions",
        "sessions",
    }
    for name in _files(a):
        if name.startswith("runs/"):
            assert _drop(_json(a / name), timing) == _drop(_json(b / name), timing), name
    ma, mb = _json(a / "manifest.json"), _json(b / "manifest.json")
    assert _drop(ma, timing) == _drop(mb, timing)


@pytest.mark.full
def test_reproduce_writes_identical_data(tmp_path):
    a, b = _twice(tmp_path, "reproduce", "-T", "300", "--no-baselines", "--quiet")
    assert _files(a) == _files(b)
    assert (a / "curves.csv").read_bytes() == (b / "curves.csv").read_bytes()

    def exact_rows(path: Path) -> list[dict]:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
        assert rows
        return [{k: v for k, v in r.items() if not k.endswith("_seconds")} for r in rows]

    assert exact_rows(a / "exact_gaps.csv") == exact_rows(b / "exact_gaps.csv")
    _same_parquet(a / "curves.parquet", b / "curves.parquet", sort_by=["algorithm", "optimistic", "T"], ignore=set())
    _same_parquet(
        a / "exact_gaps.parquet",
        b / "exact_gaps.parquet",
        sort_by=["algorithm", "T"],
        ignore={"exact_ce_gap_seconds", "exact_cce_gap_seconds"},
    )
    sa, sb = _json(a / "summary.json"), _json(b / "summary.json")
    timing = {"wall_time_s", "versions"}
    assert _drop_suffix(_drop(sa, timing), "_seconds") == _drop_suffix(_drop(sb, timing), "_seconds")

    def report(path: Path) -> list[str]:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("Produced by markovgames")]

    assert report(a / "REPORT.md") == report(b / "REPORT.md")
    assert any(line.startswith("Produced by markovgames") for line in (a / "REPORT.md").read_text().splitlines())
