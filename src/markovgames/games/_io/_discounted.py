"""Discounted games in ``.json`` and ``.npz`` files.

A discounted game file is told apart by its ``discount`` key. It has the keys of a
finite-horizon game file (`_finite`) except ``horizon``, and stationary arrays:

========================  =================================================================
key                       meaning
========================  =================================================================
``discount``              ``gamma``, a number in ``[0, 1)``
``num_players``           ``N >= 1``
``num_states``            ``S >= 1``
``num_actions``           ``[A_0, ..., A_{N-1}]``
``initial_state``         ``s_0`` in ``0..S-1``; or, instead,
``initial_distribution``  ``rho[s]``, ``S`` probabilities summing to 1
``rewards``               ``rewards[i][s][a_0]...[a_{N-1}]`` in ``[0, 1]``: ``N*S*prod(A)`` numbers
``transitions``           ``transitions[s][a_0]...[a_{N-1}][s']``; or the sparse form's three keys
                          with arrays ``[s][a_0]...[a_{N-1}][k]``
``name``, ``description``, ``units``, ``format_version``: as in a finite-horizon file
========================  =================================================================

A file with both ``discount`` and ``horizon`` is refused (``horizon``: a discounted game has
none), as is a finite-horizon file read where a discounted one is expected (``discount``
missing). The checks run in the finite-horizon reader's order: keys, declared sizes, entry
budget, nesting or ``.npy`` headers, then values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._discounted import DiscountedMarkovGame, check_discount
from .._model import GameValidationError, SparseTransitions
from ._base import (
    _OPTIONAL_KEYS,
    _SPARSE_KEYS,
    FORMAT_VERSION,
    _check_format_version,
    _check_initial_state,
    _check_nested,
    _check_num_actions,
    _check_player_count,
    _check_size,
    _check_text,
    _check_units,
    _short,
    _type_name,
)

__all__ = ["discounted_game_to_dict", "discounted_game_from_dict", "discounted_npz_arrays", "load_discounted_npz"]

_REQUIRED = ("name", "discount", "num_players", "num_states", "num_actions", "rewards", "transitions")
_INITIAL = ("initial_state", "initial_distribution")
_ALLOWED = frozenset(_REQUIRED + _INITIAL + _SPARSE_KEYS + _OPTIONAL_KEYS)


def discounted_game_to_dict(game: DiscountedMarkovGame) -> dict[str, Any]:
    """The JSON-ready dictionary of a discounted game (the keys of the module docstring)."""
    out: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "name": game.name,
        "description": game.description,
        "discount": game.discount,
        "num_players": game.num_players,
        "num_states": game.num_states,
        "num_actions": list(game.num_actions),
    }
    if game.initial_state is not None:
        out["initial_state"] = game.initial_state
    else:
        out["initial_distribution"] = game.initial_distribution.tolist()
    out["rewards"] = game.rewards.tolist()
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


def _check_keys(keys: set[Any]) -> None:
    if "horizon" in keys:
        raise GameValidationError(
            "horizon: a discounted game (the file has 'discount') has no horizon; its rewards have shape "
            "(N, S, A_0, ..., A_(N-1)) and its transitions (S, A_0, ..., A_(N-1), S): remove 'horizon' and the "
            "step axis, or remove 'discount' for a finite-horizon game"
        )
    sparse_given = [k for k in _SPARSE_KEYS if k in keys]
    if sparse_given and "transitions" in keys:
        raise GameValidationError(
            f"both 'transitions' and the sparse form's {', '.join(repr(k) for k in sparse_given)} are given; "
            "a game file has one transition form"
        )
    required: tuple[str, ...] = _REQUIRED
    if sparse_given:
        required = tuple(k for k in _REQUIRED if k != "transitions") + _SPARSE_KEYS
    missing = [k for k in required if k not in keys]
    if missing:
        raise GameValidationError(f"missing key(s): {', '.join(repr(k) for k in missing)}")
    if all(k in keys for k in _INITIAL):
        raise GameValidationError("initial_state and initial_distribution are both given; a game file has one of the two")
    unknown = sorted(str(k) for k in keys - _ALLOWED)
    if unknown:
        allowed = ", ".join(_REQUIRED + _INITIAL + _OPTIONAL_KEYS) + "; or, sparse, " + ", ".join(_SPARSE_KEYS)
        raise GameValidationError(f"unknown key(s): {', '.join(map(repr, unknown))} (allowed in a discounted game: {allowed})")


def _shapes(num_players: int, num_states: int, num_actions: tuple[int, ...], num_successors: int | None):
    return (num_players, num_states, *num_actions), (
        num_states,
        *num_actions,
        num_states if num_successors is None else num_successors,
    )


def _check_budget(reward_shape, transition_shape, max_entries: int, sparse: bool) -> None:
    keys = ("transition_successors", "transition_probabilities") if sparse else ("transitions",)
    for key, shape in (("rewards", reward_shape), *((k, transition_shape) for k in keys)):
        entries = math.prod(shape)
        if entries > max_entries:
            raise GameValidationError(
                f"{key}: the declared sizes give {_short(entries)} entries, more than max_entries = {max_entries} "
                "(raise max_entries to allow)"
            )


def discounted_game_from_dict(data: Mapping[str, Any], *, max_entries: int) -> DiscountedMarkovGame:
    """Build a discounted game from a dictionary in the file format, checking before allocating."""
    if not isinstance(data, Mapping):
        raise GameValidationError(f"top level: expected an object with keys, got {_type_name(data)}")
    _check_keys(set(data))
    _check_format_version(data.get("format_version", FORMAT_VERSION))
    name = _check_text(data["name"], "name")
    description = _check_text(data.get("description", ""), "description")
    discount = check_discount(data["discount"])
    num_players = _check_size(data["num_players"], "num_players")
    _check_player_count(num_players)
    num_states = _check_size(data["num_states"], "num_states")
    num_actions = _check_num_actions(data["num_actions"], num_players)
    units = _check_units(data.get("units"))
    sparse = "transitions" not in data
    num_successors = _check_size(data["num_successors"], "num_successors") if sparse else None
    reward_shape, transition_shape = _shapes(num_players, num_states, num_actions, num_successors)
    _check_budget(reward_shape, transition_shape, max_entries, sparse)
    actions = [f"num_actions[{i}]" for i in range(num_players)]
    _check_nested(data["rewards"], "rewards", reward_shape, ["num_players", "num_states", *actions])
    if sparse:
        axes = ["num_states", *actions, "num_successors"]
        _check_nested(data["transition_successors"], "transition_successors", transition_shape, axes, integers=True)
        _check_nested(data["transition_probabilities"], "transition_probabilities", transition_shape, axes)
        transitions: SparseTransitions | np.ndarray = SparseTransitions(
            np.array(data["transition_successors"], dtype=np.int64),
            np.array(data["transition_probabilities"], dtype=np.float64),
        )
    else:
        _check_nested(data["transitions"], "transitions", transition_shape, ["num_states", *actions, "num_states"])
        transitions = np.array(data["transitions"], dtype=np.float64)
    initial: dict[str, Any] = {}
    if "initial_distribution" in data:
        _check_nested(data["initial_distribution"], "initial_distribution", (num_states,), ["num_states"])
        initial["initial_distribution"] = np.array(data["initial_distribution"], dtype=np.float64)
    else:
        initial["initial_state"] = _check_initial_state(data.get("initial_state", 0))
    return DiscountedMarkovGame(
        np.array(data["rewards"], dtype=np.float64),
        transitions,
        discount,
        name=name,
        description=description,
        max_entries=max_entries,
        units=units,
        **initial,
    )


# ------------------------------------------------------------------------------------ npz
def discounted_npz_arrays(game: DiscountedMarkovGame) -> dict[str, np.ndarray]:
    """The arrays of a discounted game's ``.npz`` file (the keys of the module docstring)."""
    arrays = {
        "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
        "name": np.array(game.name, dtype=np.str_),
        "description": np.array(game.description, dtype=np.str_),
        "discount": np.array(game.discount, dtype=np.float64),
        "num_players": np.array(game.num_players, dtype=np.int64),
        "num_states": np.array(game.num_states, dtype=np.int64),
        "num_actions": np.array(game.num_actions, dtype=np.int64),
        "rewards": np.asarray(game.rewards, dtype=np.float64),
    }
    if game.initial_state is not None:
        arrays["initial_state"] = np.array(game.initial_state, dtype=np.int64)
    else:
        arrays["initial_distribution"] = np.asarray(game.initial_distribution, dtype=np.float64)
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


def load_discounted_npz(archive, headers: Mapping[str, tuple[tuple[int, ...], np.dtype]], *, max_entries: int):
    """The discounted game of an open ``.npz`` archive whose member headers were read (and each checked)."""
    _check_keys(set(headers))
    for key in ("discount", "initial_distribution"):
        if key in headers:
            shape, dtype = headers[key]
            want = () if key == "discount" else None
            if dtype.kind not in "fiu" or (want is not None and shape != want) or (want is None and len(shape) != 1):
                wanted = "a 0-d float array" if key == "discount" else "a 1-d float array"
                raise GameValidationError(f"{key}: expected {wanted}, got dtype {dtype} with shape {shape}")
    discount = check_discount(archive["discount"][()].item())
    name = str(archive["name"][()])
    description = str(archive["description"][()]) if "description" in headers else ""
    num_players = _check_size(archive["num_players"][()], "num_players")
    _check_player_count(num_players)
    num_states = _check_size(archive["num_states"][()], "num_states")
    num_actions = _check_num_actions(archive["num_actions"].tolist(), num_players)
    sparse = "transitions" not in headers
    num_successors = _check_size(archive["num_successors"][()], "num_successors") if sparse else None
    units = None
    if "units" in headers:
        scale, offset = archive["units"].tolist()
        units = _check_units({"scale": scale, "offset": offset})
    if "format_version" in headers:
        _check_format_version(archive["format_version"][()])
    reward_shape, transition_shape = _shapes(num_players, num_states, num_actions, num_successors)
    _check_budget(reward_shape, transition_shape, max_entries, sparse)
    expected = [("rewards", reward_shape, "(N, S, A_0, ..., A_(N-1))")]
    if sparse:
        expected += [(k, transition_shape, "(S, A_0, ..., A_(N-1), K)") for k in _SPARSE_KEYS[1:]]
    else:
        expected.append(("transitions", transition_shape, "(S, A_0, ..., A_(N-1), S)"))
    if "initial_distribution" in headers:
        expected.append(("initial_distribution", (num_states,), "(S,)"))
    for key, shape, axes in expected:
        if headers[key][0] != shape:
            raise GameValidationError(f"{key}: array shape {headers[key][0]} does not match the declared sizes {axes} = {shape}")
    initial: dict[str, Any] = {}
    if "initial_distribution" in headers:
        initial["initial_distribution"] = archive["initial_distribution"]
    else:
        initial["initial_state"] = _check_initial_state(archive["initial_state"][()])
    transitions = (
        SparseTransitions(archive["transition_successors"], archive["transition_probabilities"])
        if sparse
        else archive["transitions"]
    )
    return DiscountedMarkovGame(
        archive["rewards"],
        transitions,
        discount,
        name=name,
        description=description,
        max_entries=max_entries,
        units=units,
        **initial,
    )
