"""Markov games: the model (finite-horizon and discounted), its files, and built-in games."""

# Layers, each importing only those below it: the models (_units, _model, _discounted); the
# game files (_io/); the built-in games (_builtin, _discounted_builtin); resolving a name or a
# path to a game (_resolve).

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
    shapley,
)
from ._discounted import DiscountedMarkovGame, FiniteHorizonOnlyError, check_discount, require_finite_horizon
from ._discounted_builtin import (
    DISCOUNTED_GAMES,
    discounted_normal_form_game,
    get_discounted_builtin,
    random_discounted_game,
)
from ._io import (
    DEFAULT_MAX_FILE_BYTES,
    FORMAT_VERSION,
    GAME_FILE_SUFFIXES,
    GameFileError,
    game_from_dict,
    game_to_dict,
    load_any_game,
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
from ._resolve import resolve_any_game, resolve_game
from ._units import UNITS_BOUND, AffineRescaling

__all__ = [
    "MarkovGame",
    "DiscountedMarkovGame",
    "FiniteHorizonOnlyError",
    "check_discount",
    "require_finite_horizon",
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
    "load_any_game",
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
    # discounted games
    "discounted_normal_form_game",
    "random_discounted_game",
    "DISCOUNTED_GAMES",
    "get_discounted_builtin",
    "resolve_any_game",
]
