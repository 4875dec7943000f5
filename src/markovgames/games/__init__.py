"""Markov games: the model, its files, and built-in games."""

from ._builtin import (
    BUILTIN_GAMES,
    REWARD_DISTRIBUTIONS,
    UnknownGameError,
    battle_of_the_sexes,
    chicken,
    get_builtin,
    matching_pennies,
    normal_form_game,
    paper_game,
    prisoners_dilemma,
    random_game,
    repeated_game,
    repeated_prisoners_dilemma,
    resolve_game,
    shapley,
)
from ._io import (
    DEFAULT_MAX_FILE_BYTES,
    FORMAT_VERSION,
    GAME_FILE_SUFFIXES,
    GameFileError,
    game_from_dict,
    game_to_dict,
    load_game,
    save_game,
)
from ._model import (
    MAX_GAME_ENTRIES,
    PROBABILITY_TOLERANCE,
    GameValidationError,
    MarkovGame,
    SparseTransitions,
)
from ._units import UNITS_BOUND, AffineRescaling

__all__ = [
    "MarkovGame",
    "AffineRescaling",
    "UNITS_BOUND",
    "SparseTransitions",
    "GameValidationError",
    "PROBABILITY_TOLERANCE",
    "MAX_GAME_ENTRIES",
    # files
    "GameFileError",
    "FORMAT_VERSION",
    "DEFAULT_MAX_FILE_BYTES",
    "GAME_FILE_SUFFIXES",
    "load_game",
    "save_game",
    "game_to_dict",
    "game_from_dict",
    # built-in games
    "paper_game",
    "normal_form_game",
    "prisoners_dilemma",
    "matching_pennies",
    "battle_of_the_sexes",
    "chicken",
    "shapley",
    "repeated_game",
    "repeated_prisoners_dilemma",
    "random_game",
    "REWARD_DISTRIBUTIONS",
    "BUILTIN_GAMES",
    "UnknownGameError",
    "get_builtin",
    "resolve_game",
]
