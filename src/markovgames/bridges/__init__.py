"""Bridges to the tools researchers already use: OpenSpiel, PettingZoo, Gambit/Nashpy normal-form games.

Every bridge is optional and is imported on its own; ``import markovgames`` imports none of them.

* `markovgames.bridges.normal_form` — build N-player normal-form games, lift them to
  one-step Markov games with a documented affine rescaling to ``[0, 1]``, read and write Gambit's
  ``.nfg`` files, product policies, and Nash equilibria via Nashpy (extra ``normalform``).
* `markovgames.bridges.openspiel` — export a [`MarkovGame`][markovgames.MarkovGame] as an OpenSpiel
  game, import small OpenSpiel simultaneous-move games, output policies as OpenSpiel correlation
  devices, and OpenSpiel's own CE/CCE distances (extra ``openspiel``).
* `markovgames.bridges.pettingzoo` — a Markov game as a PettingZoo ``ParallelEnv`` and a
  mediator that plays a correlated policy in it (extra ``pettingzoo``).
* `markovgames.bridges.mediator` — the mediator itself (NumPy only).

A bridge whose third-party package is missing raises `MissingOptionalDependency` (an
``ImportError``) naming the extra to install, e.g. ``pip install "markovgames[openspiel]"``.
"""

from ._deps import MissingOptionalDependency

__all__ = ["MissingOptionalDependency"]
