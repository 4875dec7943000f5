"""OpenSpiel bridge, export: a Markov game as a registered OpenSpiel game (`export_game`).

The exported game's classes (a ``pyspiel.Game`` and a ``pyspiel.State`` subclass per game, built
on first use so that ``pyspiel`` is imported lazily), its states' data and rules, its observer,
and the helpers that recognise an exported game. The rules of an exported game are in the
docstring of `markovgames.bridges.openspiel`.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any, NamedTuple

import numpy as np

from ..games import MarkovGame, require_finite_horizon
from ._deps import require

__all__ = ["export_game", "markov_state_key", "exported_roots"]

#: Information-state strings of exported games contain this tag; the rest of the string follows it.
INFO_TAG = "markovgames"
_INFO_RE = re.compile(INFO_TAG + r" player=(\d+) step=(\d+) state=(\d+) ")


def _pyspiel():
    return require("pyspiel", extra="openspiel", package="open-spiel")


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
    """Export ``game`` as a registered OpenSpiel game (its rules: the docstring of `markovgames.bridges.openspiel`).

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
    require_finite_horizon(game, "export_game")
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


def _exported_markov_game(os_game) -> MarkovGame | None:
    """The [`MarkovGame`][markovgames.MarkovGame] behind an exported game or its turn-based form (``None``
    for any other game)."""
    game = getattr(os_game, "markov_game", None)
    if isinstance(game, MarkovGame):
        return game
    inner = re.search(r"game=([A-Za-z_][A-Za-z0-9_]*)\(", str(os_game))
    cls = _REGISTRY.get(inner.group(1)) if inner else None
    return None if cls is None else cls._markov_game
