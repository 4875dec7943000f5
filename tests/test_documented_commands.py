"""Every command that README.md, docs/ and examples/ document runs as written, at the size written.

The commands are extracted from the pages (``documented_commands.py``), never copied here, so a
newly documented command is run without a change to this file. Each runs in a fresh directory
holding a copy of ``examples/``, after the documented commands that write what it reads (those
before it on its page, or on a page it names as its starting point, `PREREQUISITE_PAGES`). It
must exit with 0, without a traceback, and leave what it says it writes: its ``--out``, the
files it reports with ``wrote PATH``, the files its comment names, and the output block shown
after it.

A command is not run here only by a rule below, each with its reason: `NOT_RUN` (it cannot run
in a test) and `RUN_ELSEWHERE` (another test runs it, with checks of its own). The commands of
`SLOW` (and those that need their output) run in the full mode only.

docs/errors.md's table is documentation of the same kind: its rows for mistakes on the command
line run as written by default, and every row's message is compared with the one printed now
in the full mode.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from documented_commands import ROOT, Command, documented_commands, environment, is_study, missing_output, python_blocks

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


@dataclass(frozen=True)
class Rule:
    """Commands that ``applies`` to, and why they are treated so."""

    name: str
    applies: Callable[[Command], bool]
    reason: str


def _placeholder(word: str) -> bool:
    """A word that stands for the reader's value: ``DIR``, ``FILE``, ``HOST:6379``, ``[--x ...]``."""
    return word.startswith("[") or re.match(r"[A-Z][A-Z0-9_]+(?:\b|$)", word) is not None


NOT_RUN = [
    Rule(
        "installs packages",
        lambda c: c.argv[:1] == ("pip",) or c.argv[:3] == ("python", "-m", "pip"),
        "installs packages from an index over the network, into the environment that runs the tests",
    ),
    Rule(
        "runs the test suite",
        lambda c: c.argv[:3] == ("python", "-m", "pytest"),
        "runs the test suite, or the part of it that the suite runs anyway; the times quoted beside it are measured by hand",
    ),
    Rule(
        "a synopsis",
        lambda c: any(_placeholder(word) for word in c.argv),
        "a synopsis: its capitalised words (DIR, FILE, HOST:6379) and [...] stand for the reader's values",
    ),
    Rule(
        "Ray",
        lambda c: c.option("--executor") == "ray",
        "needs Ray, an optional extra, and with --address a running cluster; tests/test_sweep_ray.py runs the executor",
    ),
    Rule(
        "the reader's own study",
        lambda c: "sweeps/study" in c.inputs,
        "sweeps/study stands for the reader's own sweep across horizons; examples/horizon.py draws the same figure "
        "(run by tests/test_gallery.py)",
    ),
]

RUN_ELSEWHERE = [
    Rule(
        "the gallery's studies",
        is_study,
        "tests/test_gallery.py runs every documented invocation of a study at its size, and checks its output against "
        "the gallery's",
    ),
    Rule(
        "the guide to a custom learner",
        lambda c: c.page == "docs/howto-custom-learner.md",
        "tests/test_custom_learner.py (test_the_howto_runs_as_written) runs the guide's commands in order and compares "
        "their numbers with hedge+smooth's",
    ),
    Rule(
        "the README's random game",
        lambda c: c.page == "README.md" and "my_game.json" in c.argv,
        "tests/test_readme.py runs the README's commands on my_game.json and checks the numbers the README quotes",
    ),
]

#: Slow at their documented size: the full mode only. Measured on a two-core machine, in this
#: process with the suite's compiled programs (the times a user sees are in the docs).
SLOW = [
    Rule("reproduce", lambda c: c.argv[:2] == ("markovgames", "reproduce"), "the paper's Section 5: about 30 s"),
    Rule("sweep", lambda c: c.argv[:2] == ("markovgames", "sweep"), "a sweep of 60 runs or more: 8 s and up"),
    Rule(
        "the medium game",
        lambda c: "medium.npz" in c.inputs,
        "a game of 20 states and 64 joint actions: compiling its smooth_ce loop takes about 18 s, then a run about 10 s "
        "(PJRT_NPROC=1: a process of its own)",
    ),
    Rule(
        "the large game",
        lambda c: c.option("--states") == "10000" or "big.npz" in c.inputs,
        "a game of 10^4 states: a 360 MB file, and runs at a few iterations a second",
    ),
]

#: Pages whose commands start from what another page's commands write, as the page says
#: ("The examples use the run runs/stage of the tutorial").
PREREQUISITE_PAGES = {"docs/howto-evaluate.md": "docs/tutorial.md"}

#: Inputs that stand for the reader's own file, and the repository's file the test uses for it.
READERS_FILES = {"sweep.toml": "examples/sweep.toml"}  # the sweep guide's configuration


def _rule(command: Command, rules: list[Rule]) -> Rule | None:
    return next((rule for rule in rules if rule.applies(command)), None)


def _unique(commands: list[Command]) -> list[Command]:
    """The first of each command documented more than once (the same words, the same environment)."""
    seen: dict[tuple, Command] = {}
    for command in commands:
        seen.setdefault((command.env, command.argv), command)
    return list(seen.values())


ALL = documented_commands()
RUN_HERE = [c for c in _unique(ALL) if _rule(c, NOT_RUN) is None and _rule(c, RUN_ELSEWHERE) is None]


# ---------------------------------------------------------------------------------------
# What a command needs first
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PythonBlock:
    """A page's Python block that writes a file a command reads."""

    page: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page} (its Python block)"


def _writes(command: Command, path: str) -> bool:
    return any(path == out or path.startswith(out + "/") for out in command.outputs)


def _writer(command: Command, path: str) -> Command | PythonBlock:
    """The documented step that writes ``path`` for ``command``: a command before it on its page
    (the last one), or one of the page it starts from, or a Python block of its page."""
    before = [c for c in ALL[: ALL.index(command)] if c.page == command.page]
    if command.page in PREREQUISITE_PAGES:
        before = [c for c in ALL if c.page == PREREQUISITE_PAGES[command.page]] + before
    writers = [c for c in before if _writes(c, path)]
    if writers:
        return writers[-1]
    for block in python_blocks(command.page):
        if re.search(rf"save_game\([^)\n]*[\"']{re.escape(path)}[\"']\)", block):
            return PythonBlock(command.page, block)
    raise AssertionError(
        f"{command.id}: reads {path}, which no documented command before it writes; "
        "add the page it starts from to PREREQUISITE_PAGES, or the file to READERS_FILES"
    )


def plan(command: Command) -> list[Command | PythonBlock]:
    """The steps that ``command`` needs, in order, and then ``command`` itself."""
    steps: list[Command | PythonBlock] = []
    for path in command.inputs:
        if path in READERS_FILES or (path.startswith("examples/") and (ROOT / path).exists()):
            continue
        writer = _writer(command, path)
        for step in plan(writer) if isinstance(writer, Command) else [writer]:
            if step not in steps:
                steps.append(step)
    return [*steps, command]


def is_slow(command: Command) -> bool:
    """Whether ``command``, or a step it needs, is `SLOW`: then it runs in the full mode only."""
    return any(isinstance(step, Command) and _rule(step, SLOW) is not None for step in plan(command))


def _param(command: Command):
    return pytest.param(command, id=command.id, marks=pytest.mark.full if is_slow(command) else ())


# ---------------------------------------------------------------------------------------
# Running one
# ---------------------------------------------------------------------------------------
def _execute(step: Command | PythonBlock, workdir: Path, monkeypatch, capsys) -> tuple[int, str]:
    """Run one step in ``workdir``: its exit code and everything it printed.

    ``markovgames`` runs in this process (as ``markovgames.cli.main``: the suite's compiled
    programs, no start-up) unless it sets environment variables, which the process must see when
    it starts; ``python`` runs this interpreter."""
    monkeypatch.chdir(workdir)
    if isinstance(step, PythonBlock):
        exec(compile(step.code, step.id, "exec"), {"__name__": "__docs__"})  # noqa: S102 - the page's own code
        return 0, ""
    if step.argv[0] == "markovgames" and not step.env:
        from markovgames.cli import main

        capsys.readouterr()
        try:
            code = main(list(step.argv[1:]))
        except SystemExit as exc:  # argparse's own errors
            code = exc.code if isinstance(exc.code, int) else 2
        captured = capsys.readouterr()
        return code, captured.out + captured.err
    program = {"markovgames": [sys.executable, "-m", "markovgames"], "python": [sys.executable]}
    assert step.argv[0] in program, f"{step.id}: no rule for the program {step.argv[0]!r}"
    proc = subprocess.run(
        [*program[step.argv[0]], *step.argv[1:]],
        cwd=workdir,
        env=environment(dict(step.env)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _check(command: Command, code: int, printed: str, workdir: Path) -> None:
    assert code == 0, f"{command.id}: exit code {code}\n{printed}"
    assert "Traceback" not in printed, f"{command.id}:\n{printed}"
    for path in command.outputs:
        assert (workdir / path).exists(), f"{command.id}: wrote no {path}"
    for path in re.findall(r"^wrote (\S+)$", printed, re.M):
        assert (workdir / path).exists(), f"{command.id}: says it wrote {path}, which does not exist"
    # Files the comment beside it names ("# evaluation.json", "# sweeps/example/figures/*.png|pdf").
    for name in re.findall(r"[\w./*-]+\.(?:json|md|png|pdf|npz|parquet|csv)\b", command.comment):
        found = list(workdir.glob(name)) if "/" in name else list(workdir.rglob(name))
        assert found, f"{command.id}: its comment names {name}, which it did not write"
    if command.output and command.first_in_block:
        missing = missing_output(printed, command.output)
        assert not missing, f"{command.id}: the documented output {missing} is not in\n{printed}"


#: The directories that the steps before a command left, by those steps (in this process): the
#: commands that read one sweep do not run it again each.
_PREPARED: dict[tuple[str, ...], Path] = {}


def _key(steps) -> tuple[str, ...]:
    """Steps as what they do: the same command documented on two pages is one step."""
    return tuple(step.text if isinstance(step, Command) else step.id for step in steps)


_NEEDED_BY = Counter(_key(plan(c)[:-1]) for c in RUN_HERE)


@pytest.mark.parametrize("command", [_param(c) for c in RUN_HERE])
def test_documented_command_runs(command, tmp_path, tmp_path_factory, monkeypatch, capsys):
    workdir = tmp_path / "work"
    *before, _ = plan(command)
    key = _key(before)
    if key in _PREPARED:
        shutil.copytree(_PREPARED[key], workdir)
    else:
        workdir.mkdir()
        shutil.copytree(ROOT / "examples", workdir / "examples")
        for name, source in READERS_FILES.items():
            (workdir / name).write_bytes((ROOT / source).read_bytes())
        for step in before:
            code, printed = _execute(step, workdir, monkeypatch, capsys)
            assert code == 0, f"{step.id} (needed by {command.id}): exit code {code}\n{printed}"
        if before and _NEEDED_BY[key] > 1:
            _PREPARED[key] = tmp_path_factory.mktemp("prepared") / "work"
            shutil.copytree(workdir, _PREPARED[key])
    code, printed = _execute(command, workdir, monkeypatch, capsys)
    _check(command, code, printed, workdir)


# ---------------------------------------------------------------------------------------
# The extraction and the rules
# ---------------------------------------------------------------------------------------
def test_every_documented_command_is_run_or_has_a_rule():
    """The extraction finds the commands of every kind of source, and each rule still applies to
    a documented command (a rule that no longer does is removed, not kept as a silent skip)."""
    pages = {c.page for c in ALL}
    assert {"README.md", "docs/gallery.md", "docs/tutorial.md", "examples/sweep.toml", "examples/horizon.py"} <= pages
    assert any(c.argv[:2] == ("markovgames", "reproduce") for c in RUN_HERE)
    for rule in NOT_RUN + RUN_ELSEWHERE + SLOW:
        assert any(rule.applies(c) for c in ALL), f"the rule {rule.name!r} applies to no documented command"
    for command in ALL:
        assert command.argv[0] in ("markovgames", "python", "pip"), f"{command.id}: a program without a rule"


# ---------------------------------------------------------------------------------------
# The error messages that docs/errors.md shows
# ---------------------------------------------------------------------------------------
ERRORS = ROOT / "docs" / "errors.md"
#: A row: its case, command, message (several lines as code spans joined by ``<br>``) and exit code.
_ROW = re.compile(
    r"^\| `([\w-]+)` \| .*? \| `(markovgames [^`]*)` \| `(markovgames: error: [^`]*(?:`<br>`markovgames: error: [^`]*)*)` \| (\d+) \|$",
    re.M,
)


def _rows(section: str) -> list[tuple[str, str, str, int]]:
    text = ERRORS.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    return [(i, c, m, int(e)) for i, c, m, e in _ROW.findall(text[start : end if end > 0 else None])]


@pytest.mark.parametrize("case, command, message, exit_code", [pytest.param(*row, id=row[0]) for row in _rows("Any command")])
def test_errors_page_shows_what_a_command_line_mistake_prints(case, command, message, exit_code, tmp_path):
    """The rows of "Any command" need no input file: each command, run as written (by bash, which
    reads the ``$'...'`` quoting), prints exactly the row's message and exits with its code."""
    proc = subprocess.run(
        ["bash", "-c", command.replace("markovgames ", f"{sys.executable} -m markovgames ", 1)],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stderr.strip() == message and proc.returncode == exit_code, (case, proc.returncode, proc.stderr)


@pytest.mark.full
def test_errors_page_shows_every_message_as_printed_now():
    """Every row of docs/errors.md shows the message its case prints now, word for word: the
    catalogue's own printer (``python tests/test_bad_input_catalogue.py``, which runs every case)
    against the page (the catalogue's test checks only each message's key parts)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "test_bad_input_catalogue.py")],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    printed = {}
    for row in re.split(r"\n(?=\| `)", proc.stdout):  # a row's command may hold a line break
        found = (
            re.match(r"\| `([\w-]+)` \|", row),
            re.search(r"\| `(markovgames: error: [^`]*(?:`<br>`markovgames: error: [^`]*)*)` \| \d+ \|$", row, re.M),
        )
        if found[0] and found[1]:
            printed[found[0].group(1)] = found[1].group(1)
    documented = {case: message for case, _, message, _ in _ROW.findall(ERRORS.read_text(encoding="utf-8"))}
    assert set(printed) == set(documented)
    stale = {case: printed[case] for case in documented if printed[case] != documented[case]}
    assert not stale, f"docs/errors.md shows other messages than these cases print now: {stale}"
