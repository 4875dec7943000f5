"""The optional extras, sized to need: the default suite needs only ``test``; each optional package
is in an extra of its own, whose tests skip naming it (`conftest.needs_extra`), and CI installs them
all so that those tests run against the real packages."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from conftest import EXTRAS, needs_extra

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_every_optional_extra_is_known_to_the_tests_and_in_all():
    assert set(OPTIONAL) == {"test", "all", *EXTRAS}
    (everything,) = OPTIONAL["all"]
    assert everything.startswith("markovgames[")
    assert set(everything[len("markovgames[") : -1].split(",")) == set(EXTRAS)


def test_the_test_extra_holds_no_package_of_an_optional_extra():
    optional = {_name(r) for extra in EXTRAS for r in OPTIONAL[extra]}
    assert optional >= {"ray", "open-spiel", "pettingzoo", "gymnasium", "nashpy", "mkdocs", "mkdocstrings"}
    assert not optional & {_name(r) for r in OPTIONAL["test"]}


def test_ci_installs_the_test_extra_and_every_optional_one():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python -m pip install -e ".[test,all]"' in script
    assert "python -m pytest -q" in script


def test_a_missing_extra_is_a_skip_that_names_it():
    with pytest.raises(pytest.skip.Exception, match=r"needs the 'ray' extra: pip install -e '\.\[ray\]'"):
        needs_extra("ray", "a_module_that_is_not_installed")
    with pytest.raises(ValueError, match="unknown extra"):
        needs_extra("rays", "json")
    assert needs_extra("docs", "json").__name__ == "json"
