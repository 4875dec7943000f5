"""markovgames: no-regret learning dynamics and (coarse) correlated equilibria in Markov games."""

from importlib.metadata import PackageNotFoundError, version

from ._errors import MarkovGamesError
from .games import GameValidationError, MarkovGame

try:
    __version__ = version("markovgames")  # the one place it is written: pyproject.toml
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["MarkovGame", "GameValidationError", "MarkovGamesError", "load_results", "__version__"]


def __getattr__(name: str):
    # markovgames.load_results without importing the experiments (JAX, pyarrow, pandas) at
    # `import markovgames`: the function is markovgames.experiments.load_results.
    if name == "load_results":
        from .experiments import load_results

        return load_results
    raise AttributeError(f"module 'markovgames' has no attribute {name!r}")
