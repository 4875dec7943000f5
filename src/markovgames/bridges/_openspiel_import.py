"""OpenSpiel bridge, import: a small OpenSpiel simultaneous-move game as a Markov game (`import_game`).

The traversal that enumerates the reachable states layer by layer, the numbering of the states
found, the arrays reconciled from every OpenSpiel state of one key, and the affine map of the
rewards to ``[0, 1]``. The rules are in the docstring of `markovgames.bridges.openspiel`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._errors import MarkovGamesError
from ..games import MarkovGame
from ._openspiel_export import _pyspiel
from ._rescale import AffineRescaling, Rescaled, fit_rescaling, to_unit_interval

__all__ = ["import_game", "ImportedGame", "OpenSpielImportError", "TERMINAL"]


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
    through chance (the docstring of `markovgames.bridges.openspiel` has the rules); returns what it
    found."""
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
