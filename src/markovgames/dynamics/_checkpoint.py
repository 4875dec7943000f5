"""Saving a run's loop state, and resuming from it only when everything it reuses is intact.

A state file (``.npz``, no pickle, written atomically) holds the iterations done, the loop state's
arrays, the per-prefix metrics so far, the records of the trajectory chunks written (their
digests: `._trajectory`), and a fingerprint of everything that determines the run's numbers
and chunking. Resuming checks, before anything is reused: the file is a readable state file of
this format, its fingerprint is this run's, ``done`` lies within the run, every array has exactly
the shape and dtype this run's loop state has, the metrics have one row per recorded prefix, the
trajectory records cover exactly the kept rows done so far, and every value is finite. Anything
else is refused with an error that names the file; the file itself is left as it was.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from .._atomic import atomic_write
from .._errors import MarkovGamesError
from .._files import header_warnings_refused

__all__ = ["RunStateError", "SavedState", "StateFile", "fingerprint"]

#: The layout of a state file; a file of another layout is refused.
_FORMAT = 2


class RunStateError(MarkovGamesError, ValueError):
    """A saved run state cannot be used to resume; the message names the file and the problem."""


class SavedState(NamedTuple):
    done: int
    leaves: list[np.ndarray]
    metrics: np.ndarray | None
    trajectory: list | None  # [row, count, [sha256 per player]] per chunk written (None: no trajectory files)
    last_iterate: np.ndarray | None


def fingerprint(
    algorithm, optimistic, games, etas, per_stage_theory, T, dtype, record, batched, plan, keep, first_kept, last_iterate
) -> str:
    """A digest of everything that determines a run's numbers and chunking (a saved state must match it)."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            [
                algorithm.identity,
                optimistic,
                [float(e) for e in etas],
                per_stage_theory,
                T,
                dtype,
                record,
                batched,
                plan,
                None if keep is None else keep.tolist(),
                first_kept,
                None if last_iterate is None else last_iterate.tolist(),
            ]
        ).encode()
    )
    for g in games:
        digest.update(np.ascontiguousarray(g.rewards).tobytes())
        digest.update(g.transition_bytes())
        digest.update(str(g.initial_state).encode())
    return digest.hexdigest()


class StateFile:
    """The state file of one run at ``path`` (see the module docstring)."""

    def __init__(self, path: Path, fingerprint: str, every: int):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.every = every

    def save(self, done: int, carry, metrics: list, axis: int, trajectory: list, last_iterate: list) -> None:
        """Write the loop state after ``done`` iterations atomically."""
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(carry)]
        arrays = {f"leaf_{k}": leaf for k, leaf in enumerate(leaves)}
        if metrics:
            arrays["metrics"] = np.concatenate(metrics, axis=axis)
        if last_iterate:
            arrays["last_iterate"] = np.concatenate(last_iterate, axis=axis)
        meta = {
            "format": _FORMAT,
            "fingerprint": self.fingerprint,
            "done": int(done),
            "num_leaves": len(leaves),
            "trajectory": trajectory,
        }
        # The names are leaf_k, metrics and last_iterate, never savez's own allow_pickle, which mypy cannot tell.
        atomic_write(self.path, lambda fh: np.savez(fh, meta=np.asarray(json.dumps(meta)), **arrays))  # type: ignore[arg-type]

    def load(self, template, metrics_shape, kept_rows, last_iterate_shape) -> SavedState | None:
        """The saved state, checked against this run; ``None`` when there is no file.

        ``template`` is this run's initial loop state (its leaves give the shapes and dtypes);
        ``metrics_shape(done)`` and ``last_iterate_shape(done)`` the shapes the saved metrics and
        last-iterate values must have after ``done`` iterations (``None``: none saved);
        ``kept_rows(done)`` the trajectory rows written by then (``None``: no trajectory files).
        """
        if not self.path.exists():
            return None
        if not self.path.is_file():
            raise RunStateError(f"{self.path}: not a regular file")
        expected = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(template)]
        try:
            with header_warnings_refused(), np.load(self.path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                    raise RunStateError(f"{self.path}: not a state file of this version of markovgames")
                if meta.get("fingerprint") != self.fingerprint:
                    raise RunStateError(
                        f"{self.path}: the saved run state belongs to a different run (configuration or game differ)"
                    )
                if meta.get("num_leaves") != len(expected):
                    raise RunStateError(
                        f"{self.path}: holds {meta.get('num_leaves')!r} state arrays, this run has {len(expected)}"
                    )
                done = meta.get("done")
                leaves = [np.array(data[f"leaf_{k}"]) for k in range(len(expected))]
                metrics = np.array(data["metrics"]) if "metrics" in data.files else None
                last = np.array(data["last_iterate"]) if "last_iterate" in data.files else None
        except RunStateError:
            raise
        except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile, json.JSONDecodeError) as err:
            raise RunStateError(f"{self.path}: not a readable run state ({type(err).__name__}: {err})".splitlines()[0]) from None
        if isinstance(done, bool) or not isinstance(done, int) or not 0 < done:
            raise RunStateError(f"{self.path}: 'done' = {done!r} is not a positive iteration count")
        for k, (leaf, want) in enumerate(zip(leaves, expected, strict=True)):
            if leaf.shape != want.shape or leaf.dtype != want.dtype:
                raise RunStateError(
                    f"{self.path}: state array {k} is {leaf.dtype} {leaf.shape}, this run's is {want.dtype} {want.shape}"
                )
            if np.issubdtype(leaf.dtype, np.floating) and not np.all(np.isfinite(leaf)):
                raise RunStateError(f"{self.path}: state array {k} holds values that are not finite")
        for name, array, want in (("metrics", metrics, metrics_shape(done)), ("last_iterate", last, last_iterate_shape(done))):
            found = None if array is None else array.shape
            if found != want:
                raise RunStateError(f"{self.path}: {name} of shape {found}, expected {want} after {done} iterations")
            if array is not None and not np.all(np.isfinite(array)):
                raise RunStateError(f"{self.path}: {name} hold values that are not finite")
        trajectory = meta.get("trajectory")
        _check_records(self.path, trajectory, kept_rows(done))
        return SavedState(done, leaves, metrics, trajectory, last)


def _check_records(path: Path, records, rows: int | None) -> None:
    """The trajectory records must be consecutive chunks covering exactly ``rows`` rows."""
    if rows is None:
        if records:
            raise RunStateError(f"{path}: records trajectory chunks, but this run keeps no trajectory files")
        return
    if not isinstance(records, list):
        raise RunStateError(f"{path}: trajectory records are not a list")
    row = 0
    for record in records:
        ok = (
            isinstance(record, list)
            and len(record) == 3
            and record[0] == row
            and isinstance(record[1], int)
            and not isinstance(record[1], bool)
            and record[1] > 0
            and isinstance(record[2], list)
            and all(isinstance(d, str) and len(d) == 64 for d in record[2])
        )
        if not ok:
            raise RunStateError(f"{path}: trajectory record {record!r} is not a chunk starting at row {row}")
        row += record[1]
    if row != rows:
        raise RunStateError(f"{path}: trajectory records cover {row} rows, but {rows} were written by then")
