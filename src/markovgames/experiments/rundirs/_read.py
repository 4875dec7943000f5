"""Run directories read back: `load_run_directory` and the `StoredRun` it returns.

[`load_run_directory`][markovgames.experiments.load_run_directory] trusts nothing it reads: every
file must be a regular file of a bounded size; ``metrics.json``'s fields must have their types and
ranges (`._run_metrics`); the game file and ``curve.npz`` must match the SHA-256 that
``metrics.json`` records for them; the arrays must have the shapes, dtypes and finite values the
run implies; and [`StoredRun.check_trajectory`][markovgames.experiments.StoredRun.check_trajectory]
checks that every policy row used is a probability vector. Nothing read here loads a user's file:
a learner or a step-size schedule given by reference is known by its name and SHA-256 only.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import os
import zipfile
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..._files import open_regular, read_hashed, read_into, read_npy_header
from ..._npz import ArchiveError, NpzArchive
from ..._resources import format_bytes, physical_memory
from ...dynamics import DTYPES, RunResult, builtin_algorithm, get_value_update
from ...games import MAX_GAME_ENTRIES, PROBABILITY_TOLERANCE, MarkovGame, load_game
from ...games._io import GameDigestError
from ._kinds import wrong_directory
from ._metrics import CURVE_FILE, METRICS_FILE, RunDirectoryError, read_metrics

__all__ = [
    "policy_row_tolerance",
    "TrajectoryFile",
    "StoredRun",
    "load_run_directory",
    "read_mapped_trajectory",
]


def policy_row_tolerance(dtype: str, num_actions: int) -> float:
    """How far from 1 a stored policy row ``pi^t_h(s, .)`` of ``num_actions`` entries may sum.

    ``PROBABILITY_TOLERANCE`` (``1e-9``, the game files' tolerance), or ``8 A eps`` of the run's
    dtype if that is larger: the engine normalises each row in that precision (a float32 row of
    4 actions sums to 1 within about ``2e-7``).
    """
    return max(PROBABILITY_TOLERANCE, 8 * num_actions * float(np.finfo(DTYPES[dtype]).eps))


class TrajectoryFile(NamedTuple):
    """A stored trajectory file, ``trajectory/policy_i.npy``, as checked when its run directory was
    read: where its data starts (``offset``), and its ``shape`` and ``dtype``."""

    path: Path
    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclasses.dataclass(frozen=True, eq=False)
class StoredRun:
    """A run read back from its directory (checked by [`load_run_directory`][markovgames.experiments.load_run_directory]).

    The trajectory's files were checked (header and size) but not read: `policies` and
    `read_policies` read them, with checked reads, when an evaluation needs them.
    ``external_regret`` and ``swap_regret``: ``(T, N)``, each player's average regret of the played
    sequence per prefix, when the run carried them (``markovgames run --regret``), else ``None``.
    ``samples_used``: ``(T,)`` int64, the random draws the run had made after each prefix, when it
    drew any (``markovgames run --feedback sampled:K``), else ``None``.
    ``weighted_average_value`` and ``weighted_average_best_response``: ``(T, N)``, the weighted
    average of the iterates' values and best-response values at every prefix, when the run
    evaluated it there (``markovgames run --weighted-average all``), else ``None`` (the
    checkpoints' ``weighted_average_*`` fields hold it at the checkpoints).
    """

    path: Path
    metrics: dict[str, Any]
    game: MarkovGame
    value: np.ndarray
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    trajectory_files: tuple[TrajectoryFile, ...] | None
    external_regret: np.ndarray | None = None
    swap_regret: np.ndarray | None = None
    samples_used: np.ndarray | None = None
    weighted_average_value: np.ndarray | None = None
    weighted_average_best_response: np.ndarray | None = None

    @property
    def feedback(self) -> str:
        """What the learners saw: ``"full"`` (also a directory written before it was recorded),
        ``"sampled:K"`` or ``"sampled:exact"``."""
        return self.metrics.get("feedback", "full")

    @property
    def seed(self) -> int | None:
        """The seed of the run's random draws (``None`` where it drew none: full information, the
        exact mode, or a directory written before it was recorded)."""
        return self.metrics.get("seed")

    @property
    def order(self) -> str:
        """The update order: ``"simultaneous"`` (also a directory written before it was recorded) or ``"alternating"``."""
        return self.metrics.get("order", "simultaneous")

    @property
    def eta_schedule(self) -> str:
        """The step-size schedule by name (``"constant"`` also for a directory written before it was
        recorded); a user's schedule is known by its reference and SHA-256 only, never loaded."""
        return self.metrics.get("eta_schedule", "constant")

    @functools.cached_property
    def policies(self) -> tuple[np.ndarray, ...] | None:
        """The whole stored trajectory, per player ``(kept, H, S, A_i)`` (``None``: the run kept
        none), read into memory on first use (`read_policies`)."""
        return self.read_policies()

    def read_policies(self, rows: int | None = None) -> tuple[np.ndarray, ...] | None:
        """The first ``rows`` rows (default all) of each player's stored trajectory, read into memory.

        The files are read, not memory-mapped: a mapped file that another process truncates
        kills the reader with SIGBUS, whereas a read that comes up short is an error naming the
        file. The rows' total size is checked against this machine's memory first.

        Raises
        ------
        RunDirectoryError
            The rows take more memory than the machine has, or a file changed since the run
            directory was read (truncated, replaced, or with another header).
        """
        if self.trajectory_files is None:
            return None
        count = [f.shape[0] if rows is None else min(rows, f.shape[0]) for f in self.trajectory_files]
        sizes = [n * math.prod(f.shape[1:]) * f.dtype.itemsize for n, f in zip(count, self.trajectory_files, strict=True)]
        memory = physical_memory()
        if memory is not None and sum(sizes) > memory:
            raise RunDirectoryError(
                f"{self.trajectory_files[0].path.parent}: {sum(count) // len(count)} rows of the trajectory take "
                f"{format_bytes(sum(sizes))}, more than this machine's {format_bytes(memory)} of memory"
            )
        return tuple(_read_policy(f, n) for f, n in zip(self.trajectory_files, count, strict=True))

    @property
    def first_kept(self) -> int:
        """The first iteration of the stored trajectory (1 unless the run kept a suffix)."""
        suffix = self.metrics.get("trajectory_suffix")
        return 1 if not suffix else int(suffix["first_kept"])

    @property
    def algorithm(self) -> str:
        return self.metrics["algorithm"]

    @property
    def index_kernel(self) -> str:
        """The output policy's index kernel: ``"smooth"`` (Algorithm 3) or ``"stage"`` (Algorithm 4)."""
        try:
            # A directory written before "value_update" was recorded names a built-in algorithm
            # (looked up without loading anything: the name was read from a file).
            update = self.metrics.get("value_update") or builtin_algorithm(self.metrics["algorithm"]).value_update
            return get_value_update(update).index_kernel
        except ValueError as err:
            raise RunDirectoryError(f"{self.path / METRICS_FILE}: {err}") from None

    @property
    def T(self) -> int:
        return int(self.metrics["T"])

    @property
    def dtype(self) -> str:
        return self.metrics.get("dtype", "float64")

    def check_trajectory(self, rows: int | None = None) -> tuple[np.ndarray, ...] | None:
        """Read the first ``rows`` stored policies (default all, `read_policies`) and check that they
        are probability vectors; returns them (``None``: the run kept no trajectory).

        Every entry finite and non-negative, every row ``pi^t_{h,i}(s, .)`` summing to 1 within
        [`policy_row_tolerance`][markovgames.experiments.policy_row_tolerance]: an output policy is evaluated only if it is one. Checks the
        rows in blocks of about 64 MiB.

        Raises
        ------
        RunDirectoryError
            Naming the file and the entry ``[t - first_kept][h][s][a]`` at fault.
        """
        policies = self.read_policies(rows)
        if policies is None:
            return None
        for i, p in enumerate(policies):
            where = self.path / self.metrics["trajectory"] / f"policy_{i}.npy"
            tolerance = policy_row_tolerance(self.dtype, p.shape[-1])
            stop = p.shape[0] if rows is None else min(rows, p.shape[0])
            step = max(1, (64 << 20) // max(1, p[0].nbytes))
            for start in range(0, stop, step):
                block = np.asarray(p[start : min(stop, start + step)], dtype=np.float64)

                def at(mask, start: int) -> tuple[str, tuple[int, ...]]:
                    """``[t][h][s]([a])`` of the first hit, and what it is (iteration, step, state, action)."""
                    idx = tuple(int(k) for k in np.argwhere(mask)[0])
                    idx = (idx[0] + start,) + idx[1:]
                    parts = [f"iteration {idx[0] + self.first_kept}", f"step {idx[1]}", f"state {idx[2]}"]
                    parts += [f"action {idx[3]}"] if len(idx) > 3 else []
                    return "".join(f"[{k}]" for k in idx) + f" ({', '.join(parts)})", idx

                bad = ~np.isfinite(block)
                if bad.any():
                    text, idx = at(bad, start)
                    raise RunDirectoryError(f"{where}: entry {text} = {float(p[idx])!r} is not finite")
                neg = block < 0.0
                if neg.any():
                    text, idx = at(neg, start)
                    raise RunDirectoryError(f"{where}: entry {text} = {float(p[idx])!r} is negative")
                sums = block.sum(axis=-1)
                off = np.abs(sums - 1.0) > tolerance
                if off.any():
                    text, idx = at(off, start)
                    raise RunDirectoryError(
                        f"{where}: row {text} sums to {float(sums[(idx[0] - start,) + idx[1:]])!r}, not 1 "
                        f"(tolerance {tolerance:.3g})"
                    )
        return policies


def _digest_error(path: Path, metrics_path: Path) -> RunDirectoryError:
    return RunDirectoryError(
        f"{path}: its SHA-256 differs from the one {metrics_path.name} records: the file was changed or damaged"
    )


def _checked_bytes(path: Path, fh, limit: int, digest: str | None, metrics_path: Path):
    """The open file ``fh`` read once (at most ``limit`` bytes): an in-memory file of exactly the
    bytes whose SHA-256 was compared with ``digest`` (``None``: none recorded, nothing compared)."""
    data, found = read_hashed(fh, limit)
    if digest is not None and found != digest:
        raise _digest_error(path, metrics_path)
    return io.BytesIO(data)


def _npy_header(fh, where: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` data at ``fh``'s position, reading no array data."""
    try:
        return read_npy_header(fh)
    except (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile) as err:
        raise RunDirectoryError(
            f"{where}: not a valid .npy array ({str(err).splitlines()[0] if str(err) else type(err).__name__})"
        ) from None


#: The arrays of every ``curve.npz``, those of a run that carried its regrets, and the samples
#: drawn per prefix of a run under sampled feedback (``(T,)`` integers, not ``(T, N)`` floats).
_CURVES = ("value", "certified_ce_bound", "certified_cce_bound")
_REGRET_CURVES = ("external_regret", "swap_regret")
_AVERAGE_CURVES = ("weighted_average_value", "weighted_average_best_response")
_SAMPLES_CURVE = "samples_used"


def _read_curve(
    path: Path,
    T: int,
    num_players: int,
    digest: str | None,
    metrics_path: Path,
    regret: bool = False,
    samples: bool = False,
    average: bool = False,
    base: tuple[str, ...] = _CURVES,
) -> tuple[np.ndarray, ...]:
    """The ``(T, N)`` arrays of ``curve.npz``: those of ``base`` (the three of a finite-horizon run;
    a discounted run's one), with ``regret`` the regret curves too, with ``average`` two more (the
    weighted average's values and best-response values), and with ``samples`` the ``(T,)``
    samples drawn per prefix last, checked before and after they are read (the samples:
    non-negative and never decreasing).

    The sizes come first: the curve that ``metrics.json``'s ``T`` implies must fit in memory, the
    file may not be larger than it, and its members are stored uncompressed (as ``np.savez``
    writes them), so the data read is never more than the file holds; each member's header must
    give the shape ``(T, N)`` before its data is read (`NpzArchive`).
    """
    names = (
        base + (_REGRET_CURVES if regret else ()) + (_AVERAGE_CURVES if average else ()) + ((_SAMPLES_CURVE,) if samples else ())
    )
    needed = (len(names) - samples) * T * num_players * 8 + samples * T * 8
    memory = physical_memory()
    if memory is not None and needed > memory:
        raise RunDirectoryError(
            f"{path}: the curve of T = {T} ({metrics_path.name}) and N = {num_players} takes {format_bytes(needed)}, "
            f"more than this machine's {format_bytes(memory)} of memory"
        )
    try:
        fh = open_regular(path)
    except OSError as err:
        raise RunDirectoryError(f"{path}: cannot read: {err.strerror or err}") from None
    with fh:
        # Three (or five) float64 arrays and their headers; anything much larger is not this run's curve.
        limit = needed + 65536
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise RunDirectoryError(f"{path}: {size} bytes, more than the {limit} a curve of T = {T} takes: not this run's curve")
        checked = _checked_bytes(path, fh, limit, digest, metrics_path)  # parsed below: the bytes hashed
        arrays = []
        try:
            with NpzArchive(checked, stored_only=True) as archive:
                if sorted(archive.keys) != sorted(names):
                    found = ", ".join(sorted(f"{k}.npy" for k in archive.keys))
                    raise RunDirectoryError(f"{path}: expected the arrays {', '.join(names)}, found {found[:200] or 'none'}")
                for name in names:
                    where = f"{path}: {name}"
                    shape, _, dtype = archive.header(name)
                    if name == _SAMPLES_CURVE:
                        arrays.append(_read_samples(archive, where, T, shape, dtype))
                        continue
                    if shape != (T, num_players) or dtype.kind != "f":
                        raise RunDirectoryError(
                            f"{where}: expected a float array of shape (T, N) = {(T, num_players)}, got dtype {dtype} with shape {shape}"
                        )
                    array = archive.read(name)
                    if not np.isfinite(array).all():
                        raise RunDirectoryError(f"{where}: holds a value that is not finite")
                    arrays.append(array)
        except ArchiveError as err:
            raise RunDirectoryError(f"{path}: {err}") from None
    return tuple(arrays)


def _read_samples(archive: NpzArchive, where: str, T: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``curve.npz``'s samples drawn per prefix: ``(T,)`` integers, non-negative, never decreasing."""
    if shape != (T,) or dtype.kind not in "iu" or dtype.itemsize > 8:
        raise RunDirectoryError(
            f"{where}: expected an integer array of shape (T,) = ({T},), got dtype {dtype} with shape {shape}"
        )
    array = archive.read(_SAMPLES_CURVE).astype(np.int64)
    if array.size and (array.min() < 0 or np.any(np.diff(array) < 0)):
        raise RunDirectoryError(f"{where}: the samples drawn must be non-negative and never decrease from one prefix to the next")
    return array


def read_mapped_trajectory(result: RunResult) -> RunResult:
    """``result`` with its trajectory read into memory, with checked reads, where it is memory-mapped.

    A run that writes its trajectory to files returns them as read-only memory maps, which die of
    SIGBUS if a file is truncated while they are read. The command line never reads through
    them: it reads the files again here (header, size and every byte checked; a file changed
    meanwhile is a `RunDirectoryError` naming it) before it evaluates the trajectory.
    """
    policies = result.policies
    if policies is None or not any(isinstance(p, np.memmap) for p in policies):
        return result
    read = []
    for p in policies:
        if isinstance(p, np.memmap) and p.filename is not None:
            read.append(_read_policy(_check_policy(Path(p.filename), p.shape, result.dtype), p.shape[0]))
        else:
            read.append(np.asarray(p))
    return dataclasses.replace(result, policies=tuple(read))


def _check_policy(path: Path, shape: tuple[int, ...], dtype: str) -> TrajectoryFile:
    """Check ``trajectory/policy_i.npy``'s header and size against ``shape`` (reading no data)."""
    try:
        fh = open_regular(path)
    except OSError as err:
        raise RunDirectoryError(f"{path}: cannot read: {err.strerror or err}") from None
    with fh:
        got, fortran, dt = _npy_header(fh, str(path))
        wanted = np.dtype(DTYPES[dtype])
        if got != shape or dt != wanted or fortran:
            raise RunDirectoryError(
                f"{path}: expected a {wanted} array of shape {shape} (the run's T, H, S and A_i; C order), "
                f"got dtype {dt} with shape {got}{' in Fortran order' if fortran else ''}"
            )
        offset = fh.tell()
        size = os.fstat(fh.fileno()).st_size
    needed = offset + math.prod(shape) * wanted.itemsize
    if size != needed:
        raise RunDirectoryError(
            f"{path}: the file has {size} bytes, not the {needed} its header declares ({'truncated' if size < needed else 'trailing data'})"
        )
    return TrajectoryFile(path, offset, shape, wanted)


def _read_policy(file: TrajectoryFile, rows: int) -> np.ndarray:
    """The first ``rows`` rows of a checked trajectory file, read (never mapped) into a new array.

    The file is opened again: its header must still be the one checked, and every byte must
    arrive (a file truncated meanwhile is an error naming it, where a memory map would die of
    SIGBUS). Reading 64 MiB at a time into the array costs about what the first pass over a
    memory map costs (the page cache is read either way; ``benchmarks/README.md``).
    """
    path, offset, shape = file.path, file.offset, (rows, *file.shape[1:])
    try:
        with open_regular(path) as fh:
            header = _npy_header(fh, str(path))
            if header != (file.shape, False, file.dtype) or fh.tell() != offset:
                raise RunDirectoryError(f"{path}: changed while it was read (its header is not the one checked)")
            array = np.empty(shape, dtype=file.dtype)
            done = read_into(fh, array, 64 << 20)
            if done < array.nbytes:
                raise RunDirectoryError(
                    f"{path}: ends after {offset + done} bytes, not the {offset + file.dtype.itemsize * math.prod(file.shape)} "
                    "its header declares (truncated while it was read)"
                )
    except OSError as err:
        raise RunDirectoryError(f"{path}: cannot read: {err.strerror or err}") from None
    except MemoryError:
        raise RunDirectoryError(
            f"{path}: {rows} rows take {format_bytes(math.prod(shape) * file.dtype.itemsize)}, more memory than is available"
        ) from None
    return array


def _check_record_invariants(metrics_path: Path, metrics: dict, game) -> None:
    """The checkpoint records of ``metrics.json`` against what every result satisfies
    (`markovgames.experiments._invariants`: values, bounds and gaps in [0, H], exact <= certified)."""
    from .._invariants import first_violation

    records = metrics.get("checkpoints") or []
    names = {key for record in records for key in record}
    columns = {name: [record.get(name) for record in records] for name in names if name != "T"}
    found = first_violation(columns, game.horizon, game.num_players, metrics.get("dtype", "float64"))
    if found is not None:
        k, name, what = found
        raise RunDirectoryError(f"{metrics_path}: checkpoints[{k}] (T' = {records[k].get('T')}).{name}: {what}")


def _check_curve_invariants(curve_path: Path, value, ce, cce, game, dtype: str) -> None:
    """The per-prefix curve (row ``k`` is ``T' = k + 1``) against the same invariants."""
    from .._invariants import first_violation

    columns = {"value": value, "certified_ce_bound": ce, "certified_cce_bound": cce}
    found = first_violation(columns, game.horizon, game.num_players, dtype)
    if found is not None:
        k, name, what = found
        raise RunDirectoryError(f"{curve_path}: row {k} (T' = {k + 1}), {name}: {what}")


def load_run_directory(path: str | Path, *, max_bytes: int | None = None, max_entries: int = MAX_GAME_ENTRIES) -> StoredRun:
    """Read a run directory written by [`write_run_directory`][markovgames.experiments.write_run_directory].

    The trajectory's files are checked here and read when used (`StoredRun.read_policies`).

    Every file is checked before it is used (see the module docstring); the trajectory's values
    are checked by [`StoredRun.check_trajectory`][markovgames.experiments.StoredRun.check_trajectory], for the rows an evaluation uses.
    ``max_bytes`` and ``max_entries`` bound its game file as in [`load_game`][markovgames.games.load_game].

    Raises
    ------
    RunDirectoryError, GameValidationError
        Naming the file (and the field or entry) at fault.
    """
    path = Path(path)
    metrics_path = path / METRICS_FILE
    if not os.path.lexists(metrics_path):
        raise RunDirectoryError(wrong_directory(path, f"a run directory (with {METRICS_FILE})"))
    metrics = read_metrics(metrics_path)
    T, sums = metrics["T"], metrics.get("sha256", {})
    game_path = path / metrics["game_file"]
    # Its size first (hashing a file of many GiB before load_game refused it would take minutes),
    # then its bytes read once, hashed and parsed: the game is the bytes that were checked.
    try:
        game = load_game(game_path, max_bytes=max_bytes, max_entries=max_entries, sha256=sums.get(metrics["game_file"]))
    except GameDigestError:
        raise _digest_error(game_path, metrics_path) from None
    # A run that carried its regrets says so in metrics.json ("regret"); its curve holds them too.
    regret = metrics.get("regret") is not None
    # A run that drew samples records how many (metrics.json's "samples_used"); its curve holds them per prefix.
    drew = metrics.get("samples_used") is not None
    _check_record_invariants(metrics_path, metrics, game)
    # A run that evaluated the weighted average at every prefix says so ("weighted_average"); its curve holds it.
    average = bool((metrics.get("weighted_average") or {}).get("every_prefix"))
    value, ce, cce, *more = _read_curve(
        path / CURVE_FILE, T, game.num_players, sums.get(CURVE_FILE), metrics_path, regret, drew, average
    )
    _check_curve_invariants(path / CURVE_FILE, value, ce, cce, game, metrics.get("dtype", "float64"))
    files = None
    if metrics.get("trajectory"):
        traj = path / metrics["trajectory"]
        first = 1 if not metrics.get("trajectory_suffix") else metrics["trajectory_suffix"]["first_kept"]
        dtype = metrics.get("dtype", "float64")
        files = tuple(
            _check_policy(traj / f"policy_{i}.npy", (T - first + 1, game.horizon, game.num_states, a), dtype)
            for i, a in enumerate(game.num_actions)
        )
    external, swap = more[:2] if regret else (None, None)
    average_value, average_best = more[2 * regret : 2 * regret + 2] if average else (None, None)
    samples = more[-1] if drew else None
    if samples is not None and int(samples[-1]) != metrics["samples_used"]:
        raise RunDirectoryError(
            f"{path / CURVE_FILE}: samples_used: {int(samples[-1])} after T = {T}, not the {metrics['samples_used']} "
            f"that {METRICS_FILE} records"
        )
    return StoredRun(path, metrics, game, value, ce, cce, files, external, swap, samples, average_value, average_best)
