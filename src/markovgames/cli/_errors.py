"""Errors raised by command-line handlers.

A handler raises `CliError` (or a [`GameValidationError`][markovgames.games.GameValidationError]) for a
problem the user can fix; the entry point prints its message on one line and exits with 2.
"""

from __future__ import annotations

from .._errors import MarkovGamesError

__all__ = ["CliError", "check_output_directory", "command_line_message"]


class CliError(MarkovGamesError):
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


#: The library's arguments (``MarkovGamesError.argument``) and the options that supply them.
OPTION_OF_ARGUMENT = {
    "checkpoints": "--checkpoints",
    "concept": "--concept",
    "metric": "--metric",
    "x": "--x",
    "x_axis": "--x-axis",
    "decades": "--decades",
    "window": "--window",
    "out": "--out",
    "address": "--address",
    "executor": "--executor",
    "workers": "--workers",
    "override": "--set",
}

#: The library's advice names keyword arguments; the command line's names options. Longer
#: phrases first, so that "pass overwrite=True" becomes "use --overwrite", not "pass --overwrite".
_ADVICE = (
    ("pass overwrite=True", "use --overwrite"),
    ("pass resume=True", "use --resume"),
    ("overwrite=True", "--overwrite"),
    ("resume=True", "--resume"),
    ("pass a larger max_work", "use a larger --max-work"),
    ("(raise max_entries to allow)", "(raise the limit with --max-entries)"),
    ("(raise max_bytes to allow)", "(raise the limit with --max-bytes)"),
    ("(raise max_runs to allow)", "(raise the limit with --max-runs)"),
    ("than max_runs = ", "than --max-runs = "),
)


def command_line_message(err: BaseException, message: str) -> str:
    """``message`` (from ``err``) as the command line says it: options where the library names arguments.

    An error made with `MarkovGamesError.for_argument` begins with the argument's name, which
    becomes the option that supplied it; the advice in any message ("pass overwrite=True")
    names the option instead of the keyword.
    """
    argument = getattr(err, "argument", None)
    if argument in OPTION_OF_ARGUMENT and message.startswith(argument):
        message = OPTION_OF_ARGUMENT[argument] + message[len(argument) :]
    for python, command_line in _ADVICE:
        message = message.replace(python, command_line)
    return message


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

    from .._files import encloses_working_directory

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
