"""Markov games: the model, its files, and built-in games."""

from ._model import MAX_GAME_ENTRIES, PROBABILITY_TOLERANCE, GameValidationError, MarkovGame

__all__ = ["MarkovGame", "GameValidationError", "PROBABILITY_TOLERANCE", "MAX_GAME_ENTRIES"]
