"""What every game file shares: the bounded reading, the field checks and the messages.

The bottom layer of the game files, under the two formats (`_finite`: finite-horizon games,
`_discounted`: discounted games) and the entry points that dispatch on the kind (`_read`,
`_write`). It holds the format version, the suffixes, the size limits
(`check_game_file_size`, applied before a byte is read), `GameFileError`, the checks of the fields both formats
have (sizes, text, ``num_actions``, ``units``, nested arrays), JSON read within a byte and a depth
bound and with no duplicate key, and the ``.npz`` archive's member headers, read and checked before
any array is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..._files import MAX_JSON_DEPTH, json_depth, read_limited
from ..._npz import ArchiveError, NpzArchive
from ..._text import long_integer_in
from .._model import GameValidationError
from .._units import AffineRescaling

__all__ = ["GameFileError", "FORMAT_VERSION", "DEFAULT_MAX_FILE_BYTES", "GAME_FILE_SUFFIXES", "check_game_file_size"]

#: The format version this module writes and the only one it reads.
FORMAT_VERSION = 1

#: Default refusal limit on a JSON game file's size in bytes (256 MiB; parsing JSON takes many
#: times the file's size in memory); callers may raise it. A ``.npz`` file has no default byte
#: limit: its arrays' declared shapes are checked against ``max_entries`` before any is read.
DEFAULT_MAX_FILE_BYTES = 256 * 2**20

#: File suffixes understood by [`load_game`][markovgames.games.load_game] and [`save_game`][markovgames.games.save_game] (case-insensitive).
GAME_FILE_SUFFIXES = (".json", ".npz")

#: The sparse form's keys, which replace ``transitions``.
_SPARSE_KEYS = ("num_successors", "transition_successors", "transition_probabilities")
_OPTIONAL_KEYS = ("description", "format_version", "units")

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
_NUMPY_INDEX = re.compile(
    r"^(rewards|transitions|transition_successors|transition_probabilities|initial_distribution)\[(\d+(?:, \d+)*)\]"
)


# numpy >= 2 reprs scalars as ``np.float64(1.5)``; a file's reader wants the number as written.
_NUMPY_SCALAR = re.compile(r"np\.float64\(([^()]*)\)")


def _file_message(path: Path, err: Exception) -> str:
    message = _NUMPY_INDEX.sub(lambda m: m.group(1) + "".join(f"[{k}]" for k in m.group(2).split(", ")), str(err))
    message = _NUMPY_SCALAR.sub(lambda m: m.group(1), message)
    return f"{path}: {message}"


def _read_json(path: Path, fh, *, max_bytes: int | None) -> dict[str, Any]:
    """The JSON object in the open game file ``fh``: at most ``max_bytes`` bytes (None:
    `DEFAULT_MAX_FILE_BYTES`), UTF-8, nested at most ``MAX_JSON_DEPTH`` levels, no key given twice."""
    if max_bytes is None:
        max_bytes = DEFAULT_MAX_FILE_BYTES
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
    return data


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


def _open_npz(fh) -> NpzArchive:
    """The ``.npz`` archive in the open file ``fh``, its zip directory checked
    (`NpzArchive`: no member inflates past the size its header declares)."""
    try:
        archive = NpzArchive(fh)
    except ArchiveError as err:
        message = str(err)
        if "is listed twice" in message:  # in a game file's words: a key given twice
            message = f"duplicate key {message.split(chr(39))[1].removesuffix('.npy')!r}"
        raise GameValidationError(message) from None
    return archive


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
