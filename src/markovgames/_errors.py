"""The one base class of every exception markovgames raises on purpose.

Each library error also derives from the built-in exception that describes its kind
(`ValueError` for bad input, `OSError` for a file that cannot be read, ...), so
``except ValueError`` keeps working; ``except MarkovGamesError`` catches all of them and
nothing else (a bug in markovgames or in a user's learner is not one of them).

The library's messages name its own arguments, never a command-line option: an error about an
argument is made with `MarkovGamesError.for_argument`, which records the argument's name, and the
command-line interface, which knows which option supplied it, names the option instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["MarkovGamesError", "ArgumentError"]

_E = TypeVar("_E", bound="MarkovGamesError")


class MarkovGamesError(Exception):
    """Base class of the exceptions markovgames raises for bad input, files, resources and solvers.

    Attributes
    ----------
    argument : str or None
        The Python argument the error is about, where it is about one; the message then begins
        with ``argument`` (and ``shown``, the value as given, where there is one).
    shown : str or None
        The argument's value as the message shows it, between the name and the colon.
    problems : tuple of str
        Where one input has several problems (a sweep configuration with two bad entries), each
        of them, one line naming its key; the message is these lines. Empty for a single problem.
    """

    argument: str | None = None
    shown: str | None = None
    problems: tuple[str, ...] = ()

    @classmethod
    def of_problems(cls: type[_E], problems: Sequence[str]) -> _E:
        """``cls`` with every one of ``problems`` (one line each), all of them in its message."""
        if not problems:
            raise ValueError("of_problems needs at least one problem")
        err = cls("\n".join(problems))
        err.problems = tuple(problems) if len(problems) > 1 else ()
        return err

    @classmethod
    def for_argument(cls: type[_E], argument: str, detail: str, shown: str | None = None) -> _E:
        """``cls("argument [shown]: detail")``, remembering which argument it is about."""
        err = cls(f"{argument}{'' if shown is None else ' ' + shown}: {detail}")
        err.argument, err.shown = argument, shown
        return err


class ArgumentError(MarkovGamesError, ValueError):
    """A function's argument is not one it can use (made with `MarkovGamesError.for_argument`)."""
