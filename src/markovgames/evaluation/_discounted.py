r"""Exact evaluation of stationary product policies in discounted games.

A *stationary product policy* ``pi = (pi_0, ..., pi_{N-1})`` has every player ``i`` draw its action
from ``pi_i(. | s)`` (an array ``(S, A_i)``) in state ``s`` at every step, independently of the
others and of the past: the iterates of the learning dynamics on a discounted game, and their
average iterates, are such policies. Values are discounted returns
``V_i^pi(s) = E[sum_{t>=0} gamma^t r_i(s_t, a_t) | s_0 = s]`` (unnormalised: in
``[0, 1/(1-gamma)]``; ``game.normalised`` gives ``(1-gamma) V``), and ``V_i^pi(rho)`` is their mean
under the game's initial distribution.

What is computed, and how exactly:

* `discounted_policy_value`: the Bellman equation ``(I - gamma P_pi) V_i = r_{pi,i}`` by one
  linear solve (LAPACK): exact up to floating-point rounding (about ``1e-15 / (1-gamma)^2``
  relative).
* Best responses: against ``pi_{-i}`` player ``i`` faces an MDP (the others neither remember nor
  correlate), so a deterministic stationary policy is a best response among all of its policies
  (Puterman 1994, Chapter 6). ``method="policy_iteration"`` (the default) finds one by
  Howard's policy iteration: finitely many steps, each a linear solve, so the best-response value
  is exact up to rounding (an action replaces the current one only when it is better by more
  than ``1e-12`` times the value scale, so ties cannot cycle). ``method="value_iteration"``
  iterates the Bellman optimality operator until ``gamma / (1-gamma) ||V_{k+1} - V_k||_inf <=
  tolerance``, which bounds the error of the returned values by ``tolerance`` (Puterman 1994,
  Section 6.3); the result records that bound.
* The Nash gap ``max_i (V_i^{dagger, pi_{-i}}(rho) - V_i^pi(rho))`` and, for two-player
  constant-sum games, the duality gap ``sum_i (V_i^dagger(rho) - V_i^pi(rho))`` (the sum of the
  players' best-response gains, which is ``max_x' V_0(x', y) - min_y' V_0(x, y')`` in the
  zero-sum form). The per-state gap ``max_{i,s}`` (a state-wise measure) is reported too.

Only product policies are evaluated here: the two-player zero-sum results of Zhang et al. (2022)
and Yang and Ma (2023), stated for finite horizons, are about the state-wise (weighted) average of
the iterates, a product policy, and last-iterate results in discounted games (Wei et al. 2021)
about the iterates themselves. A correlated
output policy for discounted general-sum games is not implemented.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..games import DiscountedMarkovGame
from ..policies import DISTRIBUTION_TOLERANCE

__all__ = [
    "DiscountedValue",
    "DiscountedNashGapResult",
    "check_stationary_policy",
    "discounted_policy_value",
    "discounted_best_response",
    "discounted_nash_gap",
    "discounted_duality_gap",
    "solve_mdp",
    "BEST_RESPONSE_METHODS",
]

#: How `discounted_nash_gap` finds best responses.
BEST_RESPONSE_METHODS = ("policy_iteration", "value_iteration")

#: Value iteration's default bound on the error of the values it returns.
DEFAULT_TOLERANCE = 1e-10

_MAX_POLICY_ITERATIONS = 10_000
_MAX_VALUE_ITERATIONS = 10_000_000


def check_stationary_policy(game: DiscountedMarkovGame, policies) -> tuple[np.ndarray, ...]:
    """``policies[i]`` of shape ``(S, A_i)``, finite, each row a distribution (within
    `DISTRIBUTION_TOLERANCE`; entries within it below 0 are set to 0 and rows renormalised)."""
    if not isinstance(game, DiscountedMarkovGame):
        raise TypeError(f"game must be a DiscountedMarkovGame, got {type(game).__name__}")
    if isinstance(policies, np.ndarray) or not isinstance(policies, (list, tuple)):
        raise TypeError(f"policies must be a list or tuple of per-player arrays (S, A_i), got {type(policies).__name__}")
    if len(policies) != game.num_players:
        raise ValueError(f"policies: expected {game.num_players} arrays (one per player), got {len(policies)}")
    out = []
    for i, p in enumerate(policies):
        want = (game.num_states, game.num_actions[i])
        try:
            arr = np.array(p, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as err:
            raise ValueError(f"policies[{i}]: not an array of numbers ({err})") from None
        if arr.shape != want:
            raise ValueError(f"policies[{i}]: expected shape (S, A_{i}) = {want}, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            idx = tuple(int(k) for k in np.argwhere(~np.isfinite(arr))[0])
            raise ValueError(f"policies[{i}]{list(idx)} = {float(arr[idx])!r} is not finite")
        if np.any(arr < -DISTRIBUTION_TOLERANCE):
            idx = tuple(int(k) for k in np.argwhere(arr < -DISTRIBUTION_TOLERANCE)[0])
            raise ValueError(f"policies[{i}]{list(idx)} = {float(arr[idx])!r} is negative")
        sums = arr.sum(axis=-1)
        bad = np.abs(sums - 1.0) > DISTRIBUTION_TOLERANCE
        if bad.any():
            s = int(np.argwhere(bad)[0, 0])
            raise ValueError(f"policies[{i}][{s}] sums to {float(sums[s])!r}, not 1")
        arr = np.maximum(arr, 0.0)
        out.append(arr / arr.sum(axis=-1, keepdims=True))
    return tuple(out)


def _contract(array: np.ndarray, policies: Sequence[np.ndarray], skip: int | None) -> np.ndarray:
    """``sum_a prod_{k != skip} pi_k(a_k|s) array[s, a..., tail...]`` over every player's action but ``skip``'s."""
    num_players = len(policies)
    out = array
    for k in reversed(range(num_players)):  # from the last axis, so the earlier ones keep their place
        if k == skip:
            continue
        shape = [policies[k].shape[0]] + [1] * (out.ndim - 1)
        shape[1 + k] = policies[k].shape[1]
        out = (out * policies[k].reshape(shape)).sum(axis=1 + k, keepdims=True)
    return out


@dataclass(frozen=True, eq=False)
class DiscountedValue:
    """The values of a stationary product policy.

    Attributes
    ----------
    state_values : ndarray (N, S)
        ``V_i^pi(s)``.
    value : ndarray (N,)
        ``V_i^pi(rho) = sum_s rho(s) V_i^pi(s)``.
    """

    state_values: np.ndarray
    value: np.ndarray


def _bellman(game: DiscountedMarkovGame, policies: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``r_pi`` (N, S) and ``P_pi`` (S, S) of a product policy."""
    num_players, num_states = game.num_players, game.num_states
    rewards = np.stack([_contract(game.rewards[i], policies, None).reshape(num_states) for i in range(num_players)])
    kernel = _contract(game.transitions, policies, None).reshape(num_states, num_states)
    return rewards, kernel


def discounted_policy_value(game: DiscountedMarkovGame, policies: Sequence[np.ndarray]) -> DiscountedValue:
    """Every player's discounted value of the stationary product policy ``policies`` (one linear solve)."""
    pols = check_stationary_policy(game, policies)
    rewards, kernel = _bellman(game, pols)
    state_values = np.linalg.solve(np.eye(game.num_states) - game.discount * kernel, rewards.T).T
    return DiscountedValue(state_values, state_values @ game.initial_distribution)


def solve_mdp(
    rewards: np.ndarray,
    kernel: np.ndarray,
    discount: float,
    *,
    method: str = "policy_iteration",
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The optimal values ``V*`` (S,) of the MDP ``(rewards (S, A), kernel (S, A, S), discount)``, a
    deterministic optimal policy (S,) of action indices, and the bound on the values' error
    (0.0 for policy iteration, whose values are exact up to rounding)."""
    num_states, num_actions = rewards.shape
    states = np.arange(num_states)
    if method == "policy_iteration":
        policy = np.argmax(rewards, axis=1)
        identity = np.eye(num_states)
        for _ in range(_MAX_POLICY_ITERATIONS):
            values = np.linalg.solve(identity - discount * kernel[states, policy], rewards[states, policy])
            q = rewards + discount * kernel @ values
            current = q[states, policy]
            best = np.argmax(q, axis=1)
            # Switch only on a strict improvement: with ties, equal actions would cycle forever.
            threshold = 1e-12 * max(1.0, float(np.abs(values).max()))
            improve = q[states, best] > current + threshold
            if not improve.any():
                return values, policy, 0.0
            policy = np.where(improve, best, policy)
        raise RuntimeError(f"policy iteration did not stop within {_MAX_POLICY_ITERATIONS} iterations")
    if method != "value_iteration":
        raise ValueError(f"method: expected one of {', '.join(BEST_RESPONSE_METHODS)}, got {method!r}")
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance: expected a positive number, got {tolerance!r}")
    values = np.zeros(num_states)
    for _ in range(_MAX_VALUE_ITERATIONS):
        updated = (rewards + discount * kernel @ values).max(axis=1)
        bound = discount / (1.0 - discount) * float(np.abs(updated - values).max()) if discount > 0 else 0.0
        values = updated
        if bound <= tolerance:
            policy = np.argmax(rewards + discount * kernel @ values, axis=1)
            return values, policy, bound
    raise RuntimeError(f"value iteration did not reach tolerance {tolerance:g} within {_MAX_VALUE_ITERATIONS} iterations")


def discounted_best_response(
    game: DiscountedMarkovGame,
    policies: Sequence[np.ndarray],
    player: int,
    *,
    method: str = "policy_iteration",
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Player ``player``'s best-response values (S,), a deterministic best response ``(S, A_i)`` of
    0s and 1s, and the values' error bound (`solve_mdp`), against the others' stationary ``policies``."""
    pols = check_stationary_policy(game, policies)
    i = int(player)
    num_states, num_actions = game.num_states, game.num_actions[i]
    rewards = _contract(game.rewards[i], pols, i).reshape(num_states, num_actions)
    kernel = _contract(game.transitions, pols, i).reshape(num_states, num_actions, num_states)
    values, actions, bound = solve_mdp(rewards, kernel, game.discount, method=method, tolerance=tolerance)
    return values, np.eye(num_actions)[actions], bound


@dataclass(frozen=True, eq=False)
class DiscountedNashGapResult:
    """The Nash gap of a stationary product policy in a discounted game.

    Attributes
    ----------
    gap : float
        ``max_i per_player[i]``.
    per_player : ndarray (N,)
        ``best_response_value - value`` at the initial distribution.
    value, best_response_value : ndarray (N,)
        ``V_i^pi(rho)`` and ``V_i^{dagger, pi_{-i}}(rho)``.
    state_values, best_response_state_values : ndarray (N, S)
        The same per state.
    state_gap : float
        ``max_{i, s} (V_i^dagger(s) - V_i^pi(s))`` (a state-wise measure).
    best_responses : tuple of ndarray
        Per player a deterministic stationary best response ``(S, A_i)``.
    method : str
        ``"policy_iteration"`` or ``"value_iteration"``.
    error_bound : float
        A bound on the error of the best-response values (0.0 for policy iteration: exact up to
        rounding); every gap is within it.
    """

    gap: float
    per_player: np.ndarray
    value: np.ndarray
    best_response_value: np.ndarray
    state_values: np.ndarray
    best_response_state_values: np.ndarray
    state_gap: float
    best_responses: tuple[np.ndarray, ...]
    method: str
    error_bound: float

    @property
    def duality_gap(self) -> float:
        """``sum_i per_player[i]``: the duality gap of a two-player constant-sum game."""
        return float(self.per_player.sum())


def discounted_nash_gap(
    game: DiscountedMarkovGame,
    policies: Sequence[np.ndarray],
    *,
    method: str = "policy_iteration",
    tolerance: float = DEFAULT_TOLERANCE,
) -> DiscountedNashGapResult:
    """The Nash gap of the stationary product policy ``policies`` at the initial distribution, with
    every player's best response (the module docstring says what is exact)."""
    if method not in BEST_RESPONSE_METHODS:
        raise ValueError(f"method: expected one of {', '.join(BEST_RESPONSE_METHODS)}, got {method!r}")
    pols = check_stationary_policy(game, policies)
    own = discounted_policy_value(game, pols)
    best_values, best_responses, bounds = [], [], []
    for i in range(game.num_players):
        values, response, bound = discounted_best_response(game, pols, i, method=method, tolerance=tolerance)
        best_values.append(values)
        best_responses.append(response)
        bounds.append(bound)
    best_state = np.stack(best_values)
    best = best_state @ game.initial_distribution
    per_player = best - own.value
    return DiscountedNashGapResult(
        gap=float(per_player.max()),
        per_player=per_player,
        value=own.value,
        best_response_value=best,
        state_values=own.state_values,
        best_response_state_values=best_state,
        state_gap=float((best_state - own.state_values).max()),
        best_responses=tuple(best_responses),
        method=method,
        error_bound=float(max(bounds)),
    )


def discounted_duality_gap(
    game: DiscountedMarkovGame,
    policies: Sequence[np.ndarray],
    *,
    method: str = "policy_iteration",
    tolerance: float = DEFAULT_TOLERANCE,
) -> float:
    """The duality gap ``max_x' V_0(x', y) - min_y' V_0(x, y')`` at the initial distribution of a
    two-player constant-sum discounted game (the sum of the two players' best-response gains).

    Raises ``ValueError`` for a game with other than two players or whose rewards do not sum to
    one constant (its duality gap has no meaning; use `discounted_nash_gap`).
    """
    if not isinstance(game, DiscountedMarkovGame):
        raise TypeError(f"game must be a DiscountedMarkovGame, got {type(game).__name__}")
    if game.num_players != 2 or not game.is_constant_sum:
        raise ValueError(
            f"game {game.name!r}: the duality gap is defined for two-player constant-sum games "
            f"(N = {game.num_players}, constant-sum: {game.is_constant_sum}); use discounted_nash_gap"
        )
    return discounted_nash_gap(game, policies, method=method, tolerance=tolerance).duality_gap
