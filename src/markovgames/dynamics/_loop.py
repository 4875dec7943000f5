"""The loop over chunks: compiled calls in sequence, their outputs drained while the next one runs.

A run (or a batch of runs of one algorithm on games of one shape) is a `Job`. The loop
compiles each distinct chunk shape once (ahead of time, so that compile time is measured as
such), dispatches every group of runs of a chunk before waiting for any, and dispatches the next
chunk before it copies the previous chunk's outputs to the host, writes its trajectory rows and
reports progress: the host's work overlaps the device's. A saved state is written after a chunk
when due (`StateFile`), and a run whose state file exists resumes from it
after checking it (and the trajectory files it reuses) against this run.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._dtypes import DTYPES
from ..games import MarkovGame
from ._algorithms import Algorithm
from ._checkpoint import StateFile
from ._engine import compiled_chunk
from ._plan import run_groups
from ._trajectory import FileTrajectory, MemoryTrajectory
from ._transitions import SparseKernel
from ._value_update import GameArrays

__all__ = ["Job", "LoopOutput", "run_loop", "device_game", "precision", "DTYPES"]



class Job(NamedTuple):
    """What determines a run's numbers: the algorithm and its settings, the games and rates."""

    algorithm: Algorithm
    optimistic: bool
    games: tuple[MarkovGame, ...]
    etas: tuple[float, ...]  # resolved rate scales, one per run
    per_stage_theory: bool
    T: int
    dtype: str
    batched: bool


class LoopOutput(NamedTuple):
    """What the loop produced."""

    metrics: np.ndarray  # (..., P, 3, N): value, certified CCE bound, certified CE bound per prefix
    last_iterate: np.ndarray | None  # (..., P, 2, N): the last iterate's value and best-response values
    policies: tuple[np.ndarray, ...] | None
    identity_residual: np.ndarray | None
    wall_time_s: float
    compile_time_s: float


@contextlib.contextmanager
def precision(dtype: str):
    """JAX's 64-bit mode for float64 runs, scoped (the caller's global configuration stays as it was)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    with jax.enable_x64(dtype == "float64"):
        yield


def _padded(kernel, width: int):
    """A [`SparseTransitions`][markovgames.games.SparseTransitions]' arrays padded to ``width`` successors (state 0 at probability 0): the same kernel."""
    extra = width - kernel.num_successors
    if extra == 0:
        return kernel.successors, kernel.probabilities  # no copy: large games are hundreds of MB
    pad = [(0, 0)] * (kernel.successors.ndim - 1) + [(0, extra)]
    return np.pad(kernel.successors, pad), np.pad(kernel.probabilities, pad)


def device_game(games: Sequence[MarkovGame], etas: Sequence[float], dtype: str, batched: bool) -> GameArrays:
    """The games' arrays on the device in ``dtype`` (a batch stacked along a leading run axis)."""
    np_dtype = DTYPES[dtype]

    def stack(xs):
        return jnp.asarray(np.stack(xs)) if batched else jnp.asarray(xs[0])

    if games[0].is_sparse:
        # A batch may mix successor counts: shorter rows are padded (exact, probability 0).
        width = max(g.sparse_transitions.num_successors for g in games)
        kernels = [_padded(g.sparse_transitions, width) for g in games]
        transitions = SparseKernel(
            successors=stack([succ.astype(np.int32, copy=False) for succ, _ in kernels]),
            probabilities=stack([prob.astype(np_dtype, copy=False) for _, prob in kernels]),
        )
    else:
        transitions = stack([g.transitions.astype(np_dtype, copy=False) for g in games])
    return GameArrays(
        rewards=stack([g.rewards.astype(np_dtype, copy=False) for g in games]),
        transitions=transitions,
        initial_state=stack([np.asarray(g.initial_state, np.int32) for g in games]),
        eta=stack([np.asarray(e, np_dtype) for e in etas]),
    )


def _split(tree, groups):
    return [jax.tree_util.tree_map(lambda x: x[lo:hi], tree) for lo, hi in groups]


def _join(parts):
    return parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=0), *parts)


def run_loop(
    job: Job,
    plan: list[int],
    *,
    keep: np.ndarray | None,
    record: bool,
    trajectory_dir: Path | None,
    first_kept: int,
    state: StateFile | None,
    group_size: int | None,
    progress: Callable[[int], None] | None,
    last_iterate: np.ndarray | None = None,
) -> LoopOutput:
    """Run ``job`` chunk by chunk (see the module docstring).

    ``keep``: the prefixes whose metrics are kept (``None``: all). ``record``: keep the trajectory
    (iterations ``first_kept..T``), in ``trajectory_dir`` if given, else in memory.
    ``last_iterate``: the prefixes at which the product policy ``pi^t`` itself is also evaluated
    (sorted, unique), or ``None``.
    """
    update, learner = job.algorithm.value_update, job.algorithm.learner
    np_dtype = DTYPES[job.dtype]
    game0 = job.games[0]
    num_players, horizon, num_states, num_actions = game0.shape_key
    batch = len(job.games)
    axis_t = 1 if job.batched else 0
    lead = (batch,) if job.batched else ()
    kept = job.T - first_kept + 1
    start_wall = time.perf_counter()
    compile_time = 0.0
    with precision(job.dtype):
        game_arrays = device_game(job.games, job.etas, job.dtype, job.batched)
        schedule = update.schedule(job.T, horizon, num_players, job.per_stage_theory)
        carry = update.init_carry(learner, game0.shape_key, np_dtype, schedule)
        if job.batched:
            carry = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch, *x.shape)).copy(), carry)

        def metric_rows(done: int) -> int:
            return done if keep is None else int(np.count_nonzero(keep <= done))

        saved = None
        if state is not None:
            saved = state.load(
                carry,
                metrics_shape=lambda done: None
                if not update.per_iteration_metrics or metric_rows(done) == 0
                else (*lead, metric_rows(done), 3, num_players),
                kept_rows=lambda done: max(0, done - first_kept + 1) if record and trajectory_dir is not None else None,
                last_iterate_shape=lambda done: None
                if last_iterate is None or np.count_nonzero(last_iterate <= done) == 0
                else (*lead, int(np.count_nonzero(last_iterate <= done)), 2, num_players),
            )
        sink = None
        if record:
            if trajectory_dir is None:
                sink = MemoryTrajectory(num_players, job.batched)
            else:
                shapes = [(*lead, kept, horizon, num_states, a) for a in num_actions]
                sink = FileTrajectory(
                    trajectory_dir, shapes, np_dtype, job.batched, None if saved is None else saved.trajectory,
                    digests=state is not None,
                )
        done = 0
        metrics: list[np.ndarray] = []
        last: list[np.ndarray] = []
        if saved is not None:
            treedef = jax.tree_util.tree_structure(carry)
            carry = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(leaf) for leaf in saved.leaves])
            done = saved.done
            if saved.metrics is not None:
                metrics.append(saved.metrics)
            if saved.last_iterate is not None:
                last.append(saved.last_iterate)
        if job.batched:
            per_run = sum(leaf[0].nbytes for leaf in jax.tree_util.tree_leaves((carry, game_arrays)))
            groups = run_groups(batch, per_run, update.name, group_size)
            game_parts, carry_parts = _split(game_arrays, groups), _split(carry, groups)
        else:
            game_parts, carry_parts = [game_arrays], [carry]
        del carry  # donated to the compiled calls part by part
        executables: dict = {}
        pending = None  # the last dispatched chunk whose outputs are not drained yet

        def drain(chunk) -> None:
            chunk_done, size, record_chunk, out = chunk
            out = jax.tree_util.tree_map(np.asarray, out)  # waits for the chunk
            if "metrics" in out:
                metrics.append(out["metrics"])
            if "last_iterate" in out:
                last.append(out["last_iterate"])
            if record_chunk:
                skip = max(first_kept - 1 - chunk_done, 0)  # leading rows of this chunk before the suffix
                row = chunk_done + skip - (first_kept - 1)  # their destination row in the kept arrays
                sink.write(row, [p[:, skip:] if job.batched else p[skip:] for p in out["policies"]])
            if progress is not None:
                progress(chunk_done + size)

        last_saved = done
        offset = 0
        for size in plan:
            offset += size
            if offset <= done:
                continue  # finished before the interruption
            sched = update.chunk_inputs(schedule, done, size, np_dtype)
            # A chunk that lies wholly before the kept suffix records nothing.
            record_chunk = record and done + size >= first_kept
            def rows_of(prefixes):
                return prefixes[(prefixes > done) & (prefixes <= done + size)] - done - 1

            mask = None
            if last_iterate is not None:
                mask = np.zeros(size, bool)
                mask[rows_of(last_iterate)] = True
            fn = compiled_chunk(learner, update, job.optimistic, record_chunk, job.batched, size, last_iterate is not None)
            calls = []
            for g, c in zip(game_parts, carry_parts):
                key = (size, record_chunk, jax.tree_util.tree_leaves(c)[0].shape)
                if key not in executables:
                    t0 = time.perf_counter()
                    executables[key] = fn.lower(g, c, sched, mask).compile()
                    compile_time += time.perf_counter() - t0
                calls.append(executables[key])
            # Dispatch every group before waiting for any: the calls run concurrently.
            results = [call(g, c, sched, mask) for call, g, c in zip(calls, game_parts, carry_parts)]
            carry_parts = [r[0] for r in results]
            out = _join([r[1] for r in results])
            # Keep only the checkpoint rows, selected on the device before the copy to the host.
            if keep is not None and "metrics" in out:
                out = dict(out, metrics=jnp.take(out["metrics"], jnp.asarray(rows_of(keep)), axis=axis_t))
            if mask is not None:
                out = dict(out, last_iterate=jnp.take(out["last_iterate"], jnp.asarray(rows_of(last_iterate)), axis=axis_t))
            if pending is not None:
                drain(pending)  # the previous chunk's outputs, while this one runs
            pending = (done, size, record_chunk, out)
            done += size
            if state is not None and (done == job.T or done - last_saved >= state.every):
                drain(pending)
                pending = None
                if isinstance(sink, FileTrajectory):
                    sink.flush()
                state.save(done, _join(carry_parts), metrics, axis_t, sink.records() if sink is not None else [], last)
                last_saved = done
        if pending is not None:
            drain(pending)
        carry = _join(carry_parts)
        residual = update.identity_residual(carry)
        residual = None if residual is None else np.asarray(residual)
        prefixes = np.arange(1, job.T + 1) if keep is None else keep
        assembled = update.prefix_metrics(jax.tree_util.tree_map(np.asarray, carry), schedule, prefixes)
        if assembled is not None:
            metrics = [assembled]
    stacked = np.concatenate(metrics, axis=axis_t)  # (..., P, 3, N): value, CCE bound, CE bound
    if not np.all(np.isfinite(stacked)):
        # Not expected within the learning-rate bound; never hand out NaN as a result.
        rows = np.nonzero(~np.isfinite(stacked).reshape(*stacked.shape[: axis_t + 1], -1).all(axis=-1))[-1]
        raise FloatingPointError(
            f"the run's values and bounds are not finite from T' = {int(prefixes[rows.min()])} on "
            f"(eta = {max(job.etas):g}, {job.dtype}); please report this with the game and the settings"
        )
    policies = None if sink is None else sink.result()
    last_iterate_values = np.concatenate(last, axis=axis_t) if last_iterate is not None else None
    return LoopOutput(stacked, last_iterate_values, policies, residual, time.perf_counter() - start_wall, compile_time)
