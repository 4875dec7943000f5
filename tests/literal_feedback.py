"""Sampled feedback (``sampled:K``) written out literally, for the test-suite only.

The smooth and stage-based dynamics of tests/reference_impl.py (its literal learners and value
updates, `run_reference_composition`) with the feedback of a generative model, as
``markovgames.dynamics._feedback``'s module docstring defines it, fed the random numbers by
``draws(t, purpose, shape)``: the uniform numbers in ``[0, 1)`` of iteration ``t`` (1-based) for
``purpose`` (`NEXT_STATES`, `OTHERS`, `PROPOSALS`). A test gives the library's own numbers
(``iteration_uniforms(run_key_data(seed), t, purpose, shape, float64)``), so that both draw the
same samples; nothing else here comes from the library.

At iteration ``t``, with ``K`` samples per estimate:

* **Utilities.** ``u = draws(t, OTHERS, (N, K, N - 1, H, S))``; player ``i``'s utility at
  ``(h, s)`` against the profile ``view`` (the iteration's, or under alternation
  ``(pi^{t+1}_{<i}, pi^t_{>i})``) is ``(1/K) sum_k Q_i(h, s, ., a^k_{-i})`` with ``a^k_j`` drawn
  from ``view[j]`` by ``u[i, k, m, h, s]``, ``j`` the ``m``-th of the other players in increasing
  order (``m = j`` for ``j < i``, ``j - 1`` for ``j > i``).
* **Two-query learners.** Their prediction (the utility at the proposed strategies) is estimated
  the same way from ``draws(t, PROPOSALS, (N, K, N - 1, H, S))``.
* **Bellman targets.** ``u = draws(t, NEXT_STATES, (K, H - 1, S, A_0, ..., A_{N-1}))``; for every
  ``h < H - 1``, ``s`` and joint action ``a``, the value update's kernel row is the empirical
  distribution of the ``K`` next states drawn from ``P_h(. | s, a)`` by ``u[k, h, s, a]`` (the last
  step's row is never read). The smooth update draws it at every iteration, the stage-based one
  with the numbers of the iteration that ends each stage.

A draw from ``p`` by ``u`` is the first item whose cumulative probability exceeds ``u``, the
cumulative sum counting as 1 from the last item of positive probability on (`literal_draw`).

The output policy's value and certified bounds use the true game (`reference_impl.metrics_for_prefix`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

import reference_impl as ref

#: The purposes of an iteration's draws (the library's numbering).
NEXT_STATES, OTHERS, PROPOSALS = 0, 1, 2

Draws = Callable[[int, int, tuple], np.ndarray]


def literal_draw(p, u: float) -> int:
    """The item drawn from the distribution ``p`` by the uniform number ``u`` (inverse CDF): the
    first ``a`` with ``p_0 + ... + p_a > u``, the sum counting as 1 from the last item of positive
    probability on (so that a sum that rounding leaves short of 1 still lands on an item)."""
    last = max(a for a in range(len(p)) if p[a] > 0.0)
    total = 0.0
    for a in range(len(p)):
        total += p[a]
        if a >= last or total > u:
            return a
    raise AssertionError("unreachable")


class SampledFeedback:
    """A feedback object of `reference_impl.run_reference_composition` (see its `FullInformation`):
    ``K = samples`` draws per estimate, the uniform numbers from ``draws``."""

    def __init__(self, draws: Draws, samples: int, rewards_shape):
        self.draws = draws
        self.K = int(samples)
        self.H, self.N, self.S = rewards_shape[:3]
        self.A = tuple(rewards_shape[3:])
        self._cache: dict = {}
        #: What was drawn: (t, purpose) -> the number of samples (``K`` per utility estimate, ``K``
        #: per kernel row).
        self.used: dict = {}

    def _uniforms(self, t: int, purpose: int, shape: tuple) -> np.ndarray:
        key = (t, purpose)
        if key not in self._cache:
            u = np.asarray(self.draws(t, purpose, shape), dtype=np.float64)
            assert u.shape == shape and u.dtype == np.float64, (u.shape, u.dtype)
            assert np.all((u >= 0.0) & (u < 1.0))
            self._cache[key] = u
        return self._cache[key]

    def utility(self, t, purpose, Q, h, s, i, view):
        code = {"others": OTHERS, "proposals": PROPOSALS}[purpose]
        N, K = self.N, self.K
        u = self._uniforms(t, code, (N, K, N - 1, self.H, self.S))
        others = [j for j in range(N) if j != i]
        total = np.zeros(self.A[i])
        for k in range(K):
            profile = [None] * N
            for m, j in enumerate(others):
                profile[j] = literal_draw(view[j], u[i, k, m, h, s])
            for b in range(self.A[i]):
                profile[i] = b
                total[b] += Q[(h, i, s) + tuple(profile)]
        self.used[(t, code)] = self.used.get((t, code), 0) + K
        return total / K

    def kernel(self, t, transitions):
        H, S, K = self.H, self.S, self.K
        u = self._uniforms(t, NEXT_STATES, (K, H - 1, S, *self.A))
        empirical = np.array(transitions, dtype=np.float64, copy=True)
        for h in range(H - 1):
            for s in range(S):
                for a in itertools.product(*[range(n) for n in self.A]):
                    counts = np.zeros(S)
                    for k in range(K):
                        counts[literal_draw(transitions[(h, s) + a], u[(k, h, s) + a])] += 1.0
                    empirical[(h, s) + a] = counts / K
                    self.used[(t, NEXT_STATES)] = self.used.get((t, NEXT_STATES), 0) + K
        return empirical


def run_sampled_reference(
    rewards,
    transitions,
    initial_state: int,
    learner: str,
    update: str,
    eta,
    T: int,
    *,
    samples: int,
    draws: Draws,
    optimistic: bool = True,
    order: str = "simultaneous",
    prefixes=None,
) -> dict:
    """``learner+update`` under ``sampled:samples`` for ``T`` iterations, literally.

    Returns ``policies`` (per player ``(T, H, S, A_i)``: iterations 1..T), ``metrics`` (prefix ->
    `reference_impl.metrics_for_prefix`'s dict, the true game's value and certified bounds of the
    output policy after that many iterations; ``prefixes`` default: every one) and ``feedback``
    (the `SampledFeedback`, with what it drew).
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    transitions = np.asarray(transitions, dtype=np.float64)
    feedback = SampledFeedback(draws, samples, rewards.shape)
    out = ref.run_reference_composition(rewards, transitions, learner, update, eta, T, optimistic, order=order, feedback=feedback)
    H = rewards.shape[0]
    composition = f"{learner}+{update}"
    prefixes = range(1, T + 1) if prefixes is None else prefixes
    metrics = {
        p: ref.metrics_for_prefix(rewards, transitions, initial_state, composition, out["policies"], p, H) for p in prefixes
    }
    return {"policies": [p[1:] for p in out["policies"]], "metrics": metrics, "feedback": feedback}
