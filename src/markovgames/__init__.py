"""markovgames: no-regret learning dynamics and (coarse) correlated equilibria in Markov games."""

from .games import GameValidationError, MarkovGame

__version__ = "0.1.0"

__all__ = ["MarkovGame", "GameValidationError", "__version__"]
