r"""Shared helpers of the evaluation package: checks, policy contractions, reachability.

Shape conventions are the library's (docs/explanation.md, "The game"): ``rewards[h, i, s, a_0, ..., a_{N-1}]``,
``transitions[h, s, a_0, ..., a_{N-1}, s']``, absolute player order. Per-index policies of an
[`IndexChainPolicy`][markovgames.policies.IndexChainPolicy] are ``policies[k][t - 1, h, s, a_k]``.
"""

from __future__ import annotations

import numpy as np

from ..games import MarkovGame, require_finite_horizon
from ..policies import DISTRIBUTION_TOLERANCE, IndexChainPolicy, MarkovCorrelatedPolicy, VisitChainPolicy

__all__ = [
    "check_policy",
    "check_product_policy",
    "others_expectation",
    "joint_expectation",
    "reachable_states",
    "step_factors",
]


def check_policy(game: MarkovGame, policy) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``policy`` is an output or Markov policy of ``game``'s shape."""
    require_finite_horizon(game, "game")
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    if not isinstance(policy, (IndexChainPolicy, VisitChainPolicy, MarkovCorrelatedPolicy)):
        raise TypeError(
            f"policy must be an IndexChainPolicy, a VisitChainPolicy or a MarkovCorrelatedPolicy, got {type(policy).__name__}"
        )
    got = (policy.num_players, policy.horizon, policy.num_states, tuple(policy.num_actions))
    want = (game.num_players, game.horizon, game.num_states, tuple(game.num_actions))
    if got != want:
        raise ValueError(f"policy has (N, H, S, A) = {got} but the game has {want}")


def check_product_policy(game: MarkovGame, policies) -> tuple[np.ndarray, ...]:
    """Check a product Markov policy of ``game`` and return it as float64 arrays, one per player.

    ``policies[i]`` must have shape ``(H, S, A_i)``, finite entries, and each row
    ``policies[i][h, s]`` must be a distribution: entries at least ``-DISTRIBUTION_TOLERANCE`` and a
    sum within ``DISTRIBUTION_TOLERANCE`` of 1 (`DISTRIBUTION_TOLERANCE`,
    the tolerance of [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy]). As there, entries
    within the tolerance below 0 are set to 0 and each row is renormalised.

    Raises
    ------
    TypeError
        ``game`` is not a [`MarkovGame`][markovgames.games.MarkovGame], or ``policies`` not a sequence.
    ValueError
        Naming ``policies[i]`` and the index at fault.
    """
    require_finite_horizon(game, "game")
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    if isinstance(policies, np.ndarray) or not isinstance(policies, (list, tuple)):
        raise TypeError(f"policies must be a list or tuple of per-player arrays (H, S, A_i), got {type(policies).__name__}")
    if len(policies) != game.num_players:
        raise ValueError(f"policies: expected {game.num_players} arrays (one per player), got {len(policies)}")
    out = []
    for i, p in enumerate(policies):
        want = (game.horizon, game.num_states, game.num_actions[i])
        try:
            arr = np.array(p, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as err:
            raise ValueError(f"policies[{i}]: not an array of numbers ({err})") from None
        if arr.shape != want:
            raise ValueError(f"policies[{i}]: expected shape (H, S, A_{i}) = {want}, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            idx = tuple(int(k) for k in np.argwhere(~np.isfinite(arr))[0])
            raise ValueError(f"policies[{i}]{list(idx)} = {float(arr[idx])!r} is not finite")
        if np.any(arr < -DISTRIBUTION_TOLERANCE):
            idx = tuple(int(k) for k in np.argwhere(arr < -DISTRIBUTION_TOLERANCE)[0])
            raise ValueError(f"policies[{i}]{list(idx)} = {float(arr[idx])!r} is negative")
        sums = arr.sum(axis=-1)
        bad = np.abs(sums - 1.0) > DISTRIBUTION_TOLERANCE
        if bad.any():
            h, s = (int(k) for k in np.argwhere(bad)[0])
            raise ValueError(
                f"policies[{i}][{h}, {s}] sums to {float(sums[h, s])!r}, not 1 (tolerance {DISTRIBUTION_TOLERANCE:g})"
            )
        arr = np.clip(arr, 0.0, None)
        arr /= arr.sum(axis=-1, keepdims=True)
        out.append(arr)
    return tuple(out)


def step_factors(policy: IndexChainPolicy | VisitChainPolicy, h: int) -> list[np.ndarray]:
    """Per player the ``(T, S, A_k)`` strategies ``pi^j_{h,k}(s, .)`` for every index ``j`` at step ``h``."""
    return [np.asarray(p[:, h], dtype=np.float64) for p in policy.policies]


def others_expectation(x: np.ndarray, factors: list[np.ndarray], player: int) -> np.ndarray:
    r"""``[X pi^j_{-i}](s, a_i, ...)`` for every index ``j``: shape ``(T, S, A_i, *extra)``.

    ``x`` has shape ``(S, A_0, ..., A_{N-1}, *extra)`` (a game quantity at one step), ``factors``
    the per-player ``(T, S, A_k)`` strategies. The product policy of index ``j`` is contracted
    player by player (``einsum`` with an optimised order), never formed as a ``T x joint`` tensor.
    """
    n = len(factors)
    num_t = factors[0].shape[0]
    if n == 1:
        return np.broadcast_to(x[None], (num_t,) + x.shape).copy()
    # Axis labels: 0 = index, 1 = state, 2 + k = action of player k; Ellipsis = trailing axes.
    operands: list = [x, [1, *range(2, 2 + n), Ellipsis]]
    for k in range(n):
        if k != player:
            operands += [factors[k], [0, 1, 2 + k]]
    return np.einsum(*operands, [0, 1, 2 + player, Ellipsis], optimize=True)


def joint_expectation(x: np.ndarray, factors: list[np.ndarray]) -> np.ndarray:
    r"""``[X pi^j](s, ...)`` for every index ``j``: shape ``(T, S, *extra)``."""
    n = len(factors)
    operands: list = [x, [1, *range(2, 2 + n), Ellipsis]]
    for k in range(n):
        operands += [factors[k], [0, 1, 2 + k]]
    return np.einsum(*operands, [0, 1, Ellipsis], optimize=True)


def reachable_states(game: MarkovGame) -> list[np.ndarray]:
    """Per step ``h`` a boolean ``(S,)`` mask of states reachable at ``h`` under *some* actions.

    Used by the work estimates: a deviator's choices only matter where the state can occur.
    """
    reach = np.zeros(game.num_states, dtype=bool)
    reach[game.initial_state] = True
    out = [reach]
    for h in range(game.horizon - 1):
        # Any joint action from any reachable state with positive probability of s'.
        support = game.transitions[h].reshape(game.num_states, -1, game.num_states) > 0
        reach = support[reach].any(axis=(0, 1))
        out.append(reach)
    return out
