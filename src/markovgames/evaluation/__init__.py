r"""Exact and Monte Carlo evaluation of correlated policies (docs/gaps.md).

For the output policies of Algorithms 3 and 4 of Mao et al. (L4DC 2024) — correlated, non-Markov
policies played through a hidden index chain ([`IndexChainPolicy`][markovgames.policies.IndexChainPolicy]) —
and for Markov correlated policies ([`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy]):

* [`policy_value`][markovgames.evaluation.policy_value] — the exact value at ``s_1`` (index recursion, O(T) per step);
* [`exact_ce_gap`][markovgames.evaluation.exact_ce_gap] — the exact CE gap over the paper's strategy modifications
  :math:`\phi^s_{h,i}: A_i \to A_i` (Section 2), with a maximising modification (branch and bound for
  index-chain policies, backward induction for Markov ones);
* [`exact_cce_gap`][markovgames.evaluation.exact_cce_gap] — the exact CCE gap over deviations that observe states and past actions
  but not the hidden index, with a best deviation (may be negative; never clipped);
* [`nash_gap`][markovgames.evaluation.nash_gap] — the exact Nash gap of a product Markov policy (each player's best response to
  the others' Markov policies, by backward induction), with the best responses;
* [`duality_gap`][markovgames.evaluation.duality_gap] — the duality gap of a product policy in a
  two-player constant-sum game (finite-horizon or discounted);
* [`average_iterate`][markovgames.evaluation.average_iterate] — the state-wise weighted average of
  a trajectory of iterates, with the papers' weights (``"paper"``: Zhang et al. 2022, Yang and Ma
  2023), uniform, linear or stage-based ones, or any given;
* [`estimate_work`][markovgames.evaluation.estimate_work] /
  [`EvaluationTooLarge`][markovgames.evaluation.EvaluationTooLarge] — sizes of those problems and
  the refusal when they are too large;
* [`sample_episodes`][markovgames.evaluation.sample_episodes] /
  [`monte_carlo_value`][markovgames.evaluation.monte_carlo_value] — vectorised simulation,
  optionally with one player following a modification or deviation.

Always ``0 <= exact CE gap <= certified CE gap`` and ``exact CCE gap <= certified CCE gap``, the
certified gaps being the index-revealing bounds reported by [`markovgames.dynamics.run`][markovgames.dynamics.run].
"""

from ..policies import IndexKernel
from ._average import AVERAGING_WEIGHTS, average_iterate, duality_gap
from ._cce import CCEGapResult, HistoryDeviation, MarkovDeviation, exact_cce_gap
from ._ce import CEGapResult, StrategyModification, exact_ce_gap
from ._common import check_policy, check_product_policy
from ._discounted import (
    BEST_RESPONSE_METHODS,
    DiscountedNashGapResult,
    DiscountedValue,
    check_stationary_policy,
    discounted_best_response,
    discounted_duality_gap,
    discounted_nash_gap,
    discounted_policy_value,
    solve_mdp,
)
from ._monte_carlo import DEFAULT_BATCH, MonteCarloEstimate, monte_carlo_value
from ._nash import NashGapResult, nash_gap
from ._prefix_curves import PrefixCurves, prefix_curves
from ._sampling import Episodes, sample_episodes
from ._value import policy_value
from ._work import DEFAULT_MAX_WORK, EvaluationTooLarge, WorkEstimate, estimate_work

__all__ = [
    # discounted games: stationary product policies
    "discounted_policy_value",
    "discounted_best_response",
    "discounted_nash_gap",
    "discounted_duality_gap",
    "check_stationary_policy",
    "solve_mdp",
    "DiscountedValue",
    "DiscountedNashGapResult",
    "BEST_RESPONSE_METHODS",
    "PrefixCurves",
    "prefix_curves",
    "check_policy",
    "check_product_policy",
    "policy_value",
    "exact_ce_gap",
    "exact_cce_gap",
    "nash_gap",
    "NashGapResult",
    "duality_gap",
    "average_iterate",
    "AVERAGING_WEIGHTS",
    "CEGapResult",
    "CCEGapResult",
    "StrategyModification",
    "HistoryDeviation",
    "MarkovDeviation",
    "EvaluationTooLarge",
    "estimate_work",
    "WorkEstimate",
    "DEFAULT_MAX_WORK",
    "monte_carlo_value",
    "DEFAULT_BATCH",
    "sample_episodes",
    "MonteCarloEstimate",
    "Episodes",
    "IndexKernel",
]
