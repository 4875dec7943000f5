r"""The exact CE gap: the best strategy modification of each player (docs/gaps.md; paper Section 2).

A strategy modification of player ``i`` (Mao et al. 2024, Section 2, "strategy modification") is a
family of maps :math:`\phi^s_{h,i}: A_i \to A_i`, one per step ``h`` and state ``s``; it sees the
step, the state and the recommended own action only — never the hidden index nor the history.
:math:`\phi_i \diamond \pi` plays :math:`\phi^s_{h,i}(a_i)` wherever ``pi`` recommends ``a_i``. The exact
CE gap is

.. math:: \max_i \max_{\phi_i} \big(V^{\phi_i \diamond \pi}_{1,i}(s_1) - V^{\pi}_{1,i}(s_1)\big) \;\ge 0

(the identity modification gives 0).

**Markov correlated policies** ``sigma``: no hidden state persists, so the problem decomposes by
backward induction, :math:`M_h(s)[a,b] = \sum_{a_{-i}} \sigma_h(a, a_{-i}|s)[r_{h,i}(s,b,a_{-i}) +
P_h(s,b,a_{-i}) \cdot V^*_{h+1}]`, :math:`\phi^s_{h,i}(a) = \arg\max_b M_h(s)[a,b]`,
:math:`V^*_h(s) = \sum_a \max_b M_h(s)[a,b]` — exact, cost O(H S |A| (S + A_i)).

**Index-chain output policies** (Algorithms 3, 4): with :math:`d_h(j,s)` the law of (played index,
state) at step ``h`` under :math:`\phi\diamond\pi`, the modified value is

.. math:: \sum_h \sum_{s, a} \sum_j d_h(j,s)\,\pi^j_{h,i}(a|s)\, u^j_h(s, \phi^s_{h,i}(a)),
          \qquad u^j_h(s,b) = [r_{h,i}\pi^j_{h,-i}](s,b),

linear in the step-``h`` choices *given* :math:`d_h`, but :math:`d_{h+1}` depends on them
(:math:`d_{h+1} = \mathrm{push}(\sum_{s,a} d_h(\cdot,s)\pi^{\cdot}_{h,i}(a|s)[P_h\pi^{\cdot}_{h,-i}](s,\phi(a),\cdot))`).
So the choices of different steps interact and the problem does not decompose; it is solved by
**depth-first branch and bound**:

* the search assigns :math:`\phi^s_{h,i}(a)` pair by pair, step by step, carrying the exact
  :math:`d_h` and the reward collected so far; the last step ``H-1`` is solved in closed form
  (:math:`\phi^s_{H-1,i}(a) = \arg\max_b \sum_j d_{H-1}(j,s)\pi^j_i(a|s)u^j(s,b)`);
* a pair ``(s, a)`` with zero probability under :math:`d_h` is not branched on (identity);
* the bound of an undecided pair is :math:`\max_b \sum_j d_h(j,s) E^j_h(s)[a,b]` with
  :math:`E^j_h(s)[a,b] = \pi^j_{h,i}(a|s)[(r_{h,i} + P_h W^j_{h+1})\pi^j_{h,-i}](s,b)`, where
  :math:`W^t_{h+1}` is the *index-revealing certified bound* (docs/gaps.md) (with ``t`` the index of
  step ``h``, the next one drawn from :math:`\mu_t`). It upper-bounds the continuation value of any
  modification, so pruning a branch whose bound does not beat the incumbent is exact;
* branches are tried in decreasing order of their bound (the first leaf is the greedy solution),
  and the identity modification is the initial incumbent.

Worst case: :math:`\prod_{h<H-1}(A_i^{A_i})^{|R_h|}` nodes (``R_h`` the reachable states), each
costing O(T S A_i (A_i + S)); [`estimate_work`][markovgames.evaluation.estimate_work] counts this and
[`exact_ce_gap`][markovgames.evaluation.exact_ce_gap] refuses ([`EvaluationTooLarge`][markovgames.evaluation.EvaluationTooLarge]) above ``max_work``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..games import MarkovGame
from ..policies import IndexChainPolicy, IndexKernel, MarkovCorrelatedPolicy
from ._common import check_policy, others_expectation, step_factors
from ._value import _markov_value
from ._work import (
    DEFAULT_MAX_WORK,
    NODE_OVERHEAD,
    WorkCounter,
    ce_node_work,
    ce_table_work,
    estimate_work,
    format_count,
    refuse_above,
)

__all__ = ["CEGapResult", "StrategyModification", "exact_ce_gap"]

#: Relative slack of the pruning test: branches that could improve the incumbent by less are cut.
_PRUNE_RTOL = 1e-12


@dataclass(frozen=True, eq=False)
class StrategyModification:
    r"""A strategy modification :math:`\phi_i` of player ``player``: ``table[h, s, a]`` = :math:`\phi^s_{h,i}(a)`."""

    player: int
    table: np.ndarray

    def __post_init__(self) -> None:
        t = np.array(self.table, dtype=np.int64, copy=True)
        if t.ndim != 3:
            raise ValueError(f"table: expected shape (H, S, A_i), got {t.shape}")
        if t.size and (t.min() < 0 or t.max() >= t.shape[2]):
            raise ValueError("table: entries must be actions 0..A_i-1")
        t.setflags(write=False)
        object.__setattr__(self, "table", t)
        object.__setattr__(self, "player", int(self.player))

    def apply(self, h: int, state: int, recommended: int) -> int:
        """The action played at step ``h`` in ``state`` when ``recommended`` is recommended."""
        return int(self.table[h, state, recommended])


@dataclass(frozen=True, eq=False)
class CEGapResult:
    r"""The exact CE gap of a policy (docs/gaps.md).

    Attributes
    ----------
    gap : float
        :math:`\max_i` ``per_player[i]`` (never negative).
    per_player : ndarray (N,)
        :math:`\max_{\phi_i} V^{\phi_i\diamond\pi}_{1,i}(s_1) - V^\pi_{1,i}(s_1)`.
    value : ndarray (N,)
        :math:`V^\pi_{1,i}(s_1)`.
    deviation_value : ndarray (N,)
        :math:`\max_{\phi_i} V^{\phi_i\diamond\pi}_{1,i}(s_1)`.
    modifications : tuple of int ndarray (H, S, A_i)
        Per player a maximising modification, ``modifications[i][h, s, a]`` =
        :math:`\phi^s_{h,i}(a)` (identity where the pair ``(s, a)`` cannot occur at step ``h``).
    certified_bound : ndarray (N,)
        The index-revealing certified CE bound (docs/gaps.md), which the search uses for pruning;
        ``deviation_value <= certified_bound``.
    nodes : tuple of int
        Per player, the number of search nodes visited (diagnostic).
    work : int
        The elementary operations the evaluation did, counted as it ran (the units of
        [`estimate_work`][markovgames.evaluation.estimate_work]'s ``ce_work``).
    """

    gap: float
    per_player: np.ndarray
    value: np.ndarray
    deviation_value: np.ndarray
    modifications: tuple[np.ndarray, ...]
    certified_bound: np.ndarray
    nodes: tuple[int, ...]
    work: int = 0

    @property
    def player(self) -> int:
        """The player with the largest gap."""
        return int(np.argmax(self.per_player))

    @property
    def modification(self) -> StrategyModification:
        """The maximising modification of the player with the largest gap."""
        return self.modification_for(self.player)

    def modification_for(self, player: int) -> StrategyModification:
        """The maximising modification of ``player``."""
        return StrategyModification(int(player), self.modifications[int(player)])


def exact_ce_gap(game: MarkovGame, policy, *, max_work: float | None = DEFAULT_MAX_WORK) -> CEGapResult:
    r"""The exact CE gap of ``policy`` at ``s_1``, with a maximising strategy modification per player.

    Parameters
    ----------
    game : MarkovGame
    policy : IndexChainPolicy or MarkovCorrelatedPolicy
    max_work : float or None
        Refuse when [`estimate_work`][markovgames.evaluation.estimate_work]'s ``ce_work`` exceeds this (``None``: never refuse).

    Returns
    -------
    CEGapResult

    Raises
    ------
    EvaluationTooLarge
        When the estimated work exceeds ``max_work`` (the message names the size and the limit),
        or when the search's counted work passes it (``stopped``: its bounds pruned less than
        estimated).

    Notes
    -----
    Markov correlated policies: backward induction (exact, polynomial). Index-chain policies:
    depth-first branch and bound over the modification, pruned with the index-revealing
    certified bound; see the module docstring. Always ``0 <= gap <= certified CE gap``.
    """
    check_policy(game, policy)
    est = estimate_work(game, policy)
    detail = f"up to {format_count(max(est.ce_nodes))} search nodes per player x index length T={est.index_length}"
    refuse_above("exact CE gap", est.ce_work, max_work, est, detail)
    counter = WorkCounter("exact CE gap", max_work, est, est.ce_work)
    if isinstance(policy, MarkovCorrelatedPolicy):
        values = _markov_value(game, policy)[:, game.initial_state]
        results = [_markov_ce(game, policy, i, float(values[i])) for i in range(game.num_players)]
        counter.add(est.ce_work)  # a backward induction: exactly its estimate
    else:
        kernel = policy.kernel
        results = [_IndexCESearch(game, policy, kernel, i, counter).solve() for i in range(game.num_players)]
    value = np.array([r.value for r in results])
    dev = np.array([r.deviation_value for r in results])
    per_player = dev - value
    return CEGapResult(
        gap=float(per_player.max()),
        per_player=per_player,
        value=value,
        deviation_value=dev,
        modifications=tuple(r.modification for r in results),
        certified_bound=np.array([r.certified_bound for r in results]),
        nodes=tuple(r.nodes for r in results),
        work=counter.work,
    )


class _PlayerResult(NamedTuple):
    """One player's part of a `CEGapResult`."""

    value: float  # V^pi_{1,i}(s_1)
    deviation_value: float  # max over modifications
    modification: np.ndarray  # (H, S, A_i), a maximising one
    certified_bound: float
    nodes: int


# ---------------------------------------------------------------------------------------------
# Markov correlated policies
# ---------------------------------------------------------------------------------------------


def swap_matrix(game: MarkovGame, joint_h: np.ndarray, target: np.ndarray, player: int) -> np.ndarray:
    r"""``M[s, a, b] = sum_{a_-i} J(s, a, a_-i) X(s, b, a_-i)`` (recommended ``a``, played ``b``).

    ``joint_h`` is ``(S, A...)``, ``target`` ``(S, A...)``; the result is ``(S, A_i, A_i)``.
    """
    num_s, a_i = game.num_states, game.num_actions[player]
    j = np.moveaxis(joint_h, 1 + player, 1).reshape(num_s, a_i, -1)
    x = np.moveaxis(target, 1 + player, 1).reshape(num_s, a_i, -1)
    return np.einsum("sak,sbk->sab", j, x)


def _continuation_target(game: MarkovGame, h: int, player: int, next_value: np.ndarray) -> np.ndarray:
    """``r_{h,i}(s, a) + sum_{s'} P_h(s'|s, a) next_value(s')``, shape ``(S, A...)``."""
    return game.rewards[h, player] + game.transitions[h] @ next_value


def markov_best_deviation(game: MarkovGame, policy: MarkovCorrelatedPolicy, player: int, concept: str):
    """Player ``player``'s best deviation from a Markov correlated policy, by backward induction.

    ``concept="ce"``: a strategy modification, ``table[h, s, a]`` the action played on
    recommendation ``a`` (the max is taken per recommendation); ``"cce"``: a Markov deviation,
    ``table[h, s]`` the action played whatever is recommended (the swap matrix is summed over the
    recommendations first). Returns ``(value at s_1, table)``.
    """
    best = np.zeros(game.num_states)
    tables = []
    for h in range(game.horizon - 1, -1, -1):
        m = swap_matrix(game, policy.joint[h], _continuation_target(game, h, player, best), player)
        if concept == "cce":
            m = m.sum(axis=1)  # one action, whatever the recommendation a
        tables.append(np.argmax(m, axis=-1))
        best = m.max(axis=-1) if concept == "cce" else m.max(axis=-1).sum(axis=-1)
    return float(best[game.initial_state]), np.stack(tables[::-1]).astype(np.int64)


def _markov_ce(game: MarkovGame, policy: MarkovCorrelatedPolicy, player: int, value: float) -> _PlayerResult:
    dev, table = markov_best_deviation(game, policy, player, "ce")
    # The identity is a modification: clip the rounding of two different summation orders.
    dev = max(dev, value)
    # No hidden index: the "certified" recursion is exact.
    return _PlayerResult(value, dev, table, dev, game.horizon * game.num_states)


# ---------------------------------------------------------------------------------------------
# Index-chain policies: branch and bound
# ---------------------------------------------------------------------------------------------


class _IndexCESearch:
    """Branch and bound for one player's best modification against an index-chain policy."""

    def __init__(self, game: MarkovGame, policy: IndexChainPolicy, kernel: IndexKernel, player: int, counter: WorkCounter):
        self.game, self.kernel, self.i, self.counter = game, kernel, player, counter
        horizon, num_s = game.horizon, game.num_states
        # The work of what follows, in `estimate_work`'s units (`ce_table_work`): per index and step.
        counter.add(policy.T * horizon * ce_table_work(num_s, game.num_joint_actions, game.num_actions[player]))
        self.pi: list[np.ndarray] = []  # per step (T, S, A_i): own strategies
        self.u: list[np.ndarray] = []  # per step (T, S, A_i): [r_{h,i} pi^j_{-i}](s, b)
        self.pm: list[np.ndarray | None] = []  # per step (T, S, A_i, S'): [P_h pi^j_{-i}](s, b, s'); None at the last
        for h in range(horizon):
            f = step_factors(policy, h)
            self.pi.append(f[player])
            self.u.append(others_expectation(game.rewards[h, player], f, player))
            self.pm.append(others_expectation(game.transitions[h], f, player) if h + 1 < horizon else None)
        # Index-revealing certified bounds, backward (docs/gaps.md): E_h bounds the value of
        # playing b on recommendation a with index j revealed from step h+1 on; W^t_h = sum_a max_b
        # of its pull. The search uses E_h (per played index) to bound undecided choices.
        backward_tables = []
        w_next = np.zeros((policy.T, num_s))
        for h in range(horizon - 1, -1, -1):
            q, pm_h = self.u[h], self.pm[h]
            if pm_h is not None:
                q = q + np.einsum("jsbz,jz->jsb", pm_h, w_next)
            e = self.pi[h][..., :, None] * q[..., None, :]  # (T, S, A, A): [j, s, a, b]
            backward_tables.append(e)
            w_next = kernel.pull_states(h, e).max(axis=-1).sum(axis=-1)
        self.bound_tables = backward_tables[::-1]  # per step h
        self.certified = float(kernel.start_distribution() @ w_next[:, game.initial_state])
        self.nodes = 0

    # -- exact value of one modification (used for the identity incumbent) --
    def evaluate(self, table: np.ndarray) -> float:
        total, d = 0.0, self._initial_mass()
        for h in range(self.game.horizon):
            pi, u = self.pi[h], self.u[h]
            self.counter.add(pi.size if self.pm[h] is None else pi.size * (1 + self.game.num_states) + d.size)
            idx = table[h]  # (S, A): played action per (s, a)
            s_idx = np.arange(idx.shape[0])[:, None]
            total += float(np.einsum("js,jsa,jsa->", d, pi, u[:, s_idx, idx]))
            pm_h = self.pm[h]
            if pm_h is not None:
                d = self.kernel.push_states(h + 1, np.einsum("js,jsa,jsaz->jz", d, pi, pm_h[:, s_idx, idx]))
        return total

    def _initial_mass(self) -> np.ndarray:
        d = np.zeros((self.kernel.T, self.game.num_states))
        d[:, self.game.initial_state] = self.kernel.first_index_distribution_at(self.game.initial_state)
        return d

    def solve(self):
        horizon, num_s, a_i = self.game.horizon, self.game.num_states, self.game.num_actions[self.i]
        identity = np.broadcast_to(np.arange(a_i), (horizon, num_s, a_i)).copy()
        self.value = self.evaluate(identity)
        self.best, self.best_table = self.value, identity.copy()
        self._search(0, self._initial_mass(), 0.0, identity.copy())
        return _PlayerResult(self.value, self.best, self.best_table, self.certified, self.nodes)

    def _improves(self, bound: float) -> bool:
        return bound > self.best + _PRUNE_RTOL * max(1.0, abs(self.best))

    def _search(self, h: int, d: np.ndarray, acc: float, table: np.ndarray) -> None:
        self.nodes += 1
        pi = self.pi[h]
        last = h == self.game.horizon - 1
        self.counter.add(d.shape[0] * ce_node_work(d.shape[1], pi.shape[-1], last) + NODE_OVERHEAD)
        # Immediate reward of playing b on recommendation a at state s, under the current d_h.
        reward = np.einsum("js,jsa,jsb->sab", d, pi, self.u[h])
        mass = np.einsum("js,jsa->sa", d, pi)
        if h == self.game.horizon - 1:
            # Last step: no future, the choices decouple per (s, a).
            value = acc + float(reward.max(axis=-1)[mass > 0].sum())
            if value > self.best:
                self.best = value
                self.best_table = table.copy()
                choice = np.argmax(reward, axis=-1)
                self.best_table[h] = np.where(mass > 0, choice, self.best_table[h])
            return
        bound = np.einsum("js,jsab->sab", d, self.bound_tables[h])
        pairs = [tuple(p) for p in np.argwhere(mass > 0)]
        # Branch on the heaviest pairs first: their choices move the bound most.
        pairs.sort(key=lambda p: -mass[p])
        best_bound = [float(bound[p].max()) for p in pairs]
        rest = np.concatenate([np.cumsum(best_bound[::-1])[::-1], [0.0]])
        if not self._improves(acc + rest[0]):
            return
        step = _Step(h, d, acc, table, pairs, reward, bound, rest)
        self._assign(step, 0, _Chosen(0.0, 0.0, np.zeros(d.shape)))

    def _assign(self, step: _Step, k: int, chosen: _Chosen) -> None:
        """Choose the played action of the ``k``-th reachable pair of ``step``, then the rest."""
        h, table, bound = step.h, step.table, step.bound
        if k == len(step.pairs):
            # All reachable choices of step h fixed: the law of (index, state) at h+1 is exact.
            self.counter.add(chosen.pre_push.size)  # its push
            self._search(h + 1, self.kernel.push_states(h + 1, chosen.pre_push), step.acc + chosen.reward, table)
            return
        s, a = step.pairs[k]
        old = table[h, s, a]
        pm_h = self.pm[h]
        assert pm_h is not None  # the last step has no transitions and is decided in _search
        for b in np.argsort(-bound[s, a], kind="stable"):
            if not self._improves(step.acc + chosen.bound + bound[s, a, b] + step.rest[k + 1]):
                break  # sorted: every later b has a smaller bound
            table[h, s, a] = b
            self.counter.add(step.d.size)
            contrib = (step.d[:, s] * self.pi[h][:, s, a])[:, None] * pm_h[:, s, b, :]
            self._assign(
                step,
                k + 1,
                _Chosen(chosen.bound + bound[s, a, b], chosen.reward + step.reward[s, a, b], chosen.pre_push + contrib),
            )
        table[h, s, a] = old


class _Step(NamedTuple):
    """What the search knows at step ``h`` while it assigns the step's choices (fixed for the step)."""

    h: int
    d: np.ndarray  # (T, S): the law of (index, state) at step h
    acc: float  # the reward collected before step h
    table: np.ndarray  # (H, S, A_i): the modification being built (choices of steps < h fixed)
    pairs: list  # the reachable (s, a), heaviest first: the order in which they are assigned
    reward: np.ndarray  # (S, A, B): immediate reward of playing b on recommendation a
    bound: np.ndarray  # (S, A, B): certified bound of that choice, future included
    rest: np.ndarray  # rest[k]: the best bounds of pairs k.. summed (for pruning)


class _Chosen(NamedTuple):
    """The choices made so far at a step: their summed bounds and rewards, and the mass they push on."""

    bound: float
    reward: float
    pre_push: np.ndarray  # (T, S'): the law at h+1 before the index moves
