"""Hostile input through the command line: special files, resource bombs, two writers, bugs, signals.

Each test tries several members of a family, not one example, and checks the contract of
``docs/errors.md``: exit code 2 and one line ``markovgames: error: ...`` without a traceback for
bad input, nothing written by a refusal, exit 70 and a named traceback file for a bug, 143 for
SIGTERM. Commands that could hang (a FIFO), allocate without bound (``/dev/zero``, a grid of a
billion runs) or race run as child processes with a time limit and a memory limit
(``RLIMIT_AS``), so that a regression fails the test instead of the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import beyond_default_in_full, cli_in_process, commands_in_one_child, family_member, in_this_mode
from markovgames.cli import main
from markovgames.experiments import load_run_directory

#: Address space of a child process: a few times what a small command needs (JAX included), far
#: below what any of the bombs below would take.
MEMORY_LIMIT = 3 * 2**30

PAPER_RUN = ["--game", "paper", "--algorithm", "smooth_ce"]


#: Runs ``python -m markovgames`` after setting its limits: the address space (``RLIMIT_AS``) and
#: optionally the file size (``RLIMIT_FSIZE``; beyond it a write fails with EFBIG, as a full disk
#: fails with ENOSPC, rather than raising SIGXFSZ). A bootstrap rather than ``preexec_fn``, which
#: would run Python code between fork and exec in this multithreaded (JAX) process.
_BOOTSTRAP = (
    "import resource, runpy, signal, sys\n"
    "memory, size = int(sys.argv[1]), int(sys.argv[2])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (memory, memory))\n"
    "if size:\n"
    "    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))\n"
    "sys.argv = ['markovgames', *sys.argv[3:]]\n"
    "runpy.run_module('markovgames', run_name='__main__', alter_sys=True)\n"
)


def _env(*, compilation_cache: bool = True) -> dict[str, str]:
    """The child's environment: the session's compilation cache (conftest.py), unless a test
    needs every start to compile, or limits the size of the files the child may write."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not compilation_cache:
        env["MARKOVGAMES_CACHE_DIR"] = "off"
    return env


def _cli(args, cwd: Path, *, timeout: float = 120, memory: int = MEMORY_LIMIT, file_size: int | None = None, text: bool = True):
    """``markovgames ARGS`` in ``cwd`` under a memory limit; a hang fails after ``timeout`` s."""
    return subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, str(memory), str(file_size or 0), *args],
        cwd=cwd,
        capture_output=True,
        text=text,
        timeout=timeout,
        env=_env(compilation_cache=file_size is None),
    )


def _start(args, cwd: Path, *, compilation_cache: bool = True) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "markovgames", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(compilation_cache=compilation_cache),
    )


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while not path.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None and path.exists(), (
        f"the command ended or never wrote {path}: {proc.stderr.read() if proc.poll() is not None else ''}"
    )


def _family_member(family: str, members, prepare, tmp_path_factory, member: str):
    """``member``'s command as `_cli` runs it (under its memory limit), in a child process with the
    other ``members`` of its ``family`` (`family_member`): its directory, the directory's listing
    before the command, and the command's result."""

    def run(commands):
        return commands_in_one_child(commands, memory=MEMORY_LIMIT)

    return family_member(family, members, prepare, _listing, tmp_path_factory, member, run)


def _one_error_line(proc, *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("markovgames: error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished run (paper game, smooth_ce, T = 20) to copy and damage."""
    path = tmp_path_factory.mktemp("finished") / "run"
    assert main(["run", *PAPER_RUN, "-T", "20", "--out", str(path), "--quiet"]) == 0
    return path


def _copy_run(finished: Path, where: Path) -> Path:
    import shutil

    shutil.copytree(finished, where / "run")
    return where / "run"


# ---------------------------------------------------------------------------------------
# 1. Special files: only regular files are read, with bounded reads
# ---------------------------------------------------------------------------------------
def _sweep_config(text: str = 'T = 20\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\ncheckpoints = [10, 20]\n'):
    return text


SPECIAL_FILES = {
    # name: (make the special file in the working directory, the command, what the message names)
    "game-json-fifo": (
        lambda d: os.mkfifo(d / "g.json"),
        ["run", "--game", "g.json", "--algorithm", "smooth_ce", "-T", "5", "--out", "o"],
        "g.json",
    ),
    "game-npz-fifo": (lambda d: os.mkfifo(d / "g.npz"), ["games", "validate", "g.npz"], "g.npz"),
    "game-npz-dev-zero": (
        lambda d: (d / "g.npz").symlink_to("/dev/zero"),
        ["run", "--game", "g.npz", "--algorithm", "smooth_ce", "-T", "5", "--out", "o"],
        "g.npz",
    ),
    "game-json-dev-urandom": (lambda d: (d / "g.json").symlink_to("/dev/urandom"), ["games", "show", "g.json"], "g.json"),
    "game-json-directory": (
        lambda d: (d / "g.json").mkdir(),
        ["solve", "--game", "g.json", "--concept", "ce", "--out", "o"],
        "g.json",
    ),
    "sweep-config-fifo": (lambda d: os.mkfifo(d / "s.toml"), ["sweep", "s.toml", "--out", "sw"], "s.toml"),
    "sweep-config-dev-zero": (lambda d: (d / "s.toml").symlink_to("/dev/zero"), ["sweep", "s.toml", "--out", "sw"], "s.toml"),
    "sweep-game-file-fifo": (
        lambda d: ((d / "s.toml").write_text(_sweep_config().replace('"paper"', '"g.npz"')), os.mkfifo(d / "g.npz")),
        ["sweep", "s.toml", "--out", "sw"],
        "g.npz",
    ),
    "results-fifo": (
        lambda d: ((d / "sw").mkdir(), os.mkfifo(d / "sw" / "results.parquet")),
        ["summarize", "sw"],
        "results.parquet",
    ),
}


def _special_file(name: str, where: Path) -> list[str]:
    make, args, _ = SPECIAL_FILES[name]
    make(where)
    return args


@pytest.mark.parametrize("member", sorted(SPECIAL_FILES))
def test_special_files_are_refused_unread(tmp_path_factory, finished_run, member):
    where, before, proc = _refusal("special-files", member, tmp_path_factory, finished_run)
    line = _one_error_line(proc, SPECIAL_FILES[member][2])
    assert "not a regular file" in line or "is a directory" in line
    assert _listing(where) == before


RUN_DIRECTORY_FILES = {
    "metrics-fifo": ("metrics.json", lambda p: os.mkfifo(p)),
    "curve-dev-zero": ("curve.npz", lambda p: p.symlink_to("/dev/zero")),
    "game-dev-zero": ("game.json", lambda p: p.symlink_to("/dev/zero")),
    "trajectory-fifo": ("trajectory/policy_0.npy", lambda p: os.mkfifo(p)),
    "trajectory-dev-zero": ("trajectory/policy_1.npy", lambda p: p.symlink_to("/dev/zero")),
}


def _damaged_run(name: str, where: Path, finished_run: Path) -> list[str]:
    relative, make = RUN_DIRECTORY_FILES[name]
    run = _copy_run(finished_run, where)
    (run / relative).unlink()
    make(run / relative)
    return ["evaluate", "run", "--exact"]


@pytest.mark.parametrize("member", sorted(RUN_DIRECTORY_FILES))
def test_special_files_in_a_run_directory_are_refused(tmp_path_factory, finished_run, member):
    where, _, proc = _refusal("run-directory-files", member, tmp_path_factory, finished_run)
    _one_error_line(proc, f"run/{RUN_DIRECTORY_FILES[member][0]}", "not a regular file")
    assert not (where / "run" / "evaluation.json").exists()


def test_special_files_in_a_sweep_directory_are_refused_not_read(tmp_path, monkeypatch, capsys):
    """A resumed sweep reads its run files and manifest: a FIFO in their place is refused at once
    (one line naming it, exit 2), never waited on, and nothing is replaced. (The sweeps that read
    no FIFO run in this process.)"""
    import shutil

    sweep = ["sweep", "s.toml", "--out", "sw", "--workers", "1", "--quiet"]
    (tmp_path / "s.toml").write_text(_sweep_config())
    assert cli_in_process(sweep, tmp_path, monkeypatch, capsys).returncode == 0
    # A copy of the finished sweep per file replaced by a FIFO: a run file, the manifest. (The
    # two resumptions that meet a FIFO run one after the other in one child process.)
    cases = []
    for name in ("run-file", "manifest"):
        where = tmp_path / name
        where.mkdir()
        shutil.copy(tmp_path / "s.toml", where / "s.toml")
        shutil.copytree(tmp_path / "sw", where / "sw")
        special = next((where / "sw" / "runs").glob("*.json")) if name == "run-file" else where / "sw" / "manifest.json"
        kept = special.read_bytes()
        special.unlink()
        os.mkfifo(special)
        cases.append((where, special, kept))
    results = commands_in_one_child([(where, sweep) for where, _, _ in cases], memory=MEMORY_LIMIT, timeout=60)
    for (where, special, kept), proc in zip(cases, results, strict=True):
        _one_error_line(proc, f"sw/{special.relative_to(where / 'sw')}", "not a regular file (a FIFO)")
        assert special.is_fifo()
        special.unlink()
        special.write_bytes(kept)
        assert cli_in_process(sweep, where, monkeypatch, capsys).returncode == 0
        assert json.loads((where / "sw" / "manifest.json").read_text())["runs"]["finished"] == 1


# ---------------------------------------------------------------------------------------
# 2. Resource bombs: every count that sizes memory is checked before anything is allocated
# ---------------------------------------------------------------------------------------
RANDOM = "{random = {players = 2, horizon = 2, states = 2, actions = 2}}"
BOMBS = {
    "sweep-seeds": (f"games = [{RANDOM}]\nseeds = 1000000000\n", ["the grid has 1000000000 runs", "--max-runs = 100000"]),
    "sweep-seeds-unused": ('games = ["paper"]\nseeds = 1000000000\n', ["seeds: 1000000000 is more than --max-runs"]),
    "sweep-etas-times-seeds": (
        f"games = [{RANDOM}]\nseeds = 300\netas = [{', '.join(str(0.001 * k) for k in range(1, 501))}]\n",
        ["the grid has 150000 runs", "300 games", "500 settings"],
    ),
    "sweep-games-list": ("games = [" + ", ".join(['"paper"'] * 200_001) + "]\n", ["the grid has 200001 runs"]),
    "sweep-random-games-memory": (
        "games = [{random = {players = 2, horizon = 1, states = 4096, actions = 64, successors = 1}}]\nseeds = 100000\n",
        ["games[0]", "the grid's random games take", "more than this machine's"],
    ),
    "sweep-checkpoints": (f'games = ["paper"]\ncheckpoints = {list(range(1, 20_001))}\n', ["checkpoints: 20000 checkpoints"]),
}


#: The list of 200,001 games takes seconds to parse (TOML, then the configuration's types) before
#: its refusal: the full mode only (the grid's count is refused by default for the seeds, the
#: learning rates and the random games).
SLOW_BOMBS = {"sweep-games-list"}


def _grid(name: str, where: Path) -> list[str]:
    T = 30_000 if "checkpoints" in name else 20
    (where / "s.toml").write_text(f'T = {T}\nalgorithms = ["smooth_ce"]\n{BOMBS[name][0]}')
    return ["sweep", "s.toml", "--out", "sw"]


GRID_BOMBS = beyond_default_in_full(sorted(BOMBS), set(BOMBS) - SLOW_BOMBS)


@pytest.mark.parametrize("member", GRID_BOMBS)
def test_sweep_grids_are_sized_before_they_are_expanded(tmp_path_factory, finished_run, member):
    where, _, proc = _refusal("grid-bombs", member, tmp_path_factory, finished_run)
    _one_error_line(proc, "s.toml", *BOMBS[member][1])
    assert _listing(where) == {"s.toml"}


def test_max_runs_raises_the_grid_limit(tmp_path, monkeypatch, capsys):
    """(A grid of 4 runs, planned and not run: in this process.)"""
    (tmp_path / "s.toml").write_text(f'T = 20\nalgorithms = ["smooth_ce", "stage_cce"]\ngames = [{RANDOM}]\nseeds = 2\n')
    refused = cli_in_process(["sweep", "s.toml", "--out", "sw", "--dry-run", "--max-runs", "3"], tmp_path, monkeypatch, capsys)
    _one_error_line(refused, "the grid has 4 runs", "--max-runs = 3")
    accepted = cli_in_process(["sweep", "s.toml", "--out", "sw", "--dry-run", "--max-runs", "4"], tmp_path, monkeypatch, capsys)
    assert accepted.returncode == 0 and "4 runs" in accepted.stdout, accepted.stderr


OTHER_BOMBS = {
    # Refused up front (more than this machine's memory); on a larger machine the run would end
    # in MemoryError under the child's limit, also one line naming -T.
    "run-T-memory": (["run", *PAPER_RUN, "-T", "2000000000", "--no-trajectory", "--out", "o"], ["-T:", "2000000000"]),
    "run-checkpoints": (
        ["run", *PAPER_RUN, "-T", "30000", "--checkpoints", ",".join(map(str, range(1, 10_002))), "--out", "o"],
        ["--checkpoints: 10001 checkpoints"],
    ),
    "games-random-entries": (
        [
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "1000000",
            "--actions",
            "10000",
            "--seed",
            "1",
            "--out",
            "g.json",
        ],
        ["rewards: the sizes give", "--max-entries"],
    ),
    "games-random-players": (
        [
            "games",
            "random",
            "--players",
            "70",
            "--horizon",
            "1",
            "--states",
            "1",
            "--actions",
            "1",
            "--seed",
            "1",
            "--out",
            "g.json",
        ],
        ["num_players = 70", "supported maximum of 29"],
    ),
    "games-random-successors": (
        [
            "games",
            "random",
            "--players",
            "1",
            "--horizon",
            "1",
            "--states",
            "100000",
            "--actions",
            "1",
            "--successors",
            "100000",
            "--seed",
            "1",
            "--out",
            "g.json",
        ],
        ["the sizes give 10000000000 entries"],
    ),
}


@pytest.mark.parametrize("member", sorted(OTHER_BOMBS))
def test_other_counts_are_checked_before_allocation(tmp_path_factory, finished_run, member):
    where, _, proc = _refusal("other-bombs", member, tmp_path_factory, finished_run)
    _one_error_line(proc, *OTHER_BOMBS[member][1])
    assert _listing(where) == set()  # nothing at all, not even the lock file


#: The refusals above that run as child processes under the memory limit, by family: all of
#: them in one child (one interpreter and JAX to start, not one per family), each member in a
#: directory of its own.
REFUSALS = {
    "special-files": sorted(SPECIAL_FILES),
    "run-directory-files": sorted(RUN_DIRECTORY_FILES),
    "grid-bombs": in_this_mode(GRID_BOMBS),
    "other-bombs": sorted(OTHER_BOMBS),
}


def _refusal(family: str, member: str, tmp_path_factory, finished_run: Path):
    """``member`` of ``family`` (`REFUSALS`), run with every other refusal in one child
    (`_family_member`): its directory, the directory's listing before the command, the result."""

    def prepare(key: str, where: Path) -> list[str]:
        kind, name = key.split(".", 1)
        if kind == "special-files":
            return _special_file(name, where)
        if kind == "run-directory-files":
            return _damaged_run(name, where, finished_run)
        if kind == "grid-bombs":
            return _grid(name, where)
        return OTHER_BOMBS[name][0]

    members = [f"{kind}.{name}" for kind, names in REFUSALS.items() for name in names]
    return _family_member("refusals", members, prepare, tmp_path_factory, f"{family}.{member}")


@pytest.mark.full
def test_monte_carlo_memory_does_not_grow_with_the_game(tmp_path):
    """Episodes are sampled in batches of bounded memory: with H = 150 and N = 3 an episode keeps
    about 13 kB, so 200,000 episodes in one batch (the library's default batch is 2^18) would take
    2.6 GB, more than the child's 2 GiB."""
    from markovgames.games import random_game, save_game

    save_game(random_game(3, 150, 2, 2, seed_or_rng=4), tmp_path / "long.json")
    assert (
        main(
            [
                "run",
                "--game",
                str(tmp_path / "long.json"),
                "--algorithm",
                "smooth_cce",
                "-T",
                "3",
                "--out",
                str(tmp_path / "run"),
                "--quiet",
            ]
        )
        == 0
    )
    proc = _cli(["evaluate", "run", "--monte-carlo", "200000", "--quiet"], tmp_path, timeout=300, memory=2 * 2**30)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "run" / "evaluation.json").read_text())
    assert report["monte_carlo"]["episodes"] == 200000 and all(np.isfinite(report["monte_carlo"]["value_mean"]))


# ---------------------------------------------------------------------------------------
# 4. One writer per output directory
# ---------------------------------------------------------------------------------------
LONG_T = "20000000"


def _long_run(out: str, *extra: str) -> list[str]:
    return ["run", *PAPER_RUN, "-T", LONG_T, "--no-trajectory", "--quiet", "--out", out, *extra]


def test_a_second_writer_is_refused_and_a_killed_holder_blocks_nobody(tmp_path, finished_run, monkeypatch, capsys):
    """While a run writes into ``out``: another run, a solve, and an evaluation of the directory
    it replaces are refused; once the holder is killed with SIGKILL (no clean-up at all), the lock
    is free again (the kernel released the flock) and the same commands succeed. (The holder is a
    process of its own; the other commands run in this one: a flock excludes any other open of
    the lock file, in whichever process.)"""
    _copy_run(finished_run, tmp_path)
    holder = _start(_long_run("run", "--overwrite"), tmp_path)
    try:
        _wait_for(tmp_path / ".run.partial", holder)
        for args in (
            ["run", *PAPER_RUN, "-T", "10", "--out", "run", "--overwrite", "--quiet"],
            ["solve", "--game", "paper", "--concept", "cce", "--out", "run", "--overwrite", "--quiet"],
            ["evaluate", "run", "--quiet"],
        ):
            _one_error_line(
                cli_in_process(args, tmp_path, monkeypatch, capsys),
                "another markovgames command is writing to this directory",
                ".run.lock",
            )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The holder, killed, cleaned nothing up; its lock file blocks nobody (the next command deletes it).
    assert (tmp_path / ".run.lock").exists() and (tmp_path / ".run.partial").exists()
    assert main(["evaluate", str(tmp_path / "run"), "--quiet"]) == 0  # the old run, untouched
    assert main(["run", *PAPER_RUN, "-T", "10", "--out", str(tmp_path / "run"), "--overwrite", "--quiet"]) == 0
    assert load_run_directory(tmp_path / "run").T == 10 and not (tmp_path / ".run.partial").exists()


def test_two_runs_started_at_once_into_one_directory(tmp_path):
    """The audit's example: two runs of different T into the same --out. One writes, the other
    is refused (by the lock, or by the finished directory); what is left is one consistent run."""
    procs = [
        _start(["run", *PAPER_RUN, "-T", T, "--out", "out", "--quiet"], tmp_path, compilation_cache=False)
        for T in ("3000", "5000")
    ]
    codes = [p.wait(timeout=300) for p in procs]
    errors = [p.stderr.read() for p in procs]
    assert sorted(codes) == [0, 2], (codes, errors)
    refused = errors[codes.index(2)]
    assert refused.startswith("markovgames: error: ") and len(refused.splitlines()) == 1
    stored = load_run_directory(tmp_path / "out")
    assert stored.value.shape[0] == stored.T == stored.policies[0].shape[0]
    assert stored.T == (3000, 5000)[codes.index(0)]


def test_sweeps_and_reproductions_have_one_writer(tmp_path, monkeypatch, capsys):
    """The same for ``sweep`` (resumable directories) and ``reproduce`` (files replaced in place)."""
    (tmp_path / "long.toml").write_text(f'T = {LONG_T}\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\ncheckpoints = "decades"\n')
    (tmp_path / "short.toml").write_text(_sweep_config())
    for holder_args, ready, second, after in (
        (
            ["sweep", "long.toml", "--out", "sw", "--workers", "1", "--quiet"],
            "sw/manifest.json",
            ["sweep", "short.toml", "--out", "sw", "--workers", "1", "--quiet"],
            "sw/results.parquet",
        ),
        (
            ["reproduce", "-T", LONG_T, "--out", "rep", "--no-exact", "--no-baselines", "--quiet"],
            # Its directory, made before its marker: the second command's check before the lock
            # defers to the held lock rather than calling the half-made directory foreign.
            "rep",
            # (-T 20: the programs of the reproductions of the next test, in this process.)
            ["reproduce", "-T", "20", "--out", "rep", "--no-exact", "--no-baselines", "--quiet"],
            "rep/REPORT.md",
        ),
    ):
        holder = _start(holder_args, tmp_path)
        try:
            _wait_for(tmp_path / ready, holder)
            refused = cli_in_process(second, tmp_path, monkeypatch, capsys)
            _one_error_line(refused, "another markovgames command is writing to this directory")
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        proc = cli_in_process(second, tmp_path, monkeypatch, capsys)
        assert proc.returncode == 0 and (tmp_path / after).exists(), proc.stderr


def test_a_reproduction_killed_while_marking_its_directory_blocks_no_later_one(tmp_path, monkeypatch, capsys):
    """A new reproduction directory appears with its marker already inside (renamed into place), so
    a command killed at any moment leaves nothing a later one calls foreign; one killed while
    writing the marker into an existing empty directory leaves only the marker's temporary file,
    which a later reproduction looks past (and a file of any other name is still foreign)."""
    import os

    args = ["reproduce", "-T", "20", "--out", "rep", "--no-exact", "--no-baselines", "--quiet"]
    real_rename = os.rename

    def killed(src, dst):
        raise KeyboardInterrupt  # as if the process were stopped just before its directory appears

    monkeypatch.setattr(os, "rename", killed)
    proc = cli_in_process(args, tmp_path, monkeypatch, capsys)
    assert proc.returncode == 130 and sorted(p.name for p in tmp_path.iterdir()) == [], proc.stderr
    monkeypatch.setattr(os, "rename", real_rename)
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "..markovgames.0123456789ab.tmp").write_text("{")  # a marker half written
    proc = cli_in_process(args, tmp_path, monkeypatch, capsys)
    assert proc.returncode == 0 and (tmp_path / "rep" / "REPORT.md").exists(), proc.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    proc = cli_in_process([*args[:3], "--out", "other", *args[5:]], tmp_path, monkeypatch, capsys)
    assert proc.returncode == 2 and "holds no markovgames reproduction" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------------
# 5. evaluate trusts nothing it reads
# ---------------------------------------------------------------------------------------
def _rows(value: float, where=(slice(None),)) -> np.ndarray:
    """The run's trajectory shape (T = 20, H = S = A_i = 2), uniform rows, ``value`` at ``where``."""
    array = np.full((20, 2, 2, 2), 0.5)
    array[where] = value
    return array


POLICIES = {
    # member: (the array saved as trajectory/policy_0.npy, what the message says)
    "zeros": (np.zeros((20, 2, 2, 2)), "sums to 0.0, not 1"),
    "nan": (_rows(np.nan, (7, 1, 0, 0)), "entry [7][1][0][0] (iteration 8, step 1, state 0, action 0) = nan is not finite"),
    "infinity": (_rows(np.inf, (0, 0, 1, 1)), "= inf is not finite"),
    "negative": (_rows(-0.5, (19, 1, 1, 0)), "entry [19][1][1][0] (iteration 20, step 1, state 1, action 0) = -0.5 is negative"),
    "sum-1.1": (_rows(0.6, (4, 0, 0, 1)), "row [4][0][0] (iteration 5, step 0, state 0) sums to 1.1, not 1"),
    "integers": (np.ones((20, 2, 2, 2), dtype=np.int64), "got dtype int64"),
    "float32-in-a-float64-run": (np.full((20, 2, 2, 2), 0.5, dtype=np.float32), "got dtype float32"),
    "big-endian": (np.full((20, 2, 2, 2), 0.5, dtype=">f8"), "got dtype >f8"),
    "fortran-order": (np.asfortranarray(np.full((20, 2, 2, 2), 0.5)), "in Fortran order"),
    "too-few-actions": (np.full((20, 2, 2, 1), 1.0), "got dtype float64 with shape (20, 2, 2, 1)"),
    "longer-than-T": (np.full((30, 2, 2, 2), 0.5), "with shape (30, 2, 2, 2)"),
}


@pytest.mark.parametrize("member", sorted(POLICIES))
def test_stored_policies_that_are_not_policies_are_refused(tmp_path, finished_run, capsys, member):
    """Each kind of bad trajectory, for exact and for Monte Carlo evaluation: one line naming the
    file and the entry, and no evaluation.json (it once gave exit 0 with NaN or wrong "exact" gaps)."""
    array, needle = POLICIES[member]
    run = _copy_run(finished_run, tmp_path)
    np.save(run / "trajectory" / "policy_0.npy", array)
    for extra in (["--exact"], ["--monte-carlo", "50"], ["-T", "10", "--exact"]):
        if member == "negative" and extra[0] == "-T":
            continue  # the bad row (iteration 20) is not among the first 10: that prefix is fine
        code = main(["evaluate", str(run), "--quiet", *extra])
        err = capsys.readouterr().err
        assert code == 2 and len(err.splitlines()) == 1 and "policy_0.npy" in err and needle in err, (extra, err)
        assert not (run / "evaluation.json").exists()
    if member == "negative":  # rows outside the evaluated prefix are not read, let alone refused
        assert main(["evaluate", str(run), "--quiet", "-T", "10", "--exact"]) == 0


# ---------------------------------------------------------------------------------------
# 6. A bug says it is one; bad input never reaches the user as a traceback
# ---------------------------------------------------------------------------------------
def test_an_internal_error_says_so_and_where_its_traceback_is(tmp_path, monkeypatch, capsys):
    import markovgames.games as games_module  # where 'games validate' finds load_any_game when it runs

    def broken(*args, **kwargs):
        raise ZeroDivisionError("an example bug")

    monkeypatch.setattr(games_module, "load_any_game", broken)
    (tmp_path / "g.json").write_text("{}")
    assert main(["games", "validate", str(tmp_path / "g.json")]) == 70
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0]
    assert lines[0].startswith(
        "markovgames: internal error (a bug, not a problem with the input): ZeroDivisionError: an example bug"
    )
    where = Path(lines[0].split("the traceback is in ")[1].split(";")[0])
    try:
        text = where.read_text()
        assert "Traceback" in text and "ZeroDivisionError: an example bug" in text and "games validate" in text
    finally:
        where.unlink()
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "games", "validate", str(tmp_path / "g.json")])


def test_running_out_of_memory_in_a_sweep_is_one_line(tmp_path, monkeypatch, capsys):
    """A MemoryError (an input within every limit on a machine with less free memory) is exit 2."""
    import markovgames.experiments.sweeps._sweep as sweep

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(sweep, "plan_sweep", no_memory)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(_sweep_config())
    assert main(["sweep", "s.toml", "--out", "sw"]) == 2
    assert capsys.readouterr().err.startswith("markovgames: error: out of memory")
    assert _listing(tmp_path) == {"s.toml"}


DEEP = {
    "config-arrays": ("s.toml", "a = " + "[" * 3000 + "]" * 3000 + "\n", ["sweep", "s.toml", "--out", "sw"]),
    "config-tables": ("s.toml", "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n", ["sweep", "s.toml", "--out", "sw"]),
    "override": ("s.toml", _sweep_config(), ["sweep", "s.toml", "--out", "sw", "--set", "etas=" + "[" * 3000 + "]" * 3000]),
    "game-json": ("g.json", "[" * 100_000 + "]" * 100_000, ["games", "validate", "g.json"]),
}


@pytest.mark.parametrize("member", sorted(DEEP))
def test_deeply_nested_input_is_a_user_error(tmp_path, monkeypatch, capsys, member):
    name, text, args = DEEP[member]
    (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("markovgames: error: ") and "too deep" in err
    assert _listing(tmp_path) == {name}


# ---------------------------------------------------------------------------------------
# 7. Refusals leave nothing behind; output that cannot be printed is escaped
# ---------------------------------------------------------------------------------------
def test_a_sweep_refused_for_its_executor_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(_sweep_config())
    assert main(["sweep", "s.toml", "--out", "sw", "--executor", "ray"]) == 2
    assert "Ray is not installed" in capsys.readouterr().err
    assert _listing(tmp_path) == {"s.toml"}


#: Runs the commands in ``argv`` (each as its number of words, then its words) one after the
#: other, each with the standard output as a new process has it (UTF-8, strict), printing its exit
#: code after its output.
_EACH_BOOTSTRAP = (
    "import sys\n"
    "from markovgames.cli import main\n"
    "words = sys.argv[1:]\n"
    "while words:\n"
    "    n, words = int(words[0]), words[1:]\n"
    "    sys.stdout.reconfigure(errors='strict')\n"
    "    code = main(words[:n])\n"
    "    words = words[n:]\n"
    "    print(f'\\n=== exit {code}', flush=True)\n"
)


def test_text_utf8_cannot_encode_is_printed_escaped(tmp_path):
    """A game name with a lone surrogate (valid JSON) and an --out given in bytes that are not
    UTF-8: the commands finish and print, rather than fail after writing their directories.
    (The three commands in one process, each with the standard output a process starts with.)"""
    from markovgames.games import game_to_dict, paper_game

    data = game_to_dict(paper_game())
    data["name"] = "odd\udc80name"
    (tmp_path / "g.json").write_text(json.dumps(data))
    out = b"r\xff"
    commands = [
        ["run", "--game", "g.json", "--algorithm", "smooth_ce", "-T", "20", "--out", "r"],
        ["solve", "--game", "g.json", "--concept", "ce", "--out", "s"],
        ["run", *PAPER_RUN, "-T", "20", "--out", out],
    ]
    argv = [word for command in commands for word in (str(len(command)), *command)]
    proc = subprocess.run([sys.executable, "-c", _EACH_BOOTSTRAP, *argv], cwd=tmp_path, capture_output=True, env=_env())
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout.split(b"\n=== exit ")
    assert [part.split(b"\n")[0] for part in printed[1:]] == [b"0", b"0", b"0"], proc.stderr
    for text, wrote in zip(printed[:2], ("r", "s"), strict=True):
        assert "odd\\udc80name" in text.decode(), text
        assert (tmp_path / wrote / ".markovgames").exists()
    assert b"wrote r\\udcff/metrics.json" in printed[2], printed[2]
    assert (tmp_path / os.fsdecode(out) / "metrics.json").exists()


# ---------------------------------------------------------------------------------------
# 8. --overwrite, full disks, free-space messages, SIGTERM
# ---------------------------------------------------------------------------------------
def test_overwrite_replaces_only_a_run_and_never_follows_a_link(tmp_path, finished_run, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    target = _copy_run(finished_run, tmp_path)
    before = _listing(target)
    (tmp_path / "link").symlink_to("run")
    argv = ["run", *PAPER_RUN, "-T", "10", "--quiet", "--overwrite", "--out"]
    assert main(argv + ["link"]) == 2 and "is a symbolic link" in capsys.readouterr().err
    assert main(["solve", "--game", "paper", "--concept", "ce", "--quiet", "--overwrite", "--out", "link"]) == 2
    assert _listing(target) == before  # the link's target is untouched
    # A marker that is a link, or that is not ours, does not make a directory a run.
    for marker in ("link", "foreign"):
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "data.csv").write_text("1,2\n")
        if marker == "link":
            (tmp_path / "other" / ".markovgames").symlink_to(target / ".markovgames")
        else:
            (tmp_path / "other" / ".markovgames").write_text('{"format": "something else"}')
        assert main(argv + ["other"]) == 2 and "holds no markovgames run" in capsys.readouterr().err
        assert (tmp_path / "other" / "data.csv").exists()
        import shutil

        shutil.rmtree(tmp_path / "other")
    assert main(argv + ["run"]) == 0 and load_run_directory(target).T == 10


def test_a_full_disk_names_the_path(tmp_path):
    """With writes failing (RLIMIT_FSIZE gives EFBIG, as a full disk gives ENOSPC), each write of a
    run names the file or directory it was writing, and nothing is left (not even the lock file)."""
    cases = (
        ("trajectory", ["--out", "o"], ".o.partial"),  # the trajectory, written as the run goes
        ("curve", ["--out", "o", "--no-trajectory"], "curve.npz"),  # the curve, written at the end
    )
    for name, _, _ in cases:
        (tmp_path / name).mkdir()
    # Both runs one after the other in one child process, with its writes limited.
    commands = [(tmp_path / name, ["run", *PAPER_RUN, "-T", "5000", "--quiet", *args]) for name, args, _ in cases]
    results = commands_in_one_child(commands, memory=MEMORY_LIMIT, file_size=100_000, timeout=120)
    for (name, _, named), proc in zip(cases, results, strict=True):
        _one_error_line(proc, named, "File too large")
        assert _listing(tmp_path / name) == set()


def test_the_free_space_check_prints_meaningful_sizes(tmp_path, monkeypatch, capsys):
    import collections

    from markovgames.cli import _run as cli_run

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(cli_run.shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 100, 100))
    assert main(["run", *PAPER_RUN, "-T", "200", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    # trajectory: 200 x H S (A_0 + A_1) x 8 bytes = 200 x 2 x 2 x 4 x 8 = 25,600 bytes (25.0 KiB);
    # curve: 3 x 200 x N x 8 = 9,600 bytes (9.4 KiB); the game's arrays: 2 x 2 x 2 x 4 x 8 + 2 x 2 x 4 x 2 x 8
    # = 512 bytes (under 5% of the total, not listed); in all 35,712 bytes (34.9 KiB).
    assert (
        "a run of 200 iterations writes about 34.9 KiB (trajectory 25.0 KiB, curve.npz 9.4 KiB), "
        "more than the 100 bytes free under"
    ) in err
    assert "--no-trajectory or --trajectory-tolerance DELTA writes less" in err
    # Without the trajectory the curve alone does not fit either, and nothing suggests dropping it.
    assert main(["run", *PAPER_RUN, "-T", "200", "--out", str(tmp_path / "o"), "--no-trajectory", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "writes about 9.9 KiB (curve.npz 9.4 KiB, game 512 bytes), more than the 100 bytes" in err
    assert "--no-trajectory" not in err


def test_a_large_write_is_announced_before_the_run(tmp_path, monkeypatch, capsys):
    """Above LARGE_WRITE_BYTES (1 GB) a run says on stderr, before it starts, how much it writes and
    how to write less (lowered here to 30 KB: the paper game at T = 200 writes 35,712 bytes)."""
    from markovgames.cli import _run as cli_run

    monkeypatch.setattr(cli_run, "LARGE_WRITE_BYTES", 30_000)
    assert main(["run", *PAPER_RUN, "-T", "200", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert (
        err.startswith("markovgames: note: this run writes about 34.9 KiB into ")
        and "(trajectory 25.0 KiB, curve.npz 9.4 KiB)" in err
    )
    stored = sum(p.stat().st_size for p in (tmp_path / "o").rglob("*") if p.is_file())
    assert 25_600 + 9_600 <= stored <= 25_600 + 9_600 + 20_000  # the estimate is what was written (and metrics.json)
    assert main(["run", *PAPER_RUN, "-T", "200", "--out", str(tmp_path / "t"), "--trajectory-tolerance", "0.01", "--quiet"]) == 0
    assert "this run writes at most about 34.9 KiB" in capsys.readouterr().err
    assert main(["run", *PAPER_RUN, "-T", "100", "--out", str(tmp_path / "s"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""  # 17,856 bytes: below the threshold, nothing said


@pytest.mark.parametrize(
    "command",
    [
        ["run", *PAPER_RUN, "-T", LONG_T, "--no-trajectory", "--quiet", "--out", "o"],
        ["sweep", "long.toml", "--out", "sw", "--workers", "2", "--quiet"],
        ["reproduce", "-T", LONG_T, "--out", "rep", "--no-exact", "--quiet"],
        ["evaluate", "run", "--monte-carlo", "2000000000", "--quiet"],
    ],
    ids=["run", "sweep", "reproduce", "evaluate"],
)
def test_sigterm_exits_143_after_cleaning_up(tmp_path, finished_run, command):
    _copy_run(finished_run, tmp_path)
    # The sweep's two batches would run for minutes (as long as this machine's memory allows for
    # two at once): its workers must be stopped, not waited for.
    from markovgames._resources import physical_memory

    T = min(10**8, physical_memory() // (2 * 2 * 3 * 2 * 8) // 2)
    (tmp_path / "long.toml").write_text(
        f'T = {T}\ngames = ["paper"]\nalgorithms = ["smooth_ce", "stage_cce"]\ncheckpoints = "decades"\n'
    )
    before = _listing(tmp_path)
    proc = _start(command, tmp_path)
    lock = {"run": ".o.lock", "sweep": ".sw.lock", "reproduce": ".rep.lock", "evaluate": None}[command[0]]
    _wait_for(tmp_path / (lock or "run"), proc)

    def children() -> list[str]:
        return subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()

    if command[0] == "sweep":  # its workers started, so that stopping them is checked
        deadline = time.time() + 60
        while not children() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
    # Into the computation (its program loaded from the session's compilation cache, or compiled).
    # The signal during the first compilation has a test of its own, below.
    time.sleep(1.5)
    workers = children()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # a hang: end it and its workers, then fail
        for pid in [proc.pid, *map(int, workers)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        raise
    # Our last line is the last line, but for one known race: a sweep's worker stopped in the
    # middle of a batch can leave a semaphore registered with multiprocessing's resource tracker
    # (a separate process sharing stderr), which then warns after we exit (seen once in four full
    # runs on two cores). The warning is Python's, about a semaphore already removed.
    ours = [line for line in err.strip().splitlines() if "resource_tracker" not in line and "warnings.warn(" not in line]
    assert proc.returncode == 143 and ours[-1].startswith("markovgames: terminated"), err
    left = _listing(tmp_path) - before
    if command[0] == "sweep":  # what finished is kept, and says it was interrupted; the workers are gone
        assert json.loads((tmp_path / "sw" / "manifest.json").read_text())["status"] == "interrupted"
        deadline = time.time() + 30
        assert workers
        while any(Path(f"/proc/{c}").exists() for c in workers) and time.time() < deadline:
            time.sleep(0.1)
        assert not [c for c in workers if Path(f"/proc/{c}").exists()]
    else:  # no output directory, no staging directory, no evaluation.json, no lock file
        assert left == set()


# Three moments of the compilation by default, five in the full mode (each start compiles anew).
@pytest.mark.parametrize("delay", beyond_default_in_full([0.3, 0.4, 0.5, 0.6, 0.8], {0.3, 0.5, 0.8}))
def test_sigterm_during_the_first_compilation_is_not_a_crash(tmp_path, delay):
    # A signal while XLA compiles the loop on its threads once ended the process with a
    # segmentation fault (5 of 8 tries) instead of exit 143: the interpreter was torn down under
    # the running compilation. The compilation cache is off here, so every start compiles.
    proc = _start(
        ["run", *PAPER_RUN, "-T", LONG_T, "--no-trajectory", "--quiet", "--out", "o"], tmp_path, compilation_cache=False
    )
    _wait_for(tmp_path / ".o.lock", proc)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 143, (proc.returncode, err)
    assert err.strip().splitlines()[-1].startswith("markovgames: terminated"), err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("command", ["run", "reproduce", "evaluate"])
def test_a_sigterm_swallowed_in_a_finaliser_still_ends_the_command(tmp_path, monkeypatch, finished_run, command, signum):
    """Python runs a signal handler wherever the main thread is, also inside a finaliser
    (``__del__``, which the garbage collector runs, for instance while JAX compiles), and would
    drop an exception raised there ("Exception ignored"). The handler raises nothing there (no
    exception is dropped), and the command still ends at once, with exit 143 (130) and nothing
    left behind, not run to the end as if no signal had come."""
    import threading

    import markovgames.dynamics as dynamics_module
    import markovgames.evaluation as evaluate_module
    import markovgames.experiments._reproduce as reproduce_module

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("a signal handler is installed on the main thread only")
    swallowed = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: swallowed.append(u.exc_type))

    class SignalledInItsFinaliser:
        def __del__(self):
            os.kill(os.getpid(), signum)
            for _ in range(10_000):  # the handler runs here, at a loop's check for signals
                pass

    # Where each command finds the function that does its work.
    module, name = {
        "run": (dynamics_module, "run"),
        "reproduce": (reproduce_module, "run"),
        "evaluate": (evaluate_module, "monte_carlo_value"),
    }[command]
    real = getattr(module, name)

    def signalled_in_a_finaliser(*args, **kwargs):
        SignalledInItsFinaliser()  # collected at once: its finaliser receives the signal
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, signalled_in_a_finaliser)
    out = tmp_path / "o"
    if command == "evaluate":
        argv = ["evaluate", str(_copy_run(finished_run, tmp_path)), "--monte-carlo", "1000", "--quiet"]
    else:
        argv = [command, *(PAPER_RUN if command == "run" else []), "-T", "300", "--quiet", "--out", str(out)]
    assert main(argv) == (128 + signal.SIGTERM if signum == signal.SIGTERM else 130)  # Ctrl-C: 130
    assert swallowed == []  # nothing raised in the finaliser, nothing dropped
    if command == "evaluate":
        assert not (tmp_path / "run" / "evaluation.json").exists()
    else:
        assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []
