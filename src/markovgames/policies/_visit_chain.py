r"""V-learning's output policy: a hidden episode index whose kernel depends on the step and the state (docs/vlearning.md).

The "certified policy" of V-learning (Jin, Liu, Wang and Yu 2021, Algorithm 2; Song, Mei and Bai
2021; stage-based: Mao, Yang, Zhang and Başar 2022) replays the learners' past policies through a
hidden episode index :math:`k \in 1..K`, shared by all players. It starts uniformly on ``1..K``; at step ``h`` in
state ``s`` it draws the next index among the episodes :math:`e_1 < e_2 < \dots` that visited ``s``
at step ``h`` *before* the current one, of which there are :math:`n = N^k_h(s)`:

* ``"smooth"`` (CCE-V and CE-V learning): :math:`e_l` with probability :math:`\alpha_n^l`, the weights
  of Algorithm 3, so on the visit list the kernel is Algorithm 3's smooth kernel;
* ``"stage"`` (stage-based V-learning): uniformly among the visits of the last complete stage of
  the first ``n`` visits (stage lengths :math:`L_1 = H`, :math:`L_{j+1} = \lfloor(1+1/H)L_j\rfloor`), or
  among all ``n`` when none is complete (:math:`n < L_1`);

and every player plays the policy it used at that visit. With :math:`n = 0` the index stays and the
players play uniformly (their initial policies; the papers leave the case open).

It is an index chain like Algorithms 3 and 4's (`IndexChainPolicy`), with ``T = K`` and dense
policies ``pi^k_h(s)`` (the visit's policy where episode ``k`` visited ``s`` at step ``h``, uniform
elsewhere: only reached through the ``n = 0`` case), except that the kernel depends on ``(h, s)``:
[`VisitKernel`][markovgames.policies.VisitKernel] applies it in O(K) per state without ever forming
a ``K x K`` matrix, by grouping the indices by their count ``n`` and applying the kernel of the
visit list.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .._files import header_warnings_refused, open_regular
from .._npz import ArchiveError, NpzArchive
from .._rng import as_generator
from .._schedules import stage_schedule
from ._index_kernel import KERNEL_KINDS, IndexKernel

__all__ = ["VISIT_KERNEL_KINDS", "VisitChainPolicy", "VisitKernel", "MAX_DENSE_ENTRIES"]

#: The kernels of V-learning's output policies: CCE-V/CE-V's (smooth) and stage-based V-learning's.
VISIT_KERNEL_KINDS: tuple[str, ...] = KERNEL_KINDS

#: Largest number of entries of the dense ``(K, H, S, A_i)`` policy arrays an evaluation builds.
MAX_DENSE_ENTRIES = 2**28


class _VisitList:
    """The kernel of one ``(h, s)`` on its visit list ``1..m``: push and pull indexed by the count ``n``."""

    def __init__(self, kind: str, m: int, horizon: int):
        self.kind, self.m = kind, m
        if kind != "stage":
            self.smooth = IndexKernel(kind, m, horizon)
            return
        sched = stage_schedule(horizon, m)
        starts = sched.starts.astype(np.int64) - 1
        ends = starts + sched.lengths.astype(np.int64)
        n = np.arange(1, m + 1)
        last = np.searchsorted(ends, n, side="right") - 1  # the last stage complete within n visits
        complete = last >= 0
        safe = np.maximum(last, 0)
        # Target visits of count n: [lo, hi), 0-based on the visit list.
        self.lo = np.where(complete, starts[safe], 0)
        self.hi = np.where(complete, ends[safe], n)

    def push(self, b: np.ndarray) -> np.ndarray:
        """``nu(l) = sum_n b(n) mu_n(l)`` (axis 0 over ``n = 1..m`` in, over ``l = 1..m`` out)."""
        if self.kind != "stage":
            return self.smooth.push(b)
        shape = (-1,) + (1,) * (b.ndim - 1)
        share = b / (self.hi - self.lo).reshape(shape)
        diff = np.zeros((self.m + 1,) + b.shape[1:])
        np.add.at(diff, self.lo, share)
        np.add.at(diff, self.hi, -share)
        return np.cumsum(diff[:-1], axis=0)

    def pull(self, g: np.ndarray) -> np.ndarray:
        """``f(n) = sum_l mu_n(l) g(l)``."""
        if self.kind != "stage":
            return self.smooth.pull(g)
        cs = np.concatenate([np.zeros((1,) + g.shape[1:]), np.cumsum(g, axis=0)])
        shape = (-1,) + (1,) * (g.ndim - 1)
        return (cs[self.hi] - cs[self.lo]) / (self.hi - self.lo).reshape(shape)

    def sample(self, n: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The visit ``l`` (1-based) drawn by the uniform numbers ``u`` from counts ``n >= 1``."""
        if self.kind != "stage":
            # P(L <= l | n) = W_l / W_n: the first l with log W_l >= log(1 - u) + log W_n.
            log_w = self.smooth._log_W
            target = np.log1p(-u) + log_w[n - 1]
            return np.clip(np.searchsorted(log_w, target, side="left") + 1, 1, n)
        lo, hi = self.lo[n - 1], self.hi[n - 1]
        return np.minimum(lo + np.floor(u * (hi - lo)).astype(np.int64), hi - 1) + 1


@dataclass(frozen=True, eq=False)
class VisitKernel:
    r"""The hidden-index kernel of a [`VisitChainPolicy`][markovgames.policies.VisitChainPolicy]: one per ``(h, s)``.

    ``*_at(h, s, ...)`` apply the kernel of step ``h`` in state ``s`` along axis 0 (the index,
    ``1..K`` as rows ``0..K-1``; trailing axes are batch axes); ``*_states(h, ...)`` apply, to an
    array ``(K, S, ...)``, the kernel of each state to its column. O(K) per state.
    """

    kind: str
    visited: np.ndarray  # (K, H, S) bool: whether round k visited s at step h
    _lists: dict = field(init=False, repr=False, default_factory=dict)

    state_dependent = True

    @property
    def T(self) -> int:
        return int(self.visited.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.visited.shape[1])

    @property
    def num_states(self) -> int:
        return int(self.visited.shape[2])

    @cached_property
    def _before(self) -> np.ndarray:
        """``(H, K, S)`` counts :math:`N^k_h(s)`: visits of ``s`` at step ``h`` in episodes before ``k``."""
        K, H, S = self.T, self.horizon, self.num_states
        if K * H * S > MAX_DENSE_ENTRIES:
            raise ValueError(
                f"the visit counts of this output policy need {K * H * S:,} entries (K={K}, H={H}, S={S}), "
                f"above the limit {MAX_DENSE_ENTRIES:,}: evaluate a prefix, or a smaller game"
            )
        onehot = np.moveaxis(self.visited, 0, 1).astype(np.int64)
        return np.cumsum(onehot, axis=1) - onehot

    def visits(self, h: int, s: int) -> np.ndarray:
        """The 0-based rows of the rounds that visited ``s`` at step ``h``, in order."""
        return np.flatnonzero(self.visited[:, h, s])

    def _list(self, h: int, s: int) -> tuple[np.ndarray, _VisitList | None]:
        key = (h, s)
        if key not in self._lists:
            e = self.visits(h, s)
            self._lists[key] = (e, _VisitList(self.kind, len(e), self.horizon) if len(e) else None)
        return self._lists[key]

    def start_distribution(self) -> np.ndarray:
        """Law of the start index: uniform on ``1..K``."""
        return np.full(self.T, 1.0 / self.T)

    def push_at(self, h: int, s: int, belief: np.ndarray) -> np.ndarray:
        r"""``nu(k') = sum_k belief(k) mu_{h,s}(k -> k')`` along axis 0, in O(K)."""
        b = np.asarray(belief, dtype=np.float64)
        n = self._before[h, :, s]
        out = np.where((n == 0).reshape((-1,) + (1,) * (b.ndim - 1)), b, 0.0)  # n = 0: the index stays
        e, lst = self._list(h, s)
        if lst is not None:
            moved = n > 0
            grouped = np.zeros((len(e),) + b.shape[1:])
            np.add.at(grouped, n[moved] - 1, b[moved])
            out[e] += lst.push(grouped)
        return out

    def pull_at(self, h: int, s: int, values: np.ndarray) -> np.ndarray:
        r"""``f(k) = sum_{k'} mu_{h,s}(k -> k') values(k')`` along axis 0, in O(K)."""
        g = np.asarray(values, dtype=np.float64)
        n = self._before[h, :, s]
        out = g.copy()
        e, lst = self._list(h, s)
        if lst is not None:
            moved = n > 0
            out[moved] = lst.pull(g[e])[n[moved] - 1]
        return out

    def push_states(self, h: int, x: np.ndarray) -> np.ndarray:
        """Push every state's column ``x[:, s]`` with the kernel of ``(h, s)``."""
        return np.stack([self.push_at(h, s, x[:, s]) for s in range(self.num_states)], axis=1)

    def pull_states(self, h: int, g: np.ndarray) -> np.ndarray:
        """Pull every state's column ``g[:, s]`` with the kernel of ``(h, s)``."""
        return np.stack([self.pull_at(h, s, g[:, s]) for s in range(self.num_states)], axis=1)

    def first_index_distribution_at(self, state: int) -> np.ndarray:
        """Law of the index played at step 0 from ``state``."""
        return self.push_at(0, state, self.start_distribution())

    def sample_start(self, size: int, rng) -> np.ndarray:
        """``size`` start indices, uniform on ``1..K`` (1-based)."""
        return as_generator(rng).integers(1, self.T + 1, size=size, dtype=np.int64)

    def sample_next_at(self, h: int, states: np.ndarray, current: np.ndarray, rng) -> np.ndarray:
        """One draw of the next index for every entry (its state ``states[...]`` at step ``h``, index ``current[...]``)."""
        gen = as_generator(rng)
        k = np.asarray(current, dtype=np.int64)
        st = np.broadcast_to(np.asarray(states, dtype=np.int64), k.shape)
        u = gen.random(k.shape)
        out = k.copy()
        n = self._before[h, k - 1, st]
        for s in np.unique(st[n > 0]):
            e, lst = self._list(h, int(s))
            assert lst is not None
            sel = (st == s) & (n > 0)
            out[sel] = e[lst.sample(n[sel], u[sel]) - 1] + 1
        return out


@dataclass(frozen=True, eq=False)
class VisitChainPolicy:
    """V-learning's output policy (docs/vlearning.md): the learners' policies at every round,
    replayed through a hidden round index whose kernel depends on the step and the state.

    A round is one episode for V-learning (``bandit:1``), ``M`` episodes under ``bandit:M``.
    `from_episodes` builds it from a run's record.

    Parameters
    ----------
    kind : an index kernel's kind: ``"smooth"`` (CCE-V and CE-V learning), ``"smooth-uniform"``,
        ``"smooth-linear"`` or ``"stage"`` (stage-based V-learning).
    visited : array_like of bool, shape ``(K, H, S)``
        Whether round ``k`` visited state ``s`` at step ``h``.
    policies : tuple of ndarray
        Per player ``(K, H, S, A_i)``: ``pi^k_h(s)``, the policy it played at ``(h, s)`` in round
        ``k``; where the round did not visit ``s`` the policy its learner would have played (played
        by the output policy only before any visit: the initial one).
    """

    kind: str
    visited: np.ndarray
    policies: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if self.kind not in VISIT_KERNEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, VISIT_KERNEL_KINDS))}, got {self.kind!r}")
        visited = np.asarray(self.visited)
        if visited.ndim != 3 or min(visited.shape) < 1 or visited.dtype != np.bool_:
            raise ValueError(f"visited: expected a boolean array (K, H, S), got {visited.dtype} {visited.shape}")
        policies = tuple(np.asarray(p, dtype=np.float64) for p in self.policies)
        if not policies:
            raise ValueError("policies: need at least one player")
        for i, p in enumerate(policies):
            if p.ndim != 4 or p.shape[:3] != visited.shape or p.shape[3] < 1:
                raise ValueError(
                    f"policies[{i}]: expected shape (K, H, S, A_{i}) with (K, H, S) = {visited.shape}, got {p.shape}"
                )
            if not np.all(np.isfinite(p)) or np.any(p < -1e-12) or np.any(np.abs(p.sum(axis=-1) - 1.0) > 1e-9):
                raise ValueError(f"policies[{i}]: every row must be a probability vector")
        object.__setattr__(self, "visited", visited)
        object.__setattr__(self, "policies", policies)

    @classmethod
    def from_episodes(cls, kind: str, num_states: int, states, played, episodes_per_round: int = 1) -> VisitChainPolicy:
        """The output policy of a run's record: ``states`` ``(E, H)`` the state of every episode at
        every step, ``played`` per player ``(E, H, A_i)`` the policy played there, ``E`` a multiple of
        ``episodes_per_round`` (rounds of that many episodes share their policies). Unvisited
        entries are uniform (the learners' initial policies: the only ones the output policy plays
        there). Refused above `MAX_DENSE_ENTRIES`."""
        if isinstance(num_states, bool) or not isinstance(num_states, (int, np.integer)) or num_states < 1:
            raise ValueError(f"num_states must be a positive integer, got {num_states!r}")
        states = np.asarray(states)
        if states.ndim != 2 or states.shape[0] < 1 or states.shape[1] < 1 or states.dtype.kind not in "iu":
            raise ValueError(f"states: expected an integer array (E, H) with E, H >= 1, got {states.dtype} {states.shape}")
        if states.min() < 0 or states.max() >= num_states:
            raise ValueError(f"states: every entry must be a state in 0..{num_states - 1}")
        m = int(episodes_per_round)
        episodes, horizon = states.shape
        if m < 1 or episodes % m:
            raise ValueError(f"episodes_per_round: {m} does not divide the {episodes} episodes")
        played = tuple(np.asarray(p, dtype=np.float64) for p in played)
        for i, p in enumerate(played):
            if p.ndim != 3 or p.shape[:2] != states.shape:
                raise ValueError(f"played[{i}]: expected shape (E, H, A_{i}) with (E, H) = {states.shape}, got {p.shape}")
        K = episodes // m
        entries = K * horizon * num_states * (1 + sum(p.shape[2] for p in played))
        if entries > MAX_DENSE_ENTRIES:
            raise ValueError(
                f"the dense form of this output policy needs {entries:,} entries (K={K}, H={horizon}, "
                f"S={num_states}), above the limit {MAX_DENSE_ENTRIES:,}: keep fewer rounds, or a smaller game"
            )
        rounds = np.repeat(np.arange(K), m)[:, None]
        steps = np.arange(horizon)[None, :]
        visited = np.zeros((K, horizon, num_states), dtype=bool)
        visited[rounds, steps, states] = True
        policies = []
        for p in played:
            dense = np.full((K, horizon, num_states, p.shape[2]), 1.0 / p.shape[2])
            dense[rounds, steps, states] = p  # a round's episodes at the same (h, s) played the same policy
            policies.append(dense)
        return cls(kind, visited, tuple(policies))

    # ------------------------------------------------------------------ sizes
    @property
    def T(self) -> int:
        """``K``, the number of rounds (the index runs over ``1..K``)."""
        return int(self.visited.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.visited.shape[1])

    @property
    def num_states(self) -> int:
        return int(self.visited.shape[2])

    @property
    def num_players(self) -> int:
        return len(self.policies)

    @property
    def num_actions(self) -> tuple[int, ...]:
        return tuple(int(p.shape[3]) for p in self.policies)

    def prefix(self, K: int) -> VisitChainPolicy:
        """The output policy after the first ``K`` rounds (the chain from ``k`` only reaches earlier rounds)."""
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or not 1 <= K <= self.T:
            raise ValueError(f"prefix K must be an integer in 1..{self.T}, got {K!r}")
        if K == self.T:
            return self
        return VisitChainPolicy(self.kind, self.visited[:K], tuple(p[:K] for p in self.policies))

    # ------------------------------------------------------------------ kernel
    @cached_property
    def kernel(self) -> VisitKernel:
        """The per-``(h, s)`` index kernel (push, pull, sampling in O(K) per state); built once per policy."""
        return VisitKernel(self.kind, self.visited)

    def start_distribution(self) -> np.ndarray:
        return self.kernel.start_distribution()

    def joint_policy(self, index: int, h: int, s: int) -> np.ndarray:
        """The product distribution over joint actions played at ``(h, s)`` under index ``index``."""
        joint = np.ones(())
        for p in self.policies:
            joint = np.multiply.outer(joint, p[index - 1, h, s])
        return joint

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write an ``.npz`` file (no pickle): ``format``, ``kind``, ``visited``, ``policy_0..``."""
        arrays = {f"policy_{i}": p for i, p in enumerate(self.policies)}
        np.savez_compressed(
            path,
            format=np.asarray("visit-chain"),
            kind=np.asarray(self.kind),
            num_players=np.asarray(self.num_players),
            visited=self.visited,
            **arrays,  # type: ignore[arg-type]
        )

    @classmethod
    def load(cls, path, *, where: str | None = None) -> VisitChainPolicy:
        """Read a file written by `save` (a path, or an open binary file such as the bytes a reader
        has checked against a digest, named ``where`` in messages); sizes are checked before arrays
        are read; a damaged or forged file is an ArchiveError (a ValueError) naming it."""
        opened = open_regular(path) if isinstance(path, (str, os.PathLike)) else contextlib.nullcontext(path)
        name = where if where is not None else str(path)
        try:
            with opened as fh, header_warnings_refused(), NpzArchive(fh) as data:
                if str(data.scalar("format", "U")) != "visit-chain":
                    raise ArchiveError("format: not a V-learning output policy (expected 'visit-chain')")
                n = int(data.scalar("num_players", "iu"))
                if not 1 <= n <= len(data.keys):
                    raise ArchiveError(f"num_players = {n}, but the archive holds {len(data.keys)} arrays")
                kind = str(data.scalar("kind", "U"))
                shape, _, dtype = data.header("visited")
                if len(shape) != 3 or dtype != np.bool_:
                    raise ArchiveError(f"visited: expected a boolean array (K, H, S), got dtype {dtype} with shape {shape}")
                visited = data.read("visited")
                policies = []
                for i in range(n):
                    shape, _, dtype = data.header(f"policy_{i}")
                    if len(shape) != 4 or dtype.kind != "f":
                        raise ArchiveError(f"policy_{i}: expected a float array (K, H, S, A_{i}), got {dtype} {shape}")
                    policies.append(data.read(f"policy_{i}"))
                return cls(kind, visited, tuple(policies))
        except (ArchiveError, ValueError) as err:
            raise ArchiveError(f"{name}: {err}") from None
