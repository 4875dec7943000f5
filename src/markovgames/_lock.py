"""One writer per output directory: an exclusive lock on the file ``.NAME.lock`` beside ``NAME``.

Every command that writes into (or replaces) a directory holds this lock while it does, so that
two commands started at once cannot mix their files (a ``metrics.json`` of one run beside the
trajectory of another); the second is refused at once. The lock is `filelock.FileLock`,
an ``flock`` on the lock file: the kernel releases it when its holder ends, however it ends
(``kill -9`` included), so a lock left by a dead process never blocks anyone.

The lock file sits beside the directory, not in it, because ``run`` and ``solve`` replace
their whole output directory when they finish. It is empty and is left in place on release, as
``filelock`` intends: deleting it would let a process that opened the old file and one that
creates a new one both believe they hold the lock. It may be deleted whenever no command runs.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ._errors import MarkovGamesError

__all__ = ["DirectoryBusyError", "lock_path", "directory_lock"]


class DirectoryBusyError(MarkovGamesError, RuntimeError):
    """Another process holds the lock of an output directory, or the lock cannot be taken."""


def lock_path(directory: str | os.PathLike[str]) -> Path:
    """The lock file of ``directory``: ``.NAME.lock`` beside it.

    The path is resolved first, so that every spelling of one directory (``runs/a``,
    ``./runs/../runs/a``, a symbolic link to it) names the same lock.
    """
    resolved = Path(directory).resolve()
    return resolved.parent / f".{resolved.name}.lock"


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike[str], argument: str | None = None, timeout: float = 0.0) -> Iterator[Path]:
    """Hold the lock of ``directory`` for the duration of the ``with`` block.

    Parameters
    ----------
    directory : path of the output directory (it need not exist; its parent must).
    argument : the argument that named the directory (e.g. ``"out"``), which messages name with
        it (`MarkovGamesError.for_argument`); None: they begin with the path.
    timeout : seconds to wait for a holder to finish (0: refuse at once).

    Raises
    ------
    DirectoryBusyError
        Another process holds the lock, or the lock file cannot be created (the message says why).
    """
    from filelock import FileLock, Timeout

    path = lock_path(directory)
    lock = FileLock(str(path), timeout=timeout)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # the directory's parent, made by the command anyway
        lock.acquire()
    except Timeout:
        raise _busy(
            directory,
            argument,
            f"another markovgames command is writing to this directory (it holds {path}); "
            "wait for it to finish or choose another directory",
        ) from None
    except OSError as err:
        raise _busy(directory, argument, f"cannot lock the directory: {path}: {err.strerror or err}") from None
    try:
        yield path
    finally:
        lock.release()


def _busy(directory: str | os.PathLike[str], argument: str | None, detail: str) -> DirectoryBusyError:
    if argument is None:
        return DirectoryBusyError(f"{directory}: {detail}")
    return DirectoryBusyError.for_argument(argument, detail, str(directory))
