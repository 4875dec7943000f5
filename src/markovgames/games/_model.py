"""The finite-horizon Markov game model.

An ``N``-player episodic Markov game (Mao et al. 2024, Section 2) is
``G = (N, H, S, {A_i}, {r_i}, P)`` with a fixed initial state ``s_1``.

Shape convention (used everywhere in markovgames, absolute player order,
never "own action first"; code is 0-based, the paper's step ``h`` is code's ``h-1``):

* ``rewards[h, i, s, a_0, ..., a_{N-1}]`` in ``[0, 1]``: shape ``(H, N, S, A_0, ..., A_{N-1})``;
* ``transitions[h, s, a_0, ..., a_{N-1}, s']``: shape ``(H, S, A_0, ..., A_{N-1}, S)``, each
  row ``transitions[h, s, a, :]`` a probability vector;
* or, for large games, the same kernel in sparse form ([`SparseTransitions`][markovgames.games.SparseTransitions]): per row a
  fixed number ``K`` of successor states ``successors[h, s, a_0, ..., a_{N-1}, k]`` in
  ``0..S-1`` with probabilities ``probabilities[h, s, a_0, ..., a_{N-1}, k]``, so
  ``P_h(s' | s, a) = sum_k probabilities[h, s, a, k] [successors[h, s, a, k] = s']``. Rows with
  fewer successors are padded with probability-0 entries; a successor may not be listed twice
  with positive probability;
* ``initial_state`` in ``0..S-1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._errors import MarkovGamesError
from ._units import IDENTITY_UNITS, AffineRescaling

__all__ = [
    "MarkovGame",
    "SparseTransitions",
    "GameValidationError",
    "PROBABILITY_TOLERANCE",
    "MAX_GAME_ENTRIES",
    "validate_rewards",
    "validate_kernel",
]

#: Transition rows must sum to 1 within this absolute tolerance.
PROBABILITY_TOLERANCE = 1e-9

#: Default refusal limit on the number of array entries (rewards + transitions) of one game.
#: About 2 GiB of float64; a caller can pass a larger ``max_entries``.
MAX_GAME_ENTRIES = 2**28


class GameValidationError(MarkovGamesError, ValueError):
    """A game (or game file) is malformed. The message names the field and the first bad index."""


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(k) for k in np.argwhere(mask)[0])


def _as_float_array(value, field_name: str, max_entries: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise GameValidationError(f"{field_name}: expected a numeric array, got dtype {arr.dtype}")
    if arr.size > max_entries:
        raise GameValidationError(
            f"{field_name}: {arr.size} entries exceed the limit of {max_entries} (raise max_entries to allow)"
        )
    # Always copy: the game owns its arrays and marks them read-only.
    return np.array(arr, dtype=np.float64, copy=True)


def _check_finite(arr: np.ndarray, field_name: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = _first_index(bad)
        raise GameValidationError(f"{field_name}{list(idx)} = {float(arr[idx])!r} is not finite")


def _check_rows(probabilities: np.ndarray, field_name: str) -> None:
    """Non-negative entries and rows (last axis) summing to 1, naming the first violation."""
    neg = probabilities < 0.0
    if neg.any():
        idx = _first_index(neg)
        raise GameValidationError(f"{field_name}{list(idx)} = {float(probabilities[idx])!r} is negative")
    row_sums = probabilities.sum(axis=-1)
    off = np.abs(row_sums - 1.0) > PROBABILITY_TOLERANCE
    if off.any():
        idx = _first_index(off)
        raise GameValidationError(
            f"{field_name}{list(idx)} sums to {float(row_sums[idx])!r}, not 1 (tolerance {PROBABILITY_TOLERANCE:g})"
        )


@dataclass(frozen=True, eq=False)
class SparseTransitions:
    """A transition kernel as ``K`` (successor, probability) pairs per row (see the module docstring).

    The arrays are only checked for their own consistency here (dtypes, equal shapes, finite
    non-negative probabilities, rows summing to 1, no successor listed twice);
    [`MarkovGame`][markovgames.games.MarkovGame] checks them against the game's sizes (``successors < S``).

    Parameters
    ----------
    successors : array_like of int, shape ``(H, S, A_0, ..., A_{N-1}, K)``
        Successor states in ``0..S-1`` (for a
        [`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame], whose kernel is
        stationary, shape ``(S, A_0, ..., A_{N-1}, K)``).
    probabilities : array_like, the shape of ``successors``
        Their probabilities; each row sums to 1. Padding entries have probability 0.
    """

    successors: np.ndarray
    probabilities: np.ndarray

    def __post_init__(self) -> None:
        succ = np.asarray(self.successors)
        if succ.dtype == bool or not np.issubdtype(succ.dtype, np.integer):
            raise GameValidationError(f"transition_successors: expected an integer array, got dtype {succ.dtype}")
        probs = np.asarray(self.probabilities)
        if probs.dtype == object or not (np.issubdtype(probs.dtype, np.number) and probs.dtype != bool):
            raise GameValidationError(f"transition_probabilities: expected a numeric array, got dtype {probs.dtype}")
        if succ.ndim < 3:  # (S, A_0, K) is a one-player discounted game's kernel
            raise GameValidationError(
                "transition_successors: expected shape (H, S, A_0, ..., A_(N-1), K), or (S, A_0, ..., A_(N-1), K) for a "
                f"discounted game, with at least 3 axes, got shape {succ.shape}"
            )
        if probs.shape != succ.shape:
            raise GameValidationError(
                f"transition_probabilities: shape {probs.shape} differs from transition_successors' shape {succ.shape}"
            )
        if succ.shape[-1] < 1:
            raise GameValidationError("transition_successors: the number of successors K (last axis) must be at least 1")
        if succ.dtype.kind == "u" and succ.size and int(succ.max()) > np.iinfo(np.int64).max:
            idx = _first_index(succ > np.iinfo(np.int64).max)
            raise GameValidationError(f"transition_successors{list(idx)} = {int(succ[idx])} is out of range")
        succ = np.array(succ, dtype=np.int64, copy=True)
        probs = np.array(probs, dtype=np.float64, copy=True)
        _check_finite(probs, "transition_probabilities")
        neg_state = succ < 0
        if neg_state.any():
            idx = _first_index(neg_state)
            raise GameValidationError(f"transition_successors{list(idx)} = {int(succ[idx])} is negative")
        _check_rows(probs, "transition_probabilities")
        # A successor listed twice with positive probability is ambiguous input (did the author
        # mean the sum?): refuse it rather than add silently. Padding (probability 0) may repeat.
        k = succ.shape[-1]
        keyed = np.sort(np.where(probs > 0.0, succ, -1 - np.arange(k)), axis=-1)
        dup = keyed[..., 1:] == keyed[..., :-1]
        if dup.any():
            idx = _first_index(dup)
            row = idx[:-1]
            raise GameValidationError(
                f"transition_successors{list(row)}: successor state {int(keyed[idx])} is listed twice with positive probability"
            )
        succ.setflags(write=False)
        probs.setflags(write=False)
        object.__setattr__(self, "successors", succ)
        object.__setattr__(self, "probabilities", probs)

    def __reduce__(self):
        # Rebuild through the constructor: re-validated, and the arrays read-only again.
        return (SparseTransitions, (self.successors, self.probabilities))

    @property
    def num_successors(self) -> int:
        """``K``, the entries per row (including padding)."""
        return int(self.successors.shape[-1])

    @classmethod
    def from_dense(cls, transitions: np.ndarray) -> SparseTransitions:
        """The canonical sparse form of a dense ``(..., S)`` kernel.

        ``K`` is the largest number of positive entries of a row; each row lists its successors
        in increasing order, then pads with state 0 at probability 0.
        """
        dense = np.asarray(transitions, dtype=np.float64)
        positive = dense > 0.0
        k = max(int(positive.sum(axis=-1).max(initial=0)), 1)
        # Stable sort on "is zero": positive entries first, each group in state order.
        order = np.argsort(~positive, axis=-1, kind="stable")[..., :k]
        probs = np.take_along_axis(dense, order, axis=-1)
        succ = np.where(probs > 0.0, order, 0)
        return cls(succ, probs)

    def canonical(self) -> SparseTransitions:
        """The same kernel in the canonical form of `from_dense` (equal kernels, equal arrays)."""
        probs = self.probabilities
        positive = probs > 0.0
        k = max(int(positive.sum(axis=-1).max(initial=0)), 1)
        big = np.iinfo(np.int64).max
        order = np.argsort(np.where(positive, self.successors, big), axis=-1, kind="stable")[..., :k]
        p = np.take_along_axis(probs, order, axis=-1)
        s = np.where(p > 0.0, np.take_along_axis(self.successors, order, axis=-1), 0)
        return SparseTransitions(s, p)

    def to_dense(self, num_states: int) -> np.ndarray:
        """The dense ``(H, S, A..., S)`` array (``num_states`` is ``S``)."""
        dense = np.zeros(self.successors.shape[:-1] + (num_states,), dtype=np.float64)
        rows = dense.reshape(-1, num_states)
        flat_succ = self.successors.reshape(rows.shape[0], -1)
        flat_prob = self.probabilities.reshape(rows.shape[0], -1)
        np.add.at(rows, (np.arange(rows.shape[0])[:, None], flat_succ), flat_prob)
        return dense


def validate_rewards(value, max_entries: int, *, stationary: bool) -> tuple[np.ndarray, int, tuple[int, ...]]:
    """The checked float64 rewards and their ``S`` and ``A``, naming the first violation.

    Finite-horizon rewards have shape ``(H, N, S, A_0, ..., A_{N-1})``; ``stationary`` (a
    discounted game) ``(N, S, A_0, ..., A_{N-1})``. Every entry finite and in ``[0, 1]``.
    """
    rewards = _as_float_array(value, "rewards", max_entries)
    lead = 2 if stationary else 3  # the axes before the action axes
    axes = "(N, S, A_0, ..., A_(N-1))" if stationary else "(H, N, S, A_0, ..., A_(N-1))"
    if rewards.ndim < lead + 1:
        raise GameValidationError(f"rewards: expected shape {axes} with at least {lead + 1} axes, got shape {rewards.shape}")
    num_players, num_states = rewards.shape[lead - 2 : lead]
    num_actions = tuple(int(a) for a in rewards.shape[lead:])
    if num_players != len(num_actions):
        raise GameValidationError(
            f"rewards: axis {lead - 2} has {num_players} players but there are {len(num_actions)} action axes "
            f"(shape {rewards.shape}; expected {axes})"
        )
    labels: list[tuple[str, int]] = [("num_players N", num_players), ("num_states S", num_states)]
    if not stationary:
        labels.insert(0, ("horizon H", rewards.shape[0]))
    for label, size in labels:
        if size < 1:
            raise GameValidationError(f"rewards: {label} must be at least 1, got {size}")
    for i, a in enumerate(num_actions):
        if a < 1:
            raise GameValidationError(f"rewards: num_actions[{i}] must be at least 1, got {a}")
    _check_finite(rewards, "rewards")
    bad = (rewards < 0.0) | (rewards > 1.0)
    if bad.any():
        idx = _first_index(bad)
        raise GameValidationError(f"rewards{list(idx)} = {float(rewards[idx])!r} is outside [0, 1]")
    rewards.setflags(write=False)
    return rewards, int(num_states), num_actions


def validate_kernel(
    transitions, rows: tuple[int, ...], max_entries: int, *, stationary: bool
) -> tuple[np.ndarray | None, SparseTransitions | None]:
    """The checked kernel, dense (read-only float64) or sparse, of rows ``rows`` (``(H, S, A...)``,
    or ``(S, A...)`` for a ``stationary`` one); the last entry of ``rows`` after ``S`` is ``A_{N-1}``."""
    num_states = rows[0] if stationary else rows[1]
    lead = "S, A_0, ..., A_(N-1)" if stationary else "H, S, A_0, ..., A_(N-1)"
    if isinstance(transitions, SparseTransitions):
        sparse = transitions
        if sparse.successors.shape[:-1] != rows:
            raise GameValidationError(
                f"transition_successors: expected shape ({lead}, K) = {rows + ('K',)}, got {sparse.successors.shape}"
            )
        for key in ("successors", "probabilities"):
            size = getattr(sparse, key).size
            if size > max_entries:
                raise GameValidationError(
                    f"transition_{key}: {size} entries exceed the limit of {max_entries} (raise max_entries to allow)"
                )
        out = sparse.successors >= num_states
        if out.any():
            idx = _first_index(out)
            raise GameValidationError(
                f"transition_successors{list(idx)} = {int(sparse.successors[idx])} is out of range 0..{num_states - 1}"
            )
        return None, sparse
    dense = _as_float_array(transitions, "transitions", max_entries)
    expected = (*rows, num_states)
    if dense.shape != expected:
        raise GameValidationError(f"transitions: expected shape ({lead}, S) = {expected}, got {dense.shape}")
    _check_finite(dense, "transitions")
    _check_rows(dense, "transitions")
    dense.setflags(write=False)
    return dense, None


class MarkovGame:
    """An immutable, validated finite-horizon N-player general-sum Markov game.

    Parameters
    ----------
    rewards : array_like, shape ``(H, N, S, A_0, ..., A_{N-1})``
        ``rewards[h, i, s, a]`` is player ``i``'s reward at step ``h`` in state ``s`` under the
        joint action ``a``; every entry in ``[0, 1]``.
    transitions : array_like, shape ``(H, S, A_0, ..., A_{N-1}, S)``, or [`SparseTransitions`][markovgames.games.SparseTransitions]
        ``transitions[h, s, a, s']`` is ``P_h(s' | s, a)``; a [`SparseTransitions`][markovgames.games.SparseTransitions] gives
        the same kernel as successor lists (large games: memory ``O(H S prod(A) K)`` rather than
        ``O(H S^2 prod(A))``). The compiled dynamics use the form given.
    initial_state : int
        The fixed initial state ``s_1`` (default 0).
    name, description : str
        Free text.
    max_entries : int
        Refuse any array (rewards, transitions, or each sparse array) with more entries.
    units : AffineRescaling, optional
        The map ``r01 = scale * r + offset`` from the game's original payoffs to ``rewards``
        (`markovgames.games.AffineRescaling`; default the identity), so that values and gaps can
        be reported in the original units too. It does not change the dynamics.

    Raises
    ------
    GameValidationError
        On any inconsistency; the message names the field and the index of the first violation.
    """

    __slots__ = (
        "_rewards",
        "_dense",
        "_sparse",
        "_initial_state",
        "_name",
        "_description",
        "_max_entries",
        "_units",
        "_constant_sum",
    )
    # The slots' types. One of the two kernel forms is always set (the sparse form of a sparse
    # game, the dense form of a dense one); a sparse game also caches its dense form when asked.
    _rewards: np.ndarray
    _dense: np.ndarray | None
    _sparse: SparseTransitions | None
    _initial_state: int
    _name: str
    _description: str
    _max_entries: int
    _units: AffineRescaling
    _constant_sum: bool | None

    def __init__(
        self,
        rewards,
        transitions,
        initial_state: int = 0,
        name: str = "unnamed",
        description: str = "",
        max_entries: int = MAX_GAME_ENTRIES,
        *,
        units: AffineRescaling | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "_max_entries", int(max_entries))
        if units is None:
            units = IDENTITY_UNITS
        if not isinstance(units, AffineRescaling):
            raise GameValidationError(f"units: expected a markovgames.games.AffineRescaling, got {type(units).__name__}")
        set_(self, "_units", units)
        set_(self, "_constant_sum", None)  # computed on first use (`is_constant_sum`)
        rewards, num_states, num_actions = validate_rewards(rewards, self._max_entries, stationary=False)
        horizon = int(rewards.shape[0])
        dense, sparse = validate_kernel(transitions, (horizon, num_states, *num_actions), self._max_entries, stationary=False)
        if isinstance(initial_state, bool) or not isinstance(initial_state, (int, np.integer)):
            raise GameValidationError(f"initial_state: expected an integer, got {initial_state!r}")
        if not 0 <= int(initial_state) < num_states:
            raise GameValidationError(f"initial_state = {int(initial_state)} is out of range 0..{num_states - 1}")
        set_(self, "_rewards", rewards)
        set_(self, "_dense", dense)
        set_(self, "_sparse", sparse)
        set_(self, "_initial_state", int(initial_state))
        set_(self, "_name", str(name))
        set_(self, "_description", str(description))

    def __setattr__(self, key, value) -> None:
        raise AttributeError(f"MarkovGame is immutable: cannot set {key!r}")

    def __reduce__(self):
        return (_rebuild, (self._arguments(), self._units))

    # ------------------------------------------------------------------ data
    @property
    def rewards(self) -> np.ndarray:
        """``(H, N, S, A_0, ..., A_{N-1})`` read-only float64."""
        return self._rewards

    @property
    def initial_state(self) -> int:
        return self._initial_state

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def is_constant_sum(self) -> bool:
        """Whether the players' rewards sum, at every step, to one constant over all states and joint
        actions (to 1e-12): then ``sum_i V_i`` is the same for every policy (two players: a zero-sum
        game up to an affine map), and the sum of the players' best-response gains is the duality gap."""
        if self._constant_sum is None:  # once per game: every checkpoint's record asks
            total = self._rewards.sum(axis=1)  # (H, S, A...)
            flat = total.reshape(total.shape[0], -1)
            object.__setattr__(self, "_constant_sum", bool(np.all(flat.max(axis=1) - flat.min(axis=1) <= 1e-12)))
        return bool(self._constant_sum)

    @property
    def units(self) -> AffineRescaling:
        """The map from the game's original payoffs to its rewards (the identity if it has none)."""
        return self._units

    def with_units(self, units: AffineRescaling | None) -> MarkovGame:
        """The same game with the map ``units`` from its original payoffs (``None``: the identity)."""
        return MarkovGame(*self._arguments(), units=units)

    def _arguments(self) -> tuple:
        transitions = self._sparse if self._sparse is not None else self._dense
        return (self._rewards, transitions, self._initial_state, self._name, self._description, self._max_entries)

    @property
    def is_sparse(self) -> bool:
        """Whether the game was given (and the dynamics run) with [`SparseTransitions`][markovgames.games.SparseTransitions]."""
        return self._sparse is not None

    @property
    def transitions(self) -> np.ndarray:
        """The dense ``(H, S, A..., S)`` kernel (built once from the sparse form for a sparse game).

        Raises [`GameValidationError`][markovgames.games.GameValidationError] when a sparse game's dense array would exceed
        ``max_entries``: such a game is only usable where the sparse form is (the dynamics).
        """
        dense = self._dense
        if dense is None:
            if self._sparse is None:  # unreachable: __init__ stores one of the two forms
                raise AssertionError("MarkovGame holds neither a dense nor a sparse kernel")
            entries = self.horizon * self.num_states * self.num_joint_actions * self.num_states
            if entries > self._max_entries:
                raise GameValidationError(
                    f"transitions: the dense form of this sparse game would have {entries} entries, more than "
                    f"max_entries = {self._max_entries}; this operation needs dense transitions"
                )
            dense = self._sparse.to_dense(self.num_states)
            dense.setflags(write=False)
            object.__setattr__(self, "_dense", dense)
        return dense

    @property
    def sparse_transitions(self) -> SparseTransitions:
        """The kernel as [`SparseTransitions`][markovgames.games.SparseTransitions] (the canonical form, for a dense game)."""
        if self._sparse is None:
            return SparseTransitions.from_dense(self.transitions)
        return self._sparse

    def to_sparse(self) -> MarkovGame:
        """The same game with [`SparseTransitions`][markovgames.games.SparseTransitions] (canonical form)."""
        sparse = self._sparse.canonical() if self._sparse is not None else SparseTransitions.from_dense(self.transitions)
        return MarkovGame(
            self._rewards, sparse, self._initial_state, self._name, self._description, self._max_entries, units=self._units
        )

    def to_dense(self) -> MarkovGame:
        """The same game with a dense transition array."""
        return MarkovGame(
            self._rewards,
            self.transitions,
            self._initial_state,
            self._name,
            self._description,
            self._max_entries,
            units=self._units,
        )

    def transition_bytes(self) -> bytes:
        """The kernel's bytes in its stored form (for digests): dense float64, or successors and probabilities."""
        # "+ 0.0" turns -0.0 into 0.0: games that compare equal hash equal.
        if self._sparse is not None:
            return b"sparse" + self._sparse.successors.tobytes() + (self._sparse.probabilities + 0.0).tobytes()
        return np.ascontiguousarray(self.transitions + 0.0, dtype="<f8").tobytes()

    # ------------------------------------------------------------------ sizes
    @property
    def horizon(self) -> int:
        """``H``, the number of steps per episode."""
        return int(self._rewards.shape[0])

    @property
    def num_players(self) -> int:
        """``N``."""
        return int(self._rewards.shape[1])

    @property
    def num_states(self) -> int:
        """``S``."""
        return int(self._rewards.shape[2])

    @property
    def num_actions(self) -> tuple[int, ...]:
        """``(A_0, ..., A_{N-1})``."""
        return tuple(int(a) for a in self._rewards.shape[3:])

    @property
    def num_joint_actions(self) -> int:
        """``prod_i A_i``."""
        return math.prod(self.num_actions)

    @property
    def shape_key(self) -> tuple[int, int, int, tuple[int, ...]]:
        """``(N, H, S, A)``: games with equal keys can share one compiled, batched run."""
        return (self.num_players, self.horizon, self.num_states, self.num_actions)

    def __repr__(self) -> str:
        sparse = f", sparse K={self._sparse.num_successors}" if self._sparse is not None else ""
        return (
            f"MarkovGame(name={self.name!r}, N={self.num_players}, H={self.horizon}, "
            f"S={self.num_states}, A={self.num_actions}, initial_state={self.initial_state}{sparse})"
        )

    def __eq__(self, other: object) -> bool:
        """Equal sizes, texts, units, initial state, rewards and kernel (a dense and a sparse form of one kernel are equal)."""
        if not isinstance(other, MarkovGame):
            return NotImplemented
        if not (
            self.units == other.units
            and self.name == other.name
            and self.description == other.description
            and self.initial_state == other.initial_state
            and self.rewards.shape == other.rewards.shape
            and np.array_equal(self.rewards, other.rewards)
        ):
            return False
        if self._dense is not None and other._dense is not None:
            return bool(np.array_equal(self._dense, other._dense))
        a, b = self.sparse_transitions.canonical(), other.sparse_transitions.canonical()
        return a.successors.shape == b.successors.shape and bool(
            np.array_equal(a.successors, b.successors) and np.array_equal(a.probabilities, b.probabilities)
        )

    __hash__ = None  # type: ignore[assignment]


def _rebuild(arguments: tuple, units: AffineRescaling) -> MarkovGame:
    """Unpickle a game (a sweep's worker receives its games pickled)."""
    return MarkovGame(*arguments, units=units)
