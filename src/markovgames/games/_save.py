"""Writing Markov games (finite-horizon and discounted) as ``.json`` or ``.npz`` files (`markovgames.games._io` reads them)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import atomic_write
from ._discounted import DiscountedMarkovGame
from ._io import _NPZ_TEXT_KEYS, FORMAT_VERSION, GameFileError, _suffix, game_to_dict
from ._model import MarkovGame

__all__ = ["save_game"]


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
        if isinstance(game, DiscountedMarkovGame):
            from ._discounted_io import discounted_npz_arrays

            arrays = discounted_npz_arrays(game)
        else:
            arrays = _npz_arrays(game)

        def write(fh) -> None:
            # A file object, not a name: np.savez would append ".npz" to the temporary name. The
            # names are the game file's keys, never savez's own allow_pickle, which mypy cannot tell.
            np.savez(fh, **arrays)  # type: ignore[arg-type]

    _atomic_write(path, write, replace)
    return path


def _npz_arrays(game: MarkovGame) -> dict[str, np.ndarray]:
    """The arrays of a finite-horizon game's ``.npz`` file."""
    arrays = {
        "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
        "name": np.array(game.name, dtype=np.str_),
        "description": np.array(game.description, dtype=np.str_),
        "num_players": np.array(game.num_players, dtype=np.int64),
        "horizon": np.array(game.horizon, dtype=np.int64),
        "num_states": np.array(game.num_states, dtype=np.int64),
        "num_actions": np.array(game.num_actions, dtype=np.int64),
        "initial_state": np.array(game.initial_state, dtype=np.int64),
        "rewards": np.asarray(game.rewards, dtype=np.float64),
    }
    if not game.units.is_identity:
        arrays["units"] = np.array([game.units.scale, game.units.offset], dtype=np.float64)
    if game.is_sparse:
        sparse = game.sparse_transitions
        arrays["num_successors"] = np.array(sparse.num_successors, dtype=np.int64)
        arrays["transition_successors"] = sparse.successors
        arrays["transition_probabilities"] = sparse.probabilities
    else:
        arrays["transitions"] = np.asarray(game.transitions, dtype=np.float64)
    return arrays


def _atomic_write(path: Path, write, replace: bool) -> None:
    try:
        atomic_write(path, write, replace)
    except OSError as err:
        raise GameFileError(f"{path}: cannot write: {err.strerror or err}") from None


def _format_json(data: dict[str, Any]) -> str:
    """JSON with one key per line and short sub-arrays on one line (readable, still exact)."""

    def fmt(value: Any, indent: int) -> str:
        if isinstance(value, list):
            flat = json.dumps(value)
            # Innermost lists always on one line; deeper ones too while they are short.
            if not value or not isinstance(value[0], list) or len(flat) + indent <= 96:
                return flat
            pad = " " * (indent + 2)
            inner = (",\n" + pad).join(fmt(v, indent + 2) for v in value)
            return "[\n" + pad + inner + "\n" + " " * indent + "]"
        # ensure_ascii: the file is pure ASCII, and any str (even a lone surrogate) round-trips.
        return json.dumps(value)

    lines = [f"  {json.dumps(k)}: {fmt(v, 2)}" for k, v in data.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"
