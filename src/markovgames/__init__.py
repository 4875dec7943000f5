"""markovgames: no-regret learning dynamics and (coarse) correlated equilibria in Markov games."""

from .games import GameValidationError, MarkovGame

__version__ = "0.1.0"

__all__ = ["MarkovGame", "GameValidationError", "load_results", "__version__"]


def __getattr__(name: str):
    # markovgames.load_results without importing the experiments (JAX, pyarrow, pandas) at
    # `import markovgames`: the function is markovgames.experiments.load_results.
    if name == "load_results":
        from .experiments import load_results

        return load_results
    raise AttributeError(f"module 'markovgames' has no attribute {name!r}")
