"""Every exception class markovgames defines derives from MarkovGamesError (and keeps its built-in kind)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import markovgames
from markovgames import MarkovGamesError


def _modules():
    for info in pkgutil.walk_packages(markovgames.__path__, "markovgames."):
        if info.name.endswith("__main__"):  # importing it runs the command line
            continue
        yield importlib.import_module(info.name)


def _exception_classes():
    seen = {}
    for module in _modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            # Exception, not BaseException: the CLI's SIGTERM is a KeyboardInterrupt on purpose
            # (the clean-up paths of Ctrl-C run for it), not an error.
            if issubclass(obj, Exception) and obj.__module__.startswith("markovgames"):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return seen


def test_every_library_exception_has_the_one_base():
    classes = _exception_classes()
    # The library defines more than a dozen; a walk that found none would prove nothing.
    assert len(classes) >= 15, sorted(classes)
    stray = sorted(name for name, cls in classes.items() if not issubclass(cls, MarkovGamesError))
    assert not stray, f"exceptions not deriving from MarkovGamesError: {stray}"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("markovgames.GameValidationError", ValueError),
        ("markovgames.games.GameFileError", ValueError),
        ("markovgames.solvers.EquilibriumSolverError", RuntimeError),
    ],
)
def test_an_exception_keeps_its_builtin_kind(name, kind):
    module, _, attr = name.rpartition(".")
    cls = getattr(importlib.import_module(module), attr)
    assert issubclass(cls, MarkovGamesError) and issubclass(cls, kind)


def test_a_bad_game_is_caught_by_the_base_class():
    import numpy as np

    with pytest.raises(MarkovGamesError, match="rewards"):
        markovgames.MarkovGame(rewards=np.full((2, 1, 1, 1), 2.0), transitions=np.full((1, 1, 1, 1, 1), 1.0), initial_state=0)
