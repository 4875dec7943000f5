"""Every bad input gets a clear answer: the catalogue of ``docs/errors.md``, case by case.

Each case writes its inputs into an empty working directory, runs the command line there (with
relative paths, as a user would) and checks the contract of ``markovgames.cli``:

* exit code 2;
* exactly one line on stderr, starting with ``markovgames: error:``, that names the file (or
  option), the field and the index or value at fault (the case's ``expect`` substrings);
* no traceback;
* nothing written: the working directory holds exactly what it held before (no output
  directory, no staging directory, no partial or temporary file).

The cases are in one file per family, in the order of ``docs/errors.md``: game files
(``test_bad_input_games.py``), ``run`` (``test_bad_input_runs.py``), ``sweep``
(``test_bad_input_sweeps.py``), ``evaluate`` (``test_bad_input_evaluate.py``), and the other
commands and any command's arguments (``test_bad_input_commands.py``); ``bad_input.py`` has what
they share. This file checks the catalogue as a whole.

The same catalogue is the table in ``docs/errors.md``; :func:`test_every_case_is_documented`
keeps the two in step. ``python tests/test_bad_input_catalogue.py`` prints the table's rows
from the current messages.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bad_input import RUN, VLEARN, _call, _check_message, _prepare, _snapshot, releasing_held_locks
from conftest import commands_in_one_child, family_member
from markovgames.cli import main
from test_bad_input_commands import CASES as COMMANDS
from test_bad_input_evaluate import CASES as EVALUATE
from test_bad_input_games import CASES as GAMES
from test_bad_input_runs import CASES as RUNS
from test_bad_input_sweeps import CASES as SWEEPS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "errors.md"

#: Every case, in the order of docs/errors.md.
CASES = [*GAMES, *RUNS, *SWEEPS, *EVALUATE, *COMMANDS]


def test_catalogue_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


#: The cases that also run through the console entry point, in a process of their own.
PROCESS_CASES = {c.id: c for c in CASES if c.subprocess}


@pytest.mark.parametrize("case", PROCESS_CASES.values(), ids=lambda c: c.id)
def test_bad_input_as_a_process(case, tmp_path_factory, request):
    """The console entry point itself (the console script's `console_main`) in a process of its own,
    which exits with its status: 2 and one line, without --debug no traceback. (The cases run one
    after the other in one child process, each in its own directory: one interpreter to start.)"""

    def prepare(name: str, workdir: Path):
        _prepare(PROCESS_CASES[name], workdir, request)
        return PROCESS_CASES[name].argv

    def run(commands):
        return commands_in_one_child(commands, console=True, timeout=120)

    with releasing_held_locks():
        workdir, before, proc = family_member(
            "catalogue", list(PROCESS_CASES), prepare, _snapshot, tmp_path_factory, case.id, run
        )
    _check_message(case, proc.returncode, proc.stderr)
    assert _snapshot(workdir) == before


def test_every_case_is_documented():
    """``docs/errors.md`` has one table row per case, with the message's key parts."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            case_id = line.split("`")[1]
            rows[case_id] = line
    missing = [c.id for c in CASES if c.id not in rows]
    assert not missing, f"cases missing from docs/errors.md: {missing}"
    unknown = sorted(set(rows) - {c.id for c in CASES})
    assert not unknown, f"docs/errors.md lists cases the test does not check: {unknown}"
    for case in CASES:
        row = rows[case.id]
        assert "markovgames: error:" in row and "| 2 |" in row, row
        assert row.count("`markovgames: error: ") == case.lines, f"docs/errors.md, {case.id}: not {case.lines} line(s)"
        for needle in case.expect:
            assert needle in row, f"docs/errors.md, {case.id}: {needle!r} not in the example message"


# ---------------------------------------------------------------------------------------
# `python tests/test_bad_input_catalogue.py`: the table rows of docs/errors.md
# ---------------------------------------------------------------------------------------
def _doc_rows() -> None:  # pragma: no cover - a maintenance helper
    import contextlib
    import io
    import tempfile

    finished = finished_vlearn = None
    section = None
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            workdir = Path(tmp) / case.id
            workdir.mkdir()
            if case.needs_run:
                if finished is None:
                    finished = Path(tmp) / "finished"
                    with contextlib.redirect_stdout(io.StringIO()):
                        main(
                            ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--out", str(finished), "--quiet"]
                        )
                shutil.copytree(finished, workdir / "run")
            if case.needs_vlearn:
                if finished_vlearn is None:
                    finished_vlearn = Path(tmp) / "finished_vlearn"
                    with contextlib.redirect_stdout(io.StringIO()):
                        main([*VLEARN, str(finished_vlearn)])
                shutil.copytree(finished_vlearn, workdir / "vl")
            if case.setup is not None:
                case.setup(workdir)
            os.chdir(workdir)
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    code = _call(case.argv)
            finally:
                os.chdir(cwd)
            message = err.getvalue().strip().replace(str(workdir.resolve()) + "/", "").replace(str(workdir) + "/", "")
            message = "`<br>`".join(message.splitlines())  # a message of several lines: one code span each
            if case.section != section:
                section = case.section
                print(f"\n## {section}\n\n| case | what is wrong | command | message | exit |\n|---|---|---|---|---|")
            argv = list(case.argv)
            if argv[-len(RUN) :] == RUN:
                argv[-len(RUN) :] = ["..."]
            command = "markovgames " + " ".join(argv)
            print(f"| `{case.id}` | {case.what} | `{command}` | `{message}` | {code} |")


if __name__ == "__main__":  # pragma: no cover
    _doc_rows()
