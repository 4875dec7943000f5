r"""The built-in learners, by name: external-regret learners and the Blum–Mansour reduction over each.

=================  ==========================================================================
name               learner
=================  ==========================================================================
``hedge``          optimistic Hedge (OFTRL, negative entropy; Syrgkanis et al. 2015)
``logbarrier``     log-barrier OFTRL (Mao et al. 2024, the base learner of Algorithm 1)
``rm-plus``        predictive regret matching+ (Farina, Kroer and Sandholm 2021)
``ogda``           optimistic gradient ascent on the simplex (projected steps of size ``eta``)
``extragradient``  extragradient on the simplex (two utility queries; Korpelevich 1976)
``exrm-plus``      extragradient RM+ (two utility queries; Cai et al., ICLR 2025)
``sprm-plus``      smooth predictive RM+ (Farina et al., NeurIPS 2023)
``bm-hedge``       Blum–Mansour over ``hedge`` (swap regret)
``bm-logbarrier``  Blum–Mansour over ``logbarrier``: Algorithm 1's BM-OFTRL
``bm-rm-plus``     Blum–Mansour over ``rm-plus``
=================  ==========================================================================

[`swap_regret`][markovgames.learners.swap_regret] builds the reduction over any external-regret [`LearnerSpec`][markovgames.learners.LearnerSpec],
a user's included.
"""

from __future__ import annotations

from ._learner import BUILTIN_BUILDS, LearnerSpec
from ._oftrl import log_barrier_oftrl, optimistic_hedge
from ._projected import extragradient, extragradient_rm_plus, optimistic_gradient, smooth_predictive_rm_plus
from ._rm_plus import predictive_regret_matching_plus
from ._swap import SwapBuild

__all__ = [
    "OGDA",
    "EXTRAGRADIENT",
    "EXRM_PLUS",
    "SPRM_PLUS",
    "HEDGE",
    "LOGBARRIER",
    "RM_PLUS",
    "BM_HEDGE",
    "BM_LOGBARRIER",
    "BM_RM_PLUS",
    "BUILTIN_LEARNERS",
    "swap_regret",
]

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

OGDA = LearnerSpec(
    "ogda",
    optimistic_gradient,
    description="optimistic gradient ascent on the simplex (unweighted: use with smooth-uniform)",
    citation="Popov 1980; Rakhlin and Sridharan, NeurIPS 2013",
)
EXTRAGRADIENT = LearnerSpec(
    "extragradient",
    extragradient,
    description="extragradient on the simplex, two utility queries (unweighted: use with smooth-uniform)",
    citation="Korpelevich 1976",
)
EXRM_PLUS = LearnerSpec(
    "exrm-plus",
    extragradient_rm_plus,
    description="extragradient RM+, two utility queries (unweighted: use with smooth-uniform)",
    citation="Cai, Farina, Grand-Clément, Kroer, Lee, Luo and Zheng, ICLR 2025",
)
SPRM_PLUS = LearnerSpec(
    "sprm-plus",
    smooth_predictive_rm_plus,
    description="smooth predictive RM+ on the chopped-off cone (unweighted: use with smooth-uniform)",
    citation="Farina, Grand-Clément, Kroer, Lee and Luo, NeurIPS 2023",
)


BUILTIN_BUILDS.extend(spec.build for spec in (HEDGE, LOGBARRIER, RM_PLUS, OGDA, EXTRAGRADIENT, EXRM_PLUS, SPRM_PLUS))


def swap_regret(base: LearnerSpec, description: str | None = None, citation: str | None = None) -> LearnerSpec:
    """The Blum–Mansour swap-regret reduction over the external-regret learner ``base``, named
    ``bm-`` + its name (``description`` and ``citation`` default to ones naming ``base``)."""
    if not isinstance(base, LearnerSpec):
        raise TypeError(f"swap_regret needs a LearnerSpec, got {type(base).__name__}")
    if base.swap_regret:
        raise ValueError(f"learner {base.name!r} already minimises swap regret; the reduction takes an external-regret learner")
    if base.learner().propose is not None:
        raise ValueError(
            f"learner {base.name!r} makes two utility queries per iteration; the reduction takes learners of one query"
        )
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
    spec.name: spec
    for spec in (HEDGE, LOGBARRIER, RM_PLUS, OGDA, EXTRAGRADIENT, EXRM_PLUS, SPRM_PLUS, BM_HEDGE, BM_LOGBARRIER, BM_RM_PLUS)
}
