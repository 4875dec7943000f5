"""The documentation builds in strict mode (broken links, bad docstrings and missing pages fail)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_extra

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_strict_build(tmp_path):
    needs_extra("docs", "mkdocs", "mkdocstrings")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "reference" / "dynamics" / "index.html").exists()
    assert (tmp_path / "site" / "gaps" / "index.html").exists()
    # The API pages render the docstrings' cross-references: no Sphinx role survives verbatim.
    raw_role = re.compile(r":(func|class|meth|attr|mod|data|obj|exc):`")
    shown = [p.relative_to(tmp_path / "site") for p in (tmp_path / "site").rglob("*.html") if raw_role.search(p.read_text())]
    assert not shown, f"pages showing a raw Sphinx role: {shown}"
    linked = (tmp_path / "site" / "reference" / "dynamics" / "index.html").read_text()
    assert 'href="../learners/#markovgames.learners.LearnerSpec"' in linked  # a cross-reference became a link


def test_every_docs_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (ROOT / "docs").rglob("*.md"):
        rel = page.relative_to(ROOT / "docs").as_posix()
        assert rel in nav, f"docs/{rel} is not listed in mkdocs.yml"
        assert page.read_text().strip(), f"docs/{rel} is empty"


def _created_by_the_docs() -> set[str]:
    """Relative paths that the README's and the docs' commands and examples write into a clone."""
    import re

    paths = {"site"}  # `mkdocs build`, in the README
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:bash|python)\n(.*?)```", text, flags=re.S):
            paths |= set(re.findall(r"--(?:out|markdown) ([A-Za-z0-9_./-]+)", block))
            paths |= set(re.findall(r"save_game\([^,]+, \"([^\"]+)\"\)", block))
            paths |= set(re.findall(r"run_sweep\(\"[^\"]+\", \"([^\"]+)\"", block))
    return {p for p in paths if not p.startswith("/") and not p.isupper() and "tmp" not in p}


def test_gitignore_covers_what_the_docs_create():
    """A user who follows the README and the guides in a clone leaves ``git status`` clean."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    created = _created_by_the_docs()
    assert {"site", "sweeps/example", "my_game.json", "reproduction", "runs/ce"} <= created, created
    for path in sorted(created):
        # A name without a suffix is a directory there (git matches "dir/" patterns only to directories).
        name = path if "." in Path(path).name else path + "/"
        proc = subprocess.run([git, "check-ignore", "-q", "--no-index", name], cwd=ROOT)
        assert proc.returncode == 0, f"{path} (written by a documented command) is not in .gitignore"
