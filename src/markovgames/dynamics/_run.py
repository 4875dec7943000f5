"""Running the dynamics: single runs and batches of runs, chunked, with progress and optional trajectory files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._atomic import atomic_write
from ..games import MarkovGame
from ._algorithms import Algorithm, LearningRate, get_algorithm, resolve_learning_rate
from ._engine import GameArrays, compiled_chunk, init_carry, stage_prefix_metrics
from ._index_kernel import TrajectorySuffix, trajectory_suffix
from ._schedules import stage_schedule, theory_eta_stage
from ._value_updates import SparseKernel

__all__ = ["RunResult", "BatchRunResult", "run", "run_batch", "max_learning_rate", "DTYPES"]

DTYPES = {"float64": np.float64, "float32": np.float32}

#: Upper bound on the bytes one chunk's outputs (metrics and trajectory) occupy on the device.
_CHUNK_OUTPUT_BYTES = 256 * 2**20
_DEFAULT_CHUNK = 65536

#: On the CPU a batch runs as groups of runs, each a separate compiled call dispatched
#: asynchronously: the calls run concurrently on the cores, and a group's arrays stay in the
#: caches. Measured on the paper game (benchmarks/README.md): one call of 1024 runs, groups of
#: 256 and groups of 128 were within 20% of each other; these budgets give 256-run groups there.
_GROUP_BYTES = {"smooth": 512 * 2**10, "stage": 1024 * 2**10}


@dataclass(frozen=True, eq=False)
class RunResult:
    """The outcome of one run of a learning dynamic.

    Per-prefix arrays have one row per prefix in :attr:`prefixes` (by default every ``T' = 1..T``,
    row ``T' - 1``), one column per player.

    Attributes
    ----------
    value : (P, N) exact value ``V_i`` at ``s_1`` of the output policy after ``T'`` iterations.
    certified_ce_bound, certified_cce_bound : (T, N) the index-revealing bounds of SEMANTICS §5.
    policies : per player ``(T, H, S, A_i)``: ``pi^t`` for ``t = 1..T`` (row ``t - 1``), or ``None``
        when the trajectory was not kept. May be a read-only memory map of a file.
    identity_residual : max over the run of ``|Q^t_h - (r_h + P_h V^t_{h+1})|`` (smooth algorithms;
        the paper's lemma says it is 0), ``None`` for stage_cce.
    suffix : with ``trajectory_tolerance``, the kept part of the trajectory (``policies`` then holds
        iterations ``suffix.first_kept..T``), its dropped index mass and error bounds; else ``None``.
    """

    game: MarkovGame
    algorithm: str
    optimistic: bool
    eta: LearningRate
    T: int
    dtype: str
    value: np.ndarray
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    policies: tuple[np.ndarray, ...] | None
    identity_residual: float | None
    wall_time_s: float
    compile_time_s: float
    prefixes: np.ndarray | None = None
    suffix: TrajectorySuffix | None = None

    def __post_init__(self) -> None:
        if self.prefixes is None:
            object.__setattr__(self, "prefixes", np.arange(1, self.T + 1, dtype=np.int64))

    def row(self, T_prime: int) -> int:
        """The row of the per-prefix arrays that holds prefix ``T'``."""
        rows = np.flatnonzero(self.prefixes == T_prime)
        if rows.size == 0:
            raise KeyError(f"prefix T' = {T_prime} was not recorded (recorded: {len(self.prefixes)} prefixes)")
        return int(rows[0])

    @property
    def certified_ce_gap(self) -> np.ndarray:
        """(T,) ``max_i (ce_bound_i - V_i)`` per prefix."""
        return np.max(self.certified_ce_bound - self.value, axis=-1)

    @property
    def certified_cce_gap(self) -> np.ndarray:
        """(T,) ``max_i (cce_bound_i - V_i)`` per prefix."""
        return np.max(self.certified_cce_bound - self.value, axis=-1)

    @property
    def spec(self) -> Algorithm:
        return get_algorithm(self.algorithm)


@dataclass(frozen=True, eq=False)
class BatchRunResult:
    """A batch of runs of one algorithm on games of one shape; arrays have a leading run axis."""

    games: tuple[MarkovGame, ...]
    algorithm: str
    optimistic: bool
    etas: tuple[LearningRate, ...]
    T: int
    dtype: str
    value: np.ndarray  # (B, T, N)
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    policies: tuple[np.ndarray, ...] | None  # per player (B, T, H, S, A_i)
    identity_residual: np.ndarray | None  # (B,)
    wall_time_s: float
    compile_time_s: float
    prefixes: np.ndarray | None = None
    suffix: TrajectorySuffix | None = None

    def __post_init__(self) -> None:
        if self.prefixes is None:
            object.__setattr__(self, "prefixes", np.arange(1, self.T + 1, dtype=np.int64))

    @property
    def certified_ce_gap(self) -> np.ndarray:
        return np.max(self.certified_ce_bound - self.value, axis=-1)

    @property
    def certified_cce_gap(self) -> np.ndarray:
        return np.max(self.certified_cce_bound - self.value, axis=-1)

    def __len__(self) -> int:
        return len(self.games)

    def run(self, index: int) -> RunResult:
        """The ``index``-th run as a :class:`RunResult`."""
        return RunResult(
            game=self.games[index],
            algorithm=self.algorithm,
            optimistic=self.optimistic,
            eta=self.etas[index],
            T=self.T,
            dtype=self.dtype,
            value=self.value[index],
            certified_ce_bound=self.certified_ce_bound[index],
            certified_cce_bound=self.certified_cce_bound[index],
            policies=None if self.policies is None else tuple(p[index] for p in self.policies),
            identity_residual=None if self.identity_residual is None else float(self.identity_residual[index]),
            wall_time_s=self.wall_time_s,
            compile_time_s=self.compile_time_s,
            prefixes=self.prefixes,
            suffix=self.suffix,
        )


def _kernel_form(game: MarkovGame) -> str:
    return "sparse" if game.is_sparse else "dense"


def _padded(kernel, width: int):
    """A :class:`SparseTransitions`' arrays padded to ``width`` successors (state 0 at probability 0): the same kernel."""
    extra = width - kernel.num_successors
    if extra == 0:
        return kernel.successors, kernel.probabilities  # no copy: large games are hundreds of MB
    pad = [(0, 0)] * (kernel.successors.ndim - 1) + [(0, extra)]
    return np.pad(kernel.successors, pad), np.pad(kernel.probabilities, pad)


def _check_checkpoints(checkpoints, T: int) -> np.ndarray | None:
    if checkpoints is None:
        return None
    arr = np.asarray(list(checkpoints))
    if arr.size == 0 or arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"checkpoints must be a non-empty sequence of integers, got {checkpoints!r}")
    if arr.min() < 1 or arr.max() > T:
        raise ValueError(f"checkpoints must lie in 1..T = {T}, got {arr.min()}..{arr.max()}")
    return np.unique(arr).astype(np.int64)


def _check_T(T) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)):
        raise ValueError(f"T must be a positive integer, got {T!r}")
    if T < 1:
        raise ValueError(f"T must be at least 1, got {T}")
    return int(T)


def _chunk_plan(T: int, per_iteration_bytes: int, chunk_size: int | None) -> list[int]:
    """Chunk lengths summing to ``T``; equal lengths where a divisor allows (one compilation)."""
    if chunk_size is not None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        limit = chunk_size
    else:
        limit = max(16, min(_DEFAULT_CHUNK, _CHUNK_OUTPUT_BYTES // max(per_iteration_bytes, 1)))
    if T <= limit:
        return [T]
    # Prefer an exact divisor not much smaller than the limit: every chunk then has one shape.
    for size in range(limit, max(limit // 4, 1) - 1, -1):
        if T % size == 0:
            return [size] * (T // size)
    full, rest = divmod(T, limit)
    return [limit] * full + ([rest] if rest else [])


def _run_groups(batch: int, per_run_bytes: int, kind: str, group_size: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of the runs of each compiled call (one range off the CPU)."""
    if group_size is None:
        if jax.default_backend() != "cpu":
            return [(0, batch)]  # accelerators want one wide call
        fit = max(1, _GROUP_BYTES[kind] // max(per_run_bytes, 1))
        group_size = 1 << (fit.bit_length() - 1)  # a power of two: few distinct shapes to compile
    elif isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    group_size = min(group_size, batch)
    return [(lo, min(lo + group_size, batch)) for lo in range(0, batch, group_size)]


def _split(tree, groups):
    return [jax.tree_util.tree_map(lambda x: x[lo:hi], tree) for lo, hi in groups]


def _join(parts):
    return parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=0), *parts)


def _smooth_xs(T: int, dtype) -> np.ndarray:
    """The smooth algorithms' per-iteration scan input: the iteration numbers ``t``, shape ``(T, 1)``."""
    return np.arange(1, T + 1, dtype=dtype)[:, None]


#: The learners' logits may be at most this many of their dtype's relative ulps from exact
#: (see :func:`max_learning_rate`).
_LOGIT_LIMIT_ULPS = 8.0


def max_learning_rate(T: int, horizon: int, dtype: str = "float64") -> float:
    """The largest learning rate a run of ``T`` iterations on a ``horizon``-step game accepts in ``dtype``.

    A learner's logits are ``eta`` times its (normalised) cumulative utility plus the prediction:
    at most ``eta (T + H)`` in size, since utilities lie in ``[0, H]`` and the normalised sum of
    ``t`` of them is below ``t H / (H + 1)``. XLA may compute a logit twice (for the max and for
    the exponential of a softmax) with different roundings, so a logit of size ``L`` is known to
    ``L eps`` only; once that is of order 1 the policies are noise, and from about 745 every term
    of a softmax can underflow (a NaN policy). The limit keeps ``eta (T + H) eps`` at most
    ``8``: ``3.6e16 / (T + H)`` in float64 and ``6.7e7 / (T + H)`` in float32, far beyond the
    paper's rates.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return _LOGIT_LIMIT_ULPS / float(np.finfo(DTYPES[dtype]).eps) / (T + horizon)


def _check_logit_range(eta: float, T: int, horizon: int, dtype: str) -> None:
    """Refuse a learning rate above :func:`max_learning_rate`."""
    limit = max_learning_rate(T, horizon, dtype)
    if eta > limit:
        hint = " (or float64)" if dtype != "float64" else ""
        raise ValueError(
            f"learning rate {eta:g} is too large for {T} iterations in {dtype}: the learners' logits would reach "
            f"eta (T + H) = {eta * (T + horizon):.3g}, more than {dtype} resolves; use eta <= {limit:.3g}{hint}"
        )


def _fingerprint(algorithm, optimistic, games, etas, per_stage_theory, T, dtype, record, batched, plan, keep, first_kept) -> str:
    """A digest of everything that determines a run's numbers and chunking (a saved state must match it)."""
    digest = hashlib.sha256()
    digest.update(
        json.dumps(
            [algorithm.name, optimistic, [float(e) for e in etas], per_stage_theory, T, dtype, record, batched, plan,
             None if keep is None else keep.tolist()]
            # An untruncated run keeps the digest it always had (saved states stay valid).
            + ([first_kept] if first_kept != 1 else [])
        ).encode()
    )
    for g in games:
        digest.update(np.ascontiguousarray(g.rewards).tobytes())
        digest.update(g.transition_bytes())
        digest.update(str(g.initial_state).encode())
    return digest.hexdigest()


def _save_state(path: Path, fingerprint: str, done: int, carry, metrics: list, axis: int) -> None:
    """Write the loop state after ``done`` iterations atomically (an ``.npz``, no pickle)."""
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(carry)]
    arrays = {f"leaf_{k}": leaf for k, leaf in enumerate(leaves)}
    if metrics:
        arrays["metrics"] = np.concatenate(metrics, axis=axis)
    atomic_write(
        path,
        lambda fh: np.savez(fh, fingerprint=np.asarray(fingerprint), done=np.asarray(done), num_leaves=np.asarray(len(leaves)), **arrays),
    )


def _load_state(path: Path, fingerprint: str) -> dict:
    with np.load(path, allow_pickle=False) as data:
        if str(data["fingerprint"]) != fingerprint:
            raise ValueError(f"{path}: the saved run state belongs to a different run (configuration or game differ)")
        return {
            "done": int(data["done"]),
            "leaves": [np.array(data[f"leaf_{k}"]) for k in range(int(data["num_leaves"]))],
            "metrics": np.array(data["metrics"]) if "metrics" in data.files else None,
        }


@contextlib.contextmanager
def _precision(dtype: str):
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    # Scoped: the caller's global JAX configuration is left as it was.
    with jax.enable_x64(dtype == "float64"):
        yield


def _execute(
    algorithm: Algorithm,
    optimistic: bool,
    games: Sequence[MarkovGame],
    etas: Sequence[float],
    per_stage_theory: bool,
    T: int,
    dtype: str,
    record_trajectory: bool,
    trajectory_dir: Path | None,
    chunk_size: int | None,
    progress: Callable[[int], None] | None,
    batched: bool,
    checkpoints: Sequence[int] | None = None,
    state_file: Path | None = None,
    state_every: int | None = None,
    first_kept: int = 1,
    group_size: int | None = None,
):
    np_dtype = DTYPES[dtype]
    game0 = games[0]
    num_players, horizon, num_states, num_actions = game0.shape_key
    _check_logit_range(max(etas), T, horizon, dtype)
    batch = len(games)
    itemsize = np.dtype(np_dtype).itemsize
    per_iter = batch * itemsize * (3 * num_players + (horizon * num_states * sum(num_actions) if record_trajectory else 0))
    kept = T - first_kept + 1  # trajectory rows kept: iterations first_kept..T
    if state_every is not None:
        if state_every < 1:
            raise ValueError(f"state_every must be >= 1, got {state_every}")
        chunk_size = state_every if chunk_size is None else min(chunk_size, state_every)
    plan = _chunk_plan(T, per_iter, chunk_size)
    keep = None if checkpoints is None else np.asarray(checkpoints, dtype=np.int64)
    smooth = algorithm.value_update == "smooth"
    xs_all = _smooth_xs(T, np_dtype) if smooth else None
    record = record_trajectory
    if state_file is not None and record and trajectory_dir is None:
        raise ValueError("saving the run state needs trajectory_dir (the trajectory must be on disk to resume)")
    # Hashing the game costs time on large games: only a run that saves its state needs it.
    fingerprint = None if state_file is None else _fingerprint(
        algorithm, optimistic, games, etas, per_stage_theory, T, dtype, record, batched, plan, keep, first_kept
    )
    saved = _load_state(state_file, fingerprint) if state_file is not None and state_file.exists() else None
    policies_out: list[np.ndarray] | None = None
    if record and trajectory_dir is not None:
        trajectory_dir.mkdir(parents=True, exist_ok=True)
        policies_out = [
            np.lib.format.open_memmap(
                trajectory_dir / f"policy_{i}.npy",
                # Resuming keeps the rows already written.
                mode="r+" if saved is not None else "w+",
                dtype=np_dtype,
                shape=((batch,) if batched else ()) + (kept, horizon, num_states, a),
            )
            for i, a in enumerate(num_actions)
        ]
    chunks_pol: list[list[np.ndarray]] = [[] for _ in num_actions]
    metrics = [] if saved is None or saved["metrics"] is None else [saved["metrics"]]
    compile_time = 0.0
    start_wall = time.perf_counter()
    with _precision(dtype):
        def stack(xs):
            return jnp.asarray(np.stack(xs)) if batched else jnp.asarray(xs[0])

        if game0.is_sparse:
            # A batch may mix successor counts: shorter rows are padded (exact, probability 0).
            width = max(g.sparse_transitions.num_successors for g in games)
            kernels = [_padded(g.sparse_transitions, width) for g in games]
            transitions = SparseKernel(
                successors=stack([succ.astype(np.int32, copy=False) for succ, _ in kernels]),
                probabilities=stack([prob.astype(np_dtype, copy=False) for _, prob in kernels]),
            )
        else:
            transitions = stack([g.transitions.astype(np_dtype, copy=False) for g in games])
        game_arrays = GameArrays(
            rewards=stack([g.rewards.astype(np_dtype, copy=False) for g in games]),
            transitions=transitions,
            initial_state=stack([np.asarray(g.initial_state, np.int32) for g in games]),
            eta=stack([np.asarray(e, np_dtype) for e in etas]),
        )
        stages = None if smooth else stage_schedule(horizon, T)
        carry = init_carry(algorithm, game0.shape_key, np_dtype, 0 if stages is None else len(stages.lengths))
        if stages is not None:
            lengths = jnp.asarray(stages.lengths.astype(np.int32))
            multipliers = theory_eta_stage(num_players, stages.lengths) if per_stage_theory else np.ones(len(stages.lengths))
            multipliers = jnp.asarray(multipliers.astype(np_dtype))
        if batched:
            carry = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch, *x.shape)).copy(), carry)
        done = 0
        if saved is not None:
            treedef = jax.tree_util.tree_structure(carry)
            carry = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(leaf) for leaf in saved["leaves"]])
            done = saved["done"]
        if batched:
            per_run = sum(leaf[0].nbytes for leaf in jax.tree_util.tree_leaves((carry, game_arrays)))
            groups = _run_groups(batch, per_run, "smooth" if smooth else "stage", group_size)
            game_parts, carry_parts = _split(game_arrays, groups), _split(carry, groups)
        else:
            game_parts, carry_parts = [game_arrays], [carry]
        del carry  # donated to the compiled calls part by part
        last_saved = done
        compiled_sizes: set[tuple[int, bool]] = set()
        offset = 0
        for size in plan:
            offset += size
            if offset <= done:
                continue  # finished before the interruption
            if smooth:
                sched = jnp.asarray(xs_all[done : done + size])
            else:
                # Where the chunk starts: 0-based stage and iterations already done in it.
                sched = (
                    jnp.int32(stages.stage[done] - 1),
                    jnp.int32(stages.position[done] - 1),
                    lengths,
                    multipliers,
                )
            # A chunk that lies wholly before the kept suffix records nothing.
            record_chunk = record and done + size >= first_kept
            fn = compiled_chunk(algorithm, optimistic, record_chunk, batched, size)
            t0 = time.perf_counter()
            # Dispatch every group before waiting for any: the calls run concurrently.
            results = [fn(g, c, sched) for g, c in zip(game_parts, carry_parts)]
            carry_parts = [r[0] for r in results]
            out = _join([r[1] for r in results])
            if keep is not None and "metrics" in out:
                # Keep only the checkpoint rows, selected on the device before the copy to the host.
                rows = keep[(keep > done) & (keep <= done + size)] - done - 1
                axis_t = 1 if batched else 0
                out = dict(out, metrics=jnp.take(out["metrics"], jnp.asarray(rows), axis=axis_t))
            out = jax.tree_util.tree_map(np.asarray, out)  # waits for the chunk
            if (size, record_chunk) not in compiled_sizes:
                # The first call of a chunk shape includes its compilation; count it separately
                # by re-timing a cached call is not possible without re-running, so attribute
                # the whole first call to compile time (an upper bound).
                compiled_sizes.add((size, record_chunk))
                compile_time += time.perf_counter() - t0
            if "metrics" in out:
                metrics.append(out["metrics"])
            if record_chunk:
                skip = max(first_kept - 1 - done, 0)  # leading rows of this chunk before the suffix
                lo = done + skip - (first_kept - 1)  # their destination row in the kept arrays
                for i, pol in enumerate(out["policies"]):
                    pol = pol[:, skip:] if batched else pol[skip:]
                    if policies_out is not None:
                        if batched:
                            policies_out[i][:, lo : lo + size - skip] = pol
                        else:
                            policies_out[i][lo : lo + size - skip] = pol
                    else:
                        chunks_pol[i].append(pol)
            done += size
            if state_file is not None and (done == T or done - last_saved >= (state_every or 1)):
                if policies_out is not None:
                    for mm in policies_out:
                        mm.flush()
                _save_state(state_file, fingerprint, done, _join(carry_parts), metrics, axis=1 if batched else 0)
                last_saved = done
            if progress is not None:
                progress(done)
        carry = _join(carry_parts)
        residual = None
        if smooth:
            residual = np.asarray(carry.identity_residual)
        else:
            prefixes = np.arange(1, T + 1) if keep is None else keep
            metrics = [
                stage_prefix_metrics(
                    np.asarray(carry.stage_values), np.asarray(carry.stage1_values), stages, prefixes
                )
            ]
    wall = time.perf_counter() - start_wall
    axis = 1 if batched else 0
    stacked = np.concatenate(metrics, axis=axis)  # (..., T, 3, N): value, CCE bound, CE bound
    if not np.all(np.isfinite(stacked)):
        # Not expected within _check_logit_range's bound; never hand out NaN as a result.
        rows = np.nonzero(~np.isfinite(stacked).reshape(*stacked.shape[: axis + 1], -1).all(axis=-1))[-1]
        prefixes = np.arange(1, T + 1) if keep is None else keep
        raise FloatingPointError(
            f"the run's values and bounds are not finite from T' = {int(prefixes[rows.min()])} on "
            f"(eta = {max(etas):g}, {dtype}); please report this with the game and the settings"
        )
    metric_arrays = {
        "value": stacked[..., 0, :],
        "cce_bound": stacked[..., 1, :],
        "ce_bound": stacked[..., 2, :],
    }
    if not record:
        policies = None
    elif policies_out is not None:
        for mm in policies_out:
            mm.flush()
        policies = tuple(
            np.load(trajectory_dir / f"policy_{i}.npy", mmap_mode="r") for i in range(len(num_actions))
        )
    else:
        policies = tuple(np.concatenate(c, axis=axis) for c in chunks_pol)
    return metric_arrays, policies, residual, wall, compile_time


def run(
    game: MarkovGame,
    algorithm: str = "smooth_ce",
    T: int = 1000,
    eta: LearningRate = 0.2,
    *,
    optimistic: bool = True,
    record_trajectory: bool = True,
    trajectory_dir: str | Path | None = None,
    dtype: str = "float64",
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    checkpoints: Sequence[int] | None = None,
    state_file: str | Path | None = None,
    state_every: int | None = None,
    trajectory_tolerance: float | None = None,
) -> RunResult:
    """Run one learning dynamic for ``T`` iterations; metrics for every prefix come with it.

    Parameters
    ----------
    game : the Markov game.
    algorithm : ``"smooth_ce"`` (Algorithm 1), ``"stage_cce"`` (Algorithm 2) or ``"smooth_cce"``.
    T : number of iterations.
    eta : constant learning rate (the paper's simulations: 0.2) or ``"theory"``.
    optimistic : ``False`` runs the non-optimistic baseline (prediction 0).
    record_trajectory : keep ``pi^t`` for every ``t`` (needed by the output policy).
    trajectory_dir : write the trajectory to ``policy_{i}.npy`` files there chunk by chunk
        instead of holding it in memory.
    dtype : ``"float64"`` (reference) or ``"float32"``.
    chunk_size : iterations per compiled call (default: automatic).
    progress : called with the number of finished iterations after each chunk.
    checkpoints : keep the per-prefix metrics only at these ``T'`` (default: every prefix).
    state_file : save the loop state there after chunks of at least ``state_every`` iterations
        (atomically); if the file exists when the run starts, the run resumes from it — the
        results are identical to an uninterrupted run. Needs ``trajectory_dir`` when recording.
    state_every : iterations between saves (also caps the chunk length).
    trajectory_tolerance : keep only the shortest suffix ``first_kept..T`` of the trajectory whose
        dropped index mass under the output policy's kernel is at most this (``None``: keep all).
        :attr:`RunResult.suffix` reports ``first_kept``, the dropped mass ``delta`` and the
        resulting bounds on value (``H delta``) and gap (``2 H delta``) errors of the output
        policy rebuilt from the suffix. The per-prefix metrics are exact either way.
    """
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    spec = get_algorithm(algorithm)
    T = _check_T(T)
    keep = _check_checkpoints(checkpoints, T)
    eta_scale, per_stage = resolve_learning_rate(eta, spec, game)
    suffix = _suffix(spec, T, game.horizon, record_trajectory, trajectory_tolerance)
    metrics, policies, residual, wall, compile_time = _execute(
        spec,
        bool(optimistic),
        [game],
        [eta_scale],
        per_stage,
        T,
        dtype,
        record_trajectory,
        None if trajectory_dir is None else Path(trajectory_dir),
        chunk_size,
        progress,
        batched=False,
        checkpoints=keep,
        state_file=None if state_file is None else Path(state_file),
        state_every=state_every,
        first_kept=1 if suffix is None else suffix.first_kept,
    )
    return RunResult(
        game=game,
        algorithm=spec.name,
        optimistic=bool(optimistic),
        eta=eta,
        T=T,
        dtype=dtype,
        value=metrics["value"],
        certified_ce_bound=metrics["ce_bound"],
        certified_cce_bound=metrics["cce_bound"],
        policies=policies,
        identity_residual=None if residual is None else float(residual),
        wall_time_s=wall,
        compile_time_s=compile_time,
        prefixes=keep,
        suffix=suffix,
    )


def _suffix(spec: Algorithm, T: int, horizon: int, record: bool, tolerance) -> TrajectorySuffix | None:
    if tolerance is None:
        return None
    if not record:
        raise ValueError("trajectory_tolerance needs record_trajectory=True (it chooses which part to keep)")
    return trajectory_suffix(spec.name, T, horizon, tolerance)


def run_batch(
    games: MarkovGame | Sequence[MarkovGame],
    algorithm: str = "smooth_ce",
    T: int = 1000,
    etas: LearningRate | Sequence[LearningRate] = 0.2,
    *,
    optimistic: bool = True,
    record_trajectory: bool = False,
    trajectory_dir: str | Path | None = None,
    dtype: str = "float64",
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    checkpoints: Sequence[int] | None = None,
    state_file: str | Path | None = None,
    state_every: int | None = None,
    trajectory_tolerance: float | None = None,
    group_size: int | None = None,
) -> BatchRunResult:
    """Run a batch of runs of one algorithm side by side in compiled calls (the run axis vectorised).

    ``games`` is one game (shared by all runs) or a sequence of games of one shape
    (:attr:`MarkovGame.shape_key`); ``etas`` one learning rate or one per run. The batch size is
    the longer of the two (a single game or rate is broadcast).

    ``group_size``: runs per compiled call. By default the whole batch on an accelerator, and on
    the CPU groups whose arrays fit the caches (256 paper-game runs), dispatched together so that
    they run concurrently on the cores. The results do not depend on it beyond rounding. The
    other arguments are as for :func:`run`.
    """
    spec = get_algorithm(algorithm)
    T = _check_T(T)
    keep = _check_checkpoints(checkpoints, T)
    game_list = [games] if isinstance(games, MarkovGame) else list(games)
    eta_list = [etas] if isinstance(etas, (int, float, str)) else list(etas)
    if not game_list or not eta_list:
        raise ValueError("run_batch needs at least one game and one learning rate")
    size = max(len(game_list), len(eta_list))
    for name, seq in (("games", game_list), ("etas", eta_list)):
        if len(seq) not in (1, size):
            raise ValueError(f"{name} has {len(seq)} entries; expected 1 or {size}")
    game_list = game_list * size if len(game_list) == 1 else game_list
    eta_list = eta_list * size if len(eta_list) == 1 else eta_list
    key = game_list[0].shape_key
    for k, g in enumerate(game_list):
        if not isinstance(g, MarkovGame):
            raise TypeError(f"games[{k}] must be a MarkovGame, got {type(g).__name__}")
        if g.shape_key != key:
            raise ValueError(f"games[{k}] has shape (N, H, S, A) = {g.shape_key}, but games[0] has {key}")
        if _kernel_form(g) != _kernel_form(game_list[0]):
            raise ValueError(
                f"games[{k}] has {_kernel_form(g)} transitions, but games[0] has {_kernel_form(game_list[0])} "
                "(one batch needs one form; convert with MarkovGame.to_sparse or MarkovGame.to_dense)"
            )
    resolved = [resolve_learning_rate(e, spec, g) for e, g in zip(eta_list, game_list)]
    suffix = _suffix(spec, T, key[1], record_trajectory, trajectory_tolerance)
    per_stage = {r[1] for r in resolved}
    if len(per_stage) > 1:
        raise ValueError("stage_cce cannot mix 'theory' and constant learning rates in one batch")
    metrics, policies, residual, wall, compile_time = _execute(
        spec,
        bool(optimistic),
        game_list,
        [r[0] for r in resolved],
        per_stage.pop(),
        T,
        dtype,
        record_trajectory,
        None if trajectory_dir is None else Path(trajectory_dir),
        chunk_size,
        progress,
        batched=True,
        checkpoints=keep,
        state_file=None if state_file is None else Path(state_file),
        state_every=state_every,
        first_kept=1 if suffix is None else suffix.first_kept,
        group_size=group_size,
    )
    return BatchRunResult(
        games=tuple(game_list),
        algorithm=spec.name,
        optimistic=bool(optimistic),
        etas=tuple(eta_list),
        T=T,
        dtype=dtype,
        value=metrics["value"],
        certified_ce_bound=metrics["ce_bound"],
        certified_cce_bound=metrics["cce_bound"],
        policies=policies,
        identity_residual=residual,
        wall_time_s=wall,
        compile_time_s=compile_time,
        prefixes=keep,
        suffix=suffix,
    )
