r"""Vectorised sampling of episodes of an output policy or a Markov correlated policy.

An episode of an index-chain output policy (docs/explanation.md, "The output policies") draws the start index :math:`t_0`, then
before every step ``h`` the next index :math:`j_h \sim \mu_{j_{h-1}}` (:math:`j_{-1} = t_0`); the index
is *shared* by all players (the common randomness), and each player draws its own action from its
own factor :math:`\pi^{j_h}_{h,k}(\cdot \mid s_h)` of the product policy, independently given the
index. A Markov correlated policy draws a fresh joint action from :math:`\sigma_h(\cdot\mid s_h)`.
States follow :math:`P_h`. Every episode runs in lock step with the others: one NumPy operation per
step and player for the whole batch.

A deviating player ``i`` replaces its own action by the deviation's choice:

* [`StrategyModification`][markovgames.evaluation.StrategyModification] (CE): :math:`\phi^s_{h,i}(\text{recommended})`;
* [`HistoryDeviation`][markovgames.evaluation.HistoryDeviation] (CCE): looked up by the observable history;
  episodes are grouped by history (``numpy.unique`` on integer codes), so each distinct history is
  looked up once per step, not once per episode;
* [`MarkovDeviation`][markovgames.evaluation.MarkovDeviation]: a table over ``(h, s)``.

All randomness comes from one ``numpy.random.Generator`` (or a seed for one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from ..games import MarkovGame
from ..policies import IndexChainPolicy, VisitChainPolicy
from ._cce import HistoryDeviation, MarkovDeviation
from ._ce import StrategyModification
from ._common import check_policy

__all__ = ["Episodes", "sample_episodes", "sample_categorical"]


@dataclass(frozen=True, eq=False)
class Episodes:
    """A batch of sampled episodes.

    Attributes
    ----------
    states : int ndarray (E, H+1)
        ``s_0 = s_1`` (the initial state), ..., ``s_H`` (the state after the last step).
    recommended : int ndarray (E, H, N)
        The actions the policy recommended.
    actions : int ndarray (E, H, N)
        The actions played (equal to ``recommended`` except for a deviating player).
    rewards : float ndarray (E, H, N)
    indices : int ndarray (E, H) or None
        The hidden index played at each step (1-based); ``None`` for a Markov correlated policy.
    deviator : int or None
        The deviating player, if any.
    """

    states: np.ndarray
    recommended: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    indices: np.ndarray | None
    deviator: int | None

    @property
    def returns(self) -> np.ndarray:
        """(E, N) total reward of every player in every episode."""
        return self.rewards.sum(axis=1)

    def __len__(self) -> int:
        return int(self.states.shape[0])


def sample_categorical(probs: np.ndarray, rng) -> np.ndarray:
    """One draw per row of ``probs`` (shape ``(E, K)``, rows summing to about 1), by inverse CDF.

    Zero-probability entries are never drawn: the draw is the first ``k`` with ``cdf[k] > u`` for
    ``u`` uniform on ``[0, cdf[-1])``.
    """
    gen = as_generator(rng)
    cdf = np.cumsum(probs, axis=1)
    u = gen.random(probs.shape[0]) * cdf[:, -1]
    return np.minimum((cdf <= u[:, None]).sum(axis=1), probs.shape[1] - 1)


def _check_deviation(game: MarkovGame, deviation) -> None:
    if deviation is None:
        return
    if not isinstance(deviation, (StrategyModification, HistoryDeviation, MarkovDeviation)):
        raise TypeError(
            f"deviation must be a StrategyModification, HistoryDeviation or MarkovDeviation, got {type(deviation).__name__}"
        )
    if not 0 <= deviation.player < game.num_players:
        raise ValueError(f"deviation.player = {deviation.player} is out of range 0..{game.num_players - 1}")
    a_i = game.num_actions[deviation.player]
    if isinstance(deviation, StrategyModification):
        want: tuple[int, ...] = (game.horizon, game.num_states, a_i)
        if deviation.table.shape != want or deviation.table.max(initial=0) >= a_i:
            raise ValueError(f"modification table: expected shape {want} with entries < {a_i}, got {deviation.table.shape}")
    elif isinstance(deviation, MarkovDeviation):
        want = (game.horizon, game.num_states)
        if deviation.table.shape != want or deviation.table.max(initial=0) >= a_i:
            raise ValueError(f"deviation table: expected shape {want} with entries < {a_i}, got {deviation.table.shape}")


class _HistoryTracker:
    """Per-episode ids of observable histories, so a HistoryDeviation is looked up once per distinct history."""

    def __init__(self, game: MarkovGame, num_episodes: int):
        self.acts = game.num_actions
        self.radix = game.num_joint_actions * game.num_states
        self.num_states = game.num_states
        self.keys: list[tuple] = [(game.initial_state,)]
        self.node = np.zeros(num_episodes, dtype=np.int64)

    def choose(self, deviation: HistoryDeviation) -> np.ndarray:
        table = np.empty(len(self.keys), dtype=np.int64)
        for n, key in enumerate(self.keys):
            try:
                table[n] = deviation.action(key)
            except KeyError:
                raise KeyError(f"the deviation has no action for the sampled history {key}") from None
        return table[self.node]

    def advance(self, played: np.ndarray, next_state: np.ndarray) -> None:
        flat = np.ravel_multi_index(tuple(played.T), self.acts)
        code = self.node * self.radix + flat * self.num_states + next_state
        uniq, inverse = np.unique(code, return_inverse=True)
        keys = []
        for c in uniq.tolist():
            parent, rest = divmod(c, self.radix)
            f, s2 = divmod(rest, self.num_states)
            joint = tuple(int(x) for x in np.unravel_index(f, self.acts))
            keys.append(self.keys[parent] + (joint, s2))
        self.keys, self.node = keys, inverse.reshape(-1).astype(np.int64)


def sample_episodes(game: MarkovGame, policy, num_episodes: int, rng, deviation=None) -> Episodes:
    r"""Sample ``num_episodes`` episodes of ``policy`` in ``game``, optionally with one player deviating.

    Parameters
    ----------
    game : MarkovGame
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
    num_episodes : int
    rng : int, numpy.random.Generator or None
        Seed or generator of all random draws (index chain, actions, transitions); ``None`` draws
        fresh OS entropy (not reproducible) and must be passed explicitly.
    deviation : StrategyModification, HistoryDeviation, MarkovDeviation or None
        The deviating player's rule (e.g. ``exact_ce_gap(...).modification`` or
        ``exact_cce_gap(...).deviation``).

    Returns
    -------
    Episodes

    Notes
    -----
    The hidden index chain is sampled exactly (docs/explanation.md, "The output policies"): :math:`t_0`, then
    :math:`j_h \sim \mu_{j_{h-1}}` *before* step ``h``, shared by all players; each player's action is
    drawn from its own factor of :math:`\pi^{j_h}_h`. Cost O(E H (N A + S + log T)).
    """
    check_policy(game, policy)
    _check_deviation(game, deviation)
    num_episodes = int(num_episodes)
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    gen = as_generator(rng)
    horizon, n, acts = game.horizon, game.num_players, game.num_actions
    states = np.empty((num_episodes, horizon + 1), dtype=np.int64)
    recommended = np.empty((num_episodes, horizon, n), dtype=np.int64)
    played_all = np.empty_like(recommended)
    rewards = np.empty((num_episodes, horizon, n))
    s = np.full(num_episodes, game.initial_state, dtype=np.int64)
    states[:, 0] = s
    indices = None
    if isinstance(policy, (IndexChainPolicy, VisitChainPolicy)):
        kernel = policy.kernel
        indices = np.empty((num_episodes, horizon), dtype=np.int64)
        current = kernel.sample_start(num_episodes, gen)
    tracker = _HistoryTracker(game, num_episodes) if isinstance(deviation, HistoryDeviation) else None
    for h in range(horizon):
        if indices is not None:  # an index-chain policy
            current = kernel.sample_next_at(
                h, s, current, gen
            )  # drawn before the step (docs/explanation.md, "The output policies")
            indices[:, h] = current
            rec = np.stack(
                [sample_categorical(np.asarray(p[current - 1, h, s], dtype=np.float64), gen) for p in policy.policies],
                axis=1,
            )
        else:
            flat = sample_categorical(policy.joint[h].reshape(game.num_states, -1)[s], gen)
            rec = np.stack(np.unravel_index(flat, acts), axis=1).astype(np.int64)
        play = rec.copy()
        if deviation is not None:
            i = deviation.player
            if isinstance(deviation, StrategyModification):
                play[:, i] = deviation.table[h, s, rec[:, i]]
            elif isinstance(deviation, MarkovDeviation):
                play[:, i] = deviation.table[h, s]
            elif tracker is not None:  # a HistoryDeviation (the only other kind)
                play[:, i] = tracker.choose(deviation)
        joint_idx = tuple(play.T)
        rewards[:, h] = game.rewards[h][(slice(None), s) + joint_idx].T
        s_next = sample_categorical(game.transitions[h][(s,) + joint_idx], gen)
        if tracker is not None and h + 1 < horizon:
            tracker.advance(play, s_next)
        recommended[:, h], played_all[:, h] = rec, play
        s = s_next
        states[:, h + 1] = s
    return Episodes(
        states=states,
        recommended=recommended,
        actions=played_all,
        rewards=rewards,
        indices=indices,
        deviator=None if deviation is None else deviation.player,
    )
