"""Every read is bounded before it is paid for; damaged files are refused, never crash.

Bombs (a small file that declares gigabytes) are met by a command run under a memory limit
(`damaged_files.MEMORY_LIMIT`; the commands one after the other in one child process) and a time
limit of a few seconds: a reader that inflated, hashed or allocated what the file declares would
fail the limit (and report "out of memory", not the file), or run out of time. A trajectory
truncated while it is read is an error naming it, where a memory map would kill the reader with
SIGBUS. The property tests feed damaged ``.npz`` and Parquet files (truncated, bit-flipped, with
forged shapes and dtypes) to the readers under a memory limit: each is read correctly or refused
with the reader's own error, nothing else.
"""

from __future__ import annotations

import functools
import io
import json
import os
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import commands_in_one_child, examples, family_member
from damaged_files import (
    MEMORY_LIMIT,
    address_space_limit,
    bomb_member,
    npy_header,
    run_python_limited,
    stored_member,
    zip_archive,
)
from markovgames.games import GameValidationError, load_game, paper_game, save_game

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="memory limits and sparse files as on Linux")

#: Seconds a refusal of a bomb may take (it reads a few kB; the bombs took 20 s to minutes).
QUICK_S = 20.0

PROPERTY = settings(
    max_examples=examples(25, 250),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


# ---------------------------------------------------------------------------------------
# a run directory made by hand (no engine): the paper game, uniform policies
# ---------------------------------------------------------------------------------------
def _run_directory(path: Path, T: int = 20, trajectory: bool = True) -> Path:
    """A finished run directory as ``markovgames run`` writes one, without checksums (a directory
    written before they were recorded) and without running anything."""
    path.mkdir()
    game = paper_game()
    save_game(game, path / "game.json")
    curve = np.full((T, game.num_players), 0.5)
    np.savez(path / "curve.npz", value=curve, certified_ce_bound=curve + 0.1, certified_cce_bound=curve + 0.1)
    if trajectory:
        (path / "trajectory").mkdir()
        for i, a in enumerate(game.num_actions):
            np.save(path / "trajectory" / f"policy_{i}.npy", np.full((T, game.horizon, game.num_states, a), 1.0 / a))
    metrics = {
        "algorithm": "smooth_ce",
        "value_update": "smooth",
        "T": T,
        "dtype": "float64",
        "game_file": "game.json",
        "trajectory": "trajectory" if trajectory else None,
        "checkpoints": [],
    }
    (path / "metrics.json").write_text(json.dumps(metrics))
    return path


def _refused(proc, *parts: str) -> str:
    """The one-line refusal of a command: exit 2, ``markovgames: error:``, naming ``parts``."""
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert err.startswith("markovgames: error: ") and "\n" not in err, err[-2000:]
    assert "out of memory" not in err, err  # the real cause is named, not the memory it would take
    for part in parts:
        assert part in err, (part, err)
    return err


#: The commands met under the memory limit, by name: each makes its files in a directory of its
#: own and returns its command (`_limited`).
LIMITED: dict[str, Callable[[Path], list[str]]] = {}


def _limited_command(name: str):
    def register(prepare: Callable[[Path], list[str]]):
        LIMITED[name] = prepare
        return prepare

    return register


def _limited(name: str, tmp_path_factory):
    """The command ``name`` of `LIMITED` (``markovgames ...`` under `MEMORY_LIMIT`, in its
    directory), run the first time one of them is tested in this process, all of them one after
    the other in one child process (one interpreter and JAX to start): its directory and its
    result, with the seconds the command took."""

    def run(commands):
        return commands_in_one_child(commands, memory=MEMORY_LIMIT)

    where, _, proc = family_member(
        "limited", list(LIMITED), lambda n, d: LIMITED[n](d), lambda d: None, tmp_path_factory, name, run
    )
    return where, proc


# ---------------------------------------------------------------------------------------
# bombs, met under a memory limit
# ---------------------------------------------------------------------------------------
@_limited_command("curve-bomb")
def _curve_bomb(where: Path) -> list[str]:
    # T = 2^27: three members that inflate to 2 GiB each from 2 MB (a real deflate bomb).
    run = _run_directory(where / "run", trajectory=False)
    T = 2**27
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["T"] = T
    (run / "metrics.json").write_text(json.dumps(metrics))
    names = ("value", "certified_ce_bound", "certified_cce_bound")
    (run / "curve.npz").write_bytes(zip_archive([bomb_member(f"{n}.npy", (T, 2)) for n in names]))
    return ["evaluate", "run"]


def test_a_curve_bomb_is_refused_before_it_is_inflated(tmp_path_factory):
    _, proc = _limited("curve-bomb", tmp_path_factory)
    _refused(proc, "run/curve.npz")
    assert proc.seconds < QUICK_S


#: The programs run under the memory limit, by name: each makes its files in a directory of its
#: own and returns its code (`_limited_python`).
LIMITED_PYTHON: dict[str, Callable[[Path], str]] = {}

#: `_limited_python`'s child, after a line that sets ``programs``: each ``(directory, code)`` of
#: them in its directory, its stdout captured; their stdout and seconds as JSON on stdout.
_PROGRAMS = (
    "import contextlib, io, json, os, time\n"
    "results = []\n"
    "for where, code in programs:\n"
    "    os.chdir(where)\n"
    "    out, start = io.StringIO(), time.perf_counter()\n"
    "    with contextlib.redirect_stdout(out):\n"
    "        exec(compile(code, where, 'exec'), {'__name__': '__main__'})\n"
    "    results.append([out.getvalue(), time.perf_counter() - start])\n"
    "print(json.dumps(results))\n"
)


def _limited_python(name: str, tmp_path_factory):
    """The program ``name`` of `LIMITED_PYTHON` (``python -c CODE`` under `MEMORY_LIMIT`, in its
    directory), run the first time one of them is tested in this process, all of them one after
    the other in one child process (one interpreter to start): its directory and its stdout,
    with the seconds it took. (A program that kills the child, as SIGBUS would, fails them all,
    the child's exit status in each message.)"""

    def run(programs):
        todo = [(str(where), code) for where, code in programs]
        proc = run_python_limited(f"programs = {todo!r}\n" + _PROGRAMS, Path.cwd())
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        return [SimpleNamespace(stdout=out, seconds=seconds) for out, seconds in json.loads(proc.stdout)]

    where, _, result = family_member(
        "limited-python", list(LIMITED_PYTHON), lambda n, d: LIMITED_PYTHON[n](d), lambda d: None, tmp_path_factory, name, run
    )
    return where, result


def _limited_program(name: str):
    def register(prepare: Callable[[Path], str]):
        LIMITED_PYTHON[name] = prepare
        return prepare

    return register


@_limited_program("state-bomb")
def _state_bomb(where: Path) -> str:
    # A saved state whose one array inflates to 4 GiB from 4 MB; this run's array is 2 floats.
    meta = {"format": 3, "fingerprint": "f", "done": 1, "num_leaves": 1, "metrics": None, "trajectory": None}
    members = [stored_member("meta.npy", np.asarray(json.dumps(meta))), bomb_member("leaf_0.npy", (2**29 - 2**17,))]
    (where / "state.npz").write_bytes(zip_archive(members))
    return (
        "import numpy as np\n"
        "from markovgames.dynamics._checkpoint import RunStateError, StateFile\n"
        "try:\n"
        "    StateFile('state.npz', 'f', 1).load((np.zeros(2),), lambda d: None, lambda d: None, lambda d: None, np.float64)\n"
        "except RunStateError as err:\n"
        "    print('refused:', err)\n"
    )


def test_a_state_bomb_is_refused_before_it_is_inflated(tmp_path_factory):
    _, proc = _limited_python("state-bomb", tmp_path_factory)
    assert proc.stdout.startswith("refused: state.npz:"), proc.stdout
    assert "compressed member" in proc.stdout
    assert proc.seconds < QUICK_S


def test_a_state_array_is_checked_on_its_header_before_it_is_read(tmp_path):
    # Stored (as a run writes it), consistent in every field, but not this run's shape: refused
    # from the header, with this run's shape in the message, before 64 MiB is read.
    meta = {"format": 3, "fingerprint": "f", "done": 1, "num_leaves": 1, "metrics": None, "trajectory": None}
    members = [stored_member("meta.npy", np.asarray(json.dumps(meta))), stored_member("leaf_0.npy", np.zeros(2**23))]
    path = tmp_path / "state.npz"
    path.write_bytes(zip_archive(members))
    import tracemalloc

    from markovgames.dynamics._checkpoint import RunStateError, StateFile

    tracemalloc.start()
    try:
        with pytest.raises(RunStateError, match=r"state array 0 is float64 \(8388608,\), this run's is float64 \(2,\)"):
            StateFile(path, "f", 1).load((np.zeros(2),), lambda d: None, lambda d: None, lambda d: None, np.float64)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the 64 MiB array was never read


@_limited_command("game-npz-bomb")
def _game_npz_bomb(where: Path) -> list[str]:
    # An .npz game whose rewards inflate to 4 GiB: refused on the header's shape, unread.
    arrays = {k: np.asarray(v) for k, v in _game_arrays().items()}
    members = [stored_member(f"{k}.npy", v) for k, v in arrays.items() if k != "rewards"]
    members.append(bomb_member("rewards.npy", (2**29 - 2**17,)))
    (where / "game.npz").write_bytes(zip_archive(members))
    return ["games", "validate", "game.npz"]


def test_a_game_npz_bomb_is_refused_from_its_header(tmp_path_factory):
    _, proc = _limited("game-npz-bomb", tmp_path_factory)
    _refused(proc, "game.npz", "rewards: array shape (536739840,) does not match the declared sizes")
    assert proc.seconds < QUICK_S


def _results_of_many_rows(command: str, where: Path) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    row = {"run_id": "r", "game": "g", "algorithm": "smooth_cce", "concept": "cce", "optimistic": True, "eta": "0.2"}
    row |= {"T": 100, "checkpoint": 1, "certified_ce_gap": 0.5, "certified_cce_gap": 0.5}
    table = pa.Table.from_pylist([row])
    (where / "sw").mkdir()
    # 5,000,000 copies of one row: a file of a few hundred kB (run-length encoded).
    pq.write_table(table.take(np.zeros(5_000_000, dtype=np.int64)), where / "sw" / "results.parquet")
    return [command, "sw"]


for _command in ("summarize", "plot"):
    _limited_command(f"results-{_command}")(functools.partial(_results_of_many_rows, _command))


@pytest.mark.parametrize("command", ["summarize", "plot"])
def test_results_of_many_rows_are_refused_from_the_footer(tmp_path_factory, command):
    _, proc = _limited(f"results-{command}", tmp_path_factory)
    _refused(proc, "sw/results.parquet", "5000000 rows, more than the 1000000")
    assert proc.seconds < QUICK_S


@_limited_command("huge-game-file")
def _huge_game_file(where: Path) -> list[str]:
    run = _run_directory(where / "run", trajectory=False)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["sha256"] = {"game.json": "0" * 64}
    (run / "metrics.json").write_text(json.dumps(metrics))
    with open(run / "game.json", "wb") as fh:
        fh.truncate(20 * 2**30)  # 20 GB that take no room: hashing them took 45 s
    return ["evaluate", "run"]


def test_a_huge_game_file_is_not_hashed_before_its_size_is_checked(tmp_path_factory):
    _, proc = _limited("huge-game-file", tmp_path_factory)
    _refused(proc, "run/game.json: file is 21474836480 bytes")
    assert proc.seconds < QUICK_S


def test_a_huge_npz_game_is_refused_by_its_size_alone(tmp_path):
    # Without --max-bytes an .npz game is bounded by what --max-entries allows.
    with open(tmp_path / "game.npz", "wb") as fh:
        fh.truncate(2**30)
    message = _load_error(tmp_path / "game.npz", max_entries=1000)
    assert message.endswith(
        "file is 1073741824 bytes, more than the 1096576 bytes an .npz game of at most max_entries = 1000 "
        "entries per array can take (raise max_entries to allow)"
    )


@_limited_command("huge-learner-file")
def _huge_learner_file(where: Path) -> list[str]:
    with open(where / "mine.py", "wb") as fh:
        fh.truncate(3 * 2**30)  # read whole (6.4 GB), twice, before the bound
    return ["run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"]


def test_a_huge_learner_file_is_refused_unread(tmp_path_factory):
    where, proc = _limited("huge-learner-file", tmp_path_factory)
    _refused(proc, "--algorithm", "the limit of a learner's source file")
    assert proc.seconds < QUICK_S
    assert not (where / "out").exists()


def test_a_learner_file_runs_the_bytes_that_were_hashed(tmp_path):
    from markovgames.dynamics._algorithms import _load_file

    path = tmp_path / "mine.py"
    path.write_text("VALUE = 1\n")
    module, digest = _load_file(f"{path}:VALUE", path)
    assert module.VALUE == 1 and digest == __import__("hashlib").sha256(b"VALUE = 1\n").hexdigest()


def _dotted_key(parts: int, where: Path) -> list[str]:
    (where / "sweep.toml").write_text('T = 50\ngames = ["paper"]\n' + ".".join(["a"] * parts) + " = 1\n")
    return ["sweep", "sweep.toml", "--out", "sw"]


for _parts in (33, 100_000):
    _limited_command(f"dotted-key-{_parts}")(functools.partial(_dotted_key, _parts))


@pytest.mark.parametrize("parts", [33, 100_000])
def test_a_dotted_key_of_many_parts_is_refused_before_it_is_parsed(tmp_path_factory, parts):
    _, proc = _limited(f"dotted-key-{parts}", tmp_path_factory)
    _refused(proc, "sweep.toml: line 3: a dotted key of more than 32")
    assert proc.seconds < QUICK_S


def test_an_override_with_a_dotted_key_of_many_parts_is_refused():
    from markovgames.experiments.sweeps._config import SweepConfigError, parse_override

    with pytest.raises(SweepConfigError, match=r"^override T: a dotted key of more than 32 parts"):
        parse_override("T={" + ".".join(["a"] * 50_000) + " = 1}")
    assert parse_override("games[0].file=my.game.v1.json") == (["games", 0, "file"], "my.game.v1.json")


def test_keys_within_the_limits_and_dots_in_strings_are_accepted():
    from markovgames.experiments.sweeps._config import MAX_KEY_CHARS, MAX_KEY_PARTS, _check_keys_text

    dotted = ".".join(["a"] * 200)
    text = (
        f"{'.'.join(['k'] * MAX_KEY_PARTS)} = 1\n"
        f'"{"q" * MAX_KEY_CHARS}" = 2\n'
        f'text = "{dotted}"\n# {dotted}\n'
        f"multi = '''\n{dotted} = 3\n'''\n"
        f'basic = """\n{dotted} = 4\n"""\n'
    )
    _check_keys_text(text, "sweep.toml")  # nothing refused
    import tomllib

    assert tomllib.loads(text)["text"] == dotted


@_limited_command("reproduce-T")
def _reproduce_T(where: Path) -> list[str]:
    return ["reproduce", "-T", "2147483647", "--out", "out"]


def test_reproduce_says_which_limit_a_T_exceeds(tmp_path_factory):
    where, proc = _limited("reproduce-T", tmp_path_factory)
    _refused(proc, "-T:", "for T = 2147483647", "times this machine's", "choose -T at most")
    assert not (where / "out").exists()


# ---------------------------------------------------------------------------------------
# no SIGBUS: a trajectory truncated while it is read
# ---------------------------------------------------------------------------------------
@_limited_program("truncated-trajectory")
def _truncated_trajectory(where: Path) -> str:
    _run_directory(where / "run", T=4096)
    return (
        "import os\n"
        "from markovgames.experiments import RunDirectoryError, load_run_directory\n"
        "stored = load_run_directory('run')\n"
        "os.truncate('run/trajectory/policy_0.npy', 1024)\n"
        "try:\n"
        "    print(float(stored.policies[0].sum()))\n"
        "except RunDirectoryError as err:\n"
        "    print('refused:', err)\n"
    )


def test_a_trajectory_truncated_after_its_directory_was_read_is_an_error_not_sigbus(tmp_path_factory):
    # A memory map of the truncated file dies of SIGBUS here (the child's return code -7).
    _, proc = _limited_python("truncated-trajectory", tmp_path_factory)
    assert proc.stdout.startswith("refused: run/trajectory/policy_0.npy:"), proc.stdout
    assert "truncated" in proc.stdout or "changed while it was read" in proc.stdout


def test_evaluate_reads_the_trajectory_it_checked(tmp_path):
    # The rows read are the rows on disk (the read is the one place they come from).
    _run_directory(tmp_path / "run", T=30)
    from markovgames.experiments import load_run_directory

    stored = load_run_directory(tmp_path / "run")
    rows = stored.check_trajectory(rows=7)
    assert rows is not None and [p.shape for p in rows] == [(7, 2, 2, 2), (7, 2, 2, 2)]
    np.testing.assert_array_equal(stored.policies[0], np.load(tmp_path / "run" / "trajectory" / "policy_0.npy"))
    assert not isinstance(stored.policies[0], np.memmap)


def test_certify_reads_its_policies_with_checked_reads(tmp_path, monkeypatch):
    # certify holds its policies in memory: truncating a file after it was read changes nothing.
    from markovgames.cli import _certify

    pols = tmp_path / "pols"
    pols.mkdir()
    for i in range(2):
        np.save(pols / f"policy_{i}.npy", np.full((5, 2, 2, 2), 0.5))
    loaded = _certify._load_policies(pols, paper_game())
    os.truncate(pols / "policy_0.npy", 100)
    assert all(not isinstance(p, np.memmap) for p in loaded) and float(loaded[0].sum()) == 5 * 2 * 2 * 2 * 0.5


# ---------------------------------------------------------------------------------------
# properties: damaged .npz files
# ---------------------------------------------------------------------------------------
def _game_arrays() -> dict:
    from markovgames.games import game_to_dict

    return game_to_dict(paper_game())


def _load_error(path: Path, **limits) -> str:
    try:
        load_game(path, **limits)
    except GameValidationError as err:
        return str(err)
    raise AssertionError("the file was not refused")


_GAME_NPZ: bytes | None = None


def _game_npz(tmp_path: Path) -> bytes:
    global _GAME_NPZ
    if _GAME_NPZ is None:
        _GAME_NPZ = save_game(paper_game(), tmp_path / "seed.npz").read_bytes()
    return _GAME_NPZ


def _damage(data: bytes, draw) -> bytes:
    """``data`` truncated, bit-flipped, or with a forged .npy header (shape or dtype) in place."""
    kind = draw(st.sampled_from(["truncate", "flip", "header", "directory"]))
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            k = draw(st.integers(0, len(out) - 1))
            out[k] ^= 1 << draw(st.integers(0, 7))
        return bytes(out)
    if kind == "header":
        # A member's header replaced by one of another shape or dtype (the sizes in the zip
        # directory then disagree with it, or the data does).
        start = data.find(b"\x93NUMPY", draw(st.integers(0, len(data) - 1)))
        start = data.find(b"\x93NUMPY") if start < 0 else start
        shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 2**20, 2**40]), min_size=0, max_size=5)))
        descr = draw(st.sampled_from(["<f8", "<f4", "<i8", "|u1", "<U100000", "|O", "<c16", "|b1"]))
        header = npy_header(shape, descr)
        old_end = start + 10 + int.from_bytes(data[start + 8 : start + 10], "little")
        return data[:start] + header + data[old_end:]
    # "directory": a central directory entry's declared sizes forged.
    at = data.rfind(b"PK\x01\x02")
    if at < 0:
        return data
    out = bytearray(data)
    field = draw(st.sampled_from([20, 24]))  # compressed, uncompressed size
    out[at + field : at + field + 4] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "little")
    return bytes(out)


@PROPERTY
@given(data=st.data())
def test_damaged_npz_games_are_read_or_refused(tmp_path, data):
    path = tmp_path / "game.npz"
    path.write_bytes(_damage(_game_npz(tmp_path), data.draw))
    start = time.perf_counter()
    with address_space_limit():
        try:
            game = load_game(path)
        except GameValidationError as err:
            message = str(err)
            assert message.startswith(f"{path}: ") and "\n" not in message.strip(), message
        else:
            assert game.rewards.shape == paper_game().rewards.shape
    assert time.perf_counter() - start < QUICK_S


@PROPERTY
@given(data=st.data())
def test_damaged_curves_and_states_are_read_or_refused(tmp_path, data):
    from markovgames.dynamics._checkpoint import RunStateError, StateFile
    from markovgames.experiments import RunDirectoryError, load_run_directory

    run = tmp_path / f"run{time.monotonic_ns()}"
    _run_directory(run, T=20, trajectory=False)
    curve = run / "curve.npz"
    curve.write_bytes(_damage(curve.read_bytes(), data.draw))
    meta = {"format": 3, "fingerprint": "f", "done": 1, "num_leaves": 1, "metrics": None, "trajectory": None}
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.asarray(json.dumps(meta)), leaf_0=np.zeros(2))
    state = run / "state.npz"
    state.write_bytes(_damage(buffer.getvalue(), data.draw))
    with address_space_limit():
        try:
            stored = load_run_directory(run)
        except RunDirectoryError as err:
            assert str(err).startswith(f"{curve}: ") or str(err).startswith(f"{run}"), err
        else:
            assert stored.value.shape == (20, 2) and np.isfinite(stored.value).all()
        try:
            saved = StateFile(state, "f", 1).load((np.zeros(2),), lambda d: None, lambda d: None, lambda d: None, np.float64)
        except RunStateError as err:
            assert str(err).startswith(f"{state}: "), err
        else:
            assert saved is not None and saved.leaves[0].shape == (2,)


def test_the_deflate_ratio_bound_refuses_a_forged_member_size():
    from markovgames._npz import ArchiveError, NpzArchive

    data = b"\x00" * 100
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(data) + packer.flush()
    archive = zip_archive([("a.npy", packed, zipfile.ZIP_DEFLATED, 2000 * len(packed), zlib.crc32(data))])
    with pytest.raises(ArchiveError, match=r"more than deflate can expand \(1032:1\)"):
        NpzArchive(_file(archive))


def _file(data: bytes):
    import tempfile

    fh = tempfile.TemporaryFile()
    fh.write(data)
    fh.seek(0)
    return fh


# ---------------------------------------------------------------------------------------
# properties: results.parquet with any column types and values
# ---------------------------------------------------------------------------------------
_VALUES = {
    "text": st.one_of(
        st.sampled_from(["g", "[/]x", "$\\frac{$", "a/b", "smooth_cce", "cce", "ce", "0.2", "2x2"]), st.text(max_size=8)
    ),
    "int": st.one_of(st.integers(-3, 200), st.sampled_from([2**31, 2**62])),
    "float": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.5, 0.01])),
    "bool": st.booleans(),
    "floats": st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=0, max_size=3),
}
_COLUMNS = (
    "run_id",
    "game",
    "algorithm",
    "concept",
    "optimistic",
    "eta",
    "T",
    "checkpoint",
    "certified_ce_gap",
    "certified_cce_gap",
)


@st.composite
def _results_tables(draw):
    """A results table: the required columns, each of a drawn kind (the right one most often),
    with rows close to a sweep's (one or two runs at checkpoints 1, 10, 100) or anything."""
    import pyarrow as pa

    from markovgames.experiments.sweeps._table import RESULT_COLUMNS

    right = {name: RESULT_COLUMNS[name][0] for name in _COLUMNS}
    sane = {
        "run_id": "r",
        "game": "g",
        "algorithm": "smooth_cce",
        "concept": "cce",
        "optimistic": True,
        "eta": "0.2",
        "T": 100,
    }
    rows = []
    for run in range(draw(st.integers(1, 2))):
        for checkpoint in (1, 10, 100):
            row = dict(
                sane,
                run_id=f"r{run}",
                checkpoint=checkpoint,
                certified_ce_gap=1.0 / checkpoint,
                certified_cce_gap=1.0 / checkpoint,
            )
            rows.append(row)
    columns = {}
    for name in _COLUMNS:
        kind = draw(st.sampled_from([right[name]] * 4 + list(_VALUES)))
        values = [row[name] for row in rows] if kind == right[name] else [draw(_VALUES[kind]) for _ in rows]
        if draw(st.integers(0, 9)) == 0:  # now and then, values of the right kind, but drawn
            values = [draw(_VALUES[right[name]]) for _ in rows]
        if draw(st.integers(0, 9)) == 0:
            values[draw(st.integers(0, len(values) - 1))] = None
        columns[name] = values
    try:
        return pa.table(columns)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.table({name: [row[name] for row in rows] for name in _COLUMNS})


@PROPERTY
@given(table=_results_tables(), damage=st.data())
def test_results_files_are_read_and_summarized_or_refused(tmp_path, table, damage):
    import pyarrow.parquet as pq

    from markovgames.experiments import ResultsError, summarize_results

    path = tmp_path / f"results{time.monotonic_ns()}.parquet"
    pq.write_table(table, path)
    if damage.draw(st.booleans()):
        kind = damage.draw(st.sampled_from(["truncate", "flip"]))
        data = path.read_bytes()
        path.write_bytes(_damage(data, damage.draw) if kind == "flip" else data[: damage.draw(st.integers(0, len(data) - 1))])
    with address_space_limit():
        try:
            rows = summarize_results(path)
        except ResultsError as err:
            assert str(err).startswith(f"{path}: ") and "\n" not in str(err), err
        else:
            assert rows and all(np.isfinite(r.final_gap) or np.isnan(r.final_gap) for r in rows)
