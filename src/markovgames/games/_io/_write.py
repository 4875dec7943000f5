"""Writing Markov games (finite-horizon and discounted) as ``.json`` or ``.npz`` files (`_read` reads them).

The entry points that dispatch on the kind of game, over the two formats (`_finite`,
`_discounted`). Writes are atomic: the file is written to a temporary file in the target's
directory and moved into place with `os.replace`, so a reader never sees a half-written game. The
JSON round trip is exact: Python writes each float with the shortest ``repr`` that reads back to
the same float64.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write
from .._discounted import DiscountedMarkovGame
from .._model import MarkovGame
from ._base import _NPZ_TEXT_KEYS, GameFileError, _suffix
from ._discounted import discounted_game_to_dict, discounted_npz_arrays
from ._finite import finite_game_to_dict, finite_npz_arrays

__all__ = ["game_to_dict", "save_game"]


def game_to_dict(game: MarkovGame | DiscountedMarkovGame) -> dict[str, Any]:
    """Return the JSON-ready dictionary of ``game`` (plain Python ints, floats, str, lists).

    Parameters
    ----------
    game : MarkovGame

    Returns
    -------
    dict
        The keys listed in the module docstring, ``format_version`` first (a
        [`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame]: the keys of a discounted
        game file, see [Game files](../howto-games.md)).
    """
    if isinstance(game, DiscountedMarkovGame):
        return discounted_game_to_dict(game)
    return finite_game_to_dict(game)


def save_game(game: MarkovGame | DiscountedMarkovGame, path: str | os.PathLike[str], *, replace: bool = True) -> Path:
    """Write ``game`` to ``path`` atomically, as ``.json`` or ``.npz`` by the suffix.

    Parameters
    ----------
    game : MarkovGame
    path : str or os.PathLike
        An existing regular file is replaced (never a link, a directory or a special file).
    replace : bool
        False: refuse an existing ``path``, even one created while the game is written.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    GameFileError
        Unknown suffix, or the file cannot be written (the message starts with the path).
    """
    if not isinstance(game, (MarkovGame, DiscountedMarkovGame)):
        raise TypeError(f"save_game: expected a MarkovGame or a DiscountedMarkovGame, got {type(game).__name__}")
    path = Path(path)
    suffix = _suffix(path)
    if suffix == ".json":
        payload = _format_json(game_to_dict(game)).encode("utf-8")

        def write(fh) -> None:
            fh.write(payload)

    else:
        for key in _NPZ_TEXT_KEYS:
            # numpy's fixed-width unicode arrays drop trailing NULs: refuse rather than alter.
            if "\x00" in getattr(game, key):
                raise GameFileError(f"{path}: {key}: NUL characters cannot be stored in an .npz file")
        arrays = discounted_npz_arrays(game) if isinstance(game, DiscountedMarkovGame) else finite_npz_arrays(game)

        def write(fh) -> None:
            # A file object, not a name: np.savez would append ".npz" to the temporary name. The
            # names are the game file's keys, never savez's own allow_pickle, which mypy cannot tell.
            np.savez(fh, **arrays)  # type: ignore[arg-type]

    _atomic_write(path, write, replace)
    return path


def _atomic_write(path: Path, write, replace: bool) -> None:
    try:
        atomic_write(path, write, replace)
    except OSError as err:
        raise GameFileError(f"{path}: cannot write: {err.strerror or err}") from None


def _format_json(data: dict[str, Any]) -> str:
    """JSON with one key per line and short sub-arrays on one line (readable, still exact)."""

    def fmt(value: Any, indent: int) -> str:
        if isinstance(value, list):
            flat = json.dumps(value, allow_nan=False)
            # Innermost lists always on one line; deeper ones too while they are short.
            if not value or not isinstance(value[0], list) or len(flat) + indent <= 96:
                return flat
            pad = " " * (indent + 2)
            inner = (",\n" + pad).join(fmt(v, indent + 2) for v in value)
            return "[\n" + pad + inner + "\n" + " " * indent + "]"
        # ensure_ascii: the file is pure ASCII, and any str (even a lone surrogate) round-trips.
        return json.dumps(value, allow_nan=False)

    lines = [f"  {json.dumps(k)}: {fmt(v, 2)}" for k, v in data.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"
