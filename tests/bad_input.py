"""The bad-input catalogue's shared pieces: `Case`, the builders that several families of cases
use, and the check that runs a case (``tests/test_bad_input_*.py``; the contract it checks is in
``tests/test_bad_input_catalogue.py``).
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from markovgames.cli import main
from markovgames.games import game_to_dict, paper_game

#: A user's learner (Hedge, with what ``play`` returns written in place of PLAYED; ``x`` is Hedge's strategy).
LEARNER_FILE = b"""from markovgames.learners import HEDGE, Learner, LearnerSpec

def build(axis):
    base = HEDGE.build(axis)

    def play(state, prediction, eta, decay):
        x, state = base.play(state, prediction, eta, decay)
        return PLAYED, state

    return Learner(base.init, play, base.observe)

LEARNER = LearnerSpec("mine", build)
"""
#: The paper's game as a dict: rewards[h][i][s][a0][a1], transitions[h][s][a0][a1][s'];
#: N = H = S = 2, A = (2, 2).
BASE_GAME = game_to_dict(paper_game())

#: The same game with sparse transitions: transition_successors / transition_probabilities
#: [h][s][a0][a1][k], K = 2.
SPARSE_GAME = game_to_dict(paper_game().to_sparse())

RUN = ["--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--quiet"]
#: The finished V-learning run of the cases with ``needs_vlearn`` (``markovgames vlearn ... --out PATH``).
VLEARN = ["vlearn", "paper", "--algorithm", "cce-v", "--episodes", "20", "--quiet", "--out"]


@dataclass(frozen=True)
class Case:
    """One bad input: what is wrong, how to make it, the command, what the message must name."""

    id: str
    section: str
    what: str
    setup: Callable[[Path], None] | None
    argv: tuple[str, ...]
    expect: tuple[str, ...]
    needs_run: bool = False  # the working directory gets a finished run in ./run
    needs_vlearn: bool = False  # the working directory gets a finished V-learning run in ./vl
    subprocess: bool = False  # also run as a real process (exit status, stderr)
    #: The lines of the message: one, or one per problem where an input has several (a sweep
    #: configuration with two bad entries), each naming its key.
    lines: int = 1


# ---------------------------------------------------------------------------------------
# builders
# ---------------------------------------------------------------------------------------
def _write_game(name: str, mutate: Callable[[dict], object] | None = None, *, text: str | None = None, sparse: bool = False):
    def setup(d: Path) -> None:
        if text is not None:
            (d / name).write_text(text)
            return
        data = copy.deepcopy(SPARSE_GAME if sparse else BASE_GAME)
        if mutate is not None:
            mutate(data)
        # json writes float('nan') as NaN and float('inf') as Infinity, as a careless writer would.
        (d / name).write_text(json.dumps(data))

    return setup


def _set(path: tuple, value):
    def mutate(data: dict) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _write_bytes(name: str, payload: bytes):
    def setup(d: Path) -> None:
        (d / name).write_bytes(payload)

    return setup


def _a_file(d: Path) -> None:
    (d / "afile").write_text("a file, not a directory\n")


def _both(*setups):
    def setup(d: Path) -> None:
        for s in setups:
            s(d)

    return setup


def _another_run(name: str = "out"):
    def setup(d: Path) -> None:
        (d / name).mkdir()
        (d / name / "metrics.json").write_text('{"algorithm": "stage_cce", "T": 1000}\n')

    return setup


def _fifo(name: str):
    return lambda d: os.mkfifo(d / name)


def _foreign_directory(d: Path, name: str = "out") -> None:
    (d / name).mkdir()
    (d / name / "notes.txt").write_text("not a run\n")


def _symlink_to_file(name: str, target: str = "theirs.json"):
    """``name`` a symbolic link to a regular file ``target`` (someone else's file, as it were)."""

    def setup(d: Path) -> None:
        (d / target).write_text("someone else's file\n")
        (d / name).symlink_to(target)

    return setup


#: Lock file descriptors held by a case's setup (another process's lock, as it were); closed
#: after the case by `releasing_held_locks`.
_HELD: list[int] = []


def _busy(name: str):
    """Hold the lock of the directory ``name`` (an flock on ``.NAME.lock``, as a running command would)."""

    def setup(d: Path) -> None:
        from markovgames._lock import MARKER

        fd = os.open(d / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, MARKER)  # a markovgames lock file, as the running command's is
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _HELD.append(fd)

    return setup


def _users_lock_file(name: str):
    """A user's own file that happens to be named ``.NAME.lock`` beside the output ``name`` (not a
    markovgames lock: it must be left as it is)."""

    def setup(d: Path) -> None:
        (d / f".{name}.lock").write_text("my notes on this run\n")

    return setup


@contextlib.contextmanager
def releasing_held_locks():
    """Close the locks a case's setup held (`_busy`) once the case is over, passed or failed."""
    try:
        yield
    finally:
        while _HELD:
            os.close(_HELD.pop())


def _in_run(change: Callable[[Path], None]):
    """Change the finished run copied to ./run (cases with ``needs_run``)."""
    return lambda d: change(d / "run")


# ---------------------------------------------------------------------------------------
# running a case
# ---------------------------------------------------------------------------------------
def _snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ``root``: directories as such, files with their size and modification time."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[(Path(dirpath) / name).relative_to(root).as_posix()] = ("directory",)
        for name in filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[p.relative_to(root).as_posix()] = ("file", st.st_size, st.st_mtime_ns)
    return out


def _call(argv) -> int:
    try:
        return main(list(argv))
    except SystemExit as exc:  # argparse's own errors exit through SystemExit
        return exc.code


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("finished") / "run"
    assert main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20", "--out", str(path), "--quiet"]) == 0
    return path


@pytest.fixture(scope="module")
def finished_vlearn(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("finished") / "vl"
    assert main([*VLEARN, str(path)]) == 0
    return path


def _prepare(case: Case, workdir: Path, request) -> None:
    if case.needs_run:
        shutil.copytree(request.getfixturevalue("finished_run"), workdir / "run")
    if case.needs_vlearn:
        shutil.copytree(request.getfixturevalue("finished_vlearn"), workdir / "vl")
    if case.setup is not None:
        case.setup(workdir)


def _check_message(case: Case, code, err: str) -> str:
    assert code == 2, f"exit code {code!r}, stderr {err!r}"
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == case.lines, f"expected {case.lines} line(s) on stderr, got {lines!r}"
    for line in lines:
        assert line.startswith("markovgames: error: "), line
        # A NumPy scalar's repr (np.float64(0.5)) is noise in a message a user reads.
        assert "np.float" not in line and "np.int" not in line and "np.bool" not in line, line
    text = "\n".join(lines)
    for needle in case.expect:
        assert needle in text, f"{needle!r} not in {text!r}"
    return text


def check_case(case: Case, tmp_path: Path, monkeypatch, capsys, request) -> None:
    """Run ``case`` through `markovgames.cli.main` in an empty working directory and check the
    catalogue's contract: exit code 2, one line naming the fault, nothing written."""
    with releasing_held_locks():
        workdir = tmp_path / "work"
        workdir.mkdir()
        _prepare(case, workdir, request)
        monkeypatch.chdir(workdir)
        before = _snapshot(workdir)
        code = _call(case.argv)
        err = capsys.readouterr().err
        _check_message(case, code, err)
        after = _snapshot(workdir)
        assert after == before, "the command left files behind or changed existing ones"
