"""Signals are answered promptly: Ctrl-C and SIGTERM do not wait for a compiled chunk to end.

A chunk of a slow learner (here about 10 ms an iteration, so that a chunk of 25,000 iterations
would take minutes) used to hold the command until it ended: Python handles a signal only
between bytecodes of the main thread, and the main thread was inside XLA. The command now waits
for compiled code on a helper thread (`markovgames._waiting`), so the handler runs at once, the
clean-up follows and the process exits. A run without saved state says how to make one; a
``--resume`` with nothing to resume says so instead of starting over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_in_process

SLOW_LEARNER = """
import jax
import jax.numpy as jnp
from markovgames.learners import HEDGE, Learner, LearnerSpec


def build(axis):
    base = HEDGE.build(axis)

    def play(state, prediction, eta, decay):
        x, state = base.play(state, prediction, eta, decay)
        # Slow on purpose: a million dependent multiplications per play, then nothing changed.
        spin = jax.lax.fori_loop(0, 10**6, lambda i, v: v * 1.0000001, jnp.sum(x))
        return x + 0.0 * spin, state

    return Learner(base.init, play, base.observe)


LEARNER = LearnerSpec("slow", build)
"""


def _start(args, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "markovgames", *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


# SIGTERM in the full mode: by default the moment test below answers SIGTERM (exit 143,
# "terminated") during a command's first compilation and a sweep's batch; the waiting helper is
# the same for both signals.
@pytest.mark.parametrize(
    "signum,code,word",
    [(signal.SIGINT, 130, "interrupted"), pytest.param(signal.SIGTERM, 143, "terminated", marks=pytest.mark.full)],
)
def test_a_signal_does_not_wait_for_a_slow_chunk(tmp_path, signum, code, word):
    (tmp_path / "slow.py").write_text(SLOW_LEARNER)
    proc = _start(
        ["run", "--game", "paper", "--algorithm", "slow.py:LEARNER+smooth", "-T", "100000", "--quiet", "--out", "o"], tmp_path
    )
    deadline = time.time() + 120
    while not (tmp_path / ".o.partial").exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    time.sleep(4.0)  # past the compilation (about 2 s here), into a chunk of minutes
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=20)  # the chunk alone would take minutes
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    waited = time.monotonic() - sent
    assert proc.returncode == code, (proc.returncode, err)
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"markovgames: {word}") and "--checkpoint-every" in last, err
    assert not (tmp_path / "o").exists() and not (tmp_path / ".o.partial").exists()
    assert waited < 5  # about 0.03 s measured; the chunk alone would take minutes


def test_a_signal_during_the_wait_raises_in_the_main_thread():
    # The waiting helper itself: a blocking call on its thread, a signal to this process; the
    # handler's exception comes out of the wait long before the call ends.
    from markovgames._waiting import in_background

    if os.name != "posix":
        pytest.skip("POSIX signals")
    previous = signal.signal(signal.SIGUSR1, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        start = time.monotonic()
        timer = __import__("threading").Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            in_background(time.sleep, 30)
        assert time.monotonic() - start < 10
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_in_background_returns_and_raises_what_the_call_does():
    from markovgames._waiting import in_background

    assert in_background(sum, [1, 2, 3]) == 6
    with pytest.raises(ZeroDivisionError):
        in_background(lambda: 1 / 0)


def test_resume_with_nothing_saved_says_so(tmp_path, monkeypatch, capsys):
    args = ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--resume", "--out", "o", "--quiet"]
    proc = cli_in_process(args, tmp_path, monkeypatch, capsys)
    assert proc.returncode == 2 and "--resume: o: there is no saved state to continue" in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


# NumPy in the full mode: by default the signal comes while the command line is imported (its
# signals held) and while JAX, imported after NumPy, is (the handlers installed).
@pytest.mark.parametrize(
    "module", ["markovgames.cli._signals", "markovgames.cli._main", pytest.param("numpy", marks=pytest.mark.full), "jax"]
)
def test_ctrl_c_while_the_command_is_still_importing(tmp_path, module):
    """Ctrl-C while Python imports the command line, the library, NumPy or JAX (before and after
    the command's handlers are installed): the same one line and exit status 130, never a
    traceback. The signal is sent when ``-X importtime`` reports that ``module`` was imported, so
    the moment does not depend on the machine's speed. (Before the first of them there remain the
    interpreter's own start and ``runpy``'s lookup of ``markovgames.__main__``, which no Python code
    of ours can answer; the lazy package import keeps them to milliseconds.)"""
    env = {**os.environ, "MARKOVGAMES_CACHE_DIR": "off"}
    argv = [sys.executable, "-X", "importtime", "-m", "markovgames", "run", "--game", "paper", "--algorithm", "smooth_ce"]
    argv += ["-T", "1e6", "--out", "o"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # "import time: self | cumulative | name"
        seen.append(line)
        if line.rsplit("|", 1)[-1].strip() == module:
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    err = "".join(seen) + rest
    ours = [line for line in err.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 130, (proc.returncode, ours)
    assert "Traceback" not in err and ours and ours[-1].startswith("markovgames: interrupted"), ours
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- a signal at any moment
#: The commands, each long enough that a signal within its first two seconds finds it running.
MOMENT_COMMANDS = {
    "run": ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "20000000", "--no-trajectory", "--quiet", "--out", "o"],
    "vlearn": ["vlearn", "paper", "--algorithm", "cce-v", "--episodes", "300000", "--quiet", "--out", "o"],
    "sweep": ["sweep", "long.toml", "--out", "sw", "--quiet"],
    "evaluate": ["evaluate", "r", "--exact", "--quiet"],
}
#: 30 moments spread over the first two seconds of a command, counted from when its process holds
#: its signals (the full mode sends a signal at each of them, SIGINT and SIGTERM in turn); by
#: default one per command, different for each command and both signals twice, so that together
#: they cover the checks, the first compilation and the work (the imports: the test above).
MOMENTS = [round(0.05 + k * 1.95 / 29, 3) for k in range(30)]
DEFAULT_MOMENTS = {"run": {17}, "vlearn": {8}, "sweep": {29}, "evaluate": {20}}
MOMENT_CASES = [
    pytest.param(
        command,
        MOMENTS[k],
        signal.SIGINT if k % 2 == 0 else signal.SIGTERM,
        marks=() if k in DEFAULT_MOMENTS[command] else pytest.mark.full,
        id=f"{command}-{MOMENTS[k]}s-{'SIGINT' if k % 2 == 0 else 'SIGTERM'}",
    )
    for command in MOMENT_COMMANDS
    for k in range(len(MOMENTS))
]


def _signal_masks(pid: int) -> tuple[int, int]:
    """The process's blocked and caught signals (``SigBlk``, ``SigCgt`` of ``/proc/PID/status``)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["SigBlk"], 16), int(fields["SigCgt"], 16)


def _wait_until_signals_are_ours(proc: subprocess.Popen) -> None:
    """Wait until the process has blocked SIGINT and SIGTERM (``python -m markovgames``'s first
    lines) or installed its handlers for them: the command's time zero. Before it there is only
    the interpreter's own start, which no Python code can answer (see the test above)."""
    both = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            blocked, caught = _signal_masks(proc.pid)
        except (OSError, KeyError, ValueError):  # the process is starting or gone
            blocked = caught = 0
        if blocked & both == both or caught & both == both:
            return
        time.sleep(0.002)
    raise AssertionError(f"the command never took its signals (exit {proc.poll()})")


@pytest.fixture(scope="module")
def finished_for_exact(tmp_path_factory) -> Path:
    """A finished run whose exact evaluation takes several seconds, well past the two seconds the
    signals are sent in (T = 3,000 on a random game with H = 6, S = 3, A = 3x3: about 6 s; the
    paper's game is evaluated in about a second, which a signal at 1.4 s could miss)."""
    from markovgames.cli import main

    root = tmp_path_factory.mktemp("exact")
    game = root / "g.json"
    assert (
        main(
            [
                "games",
                "random",
                "--players",
                "2",
                "--states",
                "3",
                "--actions",
                "3",
                "--horizon",
                "6",
                "--seed",
                "1",
                "--out",
                str(game),
            ]
        )
        == 0
    )
    path = root / "r"
    assert main(["run", "--game", str(game), "--algorithm", "smooth_ce", "-T", "3000", "--out", str(path), "--quiet"]) == 0
    return path


@pytest.mark.parametrize(("command", "moment", "signum"), MOMENT_CASES)
def test_a_signal_at_any_moment_is_one_line_and_its_exit_status(tmp_path, request, command, moment, signum):
    """Ctrl-C or SIGTERM at any moment of a command's first two seconds (its imports, its checks,
    its first compilation, while JAX's garbage-collection callback runs): exit 130 or 143 and one
    line, never a traceback nor "Exception ignored" (the handler raises nothing where Python
    would drop its exception: `markovgames.cli._signals`)."""
    import shutil

    if command == "evaluate":
        shutil.copytree(request.getfixturevalue("finished_for_exact"), tmp_path / "r")
    (tmp_path / "long.toml").write_text('T = 10000000\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\ncheckpoints = "decades"\n')
    proc = _start(MOMENT_COMMANDS[command], tmp_path)
    _wait_until_signals_are_ours(proc)
    time.sleep(moment)
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    # A sweep's worker stopped mid-batch can leave a semaphore with multiprocessing's resource
    # tracker (a process of its own, sharing stderr), which warns after we exit: Python's words.
    lines = [line for line in err.splitlines() if "resource_tracker" not in line and "warnings.warn(" not in line]
    word, code = ("interrupted", 130) if signum == signal.SIGINT else ("terminated", 143)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert proc.returncode == code, (proc.returncode, err)
    assert len(lines) == 1 and lines[0].startswith(f"markovgames: {word}"), err
