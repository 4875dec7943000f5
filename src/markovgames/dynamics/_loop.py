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
import operator
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._dtypes import DTYPES
from .._waiting import in_background
from ..games import DiscountedMarkovGame, MarkovGame
from ._algorithms import Algorithm
from ._checkpoint import SavedState, StateFile
from ._engine import QUICK_RUN_WORK, compile_for, compiled_chunk, run_work
from ._feedback import FULL, run_key_data
from ._guard import STRATEGY_TOLERANCE, check_learner, raise_violation
from ._interplay import SIMULTANEOUS, Interplay, StepSchedule
from ._plan import run_groups
from ._trajectory import FileTrajectory, MemoryTrajectory
from ._transitions import SparseKernel
from ._value_update import GameArrays, segment_ends

__all__ = ["Job", "LoopOutput", "run_loop", "device_game", "loop_shape", "precision", "DTYPES"]


def loop_shape(game: MarkovGame | DiscountedMarkovGame) -> tuple[int, int, int, tuple[int, ...]]:
    """``(N, H, S, A)`` of the compiled loop's arrays: a discounted game is one stationary layer (``H = 1``)."""
    if isinstance(game, DiscountedMarkovGame):
        return game.num_players, 1, game.num_states, game.num_actions
    return game.shape_key


class Job(NamedTuple):
    """What determines a run's numbers: the algorithm and its settings, the games and rates."""

    algorithm: Algorithm
    optimistic: bool
    games: tuple  # MarkovGame, or DiscountedMarkovGame (with a discounted value update)
    etas: tuple  # resolved rate scales, one per run: a number, or a tuple of one per player
    per_stage_theory: bool
    T: int
    dtype: str
    batched: bool
    interplay: Interplay = SIMULTANEOUS
    step_schedule: StepSchedule | None = None  # None: constant
    initial: tuple | None = None  # per player the (H, S, A_i) initial strategies, or None (init's)
    seeds: tuple[int, ...] | None = None  # one per run: the seeds of its random draws (sampled feedback)

    def extras(self) -> tuple:
        """What the run sets beyond the paper's settings, for its state file's fingerprint."""
        out: list = []
        # The weighted average's prefixes are the loop's settings (`_execute` adds them).
        plain = self.interplay._replace(feedback=FULL, average=False)
        if plain != SIMULTANEOUS:
            out += [["order", self.interplay.order], ["regret", self.interplay.regret]]
        if self.interplay.feedback != FULL:
            out.append(["feedback", self.interplay.feedback.name])
        if self.interplay.feedback.estimates:
            out.append(["seeds", [int(s) for s in self.seeds or ()]])
        if self.step_schedule is not None and not self.step_schedule.is_constant:
            out.append(["schedule", self.step_schedule.identity])
        if self.initial is not None:
            out.append(["initial", [np.asarray(x, np.float64).ravel().tolist() for x in self.initial]])
        return tuple(out)

    @property
    def largest_eta(self) -> float:
        return max(float(np.max(e)) for e in self.etas)


class LoopOutput(NamedTuple):
    """What the loop produced."""

    metrics: np.ndarray  # (..., P, 3, N): value, certified CCE bound, certified CE bound per prefix (5: regrets)
    last_iterate: np.ndarray | None  # (..., P, 2, N): the last iterate's value and best-response values
    weighted_average: np.ndarray | None  # (..., P, 2, N): the same of the weighted average of the iterates
    policies: tuple[np.ndarray, ...] | None
    identity_residual: np.ndarray | None
    wall_time_s: float
    compile_time_s: float
    carry: object = None  # the loop state after the last iteration (a batch's with a leading run axis)


@contextlib.contextmanager
def precision(dtype: str):
    """JAX's 64-bit mode for float64 runs, scoped (the caller's global configuration stays as it was)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    with jax.enable_x64(dtype == "float64"):
        yield


def _padded(kernel, width: int):
    """A [`SparseTransitions`][markovgames.games.SparseTransitions]' arrays padded to ``width``
    successors (state 0 at probability 0): the same kernel."""
    extra = width - kernel.num_successors
    if extra == 0:
        return kernel.successors, kernel.probabilities  # no copy: large games are hundreds of MB
    pad = [(0, 0)] * (kernel.successors.ndim - 1) + [(0, extra)]
    return np.pad(kernel.successors, pad), np.pad(kernel.probabilities, pad)


def device_game(games: Sequence, etas: Sequence, dtype: str, batched: bool, seeds: Sequence[int] | None = None) -> GameArrays:
    """The games' arrays on the device in ``dtype`` (a batch stacked along a leading run axis);
    ``etas`` per run, a number or one per player (the device holds one per player); ``seeds`` per
    run, for the runs' keys (`._feedback.run_key_data`), or ``None`` (no random draws).

    A discounted game's arrays get a leading layer axis of length 1 (one stationary layer), and
    its discount and initial distribution come along (`GameArrays`)."""
    np_dtype = DTYPES[dtype]
    num_players = games[0].num_players
    discounted = isinstance(games[0], DiscountedMarkovGame)
    layer = (lambda x: x[None]) if discounted else (lambda x: x)

    def stack(xs):
        # A transfer, not jnp.asarray: that compiles a small program per shape and dtype.
        return jax.device_put(np.stack(xs) if batched else np.asarray(xs[0]))

    if games[0].is_sparse:
        # A batch may mix successor counts: shorter rows are padded (exact, probability 0).
        width = max(g.sparse_transitions.num_successors for g in games)
        kernels = [_padded(g.sparse_transitions, width) for g in games]
        if seeds is not None:
            # Sampled next states are drawn over a row's successors in order: sorted by state, so
            # that equal games (and a game's dense form) draw the same states (`._feedback`).
            kernels = [_by_successor(succ, prob) for succ, prob in kernels]
        transitions = SparseKernel(
            successors=stack([layer(succ.astype(np.int32, copy=False)) for succ, _ in kernels]),
            probabilities=stack([layer(prob.astype(np_dtype, copy=False)) for _, prob in kernels]),
        )
    else:
        transitions = stack([layer(g.transitions.astype(np_dtype, copy=False)) for g in games])
    return GameArrays(
        rewards=stack([layer(g.rewards.astype(np_dtype, copy=False)) for g in games]),
        transitions=transitions,
        initial_state=stack([np.asarray(g.initial_state or 0, np.int32) for g in games]),
        eta=stack([np.broadcast_to(np.asarray(e, np_dtype), (num_players,)) for e in etas]),
        key=None if seeds is None else stack([run_key_data(seed) for seed in seeds]),
        discount=stack([np.asarray(g.discount, np_dtype) for g in games]) if discounted else None,
        initial_distribution=stack([g.initial_distribution.astype(np_dtype) for g in games]) if discounted else None,
    )


def _by_successor(successors: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A sparse kernel's rows with their successors in increasing order of state (the same kernel)."""
    order = np.argsort(successors, axis=-1, kind="stable")
    return np.take_along_axis(successors, order, axis=-1), np.take_along_axis(probabilities, order, axis=-1)


def _distinct_buffers(tree):
    """``tree`` with every leaf its own buffer: the carry is donated to the compiled loop, and one
    buffer may be donated once (a learner's state may hold one array twice, as an ``init_at``
    whose base point and last strategy are the same strategy)."""
    seen: set[int] = set()

    def own(leaf):
        if id(leaf) in seen:
            return jnp.array(leaf, copy=True)
        seen.add(id(leaf))
        return leaf

    return jax.tree_util.tree_map(own, tree)


def _split(tree, groups):
    # One group is the whole batch (every leaf leads with the run axis): the tree as it is, rather
    # than a slice per leaf, each a small program JAX compiles on its first shape.
    if len(groups) == 1:
        return [tree]
    return [jax.tree_util.tree_map(operator.itemgetter(slice(lo, hi)), tree) for lo, hi in groups]


def _outputs_on_the_host() -> bool:
    """Whether the loop's outputs lie in the host's memory (the CPU backend)."""
    return jax.default_backend() == "cpu"


def _take_rows(out: dict, takes: dict[str, np.ndarray], axis: int, xp) -> dict:
    """``out`` with the rows ``takes[name]`` (along the iterations' ``axis``) of each output
    ``name`` (a tree: per player for the iterates), by ``xp.take`` (NumPy or jax.numpy)."""
    taken = {
        name: jax.tree_util.tree_map(lambda x, rows=rows: xp.take(x, rows, axis=axis), out[name]) for name, rows in takes.items()
    }
    return {**out, **taken}


def _join(parts):
    return parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=0), *parts)


class _Settings(NamedTuple):
    """What the loop keeps and writes, beside the job (see `run_loop`)."""

    keep: np.ndarray | None  # prefixes whose metrics are kept (None: all)
    record: bool
    trajectory_dir: Path | None
    first_kept: int
    last_iterate: np.ndarray | None  # prefixes at which pi^t itself is evaluated
    average: np.ndarray | None = None  # prefixes at which the weighted average of the iterates is evaluated


def _rows_of(prefixes: np.ndarray, done: int, size: int) -> np.ndarray:
    """The rows of a chunk of iterations ``done + 1 .. done + size`` that hold ``prefixes``."""
    return prefixes[(prefixes > done) & (prefixes <= done + size)] - done - 1


def _mask_of(prefixes: np.ndarray | None, done: int, size: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(rows, mask)`` of ``prefixes`` in a chunk (`_rows_of`, and the ``(size,)`` mask of those
    rows), or ``(None, None)`` when nothing is evaluated at prefixes."""
    if prefixes is None:
        return None, None
    rows = _rows_of(prefixes, done, size)
    mask = np.zeros(size, bool)
    mask[rows] = True
    return rows, mask


class _Loop:
    """One run of the loop: the device state in groups of runs, what was drained, and the steps."""

    def __init__(self, job: Job, settings: _Settings, state: StateFile | None, group_size, progress):
        self.job, self.settings, self.state, self.progress = job, settings, state, progress
        self.update, self.learner = job.algorithm.value_update, job.algorithm.learner
        self.np_dtype = DTYPES[job.dtype]
        self.shape = loop_shape(job.games[0])
        self.num_players, self.horizon, self.num_states, self.num_actions = self.shape
        # The axes of a recorded policy before the states': the steps, or none for a discounted
        # game's stationary policies.
        self.step_axes = () if self.update.stationary else (self.horizon,)
        self.axis_t = 1 if job.batched else 0
        # Rows of the per-prefix metrics: value, CCE bound, CE bound (a discounted update: the
        # value estimate), and external, swap regret.
        self.width = self.update.metric_rows + (2 if job.interplay.regret else 0)
        # Whether the state file keeps the metrics: a value update's records in the saved carry
        # hold the others, but not the regret rows, which only the chunks emit.
        self.saves_metrics = self.update.per_iteration_metrics or job.interplay.regret
        self.lead = (len(job.games),) if job.batched else ()
        self.group_size = group_size
        self.metrics: _Rows  # the per-prefix metrics drained so far (`start`)
        self.sink: MemoryTrajectory | FileTrajectory | None = None
        self.last: list[np.ndarray] = []
        self.average: list[np.ndarray] = []
        self.executables: dict = {}
        self.compile_time = 0.0
        self.done = 0

    # ---------------------------------------------------------------- start
    def start(self) -> None:
        """The device arrays, the schedule, the initial or saved state, and the trajectory sink."""
        job = self.job
        seeds = job.seeds if job.interplay.feedback.estimates else None
        self.game_arrays = device_game(job.games, job.etas, job.dtype, job.batched, seeds)
        # A user's learner: its functions traced once with the loop's shapes before anything is
        # compiled or written (`_guard`), so that a wrong shape or an exception in its code is
        # reported as the learner's, with its file and line.
        check_learner(self.learner, self.shape, self.np_dtype, len(job.games) if job.batched else None)
        self.work = run_work(job.T, self.game_arrays)
        self.schedule = self.update.schedule(
            job.T,
            self.update.schedule_horizon(job.games[0]),
            self.num_players,
            job.per_stage_theory,
            step_schedule=job.step_schedule,
        )
        carry = self.update.init_carry(self.learner, self.shape, self.np_dtype, self.schedule, job.interplay, job.initial)
        if job.batched:
            # Repeated on the host and transferred: an eager jnp operation would compile a small
            # program for every shape (a noticeable part of a short command's time).
            batch = len(job.games)
            carry = jax.tree_util.tree_map(lambda x: np.broadcast_to(np.asarray(x), (batch, *x.shape)).copy(), carry)
        carry = _distinct_buffers(jax.device_put(carry))  # (a learner's init may give host arrays)
        saved = None if self.state is None else self._load(self.state, carry)
        self.sink = self._open_sink(saved)
        rows = job.T if self.settings.keep is None else len(self.settings.keep)
        self.metrics = _Rows((*self.lead, rows, self.width, self.num_players), self.axis_t, self.np_dtype)
        if saved is not None:
            treedef = jax.tree_util.tree_structure(carry)
            if not self.saves_metrics:
                # The saved state holds no metrics: its records hold every prefix done.
                records = self.update.prefix_records(jax.tree_util.tree_unflatten(treedef, saved.leaves))
                self._assemble(records, 0, saved.done)
            carry = jax.tree_util.tree_unflatten(treedef, [jax.device_put(leaf) for leaf in saved.leaves])
            self.done = saved.done
            if saved.metrics is not None:
                self.metrics.append(saved.metrics)
            self.last += [] if saved.last_iterate is None else [saved.last_iterate]
            self.average += [] if saved.weighted_average is None else [saved.weighted_average]
        self._split_into_groups(carry)

    def _counted(self, prefixes: np.ndarray | None, done: int) -> int:
        return done if prefixes is None else int(np.count_nonzero(prefixes <= done))

    def _load(self, state: StateFile, carry) -> SavedState | None:
        """The saved state, checked against the shapes this run's arrays have after ``done`` iterations."""
        settings, lead, n = self.settings, self.lead, self.num_players
        metric_rows = lambda done: self._counted(settings.keep, done)  # noqa: E731
        last_rows = lambda done: 0 if settings.last_iterate is None else self._counted(settings.last_iterate, done)  # noqa: E731
        average_rows = lambda done: 0 if settings.average is None else self._counted(settings.average, done)  # noqa: E731
        return state.load(
            carry,
            metrics_shape=lambda done: (
                (*lead, metric_rows(done), self.width, n) if self.saves_metrics and metric_rows(done) else None
            ),
            kept_rows=lambda done: (
                max(0, done - settings.first_kept + 1) if settings.record and settings.trajectory_dir is not None else None
            ),
            last_iterate_shape=lambda done: (*lead, last_rows(done), 2, n) if last_rows(done) else None,
            metrics_dtype=self.np_dtype,
            average_shape=lambda done: (*lead, average_rows(done), 2, n) if average_rows(done) else None,
        )

    def _open_sink(self, saved: SavedState | None):
        """Where the trajectory goes: nowhere, memory, or its files (reopened and checked on resume)."""
        settings = self.settings
        if not settings.record:
            return None
        if settings.trajectory_dir is None:
            return MemoryTrajectory(self.num_players, self.job.batched)
        kept = self.job.T - settings.first_kept + 1
        shapes = [(*self.lead, kept, *self.step_axes, self.num_states, a) for a in self.num_actions]
        return FileTrajectory(
            settings.trajectory_dir,
            shapes,
            self.np_dtype,
            self.job.batched,
            None if saved is None else saved.trajectory,
            digests=self.state is not None,
        )

    def _split_into_groups(self, carry) -> None:
        """A batch runs as groups of runs, each a compiled call of its own (`run_groups`)."""
        if self.job.batched:
            # One run's bytes, from the shapes (indexing a device array would compile a slice per leaf).
            per_run = sum(leaf.nbytes // leaf.shape[0] for leaf in jax.tree_util.tree_leaves((carry, self.game_arrays)))
            groups = run_groups(len(self.job.games), per_run, self.update.name, self.group_size)
            self.game_parts, self.carry_parts = _split(self.game_arrays, groups), _split(carry, groups)
            self.groups = list(groups)
        else:
            self.game_parts, self.carry_parts = [self.game_arrays], [carry]
            self.groups = [(0, 0)]

    # ---------------------------------------------------------------- chunks
    def dispatch(self, size: int):
        """Start the next chunk of ``size`` iterations on every group; returns it, not yet drained."""
        done, settings = self.done, self.settings
        sched = self.update.chunk_inputs(self.schedule, done, size, self.np_dtype)
        # A chunk that lies wholly before the kept suffix records nothing.
        record_chunk = settings.record and done + size >= settings.first_kept
        last_rows, last_mask = _mask_of(settings.last_iterate, done, size)
        average_rows, average_mask = _mask_of(settings.average, done, size)
        taken_average = average_rows
        if average_rows is not None and self._average_how() == "segments":
            # The stretches' last rows instead of a mask, and one output row per stretch.
            average_mask = segment_ends(average_rows, size, self._average_capacity(size))
            taken_average = np.arange(len(average_rows))
        mask = (last_mask, average_mask)
        calls = [
            self._executable(size, record_chunk, sched, mask, g, c)
            for g, c in zip(self.game_parts, self.carry_parts, strict=True)
        ]
        # Dispatch every group before waiting for any: the calls run concurrently.
        results = [call(g, c, sched, mask) for call, g, c in zip(calls, self.game_parts, self.carry_parts, strict=True)]
        self.carry_parts = [r[0] for r in results]
        # A guarded learner's first violation per group of runs ([row, code]), kept apart: the
        # groups' codes count runs from their own first run.
        outs = [dict(r[1]) for r in results]
        violations = [o.pop("violation") for o in outs if "violation" in o]
        # The rows kept of the outputs with one row per iteration: the checkpoints' metrics and
        # regret, the iterates evaluated at prefixes (`taken_average`: one row per stretch).
        takes: dict[str, np.ndarray] = {}
        if settings.keep is not None:
            takes |= {name: _rows_of(settings.keep, done, size) for name in ("metrics", "regret") if name in outs[0]}
        for name, evaluated in (("last_iterate", last_rows), ("weighted_average", taken_average)):
            if evaluated is not None:
                takes[name] = np.asarray(evaluated)
        if _outputs_on_the_host():
            # Drain's copy is then a view: the rows are taken there, with NumPy. On the device each
            # distinct shape of the selection would be a small program to compile, about 0.1 s
            # every run (tracing included) for the same exact copy.
            parts = outs
        else:
            # Elsewhere only the rows kept come back to the host: taken on the device.
            parts = [_take_rows(_join(outs), takes, self.axis_t, jnp)]
            takes = {}
        if violations:
            parts[0]["violation"] = violations
        self.done += size
        return done, size, record_chunk, (parts, takes)

    def _executable(self, size: int, record_chunk: bool, sched, mask, game, carry):
        """The compiled chunk for this shape, compiled ahead of time once (its time counted)."""
        key = (size, record_chunk, jax.tree_util.tree_leaves(carry)[0].shape)
        if key not in self.executables:
            fn = compiled_chunk(
                self.learner,
                self.update,
                self.job.optimistic,
                record_chunk,
                self.job.batched,
                size,
                mask[0] is not None,
                self.job.interplay,
                self._average_how(),
            )
            t0 = time.perf_counter()
            self.executables[key] = compile_for(fn, self.job.batched, game, carry, sched, mask, work=self.work)
            self.compile_time += time.perf_counter() - t0
        return self.executables[key]

    def _average_how(self) -> str:
        """How the loop evaluates the weighted average ([`ValueUpdate.run_chunk`][markovgames.dynamics.ValueUpdate.run_chunk]),
        from the whole run's prefixes and work, so that every chunk and a resumption do it alike."""
        prefixes = self.settings.average
        if prefixes is not None and len(prefixes) == self.job.T:
            return "every"
        # Stretches with no test run faster but hold the step twice in the program, which then
        # compiles for longer, and at the quick runs' LLVM level 0 the two copies rounded some
        # operations differently (a run's numbers depended on its chunks): beyond those runs only.
        if prefixes is not None and self.update.average_in_segments and self.work > QUICK_RUN_WORK:
            return "segments"
        return "marked"

    def _average_capacity(self, size: int) -> int:
        """The rows of a chunk's stretches of ``size`` iterations (`segment_ends`): enough for the
        run's prefixes and one more, a power of two (so few programs), at most ``size``. The
        run's prefixes fix it, so every chunk of a size and a resumption use one program."""
        needed = len(self.settings.average) + 1 if self.settings.average is not None else 1
        return min(1 << (needed - 1).bit_length(), size)

    def drain(self, chunk) -> None:
        """Copy a dispatched chunk's outputs to the host (waiting for it), write its trajectory rows
        and report progress."""
        chunk_done, size, record_chunk, (parts, takes) = chunk
        # Waits for the chunk, interruptibly: a chunk of a slow learner or a large game can take
        # minutes, and a signal must not wait for it (`_waiting`).
        in_background(jax.block_until_ready, parts)
        violations = parts[0].pop("violation", None)
        parts = [_take_rows(jax.tree_util.tree_map(np.asarray, part), takes, self.axis_t, np) for part in parts]
        out = parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *xs: np.concatenate(xs, axis=0), *parts)
        if violations is not None:
            out["violation"] = [np.asarray(v) for v in violations]
        if "violation" in out:
            self._check_strategies(out["violation"], chunk_done)
        if "metrics" in out:
            self.metrics.append(out["metrics"])
        if "prefix_records" in out:
            self._assemble(out["prefix_records"], chunk_done, size, out.get("regret"))
        if "last_iterate" in out:
            self.last.append(self.update.evaluate_iterates(out["last_iterate"], self.job.games, self.job.batched))
        if "weighted_average" in out:
            self.average.append(self.update.evaluate_iterates(out["weighted_average"], self.job.games, self.job.batched))
        if record_chunk and self.sink is not None:
            first_kept = self.settings.first_kept
            skip = max(first_kept - 1 - chunk_done, 0)  # leading rows of this chunk before the suffix
            row = chunk_done + skip - (first_kept - 1)  # their destination row in the kept arrays
            self.sink.write(row, [p[:, skip:] if self.job.batched else p[skip:] for p in out["policies"]])
        if self.progress is not None:
            self.progress(chunk_done + size)

    def _check_strategies(self, violations, chunk_done: int) -> None:
        """Stop the run at the chunk's first strategy off the simplex, if any (`_guard`)."""
        found = [(int(v[0]), k) for k, v in enumerate(violations) if v[0] >= 0]
        if not found:
            return
        row, k = min(found)
        lo, hi = self.groups[k]
        shape = (self.horizon, self.num_states, *((hi - lo,) if self.job.batched else ()))
        tol = STRATEGY_TOLERANCE[self.job.dtype]
        raise_violation(
            self.learner,
            chunk_done + row + 1,
            int(violations[k][1]),
            shape,
            tol,
            run_offset=lo,
            num_players=self.num_players if self.learner.learner().propose is not None else None,
            stationary=self.update.stationary,
        )

    def _assemble(self, records, done: int, size: int, regret: np.ndarray | None = None) -> None:
        """Append the kept prefixes among ``done + 1 .. done + size``, assembled from the value
        update's records (`ValueUpdate.prefix_records`) after those iterations; ``regret``: the
        kept prefixes' regret rows ``(..., P, 2, N)``, appended to their quantities."""
        keep = self.settings.keep
        prefixes = np.arange(done + 1, done + size + 1) if keep is None else keep[(keep > done) & (keep <= done + size)]
        if prefixes.size:
            metrics = self.update.prefix_metrics(records, self.schedule, prefixes)
            if regret is not None:
                metrics = np.concatenate([metrics, regret.astype(metrics.dtype, copy=False)], axis=-2)
            self.metrics.append(metrics)

    def save(self, state: StateFile) -> None:
        """Write the state after the chunks drained so far (the trajectory files first)."""
        if isinstance(self.sink, FileTrajectory):
            self.sink.flush()
        records = self.sink.records() if self.sink is not None else []
        # Only metrics the chunks emitted (or with regret rows): a value update's records in the
        # saved carry hold the others.
        saved = self.saves_metrics and self.metrics.count
        metrics = self.metrics.filled() if saved else None
        state.save(self.done, _join(self.carry_parts), metrics, self.axis_t, records, self.last, self.average)

    def run(self, plan: list[int]) -> None:
        """Every chunk of ``plan`` not done before an interruption, each drained while the next runs."""
        pending = None  # the last dispatched chunk whose outputs are not drained yet
        state, last_saved, offset = self.state, self.done, 0
        for size in plan:
            offset += size
            if offset <= self.done:
                continue  # finished before the interruption
            chunk = self.dispatch(size)
            if pending is not None:
                self.drain(pending)  # the previous chunk's outputs, while this one runs
            pending = chunk
            if state is not None and (self.done == self.job.T or self.done - last_saved >= state.every):
                self.drain(pending)
                pending = None
                self.save(state)
                last_saved = self.done
        if pending is not None:
            self.drain(pending)

    # ---------------------------------------------------------------- finish
    def finish(self, start_wall: float) -> LoopOutput:
        """The per-prefix metrics drained, checked finite, and the rest of what the loop produced."""
        job = self.job
        if isinstance(self.sink, FileTrajectory):
            self.sink.flush_in_background()  # while the metrics are checked
        carry = _join(self.carry_parts)
        residual = self.update.identity_residual(carry)
        residual = None if residual is None else np.asarray(residual)
        prefixes = np.arange(1, job.T + 1) if self.settings.keep is None else self.settings.keep
        # (..., P, 3, N): value, CCE bound, CE bound.
        if self.metrics.count != len(prefixes):  # a value update must emit metrics or records
            raise AssertionError(f"the value update {self.update.name!r} gave no metrics for every prefix")
        stacked = self.metrics.filled()
        # A sum first (one pass, no temporary): it is finite when every entry is, unless it
        # overflows, which values and bounds of at most H cannot; the entries decide otherwise.
        if not np.isfinite(np.sum(stacked)) and not np.all(np.isfinite(stacked)):
            # Not expected within the learning-rate bound; never hand out NaN as a result.
            rows = np.nonzero(~np.isfinite(stacked).reshape(*stacked.shape[: self.axis_t + 1], -1).all(axis=-1))[-1]
            raise FloatingPointError(
                f"the run's values and bounds are not finite from T' = {int(prefixes[rows.min()])} on "
                f"(eta = {job.largest_eta:g}, {job.dtype}); please report this with the game and the settings"
            )
        policies = None if self.sink is None else self.sink.result()
        last = np.concatenate(self.last, axis=self.axis_t) if self.settings.last_iterate is not None else None
        average = np.concatenate(self.average, axis=self.axis_t) if self.settings.average is not None else None
        elapsed = time.perf_counter() - start_wall
        return LoopOutput(stacked, last, average, policies, residual, elapsed, self.compile_time, carry)


class _Rows:
    """The per-prefix metrics ``(..., P, 3, N)`` filled block by block along the prefix axis
    ``axis`` as the chunks are drained: allocated once, so that nothing is concatenated after the
    loop and the pages are touched while the next chunk runs.

    Stored with the three quantities first: each one's curve ``metrics[..., q, :]`` is then one
    contiguous array, which a results file writes without gathering it first.
    """

    def __init__(self, shape: tuple[int, ...], axis: int, dtype) -> None:
        store = np.empty((shape[-2], *shape[:-2], shape[-1]), dtype)
        self.array = np.moveaxis(store, 0, -2)  # a view of ``shape``
        self.axis, self.count = axis, 0

    def append(self, block: np.ndarray) -> None:
        rows = block.shape[self.axis]
        index = (slice(None),) * self.axis + (slice(self.count, self.count + rows),)
        self.array[index] = block
        self.count += rows

    def filled(self) -> np.ndarray:
        """The rows appended so far (all of them once the loop is done)."""
        return self.array[(slice(None),) * self.axis + (slice(0, self.count),)]


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
    average: np.ndarray | None = None,
) -> LoopOutput:
    """Run ``job`` chunk by chunk (see the module docstring).

    ``keep``: the prefixes whose metrics are kept (``None``: all). ``record``: keep the trajectory
    (iterations ``first_kept..T``), in ``trajectory_dir`` if given, else in memory.
    ``last_iterate``: the prefixes at which the product policy ``pi^t`` itself is also evaluated
    (sorted, unique), or ``None``; ``average`` likewise those at which the weighted average of the
    iterates is (``job.interplay.average`` must say that the loop carries it).
    """
    if (average is not None) != job.interplay.average:
        raise AssertionError("the weighted average's prefixes and Interplay.average disagree")
    start_wall = time.perf_counter()
    settings = _Settings(keep, record, trajectory_dir, first_kept, last_iterate, average)
    loop = _Loop(job, settings, state, group_size, progress)
    with precision(job.dtype):
        try:
            loop.start()
            loop.run(plan)
            return loop.finish(start_wall)
        except BaseException:
            if isinstance(loop.sink, FileTrajectory):
                loop.sink.abandon()  # no write may go on after the run has failed
            raise
