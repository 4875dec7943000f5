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

import hashlib
import math
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._errors import MarkovGamesError
from ..evaluation import check_policy
from ..games import MarkovGame
from ..policies import IndexChainPolicy, MarkovCorrelatedPolicy
from ._deps import require
from ._rescale import AffineRescaling, Rescaled, fit_rescaling, to_unit_interval

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

#: Information-state strings of exported games contain this tag; the rest of the string follows it.
INFO_TAG = "markovgames"
_INFO_RE = re.compile(INFO_TAG + r" player=(\d+) step=(\d+) state=(\d+) ")


def _pyspiel():
    return require("pyspiel", extra="openspiel", package="open-spiel")


class OpenSpielImportError(MarkovGamesError, ValueError):
    """An OpenSpiel game cannot be read as a Markov game (the message says which node and why)."""


class _Terminal:
    """The absorbing state of an imported game that ended before ``H`` moves."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "TERMINAL"

    def __reduce__(self):
        return (_Terminal, ())


#: The key of the absorbing state of an imported game that can end early.
TERMINAL = _Terminal()


# =======================================================================================
# Export
# =======================================================================================
_REGISTRY: dict[str, Any] = {}  # short name -> the registered game class
_BASES: tuple | None = None


def _bases():
    """The pyspiel base classes (built on first use so that pyspiel is imported lazily)."""
    global _BASES
    if _BASES is None:
        pyspiel = _pyspiel()
        _BASES = (_game_base(pyspiel), _state_base(pyspiel))
    return _BASES


def _game_base(pyspiel) -> type:
    """The base class of exported games, a ``pyspiel.Game``; `export_game` subclasses it once per
    game with the game, its OpenSpiel type and info, and its state class (from `_state_base`)."""

    class MarkovGameOpenSpiel(pyspiel.Game):
        """An exported [`MarkovGame`][markovgames.MarkovGame] (one subclass per registered game)."""

        _markov_game: MarkovGame
        _game_type: Any
        _game_info: Any
        _state_class: type

        def __init__(self, params=None):
            super().__init__(self._game_type, self._game_info, params or {})

        @property
        def markov_game(self) -> MarkovGame:
            """The exported game."""
            return self._markov_game

        def new_initial_state(self):
            return self._state_class(self)

        def new_state_at(self, step: int, state: int):
            """A state at step ``step`` in Markov state ``state`` with an empty history (for traversals)."""
            mg = self._markov_game
            if not 0 <= int(step) < mg.horizon or not 0 <= int(state) < mg.num_states:
                raise ValueError(f"need 0 <= step < {mg.horizon} and 0 <= state < {mg.num_states}, got ({step}, {state})")
            st = self._state_class(self)
            st._d = st._d._replace(step=int(step), state=int(state))
            return st

        def make_py_observer(self, iig_obs_type=None, params=None):
            perfect_recall = bool(iig_obs_type is not None and iig_obs_type.perfect_recall)
            return _Observer(self._markov_game, perfect_recall)

        def __reduce__(self):
            # The class is made per game at run time: pickle the game, and export it again on loading.
            return export_game, (self._markov_game, self._game_type.short_name)

    return MarkovGameOpenSpiel


def _state_base(pyspiel) -> type:
    """The base class of exported games' states, a ``pyspiel.State`` over one immutable `_StateData`
    (whose methods are the game's rules: what a move and a chance draw do)."""

    class MarkovGameOpenSpielState(pyspiel.State):
        """A state of an exported game: step, Markov state, pending joint action (at chance nodes), history."""

        _markov_game: MarkovGame

        def __init__(self, game):
            super().__init__(game)
            mg = self._markov_game
            zeros = (0.0,) * mg.num_players
            # One immutable attribute: OpenSpiel clones a Python state by deep-copying its attributes.
            self._d = _StateData(0, mg.initial_state, None, (), zeros, zeros)

        # Read-only views of the state data.
        _step = property(lambda self: self._d.step)
        _state = property(lambda self: self._d.state)
        _pending = property(lambda self: self._d.pending)
        _history = property(lambda self: self._d.history)

        # -- the markovgames view
        @property
        def markov_state(self) -> int:
            """The Markov state ``s`` (after the last step: the final state)."""
            return self._state

        @property
        def step(self) -> int:
            """The step ``h`` (``H`` once the episode is over)."""
            return self._step

        # -- the OpenSpiel API
        def current_player(self):
            if self._pending is not None:
                return pyspiel.PlayerId.CHANCE
            if self._step >= self._markov_game.horizon:
                return pyspiel.PlayerId.TERMINAL
            return pyspiel.PlayerId.SIMULTANEOUS

        def _legal_actions(self, player):
            return list(range(self._markov_game.num_actions[player]))

        def chance_outcomes(self):
            return self._d.chance_outcomes(self._markov_game)

        def _apply_action(self, action):
            self._d = self._d.after_chance(self._markov_game, action)

        def _apply_actions(self, actions):
            self._d = self._d.after_moves(self._markov_game, actions)

        def _action_to_string(self, player, action):
            if player == pyspiel.PlayerId.CHANCE:
                return f"next state {action}"
            return f"player {player} action {action}"

        def is_terminal(self):
            return self._pending is None and self._step >= self._markov_game.horizon

        def rewards(self):
            return list(self._d.rewards)

        def returns(self):
            return list(self._d.returns)

        def __reduce__(self):
            # Rebuilt by replaying its moves on the unpickled game (OpenSpiel's history included).
            return _replay_state, (self.get_game(), self._history, self._state, self._pending)

        def __str__(self):
            hist = "|".join(f"{s}:{','.join(map(str, a))}" for s, a in self._history)
            pending = "" if self._pending is None else f" pending={','.join(map(str, self._pending))}"
            return f"step={self._step} state={self._state}{pending} history={hist}"

    return MarkovGameOpenSpielState


class _StateData(NamedTuple):
    """The whole state of an exported game's state (immutable, so deep copies can share it)."""

    step: int
    state: int
    pending: tuple | None  # the joint action awaiting its transition (at chance nodes)
    history: tuple  # ((state, joint action), ...) of the completed steps
    rewards: tuple  # of the last move, reported until the next move
    returns: tuple

    def _pending_row(self, mg: MarkovGame) -> np.ndarray:
        """``P(. | s, a)`` of the pending joint action ``a``."""
        if self.pending is None:
            raise ValueError("no joint action is pending (not a chance node)")
        return mg.transitions[(self.step, self.state, *self.pending)]

    def chance_outcomes(self, mg: MarkovGame) -> list[tuple[int, float]]:
        """``(next state, probability)`` for the pending joint action, positive probabilities only."""
        row = self._pending_row(mg)
        return [(int(s), float(p)) for s, p in enumerate(row) if p > 0.0]

    def after_chance(self, mg: MarkovGame, action) -> _StateData:
        """The data once chance has drawn the next state ``action`` (of positive probability, else
        ``ValueError``): the step is complete and joins the history."""
        row = self._pending_row(mg)
        if not (0 <= action < row.size and row[action] > 0.0):
            raise ValueError(f"chance outcome {action} has probability 0")
        return self._replace(
            step=self.step + 1, state=int(action), pending=None, history=self.history + ((self.state, self.pending),)
        )

    def after_moves(self, mg: MarkovGame, actions) -> _StateData:
        """The data once the players have moved ``actions`` (a joint action in the action sets, else
        ``ValueError``): pending its transition, its rewards reported and added to the returns."""
        joint = tuple(int(a) for a in actions)
        if len(joint) != mg.num_players or any(not 0 <= a < n for a, n in zip(joint, mg.num_actions, strict=True)):
            raise ValueError(f"joint action {joint} is not in the action sets {mg.num_actions}")
        index: tuple[Any, ...] = (self.step, slice(None), self.state, *joint)
        rewards = tuple(float(r) for r in mg.rewards[index])
        returns = tuple(x + r for x, r in zip(self.returns, rewards, strict=True))
        return self._replace(pending=joint, rewards=rewards, returns=returns)

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


class _Observer:
    """OpenSpiel's PyObserver interface: strings and one-hot tensors of step, state (and history)."""

    def __init__(self, mg: MarkovGame, perfect_recall: bool):
        self.mg = mg
        self.perfect_recall = perfect_recall
        H, S = mg.horizon, mg.num_states
        pieces: list[tuple[str, tuple[int, ...]]] = [("step", (H + 1,)), ("state", (S,))]
        if perfect_recall:
            pieces += [("past_states", (H, S)), ("past_actions", (H, sum(mg.num_actions)))]
        self.tensor = np.zeros(sum(math.prod(shape) for _, shape in pieces), np.float32)
        self.dict = {}
        at = 0
        for name, shape in pieces:
            size = math.prod(shape)
            self.dict[name] = self.tensor[at : at + size].reshape(shape)
            at += size
        self._offsets = np.concatenate([[0], np.cumsum(mg.num_actions)[:-1]]).astype(int)

    def set_from(self, state, player):
        self.tensor.fill(0.0)
        self.dict["step"][min(state._step, self.mg.horizon)] = 1.0
        self.dict["state"][state._state] = 1.0
        if self.perfect_recall:
            for k, (s, joint) in enumerate(state._history):
                self.dict["past_states"][k, s] = 1.0
                self.dict["past_actions"][k, self._offsets + np.asarray(joint)] = 1.0

    def string_from(self, state, player):
        if self.perfect_recall:
            hist = "|".join(f"{s}:{','.join(map(str, a))}" for s, a in state._history)
            return f"{INFO_TAG} player={player} step={state._step} state={state._state} history={hist}"
        return f"step={state._step} state={state._state}"


def _default_short_name(game: MarkovGame) -> str:
    h = hashlib.sha256()
    h.update(repr((game.rewards.shape, game.initial_state, game.name, game.description)).encode())
    h.update(np.ascontiguousarray(game.rewards).tobytes())
    h.update(np.ascontiguousarray(game.transitions).tobytes())
    return f"markovgames_{h.hexdigest()[:16]}"


def _same_game(a: MarkovGame, b: MarkovGame) -> bool:
    return a == b  # name, description, initial state and arrays


def _replay_state(os_game, history, state: int, pending):
    """The state of ``os_game`` reached by ``history`` (``((s_h, joint_h), ...)``), then ``state``
    and, at a chance node, the ``pending`` joint action (how exported states are unpickled)."""
    st = os_game.new_initial_state()
    for k, (_, joint) in enumerate(history):
        st.apply_actions(list(joint))
        st.apply_action(history[k + 1][0] if k + 1 < len(history) else state)
    if pending is not None:
        st.apply_actions(list(pending))
    return st


def export_game(game: MarkovGame, short_name: str | None = None):
    """Export ``game`` as a registered OpenSpiel game (see the module docstring for its rules).

    Parameters
    ----------
    game : MarkovGame
    short_name : str, optional
        The OpenSpiel name to register (letters, digits, ``_``). Default: ``markovgames_<hash>`` of the
        game (arrays, initial state, name, description), so exporting an equal game again gives the
        same registered game. A name already registered for a different game is refused.

    Returns
    -------
    pyspiel.Game
        Loaded with ``pyspiel.load_game(short_name)`` (also usable in strings such as
        ``"turn_based_simultaneous_game(game=<short_name>())"``); its ``markov_game`` attribute is
        ``game`` (or the equal game exported first under that name).
    """
    if not isinstance(game, MarkovGame):
        raise TypeError(f"export_game: expected a MarkovGame, got {type(game).__name__}")
    pyspiel = _pyspiel()
    name = short_name or _default_short_name(game)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"short_name must be letters, digits and '_' (not starting with a digit), got {name!r}")
    cls = _REGISTRY.get(name)
    if cls is not None:
        if not _same_game(cls._markov_game, game):
            raise ValueError(f"the OpenSpiel name {name!r} is already registered for a different game")
        return pyspiel.load_game(name)
    if name in pyspiel.registered_names():
        existing = pyspiel.load_game(name) if name.startswith("markovgames_") else None
        other = getattr(existing, "markov_game", None)
        if isinstance(other, MarkovGame) and _same_game(other, game):
            return existing  # registered by an earlier copy of this module (e.g. after a reload)
        raise ValueError(f"the OpenSpiel name {name!r} is already taken by another game")
    game_base, state_base = _bases()
    H, N, S = game.horizon, game.num_players, game.num_states
    game_type = pyspiel.GameType(
        short_name=name,
        long_name=f"markovgames: {game.name}",
        dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.REWARDS,
        max_num_players=N,
        min_num_players=N,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification={},
    )
    game_info = pyspiel.GameInfo(
        num_distinct_actions=max(game.num_actions),
        max_chance_outcomes=S,
        num_players=N,
        min_utility=0.0,
        max_utility=float(H),
        utility_sum=None,
        max_game_length=H,
    )
    state_cls = type(f"{name}_State", (state_base,), {"_markov_game": game})
    cls = type(
        f"{name}_Game",
        (game_base,),
        {"_markov_game": game, "_game_type": game_type, "_game_info": game_info, "_state_class": state_cls},
    )
    pyspiel.register_game(game_type, cls)
    _REGISTRY[name] = cls
    return pyspiel.load_game(name)


def markov_state_key(state) -> int:
    """The Markov state of a state of an exported game (a ``state_key`` for `import_game`)."""
    try:
        return int(state.markov_state)
    except AttributeError:
        raise TypeError(f"markov_state_key: not a state of a game made by export_game: {type(state).__name__}") from None


def exported_roots(os_game) -> list[tuple[int, Any]]:
    """``(step, state)`` for every ``(h, s)`` of an exported game, the initial state first.

    Passed as ``roots`` to `import_game` they make every entry of the arrays reachable, so
    ``import_game(g, markov_state_key, roots=exported_roots(g), state_order=range(S))`` gives back
    the exported arrays exactly.
    """
    mg = getattr(os_game, "markov_game", None)
    if not isinstance(mg, MarkovGame):
        raise TypeError("exported_roots: not a game made by export_game")
    roots = [(0, os_game.new_initial_state())]
    for h in range(mg.horizon):
        for s in range(mg.num_states):
            if (h, s) != (0, mg.initial_state):
                roots.append((h, os_game.new_state_at(h, s)))
    return roots


# =======================================================================================
# Import
# =======================================================================================
@dataclass(frozen=True, eq=False)
class ImportedGame(Rescaled):
    """A Markov game read from an OpenSpiel game.

    Attributes
    ----------
    game : MarkovGame
    rescaling : AffineRescaling
        ``r01 = scale * r + offset`` (OpenSpiel units -> ``[0, 1]``); returns map as
        ``V01 = scale * V + H * offset`` (`AffineRescaling.value`), gaps as ``scale * gap``.
    state_keys : tuple
        ``state_keys[s]`` is the key (from ``state_key``) of state ``s``; `TERMINAL` for the
        absorbing state of a game that can end early.
    reachable : ndarray of bool, shape ``(H, S)``
        Entries the traversal determined. Elsewhere the arrays are placeholders (reward 0,
        self-loop) that no play from the roots reaches.
    action_ids : tuple of tuples
        ``action_ids[i][a]`` is the OpenSpiel action id of player ``i``'s action ``a``.
    num_nodes : int
        OpenSpiel states visited.
    """

    game: MarkovGame
    rescaling: AffineRescaling
    state_keys: tuple
    reachable: np.ndarray
    action_ids: tuple
    num_nodes: int

    def state_index(self, key) -> int:
        """The state index of ``key``."""
        return self.state_keys.index(key)

    def openspiel_value(self, value01) -> np.ndarray:
        """A return of the imported game back in OpenSpiel units."""
        return self.rescaling.original_value(value01, horizon=self.game.horizon)


@dataclass
class _Record:
    rewards: np.ndarray  # (N, *A), OpenSpiel units
    outcomes: list  # per flat joint action: list of (prob, kind, payload): kind "key" or "terminal"


def import_game(
    os_game,
    state_key: Callable[[Any], Hashable],
    *,
    roots: Iterable[tuple[int, Any]] | None = None,
    state_order: Sequence[Hashable] | None = None,
    bounds="auto",
    name: str | None = None,
    verify: bool = True,
    tolerance: float = 1e-9,
    max_nodes: int = 1_000_000,
) -> ImportedGame:
    """Read a small OpenSpiel simultaneous-move game as a [`MarkovGame`][markovgames.MarkovGame].

    Parameters
    ----------
    os_game : pyspiel.Game
        Simultaneous-move nodes, chance nodes and terminal states only; every player's legal
        actions must be the same at every simultaneous-move node.
    state_key : callable
        ``state_key(openspiel_state) -> hashable``, the Markov state of a simultaneous-move state
        (and of a terminal state reached after exactly ``H`` moves; return ``None`` there to send it to
        `TERMINAL`). States with equal keys at one step must have the same rewards and
        transition law (checked when ``verify``).
    roots : iterable of ``(step, state)``, optional
        Where the traversal starts; default ``[(0, os_game.new_initial_state())]``. The first root
        (at step 0) is the initial state; more roots make more ``(h, s)`` reachable (see
        `exported_roots`).
    state_order : sequence of keys, optional
        These keys get indices ``0, 1, ...`` in this order (even if unreached); the others follow in
        order of discovery, then `TERMINAL`.
    bounds : ``"auto"`` (default), ``"minmax"``, ``None`` or ``(lo, hi)``
        The affine map to ``[0, 1]`` (``"auto"``: identity when every reward, including the 0 of
        `TERMINAL`, is in ``[0, 1]``; else ``(r - min) / (max - min)``).
    name : str, optional
        Default ``"openspiel:<game string>"``.
    verify : bool
        Expand every OpenSpiel state (not one per key and step) and check that the key names a
        Markov state.
    tolerance : float
        For that check.
    max_nodes : int
        Refuse (``OpenSpielImportError``) after visiting this many OpenSpiel states.

    Returns
    -------
    ImportedGame
    """
    pyspiel = _pyspiel()
    if not isinstance(os_game, pyspiel.Game):
        raise TypeError(f"import_game: expected a pyspiel.Game, got {type(os_game).__name__}")
    state_key = _hashable_keys(state_key)
    num_players = int(os_game.num_players())
    root_list = _root_list(os_game, roots)
    traversed = _traverse(state_key, root_list, num_players, verify=verify, max_nodes=max_nodes)
    states = _index_states(traversed, state_key, state_order)
    arrays = _reconcile(traversed, states, num_players=num_players, tolerance=tolerance)
    return _assemble(os_game, traversed, states, arrays, bounds=bounds, name=name)


def _hashable_keys(state_key: Callable[[Any], Hashable]) -> Callable[[Any], Hashable]:
    """The user's ``state_key`` with its result checked: keys index dicts and sets, so they must be hashable."""

    def checked(st) -> Hashable:
        key = state_key(st)
        try:
            hash(key)
        except TypeError:
            raise TypeError(f"state_key must return a hashable key, got a {type(key).__name__}: {key!r}") from None
        return key

    return checked


def _root_list(os_game, roots: Iterable[tuple[int, Any]] | None) -> list[tuple[int, Any]]:
    """The traversal's roots as ``(step, state)`` pairs (default: the initial state), the first at step 0."""
    root_list = [(int(h), st) for h, st in ([(0, os_game.new_initial_state())] if roots is None else roots)]
    if not root_list:
        raise ValueError("roots: need at least one (step, state)")
    if root_list[0][0] != 0:
        raise ValueError(f"roots: the first root is the initial state and must be at step 0, got step {root_list[0][0]}")
    return root_list


def _where(st) -> str:
    """An OpenSpiel state's text on one line, cut to 120 characters (for messages)."""
    text = str(st).replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def _check_decision(st, h: int) -> None:
    """Refuse ``st``, expected at step ``h``, unless it is a simultaneous-move node."""
    if st.is_chance_node():
        raise OpenSpielImportError(
            f"step {h}: a chance node where a simultaneous-move node was expected ({_where(st)}); "
            "a Markov game has a fixed initial state: pass the states after the initial chance "
            "node as roots"
        )
    if not st.is_simultaneous_node():
        raise OpenSpielImportError(
            f"step {h}: a node of player {st.current_player()} moving alone ({_where(st)}); only "
            "simultaneous-move nodes, chance nodes and terminal states are supported "
            "(a turn-based game is not a simultaneous-move Markov game)"
        )


def _reported_reward(nxt, base: np.ndarray) -> np.ndarray:
    """The reward of the move that led (through chance) to ``nxt``, from a state whose returns were
    ``base``: what OpenSpiel reports (``nxt.rewards()``) when it agrees with the difference of the
    returns, else that difference."""
    r_ret = np.asarray(nxt.returns(), dtype=np.float64) - base
    r_rep = np.asarray(nxt.rewards(), dtype=np.float64)
    scale_ = 1.0 + np.abs(r_ret)
    return r_rep if np.all(np.abs(r_rep - r_ret) <= 1e-9 * scale_) else r_ret


def _expected_reward(step_rewards: list[tuple[float, np.ndarray]]) -> np.ndarray:
    """The expected reward of a move over chance's outcomes ``[(probability, reward), ...]``;
    exactly the reward when chance does not change it."""
    first = step_rewards[0][1]
    if all(np.array_equal(r, first) for _, r in step_rewards):
        return first
    return np.asarray(sum(p * r for p, r in step_rewards) / sum(p for p, _ in step_rewards))


class _Move(NamedTuple):
    """Where one joint action leads, through chance: per outcome ``(probability, kind, payload)``
    (kind ``"key"`` with the next state's key, or ``"terminal"`` with an index into the terminals
    reached), and ``(probability, reward)``."""

    outcomes: list
    rewards: list


class _Traversal:
    """The traversal of `import_game` while it runs: what it has found so far.

    ``layers[h]`` maps a key to the OpenSpiel states at step ``h`` with that key (all of them when
    ``verify``, else the first); ``records[(h, key)]`` has one `_Record` per expanded state;
    ``terminals`` the ``(depth, state)`` of every terminal state reached.
    """

    def __init__(self, state_key: Callable[[Any], Hashable], num_players: int, *, verify: bool, max_nodes: int):
        self.state_key = state_key
        self.num_players = num_players
        self.verify = verify
        self.max_nodes = max_nodes
        self.nodes = 0
        self.action_ids: list[tuple[int, ...]] | None = None
        self.layers: dict[int, dict[Hashable, list]] = {}
        self.keys_in_order: list[Hashable] = []
        self._seen_keys: set = set()
        self.records: dict[tuple[int, Hashable], list[_Record]] = {}
        self.terminals: list[tuple[int, Any]] = []

    def add_root(self, h: int, st) -> None:
        """Start the traversal also at ``st``, at step ``h``."""
        _check_decision(st, h)
        key = self.state_key(st)
        self._note(key)
        self._add(h, key, st)

    def run(self) -> None:
        """Expand the layers in order of step; each expansion fills the next layer."""
        h = 0
        while h <= max(self.layers):
            for key, states in self.layers.get(h, {}).items():
                for st in states:
                    self.records.setdefault((h, key), []).append(self._expand(st, h))
            h += 1

    def _expand(self, st, h: int) -> _Record:
        """The rewards and outcomes of every joint action at the simultaneous-move state ``st`` at
        step ``h`` (the states it leads to join layer ``h + 1``)."""
        _check_decision(st, h)
        acts = self._legal(st, h)
        sizes = tuple(len(a) for a in acts)
        base = np.asarray(st.returns(), dtype=np.float64)
        rew = np.zeros((self.num_players, *sizes))
        outcomes = []
        for joint in np.ndindex(*sizes):
            child = st.clone()
            child.apply_actions([acts[p][a] for p, a in enumerate(joint)])
            move = self._follow(child, base, h)
            outcomes.append(move.outcomes)
            rew[(slice(None), *joint)] = _expected_reward(move.rewards)
        return _Record(rew, outcomes)

    def _follow(self, child, base: np.ndarray, h: int) -> _Move:
        """Where the joint action at step ``h`` that made ``child`` leads, through chance, and what
        it pays (``base``: the returns before it)."""
        outs: list[tuple[float, str, Hashable]] = []
        step_rewards = []
        for prob, nxt in self._settle(child, 1.0):
            step_rewards.append((prob, _reported_reward(nxt, base)))
            if nxt.is_terminal():
                self.terminals.append((h + 1, nxt))
                outs.append((prob, "terminal", len(self.terminals) - 1))
            else:
                _check_decision(nxt, h + 1)
                nkey = self.state_key(nxt)
                self._note(nkey)
                self._add(h + 1, nkey, nxt)
                outs.append((prob, "key", nkey))
        return _Move(outs, step_rewards)

    def _settle(self, st, prob: float):
        """The non-chance states reached from ``st`` through chance nodes, with their probabilities."""
        self._count()
        if st.is_chance_node():
            for outcome, p in st.chance_outcomes():
                if p > 0.0:
                    yield from self._settle(st.child(outcome), prob * p)
        else:
            yield prob, st

    def _count(self) -> None:
        """Count one more OpenSpiel state visited; refuse more than ``max_nodes``."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise OpenSpielImportError(
                f"more than max_nodes = {self.max_nodes} OpenSpiel states visited; pass a larger max_nodes "
                "(or verify=False to expand one state per key and step)"
            )

    def _legal(self, st, h: int) -> list[tuple[int, ...]]:
        """Every player's legal actions at ``st``: non-empty, and the same at every state."""
        acts = [tuple(int(a) for a in st.legal_actions(p)) for p in range(self.num_players)]
        if self.action_ids is None:
            for p, a in enumerate(acts):
                if not a:
                    raise OpenSpielImportError(f"step {h}: player {p} has no legal action ({_where(st)})")
            self.action_ids = acts
        elif acts != self.action_ids:
            raise OpenSpielImportError(
                f"step {h}: legal actions {acts} differ from {self.action_ids} seen before ({_where(st)}); a Markov "
                "game needs the same action sets everywhere"
            )
        return acts

    def _add(self, h: int, key, st) -> None:
        """Put ``st`` in layer ``h`` under ``key`` (to be expanded unless not ``verify`` and the key is there)."""
        layer = self.layers.setdefault(h, {})
        if key in layer:
            if self.verify:
                layer[key].append(st)
        else:
            layer[key] = [st]

    def _note(self, key) -> None:
        """Record ``key`` in order of discovery (a simultaneous-move state's key cannot be ``None``)."""
        if key is None:
            raise OpenSpielImportError("state_key returned None for a simultaneous-move state")
        if key not in self._seen_keys:
            self._seen_keys.add(key)
            self.keys_in_order.append(key)


@dataclass(frozen=True)
class _Traversed:
    """What the traversal of `import_game` found.

    Attributes
    ----------
    records : dict
        ``(h, key) -> [_Record, ...]``, one per expanded OpenSpiel state, in order of expansion.
    terminals : tuple
        ``(depth, state)`` of every terminal state reached (the ``"terminal"`` outcomes index it).
    keys_in_order : tuple
        The keys of simultaneous-move states, in order of discovery.
    action_ids : tuple of tuples
        ``action_ids[i][a]``: the OpenSpiel action id of player ``i``'s action ``a``.
    horizon : int
        ``H``: one more than the last step with a simultaneous-move state.
    initial_key : hashable
        The key of the first root.
    num_nodes : int
        OpenSpiel states visited.
    """

    records: dict
    terminals: tuple
    keys_in_order: tuple
    action_ids: tuple
    horizon: int
    initial_key: Hashable
    num_nodes: int


def _traverse(
    state_key: Callable[[Any], Hashable], root_list: list[tuple[int, Any]], num_players: int, *, verify: bool, max_nodes: int
) -> _Traversed:
    """Enumerate the states reachable from the roots, layer by layer, expanding every joint action
    through chance (the module docstring has the rules); returns what it found."""
    walk = _Traversal(state_key, num_players, verify=verify, max_nodes=max_nodes)
    for h, st in root_list:
        walk.add_root(h, st)
    initial_key = state_key(root_list[0][1])
    walk.run()
    assert walk.action_ids is not None
    return _Traversed(
        records=walk.records,
        terminals=tuple(walk.terminals),
        keys_in_order=tuple(walk.keys_in_order),
        action_ids=tuple(walk.action_ids),
        horizon=1 + max(hh for hh, layer in walk.layers.items() if layer),
        initial_key=initial_key,
        num_nodes=walk.nodes,
    )


class _StateIndex(NamedTuple):
    """The states of the imported game: ``order[s]`` is the key of state ``s`` and ``state_of`` its
    inverse; ``terminal_keys[t]`` is the key the ``t``-th terminal state reached continues in."""

    order: tuple
    state_of: dict
    terminal_keys: tuple
    uses_terminal: bool  # some play ends before H moves, in the absorbing TERMINAL state


def _index_states(
    traversed: _Traversed, state_key: Callable[[Any], Hashable], state_order: Sequence[Hashable] | None
) -> _StateIndex:
    """Number the states: ``state_order`` first, then the keys in order of discovery, then `TERMINAL`."""
    # Terminal states: after exactly H moves they are keyed (their key ends the last transition);
    # earlier ones continue in the absorbing TERMINAL state.
    discovered = list(traversed.keys_in_order)
    terminal_keys = []
    for depth, st in traversed.terminals:
        k = state_key(st) if depth == traversed.horizon else None
        if k is None:
            k = TERMINAL
        else:
            discovered.append(k)
        terminal_keys.append(k)
    uses_terminal = any(k is TERMINAL for k in terminal_keys)

    order: list[Hashable] = []
    placed: set = set()
    for k in list(state_order or ()) + discovered:
        if k not in placed:
            placed.add(k)
            order.append(k)
    if uses_terminal:
        order.append(TERMINAL)
    index = {k: s for s, k in enumerate(order)}
    return _StateIndex(tuple(order), index, tuple(terminal_keys), uses_terminal)


class _Arrays(NamedTuple):
    """The imported game's arrays in OpenSpiel units (rewards ``(H, N, S, *A)``, transitions
    ``(H, S, prod(A), S)``), the entries the traversal determined (``reachable``, ``(H, S)``), and
    every reward observed (to fit the map to ``[0, 1]``)."""

    rewards: np.ndarray
    transitions: np.ndarray
    reachable: np.ndarray
    observed: list


def _law(rec: _Record, states: _StateIndex, num_joint: int) -> np.ndarray:
    """The transition law ``(prod(A), S)`` of an expanded state."""
    out = np.zeros((num_joint, len(states.order)))
    for c, outs in enumerate(rec.outcomes):
        for prob, kind, payload in outs:
            k = payload if kind == "key" else states.terminal_keys[payload]
            out[c, states.state_of[k]] += prob
    return out


def _reconcile(traversed: _Traversed, states: _StateIndex, *, num_players: int, tolerance: float) -> _Arrays:
    """The arrays, from the records: the OpenSpiel states of one key at one step must agree (rewards
    and transition law within ``tolerance``), for the key must name a Markov state."""
    horizon, num_states = traversed.horizon, len(states.order)
    num_actions = tuple(len(a) for a in traversed.action_ids)
    num_joint = math.prod(num_actions)
    rewards = np.zeros((horizon, num_players, num_states, *num_actions))
    transitions = np.zeros((horizon, num_states, num_joint, num_states))
    transitions[:, np.arange(num_states), :, np.arange(num_states)] = 1.0  # placeholder self-loops
    reachable = np.zeros((horizon, num_states), dtype=bool)
    observed = []
    for (h, key), recs in traversed.records.items():
        s = states.state_of[key]
        first_law = _law(recs[0], states, num_joint)
        for rec in recs[1:]:
            if not (
                np.allclose(rec.rewards, recs[0].rewards, rtol=0, atol=tolerance)
                and np.allclose(_law(rec, states, num_joint), first_law, rtol=0, atol=tolerance)
            ):
                raise OpenSpielImportError(
                    f"state_key does not name a Markov state: two OpenSpiel states at step {h} with key {key!r} "
                    "have different rewards or transition laws"
                )
        rewards[h, :, s] = recs[0].rewards
        transitions[h, s] = first_law
        reachable[h, s] = True
        observed.append(recs[0].rewards.ravel())
    if states.uses_terminal:
        t = states.state_of[TERMINAL]
        first = min(d for (d, _), k in zip(traversed.terminals, states.terminal_keys, strict=True) if k is TERMINAL)
        reachable[first:, t] = True
        observed.append(np.zeros(1))
    return _Arrays(rewards, transitions, reachable, observed)


def _assemble(os_game, traversed: _Traversed, states: _StateIndex, arrays: _Arrays, *, bounds, name: str | None) -> ImportedGame:
    """The imported game: the reachable rewards mapped into ``[0, 1]`` by the affine map fit to
    ``bounds`` and the rewards observed, then the [`MarkovGame`][markovgames.MarkovGame]."""
    rescaling = fit_rescaling(np.concatenate(arrays.observed) if arrays.observed else np.zeros(0), bounds)
    rewards, reachable = arrays.rewards, arrays.reachable
    horizon, num_states = traversed.horizon, len(states.order)
    for h in range(horizon):
        for s in range(num_states):
            if reachable[h, s]:
                rewards[h, :, s] = to_unit_interval(rewards[h, :, s], rescaling, what="rewards")
    num_actions = tuple(len(a) for a in traversed.action_ids)
    game = MarkovGame(
        rewards=rewards,
        transitions=arrays.transitions.reshape((horizon, num_states, *num_actions, num_states)),
        initial_state=states.state_of[traversed.initial_key],
        name=name or f"openspiel:{os_game}",
        description=f"Imported from the OpenSpiel game {os_game} (rewards r01 = {rescaling.scale!r} * r + {rescaling.offset!r})",
        units=rescaling,
    )
    return ImportedGame(
        game=game,
        rescaling=rescaling,
        state_keys=states.order,
        reachable=reachable,
        action_ids=traversed.action_ids,
        num_nodes=traversed.num_nodes,
    )


# =======================================================================================
# Correlation devices
# =======================================================================================
def policy_components(policy, *, cells: Iterable[tuple[int, int]] | None = None, max_size: int = 10_000):
    """A correlated policy as a mixture of per-step product policies.

    Returns a list of ``(weight, per_player)`` with ``per_player[i]`` of shape ``(H, S, A_i)``:
    under that component player ``i`` plays ``per_player[i][h, s]`` at step ``h`` in state ``s``,
    independently of the others. The weights sum to 1.

    * [`IndexChainPolicy`][markovgames.policies.IndexChainPolicy]: one component per index sequence
      ``(j_1, ..., j_H)`` of positive probability, ``per_player[i][h] = pi^{j_h}_{h,i}``.
    * [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy]: one deterministic component per
      choice of a joint action in the support of ``joint[h, s]`` for every cell ``(h, s)`` in
      ``cells`` (default: all), independently across cells.

    Raises ``ValueError`` when there would be more than ``max_size`` components.
    """
    if isinstance(policy, IndexChainPolicy):
        first = policy.first_index_distribution()
        seqs: list[tuple[tuple[int, ...], float]] = [((j + 1,), float(w)) for j, w in enumerate(first) if w > 0.0]
        for _ in range(1, policy.horizon):
            rows: dict[int, np.ndarray] = {}
            nxt = []
            for seq, w in seqs:
                row = rows.get(seq[-1])
                if row is None:
                    row = rows[seq[-1]] = policy.kernel_row(seq[-1])
                for j in np.flatnonzero(row > 0.0):
                    nxt.append((seq + (int(j) + 1,), w * float(row[j])))
                if len(nxt) > max_size:
                    break
            seqs = nxt
            if len(seqs) > max_size:
                raise ValueError(
                    f"the output policy mixes more than max_size = {max_size} index sequences "
                    f"(T = {policy.T}, H = {policy.horizon}); use a shorter prefix or raise max_size"
                )
        steps = np.arange(policy.horizon)
        out = []
        for seq, w in seqs:
            idx = np.asarray(seq) - 1
            out.append((w, [np.asarray(p[idx, steps], dtype=np.float64) for p in policy.policies]))
    elif isinstance(policy, MarkovCorrelatedPolicy):
        H, S = policy.horizon, policy.num_states
        cell_list = (
            sorted(set((int(h), int(s)) for h, s in cells)) if cells is not None else [(h, s) for h in range(H) for s in range(S)]
        )
        supports = []
        total = 1
        for h, s in cell_list:
            dist = policy.joint[h, s]
            supp = [tuple(int(a) for a in np.unravel_index(k, dist.shape)) for k in np.flatnonzero(dist.ravel() > 0.0)]
            supports.append([(j, float(dist[j])) for j in supp])
            total *= len(supp)
            if total > max_size:
                raise ValueError(
                    f"the Markov correlated policy is a mixture of more than max_size = {max_size} deterministic "
                    "joint policies; raise max_size"
                )
        out = []
        for choice in np.ndindex(*(len(s) for s in supports)):
            w = 1.0
            per_player = [np.zeros((H, S, a)) for a in policy.num_actions]
            for (h, s), support, c in zip(cell_list, supports, choice, strict=True):
                joint, p = support[c]
                w *= p
                for i, a in enumerate(joint):
                    per_player[i][h, s, a] = 1.0
            out.append((w, per_player))
    else:
        raise TypeError(f"expected an IndexChainPolicy or a MarkovCorrelatedPolicy, got {type(policy).__name__}")
    total_w = sum(w for w, _ in out)
    return [(w / total_w, comp) for w, comp in out]


def _decision_infostates(os_game, max_nodes: int) -> dict[str, tuple[int, int, int]]:
    """``info state -> (player, step, state)`` for every decision of an exported game (or its turn-based form)."""
    found: dict[str, tuple[int, int, int]] = {}
    stack = [os_game.new_initial_state()]
    nodes = 0
    while stack:
        st = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise ValueError(f"more than {max_nodes} OpenSpiel states: the game is too large for a correlation device")
        if st.is_terminal():
            continue
        if st.is_chance_node():
            stack.extend(st.child(o) for o, p in st.chance_outcomes() if p > 0.0)
            continue
        players = range(os_game.num_players()) if st.is_simultaneous_node() else [st.current_player()]
        for p in players:
            info = st.information_state_string(p)
            m = _INFO_RE.search(info + " ")
            if m is None or int(m.group(1)) != p:
                raise ValueError(f"information state {info!r} is not one of a game made by export_game")
            found[info] = (p, int(m.group(2)), int(m.group(3)))
        if st.is_simultaneous_node():
            acts = [st.legal_actions(p) for p in range(os_game.num_players())]
            for joint in np.ndindex(*(len(a) for a in acts)):
                child = st.clone()
                child.apply_actions([acts[p][a] for p, a in enumerate(joint)])
                stack.append(child)
        else:
            stack.extend(st.child(a) for a in st.legal_actions())
    return found


def correlation_device(os_game, policy, *, max_size: int = 10_000, max_nodes: int = 1_000_000) -> list:
    """A correlated policy as an OpenSpiel correlation device: ``[(weight, pyspiel.TabularPolicy), ...]``.

    Parameters
    ----------
    os_game : pyspiel.Game
        A game made by `export_game` or its turn-based form
        (``pyspiel.convert_to_turn_based``, which ``pyspiel.cce_dist`` / ``ce_dist`` need): the
        tabular policies are keyed by *its* information-state strings.
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
        Of the exported game's shape.
    max_size : int
        Refuse devices with more entries (see `policy_components`).
    max_nodes : int
        Refuse games whose tree has more states.

    Returns
    -------
    list of ``(float, pyspiel.TabularPolicy)``
        Weights summing to 1; each joint policy sets every player's action probabilities at every
        information state (``player i`` at step ``h`` in state ``s`` plays ``per_player[i][h, s]``).
    """
    pyspiel = _pyspiel()
    exported = _exported_markov_game(os_game)
    if exported is not None:
        check_policy(exported, policy)
    infos = _decision_infostates(os_game, max_nodes)
    cells = {(h, s) for _, h, s in infos.values()}
    comps = policy_components(policy, cells=cells if isinstance(policy, MarkovCorrelatedPolicy) else None, max_size=max_size)
    device = []
    for w, per_player in comps:
        table = {}
        for info, (p, h, s) in infos.items():
            probs = per_player[p][h, s]
            table[info] = [(int(a), float(q)) for a, q in enumerate(probs)]
        device.append((float(w), pyspiel.TabularPolicy(table)))
    return device


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


def _exported_markov_game(os_game) -> MarkovGame | None:
    """The [`MarkovGame`][markovgames.MarkovGame] behind an exported game or its turn-based form (``None``
    for any other game)."""
    game = getattr(os_game, "markov_game", None)
    if isinstance(game, MarkovGame):
        return game
    inner = re.search(r"game=([A-Za-z_][A-Za-z0-9_]*)\(", str(os_game))
    cls = _REGISTRY.get(inner.group(1)) if inner else None
    return None if cls is None else cls._markov_game


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
