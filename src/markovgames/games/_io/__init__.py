"""Game files: Markov games (finite-horizon and discounted) read from and written to ``.json`` and ``.npz``.

Three layers under this facade, each importing only those below it:

* `_base`: what every game file shares (the format version, the suffixes, the size limits,
  `GameFileError`, JSON read within bounds, the ``.npz`` members' headers, the field checks);
* `_finite` and `_discounted`: the finite-horizon format and the discounted one, on `_base`;
* `_read` and `_write`: the entry points, which dispatch on the kind of game, on both formats.
"""

from ._base import (
    DEFAULT_MAX_FILE_BYTES,
    FORMAT_VERSION,
    GAME_FILE_SUFFIXES,
    GameDigestError,
    GameFileError,
    check_game_file_size,
)
from ._finite import game_from_dict
from ._read import load_any_game, load_game
from ._write import game_to_dict, save_game

__all__ = [
    "GameFileError",
    "GameDigestError",
    "FORMAT_VERSION",
    "DEFAULT_MAX_FILE_BYTES",
    "GAME_FILE_SUFFIXES",
    "load_game",
    "load_any_game",
    "check_game_file_size",
    "save_game",
    "game_to_dict",
    "game_from_dict",
]
