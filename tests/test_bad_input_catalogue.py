"""Every bad input gets a clear answer: the catalogue of ``docs/errors.md``, case by case.

Each case writes its inputs into an empty working directory, runs the command line there (with
relative paths, as a user would) and checks the contract of ``markovgames.cli``:

* exit code 2;
* exactly one line on stderr, starting with ``markovgames: error:``, that names the file (or
  option), the field and the index or value at fault (the case's ``expect`` substrings);
* no traceback;
* nothing written: the working directory holds exactly what it held before (no output
  directory, no staging directory, no partial or temporary file).

The same catalogue is the table in ``docs/errors.md``; :func:`test_every_case_is_documented`
keeps the two in step. ``python tests/test_bad_input_catalogue.py`` prints the table's rows
from the current messages.
"""

from __future__ import annotations

import copy
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from markovgames.cli import main
from markovgames.games import game_to_dict, paper_game

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "errors.md"

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
SWEEP_BASE = 'T = 50\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\netas = [0.2]\ncheckpoints = [10, 50]\n'


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
    leaves_lock: bool = False  # refused while the run runs, after it took the output's lock file
    subprocess: bool = False  # also run as a real process (exit status, stderr)


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


def _pop(key: str):
    return lambda data: data.pop(key)


def _write_bytes(name: str, payload: bytes):
    def setup(d: Path) -> None:
        (d / name).write_bytes(payload)

    return setup


def _truncated_game(d: Path) -> None:
    text = json.dumps(BASE_GAME)
    (d / "game.json").write_text(text[: len(text) // 2])


def _npz_with_object_array(d: Path) -> None:
    arrays = {k: np.array(v) for k, v in BASE_GAME.items()}
    arrays["rewards"] = np.array([{"pickled": "code"}], dtype=object)
    with open(d / "game.npz", "wb") as fh:
        np.savez(fh, **arrays)


def _toml(text: str, name: str = "sweep.toml"):
    def setup(d: Path) -> None:
        (d / name).write_text(text)

    return setup


def _sweep(old: str, new: str):
    assert old in SWEEP_BASE
    return _toml(SWEEP_BASE.replace(old, new))


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


def _sweep_directory(
    edit_run: Callable[[dict], object] | None = None,
    edit_manifest: Callable[[dict], object] | None = None,
    manifest_text: str | None = None,
):
    """``sweep.toml`` (SWEEP_BASE) and the directory ``sw`` of its interrupted sweep, as a sweep
    leaves it: its one run's file (changed by ``edit_run``), its manifest (changed by
    ``edit_manifest``, or replaced by ``manifest_text``) and the lock file beside it. Made without
    running anything: the run's numbers are zeros."""

    def setup(d: Path) -> None:
        from markovgames.experiments._sweep_config import load_sweep_config
        from markovgames.experiments._sweep_execute import BatchOutput
        from markovgames.experiments._sweep_plan import plan_sweep
        from markovgames.experiments._sweep_results import _run_document
        from markovgames.experiments._sweep_session import _SweepSession

        (d / "sweep.toml").write_text(SWEEP_BASE)
        config, raw = load_sweep_config(d / "sweep.toml")
        plan = plan_sweep(config, d)
        out = d / "sw"
        (out / "runs").mkdir(parents=True)
        (d / ".sw.lock").touch()  # the empty lock file every sweep leaves beside its directory
        session = _SweepSession(
            config,
            plan,
            out,
            overrides=(),
            progress=None,
            raw_config=raw,
            config_name="sweep.toml",
            start_wall=0.0,
            started_at="2026-01-01T00:00:00+00:00",
        )
        session.write_manifest("interrupted")
        if edit_manifest is not None or manifest_text is not None:
            manifest = json.loads((out / "manifest.json").read_text())
            if edit_manifest is not None:
                edit_manifest(manifest)
            text = manifest_text if manifest_text is not None else json.dumps(manifest)
            (out / "manifest.json").write_text(text)
        if edit_run is not None:
            (run,) = plan.runs
            checkpoints = np.asarray(run.checkpoints)
            zeros = np.zeros((1, len(checkpoints), run.game.num_players))
            output = BatchOutput("b", (run.run_id,), checkpoints, zeros, zeros, zeros, 0.0, 0.0, "host", 1)
            doc = _run_document(run, output, 0, 1, 1)
            edit_run(doc)
            (out / "runs" / f"{run.run_id}.json").write_text(json.dumps(doc))

    return setup


#: A user's algorithm file (the paper's smooth_ce under another name).
MINE = "from markovgames.dynamics import ALGORITHMS\n\nALGORITHM = ALGORITHMS['smooth_ce']\n"


def _learner_changed(run: Path) -> None:
    """The finished run as if made with ``mine.py:ALGORITHM`` when the file held other code."""
    (run.parent / "mine.py").write_text(MINE)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["config"].update(algorithm="mine.py:ALGORITHM", algorithm_sha256="0" * 64)
    (run / "metrics.json").write_text(json.dumps(metrics))


def _names_a_users_file(run: Path) -> None:
    """A metrics.json without value_update naming a file that would leave a trace if imported."""
    (run.parent / "evil.py").write_text('open("IMPORTED", "w").write("evil.py ran")\nX = 1\n')
    metrics = json.loads((run / "metrics.json").read_text())
    del metrics["value_update"]
    metrics["algorithm"] = "evil.py:X"
    (run / "metrics.json").write_text(json.dumps(metrics))


def _interrupted_run(d: Path) -> None:
    staging = d / ".out.partial"
    staging.mkdir()
    (staging / "state.npz").write_bytes(b"")
    (staging / "config.json").write_text('{"algorithm": "stage_cce", "T": 1000}\n')


def _finished_run(d: Path) -> None:
    (d / "out").mkdir()
    config = {
        "game": "paper",
        "algorithm": "smooth_ce",
        "T": 1000,
        "eta": 0.2,
        "optimistic": True,
        "checkpoints": [1, 10, 100, 1000],
        "dtype": "float64",
        "record_trajectory": True,
        "checkpoint_every": None,
        "trajectory_tolerance": None,
    }
    (d / "out" / "metrics.json").write_text(json.dumps({"algorithm": "smooth_ce", "T": 1000, "config": config}))


def _policies(players: int, *, shape=(3, 2, 2, 2), bad_row: bool = False):
    """A directory ``pols`` with ``policy_0.npy`` .. ``policy_{players-1}.npy`` (uniform rows)."""

    def setup(d: Path) -> None:
        (d / "pols").mkdir()
        for i in range(players):
            policy = np.full(shape, 1.0 / shape[-1])
            if bad_row and i == 0:
                policy[1, 0, 1] = 0.0
            np.save(d / "pols" / f"policy_{i}.npy", policy)

    return setup


def _earlier_evaluation(d: Path) -> None:
    (d / "run" / "evaluation.json").write_text('{"T": 20}\n')


def _results(d: Path) -> None:
    """A sweep directory ``sw`` whose results.parquet has one run with checkpoints 1, 10, 100."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "run_id": "r",
            "game": "g",
            "game_seed": None,
            "N": 2,
            "H": 2,
            "S": 2,
            "A": "2x2",
            "algorithm": "smooth_cce",
            "concept": "cce",
            "optimistic": True,
            "eta": "0.2",
            "eta_value": 0.2,
            "T": 100,
            "checkpoint": c,
            "certified_ce_gap": 1.0 / c,
            "certified_cce_gap": 1.0 / c,
        }
        for c in (1, 10, 100)
    ]
    (d / "sw").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), d / "sw" / "results.parquet")


def _results_edited(edit: Callable[[list[dict]], object]):
    """The sweep directory of `_results`, its rows changed by ``edit`` (the types follow the values)."""

    def setup(d: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        _results(d)
        rows = pq.read_table(d / "sw" / "results.parquet").to_pylist()
        edit(rows)
        pq.write_table(pa.Table.from_pylist(rows), d / "sw" / "results.parquet")

    return setup


def _results_too_many_rows(d: Path) -> None:
    """A results.parquet of 1,000,001 copies of one row: a few hundred kB that declare a million rows."""
    import pyarrow.parquet as pq

    _results(d)
    table = pq.read_table(d / "sw" / "results.parquet")
    pq.write_table(table.take(np.zeros(1_000_001, dtype=np.int64)), d / "sw" / "results.parquet")


def _sparse_file(name: str, size: int):
    """A file of ``size`` bytes that takes no room (a hole): as large as a bomb, as cheap as nothing."""

    def setup(d: Path) -> None:
        with open(d / name, "wb") as fh:
            fh.truncate(size)

    return setup


def _npz_game_forged_size(d: Path) -> None:
    """The paper game as .npz, its rewards member deflated honestly but listed as 4 GB uncompressed."""
    import io
    import zipfile
    import zlib

    from damaged_files import zip_archive

    members = []
    for key, value in BASE_GAME.items():
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(value))
        data = buffer.getvalue()
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        packed = packer.compress(data) + packer.flush()
        declared = 4_000_000_000 if key == "rewards" else len(data)
        members.append((f"{key}.npy", packed, zipfile.ZIP_DEFLATED, declared, zlib.crc32(data)))
    (d / "game.npz").write_bytes(zip_archive(members))


def _compressed_curve(run: Path) -> None:
    """The run's curve.npz written again compressed (a directory that records no checksums)."""
    with np.load(run / "curve.npz") as data:
        arrays = {k: np.array(data[k]) for k in data.files}
    np.savez_compressed(run / "curve.npz", **arrays)
    metrics = json.loads((run / "metrics.json").read_text())
    del metrics["sha256"]
    (run / "metrics.json").write_text(json.dumps(metrics))


def _huge_sparse_game_in_run(run: Path) -> None:
    """The run's game.json replaced by a 20 GB file of zeros that takes no room (its SHA-256 recorded
    in metrics.json as before: it must not be hashed before its size is checked)."""
    with open(run / "game.json", "wb") as fh:
        fh.truncate(20 * 2**30)


def _fifo(name: str):
    return lambda d: os.mkfifo(d / name)


def _device(name: str, device: str = "/dev/zero"):
    return lambda d: (d / name).symlink_to(device)


def _symlink_to_directory(d: Path) -> None:
    (d / "real").mkdir()
    (d / "out").symlink_to("real")


def _foreign_directory(d: Path, name: str = "out") -> None:
    (d / name).mkdir()
    (d / name / "notes.txt").write_text("not a run\n")


def _symlink_to_file(name: str, target: str = "theirs.json"):
    """``name`` a symbolic link to a regular file ``target`` (someone else's file, as it were)."""

    def setup(d: Path) -> None:
        (d / target).write_text("someone else's file\n")
        (d / name).symlink_to(target)

    return setup


def _folder_with_runs(d: Path) -> None:
    """A project folder that happens to have a ``runs/`` subfolder and a ``results.parquet``: not a sweep."""
    (d / "proj" / "runs").mkdir(parents=True)
    (d / "proj" / "results.parquet").write_bytes(b"the project's own table\n")


#: Lock file descriptors held by a case's setup (another process's lock, as it were); closed
#: after the case by :func:`_release_held_locks`.
_HELD: list[int] = []


def _busy(name: str):
    """Hold the lock of the directory ``name`` (an flock on ``.NAME.lock``, as a running command would)."""

    def setup(d: Path) -> None:
        fd = os.open(d / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _HELD.append(fd)

    return setup


@pytest.fixture(autouse=True)
def _release_held_locks():
    yield
    while _HELD:
        os.close(_HELD.pop())


def _in_run(change: Callable[[Path], None]):
    """Change the finished run copied to ./run (cases with ``needs_run``)."""
    return lambda d: change(d / "run")


def _policy(player: int, array) -> Callable[[Path], None]:
    return _in_run(lambda run: np.save(run / "trajectory" / f"policy_{player}.npy", array))


def _metrics(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        metrics = json.loads((run / "metrics.json").read_text())
        edit(metrics)
        (run / "metrics.json").write_text(json.dumps(metrics))

    return _in_run(change)


def _truncate(relative: str, keep: float = 0.5) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        path = run / relative
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    return _in_run(change)


def _foreign_curve(run: Path) -> None:
    np.savez(run / "curve.npz", a=np.zeros(3))
    metrics = json.loads((run / "metrics.json").read_text())
    del metrics["sha256"]  # as a directory written before checksums were recorded
    (run / "metrics.json").write_text(json.dumps(metrics))


#: The finished run of the catalogue (paper game, smooth_ce, T = 20): its trajectory's shape.
RUN_POLICY_SHAPE = (20, 2, 2, 2)
_NAN_POLICY = np.full(RUN_POLICY_SHAPE, 0.5)
_NAN_POLICY[3, 1, 0, 1] = np.nan


# ---------------------------------------------------------------------------------------
# the catalogue
# ---------------------------------------------------------------------------------------
GAME = "Game files"
RUN_S = "markovgames run"
SWEEP_S = "markovgames sweep"
EVAL_S = "markovgames evaluate"
SOLVE_S = "markovgames solve"
REPRO_S = "markovgames reproduce"
PLOT_S = "markovgames plot and summarize"
CERT_S = "markovgames certify"
ARGS_S = "Any command"

CASES: list[Case] = [
    # ---- game files (through `run --game FILE`, which reads the game before anything else)
    Case(
        "game-not-json",
        GAME,
        "not JSON",
        _write_game("game.json", text="this is not json\n"),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not valid JSON", "line 1 column 1"),
        subprocess=True,
    ),
    Case(
        "game-empty",
        GAME,
        "an empty file",
        _write_game("game.json", text=""),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "the file is empty"),
    ),
    Case(
        "game-not-utf8",
        GAME,
        "not UTF-8 text",
        _write_bytes("game.json", b'{"name": "caf\xe9"}'),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not UTF-8", "0xe9", "offset 13"),
    ),
    Case(
        "game-truncated",
        GAME,
        "truncated JSON (the file ends early)",
        _truncated_game,
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not valid JSON", "truncated?", "line 1 column"),
    ),
    Case(
        "game-duplicate-key",
        GAME,
        "a key given twice",
        _write_game("game.json", text=json.dumps(BASE_GAME)[:-1] + ', "horizon": 3}'),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "duplicate key 'horizon'"),
    ),
    Case(
        "game-top-level-not-object",
        GAME,
        "the top level is not an object",
        _write_game("game.json", text="[1, 2]"),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "top level", "a list of 2 entries"),
    ),
    Case(
        "game-wrong-type-size",
        GAME,
        "a size of the wrong type",
        _write_game("game.json", _set(("horizon",), "two")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "horizon", "'two'"),
    ),
    Case(
        "game-wrong-type-boolean",
        GAME,
        "a boolean where a size belongs",
        _write_game("game.json", _set(("num_states",), True)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_states", "a boolean (true)"),
    ),
    Case(
        "game-wrong-type-entry",
        GAME,
        "an array entry of the wrong type",
        _write_game("game.json", _set(("rewards", 0, 1, 0, 1, 0), "high")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][1][0][1][0]", "'high'"),
    ),
    Case(
        "game-missing-key",
        GAME,
        "a required key is missing",
        _write_game("game.json", _pop("transitions")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "missing key", "'transitions'"),
    ),
    Case(
        "game-unknown-key",
        GAME,
        "an unknown key",
        _write_game("game.json", _set(("colour",), "red")),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "unknown key", "'colour'"),
    ),
    Case(
        "game-format-version",
        GAME,
        "an unsupported format_version",
        _write_game("game.json", _set(("format_version",), 2)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "format_version = 2"),
    ),
    Case(
        "game-nesting-too-deep",
        GAME,
        "arrays nested deeper than the sizes declare",
        _write_game("game.json", _set(("rewards", 0, 1, 0, 1, 0), [0.5])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][1][0][1][0]", "nesting too deep"),
    ),
    Case(
        "game-nesting-too-shallow",
        GAME,
        "arrays nested shallower than the sizes declare",
        _write_game("game.json", _set(("rewards", 0, 1, 0, 1), 0.5)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][1][0][1]", "nesting too shallow", "0.5"),
    ),
    Case(
        "game-size-mismatch",
        GAME,
        "declared sizes disagree with the arrays",
        _write_game("game.json", _set(("num_states",), 3)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[0][0]", "expected 3 entries (num_states), got 2"),
    ),
    Case(
        "game-num-actions-mismatch",
        GAME,
        "num_actions has the wrong length",
        _write_game("game.json", _set(("num_actions",), [2])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_actions", "expected 2 entries (num_players), got 1"),
    ),
    Case(
        "game-nan",
        GAME,
        "NaN in an array",
        _write_game("game.json", _set(("rewards", 1, 0, 1, 0, 1), float("nan"))),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[1][0][1][0][1] = nan", "not finite"),
    ),
    Case(
        "game-infinity",
        GAME,
        "Infinity in an array",
        _write_game("game.json", _set(("transitions", 0, 1, 0, 1, 0), float("inf"))),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transitions[0][1][0][1][0] = inf", "not finite"),
    ),
    Case(
        "game-reward-out-of-range",
        GAME,
        "a reward outside [0, 1]",
        _write_game("game.json", _set(("rewards", 1, 0, 1, 0, 1), 1.5)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards[1][0][1][0][1] = 1.5", "outside [0, 1]"),
    ),
    Case(
        "game-negative-probability",
        GAME,
        "a negative transition probability",
        _write_game("game.json", _set(("transitions", 0, 1, 0, 1), [1.2, -0.2])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transitions[0][1][0][1][1] = -0.2", "negative"),
    ),
    Case(
        "game-row-not-summing-to-1",
        GAME,
        "a transition row that does not sum to 1",
        _write_game("game.json", _set(("transitions", 1, 0, 1, 1), [0.5, 0.6])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transitions[1][0][1][1]", "sums to 1.1"),
    ),
    Case(
        "game-initial-state-out-of-range",
        GAME,
        "the initial state is not a state",
        _write_game("game.json", _set(("initial_state",), 2)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "initial_state = 2", "0..1"),
    ),
    Case(
        "game-zero-players",
        GAME,
        "zero players",
        _write_game("game.json", _set(("num_players",), 0)),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_players = 0", "at least 1"),
    ),
    Case(
        "game-zero-actions",
        GAME,
        "a player with zero actions",
        _write_game("game.json", _set(("num_actions",), [2, 0])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "num_actions[1] = 0", "at least 1"),
    ),
    Case(
        "game-too-large-declared",
        GAME,
        "declared sizes needing more memory than allowed (refused before allocating)",
        _write_game("game.json", lambda g: g.update(num_states=10**6, num_actions=[10**4, 10**4])),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "rewards", "S=1000000", "more than max_entries"),
    ),
    Case(
        "game-file-too-large",
        GAME,
        "a file over the size limit (--max-bytes)",
        _write_game("game.json"),
        ("games", "validate", "game.json", "--max-bytes", "100"),
        ("game.json", "more than the limit of 100 bytes"),
    ),
    Case(
        "game-npz-object-array",
        GAME,
        "an .npz with an object array (never unpickled)",
        _npz_with_object_array,
        ("run", "--game", "game.npz", *RUN),
        ("game.npz", "rewards", "object arrays are not allowed"),
    ),
    Case(
        "game-npz-not-a-zip",
        GAME,
        "an .npz that is not a zip archive",
        _write_bytes("game.npz", b"not a zip\n"),
        ("run", "--game", "game.npz", *RUN),
        ("game.npz", "not a valid .npz"),
    ),
    Case(
        "game-npz-forged-size",
        GAME,
        "an .npz member that declares more bytes than deflate can expand (a forged or damaged archive)",
        _npz_game_forged_size,
        ("run", "--game", "game.npz", *RUN),
        ("game.npz", "rewards.npy: declares 4000000000 bytes uncompressed", "more than deflate can expand (1032:1)"),
    ),
    Case(
        "game-unknown-suffix",
        GAME,
        "a game file that is neither .json nor .npz",
        _write_game("game.txt"),
        ("games", "validate", "game.txt"),
        ("game.txt", "unknown game file type", "'.txt'"),
    ),
    Case(
        "game-no-such-file",
        GAME,
        "neither a built-in game nor an existing file",
        None,
        ("run", "--game", "nope.json", *RUN),
        ("'nope.json'", "neither a built-in game"),
    ),
    Case(
        "game-sparse-successor-out-of-range",
        GAME,
        "a sparse game's successor state that is not a state",
        _write_game("game.json", _set(("transition_successors", 1, 0, 1, 0, 1), 5), sparse=True),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transition_successors[1][0][1][0][1] = 5", "out of range 0..1"),
    ),
    Case(
        "game-sparse-duplicate-successor",
        GAME,
        "a sparse row listing one successor twice",
        _write_game("game.json", _set(("transition_successors", 0, 1, 0, 0), [1, 1]), sparse=True),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "transition_successors[0][1][0][0]", "listed twice"),
    ),
    Case(
        "game-sparse-and-dense",
        GAME,
        "both the dense and the sparse transition form",
        _write_game("game.json", _set(("transitions",), BASE_GAME["transitions"]), sparse=True),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "both 'transitions' and the sparse form"),
    ),
    Case(
        "game-fifo",
        GAME,
        "a game file that is a FIFO (it would block the reader)",
        _fifo("game.json"),
        ("run", "--game", "game.json", *RUN),
        ("game.json", "not a regular file (a FIFO)"),
    ),
    Case(
        "game-device",
        GAME,
        "a game file that is a device (/dev/zero never ends)",
        _device("game.npz"),
        ("games", "validate", "game.npz"),
        ("game.npz", "not a regular file (a character device)"),
    ),
    Case(
        "games-random-initial-state",
        GAME,
        "an initial state outside the states",
        None,
        (
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--initial-state",
            "5",
            "--out",
            "g.json",
        ),
        ("--initial-state", "0..2", "got 5"),
    ),
    Case(
        "games-export-onto-input",
        GAME,
        "a conversion onto the game file it reads (even with --force)",
        _write_game("game.json"),
        ("games", "export", "game.json", "--out", "game.json", "--force"),
        ("--out game.json", "is the input game.json"),
    ),
    Case(
        "games-export-force-fifo",
        GAME,
        "--force onto a FIFO (never replaced)",
        _fifo("g.json"),
        ("games", "export", "paper", "--out", "g.json", "--force"),
        ("--out g.json", "is a FIFO, not a regular file"),
    ),
    Case(
        "games-random-out-symlink",
        GAME,
        "--force onto a symbolic link (its target is never replaced)",
        _symlink_to_file("g.json"),
        (
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--out",
            "g.json",
            "--force",
        ),
        ("--out g.json", "is a symbolic link"),
    ),
    Case(
        "games-random-successors",
        GAME,
        "more successors per row than states",
        None,
        (
            "games",
            "random",
            "--players",
            "2",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--successors",
            "4",
            "--out",
            "g.json",
        ),
        ("--successors", "1..--states = 3", "got 4"),
    ),
    Case(
        "games-random-zero-sum-players",
        GAME,
        "a zero-sum game asked for more than two players",
        None,
        (
            "games",
            "random",
            "--players",
            "3",
            "--horizon",
            "2",
            "--states",
            "3",
            "--actions",
            "2",
            "--seed",
            "1",
            "--zero-sum",
            "--out",
            "g.json",
        ),
        ("--zero-sum", "two players", "--players 3"),
    ),
    # ---- markovgames run
    Case(
        "run-T-zero",
        RUN_S,
        "T < 1",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "0", "--out", "out"),
        ("-T", "at least 1", "got 0"),
    ),
    Case(
        "run-T-not-integer",
        RUN_S,
        "T not an integer",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "1.5", "--out", "out"),
        ("-T", "positive integer", "'1.5'"),
    ),
    Case(
        "run-T-too-large",
        RUN_S,
        "T beyond what the compiled loop can count",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "1e30", "--out", "out"),
        ("-T", "1e30", "largest supported T"),
    ),
    Case(
        "run-eta-zero",
        RUN_S,
        "eta <= 0",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--eta", "0", "--out", "out"),
        ("--eta", "positive", "'0'"),
    ),
    Case(
        "run-eta-not-a-number",
        RUN_S,
        "eta neither a number nor 'theory'",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--eta", "fast", "--out", "out"),
        ("--eta", "'fast'"),
    ),
    Case(
        "run-eta-too-large",
        RUN_S,
        "a learning rate whose logits eta (T + H) float64 cannot resolve",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "1000", "--eta", "1e18", "--out", "out"),
        ("--eta", "1e+18", "at most 3.6e+13"),
    ),
    Case(
        "run-out-current-directory",
        RUN_S,
        "--out naming the working directory, which a run would replace",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", ".", "--overwrite"),
        ("--out .:", "is the current directory or contains it"),
    ),
    Case(
        "run-unknown-algorithm",
        RUN_S,
        "an unknown algorithm",
        None,
        ("run", "--game", "paper", "--algorithm", "nope", "-T", "10", "--out", "out"),
        ("--algorithm", "'nope'", "smooth_ce"),
    ),
    Case(
        "run-unknown-learner",
        RUN_S,
        "an unknown learner in LEARNER+UPDATE",
        None,
        ("run", "--game", "paper", "--algorithm", "rm_plus+smooth", "-T", "10", "--out", "out"),
        ("--algorithm", "unknown learner 'rm_plus'", "did you mean 'rm-plus'?", "choose one of: hedge, logbarrier, rm-plus"),
    ),
    Case(
        "run-unknown-value-update",
        RUN_S,
        "an unknown value update in LEARNER+UPDATE",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+fast", "-T", "10", "--out", "out"),
        ("--algorithm", "unknown value update 'fast'", "choose one of: smooth, stage"),
    ),
    Case(
        "run-algorithm-file-missing",
        RUN_S,
        "a reference to a file that does not exist",
        None,
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "no such file mine.py"),
    ),
    Case(
        "run-algorithm-file-fails",
        RUN_S,
        "a file that raises while it loads",
        _write_bytes("mine.py", b"import sys\nraise RuntimeError('boom')\n"),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "loading mine.py failed: line 2: RuntimeError: boom"),
    ),
    Case(
        "run-algorithm-file-exits",
        RUN_S,
        "a file that calls sys.exit while it loads",
        _write_bytes("mine.py", b"raise SystemExit(3)\n"),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "loading mine.py failed: line 1: SystemExit: 3"),
    ),
    Case(
        "run-learner-not-a-distribution",
        RUN_S,
        "a user's learner that plays unnormalised weights (checked at every iteration)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x * 0.7")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        ("learner 'mine': play returned a strategy that does not sum to 1 at iteration 1, player 0, step 0, state 0",),
        leaves_lock=True,
    ),
    Case(
        "run-learner-wrong-shape",
        RUN_S,
        "a user's learner whose strategy lost its action axis (checked when the loop starts)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x[..., 0]")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        (
            "learner 'mine': play returned as its strategy a float64 array of shape [2, 2]",
            "expected a float64 array of shape [2, 2, 2]",
        ),
    ),
    Case(
        "run-learner-raises",
        RUN_S,
        "a user's learner whose code raises (the user's error, with the file and line)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"undefined_name")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        ("learner 'mine': play raised NameError: name 'undefined_name' is not defined (mine.py, line 8)",),
    ),
    Case(
        "run-resume-nothing-saved",
        RUN_S,
        "--resume where no run saved its state (refused, not started afresh)",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--resume", "--out", "out"),
        ("--resume: out: there is no saved state to continue", "run the command without --resume"),
    ),
    Case(
        "run-algorithm-file-too-large",
        RUN_S,
        "a learner's file over the size limit (refused unread)",
        _sparse_file("mine.py", 3 * 2**30),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "mine.py is more than 16777216 bytes (16 MiB), the limit of a learner's source file"),
    ),
    Case(
        "run-algorithm-not-an-algorithm",
        RUN_S,
        "a reference to something that is not an Algorithm",
        _write_bytes("mine.py", b"RATE = 0.5\n"),
        ("run", "--game", "paper", "--algorithm", "mine.py:RATE", "-T", "10", "--out", "out"),
        ("--algorithm", "a float is not a markovgames.dynamics.Algorithm"),
    ),
    Case(
        "run-algorithm-learner-without-update",
        RUN_S,
        "a reference to a learner without its value update",
        _write_bytes(
            "mine.py",
            b"from markovgames.learners import LearnerSpec, optimistic_hedge\nLEARNER = LearnerSpec('mine', optimistic_hedge)\n",
        ),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER", "-T", "10", "--out", "out"),
        ("--algorithm", "'mine' is a learner; add the value update: mine.py:LEARNER+smooth or mine.py:LEARNER+stage"),
    ),
    Case(
        "run-checkpoints-beyond-T",
        RUN_S,
        "a checkpoint beyond T",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoints", "5,50", "--out", "out"),
        ("--checkpoints", "50", "beyond T = 10"),
    ),
    Case(
        "run-checkpoints-not-integer",
        RUN_S,
        "a checkpoint that is not an integer",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoints", "5,x", "--out", "out"),
        ("--checkpoints", "'x'"),
    ),
    Case(
        "run-checkpoint-every-zero",
        RUN_S,
        "--checkpoint-every < 1",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoint-every", "0", "--out", "out"),
        ("--checkpoint-every", "got 0"),
    ),
    Case(
        "run-trajectory-tolerance-range",
        RUN_S,
        "--trajectory-tolerance outside [0, 1)",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--trajectory-tolerance", "1.5", "--out", "out"),
        ("--trajectory-tolerance", "[0, 1)", "got 1.5"),
    ),
    Case(
        "run-trajectory-tolerance-with-exact",
        RUN_S,
        "--trajectory-tolerance with --exact (which needs the whole trajectory)",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "smooth_ce",
            "-T",
            "10",
            "--trajectory-tolerance",
            "0.01",
            "--exact",
            "--out",
            "out",
        ),
        ("--exact", "drop --trajectory-tolerance"),
    ),
    Case(
        "run-out-unwritable",
        RUN_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "afile/out"),
        ("--out afile/out", "afile is not a directory"),
    ),
    Case(
        "run-out-is-a-file",
        RUN_S,
        "an output path that is a file",
        _a_file,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "afile"),
        ("--out afile", "not a directory"),
    ),
    Case(
        "run-out-holds-another-run",
        RUN_S,
        "an output directory that already holds a different run",
        _another_run(),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("out", "not empty", "--overwrite"),
    ),
    Case(
        "run-overwrite-not-a-run",
        RUN_S,
        "--overwrite of a directory that holds no markovgames run (no marker file)",
        _foreign_directory,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--overwrite"),
        ("out", "holds no markovgames run", ".markovgames", "--overwrite replaces only"),
    ),
    Case(
        "run-out-symlink",
        RUN_S,
        "an output directory that is a symbolic link (never followed)",
        _symlink_to_directory,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--overwrite"),
        ("out", "is a symbolic link"),
    ),
    Case(
        "run-out-contains-game",
        RUN_S,
        "--out naming the directory that holds the game file (a run replaces its whole output directory)",
        lambda d: (
            (d / "out").mkdir(),
            _write_game("out/game.json")(d),
            (d / "out" / ".markovgames").write_text('{"format": "markovgames-output/1", "kind": "run"}\n'),
        ),
        ("run", "--game", "out/game.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--overwrite", "--quiet"),
        ("--out out", "contains the input out/game.json"),
    ),
    Case(
        "run-out-busy",
        RUN_S,
        "an output directory another command is writing to (it holds the lock)",
        _busy("out"),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("--out out", "another markovgames command is writing to this directory", ".out.lock"),
    ),
    Case(
        "run-checkpoints-too-many",
        RUN_S,
        "more checkpoints than a run reports (10000)",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "smooth_ce",
            "-T",
            "20000",
            "--checkpoints",
            ",".join(map(str, range(1, 10002))),
            "--out",
            "out",
        ),
        ("--checkpoints", "10001 checkpoints", "limit of 10000"),
    ),
    Case(
        "run-resume-different-config",
        RUN_S,
        "--resume of an interrupted run with another configuration",
        _interrupted_run,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoint-every", "5", "--resume", "--out", "out"),
        (".out.partial", "different configuration"),
    ),
    Case(
        "run-resume-finished-different-config",
        RUN_S,
        "--resume of a finished run with another configuration",
        _finished_run,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--resume", "--out", "out"),
        ("out", "finished run with a different configuration", "T: 1000 there, 10 now", "nothing to resume"),
    ),
    Case(
        "run-resume-learner-changed",
        RUN_S,
        "--resume of a run of a user's learner whose file has changed since",
        _in_run(_learner_changed),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "20", "--resume", "--out", "run"),
        ("run: holds a finished run with a different configuration", "algorithm_sha256", "the learner's file has changed"),
        needs_run=True,
    ),
    # ---- markovgames sweep
    Case(
        "sweep-run-file-damaged",
        SWEEP_S,
        "a run file of an interrupted sweep that was changed (a field of the wrong type)",
        _sweep_directory(edit_run=lambda doc: doc["records"][0].update(value="high")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sw/runs/", "records[0].value: expected a list of 2 finite numbers (N)", "delete the file to run that run again"),
    ),
    Case(
        "sweep-manifest-damaged",
        SWEEP_S,
        "a manifest.json that was changed (a field of the wrong type)",
        _sweep_directory(edit_manifest=lambda doc: doc["sessions"][0].update(retries="many")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sw/manifest.json", "sessions[0].retries: expected a non-negative integer", "delete it to start the manifest afresh"),
    ),
    Case(
        "sweep-manifest-nested-too-deep",
        SWEEP_S,
        "a manifest.json nested thousands deep",
        _sweep_directory(manifest_text="[" * 100000 + "]" * 100000),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sw/manifest.json", "JSON nested too deep"),
    ),
    Case(
        "sweep-unknown-key",
        SWEEP_S,
        "an unknown configuration key",
        _toml(SWEEP_BASE + "colour = 1\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "unknown key 'colour'", "allowed keys"),
        subprocess=True,
    ),
    Case(
        "sweep-unknown-nested-key",
        SWEEP_S,
        "an unknown key in a nested table",
        _sweep('games = ["paper"]', "games = [{random = {players = 2, horizon = 1, states = 2, actions = 2, colour = 1}}]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0].random", "unknown key 'colour'"),
    ),
    Case(
        "sweep-T-float",
        SWEEP_S,
        "T written as a float (a count is an integer, as in game files)",
        _sweep("T = 50", "T = 50.0"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "got 50.0", "a float"),
    ),
    Case(
        "sweep-grid-too-large",
        SWEEP_S,
        "a grid of more runs than --max-runs (checked before it is expanded)",
        _sweep(
            'games = ["paper"]', "games = [{random = {players = 2, horizon = 2, states = 2, actions = 2}}]\nseeds = 1000000000"
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "the grid has 1000000000 runs", "more than --max-runs = 100000", "raise the limit with --max-runs"),
    ),
    Case(
        "sweep-random-games-too-large",
        SWEEP_S,
        "random games that together need more memory than the machine has",
        _sweep(
            'games = ["paper"]',
            "games = [{random = {players = 2, horizon = 1, states = 4096, actions = 64, successors = 1}}]\nseeds = 100000",
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0]", "the grid's random games take", "more than this machine's"),
    ),
    Case(
        "sweep-T-memory",
        SWEEP_S,
        "a T whose batches need more memory than the machine has",
        _sweep("T = 50", "T = 2147483647"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T: a batch of 2147483647 iterations takes about", "more than this machine's"),
    ),
    Case(
        "sweep-checkpoints-too-many",
        SWEEP_S,
        "more checkpoints than a run reports (10000)",
        _toml(SWEEP_BASE.replace("T = 50", "T = 20000").replace("[10, 50]", str(list(range(1, 10002))))),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "checkpoints", "10001 checkpoints", "limit of 10000"),
    ),
    Case(
        "sweep-nested-too-deep",
        SWEEP_S,
        "arrays nested thousands deep",
        _toml("a = " + "[" * 5000 + "]" * 5000 + "\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "invalid TOML", "nested too deep"),
    ),
    Case(
        "sweep-dotted-key-too-long",
        SWEEP_S,
        "a dotted key of thousands of parts (refused before it is parsed)",
        _toml(SWEEP_BASE + ".".join(["a"] * 100_000) + " = 1\n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "line 6", "a dotted key of more than 32 parts"),
    ),
    Case(
        "sweep-config-fifo",
        SWEEP_S,
        "a configuration that is a FIFO",
        _fifo("sweep.toml"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "not a regular file (a FIFO)"),
    ),
    Case(
        "sweep-out-busy",
        SWEEP_S,
        "a sweep directory another command is writing to",
        _both(_toml(SWEEP_BASE), _busy("sw")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("--out sw", "another markovgames command is writing to this directory"),
    ),
    Case(
        "sweep-wrong-type",
        SWEEP_S,
        "a value of the wrong type",
        _sweep("T = 50", 'T = "ten"'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "'ten'"),
    ),
    Case(
        "sweep-T-zero",
        SWEEP_S,
        "T < 1",
        _sweep("T = 50", "T = 0"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "got 0"),
    ),
    Case(
        "sweep-T-too-large",
        SWEEP_S,
        "T beyond what the compiled loop can count",
        _sweep("T = 50", "T = 10_000_000_000"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "T:", "largest supported T"),
    ),
    Case(
        "sweep-eta-huge-integer",
        SWEEP_S,
        "a learning rate too large for a float",
        _sweep("etas = [0.2]", "etas = [1" + "0" * 400 + "]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[0]", "learning rate"),
    ),
    Case(
        "sweep-eta-too-large",
        SWEEP_S,
        "a learning rate whose logits the dtype cannot resolve",
        _sweep("etas = [0.2]", "etas = [0.2, 1e300]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[1]", "1e+300 is too large"),
    ),
    Case(
        "sweep-eta-nonpositive",
        SWEEP_S,
        "a learning rate <= 0",
        _sweep("etas = [0.2]", "etas = [0.2, 0]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas[1]", "got 0"),
    ),
    Case(
        "sweep-empty-etas",
        SWEEP_S,
        "an empty grid: etas = []",
        _sweep("etas = [0.2]", "etas = []"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "etas:", "non-empty"),
    ),
    Case(
        "sweep-empty-algorithms",
        SWEEP_S,
        "an empty grid: algorithms = []",
        _sweep('algorithms = ["smooth_ce"]', "algorithms = []"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms:", "must not be empty"),
    ),
    Case(
        "sweep-empty-games",
        SWEEP_S,
        "an empty grid: games = []",
        _sweep('games = ["paper"]', "games = []"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games:", "must not be empty"),
    ),
    Case(
        "sweep-unknown-algorithm",
        SWEEP_S,
        "an unknown algorithm",
        _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["smooth_ce", "foo"]'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[1]", "'foo'"),
    ),
    Case(
        "sweep-learner-wrong-shape",
        SWEEP_S,
        "a user's learner that breaks the protocol (checked before any worker starts)",
        _both(
            _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x[..., 0]")),
            _sweep('algorithms = ["smooth_ce"]', 'algorithms = ["mine.py:LEARNER+smooth"]'),
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "algorithms[0]", "learner 'mine': play returned as its strategy a float64 array of shape [2, 2]"),
    ),
    Case(
        "sweep-checkpoints-beyond-T",
        SWEEP_S,
        "a checkpoint beyond T",
        _sweep("[10, 50]", "[10, 500]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "checkpoints", "500 is beyond T = 50"),
    ),
    Case(
        "sweep-invalid-toml",
        SWEEP_S,
        "not TOML",
        _toml("T = \n"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "invalid TOML", "line 1"),
    ),
    Case(
        "sweep-not-utf8",
        SWEEP_S,
        "a configuration that is not UTF-8",
        _write_bytes("sweep.toml", b'name = "caf\xe9"\n'),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "not UTF-8"),
    ),
    Case(
        "sweep-no-such-config",
        SWEEP_S,
        "a configuration file that does not exist",
        None,
        ("sweep", "nope.toml", "--out", "sw"),
        ("nope.toml", "no such configuration file"),
    ),
    Case(
        "sweep-bad-override",
        SWEEP_S,
        "--set with an impossible value",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--set", "T=0", "--out", "sw"),
        ("sweep.toml", "T:", "got 0"),
    ),
    Case(
        "sweep-override-out-of-range",
        SWEEP_S,
        "--set of a list entry that does not exist",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--set", "games[5].label=x", "--out", "sw"),
        ("--set games[5].label", "out of range"),
    ),
    Case(
        "sweep-bad-game-file",
        SWEEP_S,
        "a game file of the grid is invalid",
        _both(
            _toml(SWEEP_BASE.replace('"paper"', '"game.json"')), _write_game("game.json", _set(("rewards", 1, 0, 1, 0, 1), 1.5))
        ),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("games[0]", "game.json", "rewards[1][0][1][0][1] = 1.5"),
    ),
    Case(
        "sweep-workers-zero",
        SWEEP_S,
        "--workers < 1",
        _toml(SWEEP_BASE),
        ("sweep", "sweep.toml", "--workers", "0", "--out", "sw"),
        ("--workers", "got 0"),
    ),
    Case(
        "sweep-out-unwritable",
        SWEEP_S,
        "an output directory that cannot be created (its parent is a file)",
        _both(_toml(SWEEP_BASE), _a_file),
        ("sweep", "sweep.toml", "--out", "afile/sw"),
        ("--out afile/sw", "afile is not a directory"),
    ),
    Case(
        "sweep-out-holds-a-run",
        SWEEP_S,
        "an output directory that already holds a run, not a sweep",
        _both(_toml(SWEEP_BASE), _another_run("sw")),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("--out sw", "not a sweep directory"),
    ),
    Case(
        "sweep-out-has-runs-folder",
        SWEEP_S,
        "an output folder with a runs/ subfolder that no sweep made (recognised by the sweep's marker only)",
        _both(_toml(SWEEP_BASE), _folder_with_runs),
        ("sweep", "sweep.toml", "--out", "proj"),
        ("--out proj", "not a sweep directory"),
    ),
    Case(
        "sweep-zero-sum-players",
        SWEEP_S,
        "a zero-sum random game with more than two players",
        _sweep('games = ["paper"]', "games = [{random = {players = 3, horizon = 2, states = 2, actions = 2, zero_sum = true}}]"),
        ("sweep", "sweep.toml", "--out", "sw"),
        ("sweep.toml", "games[0].random", "zero_sum = true needs players = 2"),
    ),
    # ---- markovgames evaluate
    Case(
        "evaluate-not-a-run",
        EVAL_S,
        "a directory that is not a run directory",
        lambda d: (d / "somewhere").mkdir(),
        ("evaluate", "somewhere"),
        ("somewhere", "not a run directory", "metrics.json"),
    ),
    Case("evaluate-T-zero", EVAL_S, "T' < 1", None, ("evaluate", "run", "-T", "0"), ("-T", "got 0"), needs_run=True),
    Case(
        "evaluate-seed-negative",
        EVAL_S,
        "a negative Monte Carlo seed",
        None,
        ("evaluate", "run", "--monte-carlo", "10", "--seed", "-1"),
        ("--seed", "got -1"),
        needs_run=True,
    ),
    Case(
        "evaluate-T-beyond-run",
        EVAL_S,
        "T' beyond the run's T",
        None,
        ("evaluate", "run", "-T", "500"),
        ("-T", "T = 20", "got 500"),
        needs_run=True,
    ),
    Case(
        "evaluate-monte-carlo-too-few",
        EVAL_S,
        "--monte-carlo < 2",
        None,
        ("evaluate", "run", "--monte-carlo", "1"),
        ("--monte-carlo", "got 1"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-unwritable",
        EVAL_S,
        "an output file whose directory is a file",
        _a_file,
        ("evaluate", "run", "--out", "afile/evaluation.json"),
        ("--out afile/evaluation.json", "afile is not an existing directory"),
        needs_run=True,
    ),
    Case(
        "evaluate-earlier-evaluation",
        EVAL_S,
        "an earlier evaluation.json in the run directory",
        _earlier_evaluation,
        ("evaluate", "run"),
        ("run/evaluation.json", "exists", "--overwrite"),
        needs_run=True,
    ),
    Case(
        "evaluate-policy-not-a-distribution",
        EVAL_S,
        "a stored policy row that is not a probability vector (zeros)",
        _policy(0, np.zeros(RUN_POLICY_SHAPE)),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_0.npy", "row [0][0][0] (iteration 1, step 0, state 0)", "sums to 0.0, not 1"),
        needs_run=True,
    ),
    Case(
        "evaluate-policy-nan",
        EVAL_S,
        "a stored policy entry that is NaN",
        _policy(1, _NAN_POLICY),
        ("evaluate", "run", "--monte-carlo", "100"),
        ("run/trajectory/policy_1.npy", "entry [3][1][0][1]", "= nan is not finite"),
        needs_run=True,
    ),
    Case(
        "evaluate-policy-integer",
        EVAL_S,
        "a stored policy of the wrong dtype (integers)",
        _policy(0, np.ones(RUN_POLICY_SHAPE, dtype=np.int64)),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_0.npy", "expected a float64 array", "got dtype int64"),
        needs_run=True,
    ),
    Case(
        "evaluate-trajectory-too-short",
        EVAL_S,
        "a trajectory shorter than the run's T (T' beyond the trajectory)",
        _policy(0, np.full((10, 2, 2, 2), 0.5)),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_0.npy", "shape (20, 2, 2, 2)", "got dtype float64 with shape (10, 2, 2, 2)"),
        needs_run=True,
    ),
    Case(
        "evaluate-trajectory-truncated",
        EVAL_S,
        "a truncated trajectory file",
        _truncate("trajectory/policy_1.npy"),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_1.npy", "truncated"),
        needs_run=True,
    ),
    Case(
        "evaluate-curve-damaged",
        EVAL_S,
        "a curve.npz that is not the one the run wrote (its SHA-256 differs)",
        _truncate("curve.npz"),
        ("evaluate", "run"),
        ("run/curve.npz", "SHA-256 differs from the one metrics.json records"),
        needs_run=True,
    ),
    Case(
        "evaluate-curve-compressed",
        EVAL_S,
        "a curve.npz with compressed members (a run writes them uncompressed: a compressed one may be a bomb)",
        _in_run(_compressed_curve),
        ("evaluate", "run"),
        ("run/curve.npz", "a compressed member", "written uncompressed"),
        needs_run=True,
    ),
    Case(
        "evaluate-game-file-too-large",
        EVAL_S,
        "a game file over the size limit (refused before it is hashed)",
        _in_run(_huge_sparse_game_in_run),
        ("evaluate", "run"),
        ("run/game.json", "file is 21474836480 bytes, more than the limit of 268435456 bytes"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-field-type",
        EVAL_S,
        "a metrics.json field of the wrong type",
        _metrics(lambda m: m.update(optimistic="yes")),
        ("evaluate", "run"),
        ("run/metrics.json", "optimistic", 'expected true or false, got "yes"'),
        needs_run=True,
    ),
    Case(
        "evaluate-curve-foreign",
        EVAL_S,
        "a curve.npz with other arrays (in a directory that records no checksums)",
        _in_run(_foreign_curve),
        ("evaluate", "run"),
        ("run/curve.npz", "expected the arrays value, certified_ce_bound, certified_cce_bound"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-nested-too-deep",
        EVAL_S,
        "a metrics.json nested thousands deep",
        _in_run(lambda run: (run / "metrics.json").write_text("[" * 100000 + "]" * 100000)),
        ("evaluate", "run"),
        ("run/metrics.json", "nested too deep"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-names-a-users-file",
        EVAL_S,
        "a metrics.json without value_update whose algorithm names a file (never loaded)",
        _in_run(_names_a_users_file),
        ("evaluate", "run"),
        ("run/metrics.json", "value_update: missing", "'evil.py:X' is not a built-in algorithm"),
        needs_run=True,
    ),
    Case(
        "evaluate-game-file-outside",
        EVAL_S,
        "a metrics.json whose game_file points outside the run directory",
        _metrics(lambda m: m.update(game_file="../game.json")),
        ("evaluate", "run"),
        ("run/metrics.json", "game_file", "expected game.json or game.npz"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-fifo",
        EVAL_S,
        "a metrics.json that is a FIFO",
        _in_run(lambda run: ((run / "metrics.json").unlink(), os.mkfifo(run / "metrics.json"))),
        ("evaluate", "run"),
        ("run/metrics.json", "not a regular file (a FIFO)"),
        needs_run=True,
    ),
    Case(
        "evaluate-run-busy",
        EVAL_S,
        "a run directory another command is writing to (it holds the lock)",
        _busy("run"),
        ("evaluate", "run"),
        ("run", "another markovgames command is writing to this directory"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-is-an-input",
        EVAL_S,
        "--out naming a file the evaluation reads (never replaced, even with --overwrite)",
        None,
        ("evaluate", "run", "--out", "run/metrics.json", "--overwrite"),
        ("--out run/metrics.json", "is the input", "an output never replaces what the command reads"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-inside-trajectory",
        EVAL_S,
        "--out inside the run's trajectory directory",
        None,
        ("evaluate", "run", "--out", "run/trajectory/policy_0.npy", "--overwrite"),
        ("--out run/trajectory/policy_0.npy", "lies inside the input", "run/trajectory"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-fifo",
        EVAL_S,
        "--out naming a FIFO (never replaced, even with --overwrite)",
        _fifo("ev.json"),
        ("evaluate", "run", "--out", "ev.json", "--overwrite"),
        ("--out ev.json", "is a FIFO, not a regular file", "replaces only regular files"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-symlink",
        EVAL_S,
        "--out naming a symbolic link (its target is never replaced)",
        _symlink_to_file("ev.json"),
        ("evaluate", "run", "--out", "ev.json", "--overwrite"),
        ("--out ev.json", "is a symbolic link", "never writes through one"),
        needs_run=True,
    ),
    # ---- markovgames solve
    Case(
        "solve-bad-objective",
        SOLVE_S,
        "an unknown objective",
        None,
        ("solve", "--game", "paper", "--concept", "ce", "--objective", "nope", "--out", "out"),
        ("objective", "'nope'"),
    ),
    Case(
        "solve-out-unwritable",
        SOLVE_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("solve", "--game", "paper", "--concept", "ce", "--out", "afile/out"),
        ("--out afile/out", "afile is not a directory"),
    ),
    Case(
        "solve-overwrite-not-a-run",
        SOLVE_S,
        "--overwrite of a directory that holds no markovgames run (no marker file)",
        _foreign_directory,
        ("solve", "--game", "paper", "--concept", "ce", "--out", "out", "--overwrite"),
        ("out", "holds no markovgames run"),
    ),
    Case(
        "solve-out-holds-another-run",
        SOLVE_S,
        "an output directory that already holds a different run",
        _another_run(),
        ("solve", "--game", "paper", "--concept", "ce", "--out", "out"),
        ("out", "not empty", "--overwrite"),
    ),
    # ---- markovgames reproduce
    Case(
        "certify-policy-missing",
        CERT_S,
        "a policy directory without a player's file",
        _policies(1),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("pols/policy_1.npy: missing", "policy_0.npy .. policy_1.npy"),
    ),
    Case(
        "certify-policy-wrong-shape",
        CERT_S,
        "a policy of the wrong shape for the game",
        _policies(2, shape=(3, 2, 2, 3)),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("pols/policy_0.npy: expected shape (T, H, S, A_0) = (T, 2, 2, 2), got (3, 2, 2, 3)",),
    ),
    Case(
        "certify-policy-not-a-distribution",
        CERT_S,
        "a policy row that is not a probability vector",
        _policies(2, bad_row=True),
        ("certify", "pols", "--game", "paper", "--value-update", "stage", "--out", "cert"),
        ("pols/policy_0.npy[1][0][1] sums to 0.0, not 1",),
    ),
    Case(
        "certify-policy-fifo",
        CERT_S,
        "a policy file that is a FIFO (it exists, but is not a regular file)",
        _both(_policies(1), _fifo("pols/policy_1.npy")),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("pols/policy_1.npy: exists but is a FIFO, not a regular file",),
    ),
    Case(
        "certify-out-contains-input",
        CERT_S,
        "--out naming the run whose trajectory is certified (it would delete its own input)",
        None,
        ("certify", "run/trajectory", "--game", "paper", "--value-update", "smooth", "--out", "run", "--overwrite"),
        ("--out run", "contains the input run/trajectory"),
        needs_run=True,
    ),
    Case(
        "certify-out-busy",
        CERT_S,
        "an output directory another command is writing to (a running run's, whose staging directory it would replace)",
        _both(_policies(2), _busy("cert")),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("--out cert", "another markovgames command is writing to this directory"),
    ),
    Case(
        "certify-overwrite-a-sweep",
        CERT_S,
        "--overwrite of a sweep directory (marked, but not a kind that a whole-directory output replaces)",
        _both(
            _policies(2),
            lambda d: (
                (d / "cert").mkdir(),
                (d / "cert" / ".markovgames").write_text('{"format": "markovgames-output/1", "kind": "sweep"}\n'),
            ),
        ),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert", "--overwrite"),
        ("cert", "holds a markovgames sweep directory, not a run"),
    ),
    Case(
        "reproduce-T-memory",
        REPRO_S,
        "a T whose runs need more memory than the machine has",
        None,
        ("reproduce", "-T", "2147483647", "--out", "out"),
        ("-T:", "the reproduction's 6 runs", "for T = 2147483647", "times this machine's", "choose -T at most"),
    ),
    Case("reproduce-T-zero", REPRO_S, "T < 1", None, ("reproduce", "-T", "0", "--out", "out"), ("-T", "got 0")),
    Case(
        "reproduce-eta-zero", REPRO_S, "eta <= 0", None, ("reproduce", "-T", "10", "--eta", "0", "--out", "out"), ("--eta", "'0'")
    ),
    Case(
        "reproduce-out-unwritable",
        REPRO_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("reproduce", "-T", "10", "--out", "afile/out"),
        ("--out afile/out", "afile is not a directory"),
    ),
    Case(
        "reproduce-out-holds-a-run",
        REPRO_S,
        "an output directory that already holds a run",
        _another_run(),
        ("reproduce", "-T", "10", "--out", "out"),
        ("--out out", "metrics.json", "another run"),
    ),
    Case(
        "reproduce-out-foreign",
        REPRO_S,
        "a non-empty output directory that no reproduction made (its files would be replaced)",
        _foreign_directory,
        ("reproduce", "-T", "10", "--out", "out"),
        ("--out out", "holds no markovgames reproduction"),
    ),
    # ---- markovgames plot and summarize
    Case(
        "plot-window-reversed",
        PLOT_S,
        "a slope window whose ends are reversed",
        _results,
        ("plot", "sw", "--window", "1e5,1e3"),
        ("--window", "1 <= LOW < HIGH", "'1e5,1e3'"),
    ),
    Case(
        "summarize-window-not-numbers",
        PLOT_S,
        "a slope window that is not two numbers",
        _results,
        ("summarize", "sw", "--window", "1e3"),
        ("--window", "LOW,HIGH", "'1e3'"),
    ),
    Case(
        "plot-decades-not-a-checkpoint",
        PLOT_S,
        "a decade that is not a checkpoint of the runs",
        _results,
        ("plot", "sw", "--x", "horizon", "--decades", "50"),
        ("--decades", "T' = 50", "10, 100"),
    ),
    Case(
        "plot-decades-without-x",
        PLOT_S,
        "--decades without --x",
        _results,
        ("plot", "sw", "--decades", "10"),
        ("--decades", "add --x"),
    ),
    Case(
        "summarize-markdown-exists",
        PLOT_S,
        "--markdown naming an existing file, without --overwrite",
        _both(_results, lambda d: (d / "table.md").write_text("my notes\n")),
        ("summarize", "sw", "--markdown", "table.md"),
        ("--markdown table.md", "exists; use --overwrite to replace it"),
    ),
    Case(
        "summarize-markdown-fifo",
        PLOT_S,
        "--markdown naming a FIFO (never replaced, even with --overwrite)",
        _both(_results, _fifo("table.md")),
        ("summarize", "sw", "--markdown", "table.md", "--overwrite"),
        ("--markdown table.md", "is a FIFO, not a regular file"),
    ),
    Case(
        "summarize-markdown-is-input",
        PLOT_S,
        "--markdown naming the results it reads",
        _results,
        ("summarize", "sw", "--markdown", "sw/results.parquet", "--overwrite"),
        ("--markdown sw/results.parquet", "is the input"),
    ),
    Case(
        "plot-out-contains-input",
        PLOT_S,
        "--out naming the sweep directory whose results it reads",
        _results,
        ("plot", "sw", "--out", "sw"),
        ("--out sw", "contains the input sw/results.parquet"),
    ),
    Case(
        "summarize-results-wrong-type",
        PLOT_S,
        "a results.parquet column of the wrong type (eta written as a number)",
        _results_edited(lambda rows: [r.update(eta=0.2) for r in rows]),
        ("summarize", "sw"),
        ("sw/results.parquet", "column 'eta'", "expected a string column, got double"),
    ),
    Case(
        "plot-results-null",
        PLOT_S,
        "a null where every row has a value (a checkpoint)",
        _results_edited(lambda rows: rows[1].update(checkpoint=None)),
        ("plot", "sw"),
        ("sw/results.parquet", "column 'checkpoint'", "1 null value(s)"),
    ),
    Case(
        "summarize-results-nested-column",
        PLOT_S,
        "a list where a number belongs",
        _results_edited(lambda rows: [r.update(certified_cce_gap=[0.1, 0.2]) for r in rows]),
        ("summarize", "sw"),
        ("sw/results.parquet", "column 'certified_cce_gap'", "expected a floating-point column, got list<"),
    ),
    Case(
        "summarize-results-too-many-rows",
        PLOT_S,
        "more rows than a results file may have (refused from its footer, before reading them)",
        _results_too_many_rows,
        ("summarize", "sw"),
        ("sw/results.parquet", "1000001 rows, more than the 1000000"),
    ),
    Case(
        "summarize-results-control-character",
        PLOT_S,
        "a label that is not plain text (a line break)",
        _results_edited(lambda rows: [r.update(game="a\nb") for r in rows]),
        ("summarize", "sw"),
        ("sw/results.parquet", "column 'game'", "control character"),
    ),
    # ---- argparse
    Case(
        "args-newline-in-path",
        ARGS_S,
        "a path with a newline and a terminal escape (shown escaped, on one line)",
        None,
        ("games", "validate", "bad\nname\x1b[2J.json"),
        ("bad\\nname\\x1b[2J.json",),
    ),
    Case(
        "args-missing-option",
        ARGS_S,
        "a required option is missing",
        None,
        ("run", "--game", "paper", "-T", "10", "--out", "out"),
        ("--algorithm", "required"),
    ),
    Case(
        "args-invalid-choice",
        ARGS_S,
        "a value outside an option's choices",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--dtype", "float16", "--out", "out"),
        ("--dtype", "'float16'"),
    ),
    Case("args-unknown-command", ARGS_S, "an unknown command", None, ("runn",), ("'runn'",)),
    Case(
        "args-misspelt-option",
        ARGS_S,
        "a misspelt option (named first, not reported as a missing one)",
        None,
        ("run", "--game", "paper", "--algoritm", "smooth_ce", "-T", "10", "--out", "out"),
        ("unrecognized arguments: --algoritm", "did you mean --algorithm?"),
        subprocess=True,
    ),
    Case(
        "args-misspelt-short-option",
        ARGS_S,
        "a short option in the wrong case",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-t", "10", "--out", "out"),
        ("unrecognized arguments: -t", "did you mean -T?"),
    ),
]


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


def _prepare(case: Case, workdir: Path, request) -> None:
    if case.needs_run:
        shutil.copytree(request.getfixturevalue("finished_run"), workdir / "run")
    if case.setup is not None:
        case.setup(workdir)


def _check_message(case: Case, code, err: str) -> str:
    assert code == 2, f"exit code {code!r}, stderr {err!r}"
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    line = lines[0]
    assert line.startswith("markovgames: error: "), line
    # A NumPy scalar's repr (np.float64(0.5)) is noise in a message a user reads.
    assert "np.float" not in line and "np.int" not in line and "np.bool" not in line, line
    for needle in case.expect:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def test_catalogue_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys, request):
    workdir = tmp_path / "work"
    workdir.mkdir()
    _prepare(case, workdir, request)
    monkeypatch.chdir(workdir)
    before = _snapshot(workdir)
    code = _call(case.argv)
    err = capsys.readouterr().err
    _check_message(case, code, err)
    after = _snapshot(workdir)
    if case.leaves_lock:  # the output's lock file (beside it, as every run leaves it), nothing else
        after = {k: v for k, v in after.items() if not (k.startswith(".") and k.endswith(".lock"))}
    assert after == before, "the command left files behind or changed existing ones"


@pytest.mark.parametrize("case", [c for c in CASES if c.subprocess], ids=lambda c: c.id)
def test_bad_input_as_a_process(case, tmp_path):
    """The console entry point itself: exit status 2 and one line, without --debug no traceback."""
    _prepare(case, tmp_path, None)
    before = _snapshot(tmp_path)
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "markovgames", *case.argv], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    _check_message(case, proc.returncode, proc.stderr)
    assert _snapshot(tmp_path) == before


def test_debug_shows_the_traceback(tmp_path, monkeypatch):
    """``--debug`` re-raises the user error instead of the one-line message."""
    from markovgames.games import GameValidationError

    case = next(c for c in CASES if c.id == "game-reward-out-of-range")
    case.setup(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GameValidationError, match=r"rewards\[1\]\[0\]\[1\]\[0\]\[1\] = 1.5"):
        main(["--debug", *case.argv])


def test_running_out_of_memory_is_a_user_error(tmp_path, monkeypatch, capsys):
    """A run too long for the machine's memory: one line naming -T, and no staging directory left."""
    import markovgames.dynamics as dynamics

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(dynamics, "run", no_memory)  # the command imports it when it runs
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "100", "--out", "out", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("markovgames: error: -T: a run of 100 iterations needs more memory")
    # Only the (empty) lock file of the output directory stays: no output, no staging directory.
    assert [p.name for p in tmp_path.iterdir()] == [".out.lock"]


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
        for needle in case.expect:
            assert needle in row, f"docs/errors.md, {case.id}: {needle!r} not in the example message"


# ---------------------------------------------------------------------------------------
# `python tests/test_bad_input_catalogue.py`: the table rows of docs/errors.md
# ---------------------------------------------------------------------------------------
def _doc_rows() -> None:  # pragma: no cover - a maintenance helper
    import contextlib
    import io
    import tempfile

    finished = None
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
