"""The discounted, infinite-horizon Markov game model.

An ``N``-player discounted Markov game (Shapley 1953; the setting of Wei, Lee, Zhang and Luo
2021, among others: docs/discounted.md) is
``G = (N, S, {A_i}, {r_i}, P, gamma, rho)`` with *stationary* dynamics: one reward function and
one transition kernel for every time step, a discount ``gamma`` in ``[0, 1)`` and an initial
state (or an initial distribution ``rho`` over states).

Shape convention (absolute player order, as for [`MarkovGame`][markovgames.games.MarkovGame], without the
step axis):

* ``rewards[i, s, a_0, ..., a_{N-1}]`` in ``[0, 1]``: shape ``(N, S, A_0, ..., A_{N-1})``;
* ``transitions[s, a_0, ..., a_{N-1}, s']``: shape ``(S, A_0, ..., A_{N-1}, S)``, each row a
  probability vector; or the same kernel as [`SparseTransitions`][markovgames.games.SparseTransitions] of shape
  ``(S, A_0, ..., A_{N-1}, K)``;
* ``initial_distribution[s]``: shape ``(S,)``, a probability vector (a point mass for an initial state).

Units of values. Player ``i``'s value of a stationary policy ``pi`` is the expected discounted
return ``V_i^pi(rho) = E[sum_{t>=0} gamma^t r_i(s_t, a_t)]`` with ``s_0 ~ rho``: a number in
``[0, 1/(1-gamma)]``. This is the convention of every value, gap and Q-function markovgames
reports for a discounted game; the *normalised* value ``(1 - gamma) V`` in ``[0, 1]`` that some
papers use is ``DiscountedMarkovGame.normalised(V)`` (check which convention a paper's bound is
stated in before comparing numbers: the two differ by the factor ``1 / (1 - gamma)``).
"""

from __future__ import annotations

import math

import numpy as np

from ._model import (
    MAX_GAME_ENTRIES,
    PROBABILITY_TOLERANCE,
    GameValidationError,
    SparseTransitions,
    validate_kernel,
    validate_rewards,
)
from ._units import IDENTITY_UNITS, AffineRescaling

__all__ = ["DiscountedMarkovGame", "check_discount", "FiniteHorizonOnlyError", "require_finite_horizon"]


class FiniteHorizonOnlyError(GameValidationError, TypeError):
    """A discounted game was given to a function (or command) that is defined for finite-horizon games only."""


def require_finite_horizon(game, what: str) -> None:
    """Refuse a [`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame] where only a finite-horizon game has a meaning."""
    if isinstance(game, DiscountedMarkovGame):
        raise FiniteHorizonOnlyError(
            f"{what}: {game.name!r} is a discounted game (discount = {game.discount!r}); this is defined for "
            "finite-horizon games (MarkovGame) only"
        )


def check_discount(value, field: str = "discount") -> float:
    """``value`` as a float in ``[0, 1)``, or a `GameValidationError` naming ``field``.

    A bool, a string or any other non-number is refused (a string ``"0.9"`` in a file is a
    typing mistake, not a number); so are NaN, infinities, negatives and ``1`` or more (a
    discount of 1 is an undiscounted infinite-horizon game, whose values diverge).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        if isinstance(value, (bool, np.bool_)):
            shown = f"a boolean ({'true' if value else 'false'})"
        elif isinstance(value, str):
            shown = f"a string ({value[:20]!r})"
        else:
            shown = "null" if value is None else type(value).__name__
        raise GameValidationError(f"{field}: expected a number in [0, 1), got {shown}")
    gamma = float(value)
    if not math.isfinite(gamma):
        raise GameValidationError(f"{field} = {gamma!r} is not a finite number (expected a number in [0, 1))")
    if gamma < 0.0:
        raise GameValidationError(f"{field} = {gamma!r} is negative (expected a number in [0, 1))")
    if gamma >= 1.0:
        raise GameValidationError(
            f"{field} = {gamma!r} is not below 1 (expected a number in [0, 1): with a discount of 1 or more "
            "the values of an infinite-horizon game diverge)"
        )
    return gamma


def _initial_distribution(initial_state, initial_distribution, num_states: int) -> tuple[int | None, np.ndarray]:
    if initial_state is not None and initial_distribution is not None:
        raise GameValidationError("initial_state and initial_distribution are both given; a game has one of the two")
    if initial_distribution is None:
        state = 0 if initial_state is None else initial_state
        if isinstance(state, (bool, np.bool_)) or not isinstance(state, (int, np.integer)):
            raise GameValidationError(f"initial_state: expected an integer, got {state!r}")
        if not 0 <= int(state) < num_states:
            raise GameValidationError(f"initial_state = {int(state)} is out of range 0..{num_states - 1}")
        rho = np.zeros(num_states)
        rho[int(state)] = 1.0
        rho.setflags(write=False)
        return int(state), rho
    arr = np.asarray(initial_distribution)
    if arr.dtype == object or arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise GameValidationError(f"initial_distribution: expected a numeric array, got dtype {arr.dtype}")
    rho = np.array(arr, dtype=np.float64, copy=True)
    if rho.shape != (num_states,):
        raise GameValidationError(f"initial_distribution: expected shape (S,) = ({num_states},), got {rho.shape}")
    bad = ~np.isfinite(rho)
    if bad.any():
        k = int(np.argwhere(bad)[0, 0])
        raise GameValidationError(f"initial_distribution[{k}] = {float(rho[k])!r} is not finite")
    if (rho < 0).any():
        k = int(np.argwhere(rho < 0)[0, 0])
        raise GameValidationError(f"initial_distribution[{k}] = {float(rho[k])!r} is negative")
    if abs(float(rho.sum()) - 1.0) > PROBABILITY_TOLERANCE:
        raise GameValidationError(
            f"initial_distribution sums to {float(rho.sum())!r}, not 1 (tolerance {PROBABILITY_TOLERANCE:g})"
        )
    rho.setflags(write=False)
    return None, rho


class DiscountedMarkovGame:
    """An immutable, validated discounted infinite-horizon N-player general-sum Markov game.

    The stationary counterpart of [`MarkovGame`][markovgames.games.MarkovGame] (the two share their
    validation; the module docstring gives the shapes and the units of values). Functions that
    only have a meaning for a finite horizon refuse it with
    [`FiniteHorizonOnlyError`][markovgames.games.FiniteHorizonOnlyError]; it has no ``horizon``.

    Parameters
    ----------
    rewards : array_like, shape ``(N, S, A_0, ..., A_{N-1})``
        ``rewards[i, s, a]``, every entry in ``[0, 1]``.
    transitions : array_like, shape ``(S, A_0, ..., A_{N-1}, S)``, or [`SparseTransitions`][markovgames.games.SparseTransitions]
        ``transitions[s, a, s'] = P(s' | s, a)`` (sparse: shape ``(S, A_0, ..., A_{N-1}, K)``).
    discount : float
        ``gamma`` in ``[0, 1)``.
    initial_state : int, optional
        The initial state ``s_0`` (default 0 when no ``initial_distribution`` is given).
    initial_distribution : array_like, shape ``(S,)``, optional
        An initial distribution ``rho`` instead of a state.
    name, description, max_entries, units
        As for [`MarkovGame`][markovgames.games.MarkovGame]. ``units`` maps each reward
        ``r01 = scale r + offset``; a discounted return then maps as
        ``V01 = scale V + offset / (1 - gamma)`` (`original_value`).
    """

    __slots__ = (
        "_rewards",
        "_dense",
        "_sparse",
        "_discount",
        "_initial_state",
        "_initial_distribution",
        "_name",
        "_description",
        "_max_entries",
        "_units",
    )
    _rewards: np.ndarray
    _dense: np.ndarray | None
    _sparse: SparseTransitions | None
    _discount: float
    _initial_state: int | None
    _initial_distribution: np.ndarray
    _name: str
    _description: str
    _max_entries: int
    _units: AffineRescaling

    def __init__(
        self,
        rewards,
        transitions,
        discount: float,
        initial_state: int | None = None,
        *,
        initial_distribution=None,
        name: str = "unnamed",
        description: str = "",
        max_entries: int = MAX_GAME_ENTRIES,
        units: AffineRescaling | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "_max_entries", int(max_entries))
        units = IDENTITY_UNITS if units is None else units
        if not isinstance(units, AffineRescaling):
            raise GameValidationError(f"units: expected a markovgames.games.AffineRescaling, got {type(units).__name__}")
        set_(self, "_units", units)
        set_(self, "_discount", check_discount(discount))
        rewards, num_states, num_actions = validate_rewards(rewards, self._max_entries, stationary=True)
        dense, sparse = validate_kernel(transitions, (num_states, *num_actions), self._max_entries, stationary=True)
        state, rho = _initial_distribution(initial_state, initial_distribution, num_states)
        set_(self, "_rewards", rewards)
        set_(self, "_dense", dense)
        set_(self, "_sparse", sparse)
        set_(self, "_initial_state", state)
        set_(self, "_initial_distribution", rho)
        set_(self, "_name", str(name))
        set_(self, "_description", str(description))

    def __setattr__(self, key, value) -> None:
        raise AttributeError(f"DiscountedMarkovGame is immutable: cannot set {key!r}")

    def __reduce__(self):
        return (_rebuild, (self._arguments(),))

    def _arguments(self) -> dict:
        transitions = self._sparse if self._sparse is not None else self._dense
        initial = (
            {"initial_state": self._initial_state}
            if self._initial_state is not None
            else {"initial_distribution": self._initial_distribution}
        )
        return dict(
            rewards=self._rewards,
            transitions=transitions,
            discount=self._discount,
            name=self._name,
            description=self._description,
            max_entries=self._max_entries,
            units=self._units,
            **initial,
        )

    def _replace(self, **changes) -> DiscountedMarkovGame:
        return DiscountedMarkovGame(**{**self._arguments(), **changes})

    # ------------------------------------------------------------------ data
    @property
    def rewards(self) -> np.ndarray:
        """``(N, S, A_0, ..., A_{N-1})`` read-only float64."""
        return self._rewards

    @property
    def discount(self) -> float:
        """``gamma`` in ``[0, 1)``."""
        return self._discount

    @property
    def effective_horizon(self) -> float:
        """``1 / (1 - gamma)``, the largest discounted return of rewards in ``[0, 1]``."""
        return 1.0 / (1.0 - self._discount)

    @property
    def horizon(self) -> int:
        """A discounted game has no horizon: always raises [`FiniteHorizonOnlyError`][markovgames.games.FiniteHorizonOnlyError].

        Code written for finite-horizon games reads ``game.horizon``; this makes it refuse a
        discounted game by name instead of misreading it.
        """
        raise FiniteHorizonOnlyError(
            f"horizon: {self._name!r} is a discounted game (discount = {self._discount!r}) and has no horizon; "
            "this is defined for finite-horizon games (MarkovGame) only"
        )

    @property
    def initial_state(self) -> int | None:
        """The initial state, or ``None`` when the game was given an initial distribution."""
        return self._initial_state

    @property
    def initial_distribution(self) -> np.ndarray:
        """``rho``, shape ``(S,)`` (a point mass for an initial state)."""
        return self._initial_distribution

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
    def units(self) -> AffineRescaling:
        return self._units

    def with_units(self, units: AffineRescaling | None) -> DiscountedMarkovGame:
        return self._replace(units=units if units is not None else IDENTITY_UNITS)

    def original_value(self, v01):
        """A discounted return of the ``[0, 1]`` rewards -> the original units: ``(V01 - offset/(1-gamma)) / scale``."""
        return (np.asarray(v01, dtype=np.float64) - self._units.offset * self.effective_horizon) / self._units.scale

    def normalised(self, value):
        """``(1 - gamma) * value``: a discounted return (or gap) in the normalised convention, in ``[0, 1]``."""
        return (1.0 - self._discount) * np.asarray(value, dtype=np.float64)

    @property
    def is_constant_sum(self) -> bool:
        """Whether the players' rewards sum to one constant over all states and joint actions (to 1e-12)."""
        total = self._rewards.sum(axis=0).ravel()
        return bool(total.max() - total.min() <= 1e-12)

    @property
    def is_sparse(self) -> bool:
        return self._sparse is not None

    @property
    def transitions(self) -> np.ndarray:
        """The dense ``(S, A..., S)`` kernel (built from the sparse form, and refused past ``max_entries``)."""
        dense = self._dense
        if dense is None:
            if self._sparse is None:  # unreachable: __init__ stores one of the two forms
                raise AssertionError("DiscountedMarkovGame holds neither a dense nor a sparse kernel")
            entries = self.num_states * self.num_joint_actions * self.num_states
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
        if self._sparse is None:
            return SparseTransitions.from_dense(self.transitions)
        return self._sparse

    def to_sparse(self) -> DiscountedMarkovGame:
        sparse = self._sparse.canonical() if self._sparse is not None else SparseTransitions.from_dense(self.transitions)
        return self._replace(transitions=sparse)

    def to_dense(self) -> DiscountedMarkovGame:
        return self._replace(transitions=self.transitions)

    def transition_bytes(self) -> bytes:
        """The kernel's bytes in its stored form (for digests)."""
        if self._sparse is not None:
            return b"sparse" + self._sparse.successors.tobytes() + (self._sparse.probabilities + 0.0).tobytes()
        return np.ascontiguousarray(self.transitions + 0.0, dtype="<f8").tobytes()

    # ------------------------------------------------------------------ sizes
    @property
    def num_players(self) -> int:
        return int(self._rewards.shape[0])

    @property
    def num_states(self) -> int:
        return int(self._rewards.shape[1])

    @property
    def num_actions(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self._rewards.shape[2:])

    @property
    def num_joint_actions(self) -> int:
        return math.prod(self.num_actions)

    @property
    def shape_key(self) -> tuple[str, int, int, tuple[int, ...]]:
        """``("discounted", N, S, A)``: games with equal keys can share one compiled, batched run."""
        return ("discounted", self.num_players, self.num_states, self.num_actions)

    def __repr__(self) -> str:
        sparse = f", sparse K={self._sparse.num_successors}" if self._sparse is not None else ""
        start = f"initial_state={self._initial_state}" if self._initial_state is not None else "initial_distribution"
        return (
            f"DiscountedMarkovGame(name={self.name!r}, N={self.num_players}, gamma={self.discount!r}, "
            f"S={self.num_states}, A={self.num_actions}, {start}{sparse})"
        )

    def __eq__(self, other: object) -> bool:
        """Equal discount, sizes, texts, units, initial distribution, rewards and kernel."""
        if not isinstance(other, DiscountedMarkovGame):
            return NotImplemented
        if not (
            self.discount == other.discount
            and self.units == other.units
            and self.name == other.name
            and self.description == other.description
            and self.initial_state == other.initial_state
            and np.array_equal(self.initial_distribution, other.initial_distribution)
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


def _rebuild(arguments: dict) -> DiscountedMarkovGame:
    """Unpickle a discounted game (re-validated, arrays read-only again)."""
    return DiscountedMarkovGame(**arguments)
