"""A game named on the command line or in a configuration: a built-in game's name, or a game file's path.

The top of `markovgames.games`: over the built-in games of both kinds (`_builtin`,
`_discounted_builtin`) and the game files (`_io`).
"""

from __future__ import annotations

from pathlib import Path

from .._suggest import did_you_mean, did_you_mean_path
from ._builtin import BUILTIN_GAMES, UnknownGameError, get_builtin
from ._discounted import DiscountedMarkovGame, FiniteHorizonOnlyError
from ._discounted_builtin import DISCOUNTED_GAMES, get_discounted_builtin
from ._io import GAME_FILE_SUFFIXES, load_any_game, load_game
from ._model import MAX_GAME_ENTRIES, MarkovGame

__all__ = ["resolve_game", "resolve_any_game", "is_game_file"]


def is_game_file(path: Path) -> bool:
    """Whether ``path`` is a regular file named as a game file is (``.json``, ``.npz``)."""
    return path.suffix in GAME_FILE_SUFFIXES and path.is_file()


def _missing_game_hint(spec: str | Path, names) -> str:
    """`` (did you mean 'x'?)`` for a game that is neither a built-in name nor an existing file: a
    name (no separator, no suffix) is likelier a built-in game's (``papr``), and else the nearest
    existing game file (``my_gme.json``, ``games/my_game``: `markovgames._suggest.nearest_path`)."""
    text = str(spec)
    hint = did_you_mean(text, names) if Path(text).name == text and not Path(text).suffix else ""
    return hint or did_you_mean_path(text, is_game_file)


def resolve_game(
    spec: str | Path,
    *,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
) -> MarkovGame:
    """Return the built-in game named ``spec``, or else load the game file at path ``spec``
    (``max_bytes`` and ``max_entries`` as in [`load_game`][markovgames.games.load_game]).

    A built-in name wins over a file of the same name (write ``./NAME.json`` for the file).

    Raises
    ------
    UnknownGameError
        ``spec`` is neither a built-in name nor an existing file; the message lists the
        built-in names.
    GameFileError
        The file exists but cannot be read as a game.
    """
    if isinstance(spec, str) and spec in BUILTIN_GAMES:
        return get_builtin(spec)
    if isinstance(spec, str) and spec in DISCOUNTED_GAMES:
        raise FiniteHorizonOnlyError(
            f"{spec!r} is a built-in discounted game; a finite-horizon game (MarkovGame) is expected here"
        )
    path = Path(spec)
    if path.exists():
        return load_game(path, max_bytes=max_bytes, max_entries=max_entries)
    hint = _missing_game_hint(spec, BUILTIN_GAMES)
    raise UnknownGameError(
        f"{str(spec)!r}{hint} is neither a built-in game ({', '.join(sorted(BUILTIN_GAMES))}) "
        f"nor an existing game file ({' or '.join(GAME_FILE_SUFFIXES)})"
    )


def resolve_any_game(
    spec: str | Path,
    *,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
) -> MarkovGame | DiscountedMarkovGame:
    """A built-in game of either kind named ``spec``, or else the game file at path ``spec``
    ([`load_any_game`][markovgames.games.load_any_game]); as [`resolve_game`][markovgames.games.resolve_game] otherwise."""
    if isinstance(spec, str) and spec in BUILTIN_GAMES:
        return get_builtin(spec)
    if isinstance(spec, str) and spec in DISCOUNTED_GAMES:
        return get_discounted_builtin(spec)
    path = Path(spec)
    if path.exists():
        return load_any_game(path, max_bytes=max_bytes, max_entries=max_entries)
    names = sorted([*BUILTIN_GAMES, *DISCOUNTED_GAMES])
    hint = _missing_game_hint(spec, names)
    raise UnknownGameError(
        f"{str(spec)!r}{hint} is neither a built-in game ({', '.join(names)}) "
        f"nor an existing game file ({' or '.join(GAME_FILE_SUFFIXES)})"
    )
