"""Running the dynamics: single runs and batches of runs, with progress, trajectory files and resumable state.

The public entry points check their arguments and assemble the parts: the chunk plan
(`._plan`), the trajectory sink and the state file (`._trajectory`,
`._checkpoint`) and the loop (`._loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from .._schedules import stage_schedule
from ..games import DiscountedMarkovGame, MarkovGame, require_finite_horizon
from ..policies import TrajectorySuffix, trajectory_suffix
from ._algorithms import Algorithm, LearningRate, get_algorithm, get_step_schedule, resolve_learning_rate
from ._checkpoint import StateFile, fingerprint
from ._feedback import CHUNK_DRAW_BYTES, Feedback, draws_per_iteration, parse_feedback, samples_per_iteration
from ._guard import check_init_at
from ._interplay import ORDERS, Interplay, StepSchedule, bounded_schedule
from ._loop import DTYPES, Job, run_loop
from ._plan import chunk_plan

__all__ = ["RunResult", "BatchRunResult", "run", "run_batch", "max_learning_rate", "DTYPES"]


class PrefixCurves:
    """The certified gaps of per-prefix arrays ``value``, ``certified_ce_bound`` and
    ``certified_cce_bound`` (prefixes along the second-to-last axis, players along the last),
    and the row of a prefix."""

    # The arrays that the subclasses (dataclasses) hold; ``prefixes`` is ``None`` only until a
    # subclass's __post_init__ fills in its default. A curve without last-iterate arrays (a
    # certified one) has the class defaults ``None``.
    prefixes: np.ndarray | None
    value: np.ndarray
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    last_iterate_value: np.ndarray | None = None
    last_iterate_best_response: np.ndarray | None = None
    last_iterate_prefixes: np.ndarray | None = None
    weighted_average_value: np.ndarray | None = None
    weighted_average_best_response: np.ndarray | None = None
    weighted_average_prefixes: np.ndarray | None = None

    @property
    def certified_ce_gap(self) -> np.ndarray:
        """``max_i (ce_bound_i - V_i)`` per prefix (and per run of a batch)."""
        return np.max(self.certified_ce_bound - self.value, axis=-1)

    @property
    def certified_cce_gap(self) -> np.ndarray:
        """``max_i (cce_bound_i - V_i)`` per prefix (and per run of a batch)."""
        return np.max(self.certified_cce_bound - self.value, axis=-1)

    @property
    def last_iterate_nash_gap(self) -> np.ndarray | None:
        """``max_i (best response_i - V_i)`` of the last iterate ``pi^{T'}`` per prefix of
        ``last_iterate_prefixes`` (``None`` unless the run evaluated it: ``last_iterate``)."""
        best, value = self.last_iterate_best_response, self.last_iterate_value
        return None if best is None or value is None else np.max(best - value, axis=-1)

    @property
    def last_iterate_duality_gap(self) -> np.ndarray | None:
        """``sum_i (best response_i - V_i)`` of the last iterate per prefix of ``last_iterate_prefixes``:
        the duality gap in a two-player zero-sum (constant-sum) game, where it is the sum of the
        players' best-response gains (``None`` unless the run evaluated the last iterate)."""
        best, value = self.last_iterate_best_response, self.last_iterate_value
        return None if best is None or value is None else np.sum(best - value, axis=-1)

    @property
    def weighted_average_nash_gap(self) -> np.ndarray | None:
        """``max_i (best response_i - V_i)`` of the weighted average of the iterates (the value
        update's weights, `ValueUpdate.average_weights`) per prefix of ``weighted_average_prefixes``
        (``None`` unless the run evaluated it: ``weighted_average``)."""
        best, value = self.weighted_average_best_response, self.weighted_average_value
        return None if best is None or value is None else np.max(best - value, axis=-1)

    @property
    def weighted_average_duality_gap(self) -> np.ndarray | None:
        """``sum_i (best response_i - V_i)`` of the weighted average per prefix of
        ``weighted_average_prefixes``: its duality gap in a two-player zero-sum (constant-sum) game
        (``None`` unless the run evaluated it)."""
        best, value = self.weighted_average_best_response, self.weighted_average_value
        return None if best is None or value is None else np.sum(best - value, axis=-1)

    def row(self, T_prime: int) -> int:
        """The row of the per-prefix arrays that holds prefix ``T'``."""
        if self.prefixes is None:  # unreachable: the subclasses' __post_init__ fills in the default
            raise AssertionError("the per-prefix arrays have no prefixes")
        rows = np.flatnonzero(self.prefixes == T_prime)
        if rows.size == 0:
            raise KeyError(f"prefix T' = {T_prime} was not recorded (recorded: {len(self.prefixes)} prefixes)")
        return int(rows[0])


class _RunCurves(PrefixCurves):
    """The curves of a run or a batch of runs, with the algorithm that made them: the defaults
    that the two result dataclasses fill in."""

    T: int
    algorithm: str
    spec: Algorithm | None
    feedback: str

    @property
    def samples_used(self) -> np.ndarray | None:
        """``(P,)`` per prefix ``T'``, the random draws the run had made after ``T'`` iterations:
        the other players' action profiles and the next states (`samples_per_iteration`);
        ``None`` under full information and the exact mode (no draws)."""
        feedback = parse_feedback(self.feedback)
        if not feedback.estimates or self.spec is None or self.prefixes is None:
            return None
        game = self.game if isinstance(self, RunResult) else cast(BatchRunResult, self).games[0]
        two_query = self.spec.learner.learner().propose is not None
        counts = samples_per_iteration(feedback, game.shape_key, two_query)
        return samples_by_prefix(counts, self.spec.value_update, game.horizon, self.T, self.prefixes)

    def __post_init__(self) -> None:
        if self.prefixes is None:
            object.__setattr__(self, "prefixes", np.arange(1, self.T + 1, dtype=np.int64))
        if self.spec is None:
            object.__setattr__(self, "spec", get_algorithm(self.algorithm))


@dataclass(frozen=True, eq=False)
class RunResult(_RunCurves):
    """The outcome of one run of a learning dynamic.

    Per-prefix arrays have one row per prefix in `prefixes` (by default every ``T' = 1..T``,
    row ``T' - 1``), one column per player.

    Attributes
    ----------
    value : (P, N) exact value ``V_i`` at ``s_1`` of the output policy after ``T'`` iterations.
    certified_ce_bound, certified_cce_bound : (P, N) the index-revealing bounds (docs: "Certified
        versus exact gaps").
    policies : per player ``(T, H, S, A_i)``: ``pi^t`` for ``t = 1..T`` (row ``t - 1``), or ``None``
        when the trajectory was not kept. May be a read-only memory map of a file (``trajectory_dir``):
        a file truncated by another process while it is read through the map ends the process with
        SIGBUS, so ``markovgames run --exact`` reads the files again with checked reads instead.
    identity_residual : max over the run of ``|Q^t_h - (r_h + P_h V^t_{h+1})|`` (the smooth
        value update; the paper's lemma says it is 0), ``None`` for the stage-based one.
    suffix : with ``trajectory_tolerance``, the kept part of the trajectory (``policies`` then holds
        iterations ``suffix.first_kept..T``), its dropped index mass and error bounds; else ``None``.
    spec : the [`Algorithm`][markovgames.dynamics.Algorithm] that ran (``algorithm`` is its name).
    last_iterate_value, last_iterate_best_response : (L, N), one row per prefix of
        ``last_iterate_prefixes``, when the run evaluated the last iterate: the value at ``s_1`` of
        the product policy ``pi^{T'}`` itself (the last iterate, not the output policy) and each
        player's best-response value against the others' part of it (exact, backward induction);
        ``None`` otherwise. `last_iterate_nash_gap` is their gap.
    last_iterate_prefixes : (L,) the prefixes ``T'`` of those rows, or ``None``.
    weighted_average_value, weighted_average_best_response, weighted_average_prefixes : the same
        for the state-wise weighted average of the iterates ``pi^1..pi^{T'}`` with the value
        update's own weights (`ValueUpdate.average_weights`: ``alpha_{T'}^t`` for ``smooth``,
        ``1/T'`` for ``smooth-uniform``, linear for ``smooth-linear``, the last complete stage's
        mean for ``stage``), when the run evaluated it (``weighted_average``); ``None`` otherwise.
        `weighted_average_nash_gap` and `weighted_average_duality_gap` are its gaps.
    external_regret, swap_regret : (P, N) with ``regret=True``: each player's average external and
        swap regret of the played sequence after ``T'`` iterations, the largest over steps and
        states (`markovgames.dynamics._regret`); ``None`` otherwise.
    order : the update order, ``"simultaneous"`` or ``"alternating"``.
    step_schedule : the learning rate's schedule by name (``"constant"``, ``"sqrt"``, ``"power:P"``, a reference).
    feedback : what the learners saw (``"full"``, ``"sampled:K"``, ``"sampled:exact"``;
        `markovgames.dynamics._feedback`); `samples_used` counts the draws.
    seed : the seed of the run's random draws (``None`` where it drew none).
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
    spec: Algorithm | None = None
    last_iterate_value: np.ndarray | None = None
    last_iterate_best_response: np.ndarray | None = None
    last_iterate_prefixes: np.ndarray | None = None
    weighted_average_value: np.ndarray | None = None
    weighted_average_best_response: np.ndarray | None = None
    weighted_average_prefixes: np.ndarray | None = None
    external_regret: np.ndarray | None = None
    swap_regret: np.ndarray | None = None
    order: str = "simultaneous"
    step_schedule: str = "constant"
    feedback: str = "full"
    seed: int | None = None


@dataclass(frozen=True, eq=False)
class BatchRunResult(_RunCurves):
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
    spec: Algorithm | None = None
    last_iterate_value: np.ndarray | None = None
    last_iterate_best_response: np.ndarray | None = None
    last_iterate_prefixes: np.ndarray | None = None
    weighted_average_value: np.ndarray | None = None
    weighted_average_best_response: np.ndarray | None = None
    weighted_average_prefixes: np.ndarray | None = None
    external_regret: np.ndarray | None = None
    swap_regret: np.ndarray | None = None
    order: str = "simultaneous"
    step_schedule: str = "constant"
    feedback: str = "full"
    seeds: tuple[int, ...] | None = None  # per run, where the runs drew samples

    def __len__(self) -> int:
        return len(self.games)

    def run(self, index: int) -> RunResult:
        """The ``index``-th run as a [`RunResult`][markovgames.dynamics.RunResult]."""
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
            spec=self.spec,
            last_iterate_value=None if self.last_iterate_value is None else self.last_iterate_value[index],
            last_iterate_best_response=None
            if self.last_iterate_best_response is None
            else self.last_iterate_best_response[index],
            last_iterate_prefixes=self.last_iterate_prefixes,
            weighted_average_value=_at(self.weighted_average_value, index),
            weighted_average_best_response=_at(self.weighted_average_best_response, index),
            weighted_average_prefixes=self.weighted_average_prefixes,
            external_regret=None if self.external_regret is None else self.external_regret[index],
            swap_regret=None if self.swap_regret is None else self.swap_regret[index],
            order=self.order,
            step_schedule=self.step_schedule,
            feedback=self.feedback,
            seed=None if self.seeds is None else self.seeds[index],
        )


def _at(array: np.ndarray | None, index: int) -> np.ndarray | None:
    """Run ``index``'s rows of a batch's array (``None`` stays ``None``)."""
    return None if array is None else array[index]


def samples_by_prefix(counts: dict[str, int], update, horizon: int, T: int, prefixes: np.ndarray) -> np.ndarray:
    """The draws made after each prefix: ``counts["profiles"]`` per iteration, and
    ``counts["next_states"]`` per value update (every iteration of the smooth updates; every
    finished stage of the stage-based one)."""
    prefixes = np.asarray(prefixes, np.int64)
    if update.per_iteration_metrics:
        updates = prefixes
    else:
        ends = np.cumsum(stage_schedule(horizon, T).lengths)
        updates = np.searchsorted(ends, prefixes, side="right")
    return prefixes * counts["profiles"] + updates * counts["next_states"]


def _kernel_form(game: MarkovGame) -> str:
    return "sparse" if game.is_sparse else "dense"


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


#: The learners' logits may be at most this many of their dtype's relative ulps from exact
#: (see [`max_learning_rate`][markovgames.dynamics.max_learning_rate]).
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


def _checked_rates(job: Job, horizon: int) -> StepSchedule | None:
    """Refuse a rate above `max_learning_rate`, at any ``t`` of a schedule too (`bounded_schedule`); the schedule, bounded."""
    eta, T, dtype, limit = job.largest_eta, job.T, job.dtype, max_learning_rate(job.T, horizon, job.dtype)
    if eta > limit:
        hint = " (or float64)" if dtype != "float64" else ""
        raise ValueError(
            f"learning rate {eta:g} is too large for {T} iterations in {dtype}: the learners' logits would reach "
            f"eta (T + H) = {eta * (T + horizon):.3g}, more than {dtype} resolves; use eta <= {limit:.3g}{hint}"
        )
    return bounded_schedule(job.step_schedule, job.etas, limit, dtype, T + 1)


def _execute(
    job: Job,
    *,
    record: bool,
    trajectory_dir: Path | None,
    chunk_size: int | None,
    progress: Callable[[int], None] | None,
    keep: np.ndarray | None,
    state_file: Path | None,
    state_every: int | None,
    first_kept: int,
    last_iterate: np.ndarray | None,
    group_size: int | None = None,
    average: np.ndarray | None = None,
):
    """Check what the plan depends on, make the plan and the state file, and run the loop."""
    num_players, horizon, num_states, num_actions = job.games[0].shape_key
    job = job._replace(step_schedule=_checked_rates(job, horizon))
    itemsize = np.dtype(DTYPES[job.dtype]).itemsize
    width = 5 if job.interplay.regret else 3
    per_iteration = len(job.games) * itemsize * (width * num_players + (horizon * num_states * sum(num_actions) if record else 0))
    if state_every is not None:
        if isinstance(state_every, bool) or not isinstance(state_every, (int, np.integer)) or state_every < 1:
            raise ValueError(f"state_every must be a positive integer, got {state_every!r}")
        chunk_size = state_every if chunk_size is None else min(chunk_size, state_every)
    # Sampled feedback draws a chunk's numbers before its loop: chunks short enough for them.
    two_query = job.algorithm.learner.learner().propose is not None
    smooth = job.algorithm.value_update.per_iteration_metrics
    draws = draws_per_iteration(job.interplay.feedback, job.games[0].shape_key, two_query, smooth)
    max_chunk = CHUNK_DRAW_BYTES // (draws * itemsize * len(job.games)) if draws else None
    plan = chunk_plan(job.T, per_iteration, chunk_size, max_chunk)
    state = None
    if state_file is not None:
        if record and trajectory_dir is None:
            raise ValueError("saving the run state needs trajectory_dir (the trajectory must be on disk to resume)")
        # Hashing the game costs time on large games: only a run that saves its state needs it.
        digest = fingerprint(
            job.algorithm,
            job.optimistic,
            job.games,
            job.etas,
            job.per_stage_theory,
            job.T,
            job.dtype,
            record,
            job.batched,
            plan,
            keep,
            first_kept,
            last_iterate,
            job.extras() + (() if average is None else (["weighted_average", average.tolist()],)),
        )
        state = StateFile(state_file, digest, state_every or 1)
    return run_loop(
        job,
        plan,
        keep=keep,
        record=record,
        trajectory_dir=trajectory_dir,
        first_kept=first_kept,
        state=state,
        group_size=group_size,
        progress=progress,
        last_iterate=last_iterate,
        average=average,
    )


def run(
    game: MarkovGame,
    algorithm: str | Algorithm = "smooth_ce",
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
    last_iterate: bool | Sequence[int] = False,
    weighted_average: bool | Sequence[int] = False,
    order: str = "simultaneous",
    step_schedule: str | StepSchedule | None = None,
    regret: bool = False,
    initial_strategy: Sequence | None = None,
    feedback: str | Feedback = "full",
    seed: int = 0,
) -> RunResult:
    """Run one learning dynamic for ``T`` iterations; metrics for every prefix come with it.

    Parameters
    ----------
    game : the Markov game.
    algorithm : an [`Algorithm`][markovgames.dynamics.Algorithm], or a name: ``"smooth_ce"`` (Algorithm 1), ``"stage_cce"``
        (Algorithm 2), ``"smooth_cce"``, any ``"LEARNER+UPDATE"`` (e.g. ``"rm-plus+smooth"``), or
        a reference ``"path/to/file.py:NAME"`` / ``"package.module:NAME"`` ([`get_algorithm`][markovgames.dynamics.get_algorithm]).
    T : number of iterations.
    eta : constant learning rate (the paper's simulations: 0.2), one per player (a tuple), or ``"theory"``.
    optimistic : ``False`` runs the non-optimistic baseline (prediction 0).
    record_trajectory : keep ``pi^t`` for every ``t`` (needed by the output policy).
    trajectory_dir : write the trajectory to ``policy_{i}.npy`` files there chunk by chunk
        instead of holding it in memory.
    dtype : ``"float64"`` (reference) or ``"float32"``.
    chunk_size : iterations per compiled call (default: automatic).
    progress : called with the number of finished iterations after each chunk.
    checkpoints : keep the per-prefix metrics only at these ``T'`` (default: every prefix).
    state_file : save the loop state there after chunks of at least ``state_every`` iterations
        (atomically), and the per-prefix metrics so far beside it, in the file of the same name
        with the suffix ``.metrics`` (appended at each save); if the state file exists when the
        run starts, the run resumes from it — the results are identical to an uninterrupted
        run. Needs ``trajectory_dir`` when recording. A state file, or a metrics or trajectory
        file it reuses, that does not match this run is refused (``ValueError`` naming the file)
        and left as it is.
    state_every : iterations between saves (also caps the chunk length).
    trajectory_tolerance : keep only the shortest suffix ``first_kept..T`` of the trajectory whose
        dropped index mass under the output policy's kernel is at most this (``None``: keep all).
        `RunResult.suffix` reports ``first_kept``, the dropped mass ``delta`` and the
        resulting bounds on value (``H delta``) and gap (``2 H delta``) errors of the output
        policy rebuilt from the suffix. The per-prefix metrics are exact either way.
    last_iterate : also evaluate the product policy ``pi^{T'}`` itself, inside the compiled loop:
        its value and each player's best-response value (exact), in
        `RunResult.last_iterate_value` and ``last_iterate_best_response``; ``True`` at the
        kept prefixes (``checkpoints``, or every prefix), or at the given prefixes.
    weighted_average : also carry, inside the compiled loop, the state-wise weighted average of the
        iterates with the value update's own weights (`ValueUpdate.average_weights`; the running
        recursion ``bar pi^t = (1 - alpha_t) bar pi^{t-1} + alpha_t pi^t`` of a smooth update,
        the last complete stage's mean of the stage-based one; no trajectory needed), and evaluate
        it as ``last_iterate`` evaluates ``pi^{T'}``: in `RunResult.weighted_average_value` and
        ``weighted_average_best_response``; ``True`` at the kept prefixes, or at the given ones.
        Each evaluated prefix costs one backward induction of best responses.
    order : ``"simultaneous"`` (the paper's) or ``"alternating"``: the players update in turn, each
        against the others' newest strategies (``markovgames.dynamics`` docs, "Update order").
    step_schedule : the learning rate's schedule ``eta_t = eta f(t)``: ``"constant"`` (default),
        ``"sqrt"``, ``"power:P"``, a [`StepSchedule`][markovgames.dynamics.StepSchedule] or a
        reference to a user's function ([`get_step_schedule`][markovgames.dynamics.get_step_schedule]).
    regret : also carry every player's average external and swap regret of the played sequence
        (the largest over steps and states; with the stage-based update, within each stage: its
        learners restart every stage), in `RunResult.external_regret`
        and `RunResult.swap_regret` (docs/gaps.md, "Regret of the played sequence").
    initial_strategy : per player a probability vector ``(A_i,)`` (at every step and state) or an
        array ``(H, S, A_i)``: the strategy each learner starts at (smooth value updates; the
        learner must have ``init_at``, as ``ogda``, ``extragradient``, ``exrm-plus`` and
        ``sprm-plus`` do). ``None``: where ``init`` starts (uniform for every built-in).
    feedback : what the learners see: ``"full"`` (the paper's), ``"sampled:K"`` (a generative
        model: ``K`` samples per estimate) or ``"sampled:exact"`` (expectations: ``full``'s
        numbers); `markovgames.dynamics._feedback` defines the estimators. The output policy's
        value and certified bounds are exact either way.
    seed : the seed of the run's draws (a non-negative integer): the same seed gives the same run.
    """
    require_finite_horizon(game, "game")
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    spec = get_algorithm(algorithm)
    T = _check_T(T)
    keep = _check_checkpoints(checkpoints, T)
    eta_scale, per_stage = resolve_learning_rate(eta, spec, game)
    suffix = _suffix(spec, T, game.horizon, record_trajectory, trajectory_tolerance)
    last = _evaluated_prefixes(last_iterate, keep, T, "last_iterate")
    average = _evaluated_prefixes(weighted_average, keep, T, "weighted_average")
    interplay, schedule = _interplay(spec, order, step_schedule, bool(optimistic), regret, feedback, average is not None)
    initial = _initial_strategies(spec, game, initial_strategy)
    seeds = _check_seeds([seed], "seed") if interplay.feedback.estimates else None
    job = Job(spec, bool(optimistic), (game,), (eta_scale,), per_stage, T, dtype, False, interplay, schedule, initial, seeds)
    out = _execute(
        job,
        record=bool(record_trajectory),
        trajectory_dir=None if trajectory_dir is None else Path(trajectory_dir),
        chunk_size=chunk_size,
        progress=progress,
        keep=keep,
        state_file=None if state_file is None else Path(state_file),
        state_every=state_every,
        first_kept=1 if suffix is None else suffix.first_kept,
        last_iterate=last,
        average=average,
    )
    return RunResult(
        game=game,
        algorithm=spec.name,
        optimistic=bool(optimistic),
        eta=eta,
        T=T,
        dtype=dtype,
        value=out.metrics[..., 0, :],
        certified_ce_bound=out.metrics[..., 2, :],
        certified_cce_bound=out.metrics[..., 1, :],
        policies=out.policies,
        identity_residual=_residual(out.identity_residual, interplay, float),
        wall_time_s=out.wall_time_s,
        compile_time_s=out.compile_time_s,
        prefixes=keep,
        suffix=suffix,
        spec=spec,
        last_iterate_value=None if out.last_iterate is None else out.last_iterate[..., 0, :],
        last_iterate_best_response=None if out.last_iterate is None else out.last_iterate[..., 1, :],
        last_iterate_prefixes=last,
        **_average_fields(out.weighted_average, average),
        external_regret=out.metrics[..., 3, :] if interplay.regret else None,
        swap_regret=out.metrics[..., 4, :] if interplay.regret else None,
        order=interplay.order,
        step_schedule="constant" if schedule is None else schedule.name,
        feedback=interplay.feedback.name,
        seed=None if seeds is None else seeds[0],
    )


def _average_fields(values: np.ndarray | None, prefixes: np.ndarray | None) -> dict:
    """The result's weighted-average fields from the loop's ``(..., P, 2, N)`` values."""
    if values is None:
        return {}
    return {
        "weighted_average_value": values[..., 0, :],
        "weighted_average_best_response": values[..., 1, :],
        "weighted_average_prefixes": prefixes,
    }


def _residual(residual, interplay: Interplay, convert):
    """The identity residual to report: ``None`` where the lemma it checks does not hold (the
    learners' ``Q`` are estimates under sampled feedback) or the update has none."""
    if residual is None or interplay.feedback.estimates:
        return None
    return convert(residual)


def _check_seeds(seeds, name: str) -> tuple[int, ...]:
    out = []
    for k, seed in enumerate(seeds):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
            where = name if len(seeds) == 1 and name == "seed" else f"{name}[{k}]"
            raise ValueError(f"{where} must be a non-negative integer, got {seed!r}")
        out.append(int(seed))
    return tuple(out)


def _interplay(
    spec: Algorithm, order, step_schedule, optimistic: bool, regret, feedback="full", average: bool = False
) -> tuple[Interplay, StepSchedule | None]:
    """The run's `Interplay` and step schedule (``None`` when constant), checked."""
    feedback = parse_feedback(feedback)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if not isinstance(regret, bool):
        raise ValueError(f"regret must be True or False, got {regret!r}")
    if spec.learner.learner().propose is not None:
        two_query = f"learner {spec.learner.name!r} makes two utility queries per iteration"
        if order == "alternating":
            raise ValueError(f"{two_query}; alternating updates are not defined for it")
        if not optimistic:
            raise ValueError(f"{two_query}: its prediction is its second query, so it has no non-optimistic form")
    schedule = get_step_schedule(step_schedule)
    scheduled = not schedule.is_constant
    traced = schedule.traced if scheduled else None
    interplay = Interplay(order=order, regret=regret, scheduled=scheduled, traced=traced, feedback=feedback, average=average)
    return interplay, (schedule if scheduled else None)


def _initial_strategies(spec: Algorithm, game: MarkovGame, initial) -> tuple[np.ndarray, ...] | None:
    """Per player the ``(H, S, A_i)`` initial strategies, checked, or ``None``."""
    if initial is None:
        return None
    name = spec.learner.name
    if not spec.value_update.per_iteration_metrics:
        raise ValueError(
            f"initial_strategy: the {spec.value_update.name!r} update restarts its learners every stage at init's state"
        )
    if spec.learner.learner().init_at is None:
        raise ValueError(f"initial_strategy: learner {name!r} has no init_at, so its initial strategy cannot be set")
    if isinstance(initial, np.ndarray) or len(initial) != game.num_players:
        raise ValueError(f"initial_strategy: expected one strategy per player ({game.num_players}), got {_count(initial)}")
    out = []
    for i, (x, a) in enumerate(zip(initial, game.num_actions, strict=True)):
        arr = np.asarray(x, dtype=np.float64)
        full = (game.horizon, game.num_states, a)
        if arr.shape not in ((a,), full):
            raise ValueError(f"initial_strategy[{i}]: expected shape ({a},) or {full}, got {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(np.abs(arr.sum(axis=-1) - 1.0) > 1e-9):
            raise ValueError(f"initial_strategy[{i}]: must be probability vectors (finite, >= 0, summing to 1)")
        out.append(np.broadcast_to(arr, full).copy())
    check_init_at(spec.learner, out, np.float64)
    return tuple(out)


def _count(initial) -> str:
    return f"an array of shape {np.shape(initial)}" if isinstance(initial, np.ndarray) else f"{len(initial)}"


def _evaluated_prefixes(given, keep: np.ndarray | None, T: int, name: str) -> np.ndarray | None:
    """The prefixes at which a policy (the last iterate, the weighted average) is evaluated, from
    the argument ``name``: ``True`` means the kept ones."""
    if given is False or given is None:
        return None
    if given is True:
        return np.arange(1, T + 1, dtype=np.int64) if keep is None else keep
    try:
        return _check_checkpoints(given, T)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


def _suffix(spec: Algorithm, T: int, horizon: int, record: bool, tolerance) -> TrajectorySuffix | None:
    if tolerance is None:
        return None
    if not record:
        raise ValueError("trajectory_tolerance needs record_trajectory=True (it chooses which part to keep)")
    return trajectory_suffix(spec.value_update.index_kernel, T, horizon, tolerance)


def run_batch(
    games: MarkovGame | Sequence[MarkovGame],
    algorithm: str | Algorithm = "smooth_ce",
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
    last_iterate: bool | Sequence[int] = False,
    weighted_average: bool | Sequence[int] = False,
    order: str = "simultaneous",
    step_schedule: str | StepSchedule | None = None,
    regret: bool = False,
    feedback: str | Feedback = "full",
    seeds: int | Sequence[int] | None = None,
) -> BatchRunResult:
    """Run a batch of runs of one algorithm side by side in compiled calls (the run axis vectorised).

    ``games`` is one game (shared by all runs) or a sequence of games of one shape
    ([`MarkovGame.shape_key`][markovgames.games.MarkovGame.shape_key]); ``etas`` one learning rate or one per run (each a
    number, ``"theory"`` or a tuple of one rate per player: ``[(0.1, 0.3)]`` for every run). The batch size is
    the longer of the two (a single game or rate is broadcast).

    ``group_size``: runs per compiled call. By default the whole batch on an accelerator, and on
    the CPU groups whose arrays fit the caches (256 paper-game runs), dispatched together so that
    they run concurrently on the cores. The results do not depend on it beyond rounding. The
    other arguments are as for [`run`][markovgames.dynamics.run].

    ``seeds``: under sampled feedback, one seed per run (or one for all); by default run ``r``
    has seed ``r``. Run ``r`` of a batch draws exactly what ``run(..., seed=seeds[r])`` draws.
    """
    spec = get_algorithm(algorithm)
    T = _check_T(T)
    keep = _check_checkpoints(checkpoints, T)
    game_list = [games] if isinstance(games, (MarkovGame, DiscountedMarkovGame)) else list(games)
    # One rate (a number or "theory") for all runs, or a sequence of one per run, each a number,
    # "theory" or a tuple of one rate per player (a tuple of numbers is one rate per run, as it
    # always was: per-player rates for every run are [(c_0, c_1, ...)]).
    eta_list = [etas] if isinstance(etas, (int, float, str)) else list(etas)
    if not game_list or not eta_list:
        raise ValueError("run_batch needs at least one game and one learning rate")
    seed_list = None if seeds is None else [seeds] if isinstance(seeds, (int, np.integer)) else list(seeds)
    if seed_list is not None and not seed_list:
        raise ValueError("seeds is empty; give one seed per run, or one for all")
    size = max(len(game_list), len(eta_list), len(seed_list or ()))
    for name, seq in (("games", game_list), ("etas", eta_list), ("seeds", seed_list)):
        if seq is not None and len(seq) not in (1, size):
            raise ValueError(f"{name} has {len(seq)} entries; expected 1 or {size}")
    game_list = game_list * size if len(game_list) == 1 else game_list
    eta_list = eta_list * size if len(eta_list) == 1 else eta_list
    key = game_list[0].shape_key
    for k, g in enumerate(game_list):
        require_finite_horizon(g, f"games[{k}]")
        if not isinstance(g, MarkovGame):
            raise TypeError(f"games[{k}] must be a MarkovGame, got {type(g).__name__}")
        if g.shape_key != key:
            raise ValueError(f"games[{k}] has shape (N, H, S, A) = {g.shape_key}, but games[0] has {key}")
        if _kernel_form(g) != _kernel_form(game_list[0]):
            raise ValueError(
                f"games[{k}] has {_kernel_form(g)} transitions, but games[0] has {_kernel_form(game_list[0])} "
                "(one batch needs one form; convert with MarkovGame.to_sparse or MarkovGame.to_dense)"
            )
    resolved = [resolve_learning_rate(e, spec, g) for e, g in zip(eta_list, game_list, strict=True)]
    suffix = _suffix(spec, T, key[1], record_trajectory, trajectory_tolerance)
    last = _evaluated_prefixes(last_iterate, keep, T, "last_iterate")
    average = _evaluated_prefixes(weighted_average, keep, T, "weighted_average")
    per_stage = {r[1] for r in resolved}
    if len(per_stage) > 1:
        raise ValueError("the stage-based update cannot mix 'theory' and constant learning rates in one batch")
    interplay, schedule = _interplay(spec, order, step_schedule, bool(optimistic), regret, feedback, average is not None)
    run_seeds = None
    if interplay.feedback.estimates:
        checked = _check_seeds(list(range(size)) if seed_list is None else seed_list, "seeds")
        run_seeds = checked * size if len(checked) == 1 else checked
    job = Job(
        spec,
        bool(optimistic),
        tuple(game_list),
        tuple(r[0] for r in resolved),
        per_stage.pop(),
        T,
        dtype,
        True,
        interplay,
        schedule,
        seeds=run_seeds,
    )
    out = _execute(
        job,
        record=bool(record_trajectory),
        trajectory_dir=None if trajectory_dir is None else Path(trajectory_dir),
        chunk_size=chunk_size,
        progress=progress,
        keep=keep,
        state_file=None if state_file is None else Path(state_file),
        state_every=state_every,
        first_kept=1 if suffix is None else suffix.first_kept,
        last_iterate=last,
        group_size=group_size,
        average=average,
    )
    return BatchRunResult(
        games=tuple(game_list),
        algorithm=spec.name,
        optimistic=bool(optimistic),
        etas=tuple(eta_list),
        T=T,
        dtype=dtype,
        value=out.metrics[..., 0, :],
        certified_ce_bound=out.metrics[..., 2, :],
        certified_cce_bound=out.metrics[..., 1, :],
        policies=out.policies,
        identity_residual=_residual(out.identity_residual, interplay, lambda r: r),
        wall_time_s=out.wall_time_s,
        compile_time_s=out.compile_time_s,
        prefixes=keep,
        suffix=suffix,
        spec=spec,
        last_iterate_value=None if out.last_iterate is None else out.last_iterate[..., 0, :],
        last_iterate_best_response=None if out.last_iterate is None else out.last_iterate[..., 1, :],
        last_iterate_prefixes=last,
        **_average_fields(out.weighted_average, average),
        external_regret=out.metrics[..., 3, :] if interplay.regret else None,
        swap_regret=out.metrics[..., 4, :] if interplay.regret else None,
        order=interplay.order,
        step_schedule="constant" if schedule is None else schedule.name,
        feedback=interplay.feedback.name,
        seeds=run_seeds,
    )
