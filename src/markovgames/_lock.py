"""One writer per output: an exclusive lock on the file ``.NAME.lock`` beside ``NAME``, removed on release.

Every command that writes into (or replaces) a directory, or writes a single output file, holds
this lock while it does, so that two commands started at once cannot mix their files (a
``metrics.json`` of one run beside the trajectory of another) or replace each other's file; the
second is refused at once. The lock is an ``flock`` on the lock file: the kernel releases it when
its holder ends, however it ends (``kill -9`` included), so a lock left by a dead process never
blocks anyone.

The lock file sits beside the output, not in it, because ``run`` and ``solve`` replace their
whole output directory when they finish. It is deleted when the lock is released, so that nothing
is left beside the output, and only if it is provably a markovgames lock: markovgames deletes only
what it made. A lock file is made whole, with its content (`MARKER`), under its name at once (written
under a unique temporary name, then hard-linked to ``.NAME.lock``, which fails if the name exists), so
no one ever sees a lock file without its content. A file already at ``.NAME.lock`` that no one
holds is taken as the lock only if it is a regular file holding exactly `MARKER` (the lock of a
holder killed with ``kill -9``); anything else there (a user's own file of that name, a directory,
a link, a FIFO) is left as it is and the command is refused (`ForeignLockFileError`), naming it. On
release the file is deleted only if it is still the one locked (same device and inode) and still
holds `MARKER`.

Deleting a lock file is safe only with a check on the other side: a process that opened the file
before it was deleted may be granted the ``flock`` on the deleted file. So a process that has been
granted the ``flock`` checks that the file it locked is still the one at the path (same device and
inode) and starts again otherwise; the holder deletes the file before it lets go of the ``flock``.
Where ``flock`` is not available (Windows), `filelock.FileLock` is used and the lock file is left
in place, as that library intends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ._errors import MarkovGamesError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DirectoryBusyError",
    "ForeignLockFileError",
    "MARKER",
    "is_lock_file",
    "lock_path",
    "directory_lock",
    "check_not_held",
]

# How often a command that waits for a lock (``timeout > 0``) tries again.
_POLL_SECONDS = 0.05

#: The whole content of a markovgames lock file: what tells it from a user's file of the same name.
MARKER = b"markovgames output lock (deleted by the command that holds it when it finishes)\n"


class DirectoryBusyError(MarkovGamesError, RuntimeError):
    """Another process holds the lock of an output directory, or the lock cannot be taken."""


class ForeignLockFileError(MarkovGamesError, FileExistsError):
    """The lock file's name is taken by something markovgames did not make (a user's own file named
    ``.NAME.lock``, a directory, a link): it is left as it is, and the output is not written."""


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


def _holds_marker(fd: int) -> bool:
    """Whether the open file ``fd`` is a regular file whose whole content is `MARKER` (read by
    position, at most one byte beyond it: a large file is not read)."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return False
    return os.pread(fd, len(MARKER) + 1, 0) == MARKER


def is_lock_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a markovgames lock file (a regular file holding `MARKER`, not a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return _holds_marker(fd)
    finally:
        os.close(fd)


def _kind(path: Path) -> str:
    """What is at ``path``, in words, for a message."""
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode
    except OSError:
        return "a file"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if not stat.S_ISREG(mode):
        return "a device"
    size = os.stat(path, follow_symlinks=False).st_size
    return f"a file of {size} byte{'' if size == 1 else 's'}"


class _Foreign(MarkovGamesError):
    """Raised inside `_acquire`: ``path`` is not a markovgames lock (the message says what it is)."""


def _create(path: Path) -> int | None:
    """A new lock file at ``path`` holding `MARKER`, open (``None``: the name exists already).

    The file is written under a unique temporary name beside it and hard-linked to ``path``: the
    link fails if the name is taken, and whoever sees the file sees it whole. Where the file
    system has no hard links, the file is created exclusively and then written.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd, temporary = -1, path
    while fd < 0:
        temporary = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(6)}")
        with contextlib.suppress(FileExistsError):  # a name of that form already there (not ours): another one
            fd = os.open(temporary, flags, 0o644)
    try:
        os.write(fd, MARKER)
        os.link(temporary, path, follow_symlinks=False)
        linked = True
    except FileExistsError:
        linked = False
    except OSError as err:
        os.close(fd)
        os.unlink(temporary)
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        return _create_in_place(path, flags)
    except BaseException:
        os.close(fd)
        os.unlink(temporary)
        raise
    os.unlink(temporary)
    if linked:
        return fd
    os.close(fd)
    return None


def _create_in_place(path: Path, flags: int) -> int | None:
    """`_create` on a file system without hard links: the name is created exclusively, then written."""
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        return None
    try:
        os.write(fd, MARKER)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_existing(path: Path) -> int | None:
    """The file already at ``path``, open without following a link or blocking on a FIFO
    (``None``: it was deleted meanwhile); `_Foreign` if it cannot be a lock file."""
    try:
        return os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EOPNOTSUPP, errno.ENOTDIR):
            raise _Foreign(_kind(path)) from None
        raise


def _acquire(path: Path, timeout: float) -> int | None:
    """The descriptor of ``path`` with an exclusive ``flock`` on it, the file still at ``path`` and
    a markovgames lock (``None``: another process held it for ``timeout`` seconds)."""
    assert fcntl is not None
    deadline = time.monotonic() + timeout
    while True:
        fd = _create(path)
        made = fd is not None
        if fd is None:
            fd = _open_existing(path)
            if fd is None:
                continue  # its holder deleted it as we looked: make it now
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
        if not _same_file(fd, path):
            os.close(fd)  # the holder we waited for deleted the file: lock the one at the path now
            continue
        if not made and not _holds_marker(fd):
            os.close(fd)
            raise _Foreign(_kind(path))
        return fd


def _release(fd: int, path: Path) -> None:
    # Delete first, while the flock is held, so that whoever gets the flock next on this file sees
    # that it is no longer the lock file and starts again; and only our own file, still ours.
    with contextlib.suppress(OSError):
        if _same_file(fd, path) and _holds_marker(fd):
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
    ForeignLockFileError
        ``.NAME.lock`` is something markovgames did not make (it is left as it is).
    """
    path = lock_path(directory)
    if fcntl is None:  # pragma: no cover - not POSIX
        with _filelock(directory, path, argument, timeout, noun):
            yield path
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # the output's parent, made by the command anyway
        fd = _acquire(path, timeout)
    except _Foreign as what:
        detail = (
            f"{path} is {what}, not a markovgames lock (markovgames deletes only what it made): move it away or choose "
            f"another {noun}"
        )
        raise _error(ForeignLockFileError, directory, argument, detail) from None
    except OSError as err:
        raise _busy(directory, argument, f"cannot lock the {noun}: {path}: {err.strerror or err}") from None
    if fd is None:
        raise _busy(directory, argument, _held_message(path, noun))
    try:
        yield path
    finally:
        _release(fd, path)


def check_not_held(directory: str | os.PathLike[str], argument: str | None = None, noun: str = "directory") -> None:
    """Raise `DirectoryBusyError` if another process holds the lock of ``directory`` now.

    For a check a command makes before it takes the lock (what the directory holds, say): while
    another markovgames command is writing there, what it sees is that command's work in
    progress, so the answer is the lock's, not a verdict on half-written contents. Nothing is
    created, taken or deleted.
    """
    if fcntl is None:  # pragma: no cover - not POSIX
        return
    path = lock_path(directory)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return  # no lock file (or none that can be a lock): nobody holds it
    try:
        if not _holds_marker(fd):
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy(directory, argument, _held_message(path, noun)) from None
        except OSError:
            return
    finally:
        os.close(fd)  # closing releases the shared lock taken to look


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
    return _error(DirectoryBusyError, directory, argument, detail)


def _error(cls, directory: str | os.PathLike[str], argument: str | None, detail: str):
    if argument is None:
        return cls(f"{directory}: {detail}")
    return cls.for_argument(argument, detail, str(directory))
