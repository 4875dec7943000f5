r"""OpenSpiel bridge: Markov games as OpenSpiel games and back, correlation devices, OpenSpiel's CE/CCE distances.

Needs OpenSpiel (``pip install "markovgames[openspiel]"``); ``pyspiel`` is imported on first use,
and a missing install raises `MissingOptionalDependency` naming the extra.

Export (`export_game`)
    A [`MarkovGame`][markovgames.MarkovGame] becomes a registered OpenSpiel *Python game* that OpenSpiel's
    own tools accept: ``SIMULTANEOUS`` dynamics, ``EXPLICIT_STOCHASTIC`` chance, ``GENERAL_SUM``
    utility, ``REWARDS`` reward model, perfect information (every player observes the state and the
    past joint actions). An episode alternates ``H`` simultaneous-move nodes with ``H`` explicit chance
    nodes: at step ``h`` in state ``s`` the joint action ``a`` pays ``rewards[h, :, s, a]`` (reported by
    ``rewards()`` from the move until the next move, as OpenSpiel's own Python iterated prisoner's
    dilemma does; ``returns()`` is the running sum), then chance draws ``s' ~ transitions[h, s, a]``
    (outcome ids are the next states; only positive probabilities are listed). The state after the
    ``H``-th chance node is terminal. Player ``i``'s legal actions are ``0..A_i-1``.
    Information-state strings read ``markovgames player=i step=h state=s history=...`` (all past
    states and joint actions); observation strings ``step=h state=s``; both have tensors (one-hot
    step and state, plus the one-hot history for the information state).

Import (`import_game`)
    A small OpenSpiel simultaneous-move game becomes a [`MarkovGame`][markovgames.MarkovGame], given a
    function that names the Markov state of an OpenSpiel state. Reachable states are enumerated by
    traversal, layer by layer: the step ``h`` of a simultaneous-move node is the number of
    simultaneous moves before it; chance nodes between two moves are expanded into the transition
    law. The reward of step ``h`` is what OpenSpiel reports for the move (``rewards()`` at the next
    non-chance state, checked against the difference of ``returns()``). A game that ends early
    (a terminal state after fewer than ``H`` moves) continues in an absorbing ``TERMINAL`` state that
    pays 0 (OpenSpiel units). Rewards are then brought into ``[0, 1]`` by one affine map,
    ``r01 = scale * r + offset`` (identity when they already are in ``[0, 1]``), so every episode's
    return maps as ``V01 = scale * V + H * offset`` and gaps as ``gap01 = scale * gap``; the map is
    returned. With ``verify=True`` every OpenSpiel state is expanded and states with the same key
    must agree (rewards and transition law within ``tolerance``): the key must name a Markov state.

Correlation devices (`correlation_device`)
    OpenSpiel represents a correlated policy as a *correlation device*: a list of
    ``(weight, pyspiel.TabularPolicy)`` pairs. The output policies of Algorithms 3 and 4 are exactly
    that: a mixture, over the hidden index sequence ``(j_1, ..., j_H)`` (law: ``j_1`` from
    [`first_index_distribution`][markovgames.policies.IndexChainPolicy.first_index_distribution], then the kernel),
    of the Markov product policies that play ``pi^{j_h}_h`` at step ``h``. For ``H = 1`` (normal-form
    games) it is the mixture over ``t`` of the product policies ``pi^t`` with the weights of the first
    index. The device has one entry per index sequence, at most ``T^H``: it is built where that is
    small (``max_size``). A [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy] becomes a
    distribution over deterministic joint policies (one joint action per visited ``(h, s)``).

OpenSpiel's distances (`openspiel_cce_dist`, `openspiel_ce_dist`)
    ``pyspiel.cce_dist`` / ``pyspiel.ce_dist`` on the turn-based conversion of the exported game.
    Their conventions differ from markovgames' (docs/gaps.md), which matters when comparing:

    * OpenSpiel's ``deviation_incentives[i]`` is ``max(0, best_response_value - on_policy_value)``,
      clipped at 0, and its ``dist_value`` is their **sum over players**; markovgames reports the
      unclipped per-player gap (a CCE gap can be negative) and the **max** over players.
      `OpenSpielCorrDist` keeps both (``unclipped``, ``gap``).
    * OpenSpiel's CCE deviator observes its information states (here: all past states and joint
      actions) but not the device's draw: the same deviations as markovgames' exact CCE gap, so the
      per-player values agree for any ``H``.
    * OpenSpiel's CE is the *normal-form* CE of the whole game: the deviator is told its entire
      recommended deterministic policy (the device must be determinised). For ``H = 1`` that is the
      recommended action and coincides with the paper's CE (strategy modifications
      ``phi: A_i -> A_i``); for ``H > 1`` it is a stronger deviator and determinisation is
      exponential, so `openspiel_ce_dist` accepts ``H = 1`` only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..evaluation import check_policy
from ..games import MarkovGame
from ._openspiel_devices import correlation_device, policy_components
from ._openspiel_export import (
    _pyspiel,
    _replay_state,  # noqa: F401 - exported games' states pickled when this module defined it name it here
    export_game,
    exported_roots,
    markov_state_key,
)
from ._openspiel_import import (
    TERMINAL,
    ImportedGame,
    OpenSpielImportError,
    _Terminal,  # noqa: F401 - TERMINAL keys pickled when this module defined it name it here
    import_game,
)
from ._rescale import AffineRescaling

__all__ = [
    "export_game",
    "markov_state_key",
    "exported_roots",
    "import_game",
    "ImportedGame",
    "OpenSpielImportError",
    "TERMINAL",
    "correlation_device",
    "policy_components",
    "openspiel_cce_dist",
    "openspiel_ce_dist",
    "OpenSpielCorrDist",
    "AffineRescaling",
]


# =======================================================================================
# OpenSpiel's CE / CCE distances
# =======================================================================================
@dataclass(frozen=True)
class OpenSpielCorrDist:
    """What ``pyspiel.cce_dist`` / ``pyspiel.ce_dist`` report, in the exported game's units.

    Attributes
    ----------
    concept : ``"cce"`` or ``"ce"``
    on_policy_values, best_response_values : ndarray (N,)
    deviation_incentives : ndarray (N,)
        OpenSpiel's ``max(0, best_response_values - on_policy_values)`` (clipped).
    dist_value : float
        OpenSpiel's sum over players of ``deviation_incentives``.
    device_size : int
        Entries of the correlation device that was evaluated.
    """

    concept: str
    on_policy_values: np.ndarray
    best_response_values: np.ndarray
    deviation_incentives: np.ndarray
    dist_value: float
    device_size: int

    @property
    def unclipped(self) -> np.ndarray:
        """``best_response_values - on_policy_values`` per player: markovgames' ``per_player`` gap."""
        return self.best_response_values - self.on_policy_values

    @property
    def gap(self) -> float:
        """The max over players of `unclipped`: markovgames' convention for the gap."""
        return float(self.unclipped.max())


def _corr_dist_info(concept: str, info, size: int) -> OpenSpielCorrDist:
    return OpenSpielCorrDist(
        concept=concept,
        on_policy_values=np.asarray(info.on_policy_values, dtype=np.float64),
        best_response_values=np.asarray(info.best_response_values, dtype=np.float64),
        deviation_incentives=np.asarray(info.deviation_incentives, dtype=np.float64),
        dist_value=float(info.dist_value),
        device_size=size,
    )


def openspiel_cce_dist(game: MarkovGame, policy, *, max_size: int = 10_000) -> OpenSpielCorrDist:
    """OpenSpiel's ``cce_dist`` of ``policy`` in ``game`` (exported, converted to turn-based).

    The deviations are those of markovgames' exact CCE gap (observe states and past joint actions,
    not the index), so ``unclipped`` equals [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap]'s
    ``per_player`` for any horizon; OpenSpiel's own numbers are clipped at 0 and summed over players.
    """
    check_policy(game, policy)
    pyspiel = _pyspiel()
    turn_based = pyspiel.convert_to_turn_based(export_game(game))
    device = correlation_device(turn_based, policy, max_size=max_size)
    return _corr_dist_info("cce", pyspiel.cce_dist(turn_based, device), len(device))


def openspiel_ce_dist(game: MarkovGame, policy, *, max_size: int = 10_000) -> OpenSpielCorrDist:
    """OpenSpiel's ``ce_dist`` of ``policy`` in a one-step game (``H = 1``).

    The device is determinised by ``pyspiel.determinize_corr_dev`` (one entry per joint action), as
    ``ce_dist`` requires; the deviator is told its recommended action, as in the paper's CE, so
    ``unclipped`` equals [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap]'s ``per_player``.

    Raises
    ------
    ValueError
        For ``H > 1``: OpenSpiel's CE is then the normal-form CE of the whole game (the deviator sees
        its whole recommended policy), a different notion, and determinisation is exponential.
    """
    check_policy(game, policy)
    if game.horizon != 1:
        raise ValueError(
            "openspiel_ce_dist: OpenSpiel's ce_dist is the normal-form CE of the whole game (the deviator "
            "sees its entire recommended policy), which equals the paper's CE only for one-step games; "
            f"this game has H = {game.horizon}"
        )
    pyspiel = _pyspiel()
    turn_based = pyspiel.convert_to_turn_based(export_game(game))
    device = pyspiel.determinize_corr_dev(correlation_device(turn_based, policy, max_size=max_size))
    return _corr_dist_info("ce", pyspiel.ce_dist(turn_based, device), len(device))
