r"""Work estimates for the exact gaps, and the refusal when they are too large (docs/gaps.md).

The exact CE and CCE gaps of an output policy are hard problems in general: the CE gap maximises
over strategy modifications whose number grows like :math:`(A_i^{A_i})^{S H}`, the CCE gap recurses
over observable histories whose number grows like :math:`(S\,|A_{-i}|)^{H}`, and both carry a belief
over ``T`` hidden indices. Before computing, [`estimate_work`][markovgames.evaluation.estimate_work]
counts their work in "elementary operations" (array entries read or written, and `NODE_OVERHEAD`
per search or history node for the Python around it), with the cost model the evaluators count
their own work with as they run (`WorkCounter`; the results' ``work``). The exact gap functions
raise [`EvaluationTooLarge`][markovgames.evaluation.EvaluationTooLarge] when the estimate exceeds
their ``max_work`` argument, and stop with it when their counted work passes it.

Counts (per player ``i``, ``a = A_i``, ``J = |A|``, ``O = |A_{-i}|``; summed over players):

* **CE** (branch and bound over modifications, one step at a time, last step in closed form): the
  tables of each step (``T S (J + J S + a S + 2 a^2)``), the identity's value, and the search.
  Its nodes are not known in advance: the bounds prune (on every output policy measured, the
  search visited the greedy path, one node per step, or one or two more), so ``ce_work`` counts
  that path: per step a node (``T S a (2 a + 1)``), one trial per reachable pair ``(s, a)``
  (``T S`` each) and the push of the step's law (``T S``). ``ce_work_worst`` counts every node of
  a search that prunes nothing, each trying every choice of its ``P`` pairs (``a + a^2 + ... + a^P``
  trials, ``a^P`` pushes): :math:`n_0 = 1,\ n_{h+1} = n_h \prod_{s \in R_h} A_i^{A_i}` with
  :math:`R_h` the states reachable at step ``h`` (``ce_nodes``). A search that passes ``max_work``
  stops (`WorkCounter`).
* **CCE** (recursion over observable histories): the value of the policy, the tables of each step
  (``T S (O + J + J S + a S + a)``) and the history nodes, :math:`c_0 = \delta_{s_1}`,
  :math:`c_{h+1}(s') = \sum_s c_h(s) O\,[s' \text{ reachable from } s]`, each costing
  ``T O + a O`` and, before the last step, ``T O`` for the posterior, ``T O`` per push of it (one
  per reachable next state where the index kernel depends on the state, as V-learning's does;
  one otherwise) and ``a O S``.

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
    "WorkCounter",
    "WorkEstimate",
    "estimate_work",
    "DEFAULT_MAX_WORK",
    "NODE_OVERHEAD",
    "COUNT_CAP",
    "format_count",
]

#: Default refusal limit of [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap] and
#: [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap]: 10 to 40 seconds of work (measured on
#: V-learning's output policies, two shared cores: 5e7 to 2e8 counted units a second).
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

    def __init__(self, what: str, work: int, limit: float, estimate: WorkEstimate, detail: str, stopped: bool = False):
        self.what, self.work, self.limit, self.estimate = what, int(work), int(limit), estimate
        self.stopped = stopped
        if stopped:
            super().__init__(
                f"{what} stopped: its work passed the limit max_work={float(limit):.3g} ({detail}); pass a "
                "larger max_work to compute it anyway"
            )
            return
        super().__init__(
            f"{what} refused: estimated work {format_count(int(work))} ({detail}) exceeds the limit "
            f"max_work={float(limit):.3g}; pass a larger max_work to compute it anyway"
        )


def refuse_above(what: str, work: int, max_work: float | None, estimate: WorkEstimate, detail: str) -> None:
    """Raise `EvaluationTooLarge` when ``max_work`` is set and ``work`` exceeds it."""
    if max_work is not None and work > max_work:
        raise EvaluationTooLarge(what, work, max_work, estimate, detail)


class WorkCounter:
    """The work an exact evaluation does, counted as it runs in `estimate_work`'s units; it raises
    `EvaluationTooLarge` (``stopped``) once the count passes ``limit`` (``None``: never)."""

    def __init__(self, what: str, limit: float | None, estimate: WorkEstimate, estimated: int):
        self.what, self.limit, self.estimate, self.estimated = what, limit, estimate, int(estimated)
        self.work = 0

    def add(self, units: int) -> None:
        self.work += int(units)
        if self.limit is not None and self.work > self.limit:
            detail = f"estimated {format_count(self.estimated)}, counted {format_count(self.work)} so far"
            raise EvaluationTooLarge(self.what, self.work, self.limit, self.estimate, detail, stopped=True)


@dataclass(frozen=True)
class WorkEstimate:
    """Sizes and work of the exact evaluations of one policy (see the module docstring).

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
        [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap] (when its bounds prune: the greedy
        path) and [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap] (all players).
    ce_work_worst : int
        The exact CE gap's work if its search pruned nothing (every one of ``ce_nodes``).
    """

    index_length: int
    ce_modifications: tuple[int, ...]
    ce_nodes: tuple[int, ...]
    cce_history_nodes: tuple[int, ...]
    value_work: int
    ce_work: int
    cce_work: int
    ce_work_worst: int = 0

    def describe(self) -> str:
        """A short human-readable summary (for command-line output)."""
        return (
            f"T={self.index_length}; CE: {_fmt(self.ce_nodes)} search nodes per player "
            f"({_fmt(self.ce_modifications)} modifications), work {format_count(self.ce_work)} "
            f"(at most {format_count(max(self.ce_work, self.ce_work_worst))}); "
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
            ce_work_worst=n * cost,
        )
    T = policy.T
    state_dependent = bool(getattr(policy.kernel, "state_dependent", False))
    # Reachability of s' from s under some joint action, per step (for the history count).
    steps_reach = [(game.transitions[h].reshape(num_s, -1, num_s) > 0).any(axis=1) for h in range(horizon)]
    value_work = _sat_mul(T, horizon * num_s * joint * (num_s + game.num_players))
    ce_nodes: list[int] = []
    cce_nodes: list[int] = []
    mods: list[int] = []
    ce_work, ce_worst, cce_work = 0, 0, value_work
    for a_i in acts:
        others = joint // a_i
        tables = _sat_mul(T, horizon * ce_table_work(num_s, joint, a_i))
        identity = _sat_mul(T, horizon * num_s * a_i + (horizon - 1) * num_s * (a_i * num_s + 1))
        # CE: nodes per step; the choices at step h multiply the nodes of step h+1.
        nodes_h, total_nodes, greedy, worst = 1, 0, 0, 0
        for h in range(horizon):
            total_nodes = min(total_nodes + nodes_h, COUNT_CAP)
            node = _sat_mul(T, ce_node_work(num_s, a_i, last=h == horizon - 1)) + NODE_OVERHEAD
            pairs = 0 if h == horizon - 1 else int(reach[h].sum()) * a_i
            # The greedy path: one trial per reachable pair and one push of the step's law.
            trials = 0 if h == horizon - 1 else _sat_mul(T, num_s * (pairs + 1))
            greedy = min(greedy + node + trials, COUNT_CAP)
            # Without pruning a node tries every choice of every pair, a tree of a + a^2 + ... + a^P
            # trials whose a^P leaves each push a law to a node of the next step.
            leaves = _sat_pow(a_i, pairs)
            tree = min(a_i * (leaves - 1) // (a_i - 1), COUNT_CAP) if a_i > 1 else pairs
            branching = 0 if h == horizon - 1 else _sat_mul(T * num_s, tree + leaves)
            worst = min(worst + _sat_mul(nodes_h, node + branching), COUNT_CAP)
            nodes_h = _sat_mul(nodes_h, _sat_pow(a_i**a_i, int(reach[h].sum())))
        ce_nodes.append(total_nodes)
        mods.append(_modification_count(a_i, reach))
        ce_work = min(ce_work + tables + identity + greedy, COUNT_CAP)
        ce_worst = min(ce_worst + tables + identity + worst, COUNT_CAP)
        # CCE: history nodes per (step, state), each with its cost.
        cce_work = min(cce_work + _sat_mul(T, horizon * cce_table_work(num_s, joint, a_i)), COUNT_CAP)
        count = [0] * num_s
        count[game.initial_state] = 1
        total_hist = 0
        for h in range(horizon):
            total_hist = min(total_hist + sum(count), COUNT_CAP)
            last = h + 1 == horizon
            for s in range(num_s):
                if count[s]:
                    pushes = int(np.count_nonzero(steps_reach[h][s])) if state_dependent else 1
                    cost = cce_node_work(T, num_s, others, a_i, 0 if last else pushes) + NODE_OVERHEAD
                    cce_work = min(cce_work + _sat_mul(count[s], cost), COUNT_CAP)
            if not last:
                nxt = [0] * num_s
                for s in range(num_s):
                    if count[s]:
                        for s2 in np.flatnonzero(steps_reach[h][s]):
                            nxt[int(s2)] = min(nxt[int(s2)] + count[s] * others, COUNT_CAP)
                count = nxt
        cce_nodes.append(min(total_hist, COUNT_CAP))
    return WorkEstimate(
        index_length=T,
        ce_modifications=tuple(mods),
        ce_nodes=tuple(ce_nodes),
        cce_history_nodes=tuple(cce_nodes),
        value_work=int(value_work),
        ce_work=int(ce_work),
        cce_work=int(cce_work),
        ce_work_worst=int(ce_worst),
    )


def ce_table_work(num_s: int, joint: int, a_i: int) -> int:
    """The exact CE search's tables of one step, per index: the utilities, the transitions under
    the others' play, the continuation bound, the bound table and its pull (``S (J + J S + a S + 2 a^2)``)."""
    return num_s * (joint + joint * num_s + a_i * num_s + 2 * a_i * a_i)


def ce_node_work(num_s: int, a_i: int, last: bool) -> int:
    """One node of the CE search, per index: the immediate rewards and the mass of every pair, and
    (before the last step) their bounds: ``S a (2 a + 1)`` (``S a (a + 1)`` at the last step)."""
    return num_s * a_i * (a_i + 1 + (0 if last else a_i))


def cce_table_work(num_s: int, joint: int, a_i: int) -> int:
    """The CCE recursion's tables of one step, per index: the others' likelihoods, the certified
    bound's utilities and transitions, its continuation and pull (``S (O + J + J S + a S + a)``)."""
    return num_s * (joint // a_i + joint + joint * num_s + a_i * num_s + a_i)


def cce_node_work(T: int, num_s: int, others: int, a_i: int, pushes: int) -> int:
    """One history node of the CCE recursion: the law of the others' actions and the immediate
    rewards (``T O + a O``) and, with ``pushes`` pushes of the posterior (0 at the last step), the
    posterior, the pushes and the continuation (``T O (1 + pushes) + a O S``)."""
    work = _sat_mul(T, others) + a_i * others
    if pushes:
        work = min(work + _sat_mul(T * others, 1 + pushes) + a_i * others * num_s, COUNT_CAP)
    return work


def _modification_count(a_i: int, reach) -> int:
    return _sat_pow(a_i**a_i, sum(int(r.sum()) for r in reach))
