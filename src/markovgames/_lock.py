"""One writer per output: an exclusive lock on the file ``.NAME.lock`` beside ``NAME``, removed on release.

Every command that writes into (or replaces) a directory, or writes a single output file, holds
this lock while it does, so that two commands started at once cannot mix their files (a
``metrics.json`` of one run beside the trajectory of another) or replace each other's file; the
second is refused at once. The lock is an ``flock`` on the lock file: the kernel releases it when
its holder ends, however it ends (``kill -9`` included), so a lock left by a dead process never
blocks anyone.

The lock file sits beside the output, not in it, because ``run`` and ``solve`` replace their
whole output directory when they finish. It is deleted when the lock is released, so that nothing
is left beside the output. Deleting a lock file is safe only with a check on the other side: a
process that opened the file before it was deleted may be granted the ``flock`` on the deleted
file. So a process that has been granted the ``flock`` checks that the file it locked is still
the one at the path (same device and inode) and starts again otherwise; the holder deletes the
file before it lets go of the ``flock``. (A process killed with ``kill -9`` leaves its empty lock
file; the next command to take the lock deletes it.) Where ``flock`` is not available (Windows),
`filelock.FileLock` is used and the lock file is left in place, as that library intends.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ._errors import MarkovGamesError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["DirectoryBusyError", "lock_path", "directory_lock"]

# How often a command that waits for a lock (``timeout > 0``) tries again.
_POLL_SECONDS = 0.05


class DirectoryBusyError(MarkovGamesError, RuntimeError):
    """Another process holds the lock of an output directory, or the lock cannot be taken."""


def lock_path(directory: str | os.PathLike[str]) -> Path:
    """The lock file of ``directory`` (or of an output file): ``.NAME.lock`` beside it.

    The path is resolved first, so that every spelling of one directory (``runs/a``,
    ``./runs/../runs/a``, a symbolic link to it) names the same lock.
    """
    resolved = Path(directory).resolve()
    return resolved.parent / f".{resolved.name}.lock"


def _same_file(fd: int, path: Path) -> bool:
    try:
        there = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def _acquire(path: Path, timeout: float) -> int | None:
    """The descriptor of ``path`` with an exclusive ``flock`` on it, the file still at ``path``
    (``None``: another process held it for ``timeout`` seconds)."""
    assert fcntl is not None
    deadline = time.monotonic() + timeout
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_SECONDS)
            continue
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            return fd
        os.close(fd)  # the holder we waited for deleted the file: lock the one at the path now


def _release(fd: int, path: Path) -> None:
    # Delete first, while the flock is held, so that whoever gets the flock next on this file sees
    # that it is no longer the lock file and starts again.
    with contextlib.suppress(OSError):
        if _same_file(fd, path):
            os.unlink(path)
    os.close(fd)


@contextlib.contextmanager
def directory_lock(
    directory: str | os.PathLike[str], argument: str | None = None, timeout: float = 0.0, noun: str = "directory"
) -> Iterator[Path]:
    """Hold the lock of ``directory`` (or of an output file) for the duration of the ``with`` block.

    Parameters
    ----------
    directory : path of the output directory or file (it need not exist; its parent is made).
    argument : the argument that named the directory (e.g. ``"out"``), which messages name with
        it (`MarkovGamesError.for_argument`); None: they begin with the path.
    timeout : seconds to wait for a holder to finish (0: refuse at once).
    noun : what the output is, in messages (``"directory"``, ``"file"``).

    Raises
    ------
    DirectoryBusyError
        Another process holds the lock, or the lock file cannot be created (the message says why).
    """
    path = lock_path(directory)
    if fcntl is None:  # pragma: no cover - not POSIX
        with _filelock(directory, path, argument, timeout, noun):
            yield path
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # the output's parent, made by the command anyway
        fd = _acquire(path, timeout)
    except OSError as err:
        raise _busy(directory, argument, f"cannot lock the {noun}: {path}: {err.strerror or err}") from None
    if fd is None:
        raise _busy(directory, argument, _held_message(path, noun))
    try:
        yield path
    finally:
        _release(fd, path)


@contextlib.contextmanager
def _filelock(directory: str | os.PathLike[str], path: Path, argument: str | None, timeout: float, noun: str) -> Iterator[None]:
    from filelock import FileLock, Timeout

    lock = FileLock(str(path), timeout=timeout)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        raise _busy(directory, argument, _held_message(path, noun)) from None
    except OSError as err:
        raise _busy(directory, argument, f"cannot lock the {noun}: {path}: {err.strerror or err}") from None
    try:
        yield
    finally:
        lock.release()


def _held_message(path: Path, noun: str) -> str:
    return (
        f"another markovgames command is writing to this {noun} (it holds {path}); wait for it to finish or choose another {noun}"
    )


def _busy(directory: str | os.PathLike[str], argument: str | None, detail: str) -> DirectoryBusyError:
    if argument is None:
        return DirectoryBusyError(f"{directory}: {detail}")
    return DirectoryBusyError.for_argument(argument, detail, str(directory))
