r"""The exact CCE gap: each player's best response to the others (docs/gaps.md).

A CCE deviation of player ``i`` ignores its recommendations entirely and plays its own
(deterministic, without loss of generality) policy, which may depend on everything it
*observes*: the states and all players' past actions — but neither the hidden index of the output
policy nor any recommendation. The exact CCE gap is

.. math:: \max_i \big(\max_{\text{deviations}} V^{\dagger,\pi_{-i}}_{1,i}(s_1) - V^\pi_{1,i}(s_1)\big),

which **can be negative**: the common randomness of the output policy can be worth more to a
player than anything it could do without it (docs/gaps.md). It is not clipped.

**Index-chain output policies** (Algorithms 3, 4). The deviator's information at step ``h`` is the
observable history :math:`\tau_h = (s_0, a_0, \dots, s_h)`; its belief over the index played at step
``h`` is :math:`\beta_h(j) = P(j_h = j \mid \tau_h)`, with :math:`\beta_0 = \nu_1` (the law of
:math:`j_1`). The others' actions are informative about the index through :math:`\pi^j_{h,-i}`; the
deviator's own actions and the states are not (given the others' actions, the state moves
independently of the index). Hence

.. math:: \beta^{a_{-i}}(j) \propto \beta_h(j)\,\pi^j_{h,-i}(a_{-i}|s_h), \qquad
          \beta_{h+1} = \mathrm{push}(\beta^{a_{-i}}),

.. math:: V_h(\tau_h) = \max_b \sum_{a_{-i}} p(a_{-i})\Big[r_{h,i}(s_h, b, a_{-i})
          + \sum_{s'} P_h(s'|s_h, b, a_{-i})\, V_{h+1}(\tau_h, (b, a_{-i}), s')\Big],

with :math:`p(a_{-i}) = \sum_j \beta_h(j)\pi^j_{h,-i}(a_{-i}|s_h)`. The value of a child depends on
the history only through :math:`(s', \beta_{h+1})`, and :math:`\beta_{h+1}` not on ``b``: so the
recursion runs over the "information" nodes :math:`(s_0, a_{0,-i}, \dots, s_h)` — about
:math:`(S |A_{-i}|)^h` of them at step ``h``, each costing O(T |A_{-i}|) (one batched O(T) push).
[`exact_cce_gap`][markovgames.evaluation.exact_cce_gap] refuses
([`EvaluationTooLarge`][markovgames.evaluation.EvaluationTooLarge]) when the count times ``T`` is too large.

**Markov correlated policies**: the past carries no information about the future
recommendations given the state, so the Markov best response by backward induction is exact.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..games import MarkovGame
from ..policies import IndexChainPolicy, IndexKernel, MarkovCorrelatedPolicy
from ._ce import markov_best_deviation
from ._common import check_policy, others_expectation, step_factors
from ._value import _markov_value, policy_value
from ._work import (
    DEFAULT_MAX_WORK,
    NODE_OVERHEAD,
    WorkCounter,
    cce_node_work,
    cce_table_work,
    estimate_work,
    format_count,
    refuse_above,
)

__all__ = ["CCEGapResult", "HistoryDeviation", "MarkovDeviation", "exact_cce_gap"]


@dataclass(frozen=True, eq=False)
class HistoryDeviation:
    """A deterministic history-dependent deviation of ``player``.

    ``actions`` maps an observable history ``(s_0, a_0, s_1, a_1, ..., s_h)`` — states as ints,
    each ``a_k`` the *joint* action actually played at step ``k`` as a tuple of ``N`` ints (the
    deviator's own entry is its own earlier choice) — to the action the deviator plays at step
    ``h``. It contains every history that has positive probability while the deviator follows it;
    that is enough to simulate it ([`sample_episodes`][markovgames.evaluation.sample_episodes]).
    """

    player: int
    actions: Mapping[tuple, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "player", int(self.player))
        object.__setattr__(self, "actions", types.MappingProxyType(dict(self.actions)))

    def action(self, history: tuple) -> int:
        """The action played after ``history`` (``KeyError`` for a history it never reaches)."""
        return self.actions[tuple(history)]


@dataclass(frozen=True, eq=False)
class MarkovDeviation:
    """A deterministic Markov deviation of ``player``: ``table[h, s]`` is the action at step ``h`` in ``s``.

    The best response to a Markov correlated policy has this form. `action` accepts the same
    histories as [`HistoryDeviation.action`][markovgames.evaluation.HistoryDeviation.action].
    """

    player: int
    table: np.ndarray

    def __post_init__(self) -> None:
        t = np.array(self.table, dtype=np.int64, copy=True)
        if t.ndim != 2:
            raise ValueError(f"table: expected shape (H, S), got {t.shape}")
        t.setflags(write=False)
        object.__setattr__(self, "table", t)
        object.__setattr__(self, "player", int(self.player))

    def action(self, history: tuple) -> int:
        h = (len(history) - 1) // 2
        return int(self.table[h, history[-1]])


@dataclass(frozen=True, eq=False)
class CCEGapResult:
    r"""The exact CCE gap of a policy (docs/gaps.md).

    Attributes
    ----------
    gap : float
        :math:`\max_i` ``per_player[i]``; may be negative (not clipped).
    per_player : ndarray (N,)
        ``best_response_value - value``.
    value : ndarray (N,)
        :math:`V^\pi_{1,i}(s_1)`.
    best_response_value : ndarray (N,)
        The value of player ``i``'s best observable-history deviation against :math:`\pi_{-i}`.
    deviations : tuple
        Per player a best deviation: a [`HistoryDeviation`][markovgames.evaluation.HistoryDeviation] (index-chain policies) or a
        [`MarkovDeviation`][markovgames.evaluation.MarkovDeviation] (Markov correlated policies).
    certified_bound : ndarray (N,)
        The index-revealing certified CCE bound (docs/gaps.md) (``>= best_response_value``).
    nodes : tuple of int
        Per player, the number of history nodes visited.
    work : int
        The elementary operations the evaluation did, counted as it ran (the units of
        [`estimate_work`][markovgames.evaluation.estimate_work]'s ``cce_work``; the policy's value
        counted as its estimate, ``value_work``).
    """

    gap: float
    per_player: np.ndarray
    value: np.ndarray
    best_response_value: np.ndarray
    deviations: tuple
    certified_bound: np.ndarray
    nodes: tuple[int, ...]
    work: int = 0

    @property
    def player(self) -> int:
        """The player with the largest gap."""
        return int(np.argmax(self.per_player))

    @property
    def deviation(self):
        """The best deviation of the player with the largest gap."""
        return self.deviations[self.player]

    def deviation_for(self, player: int):
        """The best deviation of ``player``."""
        return self.deviations[int(player)]


def exact_cce_gap(game: MarkovGame, policy, *, max_work: float | None = DEFAULT_MAX_WORK) -> CCEGapResult:
    r"""The exact CCE gap of ``policy`` at ``s_1``, with a best deviation per player.

    Parameters
    ----------
    game : MarkovGame
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
    max_work : float or None
        Refuse when [`estimate_work`][markovgames.evaluation.estimate_work]'s ``cce_work`` (history nodes x ``T``, roughly) exceeds
        this (``None``: never refuse).

    Returns
    -------
    CCEGapResult

    Raises
    ------
    EvaluationTooLarge
        When the estimated work exceeds ``max_work``, or the counted work passes it (``stopped``).

    Notes
    -----
    See the module docstring for the recursion over observable histories with a belief over the
    hidden index. Always ``gap <= certified CCE gap``; the gap may be negative.
    """
    check_policy(game, policy)
    est = estimate_work(game, policy)
    detail = f"{format_count(max(est.cce_history_nodes))} history nodes per player x index length T={est.index_length}"
    refuse_above("exact CCE gap", est.cce_work, max_work, est, detail)
    counter = WorkCounter("exact CCE gap", max_work, est, est.cce_work)
    if isinstance(policy, MarkovCorrelatedPolicy):
        value = _markov_value(game, policy)[:, game.initial_state]
        results = [_markov_best_response(game, policy, i) for i in range(game.num_players)]
        counter.add(est.cce_work)  # a backward induction: exactly its estimate
    else:
        kernel = policy.kernel
        value = policy_value(game, policy)
        counter.add(est.value_work)  # a forward recursion of fixed cost: its estimate
        results = [_IndexBestResponse(game, policy, kernel, i, counter).solve() for i in range(game.num_players)]
    br = np.array([r.value for r in results])
    per_player = br - value
    return CCEGapResult(
        gap=float(per_player.max()),
        per_player=per_player,
        value=value,
        best_response_value=br,
        deviations=tuple(r.deviation for r in results),
        certified_bound=np.array([r.certified_bound for r in results]),
        nodes=tuple(r.nodes for r in results),
        work=counter.work,
    )


class _BestResponse(NamedTuple):
    """One player's part of a `CCEGapResult`."""

    value: float  # the best deviation's value at s_1
    deviation: HistoryDeviation | MarkovDeviation
    certified_bound: float
    nodes: int


def _markov_best_response(game: MarkovGame, policy: MarkovCorrelatedPolicy, player: int) -> _BestResponse:
    value, table = markov_best_deviation(game, policy, player, "cce")
    # No hidden index: the certified recursion is exact.
    return _BestResponse(value, MarkovDeviation(player, table), value, game.horizon * game.num_states)


class _IndexBestResponse:
    """Best response of one player to an index-chain policy, by recursion over observable histories."""

    def __init__(self, game: MarkovGame, policy: IndexChainPolicy, kernel: IndexKernel, player: int, counter: WorkCounter):
        self.game, self.kernel, self.i, self.counter = game, kernel, player, counter
        horizon, num_s = game.horizon, game.num_states
        acts = game.num_actions
        # The work of the tables below, in `estimate_work`'s units (`cce_table_work`): per index and step.
        counter.add(policy.T * horizon * cce_table_work(num_s, game.num_joint_actions, acts[player]))
        self.others_shape = tuple(a for k, a in enumerate(acts) if k != player)
        num_o = int(np.prod(self.others_shape, dtype=np.int64))
        self.lik, self.rew, self.trans, self.reach = [], [], [], []
        for h in range(horizon):
            f = step_factors(policy, h)
            # Likelihood of the others' joint action under index j: prod_{k != i} pi^j_k(s, a_k),
            # flattened to (T, S, |A_-i|) in C order over the others' axes.
            lik = np.ones((policy.T, num_s, 1))
            for k in range(game.num_players):
                if k != player:
                    lik = (lik[:, :, :, None] * f[k][:, :, None, :]).reshape(policy.T, num_s, -1)
            self.lik.append(lik)
            # Rewards and transitions with own action first, the others' actions flattened.
            r = np.moveaxis(game.rewards[h, player], 1 + player, 1).reshape(num_s, acts[player], num_o)
            p = np.moveaxis(game.transitions[h], 1 + player, 1).reshape(num_s, acts[player], num_o, num_s)
            self.rew.append(r)
            self.trans.append(p)
            self.reach.append((p > 0).any(axis=1))  # (S, |A_-i|, S'): s' possible for some own action
        # Certified (index-revealing) CCE bound, for the report: B^t_h = max_b pull([(r + P B_{h+1}) pi_-i]).
        b_next = np.zeros((policy.T, num_s))
        for h in range(horizon - 1, -1, -1):
            f = step_factors(policy, h)
            y = others_expectation(game.rewards[h, player], f, player)
            if h + 1 < horizon:
                y = y + np.einsum("jsbz,jz->jsb", others_expectation(game.transitions[h], f, player), b_next)
            b_next = kernel.pull_states(h, y).max(axis=-1)
        self.certified = float(kernel.start_distribution() @ b_next[:, game.initial_state])
        self.nodes = 0

    def solve(self):
        s1 = self.game.initial_state
        value, tree = self._node(0, s1, self.kernel.first_index_distribution_at(s1))
        actions: dict[tuple, int] = {}
        self._collect(tree, (s1,), 0, s1, actions)
        return _BestResponse(value, HistoryDeviation(self.i, actions), self.certified, self.nodes)

    def _node(self, h: int, s: int, belief: np.ndarray):
        """Value of the best deviation from an information node, and its decision tree."""
        self.nodes += 1
        lik = self.lik[h][:, s, :]  # (T, K)
        p = belief @ lik  # law of the others' joint action
        live = np.flatnonzero(p > 0)
        a_i = self.rew[h].shape[1]
        self.counter.add(cce_node_work(lik.shape[0], self.game.num_states, lik.shape[1], a_i, 0) + NODE_OVERHEAD)
        q = self.rew[h][s] @ p  # immediate expected reward of each own action, (A_i,)
        children = {}
        if h + 1 < self.game.horizon and live.size:
            post = belief[:, None] * lik[:, live] / p[live]
            self.counter.add(post.size + a_i * live.size * self.game.num_states)
            # One batched O(T) push for all observed a_-i (per next state where the kernel depends on it).
            pushed: dict[int, np.ndarray] = {}
            cont = np.zeros((len(live), self.game.num_states))
            for c, k in enumerate(live):
                for s2 in np.flatnonzero(self.reach[h][s, k]):
                    key = int(s2) if self.kernel.state_dependent else -1
                    if key not in pushed:
                        self.counter.add(post.size)
                        pushed[key] = self.kernel.push_at(h + 1, int(s2), post)
                    v, sub = self._node(h + 1, int(s2), pushed[key][:, c])
                    cont[c, s2] = v
                    children[(int(k), int(s2))] = sub
            # sum_k p(k) sum_{s'} P(s'|s, b, k) V(child): (A_i,)
            q = q + np.einsum("k,bkz,kz->b", p[live], self.trans[h][s][:, live, :], cont)
        b = int(np.argmax(q))
        return float(q[b]), (b, children)

    def _collect(self, tree, history: tuple, h: int, s: int, out: dict) -> None:
        """Turn the decision tree into history keys, following the deviator's own choices."""
        b, children = tree
        out[history] = b
        for (k, s2), sub in children.items():
            others = np.unravel_index(k, self.others_shape) if self.others_shape else ()
            joint = [int(x) for x in others]
            joint.insert(self.i, b)
            if self.trans[h][s, b, k, s2] > 0:  # histories the deviation can actually reach
                self._collect(sub, history + (tuple(joint), s2), h + 1, s2, out)
