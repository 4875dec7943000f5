"""The finite-horizon Markov game model.

An ``N``-player episodic Markov game (Mao et al. 2024, Section 2) is
``G = (N, H, S, {A_i}, {r_i}, P)`` with a fixed initial state ``s_1``.

Shape convention (used everywhere in markovgames, absolute player order,
never "own action first"; code is 0-based, the paper's step ``h`` is code's ``h-1``):

* ``rewards[h, i, s, a_0, ..., a_{N-1}]`` in ``[0, 1]``: shape ``(H, N, S, A_0, ..., A_{N-1})``;
* ``transitions[h, s, a_0, ..., a_{N-1}, s']``: shape ``(H, S, A_0, ..., A_{N-1}, S)``, each
  row ``transitions[h, s, a, :]`` a probability vector;
* ``initial_state`` in ``0..S-1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MarkovGame", "GameValidationError", "PROBABILITY_TOLERANCE", "MAX_GAME_ENTRIES"]

#: Transition rows must sum to 1 within this absolute tolerance.
PROBABILITY_TOLERANCE = 1e-9

#: Default refusal limit on the number of array entries (rewards + transitions) of one game.
#: About 2 GiB of float64; a caller can pass a larger ``max_entries``.
MAX_GAME_ENTRIES = 2**28


class GameValidationError(ValueError):
    """A game (or game file) is malformed. The message names the field and the first bad index."""


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(k) for k in np.argwhere(mask)[0])


@dataclass(frozen=True, eq=False)
class MarkovGame:
    """An immutable, validated finite-horizon N-player general-sum Markov game.

    Parameters
    ----------
    rewards : array_like, shape ``(H, N, S, A_0, ..., A_{N-1})``
        ``rewards[h, i, s, a]`` is player ``i``'s reward at step ``h`` in state ``s`` under the
        joint action ``a``; every entry in ``[0, 1]``.
    transitions : array_like, shape ``(H, S, A_0, ..., A_{N-1}, S)``
        ``transitions[h, s, a, s']`` is ``P_h(s' | s, a)``.
    initial_state : int
        The fixed initial state ``s_1`` (default 0).
    name, description : str
        Free text.

    Raises
    ------
    GameValidationError
        On any inconsistency; the message names the field and the index of the first violation.
    """

    rewards: np.ndarray
    transitions: np.ndarray
    initial_state: int = 0
    name: str = "unnamed"
    description: str = ""
    max_entries: int = field(default=MAX_GAME_ENTRIES, repr=False, compare=False)

    def __post_init__(self) -> None:
        rewards = self._as_float_array(self.rewards, "rewards")
        transitions = self._as_float_array(self.transitions, "transitions")
        if rewards.ndim < 4:
            raise GameValidationError(
                f"rewards: expected shape (H, N, S, A_0, ..., A_(N-1)) with at least 4 axes, got shape {rewards.shape}"
            )
        horizon, num_players, num_states = rewards.shape[:3]
        num_actions = rewards.shape[3:]
        if num_players != len(num_actions):
            raise GameValidationError(
                f"rewards: axis 1 has {num_players} players but there are {len(num_actions)} action axes "
                f"(shape {rewards.shape}; expected (H, N, S, A_0, ..., A_(N-1)))"
            )
        for name, size in (("horizon H", horizon), ("num_players N", num_players), ("num_states S", num_states)):
            if size < 1:
                raise GameValidationError(f"rewards: {name} must be at least 1, got {size}")
        for i, a in enumerate(num_actions):
            if a < 1:
                raise GameValidationError(f"rewards: num_actions[{i}] must be at least 1, got {a}")
        expected_t = (horizon, num_states, *num_actions, num_states)
        if transitions.shape != expected_t:
            raise GameValidationError(
                f"transitions: expected shape (H, S, A_0, ..., A_(N-1), S) = {expected_t}, got {transitions.shape}"
            )
        self._check_finite(rewards, "rewards")
        self._check_finite(transitions, "transitions")
        bad = (rewards < 0.0) | (rewards > 1.0)
        if bad.any():
            idx = _first_index(bad)
            raise GameValidationError(f"rewards{list(idx)} = {float(rewards[idx])!r} is outside [0, 1]")
        neg = transitions < 0.0
        if neg.any():
            idx = _first_index(neg)
            raise GameValidationError(f"transitions{list(idx)} = {float(transitions[idx])!r} is negative")
        row_sums = transitions.sum(axis=-1)
        off = np.abs(row_sums - 1.0) > PROBABILITY_TOLERANCE
        if off.any():
            idx = _first_index(off)
            raise GameValidationError(
                f"transitions{list(idx)} sums to {float(row_sums[idx])!r}, not 1 (tolerance {PROBABILITY_TOLERANCE:g})"
            )
        if isinstance(self.initial_state, bool) or not isinstance(self.initial_state, (int, np.integer)):
            raise GameValidationError(f"initial_state: expected an integer, got {self.initial_state!r}")
        if not 0 <= int(self.initial_state) < num_states:
            raise GameValidationError(
                f"initial_state = {int(self.initial_state)} is out of range 0..{num_states - 1}"
            )
        rewards.setflags(write=False)
        transitions.setflags(write=False)
        object.__setattr__(self, "rewards", rewards)
        object.__setattr__(self, "transitions", transitions)
        object.__setattr__(self, "initial_state", int(self.initial_state))

    def _as_float_array(self, value, field_name: str) -> np.ndarray:
        arr = np.asarray(value)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise GameValidationError(f"{field_name}: expected a numeric array, got dtype {arr.dtype}")
        if arr.size > self.max_entries:
            raise GameValidationError(
                f"{field_name}: {arr.size} entries exceed the limit of {self.max_entries} (raise max_entries to allow)"
            )
        # Always copy: the game owns its arrays and marks them read-only.
        return np.array(arr, dtype=np.float64, copy=True)

    @staticmethod
    def _check_finite(arr: np.ndarray, field_name: str) -> None:
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = _first_index(bad)
            raise GameValidationError(f"{field_name}{list(idx)} = {float(arr[idx])!r} is not finite")

    # ------------------------------------------------------------------ sizes
    @property
    def horizon(self) -> int:
        """``H``, the number of steps per episode."""
        return int(self.rewards.shape[0])

    @property
    def num_players(self) -> int:
        """``N``."""
        return int(self.rewards.shape[1])

    @property
    def num_states(self) -> int:
        """``S``."""
        return int(self.rewards.shape[2])

    @property
    def num_actions(self) -> tuple[int, ...]:
        """``(A_0, ..., A_{N-1})``."""
        return tuple(int(a) for a in self.rewards.shape[3:])

    @property
    def num_joint_actions(self) -> int:
        """``prod_i A_i``."""
        return math.prod(self.num_actions)

    @property
    def shape_key(self) -> tuple[int, int, int, tuple[int, ...]]:
        """``(N, H, S, A)``: games with equal keys can share one compiled, batched run."""
        return (self.num_players, self.horizon, self.num_states, self.num_actions)

    def __repr__(self) -> str:
        return (
            f"MarkovGame(name={self.name!r}, N={self.num_players}, H={self.horizon}, "
            f"S={self.num_states}, A={self.num_actions}, initial_state={self.initial_state})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MarkovGame):
            return NotImplemented
        return (
            self.name == other.name
            and self.description == other.description
            and self.initial_state == other.initial_state
            and self.rewards.shape == other.rewards.shape
            and np.array_equal(self.rewards, other.rewards)
            and np.array_equal(self.transitions, other.transitions)
        )

    __hash__ = None  # type: ignore[assignment]
