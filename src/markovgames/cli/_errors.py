"""Errors raised by command-line handlers.

A handler raises :class:`CliError` (or a :class:`~markovgames.games.GameValidationError`) for a
problem the user can fix; the entry point prints its message on one line and exits with 2.
"""

from __future__ import annotations

__all__ = ["CliError"]


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
