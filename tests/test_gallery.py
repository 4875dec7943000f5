"""The gallery's studies (examples/*.py) run as documented, and the gallery page shows their figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import case
from documented_commands import documented_commands, environment, is_study, markdown_commands, missing_output

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "docs" / "gallery.md"

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


def _run(script: str, *args: str, cwd: Path, code: int = 0) -> str:
    """Runs ``examples/SCRIPT`` with the suite's compilation cache (`environment`): its standard
    output, or with an exit ``code`` other than 0 its standard error."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=600,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc.stdout if code == 0 else proc.stderr


#: What each study writes besides its printed lines (under its default --out).
FIGURES = {
    "open_question.py": [
        "sweeps/open_question/figures/gaps_general-sum_window-*.png",
        "sweeps/open_question/figures/slopes_*.png",
    ],
    "horizon.py": ["sweeps/horizon/figures/gap_times_T_vs_horizon.png"],
    "last_iterate.py": ["sweeps/last_iterate/figures/last_iterate.png"],
    "last_iterate_rm.py": ["sweeps/last_iterate_rm/figures/last_iterate_rm.png", "sweeps/last_iterate_rm/curves.csv"],
    "optimistic_hedge.py": ["sweeps/optimistic_hedge/figures/optimistic_hedge.png", "sweeps/optimistic_hedge/curves.csv"],
}

#: Each study's smallest size besides -T (the sweeps' in this process), and its one line for -T 0.
SMALLEST = {
    "open_question.py": (("--games", "1", "--workers", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "horizon.py": (("--games", "1", "--workers", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "last_iterate.py": (("--games", "1", "--workers", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "last_iterate_rm.py": ((), "-T must be at least 1 and --eta positive, got 0 and 0.1"),
    "optimistic_hedge.py": (("--games", "1"), "-T and --games must be at least 1, got 0 and 1"),
}


def _study_invocations():
    """Every documented invocation of a study (docs/gallery.md, the scripts' docstrings), once.

    A study at its default size (no -T: ``T = 10^5``, a minute or two on two cores) runs in the
    full mode; the quick looks run by default."""
    seen = {}
    for command in documented_commands():
        if is_study(command):
            seen.setdefault(command.argv, command)
    return [pytest.param(c, id=c.id, marks=() if "-T" in c.argv else pytest.mark.full) for c in seen.values()]


def _shown_output(script: str):
    """The gallery's output block for ``script`` and the invocation that printed it."""
    shown = [c for c in markdown_commands(GALLERY) if c.argv[1:2] == (f"examples/{script}",) and c.output and c.first_in_block]
    assert len(shown) == 1, f"the gallery shows no output (or several) of {script}"
    return shown[0]


@pytest.mark.parametrize("command", _study_invocations())
def test_study_runs_as_documented(command, tmp_path):
    """The invocation as written prints the lines the gallery shows (with other numbers at another
    size; with the gallery's numbers, to 1%, at the size it shows) and writes its figures."""
    script = Path(command.argv[1]).name
    assert script in FIGURES, f"{script}: add what it writes to FIGURES"
    out = _run(script, *command.argv[2:], cwd=tmp_path)
    shown = _shown_output(script)
    missing = missing_output(out, shown.output, rtol=1e-2 if command.argv == shown.argv else None)
    assert not missing, f"{command.id}: the gallery shows {missing}, which it did not print:\n{out}"
    for pattern in FIGURES[script]:
        figures = list(tmp_path.glob(pattern))
        assert figures and all(f.stat().st_size > 1000 for f in figures), pattern


@pytest.mark.parametrize(
    "script, T",
    [
        # -T 0: the sweeps share their check (open_question.py's stands for them); the others have their own.
        case(
            script,
            T,
            default=T == 0 and script in ("open_question.py", "last_iterate_rm.py", "optimistic_hedge.py"),
            id=f"{script}-T{T}",
        )
        for script in sorted(FIGURES)
        for T in (0, 1, 150)
    ],
)
def test_study_takes_any_size(script, T, tmp_path):
    """Any -T works (one checkpoint at T = 1; no 10^k near T/100 at T = 150), and one the study
    refuses is argparse's one line and exit 2, before any work."""
    assert script in SMALLEST, f"{script}: add its smallest size to SMALLEST"
    size, refusal = SMALLEST[script]
    args = (*size, "-T", str(T), "--out", "sw")
    if T == 0:
        err = _run(script, *args, cwd=tmp_path, code=2)
        assert err.splitlines()[-1] == f"{script}: error: {refusal}"
        assert not (tmp_path / "sw").exists()
        return
    out = _run(script, *args, cwd=tmp_path)
    assert f"T = {T:,}" in out and "nan" not in out.replace("slope +nan", ""), out


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
