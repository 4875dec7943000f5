"""The bridges are optional: `import markovgames` imports none of them, and a missing package names its extra."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import markovgames as mg
from conftest import fresh_python
from markovgames.bridges import MissingOptionalDependency


def test_importing_the_library_imports_no_bridge():
    code = (
        "import sys\n"
        "import markovgames, markovgames.games, markovgames.dynamics, markovgames.policies\n"
        "import markovgames.evaluation, markovgames.solvers\n"
        "bad = [m for m in ('markovgames.bridges', 'pyspiel', 'open_spiel', 'pettingzoo', 'gymnasium', 'nashpy')\n"
        "       if m in sys.modules]\n"
        "print(bad)\n"
        "assert not bad, bad\n"
    )
    fresh_python(code)


def test_the_numpy_layers_import_without_jax():
    """Policies (with their index kernels), evaluation and the LP solver are NumPy and SciPy only:
    a user who evaluates saved policies does not load JAX."""
    code = (
        "import sys\n"
        "import markovgames, markovgames.games, markovgames.policies, markovgames.evaluation, markovgames.solvers\n"
        "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))\n"
        "assert 'jax' not in sys.modules\n"
    )
    fresh_python(code)


def test_normal_form_bridge_needs_no_optional_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "nashpy", None)
    from markovgames.bridges import normal_form

    lifted = normal_form.lift([[[3, 0], [5, 1]], [[3, 5], [0, 1]]])
    assert lifted.game.num_actions == (2, 2)
    with pytest.raises(MissingOptionalDependency, match=r'pip install "markovgames\[normalform\]"'):
        normal_form.nash_equilibria(lifted)


def test_openspiel_bridge_imports_pyspiel_lazily(monkeypatch):
    # Importing the module does not import pyspiel (checked in a fresh interpreter).
    code = (
        "import sys; sys.modules['pyspiel'] = None\n"
        "import markovgames.bridges.openspiel as osb\n"
        "assert 'open_spiel' not in sys.modules\n"
    )
    fresh_python(code)
    # Using it without OpenSpiel raises an ImportError that names the extra.
    from markovgames.bridges import openspiel as osb

    monkeypatch.setitem(sys.modules, "pyspiel", None)  # as if OpenSpiel were not installed
    with pytest.raises(MissingOptionalDependency, match=r'pip install "markovgames\[openspiel\]"') as err:
        osb.export_game(mg.games.chicken())
    assert isinstance(err.value, ImportError) and "open-spiel" in str(err.value)


def test_pettingzoo_bridge_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    monkeypatch.delitem(sys.modules, "markovgames.bridges.pettingzoo", raising=False)
    with pytest.raises(MissingOptionalDependency, match=r'pip install "markovgames\[pettingzoo\]"'):
        importlib.import_module("markovgames.bridges.pettingzoo")
    # The mediator itself needs NumPy only.
    from markovgames.bridges.mediator import Mediator
    from markovgames.policies import MarkovCorrelatedPolicy

    med = Mediator(MarkovCorrelatedPolicy(np.full((1, 1, 2, 2), 0.25), 2), seed=0)
    med.reset()
    assert set(med.recommend((0, 0))) == {"player_0", "player_1"}
