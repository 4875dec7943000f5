"""A user's own learner: the shipped example, the how-to that walks through it, file and module
references, and a plugin package registered through the entry-point group."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import beyond_default_in_full, cli_in_process, commands_in_one_child, make_random_game
from markovgames.dynamics import get_algorithm, registered, run, run_batch
from markovgames.games import paper_game

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "custom_learner.py"
HOWTO = ROOT / "docs" / "howto-custom-learner.md"


# The stage update in the full mode: the loop takes a user's learner as it takes a built-in one,
# and the guide's commands (test_the_howto_runs_as_written) run the example's LEARNER+stage.
@pytest.mark.parametrize("update", beyond_default_in_full(["smooth", "stage"], {"smooth"}))
def test_the_example_equals_the_builtin_hedge(update):
    # Tolerance 1e-12 is the contract: the built-in sums over the actions slice by slice, so the two
    # round differently (on the paper's game, T = 10^4: 8.4e-15 in the values, 6.6e-13 in the strategies).
    game = make_random_game(2, 2, 3, 2, (3, 2))
    reference = f"{EXAMPLE}:ALGORITHM" if update == "smooth" else f"{EXAMPLE}:LEARNER+stage"
    mine = run(game, reference, T=2000, eta=0.3)
    builtin = run(game, f"hedge+{update}", T=2000, eta=0.3)
    assert mine.algorithm == f"my-hedge+{update}" and mine.spec.source_sha256 is not None
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(mine, field), getattr(builtin, field), rtol=0, atol=1e-12)
    for a, b in zip(mine.policies, builtin.policies, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    batch = run_batch(game, reference, T=300, etas=[0.1, 0.4], checkpoints=[1, 300])
    same = run_batch(game, f"hedge+{update}", T=300, etas=[0.1, 0.4], checkpoints=[1, 300])
    np.testing.assert_allclose(batch.value, same.value, rtol=0, atol=1e-12)


def test_a_file_loads_once_and_its_content_is_its_identity(tmp_path):
    copy = tmp_path / "mine.py"
    shutil.copy(EXAMPLE, copy)
    first, again = get_algorithm(f"{copy}:ALGORITHM"), get_algorithm(f"{copy}:ALGORITHM")
    assert first.learner is again.learner  # one module object: one compilation
    copy.write_text(copy.read_text() + "\n# edited\n")
    edited = get_algorithm(f"{copy}:ALGORITHM")
    assert edited.identity != first.identity and edited.name == first.name


def test_the_howto_runs_as_written(tmp_path, monkeypatch, capsys):
    """Every Python block of the guide, in order in one namespace; then its shell commands (in this
    process: the loops the Python blocks compiled serve them)."""
    text = HOWTO.read_text()
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(ROOT)  # the guide's paths are relative to the repository
    try:
        for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
            exec(compile(block, str(HOWTO), "exec"), namespace)  # noqa: S102 - the guide's own code
    finally:
        os.chdir(cwd)
    assert namespace["ALGORITHM"].composition == "my-hedge+smooth"
    assert namespace["result"].certified_cce_gap[-1] < 0.01
    commands = [
        line.split("#")[0].split()
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)
        for line in block.strip().splitlines()
    ]
    (tmp_path / "examples").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "examples" / EXAMPLE.name)
    for command in commands:
        assert command[0] == "markovgames", command
        proc = cli_in_process(command[1:] + ["--quiet"], tmp_path, monkeypatch, capsys)
        assert proc.returncode == 0, (command, proc.stderr)
    mine = json.loads((tmp_path / "runs/mine/metrics.json").read_text())
    builtin = json.loads((tmp_path / "runs/builtin/metrics.json").read_text())
    certified = json.loads((tmp_path / "runs/mine-certified/metrics.json").read_text())
    assert mine["algorithm"] == "my-hedge+smooth" and mine["algorithm_source"]["sha256"]
    for a, b, c in zip(mine["checkpoints"], builtin["checkpoints"], certified["checkpoints"], strict=True):
        for key in ("value", "certified_ce_bound", "certified_cce_bound"):
            np.testing.assert_allclose(a[key], b[key], rtol=0, atol=1e-12)
            np.testing.assert_allclose(a[key], c[key], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "source, reference, message",
    [
        (None, "missing.py:ALGORITHM", "no such file missing.py"),
        ("X = 1\n", "mine.py:ALGORITHM", "has no attribute 'ALGORITHM'; it defines no Algorithm or LearnerSpec"),
        ("ALGORITHM = 1\n", "mine.py:ALGORITHM", "a int is not a markovgames.dynamics.Algorithm"),
        ("def broken(:\n", "mine.py:ALGORITHM", "loading mine.py failed: line 1: SyntaxError"),
        ("raise RuntimeError('boom')\n", "mine.py:ALGORITHM", "loading mine.py failed: line 1: RuntimeError: boom"),
        (EXAMPLE.read_text(), "mine.py:LEARNER", "'my-hedge' is a learner; add the value update: mine.py:LEARNER+smooth"),
        (EXAMPLE.read_text(), "mine.py:ALGORITHM+foo", "unknown value update 'foo'"),
        (None, "no_such_package_xyz.module:NAME", "no module named 'no_such_package_xyz' (is the package installed?)"),
    ],
)
# In this process: a user's file is loaded as a module of its own name (by its digest), so it
# leaves nothing behind that another test sees.
def test_a_bad_reference_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, source, reference, message):
    if source is not None:
        (tmp_path / "mine.py").write_text(source)
    args = ["run", "--game", "paper", "--algorithm", reference, "-T", "10", "--out", "out"]
    proc = cli_in_process(args, tmp_path, monkeypatch, capsys)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("markovgames: error: --algorithm: ") and len(proc.stderr.splitlines()) == 1
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_names_on_the_command_line_and_in_a_sweep(tmp_path, monkeypatch, capsys):
    proc = cli_in_process(
        ["run", "--game", "paper", "--algorithm", "rm_plus+smooth", "-T", "10", "--out", "out"], tmp_path, monkeypatch, capsys
    )
    assert proc.returncode == 2 and "unknown learner 'rm_plus' (did you mean 'rm-plus'?); choose one of: hedge" in proc.stderr
    (tmp_path / "sweep.toml").write_text('T = 10\ngames = ["paper"]\nalgorithms = ["hedge+smooth", "hedge+fast"]\netas = [0.2]\n')
    proc = cli_in_process(["sweep", "sweep.toml", "--out", "sw"], tmp_path, monkeypatch, capsys)
    assert proc.returncode == 2, proc.stderr
    assert (
        "algorithms[1]" in proc.stderr
        and "unknown value update 'fast'; choose one of: smooth, smooth-uniform, smooth-linear, stage" in proc.stderr
    )
    assert not (tmp_path / "sw").exists()


def test_a_sweep_runs_a_users_learner_from_the_configurations_directory(tmp_path, monkeypatch, capsys):
    config_dir = tmp_path / "study"
    config_dir.mkdir()
    shutil.copy(EXAMPLE, config_dir / "mine.py")
    (config_dir / "sweep.toml").write_text(
        'T = 200\ngames = ["paper"]\nalgorithms = ["hedge+smooth", "mine.py:ALGORITHM"]\netas = [0.2]\n'
    )
    # Inline (one worker): tests/test_untrusted_inputs.py runs a user's learner in a sweep's worker processes.
    proc = cli_in_process(["sweep", "study/sweep.toml", "--out", "sw", "--workers", "1"], tmp_path, monkeypatch, capsys)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(p.read_text()) for p in (tmp_path / "sw" / "runs").glob("*.json")]
    by_name = {r["algorithm"]: r for r in rows}
    assert set(by_name) == {"hedge+smooth", "mine.py:ALGORITHM"}
    assert "algorithm_sha256" in by_name["mine.py:ALGORITHM"]["spec"]
    assert str(tmp_path) not in json.dumps(by_name["mine.py:ALGORITHM"]["spec"])  # no machine path in run ids
    for a, b in zip(by_name["hedge+smooth"]["records"], by_name["mine.py:ALGORITHM"]["records"], strict=True):
        np.testing.assert_allclose(a["value"], b["value"], rtol=0, atol=1e-12)


PLUGIN = """
from markovgames.dynamics import Algorithm
from markovgames.learners import LearnerSpec, optimistic_hedge

LEARNER = LearnerSpec("plugin-hedge", optimistic_hedge, description="Hedge from a plugin", citation="a test")
ALGORITHM = Algorithm(LEARNER, "stage", name="plugin_stage", description="plugin-hedge with stages")
WRONG = Algorithm(LEARNER, "smooth", name="another_name")
"""


_PLUGIN_ENTRY_POINTS = """\
plugin-hedge = "mg_plugin_demo:LEARNER"
plugin_stage = "mg_plugin_demo:ALGORITHM"
mismatched = "mg_plugin_demo:WRONG"
missing = "mg_plugin_demo:NOT_THERE"
"""


def _install_by_pip(package: Path, site: Path) -> None:
    """The package as pip installs it from a ``pyproject.toml`` with the group as docs/howto-custom-learner.md writes it."""
    (package / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "mg-plugin-demo"
        version = "0.0.1"

        [project.entry-points."markovgames.algorithms"]
        """)
        + _PLUGIN_ENTRY_POINTS
    )
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(package),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr


def _install_by_hand(package: Path, site: Path) -> None:
    """The files an installer writes (the package and its ``.dist-info`` with ``entry_points.txt``,
    the format of the Python packaging specifications), without running one: what
    ``importlib.metadata`` reads, in a fraction of pip's time."""
    shutil.copytree(package / "mg_plugin_demo", site / "mg_plugin_demo")
    info = site / "mg_plugin_demo-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mg-plugin-demo\nVersion: 0.0.1\n")
    (info / "entry_points.txt").write_text("[markovgames.algorithms]\n" + _PLUGIN_ENTRY_POINTS.replace('"', ""))
    (info / "RECORD").write_text("")


# By default the distribution's files are written by hand; pip builds and installs it in the full mode.
@pytest.mark.parametrize("install", beyond_default_in_full(["by-hand", "pip"], {"by-hand"}))
def test_a_plugin_package_registers_its_learner_and_algorithm(install, tmp_path, monkeypatch):
    """A package installed (into a temporary site directory) with entry points in the group
    ``markovgames.algorithms``: listed, runnable by name, and a broken entry listed with its reason
    (the four commands in one child process, which sees the site directory)."""
    package = tmp_path / "src_pkg"
    (package / "mg_plugin_demo").mkdir(parents=True)
    (package / "mg_plugin_demo" / "__init__.py").write_text(PLUGIN)
    site = tmp_path / "site"
    {"by-hand": _install_by_hand, "pip": _install_by_pip}[install](package, site)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    names = ("plugin_stage", "plugin-hedge+stage", "bm-plugin-hedge+smooth")
    listing, *runs = commands_in_one_child(
        [(tmp_path, ["algorithms", "list"])]
        + [(tmp_path, ["run", "--game", "paper", "--algorithm", n, "-T", "50", "--out", f"out-{n}", "--quiet"]) for n in names]
    )
    assert listing.returncode == 0, listing.stderr
    assert re.search(r"plugin-hedge\s+external regret\s+Hedge from a plugin \[a test\] \(installed\)", listing.stdout)
    assert re.search(
        r"plugin_stage\s+= plugin-hedge\+stage\s+plugin-hedge with stages \[mg_plugin_demo:ALGORITHM \(mg-plugin-demo 0.0.1\)\]",
        listing.stdout,
    )
    assert (
        "mismatched (mg-plugin-demo): not loaded: mg_plugin_demo:WRONG is named 'another_name', not 'mismatched'"
        in listing.stdout
    )
    assert "missing (mg-plugin-demo): not loaded: failed to load mg_plugin_demo:NOT_THERE" in listing.stdout
    for name, proc in zip(names, runs, strict=True):
        assert proc.returncode == 0, (name, proc.stderr)
    a = json.loads((tmp_path / "out-plugin_stage" / "metrics.json").read_text())
    b = json.loads((tmp_path / "out-plugin-hedge+stage" / "metrics.json").read_text())
    c = run(paper_game(), "hedge+stage", T=50, eta=0.2)
    assert a["checkpoints"][-1]["value"] == b["checkpoints"][-1]["value"] == list(c.value[-1])
    assert json.loads((tmp_path / "out-bm-plugin-hedge+smooth" / "metrics.json").read_text())["concept"] == "ce"
    assert "plugin_stage" not in registered().algorithms  # this process never saw the package
