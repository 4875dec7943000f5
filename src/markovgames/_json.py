"""Standard JSON only: every JSON text markovgames writes goes through `dumps`.

Python's `json.dumps` writes ``NaN``, ``Infinity`` and ``-Infinity`` for non-finite floats by
default, which no standard JSON reader accepts (markovgames's own readers refuse them). `dumps`
never writes them: a non-finite number in an output is refused before a byte is written, with the
file and the field that holds it. The inputs are bounded so that every number markovgames derives
from them is finite (a game's units, `markovgames.games.AffineRescaling`; learning rates); a
non-finite number that reaches an output anyway is a bug, and is reported as one (exit code 70 from
the command line), never written.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps"]


def _first_non_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The path (``checkpoints[3].value[1]``) and value of the first non-finite float in ``value``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        for key, item in value.items():
            found = _first_non_finite(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            found = _first_non_finite(item, f"{path}[{k}]")
            if found is not None:
                return found
    return None


def dumps(
    value: Any,
    where: str,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
) -> str:
    """``json.dumps(value, allow_nan=False, ...)``; a `RuntimeError` (a bug, not a refusal of the
    input: not a `MarkovGamesError`) naming ``where`` (the file) and the field if ``value`` holds a
    NaN or an infinity."""
    try:
        return json.dumps(value, allow_nan=False, indent=indent, sort_keys=sort_keys, separators=separators)
    except ValueError as err:
        found = _first_non_finite(value, "")
        if found is None:
            raise
        field, number = found
        raise RuntimeError(
            f"{where}: {field or 'the value'} is {number!r}, which standard JSON cannot hold; nothing was written"
        ) from err
