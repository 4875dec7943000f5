"""Reading Markov games (finite-horizon and discounted) from ``.json`` and ``.npz`` files.

The entry points that dispatch on the kind of game (a file with ``discount`` is a discounted
game), over the two formats (`_finite`, `_discounted`) and the primitives they share (`_base`):
the file opened (a regular file only) and its size checked before a byte is read, its syntax
checked, and then the format of its kind checks the rest. Every failure raises `GameFileError`,
whose message starts with the file path.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO

from ..._files import open_regular, read_hashed
from ..._npz import ArchiveError
from .._discounted import DiscountedMarkovGame
from .._model import MAX_GAME_ENTRIES, GameValidationError, MarkovGame
from ._base import (
    GameDigestError,
    GameFileError,
    _check_npz_header,
    _file_message,
    _open_npz,
    _read_json,
    _read_npz_headers,
    _suffix,
    check_game_file_size,
)
from ._discounted import discounted_game_from_dict, load_discounted_npz
from ._finite import _DISCOUNTED_HERE, game_from_dict, load_finite_npz

__all__ = ["load_game", "load_any_game"]


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
    game = _load(path, max_bytes=max_bytes, max_entries=max_entries, any_kind=False, sha256=sha256)
    if not isinstance(game, MarkovGame):  # unreachable: _load refuses a discounted game first
        raise AssertionError("load_game read a discounted game")
    return game


def load_any_game(
    path: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    sha256: str | None = None,
) -> MarkovGame | DiscountedMarkovGame:
    """Read a finite-horizon or a discounted game (a file with ``discount``) from a ``.json`` or ``.npz`` file.

    As [`load_game`][markovgames.games.load_game] (``sha256`` too), which refuses a discounted game;
    the checks of a discounted file are those of a finite-horizon one on the stationary shapes
    ([Game files](../howto-games.md)).
    """
    return _load(path, max_bytes=max_bytes, max_entries=max_entries, any_kind=True, sha256=sha256)


def _load(
    path, *, max_bytes: int | None, max_entries: int, any_kind: bool, sha256: str | None = None
) -> MarkovGame | DiscountedMarkovGame:
    path = Path(path)
    suffix = _suffix(path)
    try:
        # Regular files only: a FIFO would block and a device (/dev/zero) never ends.
        fh = open_regular(path)
    except OSError as err:
        raise GameFileError(f"{path}: cannot read: {err.strerror or err}") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        check_game_file_size(path, size, max_bytes=max_bytes, max_entries=max_entries)
        source: BinaryIO = fh
        if sha256 is not None:  # one read: the bytes hashed are the bytes parsed
            try:
                data, digest = read_hashed(fh, size)
            except OSError as err:
                raise GameFileError(f"{path}: cannot read: {err.strerror or err}") from None
            if digest != sha256:
                raise GameDigestError(f"{path}: its SHA-256 differs from the one recorded: the file was changed or damaged")
            source = io.BytesIO(data)
        try:
            if suffix == ".json":
                return _load_json(path, source, max_bytes=max_bytes, max_entries=max_entries, any_kind=any_kind)
            return _load_npz(path, source, max_entries=max_entries, any_kind=any_kind)
        except GameFileError:
            raise
        except GameValidationError as err:
            raise GameFileError(_file_message(path, err)) from None


def _load_json(path: Path, fh, *, max_bytes: int | None, max_entries: int, any_kind: bool) -> MarkovGame | DiscountedMarkovGame:
    data = _read_json(path, fh, max_bytes=max_bytes)
    if any_kind and "discount" in data:
        return discounted_game_from_dict(data, max_entries=max_entries)
    return game_from_dict(data, max_entries=max_entries)


def _load_npz(path: Path, fh, *, max_entries: int, any_kind: bool) -> MarkovGame | DiscountedMarkovGame:
    """The game in the open ``.npz`` file ``fh``: its zip directory and members' headers checked,
    then its declared sizes against ``max_entries`` and against the headers' shapes, and only then
    its arrays read (`NpzArchive`: no member inflates past the size its header declares)."""
    archive = _open_npz(fh)
    with archive:
        headers = _read_npz_headers(archive)
        if "discount" in headers and not any_kind:
            raise GameValidationError(_DISCOUNTED_HERE)
        try:
            if "discount" in headers:
                for key, (shape, dtype) in headers.items():
                    _check_npz_header(key, shape, dtype)
                return load_discounted_npz(archive, headers, max_entries=max_entries)
            return load_finite_npz(archive, headers, max_entries=max_entries)
        except (ArchiveError, OSError) as err:
            raise GameValidationError(f"cannot read array data: {err}") from None
