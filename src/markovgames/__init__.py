"""markovgames: no-regret learning dynamics and (coarse) correlated equilibria in Markov games.

``import markovgames`` loads neither NumPy nor JAX: the names below are imported from their
modules on first use (``markovgames.MarkovGame``, ``from markovgames import MarkovGame``), so that
``markovgames --version`` and ``--help`` start at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import MarkovGamesError

__all__ = ["MarkovGame", "GameValidationError", "MarkovGamesError", "load_results", "__version__"]

if TYPE_CHECKING:
    from .experiments import load_results
    from .games import GameValidationError, MarkovGame

    #: The installed distribution's version (written in one place: pyproject.toml).
    __version__: str

#: Each name imported on first use -> its module. load_results is markovgames.experiments'
#: (JAX, pyarrow, pandas); the games' names need NumPy. __version__ is read on first use too.
_LAZY = {"MarkovGame": ".games", "GameValidationError": ".games", "load_results": ".experiments"}


def __getattr__(name: str):
    if name == "__version__":
        from ._version import installed_version

        globals()[name] = value = installed_version()
        return value
    if name in _LAZY:
        import importlib

        globals()[name] = value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        return value  # later lookups find it in globals(), without this function
    raise AttributeError(f"module 'markovgames' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
