r"""Work estimates for the exact gaps, and the refusal when they are too large (docs/gaps.md).

The exact CE and CCE gaps of an output policy are hard problems in general: the CE gap maximises
over strategy modifications whose number grows like :math:`(A_i^{A_i})^{S H}`, the CCE gap recurses
over observable histories whose number grows like :math:`(S\,|A_{-i}|)^{H}`, and both carry a belief
over ``T`` hidden indices. Before computing, [`estimate_work`][markovgames.evaluation.estimate_work] counts the worst case (no pruning)
in rough "elementary operations", and the exact gap functions raise [`EvaluationTooLarge`][markovgames.evaluation.EvaluationTooLarge]
when it exceeds their ``max_work`` argument (the caller may raise the limit).

Counts (per player ``i``; summed over players for the totals):

* **CE** (branch and bound over modifications, one step at a time, last step in closed form):
  the number of search nodes at step ``h`` is
  :math:`n_0 = 1,\ n_{h+1} = n_h \prod_{s \in R_h} A_i^{A_i}` with :math:`R_h` the states reachable at
  step ``h``; each node costs about :math:`T S A_i (A_i + S)`; setting up the per-step tables costs
  :math:`H T S |A| (S+1)`.
* **CCE** (recursion over observable histories): the number of history nodes with state ``s`` at
  step ``h`` is :math:`c_0 = \delta_{s_1}`, :math:`c_{h+1}(s') = \sum_s c_h(s) |A_{-i}| \,
  [s' \text{ reachable from } s]`; each node costs about :math:`T |A_{-i}| + |A| S`.

For a [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy] both are plain backward inductions of
cost :math:`H S |A| (S + A_i)`, with ``T = 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._errors import MarkovGamesError
from ..games import MarkovGame
from ..policies import MarkovCorrelatedPolicy
from ._common import check_policy, reachable_states

__all__ = [
    "EvaluationTooLarge",
    "WorkEstimate",
    "estimate_work",
    "DEFAULT_MAX_WORK",
    "NODE_OVERHEAD",
    "COUNT_CAP",
    "format_count",
]

#: Default refusal limit of [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap] and
#: [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap] (about a minute of work).
DEFAULT_MAX_WORK = 2 * 10**9

#: Work units charged per search or history node for the Python overhead of visiting it.
NODE_OVERHEAD = 2000

#: Counts saturate here: anything this large is refused anyway, and exact counts such as
#: (A^A)^(S H) could have millions of digits.
COUNT_CAP = 10**30


def _sat_mul(a: int, b: int) -> int:
    return min(a * b, COUNT_CAP)


def _sat_pow(base: int, exponent: int) -> int:
    if base <= 1 or exponent == 0:
        return base**exponent
    if exponent * math.log10(base) > 30.5:
        return COUNT_CAP
    return min(base**exponent, COUNT_CAP)


def format_count(n: int) -> str:
    """``n`` in 3-digit scientific notation, marking saturated counts."""
    return (">=" if n >= COUNT_CAP else "") + f"{float(min(n, COUNT_CAP)):.3g}"


class EvaluationTooLarge(MarkovGamesError, ValueError):
    """An exact evaluation was refused because its estimated work exceeds ``max_work``.

    Attributes
    ----------
    what : str
        Which evaluation (``"exact CE gap"`` or ``"exact CCE gap"``).
    work : int
        The estimated work.
    limit : int
        The ``max_work`` it exceeds.
    estimate : WorkEstimate
        All the sizes.
    """

    def __init__(self, what: str, work: int, limit: float, estimate: WorkEstimate, detail: str):
        self.what, self.work, self.limit, self.estimate = what, int(work), int(limit), estimate
        super().__init__(
            f"{what} refused: estimated work {format_count(int(work))} ({detail}) exceeds the limit "
            f"max_work={float(limit):.3g}; pass a larger max_work to compute it anyway"
        )


def refuse_above(what: str, work: int, max_work: float | None, estimate: WorkEstimate, detail: str) -> None:
    """Raise `EvaluationTooLarge` when ``max_work`` is set and ``work`` exceeds it."""
    if max_work is not None and work > max_work:
        raise EvaluationTooLarge(what, work, max_work, estimate, detail)


@dataclass(frozen=True)
class WorkEstimate:
    """Sizes of the exact evaluations of one policy (worst case, before any pruning).

    Attributes
    ----------
    index_length : int
        ``T``, the number of hidden indices (1 for a Markov correlated policy).
    ce_modifications : tuple of int
        Per player, the number of strategy modifications :math:`\\prod_{h,s} A_i^{A_i}` over
        reachable ``(h, s)`` (what a naive enumeration would try).

    All counts saturate at `COUNT_CAP` (``10**30``).
    ce_nodes : tuple of int
        Per player, the worst-case number of branch-and-bound nodes of the exact CE search.
    cce_history_nodes : tuple of int
        Per player, the number of observable-history nodes of the exact CCE recursion.
    value_work, ce_work, cce_work : int
        Estimated elementary operations of [`policy_value`][markovgames.evaluation.policy_value],
        [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap],
        [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap] (all players).
    """

    index_length: int
    ce_modifications: tuple[int, ...]
    ce_nodes: tuple[int, ...]
    cce_history_nodes: tuple[int, ...]
    value_work: int
    ce_work: int
    cce_work: int

    def describe(self) -> str:
        """A short human-readable summary (for command-line output)."""
        return (
            f"T={self.index_length}; CE: {_fmt(self.ce_nodes)} search nodes per player "
            f"({_fmt(self.ce_modifications)} modifications), work {format_count(self.ce_work)}; "
            f"CCE: {_fmt(self.cce_history_nodes)} history nodes per player, work {format_count(self.cce_work)}; "
            f"value work {format_count(self.value_work)}"
        )


def _fmt(values) -> str:
    return "(" + ", ".join(format_count(v) if v >= 10**6 else str(v) for v in values) + ")"


def estimate_work(game: MarkovGame, policy) -> WorkEstimate:
    """Estimate the sizes and work of the exact evaluations of ``policy`` in ``game``.

    Parameters
    ----------
    game : MarkovGame
    policy : IndexChainPolicy or MarkovCorrelatedPolicy

    Returns
    -------
    WorkEstimate
        Exact Python integers, saturating at `COUNT_CAP`; see the module docstring for the
        formulas.
    """
    check_policy(game, policy)
    num_s, horizon, acts = game.num_states, game.horizon, game.num_actions
    joint = game.num_joint_actions
    reach = reachable_states(game)
    if isinstance(policy, MarkovCorrelatedPolicy):
        cost = horizon * num_s * joint * (num_s + max(acts))
        n = game.num_players
        return WorkEstimate(
            index_length=1,
            ce_modifications=tuple(_modification_count(a, reach) for a in acts),
            ce_nodes=(1,) * n,
            cce_history_nodes=(horizon * num_s,) * n,
            value_work=horizon * num_s * joint * (num_s + n),
            ce_work=n * cost,
            cce_work=n * cost,
        )
    T = policy.T
    # Reachability of s' from s under some joint action, per step (for the history count).
    steps_reach = [(game.transitions[h].reshape(num_s, -1, num_s) > 0).any(axis=1) for h in range(horizon)]
    setup = horizon * T * num_s * joint * (num_s + 1)
    ce_nodes: list[int] = []
    cce_nodes: list[int] = []
    mods: list[int] = []
    ce_work = cce_work = 0
    for a_i in acts:
        others = joint // a_i
        # CE: nodes per step; the choices at step h multiply the nodes of step h+1.
        nodes_h, total_nodes = 1, 0
        per_node = T * num_s * a_i * (a_i + num_s) + NODE_OVERHEAD
        for h in range(horizon):
            total_nodes = min(total_nodes + nodes_h, COUNT_CAP)
            nodes_h = _sat_mul(nodes_h, _sat_pow(a_i**a_i, int(reach[h].sum())))
        ce_nodes.append(total_nodes)
        mods.append(_modification_count(a_i, reach))
        ce_work = min(ce_work + setup + total_nodes * per_node, COUNT_CAP)
        # CCE: history nodes per (step, state).
        count = [0] * num_s
        count[game.initial_state] = 1
        total_hist = 0
        for h in range(horizon):
            total_hist = min(total_hist + sum(count), COUNT_CAP)
            if h + 1 < horizon:
                nxt = [0] * num_s
                for s in range(num_s):
                    if count[s]:
                        for s2 in np.flatnonzero(steps_reach[h][s]):
                            nxt[int(s2)] = min(nxt[int(s2)] + count[s] * others, COUNT_CAP)
                count = nxt
        cce_nodes.append(min(total_hist, COUNT_CAP))
        cce_work = min(cce_work + setup + total_hist * (T * others + joint * num_s + NODE_OVERHEAD), COUNT_CAP)
    return WorkEstimate(
        index_length=T,
        ce_modifications=tuple(mods),
        ce_nodes=tuple(ce_nodes),
        cce_history_nodes=tuple(cce_nodes),
        value_work=horizon * T * num_s * joint * (num_s + game.num_players),
        ce_work=int(ce_work),
        cce_work=int(cce_work),
    )


def _modification_count(a_i: int, reach) -> int:
    return _sat_pow(a_i**a_i, sum(int(r.sum()) for r in reach))
