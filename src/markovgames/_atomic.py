"""Atomic file writes: a temporary file in the same directory, then ``os.replace`` (or ``os.link``).

A crash or error never leaves a truncated file under the final name that a later step could trust.
A write that may not replace an existing file (``replace=False``: a command's output without its
``--overwrite``/``--force``) puts the file in place with ``os.link``, which fails if the name
exists: a file that appeared while the command ran (another command's) is never replaced, however
close the two commands came.
Only a regular file is ever replaced: a symbolic link, a FIFO, a device, a socket or a directory
under the final name is refused (`NotReplaceableError`), whoever writes (a run's files, a sweep's,
a figure, a summary), so that markovgames never replaces what it did not make.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ._errors import MarkovGamesError
from ._outputs import file_kind

__all__ = ["atomic_write", "atomic_write_text", "NotReplaceableError"]


class NotReplaceableError(MarkovGamesError, OSError):
    """The final name of a write holds something other than a regular file (``filename`` names it)."""


def _check_replaceable(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise NotReplaceableError(
            errno.EEXIST,
            f"is {file_kind(mode)}, not a regular file; markovgames replaces only regular files, so remove it or write elsewhere",
            str(path),
        )


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], object], replace: bool = True) -> None:
    """Create ``path`` atomically from ``write(fh)``; raises ``OSError`` on failure (nothing is left behind).

    ``replace=False``: an existing ``path`` is not replaced (``FileExistsError`` naming it), even one
    created by another process during the write.
    """
    path = Path(path)
    _check_replaceable(path)
    directory = path.parent
    for _ in range(100):
        tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            # Mode 0o666 lets the umask set the final permissions, as for any new file
            # (tempfile would leave it 0o600).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise OSError(f"cannot create a temporary file in {directory}")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        _check_replaceable(path)  # again: the write may have taken long
        if replace:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError) and err.errno is not None and not isinstance(err, NotReplaceableError):
            # A write's error (a full disk, a quota) names no file, a rename's the temporary one:
            # name the file the caller asked for.
            raise OSError(err.errno, err.strerror, str(path)) from None
        raise


def _link_new(tmp: Path, path: Path) -> None:
    """Give the written file ``tmp`` the name ``path``, which must not exist; remove ``tmp``."""
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError as err:
            if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
                raise
            # A file system without hard links: the exclusive creation of a placeholder stands in
            # for the link (a write between it and the rename can only be our own).
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            os.replace(tmp, path)
            return
    except FileExistsError:
        raise FileExistsError(
            errno.EEXIST, "was created by another process while this command wrote it; it is left as it is", str(path)
        ) from None
    os.unlink(tmp)


def atomic_write_text(path: str | os.PathLike[str], text: str, replace: bool = True) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically (``replace``: as `atomic_write`)."""
    atomic_write(path, lambda fh: fh.write(text.encode("utf-8")), replace)
