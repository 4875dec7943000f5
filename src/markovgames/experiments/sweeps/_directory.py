"""A sweep directory on disk: its layout, what may be written into, and its preparation.

``DIR/manifest.json`` and ``DIR/runs/<run_id>.json`` (`MANIFEST_FILE`, `RUNS_DIR`); a sweep
writes only into an empty directory or one that holds a sweep (`is_sweep_directory`), and a
sweep that runs out of disk space removes what it created.
"""

from __future__ import annotations

import datetime as _dt
import errno
import os
from pathlib import Path

from ..._files import JsonFileError, read_json
from ..rundirs._directory import MARKER_FILE, marker_kind
from ._files import MANIFEST_FORMAT, MAX_JSON_BYTES, SweepDirectoryError, read_manifest

__all__ = ["MANIFEST_FILE", "RUNS_DIR", "is_sweep_directory"]

MANIFEST_FILE = "manifest.json"
RUNS_DIR = "runs"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def is_sweep_directory(out: Path) -> bool:
    """Whether ``out`` holds a sweep: its marker file says so (``.markovgames``, kind ``sweep``), or,
    for a directory written before sweeps were marked, its ``manifest.json`` is a sweep's manifest.

    Nothing else counts: a folder with a ``runs/`` subfolder, or another program's
    ``manifest.json``, is not a sweep, and a sweep never writes into it.
    """
    if marker_kind(out) == "sweep":
        return True
    manifest = out / MANIFEST_FILE
    if manifest.is_symlink():
        return False
    if not manifest.is_file():
        return False
    try:
        doc = read_json(manifest, MAX_JSON_BYTES)
    except JsonFileError:
        # A manifest.json that cannot be read (damaged, nested too deep): refused as a sweep's
        # manifest, naming the file, rather than passed over as another program's.
        read_manifest(manifest)
        return False
    except OSError:
        return False
    return isinstance(doc, dict) and doc.get("format") == MANIFEST_FORMAT


def _check_out(out: Path) -> None:
    """Refuse a sweep directory that is not a directory or holds something else (writes nothing)."""
    if out.is_symlink():
        raise SweepDirectoryError.for_argument(
            "out", "is a symbolic link; a sweep writes only into a directory named as itself, so name it", str(out)
        )
    if out.exists() and not out.is_dir():
        raise SweepDirectoryError.for_argument("out", "exists and is not a directory", str(out))
    if out.is_dir() and any(out.iterdir()) and not is_sweep_directory(out):
        raise SweepDirectoryError.for_argument(
            "out",
            f"not empty and not a sweep directory (no sweep's {MARKER_FILE} marker or {MANIFEST_FILE}); choose another directory",
            str(out),
        )


def _prepare_out(out: Path) -> list[Path]:
    """Make the sweep directory ready under its lock; return what this call created (deepest last)."""
    _check_out(out)  # again, under the lock
    created = [p for p in (*reversed(Path(os.path.abspath(out)).parents), out, out / RUNS_DIR) if not os.path.lexists(p)]
    (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    # Temporary files of writes that an interruption cut short.
    for stale in (out / RUNS_DIR).glob(".*.tmp"):
        try:
            stale.unlink()
        except OSError:
            pass
    return created


#: Write errors that mean the disk (or the quota) is full or failing: the sweep cannot go on.
_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _remove_created(out: Path, created: list[Path], err: OSError) -> SweepDirectoryError:
    """After a write failed for lack of space: remove the sweep directory, or its ``runs/``, if
    this call created it, and return the error that says so, naming the file."""
    import shutil

    where = err.filename or out
    removed = ""
    target = out if out in created else out / RUNS_DIR if out / RUNS_DIR in created else None
    if target is not None:
        shutil.rmtree(target, ignore_errors=True)
        removed = f"; removed {target}, which this sweep created"
    return SweepDirectoryError.for_argument(
        "out",
        f"cannot write {where}: {err.strerror or err}{removed}; free some space and run the sweep again",
        str(out),
    )
