r"""The correlated, non-Markov output policies of Algorithms 3 and 4 (docs/explanation.md, "The output policies").

Both play through a hidden index chain shared by all players (common randomness): a start
index :math:`t_0`, then :math:`j_1 \sim \mu_{t_0}`, :math:`j_{h+1} \sim \mu_{j_h}`; at step ``h``
(0-based in code) every player plays its own part of the product policy :math:`\pi^{j_{h+1}}_h`
of iteration :math:`j_{h+1}`. The index is drawn *before* each step: step 0 plays
:math:`\pi^{j_1}`, never :math:`\pi^{t_0}`.

* Algorithm 3 (smooth_ce, smooth_cce): :math:`t_0 = T`, :math:`\mu_t(j) = \alpha_t^j = w_j / W_t`
  for ``j = 1..t``.
* Algorithm 4 (stage_cce): :math:`t_0 \sim \mathrm{Unif}\{1..T\}`, :math:`\mu_t` uniform over the
  stage before the stage of ``t``; for ``t`` in stage 1, uniform over the iterations of stage 1
  that exist (``<= T``; stage 1 has length ``H``).

Index arrays use row ``t - 1`` for iteration ``t``. The kernel is never formed as a ``T x T``
matrix: [`IndexKernel`][markovgames.policies.IndexKernel] applies it in O(T).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._files import header_warnings_refused, open_regular
from .._npz import ArchiveError, NpzArchive
from ._index_kernel import KERNEL_KINDS, IndexKernel

__all__ = ["IndexChainPolicy"]


@dataclass(frozen=True, eq=False)
class IndexChainPolicy:
    """The output policy of Algorithm 3 (``kind="smooth"``; ``"smooth-uniform"`` and
    ``"smooth-linear"`` with uniform or linear averaging) or Algorithm 4 (``kind="stage"``).

    The prefix ``T`` is the length of the arrays; `prefix` gives the output after fewer
    iterations.

    Parameters
    ----------
    kind : str
        ``"smooth"``, ``"smooth-uniform"``, ``"smooth-linear"`` or ``"stage"`` (`IndexKernel`).
    policies : tuple of ndarray
        Per player, an array ``(T, H, S, A_i)`` whose row ``t - 1`` is ``pi^t``.
    """

    kind: str  # an index kernel's kind (checked; a stored policy's kind is read as a string)
    policies: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if self.kind not in KERNEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KERNEL_KINDS))}, got {self.kind!r}")
        pols = tuple(np.asarray(p) for p in self.policies)
        if not pols:
            raise ValueError("policies: need at least one player")
        lead = pols[0].shape[:3]
        for i, p in enumerate(pols):
            if p.ndim != 4 or p.shape[:3] != lead:
                raise ValueError(f"policies[{i}]: expected shape (T, H, S, A_{i}) with (T, H, S) = {lead}, got {p.shape}")
        if lead[0] < 1:
            raise ValueError("policies: T must be at least 1")
        object.__setattr__(self, "policies", pols)

    @classmethod
    def from_run(cls, result, T: int | None = None) -> IndexChainPolicy:
        """The output policy of a [`RunResult`][markovgames.dynamics.RunResult] after ``T`` (default all) iterations."""
        if result.policies is None:
            raise ValueError("this run did not keep its trajectory (record_trajectory=False)")
        kind = result.spec.value_update.index_kernel
        first = 1 if getattr(result, "suffix", None) is None else result.suffix.first_kept
        if first > 1:
            if T is not None and T != result.T:
                raise ValueError(
                    f"this run kept only iterations {first}..{result.T} (trajectory_tolerance); its output policy "
                    f"is available at T = {result.T} only, not at {T}"
                )
            return cls.from_suffix(kind, result.policies, first)
        return cls(kind, result.policies).prefix(result.T if T is None else T)

    @classmethod
    def from_suffix(cls, kind: str, suffix_policies, first_kept: int) -> IndexChainPolicy:
        """The output policy rebuilt from iterations ``first_kept..T`` of a trajectory.

        Wherever the index chain goes below ``first_kept`` it plays ``pi^{first_kept}`` (the rows
        before it repeat that row). It differs from the full trajectory's policy only when the
        chain visits a dropped iteration: see [`TrajectorySuffix`][markovgames.policies.TrajectorySuffix]
        for the resulting bounds. The rebuilt arrays have all ``T`` rows (evaluation needs them).
        """
        if first_kept < 1:
            raise ValueError(f"first_kept must be at least 1, got {first_kept}")
        padded = []
        for p in suffix_policies:
            p = np.asarray(p)
            head = np.broadcast_to(p[:1], (first_kept - 1,) + p.shape[1:])
            padded.append(np.concatenate([head, p], axis=0))
        return cls(kind, tuple(padded))

    # ------------------------------------------------------------------ sizes
    @property
    def T(self) -> int:
        return int(self.policies[0].shape[0])

    @property
    def horizon(self) -> int:
        return int(self.policies[0].shape[1])

    @property
    def num_states(self) -> int:
        return int(self.policies[0].shape[2])

    @property
    def num_players(self) -> int:
        return len(self.policies)

    @property
    def num_actions(self) -> tuple[int, ...]:
        return tuple(int(p.shape[3]) for p in self.policies)

    def prefix(self, T: int) -> IndexChainPolicy:
        """The output policy after the first ``T`` iterations only."""
        if not 1 <= T <= self.T:
            raise ValueError(f"prefix T must be in 1..{self.T}, got {T}")
        return self if T == self.T else IndexChainPolicy(self.kind, tuple(p[:T] for p in self.policies))

    # ------------------------------------------------------------------ kernel
    @cached_property
    def kernel(self) -> IndexKernel:
        """The index kernel ``mu`` (push, pull and sampling in O(T)); built once per policy."""
        return IndexKernel.of(self)

    def start_distribution(self) -> np.ndarray:
        """Distribution of ``t_0`` over ``1..T`` (row ``t - 1``)."""
        return self.kernel.start_distribution()

    def first_index_distribution(self) -> np.ndarray:
        """Distribution of ``j_1`` (the index played at step 0): ``push(start_distribution())``."""
        return self.push(self.start_distribution())

    def push(self, belief: np.ndarray) -> np.ndarray:
        r"""``nu(j) = sum_t belief(t) mu_t(j)`` along axis 0 (extra trailing axes allowed), in O(T)."""
        return self.kernel.push(belief)

    def kernel_row(self, t: int) -> np.ndarray:
        """``mu_t`` as a dense vector over ``1..T`` (for tests and small ``T``)."""
        e = np.zeros(self.T)
        e[t - 1] = 1.0
        return self.push(e)

    # ------------------------------------------------------------------ play
    def joint_policy(self, index: int, h: int, s: int) -> np.ndarray:
        """The product distribution over joint actions played at step ``h``, state ``s`` when the index is ``index``."""
        joint = np.ones(())
        for p in self.policies:
            joint = np.multiply.outer(joint, p[index - 1, h, s])
        return joint

    def summary(self, tolerance: float = 1e-12) -> dict:
        """How many past iterations the policy mixes and its effective support.

        ``support``: iterations with probability above ``tolerance`` of being played at some step;
        ``effective_support``: ``exp(entropy)`` of the step-0 index distribution.
        """
        dist = self.first_index_distribution()
        reach = dist.copy()
        played = dist.copy()
        for _ in range(1, self.horizon):
            reach = self.push(reach)
            played = np.maximum(played, reach)
        p = dist[dist > 0]
        return {
            "kind": self.kind,
            "T": self.T,
            "support": int(np.count_nonzero(played > tolerance)),
            "effective_support_step0": float(np.exp(-np.sum(p * np.log(p)))),
        }

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write an ``.npz`` file (no pickle): ``kind`` and ``policy_0..policy_{N-1}``."""
        arrays = {f"policy_{i}": p for i, p in enumerate(self.policies)}
        # The names are policy_i, never savez's own allow_pickle, which mypy cannot tell.
        np.savez_compressed(path, kind=np.asarray(self.kind), num_players=np.asarray(self.num_players), **arrays)  # type: ignore[arg-type]

    @classmethod
    def load(cls, path) -> IndexChainPolicy:
        """Read a file written by `save`; its sizes are checked before its arrays are read
        (``markovgames._npz``): a damaged or forged file is an ArchiveError (a ValueError) naming it."""
        try:
            with open_regular(path) as fh, header_warnings_refused(), NpzArchive(fh) as data:
                n = int(data.scalar("num_players", "iu"))
                if not 1 <= n <= len(data.keys):
                    raise ArchiveError(f"num_players = {n}, but the archive holds {len(data.keys)} arrays")
                kind = str(data.scalar("kind", "U"))
                policies = []
                for i in range(n):
                    shape, _, dtype = data.header(f"policy_{i}")
                    if len(shape) != 4 or dtype.kind != "f":
                        raise ArchiveError(
                            f"policy_{i}: expected a float array (T, H, S, A_{i}), got dtype {dtype} with shape {shape}"
                        )
                    policies.append(data.read(f"policy_{i}"))
        except ArchiveError as err:
            raise ArchiveError(f"{path}: {err}") from None
        return cls(kind, tuple(policies))
