r"""V-learning's output policy: a hidden episode index whose kernel depends on the step and the state (docs/vlearning.md).

The "certified policy" of V-learning (Jin, Liu, Wang and Yu 2021, Algorithm 2; Song, Mei and Bai
2021; stage-based: Mao and Başar 2022) replays the learners' past policies through a hidden episode
index :math:`k \in 1..K`, shared by all players. It starts uniformly on ``1..K``; at step ``h`` in
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

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .._files import header_warnings_refused, open_regular
from .._npz import ArchiveError, NpzArchive
from .._rng import as_generator
from .._schedules import stage_schedule
from ._index_kernel import IndexKernel

__all__ = ["VISIT_KERNEL_KINDS", "VisitChainPolicy", "VisitKernel", "MAX_DENSE_ENTRIES"]

#: The kernels of V-learning's output policies: CCE-V/CE-V's (smooth) and stage-based V-learning's.
VISIT_KERNEL_KINDS: tuple[str, ...] = ("smooth", "stage")

#: Largest number of entries of the dense ``(K, H, S, A_i)`` policy arrays an evaluation builds.
MAX_DENSE_ENTRIES = 2**28


class _VisitList:
    """The kernel of one ``(h, s)`` on its visit list ``1..m``: push and pull indexed by the count ``n``."""

    def __init__(self, kind: str, m: int, horizon: int):
        self.kind, self.m = kind, m
        if kind == "smooth":
            self.smooth = IndexKernel("smooth", m, horizon)
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
        if self.kind == "smooth":
            return self.smooth.push(b)
        shape = (-1,) + (1,) * (b.ndim - 1)
        share = b / (self.hi - self.lo).reshape(shape)
        diff = np.zeros((self.m + 1,) + b.shape[1:])
        np.add.at(diff, self.lo, share)
        np.add.at(diff, self.hi, -share)
        return np.cumsum(diff[:-1], axis=0)

    def pull(self, g: np.ndarray) -> np.ndarray:
        """``f(n) = sum_l mu_n(l) g(l)``."""
        if self.kind == "smooth":
            return self.smooth.pull(g)
        cs = np.concatenate([np.zeros((1,) + g.shape[1:]), np.cumsum(g, axis=0)])
        shape = (-1,) + (1,) * (g.ndim - 1)
        return (cs[self.hi] - cs[self.lo]) / (self.hi - self.lo).reshape(shape)

    def sample(self, n: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The visit ``l`` (1-based) drawn by the uniform numbers ``u`` from counts ``n >= 1``."""
        if self.kind == "smooth":
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
    horizon: int
    num_states: int
    states: np.ndarray  # (K, H): the state each episode visited at each step
    _lists: dict = field(init=False, repr=False, default_factory=dict)

    state_dependent = True

    @property
    def T(self) -> int:
        return int(self.states.shape[0])

    @cached_property
    def _before(self) -> np.ndarray:
        """``(H, K, S)`` counts :math:`N^k_h(s)`: visits of ``s`` at step ``h`` in episodes before ``k``."""
        K, H, S = self.T, self.horizon, self.num_states
        if K * H * S > MAX_DENSE_ENTRIES:
            raise ValueError(
                f"the visit counts of this output policy need {K * H * S:,} entries (K={K}, H={H}, S={S}), "
                f"above the limit {MAX_DENSE_ENTRIES:,}: evaluate a prefix, or a smaller game"
            )
        onehot = np.zeros((H, K, S), dtype=np.int64)
        onehot[np.arange(H)[None, :], np.arange(K)[:, None], self.states] = 1
        return np.cumsum(onehot, axis=1) - onehot

    def visits(self, h: int, s: int) -> np.ndarray:
        """The 0-based rows of the episodes that visited ``s`` at step ``h``, in order."""
        return np.flatnonzero(self.states[:, h] == s)

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
    """V-learning's output policy (docs/vlearning.md): the learners' policies at every visit, replayed
    through a hidden episode index whose kernel depends on the step and the state.

    Parameters
    ----------
    kind : ``"smooth"`` (CCE-V and CE-V learning) or ``"stage"`` (stage-based V-learning).
    num_states : int
        ``S`` of the game.
    states : array_like, shape ``(K, H)``
        ``states[k - 1, h]``: the state episode ``k`` visited at step ``h``.
    played : tuple of ndarray
        Per player ``(K, H, A_i)``: the distribution it played at that visit.
    """

    kind: str
    num_states: int
    states: np.ndarray
    played: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if self.kind not in VISIT_KERNEL_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, VISIT_KERNEL_KINDS))}, got {self.kind!r}")
        if isinstance(self.num_states, bool) or not isinstance(self.num_states, (int, np.integer)):
            raise ValueError(f"num_states must be an integer, got {self.num_states!r}")
        num_s = int(self.num_states)
        states = np.asarray(self.states)
        if states.ndim != 2 or states.shape[0] < 1 or states.shape[1] < 1 or states.dtype.kind not in "iu":
            raise ValueError(f"states: expected an integer array (K, H) with K, H >= 1, got {states.dtype} {states.shape}")
        if num_s < 1 or states.min() < 0 or states.max() >= num_s:
            raise ValueError(f"states: every entry must be a state in 0..{num_s - 1}")
        played = tuple(np.asarray(p, dtype=np.float64) for p in self.played)
        if not played:
            raise ValueError("played: need at least one player")
        for i, p in enumerate(played):
            if p.ndim != 3 or p.shape[:2] != states.shape or p.shape[2] < 1:
                raise ValueError(f"played[{i}]: expected shape (K, H, A_{i}) with (K, H) = {states.shape}, got {p.shape}")
            if not np.all(np.isfinite(p)) or np.any(p < -1e-12) or np.any(np.abs(p.sum(axis=-1) - 1.0) > 1e-9):
                raise ValueError(f"played[{i}]: every row must be a probability vector")
        object.__setattr__(self, "num_states", num_s)
        object.__setattr__(self, "states", states.astype(np.int64))
        object.__setattr__(self, "played", played)

    # ------------------------------------------------------------------ sizes
    @property
    def T(self) -> int:
        """``K``, the number of episodes (the index runs over ``1..K``)."""
        return int(self.states.shape[0])

    @property
    def horizon(self) -> int:
        return int(self.states.shape[1])

    @property
    def num_players(self) -> int:
        return len(self.played)

    @property
    def num_actions(self) -> tuple[int, ...]:
        return tuple(int(p.shape[2]) for p in self.played)

    def prefix(self, K: int) -> VisitChainPolicy:
        """The output policy after the first ``K`` episodes (the chain from ``k`` only reaches earlier episodes)."""
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or not 1 <= K <= self.T:
            raise ValueError(f"prefix K must be an integer in 1..{self.T}, got {K!r}")
        if K == self.T:
            return self
        return VisitChainPolicy(self.kind, self.num_states, self.states[:K], tuple(p[:K] for p in self.played))

    # ------------------------------------------------------------------ kernel and dense form
    @cached_property
    def kernel(self) -> VisitKernel:
        """The per-``(h, s)`` index kernel (push, pull, sampling in O(K) per state); built once per policy."""
        return VisitKernel(self.kind, self.horizon, self.num_states, self.states)

    def start_distribution(self) -> np.ndarray:
        return self.kernel.start_distribution()

    @cached_property
    def policies(self) -> tuple[np.ndarray, ...]:
        """Per player the dense ``(K, H, S, A_i)`` policies ``pi^k_h(s)``: the visit's where episode ``k``
        visited ``s`` at step ``h``, uniform elsewhere (the ``n = 0`` case). Refused above `MAX_DENSE_ENTRIES`."""
        K, H, S = self.T, self.horizon, self.num_states
        entries = K * H * S * sum(self.num_actions)
        if entries > MAX_DENSE_ENTRIES:
            raise ValueError(
                f"the dense form of this output policy needs {entries:,} entries (K={K}, H={H}, S={S}), "
                f"above the limit {MAX_DENSE_ENTRIES:,}: evaluate a prefix, or a smaller game"
            )
        out = []
        rows, steps = np.arange(K)[:, None], np.arange(H)[None, :]
        for p in self.played:
            dense = np.full((K, H, S, p.shape[2]), 1.0 / p.shape[2])
            dense[rows, steps, self.states] = p
            out.append(dense)
        return tuple(out)

    def joint_policy(self, index: int, h: int, s: int) -> np.ndarray:
        """The product distribution over joint actions played at ``(h, s)`` under index ``index``."""
        joint = np.ones(())
        for i in range(self.num_players):
            joint = np.multiply.outer(joint, self.action_distribution(i, index, h, s))
        return joint

    def action_distribution(self, player: int, index: int, h: int, s: int) -> np.ndarray:
        """Player ``player``'s part of the policy played at ``(h, s)`` under index ``index``."""
        p = self.played[player]
        if self.states[index - 1, h] == s:
            return p[index - 1, h]
        return np.full(p.shape[2], 1.0 / p.shape[2])

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write an ``.npz`` file (no pickle): ``kind``, ``num_states``, ``states``, ``played_0..``."""
        arrays = {f"played_{i}": p for i, p in enumerate(self.played)}
        np.savez_compressed(
            path,
            format=np.asarray("visit-chain"),
            kind=np.asarray(self.kind),
            num_states=np.asarray(self.num_states),
            num_players=np.asarray(self.num_players),
            states=self.states,
            **arrays,  # type: ignore[arg-type]
        )

    @classmethod
    def load(cls, path) -> VisitChainPolicy:
        """Read a file written by `save`; sizes are checked before arrays are read; a damaged or forged
        file is an ArchiveError (a ValueError) naming it."""
        try:
            with open_regular(path) as fh, header_warnings_refused(), NpzArchive(fh) as data:
                if str(data.scalar("format", "U")) != "visit-chain":
                    raise ArchiveError("format: not a V-learning output policy (expected 'visit-chain')")
                n = int(data.scalar("num_players", "iu"))
                if not 1 <= n <= len(data.keys):
                    raise ArchiveError(f"num_players = {n}, but the archive holds {len(data.keys)} arrays")
                kind = str(data.scalar("kind", "U"))
                num_states = int(data.scalar("num_states", "iu"))
                shape, _, dtype = data.header("states")
                if len(shape) != 2 or dtype.kind not in "iu":
                    raise ArchiveError(f"states: expected an integer array (K, H), got dtype {dtype} with shape {shape}")
                states = data.read("states")
                played = []
                for i in range(n):
                    shape, _, dtype = data.header(f"played_{i}")
                    if len(shape) != 3 or dtype.kind != "f":
                        raise ArchiveError(f"played_{i}: expected a float array (K, H, A_{i}), got {dtype} {shape}")
                    played.append(data.read(f"played_{i}"))
                return cls(kind, num_states, states, tuple(played))
        except (ArchiveError, ValueError) as err:
            raise ArchiveError(f"{path}: {err}") from None
