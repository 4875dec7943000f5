"""``markovgames --version`` and ``--help`` start at once: they import neither NumPy nor JAX (nor
rich, SciPy, pydantic, pandas, pyarrow, matplotlib, importlib.metadata), ``import markovgames``
imports its public names on first use, and a command builds only its own parser.
benchmarks/bench_cli.py measures the times."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys

import pytest

import markovgames
from conftest import fresh_python
from markovgames import _version
from markovgames.cli import build_parser
from markovgames.cli._commands import COMMANDS, HELP

HEAVY = ("numpy", "jax", "scipy", "rich", "pydantic", "pandas", "pyarrow", "matplotlib", "importlib.metadata", "email")

#: Each command's --help (the nested ones too), and the top level's --help and --version.
LIGHT = [
    ["--version"],
    ["--help"],
    *([name, "--help"] for name in COMMANDS),
    *(["games", sub, "--help"] for sub in ("list", "show", "validate", "hash", "export", "random")),
    ["algorithms", "list", "--help"],
]


def test_version_and_help_import_nothing_heavy():
    """Each command line in a fresh interpreter, through ``python -m markovgames``: the heavy
    packages it loaded (and for the top level, the commands' modules)."""
    code = (
        "import sys, contextlib, io, json, runpy\n"
        f"heavy, argv = {HEAVY!r}, json.loads(sys.argv[1])\n"
        "sys.argv = ['markovgames', *argv]\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        runpy.run_module('markovgames', run_name='__main__')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps([m for m in sys.modules if m in heavy or m.split('.')[0] in heavy]), "
        "json.dumps(sorted(m for m in sys.modules if m.startswith('markovgames.cli._'))))\n"
    )
    import subprocess

    for argv in LIGHT:
        out = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        heavy, modules = (json.loads(part) for part in out.stdout.split(" ", 1))
        assert heavy == [], (argv, heavy)
        if argv[0] not in COMMANDS:  # the top level's --help and --version: no command's module either
            assert not {f"markovgames.cli.{module}" for module, _ in COMMANDS.values()} & set(modules), (argv, modules)


def test_import_markovgames_is_lazy():
    code = (
        "import sys, markovgames\n"
        "before = [m for m in ('numpy', 'jax', 'markovgames.games', 'importlib.metadata') if m in sys.modules]\n"
        "from markovgames import MarkovGame\n"
        "print(before, 'numpy' in sys.modules, MarkovGame is markovgames.games.MarkovGame)"
    )
    assert fresh_python(code) == "[] True True"
    for name in markovgames.__all__:
        assert getattr(markovgames, name) is not None, name
    assert set(markovgames.__all__) <= set(dir(markovgames))
    assert markovgames.GameValidationError is markovgames.games.GameValidationError
    assert markovgames.MarkovGamesError.__module__ == "markovgames._errors"
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        markovgames.nope  # noqa: B018


def test_version_is_the_installed_distributions(tmp_path, monkeypatch):
    try:
        expected = importlib.metadata.version("markovgames")
    except importlib.metadata.PackageNotFoundError:
        expected = "0+unknown"
    assert markovgames.__version__ == _version.installed_version() == expected
    # A directory on sys.path with a dist-info: read directly, as importlib.metadata reads it.
    info = tmp_path / "site" / "MarkovGames-9.8.7.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: markovgames\nVersion: 9.8.7\n\nVersion: 0\n")
    (tmp_path / "site" / "other-1.0.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "nowhere"), str(tmp_path / "site")])
    importlib.invalidate_caches()
    assert _version._dist_info_version() == "9.8.7" == importlib.metadata.version("markovgames")
    # A dist-info without the header: importlib.metadata decides.
    (info / "METADATA").write_text("Name: markovgames\n")
    assert _version._dist_info_version() is None
    # An .egg-info directory first on the path (an editable install's, in src/): its PKG-INFO, as
    # importlib.metadata reads it; an .egg-info file is left to importlib.metadata.
    egg = tmp_path / "src" / "markovgames.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.4\nName: markovgames\nVersion: 1.2.3\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "src"), str(tmp_path / "site")])
    importlib.invalidate_caches()
    assert _version._dist_info_version() == "1.2.3" == importlib.metadata.version("markovgames")
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / "markovgames.egg-info").write_text("Metadata-Version: 2.4\nName: markovgames\nVersion: 4.5.6\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "file")])
    assert _version._dist_info_version() is None
    monkeypatch.setattr(sys, "path", [str(tmp_path / "empty")])
    importlib.invalidate_caches()
    assert _version.installed_version() == "0+unknown"


def test_the_parsers_constants_are_the_librarys():
    from markovgames._dtypes import DTYPES
    from markovgames.cli import _defaults
    from markovgames.dynamics import BANDIT_RATES, VLEARNING_ALGORITHMS
    from markovgames.evaluation import DEFAULT_MAX_WORK
    from markovgames.experiments.sweeps._config import SweepConfig
    from markovgames.experiments.sweeps._summary import METRICS
    from markovgames.games import DEFAULT_MAX_FILE_BYTES, GAME_FILE_SUFFIXES, MAX_GAME_ENTRIES, REWARD_DISTRIBUTIONS

    assert _defaults.DTYPE_NAMES == tuple(sorted(DTYPES))
    assert _defaults.REWARD_DISTRIBUTIONS == REWARD_DISTRIBUTIONS
    assert _defaults.MAX_GAME_ENTRIES == MAX_GAME_ENTRIES
    assert _defaults.DEFAULT_MAX_FILE_BYTES == DEFAULT_MAX_FILE_BYTES
    assert _defaults.GAME_FILE_SUFFIXES == GAME_FILE_SUFFIXES
    assert _defaults.DEFAULT_MAX_WORK == DEFAULT_MAX_WORK
    assert _defaults.SWEEP_CONFIG_KEYS == tuple(SweepConfig.model_fields)
    assert _defaults.VLEARNING_ALGORITHMS == VLEARNING_ALGORITHMS
    assert _defaults.BANDIT_RATES == BANDIT_RATES
    assert _defaults.METRICS == METRICS


def _help(parser: argparse.ArgumentParser, path: list[str]) -> str:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser.format_help()


def test_a_command_line_builds_only_its_commands_parser():
    full = build_parser()
    for argv in LIGHT:
        path = [a for a in argv if not a.startswith("-")]
        assert _help(build_parser(argv), path) == _help(full, path), argv
    only_run = build_parser(["--debug", "run", "--game", "paper"])
    sub = next(a for a in only_run._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS) == list(HELP)
    assert len(sub.choices["run"]._actions) > 10 and len(sub.choices["evaluate"]._actions) == 1  # only --help
    assert [c.help for c in sub._choices_actions] == list(HELP.values())
