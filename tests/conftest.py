"""Shared fixtures: small random games built without the library's generators (independent of them).

Also the two modes of the suite. By default the long cases are left out; the full mode
(``MARKOVGAMES_FULL_TESTS=1``) runs the tests marked ``full`` as well and draws more examples
in the property tests that use `examples`. README.md says what each mode takes.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from markovgames import MarkovGame

#: ``MARKOVGAMES_FULL_TESTS=1``: the full mode.
FULL_TESTS = os.environ.get("MARKOVGAMES_FULL_TESTS", "") not in ("", "0")


def examples(default: int, full: int) -> int:
    """A property test's number of hypothesis examples: ``default``, or ``full`` in the full mode."""
    return full if FULL_TESTS else default


def beyond_default_in_full(values, default):
    """Parameter values for ``pytest.mark.parametrize``: those in ``default`` run in both modes,
    the others only in the full mode (marked ``full``), with the same test ids in both.

    A parametrisation whose cases differ only in a combination that other cases already cover
    runs a covering subset by default (CONTRIBUTING.md, "Tests"): for the three paper algorithms,
    ``smooth_ce`` and ``stage_cce`` are both value updates and both learners of ``smooth_cce``."""
    return [value if value in default else pytest.param(value, marks=pytest.mark.full) for value in values]


#: The paper's three algorithms as a parametrisation: ``smooth_cce`` only in the full mode.
PAPER_ALGORITHMS = beyond_default_in_full(["smooth_ce", "stage_cce", "smooth_cce"], {"smooth_ce", "stage_cce"})


#: The optional extras (pyproject.toml) whose tests are skipped, naming the extra, where its packages
#: are missing: the default suite needs only the ``test`` extra; CI (``.ci/run``) installs them all.
EXTRAS = ("ray", "openspiel", "pettingzoo", "normalform", "docs")


def needs_extra(extra: str, *modules: str):
    """Import ``modules`` (returning the first), or skip the test with a reason that names the
    optional ``extra`` that installs them and the command that does."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; the extras are {', '.join(EXTRAS)}")
    reason = f"needs the '{extra}' extra: pip install -e '.[{extra}]'"
    imported = [pytest.importorskip(module, reason=reason) for module in modules]
    return imported[0]


def case(*values, default: bool, id: str | None = None):
    """One case of a multi-argument parametrisation, run by default or only in the full mode."""
    return pytest.param(*values, marks=() if default else pytest.mark.full, id=id)


def fresh_python(code: str, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter (this one, its environment): its stripped stdout, after
    checking that it exited with 0 (what it imports is what a user's program or command would)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip()


def cli_in_process(args, cwd, monkeypatch, capsys):
    """``markovgames ARGS`` in ``cwd`` through `markovgames.cli.main` in this process: its exit
    code, stdout and stderr, as a ``subprocess.run`` result gives them (for commands that need no
    limits, signals or process of their own)."""
    import types

    from markovgames.cli import main

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main(args)
    captured = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=captured.out, stderr=captured.err)


#: `commands_in_one_child`'s child: an optional address-space limit (``argv[1]`` bytes, 0 for none),
#: then each command of the JSON list in ``argv[3]`` in its directory, through `markovgames.cli.main`
#: or (``argv[2]`` "console") the console script's `console_main`, its output captured; the results
#: as JSON on stdout, and on stderr each command's directory as it starts (a hang names it).
_ONE_CHILD = (
    "import contextlib, io, json, os, resource, sys, time\n"
    "memory, console = int(sys.argv[1]), sys.argv[2] == 'console'\n"
    "if memory:\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))\n"
    "from markovgames.cli import console_main, main\n"
    "results = []\n"
    "for cwd, args in json.loads(sys.argv[3]):\n"
    "    print(cwd, file=sys.stderr, flush=True)\n"
    "    os.chdir(cwd)\n"
    "    sys.argv = ['markovgames', *args]\n"
    "    out, err, start = io.StringIO(), io.StringIO(), time.perf_counter()\n"
    "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
    "        try:\n"
    "            code = console_main() if console else main(args)\n"
    "        except SystemExit as exc:\n"
    "            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1\n"
    "    results.append([code, out.getvalue(), err.getvalue(), time.perf_counter() - start])\n"
    "sys.stdout.write(json.dumps(results))\n"
)


def commands_in_one_child(commands, *, memory: int = 0, file_size: int = 0, console: bool = False, timeout: float = 60.0):
    """``markovgames ARGS`` for each ``(cwd, ARGS)`` of ``commands``, one after the other, in one
    child process (one interpreter and JAX to start, not one per command; this checkout's package,
    the suite's compilation cache), under an address-space limit of ``memory`` bytes (0: none),
    through `markovgames.cli.main` or, with ``console``, the console script's `console_main`: each
    one's exit code, stdout and stderr, as ``subprocess.run`` results, and the seconds it took. A hang fails after
    ``timeout`` s per command, naming the directory of the command it was in.

    With ``file_size`` (bytes), no file the child writes may grow past it (``RLIMIT_FSIZE``: a
    write beyond fails with EFBIG, as one on a full disk fails with ENOSPC, rather than raising
    SIGXFSZ), and the child compiles without the suite's cache (whose writes would fail too)."""
    import json
    import types

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = _ONE_CHILD
    if file_size:
        env["MARKOVGAMES_CACHE_DIR"] = "off"
        code = (
            "import resource, signal\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({file_size}, {file_size}))\n"
        ) + code
    todo = json.dumps([[str(cwd), list(args)] for cwd, args in commands])
    argv = [sys.executable, "-c", code, str(memory), "console" if console else "main", todo]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * len(commands), env=env)
    except subprocess.TimeoutExpired as exc:
        started = (exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or "").split()
        raise AssertionError(f"a command hung, in {started[-1] if started else '?'}") from exc
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [types.SimpleNamespace(returncode=c, stdout=o, stderr=e, seconds=t) for c, o, e, t in json.loads(proc.stdout)]


#: The results of each family of `family_member`, in this process.
_FAMILIES: dict[str, dict] = {}


def family_member(family: str, members, prepare, snapshot, root_factory, member: str, run):
    """The result of ``member``'s command, run in a directory of its own with the other ``members``
    of its ``family`` in one child process (``run``: `commands_in_one_child` with its options), the
    first time one of them is tested in this process; with the directory and its ``snapshot``
    from before the command. ``prepare(name, directory)`` makes a member's files and returns its
    command; ``root_factory`` is pytest's ``tmp_path_factory``."""
    if family not in _FAMILIES:
        root = root_factory.mktemp(family)
        prepared = {}
        for name in members:
            (root / name).mkdir()
            args = prepare(name, root / name)
            prepared[name] = (root / name, args, snapshot(root / name))
        _FAMILIES[family] = {}  # (a failure below fails every member, each with its own traceback)
        results = run([(where, args) for where, args, _ in prepared.values()])
        _FAMILIES[family] = {
            name: (where, before, result) for (name, (where, _, before)), result in zip(prepared.items(), results, strict=True)
        }
    assert member in _FAMILIES[family], f"the commands of {family} failed (see its first test in this process)"
    return _FAMILIES[family][member]


def in_this_mode(params) -> list:
    """The values of a parametrisation (`beyond_default_in_full`'s) that run in this mode."""
    return [p.values[0] if hasattr(p, "values") else p for p in params if FULL_TESTS or not hasattr(p, "marks")]


def pytest_configure(config):
    """One persistent compilation cache for the whole suite, here and in the processes the tests
    start (they inherit ``MARKOVGAMES_CACHE_DIR``), kept between sessions in pytest's cache
    directory (``.pytest_cache/d/jax-compilation-locked``; ``pytest --cache-clear`` empties it).

    Compiling is most of the suite's time: a loop compiles once, not once per test or command,
    and a second session reuses the first one's programs (README.md gives both times). The
    programs are the ones the tests would compile; the cache only skips compiling them again.
    A ``MARKOVGAMES_CACHE_DIR`` already set is kept (``off`` measures a suite that compiles
    everything); tests of the cache, and of commands that must compile, set their own.

    The suite's own directory has a size limit, here and in the processes the tests start
    (``JAX_COMPILATION_CACHE_MAX_SIZE``): with one, JAX locks the cache around each read and
    write, so that the parallel workers (``-n``) never read an entry another one is still writing
    (JAX would warn and compile again). JAX then keeps an access-time file beside each entry and
    fails to write into a directory with entries that have none, such as one the command line
    filled: so the limit is set only for the suite's own directory, whose name is new with it."""
    setting = os.environ.get("MARKOVGAMES_CACHE_DIR")
    if setting is None:
        cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
        directory = (
            cache.mkdir("jax-compilation-locked") if cache is not None else Path(tempfile.mkdtemp(prefix="markovgames-jax-"))
        )
        setting = os.environ["MARKOVGAMES_CACHE_DIR"] = str(directory)
        os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(4 * 2**30)
    if setting != "off":
        import jax

        jax.config.update("jax_compilation_cache_dir", setting)
        # As the command line sets it: our loops compile in about a second, below JAX's default.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
        if "JAX_COMPILATION_CACHE_MAX_SIZE" in os.environ:  # (read by JAX only when it is imported)
            jax.config.update("jax_compilation_cache_max_size", int(os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"]))


def pytest_collection_modifyitems(config, items):
    """Outside the full mode, deselect the tests marked ``full`` (pytest reports how many); in
    both modes, the tests marked ``early`` first.

    The workers take the collected tests in order (``--dist worksteal``: each starts on its share
    and takes half of another's when it runs out), so a test of a minute started last would keep
    one worker busy while the other waits: started first, the others fill in around it."""
    if not FULL_TESTS:
        long = [item for item in items if item.get_closest_marker("full")]
        if long:
            config.hook.pytest_deselected(items=long)
            items[:] = [item for item in items if not item.get_closest_marker("full")]
    items.sort(key=lambda item: item.get_closest_marker("early") is None)  # (stable: otherwise in order)


class StopRun(Exception):
    """Raised by `stop_after`'s progress callback: a library run interrupted mid-way."""


def stop_after(limit: int):
    """A ``progress`` callback for ``run``/``run_batch`` that stops the run (`StopRun`) once
    ``limit`` iterations are done, after the chunk that reached it (and its saved state)."""

    def progress(done):
        if done >= limit:
            raise StopRun

    return progress


def interrupting_progress(after: int):
    """A stand-in for the command line's ``iteration_progress`` that interrupts the run, as Ctrl-C
    would, once ``after`` iterations are done (patch ``markovgames.cli._run.iteration_progress``)."""

    @contextlib.contextmanager
    def progress(total, description, enabled):
        def advance(done):
            if done >= after:
                raise KeyboardInterrupt

        yield advance

    return progress


def make_random_game(seed: int, num_players: int, horizon: int, num_states: int, num_actions, initial_state=0):
    """A random game: Uniform[0,1] rewards, Dirichlet(1) transition rows (NumPy only)."""
    rng = np.random.default_rng(seed)
    acts = tuple(num_actions)
    rewards = rng.random((horizon, num_players, num_states, *acts))
    transitions = rng.dirichlet(np.ones(num_states), size=(horizon, num_states, *acts))
    return MarkovGame(rewards, transitions, initial_state, name=f"random-{seed}")


def make_paper_game() -> MarkovGame:
    """The paper's game, written out here independently of the library's built-in copy.

    Source: Mao et al. (2024), appendix "Simulation Details", Tables 2 and 3 and the text below them.
    """
    p0 = np.array([[[0.8, 0.2], [0.0, 1.0]], [[1.0, 0.2], [0.5, 0.8]]])  # [s, a, b]
    p1 = np.array([[[0.2, 1.0], [0.5, 0.0]], [[0.5, 1.0], [1.0, 0.2]]])
    rewards = np.zeros((2, 2, 2, 2, 2))
    transitions = np.zeros((2, 2, 2, 2, 2))
    for h in range(2):
        rewards[h, 0], rewards[h, 1] = p0, p1
        for s in range(2):
            for a in range(2):
                for b in range(2):
                    # Matching actions stay w.p. 0.8, opposite actions w.p. 0.2 (written as
                    # literals: 1 - 0.8 is not 0.2 in floating point).
                    stay, move = (0.8, 0.2) if a == b else (0.2, 0.8)
                    transitions[h, s, a, b, s] = stay
                    transitions[h, s, a, b, 1 - s] = move
    return MarkovGame(rewards, transitions, 0, name="paper")


@pytest.fixture
def paper_game() -> MarkovGame:
    return make_paper_game()


@pytest.fixture
def level_two(monkeypatch):
    """Short runs compiled at the optimisation level of long runs (``QUICK_RUN_WORK = 0``), for
    tests that compare two different programs bit for bit (a run with and without an extra
    output): at a quick run's LLVM level 0 the two programs' machine code can round an operation
    differently, equal to the last bit or two (docs/numerics.md, "Compilation and the last bits")."""
    from markovgames.dynamics import _engine

    monkeypatch.setattr(_engine, "QUICK_RUN_WORK", 0)
