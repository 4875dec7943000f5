"""Playing a correlated policy step by step: the shared randomness and each player's draw.

[`PolicyPlayer`][markovgames.policies.PolicyPlayer] plays one episode at a time. For an index-chain policy it draws the hidden
index before each step (``j_1 ~ mu_{t_0}``, then ``j_{h+1} ~ mu_{j_h}``; the draw is shared by all
players), then each player draws its own action from its own marginal ``pi^{j_h}_{h,i}(s, .)``.
For a Markov correlated policy it draws a joint action from ``joint[h, s]`` and recommends each
player its part. Vectorised rollouts of many episodes are in [`markovgames.evaluation`][markovgames.evaluation].
"""

from __future__ import annotations

import numpy as np

from .._rng import as_generator
from ._index_chain import IndexChainPolicy
from ._markov import MarkovCorrelatedPolicy
from ._visit_chain import VisitChainPolicy

__all__ = ["PolicyPlayer"]


class PolicyPlayer:
    """Step-by-step play of an [`IndexChainPolicy`][markovgames.policies.IndexChainPolicy] or a
    [`MarkovCorrelatedPolicy`][markovgames.policies.MarkovCorrelatedPolicy].

    Call `reset` at the start of an episode, then `act` once per step ``h = 0..H-1``
    with the current state. ``index`` is the hidden index of the current step (index-chain
    policies only; the players do not see it).
    """

    def __init__(self, policy, seed_or_rng) -> None:
        if not isinstance(policy, (IndexChainPolicy, VisitChainPolicy, MarkovCorrelatedPolicy)):
            raise TypeError(
                f"expected an IndexChainPolicy, a VisitChainPolicy or a MarkovCorrelatedPolicy, got {type(policy).__name__}"
            )
        self.policy = policy
        self.rng = as_generator(seed_or_rng)
        self.index: int | None = None
        self._step = 0

    def reset(self) -> None:
        """Start an episode: draw ``t_0`` (index-chain policies)."""
        self._step = 0
        if isinstance(self.policy, (IndexChainPolicy, VisitChainPolicy)):
            self.index = int(self.policy.kernel.sample_start(1, self.rng)[0])

    def act(self, h: int, state: int) -> tuple[int, ...]:
        """The joint action played at step ``h`` in ``state`` (one action per player)."""
        if h != self._step:
            raise ValueError(f"act called for step {h}, expected step {self._step} (call reset() first)")
        self._step += 1
        policy = self.policy
        if isinstance(policy, MarkovCorrelatedPolicy):
            joint = policy.joint[h, state]
            flat = self.rng.choice(joint.size, p=joint.ravel())
            return tuple(int(a) for a in np.unravel_index(flat, joint.shape))
        if self.index is None:
            raise ValueError("call reset() before act()")
        # The index is drawn before the step: step 0 plays pi^{j_1}, never pi^{t_0}.
        self.index = int(policy.kernel.sample_next_at(h, np.asarray([state]), np.asarray([self.index]), self.rng)[0])
        return tuple(int(self.rng.choice(p.shape[-1], p=p[self.index - 1, h, state])) for p in policy.policies)
