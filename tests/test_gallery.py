"""The gallery's studies (examples/*.py) run at a small size, and the gallery page shows their figures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "docs" / "gallery.md"

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


def _run(script: str, *args: str, cwd: Path) -> str:
    """Runs ``examples/SCRIPT`` with the suite's compilation cache: a script is a library user, so
    JAX's own variables give it the cache that the command line takes from ``MARKOVGAMES_CACHE_DIR``
    (its sweep's workers take the script's)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    cache = os.environ.get("MARKOVGAMES_CACHE_DIR", "off")
    if cache != "off":
        env.update(JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.2")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_open_question_study_runs_small(tmp_path):
    out = _run("open_question.py", "--games", "2", "-T", "1000", "--out", "sw", "--workers", "1", cwd=tmp_path)
    lines = out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("general-sum: 2 games, T = 1,000: median gap x T")
    assert lines[1].startswith("zero-sum: 2 games") and "grew more than 2x over [T/100, T] in" in lines[1]
    figures = {p.name for p in (tmp_path / "sw" / "figures").iterdir()}
    assert {"gaps_general-sum_window-1e1-1e3.png", "gaps_zero-sum_window-1e1-1e3.png", "slopes_1e1-1e3.png"} <= figures


def test_horizon_study_runs_small(tmp_path):
    out = _run("horizon.py", "--horizons", "1,2", "--games", "2", "-T", "300", "--out", "sw", "--workers", "1", cwd=tmp_path)
    lines = out.strip().splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["H = 1", "H = 2"]
    assert re.match(r"gap x T grows like H\^-?\d+\.\d\d over these horizons", lines[2])
    assert (tmp_path / "sw" / "figures" / "gap_times_T_vs_horizon.png").stat().st_size > 1000


#: Example scripts that are not studies (the learner of the guide "Write your own learner").
NOT_STUDIES = {"custom_learner.py"}


def test_gallery_page_shows_every_study_and_its_committed_figures():
    text = GALLERY.read_text(encoding="utf-8")
    for script in sorted((ROOT / "examples").glob("*.py")):
        if script.name in NOT_STUDIES:
            continue
        assert f"examples/{script.name}" in text, f"{script.name} is not in the gallery"
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    assert len(images) >= 4
    for image in images:
        path = ROOT / "docs" / image
        assert path.suffix == ".png" and path.is_file(), image
        assert path.stat().st_size < 300_000, f"{image} is not small"


def test_last_iterate_study_runs_small(tmp_path):
    out = _run("last_iterate.py", "--games", "2", "-T", "500", "--out", "sw", "--workers", "1", cwd=tmp_path)
    lines = out.strip().splitlines()
    assert len(lines) == 5 and lines[-1] == "wrote sw/figures/last_iterate.png"
    assert [line.split(":")[0] for line in lines[:4]] == [
        "smooth_cce",
        "smooth_cce (no optimism)",
        "stage_cce",
        "stage_cce (no optimism)",
    ]
    assert all("median Nash gap of the last iterate" in line for line in lines[:4])
    assert (tmp_path / "sw" / "figures" / "last_iterate.png").stat().st_size > 1000
