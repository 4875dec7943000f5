"""Errors raised by command-line handlers.

A handler raises `CliError` (or a [`GameValidationError`][markovgames.games.GameValidationError]) for a
problem the user can fix; the entry point prints its message on one line and exits with 2.
"""

from __future__ import annotations

__all__ = ["CliError", "check_output_directory"]


class CliError(Exception):
    """A user-facing command-line error.

    Parameters
    ----------
    message : str
        One line, naming the option or file at fault.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def check_output_directory(out, option: str = "--out", replaces: bool = False) -> None:
    """Refuse an output directory that cannot be created, before any work is done.

    ``out`` may exist (then it must be a directory; what may be in it is the command's
    business) or not (then its nearest existing ancestor must be a writable directory). With
    ``replaces`` (a command that replaces the whole directory when done), it must not be the
    working directory or one that contains it.
    Without this check the failure would surface late, naming a temporary path the user
    never gave.

    Raises
    ------
    CliError
        Naming ``option`` and ``out``.
    """
    import os
    from pathlib import Path

    from ..experiments import encloses_working_directory

    out = Path(out)
    if replaces and encloses_working_directory(out):
        raise CliError(
            f"{option} {out}: is the current directory or contains it; the command replaces its whole "
            "output directory, so name a new one (e.g. runs/NAME)"
        )
    if out.exists():
        if not out.is_dir():
            raise CliError(f"{option} {out}: exists and is not a directory")
        return
    ancestor = out.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise CliError(f"{option} {out}: cannot create the directory: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise CliError(f"{option} {out}: cannot create the directory: {ancestor} is not writable")
