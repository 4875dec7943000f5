r"""The built-in learners, by name: external-regret learners and the Blum–Mansour reduction over each.

=================  ==========================================================================
name               learner
=================  ==========================================================================
``hedge``          optimistic Hedge (OFTRL, negative entropy; Syrgkanis et al. 2015)
``logbarrier``     log-barrier OFTRL (Mao et al. 2024, the base learner of Algorithm 1)
``rm-plus``        predictive regret matching+ (Farina, Kroer and Sandholm 2021)
``bm-hedge``       Blum–Mansour over ``hedge`` (swap regret)
``bm-logbarrier``  Blum–Mansour over ``logbarrier``: Algorithm 1's BM-OFTRL
``bm-rm-plus``     Blum–Mansour over ``rm-plus``
=================  ==========================================================================

[`swap_regret`][markovgames.learners.swap_regret] builds the reduction over any external-regret [`LearnerSpec`][markovgames.learners.LearnerSpec],
a user's included.
"""

from __future__ import annotations

from ._learner import LearnerSpec
from ._oftrl import log_barrier_oftrl, optimistic_hedge
from ._rm_plus import predictive_regret_matching_plus
from ._swap import SwapBuild

__all__ = ["HEDGE", "LOGBARRIER", "RM_PLUS", "BM_HEDGE", "BM_LOGBARRIER", "BM_RM_PLUS", "BUILTIN_LEARNERS", "swap_regret"]

_SWAP_PREFIX = "bm-"

HEDGE = LearnerSpec(
    "hedge",
    optimistic_hedge,
    description="optimistic Hedge: OFTRL with the negative entropy",
    citation="Syrgkanis et al., NeurIPS 2015",
)
LOGBARRIER = LearnerSpec(
    "logbarrier",
    log_barrier_oftrl,
    description="log-barrier OFTRL (Algorithm 1's base learner)",
    citation="Mao et al., L4DC 2024",
)
RM_PLUS = LearnerSpec(
    "rm-plus",
    predictive_regret_matching_plus,
    description="predictive regret matching+, on weighted regrets (eta has no effect)",
    citation="Farina, Kroer and Sandholm, AAAI 2021",
)


def swap_regret(base: LearnerSpec, description: str | None = None, citation: str | None = None) -> LearnerSpec:
    """The Blum–Mansour swap-regret reduction over the external-regret learner ``base``, named
    ``bm-`` + its name (``description`` and ``citation`` default to ones naming ``base``)."""
    if not isinstance(base, LearnerSpec):
        raise TypeError(f"swap_regret needs a LearnerSpec, got {type(base).__name__}")
    if base.swap_regret:
        raise ValueError(f"learner {base.name!r} already minimises swap regret; the reduction takes an external-regret learner")
    return LearnerSpec(
        _SWAP_PREFIX + base.name,
        SwapBuild(base.build),
        description=description or f"Blum–Mansour reduction over {base.name}",
        citation=citation or "Blum and Mansour, JMLR 2007",
        swap_regret=True,
    )


BM_HEDGE = swap_regret(HEDGE)
BM_LOGBARRIER = swap_regret(
    LOGBARRIER,
    description="BM-OFTRL: Blum–Mansour over logbarrier (Algorithm 1's learner)",
    citation="Mao et al., L4DC 2024; Blum and Mansour, JMLR 2007",
)
BM_RM_PLUS = swap_regret(RM_PLUS)

#: The built-in learners by name, in listing order.
BUILTIN_LEARNERS: dict[str, LearnerSpec] = {
    spec.name: spec for spec in (HEDGE, LOGBARRIER, RM_PLUS, BM_HEDGE, BM_LOGBARRIER, BM_RM_PLUS)
}
