r"""Fast, vectorised operations with the hidden index kernel of the output policies (docs/explanation.md, "The output policies").

The output policies of Algorithms 3 and 4 (Mao et al., L4DC 2024) move a hidden index through a
Markov kernel :math:`\mu_t(j)` on ``1..T``. Evaluation needs the kernel in two directions:

* **push** (forward, on distributions): :math:`\nu(j) = \sum_t b(t)\,\mu_t(j)` — the law of the
  next index when the current one has law ``b``;
* **pull** (backward, on functions): :math:`f(t) = \sum_j \mu_t(j)\, g(j)` — the expectation of
  ``g`` at the next index given the current index ``t``.

Neither ever forms the ``T x T`` matrix. For the smooth kernel (Algorithm 3),
:math:`\mu_t(j) = \alpha_t^j = w_j / W_t` with :math:`w_j = \binom{H+j-1}{H}` and
:math:`W_t = \sum_{j\le t} w_j = \binom{H+t}{H+1}` (docs/explanation.md, "Step sizes and weights"), so

.. math:: \nu(j) = w_j \sum_{t \ge j} \frac{b(t)}{W_t}, \qquad
          f(t) = \frac{1}{W_t} \sum_{j \le t} w_j\, g(j),

a reversed and a forward cumulative sum. The raw weights grow like :math:`j^H` and overflow for
large ``H``; the sums are therefore taken over blocks of indices inside which the weight ratios stay
within :math:`e^{\pm 300}` (one block for small ``H``), with the block-to-block carry expressed
through exact ratios. For the stage kernel (Algorithm 4) push and pull are segment sums / means
over stages.

Sampling the chain ([`IndexKernel.sample_next`][markovgames.policies.IndexKernel.sample_next]) inverts the CDF :math:`P(J\le j\mid t) = W_j/W_t`
(smooth) or draws uniformly from the previous stage (stage).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .._rng import as_generator
from .._schedules import SMOOTH_KERNELS, smoothing_order, stage_schedule

__all__ = ["IndexKernel", "KERNEL_KINDS", "TrajectorySuffix", "trajectory_suffix"]

#: The output policies' index kernels: Algorithm 3's with each averaging, and Algorithm 4's.
KERNEL_KINDS: tuple[str, ...] = (*SMOOTH_KERNELS, "stage")

#: Largest log-ratio of weights allowed inside one block of the smooth cumulative sums.
_BLOCK_LOG_RATIO = 300.0


@dataclass(frozen=True, eq=False)
class IndexKernel:
    r"""The index kernel :math:`\mu` of an output policy, with O(T) vectorised push, pull and sampling.

    Parameters
    ----------
    kind : ``"smooth"`` (Algorithm 3), ``"smooth-uniform"`` or ``"smooth-linear"`` (Algorithm 3
        with uniform or linear averaging: the order ``k`` of ``markovgames.dynamics``' averaging
        is 0 or 1 instead of ``H``, see `smoothing_order`), or ``"stage"`` (Algorithm 4).
    T : int
        Number of iterations (indices ``1..T``; arrays use row ``t - 1``).
    horizon : int
        ``H`` (it fixes the weights ``w_j`` and the stage lengths).
    """

    kind: str
    T: int
    horizon: int
    # Tables that __post_init__ builds: the smooth kernel's log-weights, alpha and blocks, or the
    # stage kernel's 0-based stage rows. Only the tables of the kernel's own kind are set.
    _log_w: np.ndarray = field(init=False, repr=False)
    _log_W: np.ndarray = field(init=False, repr=False)
    _alpha: np.ndarray = field(init=False, repr=False)
    _blocks: tuple[tuple[int, int], ...] = field(init=False, repr=False)
    _starts: np.ndarray = field(init=False, repr=False)
    _ends: np.ndarray = field(init=False, repr=False)
    _target: np.ndarray = field(init=False, repr=False)
    _stage_of: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KERNEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KERNEL_KINDS))}, got {self.kind!r}")
        T, H = int(self.T), int(self.horizon)
        if T < 1 or H < 1:
            raise ValueError(f"need T >= 1 and H >= 1, got T={T}, H={H}")
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "horizon", H)
        if self.is_smooth:
            k = smoothing_order(self.kind, H)  # H for the paper's averaging
            j = np.arange(1, T + 1, dtype=np.float64)
            # log w_j = sum_{i=2..j} log(w_i / w_{i-1}) with w_i / w_{i-1} = (k+i-1)/(i-1): a sum of
            # small positive terms (no cancellation), never the huge weights themselves.
            steps = np.log1p(k / np.maximum(j - 1.0, 1.0))
            steps[0] = 0.0
            log_w = np.cumsum(steps)
            # alpha_t = w_t / W_t = (k+1)/(k+t), so log W_t = log w_t - log alpha_t.
            alpha = (k + 1.0) / (k + j)
            log_W = log_w - np.log(alpha)
            blocks = []
            start = 0
            while start < T:
                # Largest end with log w_end - log w_start <= limit (and the same for W, which only
                # differs by the bounded factor (H+t)/(H+1) per block; the limit leaves room for it).
                end = int(np.searchsorted(log_W, log_W[start] + _BLOCK_LOG_RATIO, side="right"))
                end = max(end, start + 1)
                blocks.append((start, min(end, T)))
                start = end
            object.__setattr__(self, "_log_w", log_w)
            object.__setattr__(self, "_log_W", log_W)
            object.__setattr__(self, "_alpha", alpha)
            object.__setattr__(self, "_blocks", tuple(blocks))
        else:
            sched = stage_schedule(H, T)
            starts = sched.starts.astype(np.int64) - 1  # 0-based row of each stage's first index
            ends = np.minimum(starts + sched.lengths, T)  # exclusive, cut by T
            target = np.maximum(np.arange(len(starts)) - 1, 0)  # stage k+1 -> stage k; stage 1 -> itself
            stage_of = (sched.stage - 1).astype(np.int64)  # 0-based stage of each row
            object.__setattr__(self, "_starts", starts)
            object.__setattr__(self, "_ends", ends)
            object.__setattr__(self, "_target", target)
            object.__setattr__(self, "_stage_of", stage_of)

    @property
    def is_smooth(self) -> bool:
        """Whether it is Algorithm 3's kernel (any averaging), not Algorithm 4's."""
        return self.kind in SMOOTH_KERNELS

    @classmethod
    def of(cls, policy) -> IndexKernel:
        """The kernel of an [`IndexChainPolicy`][markovgames.policies.IndexChainPolicy]."""
        return cls(policy.kind, policy.T, policy.horizon)

    # ------------------------------------------------------------------ distributions
    def start_distribution(self) -> np.ndarray:
        """Law of the start index ``t_0``: ``T`` surely (smooth) or uniform on ``1..T`` (stage)."""
        d = np.zeros(self.T)
        if self.is_smooth:
            d[-1] = 1.0
        else:
            d[:] = 1.0 / self.T
        return d

    def first_index_distribution(self) -> np.ndarray:
        """Law of ``j_1``, the index played at step 0 (drawn before the first step: docs/explanation.md, "The output policies")."""
        return self.push(self.start_distribution())

    # ------------------------------------------------------------------ push / pull
    def push(self, belief: np.ndarray) -> np.ndarray:
        r"""``nu(j) = sum_t belief(t) mu_t(j)`` along axis 0 (trailing axes are batch axes), in O(T)."""
        b = np.asarray(belief, dtype=np.float64)
        if b.shape[0] != self.T:
            raise ValueError(f"belief: expected length {self.T} along axis 0, got {b.shape[0]}")
        if self.kind == "stage":
            sums = np.add.reduceat(b, self._starts, axis=0)
            out_stage = np.zeros_like(sums)
            # Each stage sends its whole mass to its target stage, spread uniformly over it.
            np.add.at(out_stage, self._target, sums)
            sizes = (self._ends - self._starts).astype(np.float64)
            per_row = out_stage / sizes.reshape((-1,) + (1,) * (b.ndim - 1))
            return per_row[self._stage_of]
        return self._smooth_push(b)

    def pull(self, values: np.ndarray) -> np.ndarray:
        r"""``f(t) = sum_j mu_t(j) values(j)`` along axis 0 (trailing axes are batch axes), in O(T)."""
        g = np.asarray(values, dtype=np.float64)
        if g.shape[0] != self.T:
            raise ValueError(f"values: expected length {self.T} along axis 0, got {g.shape[0]}")
        if self.kind == "stage":
            sums = np.add.reduceat(g, self._starts, axis=0)
            sizes = (self._ends - self._starts).astype(np.float64)
            means = sums / sizes.reshape((-1,) + (1,) * (g.ndim - 1))
            return means[self._target][self._stage_of]
        return self._smooth_pull(g)

    def _smooth_push(self, b: np.ndarray) -> np.ndarray:
        # nu(j) = w_j sum_{t>=j} b(t) / W_t, block by block from the end. Inside block [lo, hi),
        # with c = log w_lo: w_j / W_t = exp(log w_j - c) * exp(c - log W_t), both factors within
        # e^{+-300}. The tail beyond the block enters through nu(hi) = w_hi * sum_{t>=hi} b/W:
        # w_j * sum_{t>=hi} b/W = (w_j / w_hi) nu(hi).
        out = np.empty_like(b)
        shape = (-1,) + (1,) * (b.ndim - 1)
        carry = None  # nu at the first row of the block after the current one
        for lo, hi in reversed(self._blocks):
            c = self._log_w[lo]
            scaled = b[lo:hi] * np.exp(c - self._log_W[lo:hi]).reshape(shape)
            tail = np.cumsum(scaled[::-1], axis=0)[::-1]
            nu = np.exp(self._log_w[lo:hi] - c).reshape(shape) * tail
            if carry is not None:
                nu = nu + np.exp(self._log_w[lo:hi] - self._log_w[hi]).reshape(shape) * carry
            out[lo:hi] = nu
            carry = nu[0]
        return out

    def _smooth_pull(self, g: np.ndarray) -> np.ndarray:
        # f(t) = (1/W_t) sum_{j<=t} w_j g(j), block by block from the start. Inside block [lo, hi)
        # with c = log W_{hi-1}: w_j / W_t = exp(log w_j - c) * exp(c - log W_t). The head before
        # the block enters through f(lo-1): (1/W_t) sum_{j<lo} w_j g(j) = (W_{lo-1} / W_t) f(lo-1).
        out = np.empty_like(g)
        shape = (-1,) + (1,) * (g.ndim - 1)
        carry = None  # f at the last row of the previous block
        for lo, hi in self._blocks:
            c = self._log_W[hi - 1]
            scaled = g[lo:hi] * np.exp(self._log_w[lo:hi] - c).reshape(shape)
            f = np.exp(c - self._log_W[lo:hi]).reshape(shape) * np.cumsum(scaled, axis=0)
            if carry is not None:
                f = f + np.exp(self._log_W[lo - 1] - self._log_W[lo:hi]).reshape(shape) * carry
            out[lo:hi] = f
            carry = f[-1]
        return out

    # ------------------------------------------------------------------ the step- and state-aware protocol
    # The evaluators apply kernels through these, so that V-learning's kernels, which depend on the
    # step and the state (`VisitKernel`), share their code; this kernel ignores both.
    state_dependent = False

    def push_at(self, h: int, s: int, belief: np.ndarray) -> np.ndarray:
        """`push` (the kernel does not depend on the step ``h`` nor the state ``s``)."""
        return self.push(belief)

    def pull_at(self, h: int, s: int, values: np.ndarray) -> np.ndarray:
        """`pull` (the kernel does not depend on the step ``h`` nor the state ``s``)."""
        return self.pull(values)

    def push_states(self, h: int, x: np.ndarray) -> np.ndarray:
        """`push` of an array ``(T, S, ...)``: the same kernel for every state."""
        return self.push(x)

    def pull_states(self, h: int, g: np.ndarray) -> np.ndarray:
        """`pull` of an array ``(T, S, ...)``: the same kernel for every state."""
        return self.pull(g)

    def first_index_distribution_at(self, state: int) -> np.ndarray:
        """`first_index_distribution` (whatever the initial state)."""
        return self.first_index_distribution()

    def sample_next_at(self, h: int, states: np.ndarray, current: np.ndarray, rng) -> np.ndarray:
        """`sample_next` (whatever the step and the states)."""
        return self.sample_next(current, rng)

    # ------------------------------------------------------------------ sampling
    def sample_start(self, size: int, rng) -> np.ndarray:
        """``size`` draws of the start index ``t_0`` (1-based, int64)."""
        if self.is_smooth:
            return np.full(size, self.T, dtype=np.int64)
        return as_generator(rng).integers(1, self.T + 1, size=size, dtype=np.int64)

    def sample_next(self, current: np.ndarray, rng) -> np.ndarray:
        r"""One draw of the next index ``j ~ mu_t`` for every entry ``t`` of ``current`` (1-based)."""
        gen = as_generator(rng)
        t = np.asarray(current, dtype=np.int64)
        u = gen.random(t.shape)
        if self.is_smooth:
            # P(J <= j | t) = W_j / W_t: the first j with log W_j >= log u + log W_t. Drawing u in
            # (0, 1] avoids log(0); the clip guards the last ulp of rounding.
            target = np.log1p(-u) + self._log_W[t - 1]
            j = np.searchsorted(self._log_W, target, side="left") + 1
            return np.clip(j, 1, t)
        stage = self._target[self._stage_of[t - 1]]
        lo, hi = self._starts[stage], self._ends[stage]
        j = lo + np.floor(u * (hi - lo)).astype(np.int64)
        return np.minimum(j, hi - 1) + 1


@dataclass(frozen=True)
class TrajectorySuffix:
    r"""Which part of a trajectory an output policy needs, up to a dropped index mass.

    Attributes
    ----------
    first_kept : int
        The first iteration kept (1 = the whole trajectory); iterations ``first_kept..T`` are kept.
    dropped_mass : float
        :math:`\delta`, the probability that the output policy's index chain visits an iteration
        ``< first_kept`` at some step (exact, computed with the kernel).
    horizon : int
        ``H``.
    """

    first_kept: int
    dropped_mass: float
    horizon: int

    @property
    def value_error_bound(self) -> float:
        r""":math:`H\delta`: bound on ``|V_i - V~_i|`` for every player, and on every deviation's value.

        The truncated policy plays :math:`\pi^{\text{first\_kept}}` wherever the chain is below
        ``first_kept``; coupling both policies on one chain, their episodes differ only on an event
        of probability :math:`\delta`, and a return lies in ``[0, H]``.
        """
        return self.horizon * self.dropped_mass

    @property
    def gap_error_bound(self) -> float:
        r""":math:`2H\delta`: bound on the change of any CE or CCE gap (value and best deviation each move by ``H delta``)."""
        return 2.0 * self.horizon * self.dropped_mass


def _escape_probability(kernel: IndexKernel, first_kept: int) -> float:
    """P(the chain visits an index < ``first_kept`` at some step), exactly.

    The law of the index is pushed step by step and the mass that lands below ``first_kept`` is
    removed and added up: the events "first goes below at step h" are disjoint, so the sum has no
    cancellation (``1 - surviving mass`` would lose everything below 1e-16).
    """
    if first_kept <= 1:
        return 0.0
    law = kernel.start_distribution()
    escaped = 0.0
    for _ in range(kernel.horizon):
        law = kernel.push(law)
        escaped += float(law[: first_kept - 1].sum())
        law[: first_kept - 1] = 0.0
    return escaped


def trajectory_suffix(kind: str, T: int, horizon: int, tolerance: float) -> TrajectorySuffix:
    r"""The shortest suffix ``first_kept..T`` of the trajectory whose dropped index mass is ``<= tolerance``.

    The output policy after ``T`` iterations (Algorithms 3 and 4) only ever plays the iterations its
    index chain visits; dropping the iterations before ``first_kept`` changes it only on the event
    that the chain goes below ``first_kept`` (probability `TrajectorySuffix.dropped_mass`).
    The kernel depends on ``T`` and ``H`` only, so the suffix is known before the run.

    The smooth chain never moves up (``mu_t`` lives on ``1..t``), and the stage chain never moves
    up once it has left stage 1, so for every ``first_kept`` beyond stage 1 the chain has gone below
    ``first_kept`` at some step exactly when its last index ``j_H`` is below it: one pass of ``H``
    pushes gives the whole curve, ``O(H T)``. Inside stage 1 (``first_kept <= H``), where the stage
    chain moves freely, the escape probability is computed by pushing with the dropped mass removed.

    ``kind`` is the output policy's kernel: ``"smooth"`` (Algorithm 3) or ``"stage"`` (Algorithm 4).
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real) or not 0.0 <= float(tolerance) < 1.0:
        raise ValueError(f"trajectory tolerance must be a number in [0, 1), got {tolerance!r}")
    tolerance = float(tolerance)
    kernel = IndexKernel(kind, T, horizon)
    law = kernel.start_distribution()
    for _ in range(kernel.horizon):
        law = kernel.push(law)
    below = np.cumsum(law)  # below[k] = P(j_H <= k + 1): nonnegative terms, no cancellation
    # Largest m with P(j_H <= m - 1) <= tolerance.
    first = min(int(np.searchsorted(below, tolerance, side="right")) + 1, int(T))
    monotone_from = 1 if kernel.is_smooth else int(stage_schedule(kernel.horizon, T).lengths[0]) + 1
    if first < monotone_from:
        # Inside stage 1: the escape probability is monotone in first_kept; search the few candidates.
        first = 1
        for m in range(2, min(monotone_from, int(T)) + 1):
            if _escape_probability(kernel, m) > tolerance:
                break
            first = m
        dropped = _escape_probability(kernel, first)
    else:
        dropped = 0.0 if first == 1 else float(below[first - 2])
    return TrajectorySuffix(first_kept=first, dropped_mass=dropped, horizon=int(horizon))
