"""The bridges' how-to pages run: every ```python block of a page, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import needs_extra

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: Each page, the extra it needs and the modules that extra installs.
PAGES = {
    "howto-normal-form.md": ("normalform", ["nashpy"]),
    "howto-openspiel.md": ("openspiel", ["pyspiel"]),
    "howto-pettingzoo.md": ("pettingzoo", ["pettingzoo", "gymnasium"]),
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_howto_examples_run(page, tmp_path, monkeypatch, capsys):
    extra, modules = PAGES[page]
    needs_extra(extra, *modules)
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, f"{page} has no runnable example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"{page} (python block {k + 1})", "exec"), namespace)
