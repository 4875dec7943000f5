"""Reading and writing Markov games as ``.json`` or ``.npz`` files.

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

Writes are atomic: the file is written to a temporary file in the target's directory and
moved into place with `os.replace`, so a reader never sees a half-written game. The JSON
round trip is exact: Python writes each float with the shortest ``repr`` that reads back to
the same float64.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from .._atomic import atomic_write
from .._files import MAX_JSON_DEPTH, json_depth, open_regular, read_hashed, read_limited
from .._npz import ArchiveError, NpzArchive
from .._suggest import did_you_mean
from .._text import long_integer_in
from ._model import MAX_GAME_ENTRIES, GameValidationError, MarkovGame, SparseTransitions
from ._units import AffineRescaling

__all__ = [
    "GameFileError",
    "FORMAT_VERSION",
    "DEFAULT_MAX_FILE_BYTES",
    "GAME_FILE_SUFFIXES",
    "load_game",
    "check_game_file_size",
    "save_game",
    "game_to_dict",
    "game_from_dict",
]

#: The format version this module writes and the only one it reads.
FORMAT_VERSION = 1

#: Default refusal limit on a JSON game file's size in bytes (256 MiB; parsing JSON takes many
#: times the file's size in memory); callers may raise it. A ``.npz`` file has no default byte
#: limit: its arrays' declared shapes are checked against ``max_entries`` before any is read.
DEFAULT_MAX_FILE_BYTES = 256 * 2**20

#: File suffixes understood by [`load_game`][markovgames.games.load_game] and [`save_game`][markovgames.games.save_game] (case-insensitive).
GAME_FILE_SUFFIXES = (".json", ".npz")

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
#: The sparse form's keys, which replace ``transitions``.
_SPARSE_KEYS = ("num_successors", "transition_successors", "transition_probabilities")
_OPTIONAL_KEYS = ("description", "format_version", "units")
_ALLOWED_KEYS = frozenset(_REQUIRED_KEYS + _SPARSE_KEYS + _OPTIONAL_KEYS)

# rewards and transitions have N + 3 axes. numpy 1.x allows 32 axes (numpy 2.x allows 64);
# staying within the smaller bound keeps files portable and the nesting walk shallow.
_MAX_PLAYERS = 29

# name/description in an .npz are fixed-width unicode arrays whose width is read from the
# header; bound it so a crafted header cannot ask for gigabytes for one string.
_MAX_NPZ_TEXT_CHARS = 1 << 20


class GameFileError(GameValidationError):
    """A game file cannot be read or written. The message starts with the file path."""


class GameDigestError(GameFileError):
    """A game file's bytes do not have the SHA-256 its reader was given (``load_game(sha256=...)``)."""


# ---------------------------------------------------------------------------------------
# dict <-> game
# ---------------------------------------------------------------------------------------
def game_to_dict(game: MarkovGame) -> dict[str, Any]:
    """Return the JSON-ready dictionary of ``game`` (plain Python ints, floats, str, lists).

    Parameters
    ----------
    game : MarkovGame

    Returns
    -------
    dict
        The keys listed in the module docstring, ``format_version`` first.
    """
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


def _check_units(value: Any) -> AffineRescaling | None:
    """The ``units`` field: ``{"scale": c, "offset": d}`` with finite numbers, ``c > 0`` (absent: None)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"scale", "offset"}:
        shown = sorted(map(str, value)) if isinstance(value, Mapping) else _type_name(value)
        raise GameValidationError(f'units: expected {{"scale": c, "offset": d}}, got {shown}')
    for key in ("scale", "offset"):
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, (int, float, np.integer, np.floating)):
            raise GameValidationError(f"units.{key}: expected a number, got {_type_name(number)}")
    try:  # finite, scale > 0, both within UNITS_BOUND (an integer beyond any float too)
        return AffineRescaling(value["scale"], value["offset"])
    except ValueError as err:
        raise GameValidationError(f"units.{err}") from None


def _short(number: int) -> str:
    """An integer as written, or for one of more than 30 digits its leading digits and length."""
    text = str(int(number))
    return text if len(text) <= 30 else f"{text[:3]}... ({len(text)} digits)"


def _shown(value: Any) -> str:
    """``value`` as JSON writes it (``true``, not ``True``), at most 40 characters."""
    try:
        text = json.dumps(value.item() if isinstance(value, np.generic) else value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, str):
        shown = value if len(value) <= 20 else value[:17] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} entries"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (int, float)):
        return f"a number ({_shown(value)})"
    return type(value).__name__


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
        raise GameValidationError(f"missing key(s): {', '.join(repr(k) for k in missing)}")
    unknown = sorted(str(k) for k in keys - _ALLOWED_KEYS)
    if unknown:
        allowed = ", ".join(_REQUIRED_KEYS + _OPTIONAL_KEYS) + "; or, sparse, " + ", ".join(_SPARSE_KEYS) + " for transitions"
        shown = ", ".join(repr(k) + did_you_mean(k, sorted(_ALLOWED_KEYS - keys)) for k in unknown)
        raise GameValidationError(f"unknown key(s): {shown} (allowed: {allowed})")


def _is_int(value: Any) -> bool:
    # bool is a subclass of int; a size of `true` is a typo, not 1.
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_format_version(value: Any) -> None:
    if not _is_int(value) or int(value) != FORMAT_VERSION:
        raise GameValidationError(
            f"format_version = {_shown(value)} is not supported (this reader understands version {FORMAT_VERSION})"
        )


def _check_text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise GameValidationError(f"{key}: expected a string, got {_type_name(value)}")
    return value


def _check_size(value: Any, key: str) -> int:
    if not _is_int(value):
        raise GameValidationError(f"{key}: expected a positive integer, got {_type_name(value)}")
    if int(value) < 1:
        raise GameValidationError(f"{key} = {int(value)} must be at least 1")
    return int(value)


def _check_player_count(num_players: int) -> None:
    if num_players > _MAX_PLAYERS:
        raise GameValidationError(
            f"num_players = {num_players} exceeds the supported maximum of {_MAX_PLAYERS} "
            f"(rewards would need {num_players + 3} array axes)"
        )


def _check_num_actions(value: Any, num_players: int) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)):
        raise GameValidationError(f"num_actions: expected a list of {num_players} positive integers, got {_type_name(value)}")
    if len(value) != num_players:
        raise GameValidationError(f"num_actions: expected {num_players} entries (num_players), got {len(value)}")
    return tuple(_check_size(a, f"num_actions[{i}]") for i, a in enumerate(value))


def _check_initial_state(value: Any) -> int:
    if not _is_int(value):
        raise GameValidationError(f"initial_state: expected an integer, got {_type_name(value)}")
    # The range 0..S-1 is checked by MarkovGame.
    return int(value)


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


def _check_nested(value: Any, key: str, shape: tuple[int, ...], axis_names: list[str], integers: bool = False) -> None:
    """Check that ``value`` is a rectangular nested list of numbers (``integers``: ints) of exactly ``shape``."""
    last = len(shape) - 1

    def walk(node: Any, depth: int, index: tuple[int, ...]) -> None:
        where = key + "".join(f"[{k}]" for k in index)
        expected = shape[depth]
        if not isinstance(node, list):
            raise GameValidationError(
                f"{where}: expected a list of {expected} entries ({axis_names[depth]}), got {_type_name(node)}"
                + (" (nesting too shallow)" if isinstance(node, (int, float)) and not isinstance(node, bool) else "")
            )
        if len(node) != expected:
            raise GameValidationError(f"{where}: expected {expected} entries ({axis_names[depth]}), got {len(node)}")
        if depth < last:
            for k, child in enumerate(node):
                walk(child, depth + 1, index + (k,))
            return
        for k, entry in enumerate(node):
            # Exact type tests: they exclude bool (a subclass of int) and run fast on long rows.
            kind = type(entry)
            if kind is float and not integers:
                continue
            if kind is int:
                if integers and not 0 <= entry < 2**62:
                    # A state index; far beyond any real S, and it must fit an int64 array.
                    raise GameValidationError(f"{where}[{k}] = {entry} is out of range (a state index)")
                try:
                    float(entry)
                except OverflowError:
                    raise GameValidationError(f"{where}[{k}] = {entry} is too large for a float64") from None
                continue
            extra = " (nesting too deep)" if isinstance(entry, list) else ""
            wanted = "an integer state" if integers else "a number"
            raise GameValidationError(f"{where}[{k}]: expected {wanted}, got {_type_name(entry)}{extra}")

    walk(value, 0, ())


# ---------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------
def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in GAME_FILE_SUFFIXES:
        shown = repr(path.suffix) if path.suffix else "no suffix"
        raise GameFileError(f"{path}: unknown game file type ({shown}); expected one of {', '.join(GAME_FILE_SUFFIXES)}")
    return suffix


def load_game(
    path: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    sha256: str | None = None,
) -> MarkovGame:
    """Read a game from a ``.json`` or ``.npz`` file (chosen by the suffix, case-insensitive).

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int, optional
        Refuse files larger than this many bytes. By default a JSON file is refused above
        `DEFAULT_MAX_FILE_BYTES` (256 MiB) and a ``.npz`` file is bounded by ``max_entries``
        alone (the large games of ``docs/howto-large-games.md`` are ``.npz`` files of several
        hundred MiB).
    max_entries : int
        Refuse a game whose ``rewards`` or ``transitions`` would have more entries than this;
        checked on the declared sizes, before any array is allocated.
    sha256 : str, optional
        The file's recorded SHA-256 (a run directory's): the file is then read once, after its
        size is checked, its bytes hashed and, only if they match, parsed: the game is made of
        exactly the bytes that were checked (`GameDigestError` otherwise).

    Returns
    -------
    MarkovGame

    Raises
    ------
    GameFileError
        The message starts with ``path`` and names the key and index at fault.
    """
    path = Path(path)
    suffix = _suffix(path)
    try:
        # Regular files only: a FIFO would block and a device (/dev/zero) never ends.
        fh = open_regular(path)
    except OSError as err:
        raise GameFileError(f"{path}: cannot read: {err.strerror or err}") from None
    with fh:
        check_game_file_size(path, os.fstat(fh.fileno()).st_size, max_bytes=max_bytes, max_entries=max_entries)
        json_limit = max_bytes if max_bytes is not None else DEFAULT_MAX_FILE_BYTES
        source: BinaryIO = fh
        if sha256 is not None:
            try:
                data, digest = read_hashed(fh, os.fstat(fh.fileno()).st_size)
            except OSError as err:
                raise GameFileError(f"{path}: cannot read: {err.strerror or err}") from None
            if digest != sha256:
                raise GameDigestError(f"{path}: its SHA-256 differs from the one recorded: the file was changed or damaged")
            source = io.BytesIO(data)
        try:
            if suffix == ".json":
                return _load_json(path, source, max_bytes=json_limit, max_entries=max_entries)
            return _load_npz(path, source, max_entries=max_entries)
        except GameFileError:
            raise
        except GameValidationError as err:
            raise GameFileError(_file_message(path, err)) from None


#: The most bytes an entry of an ``.npz`` game's arrays can take (a 16-byte float, the largest the
#: reader accepts), for the file size that ``max_entries`` allows.
_MAX_ENTRY_BYTES = 16


def check_game_file_size(path: Path, size: int, *, max_bytes: int | None, max_entries: int) -> None:
    """Refuse a game file of ``size`` bytes before a byte of it is read (or hashed).

    ``max_bytes`` bounds every game file; without it a JSON file is bounded by
    `DEFAULT_MAX_FILE_BYTES` and an ``.npz`` file by what ``max_entries`` allows: three arrays
    (rewards, and the transitions or the sparse form's two arrays) of at most ``max_entries``
    entries of at most 16 bytes, and 1 MiB for the small arrays and the archive's own bytes.
    """
    suffix = _suffix(path)
    if max_bytes is not None or suffix == ".json":
        limit = max_bytes if max_bytes is not None else DEFAULT_MAX_FILE_BYTES
        if size > limit:
            raise GameFileError(f"{path}: file is {size} bytes, more than the limit of {limit} bytes (raise max_bytes to allow)")
        return
    limit = 3 * _MAX_ENTRY_BYTES * max_entries + (1 << 20)
    if size > limit:
        raise GameFileError(
            f"{path}: file is {size} bytes, more than the {limit} bytes an .npz game of at most "
            f"max_entries = {max_entries} entries per array can take (raise max_entries to allow)"
        )


# MarkovGame names an entry numpy-style, ``rewards[0, 1, 0, 1, 0]``; in a file the entry sits at
# the nested-list path ``rewards[0][1][0][1][0]``, the notation of every other file error.
_NUMPY_INDEX = re.compile(r"^(rewards|transitions|transition_successors|transition_probabilities)\[(\d+(?:, \d+)*)\]")


# numpy >= 2 reprs scalars as ``np.float64(1.5)``; a file's reader wants the number as written.
_NUMPY_SCALAR = re.compile(r"np\.float64\(([^()]*)\)")


def _file_message(path: Path, err: Exception) -> str:
    message = _NUMPY_INDEX.sub(lambda m: m.group(1) + "".join(f"[{k}]" for k in m.group(2).split(", ")), str(err))
    message = _NUMPY_SCALAR.sub(lambda m: m.group(1), message)
    return f"{path}: {message}"


def _load_json(path: Path, fh, *, max_bytes: int, max_entries: int) -> MarkovGame:
    try:
        # The size check can be stale (the file may grow), hence the bound.
        raw = read_limited(fh, max_bytes)
    except OSError as err:
        raise GameFileError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(raw) > max_bytes:
        raise GameFileError(f"{path}: file is more than the limit of {max_bytes} bytes (raise max_bytes to allow)")
    try:
        # utf-8-sig: accept (and drop) a byte-order mark some editors write.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise GameFileError(f"{path}: not UTF-8 text (invalid byte 0x{raw[err.start]:02x} at offset {err.start})") from None
    if not text.strip():
        raise GameFileError(f"{path}: not valid JSON: the file is empty")
    # Bounded before parsing, as every JSON file markovgames reads: a game nests one level per
    # player and index (at most 33), a value nested thousands deep is not a game.
    if json_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise GameFileError(f"{path}: not a game file: JSON nesting too deep (more than {MAX_JSON_DEPTH} levels)")
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as err:
        # An unterminated string always runs into the end of the file (a newline inside a string
        # is an "invalid control character" error instead), so it is a truncation too.
        ends_early = err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")
        hint = " (the file ends early: truncated?)" if ends_early else ""
        # Some of json's messages already end in "at" ("Unterminated string starting at").
        at = " " if err.msg.endswith(" at") else " at "
        raise GameFileError(f"{path}: not valid JSON{hint}: {err.msg}{at}line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise GameFileError(f"{path}: not a game file: JSON nesting too deep to parse") from None
    except GameValidationError as err:
        raise GameFileError(_file_message(path, err)) from None
    except ValueError as err:  # an integer of more digits than Python converts
        raise GameFileError(f"{path}: {long_integer_in(text) or str(err).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise GameFileError(f"{path}: top level: expected a JSON object, got {_type_name(data)}")
    return game_from_dict(data, max_entries=max_entries)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json keeps the last of duplicate keys silently; in a game file that hides an edit mistake.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise GameValidationError(f"duplicate key {key!r}")
        out[key] = value
    return out


# ----------------------------------------------------------------------------------- npz
_NPZ_SCALAR_INT_KEYS = ("num_players", "horizon", "num_states", "initial_state", "format_version", "num_successors")
_NPZ_TEXT_KEYS = ("name", "description")


def _read_npz_headers(archive: NpzArchive) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Return ``{key: (shape, dtype)}`` from the ``.npy`` headers of the archive, reading no array data."""
    headers: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for key in archive.keys:
        try:
            # Its length checked before the header is read: a damaged length field
            # would make numpy read (and allocate) up to 4 GiB.
            shape, _, dtype = archive.header(key)
        except ArchiveError as err:
            raise GameValidationError(f"{key}: not a valid .npy array header ({str(err).removeprefix(key + ': ')})") from None
        headers[key] = (shape, dtype)
    return headers


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


def _load_npz(path: Path, fh, *, max_entries: int) -> MarkovGame:
    """The game in the open ``.npz`` file ``fh``: its zip directory and members' headers checked,
    then its declared sizes against ``max_entries`` and against the headers' shapes, and only then
    its arrays read (`NpzArchive`: no member inflates past the size its header declares)."""
    try:
        archive = NpzArchive(fh)
    except ArchiveError as err:
        message = str(err)
        if "is listed twice" in message:  # in a game file's words: a key given twice
            message = f"duplicate key {message.split(chr(39))[1].removesuffix('.npy')!r}"
        raise GameValidationError(message) from None
    with archive:
        headers = _read_npz_headers(archive)
        _check_keys(set(headers))

        # dtypes and shapes from the headers, before loading anything.
        for key, (shape, dtype) in headers.items():
            _check_npz_header(key, shape, dtype)

        try:
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
        except GameValidationError:
            raise
        except (ArchiveError, OSError) as err:
            raise GameValidationError(f"cannot read array data: {err}") from None

    return MarkovGame(
        rewards=rewards,
        transitions=transitions,
        initial_state=declared.initial_state,
        name=declared.name,
        description=declared.description,
        max_entries=max_entries,
        units=declared.units,
    )


def _check_npz_header(key: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Refuse an archive member whose ``.npy`` header gives a dtype or shape that ``key`` cannot have."""
    if dtype.hasobject:
        raise GameValidationError(f"{key}: object arrays are not allowed (dtype {dtype}; game files are never unpickled)")
    if key in _NPZ_SCALAR_INT_KEYS:
        if dtype.kind not in "iu" or shape != ():
            raise GameValidationError(f"{key}: expected a 0-d integer array, got dtype {dtype} with shape {shape}")
    elif key in _NPZ_TEXT_KEYS:
        if dtype.kind != "U" or shape != ():
            raise GameValidationError(f"{key}: expected a 0-d unicode string array, got dtype {dtype} with shape {shape}")
        if dtype.itemsize // 4 > _MAX_NPZ_TEXT_CHARS:
            raise GameValidationError(
                f"{key}: string of {dtype.itemsize // 4} characters exceeds the limit of {_MAX_NPZ_TEXT_CHARS}"
            )
    elif key == "num_actions":
        if dtype.kind not in "iu" or len(shape) != 1:
            raise GameValidationError(f"num_actions: expected a 1-d integer array, got dtype {dtype} with shape {shape}")
        if shape[0] > _MAX_PLAYERS:
            raise GameValidationError(f"num_actions: {shape[0]} entries exceed the supported maximum of {_MAX_PLAYERS} players")
    elif key == "units":
        if dtype.kind != "f" or shape != (2,):
            raise GameValidationError(
                f"units: expected a float array [scale, offset] of shape (2,), got dtype {dtype} with shape {shape}"
            )
    elif key == "transition_successors":
        if dtype.kind not in "iu":
            raise GameValidationError(f"{key}: expected an integer array, got dtype {dtype}")
    else:  # rewards, transitions, transition_probabilities
        if dtype.kind not in "fiu":
            raise GameValidationError(f"{key}: expected a float array, got dtype {dtype}")


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


# --------------------------------------------------------------------------------- write
def save_game(game: MarkovGame, path: str | os.PathLike[str], *, replace: bool = True) -> Path:
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
    if not isinstance(game, MarkovGame):
        raise TypeError(f"save_game: expected a MarkovGame, got {type(game).__name__}")
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
