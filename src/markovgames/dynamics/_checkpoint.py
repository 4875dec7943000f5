"""Saving a run's loop state, and resuming from it only when everything it reuses is intact.

A state file (``.npz``, no pickle, written atomically) holds the iterations done, the loop state's
arrays, the records of the per-prefix metrics and of the trajectory chunks written so far (their
digests: `._trajectory`), and a fingerprint of everything that determines the run's numbers
and chunking. The per-prefix metrics themselves go to a file beside it (`metrics_file`), appended
block by block at each save: rewriting every row so far at every save would make a run that
saves its state often cost time quadratic in ``T`` (at ``T = 10^6`` with a save every 10^4
iterations, the saves took 6 of the run's 7 seconds).

Resuming checks, before anything is reused: the file is a readable state file of this format,
its fingerprint is this run's, ``done`` lies within the run, every array has exactly the shape
and dtype this run's loop state has, the metrics' records cover exactly the prefixes recorded
so far and every block of the metrics file still has its recorded digest, the trajectory records
cover exactly the kept rows done so far, and every value is finite. Anything else is refused
with an error that names the file; the files themselves are left as they were. Bytes of the
metrics file beyond its records (a save interrupted after appending a block, before it replaced
the state file) are not read, and the next save writes over them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from .._atomic import atomic_write
from .._errors import MarkovGamesError
from .._files import JsonFileError, header_warnings_refused, open_regular, parse_json
from .._json import dumps
from .._npz import ArchiveError, NpzArchive
from ._trajectory import _pwrite_all

__all__ = ["RunStateError", "SavedState", "StateFile", "fingerprint", "metrics_file"]

#: The layout of a state file; a file of another layout is refused. (2: the metrics inside the
#: state file; 3: in `metrics_file`, with their records in the state file.)
_FORMAT = 3
#: The most characters a state file's ``meta`` (its JSON: fingerprint, counts, the records of the
#: metrics blocks and trajectory chunks) may have, as ``metrics.json``'s 64 MiB bound.
_MAX_META_CHARS = 16 * 2**20


def metrics_file(state_file: Path) -> Path:
    """Where the per-prefix metrics of the state saved in ``state_file`` go: beside it, with the
    suffix ``.metrics`` (``state.npz`` -> ``state.metrics``)."""
    return Path(state_file).with_suffix(".metrics")


class RunStateError(MarkovGamesError, ValueError):
    """A saved run state cannot be used to resume; the message names the file and the problem."""


class SavedState(NamedTuple):
    done: int
    leaves: list[np.ndarray]
    metrics: np.ndarray | None
    trajectory: list | None  # [row, count, [sha256 per player]] per chunk written (None: no trajectory files)
    last_iterate: np.ndarray | None
    weighted_average: np.ndarray | None = None


#: The per-prefix values of evaluated policies that a state file may hold beside the carry: the
#: last iterate's and the weighted average's (``(..., rows, 2, N)`` each).
_EVALUATED = ("last_iterate", "weighted_average")


def fingerprint(
    algorithm,
    optimistic,
    games,
    etas,
    per_stage_theory,
    T,
    dtype,
    record,
    batched,
    plan,
    keep,
    first_kept,
    last_iterate,
    extras: tuple = (),
) -> str:
    """A digest of everything that determines a run's numbers and chunking (a saved state must match it).

    ``etas``: a number per run, or per run a tuple with one per player. ``extras``: what else a run
    sets beyond the paper's settings (update order, step schedule, regret curves, initial
    strategy), as JSON-able values; empty for the paper's settings, whose digest is unchanged."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            [
                algorithm.identity,
                optimistic,
                [float(e) if np.ndim(e) == 0 else [float(x) for x in e] for e in etas],
                per_stage_theory,
                T,
                dtype,
                record,
                batched,
                plan,
                None if keep is None else keep.tolist(),
                first_kept,
                None if last_iterate is None else last_iterate.tolist(),
                *([list(extras)] if extras else []),
            ]
        ).encode()
    )
    for g in games:
        digest.update(np.ascontiguousarray(g.rewards).tobytes())
        digest.update(g.transition_bytes())
        digest.update(str(g.initial_state).encode())
        if hasattr(g, "discount"):  # a discounted game: its discount and initial distribution too
            digest.update(np.asarray([g.discount], "<f8").tobytes())
            digest.update(np.ascontiguousarray(g.initial_distribution, "<f8").tobytes())
    return digest.hexdigest()


class StateFile:
    """The state file of one run at ``path``, and its metrics file (see the module docstring)."""

    def __init__(self, path: Path, fingerprint: str, every: int):
        self.path = Path(path)
        self.metrics_path = metrics_file(self.path)
        self.fingerprint = fingerprint
        self.every = every
        # The metrics blocks in the metrics file that the state file written last records:
        # [first row, rows, sha256] each (a resumed run starts from the loaded file's).
        self._metric_records: list[list] = []
        self._metric_rows = 0
        self._metric_bytes = 0

    def save(
        self,
        done: int,
        carry,
        metrics: np.ndarray | None,
        axis: int,
        trajectory: list,
        last_iterate: list,
        average: list | None = None,
    ) -> None:
        """Write the loop state after ``done`` iterations atomically.

        ``metrics``: every per-prefix row so far (the prefix axis ``axis``), or ``None``; the rows
        not saved before are appended to the metrics file, made durable before the state file
        that records them replaces the previous one.
        """
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(carry)]
        arrays = {f"leaf_{k}": leaf for k, leaf in enumerate(leaves)}
        if metrics is not None:
            self._append_metrics(metrics, axis)
        for name, blocks in zip(_EVALUATED, (last_iterate, average or []), strict=True):
            if blocks:
                arrays[name] = np.concatenate(blocks, axis=axis)
        meta = {
            "format": _FORMAT,
            "fingerprint": self.fingerprint,
            "done": int(done),
            "num_leaves": len(leaves),
            "metrics": None if metrics is None else [list(r) for r in self._metric_records],
            "trajectory": trajectory,
        }
        # The names are leaf_k, last_iterate and weighted_average, never savez's own allow_pickle, which mypy cannot tell.
        atomic_write(self.path, lambda fh: np.savez(fh, meta=np.asarray(dumps(meta, str(self.path))), **arrays))  # type: ignore[arg-type]

    def _append_metrics(self, metrics: np.ndarray, axis: int) -> None:
        """Append the rows after the recorded ones to the metrics file, durably, and record them."""
        rows = metrics.shape[axis]
        if rows < self._metric_rows:
            raise AssertionError(f"{rows} metrics rows after {self._metric_rows} were saved")
        new = np.ascontiguousarray(metrics[(slice(None),) * axis + (slice(self._metric_rows, rows),)])
        if not new.size:
            return  # no prefix kept since the last save
        # Never through a link: a link planted in its place would have its target truncated.
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        if not self._metric_records:
            flags |= os.O_TRUNC  # a new run's file (a stale one of an earlier run is replaced)
        fd = os.open(self.metrics_path, flags, 0o666)
        try:
            # Bytes beyond the records (an interrupted save's) are written over.
            os.ftruncate(fd, self._metric_bytes)
            _pwrite_all(fd, new, self._metric_bytes)
            os.fsync(fd)
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(self.metrics_path)) from None
        finally:
            os.close(fd)
        self._metric_records.append([self._metric_rows, rows - self._metric_rows, hashlib.sha256(new.data).hexdigest()])
        self._metric_rows, self._metric_bytes = rows, self._metric_bytes + new.nbytes

    def load(
        self, template, metrics_shape, kept_rows, last_iterate_shape, metrics_dtype, average_shape=None
    ) -> SavedState | None:
        """The saved state, checked against this run; ``None`` when there is no file.

        ``template`` is this run's initial loop state (its leaves give the shapes and dtypes);
        ``metrics_shape(done)`` and ``last_iterate_shape(done)`` the shapes the saved metrics
        (``(..., rows, 3, N)``, of ``metrics_dtype``) and last-iterate values must have after
        ``done`` iterations (``None``: none saved); ``kept_rows(done)`` the trajectory rows
        written by then (``None``: no trajectory files); ``average_shape(done)`` likewise the
        weighted average's values (``None``: none evaluated).
        """
        shapes = {"last_iterate": last_iterate_shape, "weighted_average": average_shape or (lambda done: None)}
        if not self.path.exists():
            return None
        if not self.path.is_file():
            raise RunStateError(f"{self.path}: not a regular file")
        expected = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(template)]
        try:
            with open_regular(self.path) as fh, header_warnings_refused(), NpzArchive(fh, stored_only=True) as data:
                meta, done, leaves, evaluated = self._read_archive(data, expected, shapes)
        except RunStateError:
            raise
        except JsonFileError as err:  # its message names the file
            raise RunStateError(str(err)) from None
        except (ValueError, OSError, EOFError) as err:  # ArchiveError, JSONDecodeError, an unreadable file
            raise RunStateError(f"{self.path}: not a readable run state ({type(err).__name__}: {err})".splitlines()[0]) from None
        for k, leaf in enumerate(leaves):  # their shapes and dtypes are this run's (`_read_archive`)
            if np.issubdtype(leaf.dtype, np.floating) and not np.all(np.isfinite(leaf)):
                raise RunStateError(f"{self.path}: state array {k} holds values that are not finite")
        metrics = self._read_metrics(meta.get("metrics"), metrics_shape(done), np.dtype(metrics_dtype), done)
        for name, shape_after in shapes.items():
            want = shape_after(done)
            if want is not None and evaluated[name] is None:
                raise RunStateError(f"{self.path}: {name} of shape None, expected {want} after {done} iterations")
            if evaluated[name] is not None and not np.all(np.isfinite(evaluated[name])):
                raise RunStateError(f"{self.path}: {name} hold values that are not finite")
        trajectory = meta.get("trajectory")
        _check_records(self.path, trajectory, kept_rows(done))
        return SavedState(done, leaves, metrics, trajectory, evaluated["last_iterate"], evaluated["weighted_average"])

    def _read_archive(self, data: NpzArchive, expected: list[np.ndarray], shapes: dict):
        """``(meta, done, leaves, evaluated)`` from the open state file (``evaluated``: the arrays of
        `_EVALUATED` by name, ``None`` where absent): every member's header checked against this
        run's arrays before its data is read, so that a small file that declares a huge array is
        refused unread."""
        if "meta" not in data:
            raise ArchiveError("no array 'meta' in the archive")
        shape, _, dtype = data.header("meta")
        if shape != () or dtype.kind != "U" or dtype.itemsize > 4 * _MAX_META_CHARS:
            raise RunStateError(f"{self.path}: meta is {dtype} {shape}, not the text of a state file")
        meta = parse_json(str(data.read("meta")), f"{self.path}: meta")  # bounded in nesting depth
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise RunStateError(f"{self.path}: not a state file of this version of markovgames")
        if meta.get("fingerprint") != self.fingerprint:
            raise RunStateError(f"{self.path}: the saved run state belongs to a different run (configuration or game differ)")
        if meta.get("num_leaves") != len(expected):
            raise RunStateError(f"{self.path}: holds {meta.get('num_leaves')!r} state arrays, this run has {len(expected)}")
        done = meta.get("done")
        if isinstance(done, bool) or not isinstance(done, int) or not 0 < done:
            raise RunStateError(f"{self.path}: 'done' = {done!r} is not a positive iteration count")
        extra = set(data.keys) - {"meta", *_EVALUATED} - {f"leaf_{k}" for k in range(len(expected))}
        if extra:
            raise RunStateError(f"{self.path}: unexpected arrays {', '.join(sorted(extra))[:200]}")
        leaves = []
        for k, want in enumerate(expected):
            if f"leaf_{k}" not in data:
                raise ArchiveError(f"no array 'leaf_{k}' in the archive")
            shape, fortran, dtype = data.header(f"leaf_{k}")
            if shape != want.shape or dtype != want.dtype:
                raise RunStateError(f"{self.path}: state array {k} is {dtype} {shape}, this run's is {want.dtype} {want.shape}")
            leaves.append(data.read(f"leaf_{k}"))
        evaluated: dict[str, np.ndarray | None] = {}
        for name in _EVALUATED:
            want = shapes[name](done)
            evaluated[name] = None
            if name in data:
                shape, _, dtype = data.header(name)
                if shape != want or dtype.kind != "f":
                    raise RunStateError(
                        f"{self.path}: {name} is {dtype} {shape}, expected a float array of shape {want} after {done} iterations"
                    )
                evaluated[name] = data.read(name)
        return meta, done, leaves, evaluated

    def _read_metrics(self, records, shape: tuple[int, ...] | None, dtype: np.dtype, done: int) -> np.ndarray | None:
        """The metrics rows the state file records (``records``), read from the metrics file and
        checked against the ``shape`` this run's rows have after ``done`` iterations (``None``:
        none); afterwards, saves append to them."""
        if shape is None:
            if records:
                raise RunStateError(f"{self.path}: records per-prefix metrics, but this run saves none after {done} iterations")
            return None
        axis = len(shape) - 3  # (..., rows, 3, N)
        _check_blocks(self.path, "metrics", records, shape[axis])
        blocks = []
        try:
            with open_regular(self.metrics_path) as fh:
                for row, count, digest in records:
                    block_shape = (*shape[:axis], count, *shape[axis + 1 :])
                    nbytes = math.prod(block_shape) * dtype.itemsize
                    data = fh.read(nbytes)
                    if len(data) != nbytes:
                        raise RunStateError(
                            f"{self.metrics_path}: ends within the metrics of prefixes {row + 1}..{row + count} "
                            "that the saved state records (truncated)"
                        )
                    if hashlib.sha256(data).hexdigest() != digest:
                        raise RunStateError(
                            f"{self.metrics_path}: the metrics of prefixes {row + 1}..{row + count} differ from what "
                            "the interrupted run wrote (the file was changed)"
                        )
                    blocks.append(np.frombuffer(data, dtype).reshape(block_shape))
        except OSError as err:
            reason = err.strerror or str(err)
            raise RunStateError(f"{self.metrics_path}: cannot be read ({reason}); the interrupted run cannot continue") from None
        metrics = np.concatenate(blocks, axis=axis)
        if not np.all(np.isfinite(metrics)):
            raise RunStateError(f"{self.metrics_path}: holds metrics that are not finite")
        self._metric_records = [list(r) for r in records]
        self._metric_rows, self._metric_bytes = shape[axis], metrics.nbytes
        return metrics


def _check_records(path: Path, records, rows: int | None) -> None:
    """The trajectory records must be consecutive chunks covering exactly ``rows`` rows."""
    if rows is None:
        if records:
            raise RunStateError(f"{path}: records trajectory chunks, but this run keeps no trajectory files")
        return
    _check_blocks(path, "trajectory", records, rows, players=True)


def _check_blocks(path: Path, what: str, records, rows: int, players: bool = False) -> None:
    """``records`` must be consecutive blocks ``[first row, rows, digest]`` covering exactly
    ``rows`` rows (``players``: a list of digests, one per player)."""
    if not isinstance(records, list):
        raise RunStateError(f"{path}: {what} records are not a list")
    row = 0
    for record in records:
        ok = (
            isinstance(record, list)
            and len(record) == 3
            and record[0] == row
            and isinstance(record[1], int)
            and not isinstance(record[1], bool)
            and record[1] > 0
            and (isinstance(record[2], list) and all(_is_digest(d) for d in record[2]) if players else _is_digest(record[2]))
        )
        if not ok:
            noun = "chunk" if players else "block"
            raise RunStateError(f"{path}: {what} record {record!r} is not a {noun} starting at row {row}")
        row += record[1]
    if row != rows:
        raise RunStateError(f"{path}: {what} records cover {row} rows, but {rows} were written by then")


def _is_digest(value) -> bool:
    return isinstance(value, str) and len(value) == 64
