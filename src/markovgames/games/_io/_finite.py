"""The finite-horizon game file: the keys of a `MarkovGame` in ``.json`` and ``.npz`` files.

A game file stores the tuple ``G = (N, H, S, {A_i}, {r_h,i}, {P_h}, s_1)`` of
[`MarkovGame`][markovgames.games.MarkovGame] together with the declared sizes, so that a reader can
check every size *before* it allocates anything:

================  =======================================================================
key               meaning
================  =======================================================================
``name``          free text
``num_players``   ``N >= 1``
``horizon``       ``H >= 1``
``num_states``    ``S >= 1``
``num_actions``   ``[A_0, ..., A_{N-1}]``, each ``>= 1``
``initial_state`` ``s_1`` in ``0..S-1``
``rewards``       ``rewards[h][i][s][a_0]...[a_{N-1}]`` in ``[0, 1]``: ``H*N*S*prod(A)`` numbers
``transitions``   ``transitions[h][s][a_0]...[a_{N-1}][s']`` = ``P_h(s' | s, a)``: ``H*S*prod(A)*S``
``description``   optional free text
``units``         optional: ``{"scale": c, "offset": d}``, the map ``r01 = c r + d`` (``c > 0``) from
                  the game's original payoffs to ``rewards`` (`AffineRescaling`); written when
                  it is not the identity
``format_version`` optional; written as ``1``; any other value is refused
================  =======================================================================

Any other key, or a missing required key, is an error.

A sparse game ([`SparseTransitions`][markovgames.games.SparseTransitions]) replaces ``transitions`` by three
keys (giving both forms is an error):

==============================  =====================================================================
``num_successors``              ``K >= 1``, successor entries per row
``transition_successors``       ``[h][s][a_0]...[a_{N-1}][k]``: integer states in ``0..S-1``
``transition_probabilities``    ``[h][s][a_0]...[a_{N-1}][k]``: their probabilities, each row summing to 1
==============================  =====================================================================

In a JSON file the arrays are nested lists. In an ``.npz`` file the same keys are arrays:
the sizes as 0-d integer arrays, ``num_actions`` a 1-d integer array, ``name`` and
``description`` 0-d unicode arrays, ``units`` a float array ``[scale, offset]``, and
``rewards``/``transitions`` float arrays of the shapes
``(H, N, S, A_0, ..., A_{N-1})`` and ``(H, S, A_0, ..., A_{N-1}, S)``. ``.npz`` files are read with
``allow_pickle=False``: an object array is refused, never unpickled.

Checks run in this order, each before the next allocation: the file size against
``max_bytes``; the file's syntax (UTF-8 JSON, or a zip of ``.npy`` members); the key set; the
declared sizes (positive integers, not booleans); the number of entries those sizes imply,
against ``max_entries`` (per array, as in [`MarkovGame`][markovgames.games.MarkovGame]); the nesting (JSON) or the
``.npy`` headers (npz) against the declared sizes; the entry types. Only then are the arrays
built, and [`MarkovGame`][markovgames.games.MarkovGame] checks the values (finite, rewards in ``[0, 1]``, transition rows
on the simplex, the initial state in range).

Every failure raises [`GameFileError`][markovgames.games.GameFileError] whose message starts with the file path, e.g.
``game.json: rewards[0][1][0][1][0] = 1.5 is outside [0, 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..._suggest import did_you_mean
from .._model import MAX_GAME_ENTRIES, GameValidationError, MarkovGame, SparseTransitions
from .._units import AffineRescaling
from ._base import (
    _OPTIONAL_KEYS,
    _SPARSE_KEYS,
    FORMAT_VERSION,
    _check_format_version,
    _check_initial_state,
    _check_nested,
    _check_npz_header,
    _check_num_actions,
    _check_player_count,
    _check_size,
    _check_text,
    _check_units,
    _short,
    _type_name,
)

__all__ = ["finite_game_to_dict", "game_from_dict", "finite_npz_arrays", "load_finite_npz"]

_SIZE_KEYS = ("num_players", "horizon", "num_states")
_REQUIRED_KEYS = (
    "name",
    "num_players",
    "horizon",
    "num_states",
    "num_actions",
    "initial_state",
    "rewards",
    "transitions",
)
_ALLOWED_KEYS = frozenset(_REQUIRED_KEYS + _SPARSE_KEYS + _OPTIONAL_KEYS)

#: The refusal of a discounted game where a finite-horizon one is read.
_DISCOUNTED_HERE = (
    "discount: this is a discounted game, and a finite-horizon game (MarkovGame) is expected here "
    "(markovgames.games.load_any_game reads both kinds)"
)


# ---------------------------------------------------------------------------------------
# dict <-> game
# ---------------------------------------------------------------------------------------
def finite_game_to_dict(game: MarkovGame) -> dict[str, Any]:
    """The JSON-ready dictionary of a finite-horizon game (the keys of the module docstring)."""
    out = {
        "format_version": FORMAT_VERSION,
        "name": game.name,
        "description": game.description,
        "num_players": game.num_players,
        "horizon": game.horizon,
        "num_states": game.num_states,
        "num_actions": list(game.num_actions),
        "initial_state": game.initial_state,
        # tolist() yields Python floats, which json writes repr-exactly.
        "rewards": game.rewards.tolist(),
    }
    if not game.units.is_identity:
        out["units"] = {"scale": game.units.scale, "offset": game.units.offset}
    if game.is_sparse:
        sparse = game.sparse_transitions
        out["num_successors"] = sparse.num_successors
        out["transition_successors"] = sparse.successors.tolist()
        out["transition_probabilities"] = sparse.probabilities.tolist()
    else:
        out["transitions"] = game.transitions.tolist()
    return out


def game_from_dict(data: Mapping[str, Any], *, max_entries: int = MAX_GAME_ENTRIES) -> MarkovGame:
    """Build a game from a dictionary in the file format, checking everything before allocating.

    Parameters
    ----------
    data : Mapping
        The keys listed in the module docstring (as produced by [`game_to_dict`][markovgames.games.game_to_dict] or parsed
        from a JSON file).
    max_entries : int
        Refuse a game whose ``rewards`` or ``transitions`` would have more entries than this.

    Returns
    -------
    MarkovGame

    Raises
    ------
    GameValidationError
        The message names the key and, for array entries, the index, e.g.
        ``rewards[1][0][2]: expected 2 entries (num_actions[1]), got 3``.
    """
    if not isinstance(data, Mapping):
        raise GameValidationError(f"top level: expected an object with keys, got {_type_name(data)}")
    if "discount" in data:
        raise GameValidationError(_DISCOUNTED_HERE)
    _check_keys(set(data))
    _check_format_version(data.get("format_version", FORMAT_VERSION))
    name = _check_text(data["name"], "name")
    description = _check_text(data.get("description", ""), "description")
    sizes = {key: _check_size(data[key], key) for key in _SIZE_KEYS}
    num_players = sizes["num_players"]
    _check_player_count(num_players)
    num_actions = _check_num_actions(data["num_actions"], num_players)
    initial_state = _check_initial_state(data["initial_state"])
    units = _check_units(data.get("units"))
    horizon, num_states = sizes["horizon"], sizes["num_states"]
    sparse = "transitions" not in data
    num_successors = _check_size(data["num_successors"], "num_successors") if sparse else None

    reward_shape, transition_shape = _declared_shapes(horizon, num_players, num_states, num_actions, num_successors)
    _check_entry_budget(reward_shape, transition_shape, num_actions, max_entries, sparse)

    reward_axes = ["horizon", "num_players", "num_states"] + [f"num_actions[{i}]" for i in range(num_players)]
    transition_axes = ["horizon", "num_states"] + [f"num_actions[{i}]" for i in range(num_players)]
    _check_nested(data["rewards"], "rewards", reward_shape, reward_axes)
    if sparse:
        axes = transition_axes + ["num_successors"]
        _check_nested(data["transition_successors"], "transition_successors", transition_shape, axes, integers=True)
        _check_nested(data["transition_probabilities"], "transition_probabilities", transition_shape, axes)
    else:
        _check_nested(data["transitions"], "transitions", transition_shape, transition_axes + ["num_states"])

    # The walk above proved the nesting is a full rectangular array of finite-size numbers.
    rewards = np.array(data["rewards"], dtype=np.float64)
    transitions: SparseTransitions | np.ndarray
    if sparse:
        transitions = SparseTransitions(
            np.array(data["transition_successors"], dtype=np.int64),
            np.array(data["transition_probabilities"], dtype=np.float64),
        )
    else:
        transitions = np.array(data["transitions"], dtype=np.float64)
    return MarkovGame(
        rewards=rewards,
        transitions=transitions,
        initial_state=initial_state,
        name=name,
        description=description,
        max_entries=max_entries,
        units=units,
    )


def _check_keys(keys: set[Any]) -> None:
    sparse_given = [k for k in _SPARSE_KEYS if k in keys]
    if sparse_given and "transitions" in keys:
        raise GameValidationError(
            f"both 'transitions' and the sparse form's {', '.join(repr(k) for k in sparse_given)} are given; "
            "a game file has one transition form"
        )
    required: tuple[str, ...] = _REQUIRED_KEYS
    if sparse_given:
        required = tuple(k for k in _REQUIRED_KEYS if k != "transitions") + _SPARSE_KEYS
    missing = [k for k in required if k not in keys]
    if missing:
        names = [repr(k) for k in missing]
        if "horizon" in missing:  # neither a finite-horizon nor a discounted game: say both
            names[missing.index("horizon")] = "'horizon' (a finite-horizon game; or 'discount', a discounted game)"
        raise GameValidationError(f"missing key(s): {', '.join(names)}")
    unknown = sorted(str(k) for k in keys - _ALLOWED_KEYS)
    if unknown:
        allowed = ", ".join(_REQUIRED_KEYS + _OPTIONAL_KEYS) + "; or, sparse, " + ", ".join(_SPARSE_KEYS) + " for transitions"
        shown = ", ".join(repr(k) + did_you_mean(k, sorted(_ALLOWED_KEYS - keys)) for k in unknown)
        raise GameValidationError(f"unknown key(s): {shown} (allowed: {allowed})")


def _declared_shapes(
    horizon: int, num_players: int, num_states: int, num_actions: tuple[int, ...], num_successors: int | None = None
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The rewards' shape and the transitions' (or, sparse, each successor array's) shape."""
    return (
        (horizon, num_players, num_states, *num_actions),
        (horizon, num_states, *num_actions, num_states if num_successors is None else num_successors),
    )


def _check_entry_budget(
    reward_shape: tuple[int, ...],
    transition_shape: tuple[int, ...],
    num_actions: tuple[int, ...],
    max_entries: int,
    sparse: bool = False,
) -> None:
    # Python ints: the product cannot overflow, so 10**9 x 10**9 declared actions is refused
    # by arithmetic, not by a failed allocation.
    horizon, num_players, num_states = reward_shape[:3]
    described = (
        f"H={_short(horizon)}, N={_short(num_players)}, S={_short(num_states)}, A=[{', '.join(_short(a) for a in num_actions)}]"
    )
    transition_keys = ("transition_successors", "transition_probabilities") if sparse else ("transitions",)
    for key, shape in (("rewards", reward_shape), *((k, transition_shape) for k in transition_keys)):
        entries = math.prod(shape)
        if entries > max_entries:
            raise GameValidationError(
                f"{key}: the declared sizes ({described}) give {_short(entries)} entries, "
                f"more than max_entries = {max_entries} (raise max_entries to allow)"
            )


# ----------------------------------------------------------------------------------- npz
def finite_npz_arrays(game: MarkovGame) -> dict[str, np.ndarray]:
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


class _NpzDeclared(NamedTuple):
    """What an ``.npz`` game file declares in its small arrays, checked: the text and the sizes."""

    name: str
    description: str
    initial_state: int
    horizon: int
    num_players: int
    num_states: int
    num_actions: tuple[int, ...]
    num_successors: int | None  # the sparse form's K; None for dense transitions
    units: AffineRescaling | None


def load_finite_npz(archive, headers: Mapping[str, tuple[tuple[int, ...], np.dtype]], *, max_entries: int) -> MarkovGame:
    """The finite-horizon game of an open ``.npz`` archive whose member headers were read: its keys
    and headers checked, then its declared sizes against ``max_entries`` and against the headers'
    shapes, and only then its arrays read."""
    _check_keys(set(headers))

    # dtypes and shapes from the headers, before loading anything.
    for key, (shape, dtype) in headers.items():
        _check_npz_header(key, shape, dtype)

    declared = _read_npz_declared(archive, headers)
    sparse = declared.num_successors is not None
    reward_shape, transition_shape = _declared_shapes(
        declared.horizon, declared.num_players, declared.num_states, declared.num_actions, declared.num_successors
    )
    _check_entry_budget(reward_shape, transition_shape, declared.num_actions, max_entries, sparse)
    _check_npz_shapes(headers, reward_shape, transition_shape, sparse)
    # Shapes now equal the declared, budget-checked sizes: loading is bounded.
    rewards = archive["rewards"]
    transitions: np.ndarray | SparseTransitions
    if sparse:
        transitions = SparseTransitions(archive["transition_successors"], archive["transition_probabilities"])
    else:
        transitions = archive["transitions"]
    return MarkovGame(
        rewards=rewards,
        transitions=transitions,
        initial_state=declared.initial_state,
        name=declared.name,
        description=declared.description,
        max_entries=max_entries,
        units=declared.units,
    )


def _read_npz_declared(archive, headers: Mapping[str, tuple[tuple[int, ...], np.dtype]]) -> _NpzDeclared:
    """Read and check the small arrays of an open archive: the sizes, the format version, the
    text, the initial state, ``num_actions`` and, sparse, ``num_successors`` (each 0-d, or 1-d of at
    most `_MAX_PLAYERS` entries: their headers were checked, so reading them is cheap)."""
    sizes = {key: _check_size(archive[key][()], key) for key in _SIZE_KEYS}
    if "format_version" in headers:
        _check_format_version(archive["format_version"][()])
    name = str(archive["name"][()])
    description = str(archive["description"][()]) if "description" in headers else ""
    initial_state = _check_initial_state(archive["initial_state"][()])
    num_players = sizes["num_players"]
    _check_player_count(num_players)
    num_actions = _check_num_actions(archive["num_actions"].tolist(), num_players)
    sparse = "transitions" not in headers
    num_successors = _check_size(archive["num_successors"][()], "num_successors") if sparse else None
    units = None
    if "units" in headers:
        scale, offset = archive["units"].tolist()
        units = _check_units({"scale": scale, "offset": offset})
    return _NpzDeclared(
        name=name,
        description=description,
        initial_state=initial_state,
        horizon=sizes["horizon"],
        num_players=num_players,
        num_states=sizes["num_states"],
        num_actions=num_actions,
        num_successors=num_successors,
        units=units,
    )


def _check_npz_shapes(
    headers: Mapping[str, tuple[tuple[int, ...], np.dtype]],
    reward_shape: tuple[int, ...],
    transition_shape: tuple[int, ...],
    sparse: bool,
) -> None:
    """Refuse arrays whose header shapes differ from the shapes the declared sizes give."""
    expected_shapes = [("rewards", reward_shape, "(H, N, S, A_0, ..., A_(N-1))")]
    if sparse:
        expected_shapes += [
            (key, transition_shape, "(H, S, A_0, ..., A_(N-1), K)")
            for key in ("transition_successors", "transition_probabilities")
        ]
    else:
        expected_shapes.append(("transitions", transition_shape, "(H, S, A_0, ..., A_(N-1), S)"))
    for key, expected, axes in expected_shapes:
        if headers[key][0] != expected:
            raise GameValidationError(
                f"{key}: array shape {headers[key][0]} does not match the declared sizes {axes} = {expected}"
            )
