"""Where an output may go: never onto an input, never over something markovgames did not make.

Every command that writes checks its output path with these functions before any work:

- `check_apart`: the output is not one of the command's inputs, does not contain one and does not
  lie inside one. Paths are compared once every symbolic link is resolved, and then by identity
  (``st_dev`` and ``st_ino``) as well, so that a hard link, a bind mount or a second spelling of
  the same directory is caught too. (``evaluate --out RUN/metrics.json --overwrite`` would
  otherwise replace the file it reads; ``certify RUN/trajectory --out RUN --overwrite`` would
  delete its own input.)
- `check_replaceable_file`: a single output file is a new name, or, with the command's flag
  (``--overwrite``, ``--force``), an existing regular file. A symbolic link is refused rather
  than followed or replaced, and a FIFO, a device, a socket or a directory is never replaced,
  with or without the flag (as root, ``--out /dev/null --overwrite`` would replace the device).
- `remove_created_parents`: a command refused or failed after it made the missing parents of its
  output directory removes them again, so that a refusal leaves nothing behind.

Replacing a directory is `markovgames.experiments`' business: only one that holds the marker file
``.markovgames`` of a markovgames output is ever replaced (``experiments.rundirs._directory._check_marker``).
`markovgames._atomic.atomic_write` also refuses to replace anything but a regular file, whoever
calls it, so that a file written inside an output directory cannot replace a FIFO or a device
that was put there.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from ._errors import MarkovGamesError
from ._files import file_kind
from ._lock import is_lock_file

__all__ = [
    "OutputPathError",
    "check_apart",
    "check_replaceable_file",
    "file_kind",
    "overlap",
    "remove_created_parents",
]


class OutputPathError(MarkovGamesError, ValueError):
    """An output path that would replace an input, a special file, a link's target or an existing file."""


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    return st.st_dev, st.st_ino


def overlap(out: str | os.PathLike[str], source: str | os.PathLike[str]) -> str | None:
    """How the output path ``out`` overlaps the input ``source``: ``"is"``, ``"contains"``,
    ``"lies inside"``, or None where they are apart.

    Both are resolved (every symbolic link followed, ``..`` taken), then compared by name; an
    existing ``source`` is also compared by identity with ``out`` and with ``out``'s ancestors,
    and an existing ``out`` with ``source``'s ancestors (a hard link, a bind mount).
    """
    real_out, real_source = Path(os.path.realpath(out)), Path(os.path.realpath(source))
    if real_out == real_source:
        return "is"
    if real_out in real_source.parents:
        return "contains"
    if real_source in real_out.parents:
        return "lies inside"
    source_id = _identity(real_source)
    if source_id is None:
        return None
    if _identity(real_out) == source_id:
        return "is"
    if any(_identity(a) == source_id for a in real_out.parents):
        return "lies inside"
    out_id = _identity(real_out)
    if out_id is not None and any(_identity(a) == out_id for a in real_source.parents):
        return "contains"
    return None


def check_apart(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], argument: str) -> None:
    """Refuse an output path that is, contains, or lies inside any of ``inputs`` (writing nothing).

    Parameters
    ----------
    out : the output file or directory, as given.
    inputs : the files and directories the command reads (those that do not exist are skipped
        by the identity comparison but still compared by name).
    argument : what named ``out`` (``"out"``, ``"--markdown"``): the message begins with it.

    Raises
    ------
    OutputPathError
        Naming ``argument``, ``out``, the input and what to do.
    """
    for source in inputs:
        relation = overlap(out, source)
        if relation is not None:
            raise OutputPathError.for_argument(
                argument,
                f"{relation} the input {source}; an output never replaces what the command reads, so choose another path",
                str(out),
            )


def check_replaceable_file(path: str | os.PathLike[str], argument: str | None, replace: bool, flag: str) -> None:
    """Refuse a single output file that may not be written (writing nothing).

    A path that does not exist may be written. An existing one is replaced only if it is a
    regular file and ``replace`` (the command's ``flag``) is given; a symbolic link, a
    directory, a FIFO, a device or a socket is refused whatever the flag.

    Raises
    ------
    OutputPathError
        Naming ``argument``, ``path``, what is there and the fix.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        return  # unreadable or unrepresentable: the write itself reports it, naming the path
    if stat.S_ISLNK(mode):
        detail = "is a symbolic link; markovgames never writes through one, so name the file itself or choose another path"
    elif stat.S_ISDIR(mode):
        detail = "is a directory; give the path of the file to write"
    elif not stat.S_ISREG(mode):
        detail = f"is {file_kind(mode)}, not a regular file; markovgames replaces only regular files, so choose another path"
    elif not replace:
        detail = f"exists; use {flag} to replace it, or choose another path"
    else:
        return
    if not argument:  # a default path, which no option named
        raise OutputPathError(f"{path}: {detail}")
    raise OutputPathError.for_argument(argument, detail, str(path))


def _missing_ancestors(directory: Path) -> list[Path]:
    """The ancestors of ``directory`` that do not exist, deepest first."""
    missing = []
    for ancestor in Path(os.path.abspath(directory)).parents:
        if os.path.lexists(ancestor):
            break
        missing.append(ancestor)
    return missing


@contextlib.contextmanager
def remove_created_parents(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Within: if the block raises, remove the parents of ``directory`` that it created.

    Only directories that did not exist on entry are removed, deepest first, and only while
    they are empty but for the lock files (``.NAME.lock`` holding `markovgames._lock.MARKER`) that
    the command made in them; one that holds anything else (a run's saved state, kept to be resumed) stays.
    """
    missing = _missing_ancestors(Path(directory))
    try:
        yield
    except BaseException:
        for ancestor in missing:
            with contextlib.suppress(OSError):
                for entry in os.scandir(ancestor):
                    if entry.name.startswith(".") and entry.name.endswith(".lock") and is_lock_file(entry.path):
                        os.unlink(entry.path)
                os.rmdir(ancestor)
        raise
