"""The bridges' how-to pages run: every ```python block of a page, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = {
    "howto-normal-form.md": ["nashpy"],
    "howto-openspiel.md": ["pyspiel"],
    "howto-pettingzoo.md": ["pettingzoo", "gymnasium"],
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_howto_examples_run(page, tmp_path, monkeypatch, capsys):
    for module in PAGES[page]:
        pytest.importorskip(module)
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, f"{page} has no runnable example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"{page} (python block {k + 1})", "exec"), namespace)
