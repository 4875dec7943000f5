"""The one guard around every call of a user's code: whatever it raises is the user's error.

A user's code runs in several places: a learner file or module when it is imported, an installed
package's entry point when it is loaded, a learner's ``build``, ``init``, ``play``, ``observe``,
``propose`` and ``init_at`` (when they are traced), and a step-size schedule's ``f(t)``. Whatever
it raises there is reported as the user's error, in one line naming the function and the file and
line where it was raised, never as markovgames's own failure: an ``Exception``, and also the
`BaseException` subclasses that are not an interruption: ``SystemExit`` (``sys.exit()`` in a
schedule would otherwise end the command with the user's exit code and no message),
``GeneratorExit`` and any user-defined ``BaseException``. Only ``KeyboardInterrupt`` (Ctrl-C, and
the command line's SIGTERM, which derives from it) passes through, so that an interruption is
still one; markovgames's own errors raised inside the user's code (a check the user's code calls)
pass through as they are.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Literal

from ._errors import MarkovGamesError

__all__ = ["UserCode", "fault", "user_frame"]

#: Frames of these packages are not the user's (``.../site-packages/jax/...``).
_NOT_USERS = ("jax", "jaxlib", "numpy", "markovgames")


def fault(err: BaseException) -> str:
    """``Type: message``, its first line (``SystemExit: 3``, ``ZeroDivisionError: division by zero``)."""
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


def user_frame(err: BaseException, path: Path | None = None) -> str:
    """``file.py, line N`` of the frame of ``err``'s traceback in the file ``path`` (the innermost
    one), else of the innermost frame outside JAX, NumPy and markovgames; ``""`` if there is none."""
    frames = traceback.extract_tb(err.__traceback__)
    if path is not None:
        inside = [f for f in frames if Path(f.filename) == Path(path)]
        if inside:
            return f"{Path(inside[-1].filename).name}, line {inside[-1].lineno}"
    users = [f for f in frames if not any(part in _NOT_USERS for part in Path(f.filename).parts[-4:-1])]
    return f"{Path(users[-1].filename).name}, line {users[-1].lineno}" if users else ""


class UserCode:
    """``with UserCode(report):`` around a call of a user's code.

    Whatever the block raises but a ``KeyboardInterrupt`` or a `MarkovGamesError` is replaced by
    ``report(text)``, raised from it, where ``text`` is ``Type: message (file.py, line N)`` (see
    the module docstring). ``report`` makes the exception to raise: a `MarkovGamesError` of the
    kind the caller raises for the user's code (``LearnerError``, a ``ValueError`` naming the
    schedule), so that the command line answers it with one line and exit code 2.
    """

    __slots__ = ("_report", "_path")

    def __init__(self, report: Callable[[str], BaseException], path: Path | None = None) -> None:
        self._report, self._path = report, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        if err is None or isinstance(err, (KeyboardInterrupt, MarkovGamesError)):
            return False
        where = user_frame(err, self._path)
        raise self._report(f"{fault(err)}{f' ({where})' if where else ''}") from err
