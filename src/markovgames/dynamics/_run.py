"""Running the dynamics: single runs and batches of runs, with progress, trajectory files and resumable state.

The public entry points check their arguments and assemble the parts: the chunk plan
(`._plan`), the trajectory sink and the state file (`._trajectory`,
`._checkpoint`) and the loop (`._loop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast, overload

import numpy as np

from .._schedules import stage_schedule
from ..games import DiscountedMarkovGame, MarkovGame
from ..policies import TrajectorySuffix, trajectory_suffix
from ._algorithms import Algorithm, LearningRate, get_algorithm, resolve_learning_rate
from ._discounted_run import (
    DiscountedBatchRunResult,
    DiscountedRunResult,
    check_update_for_game,
    run_discounted,
    run_discounted_batch,
)
from ._feedback import Feedback, parse_feedback, samples_per_iteration
from ._interplay import Interplay, StepSchedule
from ._loop import DTYPES, Job
from ._run_common import (
    _average_fields,
    _check_checkpoints,
    _check_seeds,
    _check_T,
    _evaluated_prefixes,
    _execute,
    _initial_strategies,
    _interplay,
    _kernel_form,
    max_learning_rate,
)

__all__ = [
    "RunResult",
    "BatchRunResult",
    "DiscountedRunResult",
    "DiscountedBatchRunResult",
    "run",
    "run_batch",
    "max_learning_rate",
    "DTYPES",
]


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


@overload
def run(
    game: MarkovGame,
    algorithm: str | Algorithm = ...,
    T: int = ...,
    eta: LearningRate = ...,
    *,
    optimistic: bool = ...,
    record_trajectory: bool = ...,
    trajectory_dir: str | Path | None = ...,
    dtype: str = ...,
    chunk_size: int | None = ...,
    progress: Callable[[int], None] | None = ...,
    checkpoints: Sequence[int] | None = ...,
    state_file: str | Path | None = ...,
    state_every: int | None = ...,
    trajectory_tolerance: float | None = ...,
    last_iterate: bool | Sequence[int] = ...,
    weighted_average: bool | Sequence[int] = ...,
    order: str = ...,
    step_schedule: str | StepSchedule | None = ...,
    regret: bool = ...,
    initial_strategy: Sequence | None = ...,
    feedback: str | Feedback = ...,
    seed: int = ...,
) -> RunResult: ...


@overload
def run(
    game: DiscountedMarkovGame,
    algorithm: str | Algorithm = ...,
    T: int = ...,
    eta: LearningRate = ...,
    *,
    optimistic: bool = ...,
    record_trajectory: bool = ...,
    trajectory_dir: str | Path | None = ...,
    dtype: str = ...,
    chunk_size: int | None = ...,
    progress: Callable[[int], None] | None = ...,
    checkpoints: Sequence[int] | None = ...,
    state_file: str | Path | None = ...,
    state_every: int | None = ...,
    trajectory_tolerance: float | None = ...,
    last_iterate: bool | Sequence[int] = ...,
    weighted_average: bool | Sequence[int] = ...,
    order: str = ...,
    step_schedule: str | StepSchedule | None = ...,
    regret: bool = ...,
    initial_strategy: Sequence | None = ...,
    feedback: str | Feedback = ...,
    seed: int = ...,
) -> DiscountedRunResult: ...


def run(
    game: MarkovGame | DiscountedMarkovGame,
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
) -> RunResult | DiscountedRunResult:
    """Run one learning dynamic for ``T`` iterations; metrics for every prefix come with it.

    A [`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame] runs with a discounted value
    update (``LEARNER+discounted-smooth``) and gives a
    [`DiscountedRunResult`][markovgames.dynamics.DiscountedRunResult]: the value estimate per
    prefix and the exact values and best-response values of the last iterate at the
    ``last_iterate`` prefixes and of the weighted average iterate (the update's weights
    ``alpha_{T'}^t``) at the ``weighted_average`` prefixes (docs/discounted.md, "Learning
    dynamics"); ``trajectory_tolerance`` does not apply.

    Parameters
    ----------
    game : the Markov game (finite-horizon or discounted).
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
    if isinstance(game, DiscountedMarkovGame):
        return run_discounted(
            game,
            algorithm,
            T,
            eta,
            optimistic=optimistic,
            record_trajectory=record_trajectory,
            trajectory_dir=trajectory_dir,
            dtype=dtype,
            chunk_size=chunk_size,
            progress=progress,
            checkpoints=checkpoints,
            state_file=state_file,
            state_every=state_every,
            trajectory_tolerance=trajectory_tolerance,
            last_iterate=last_iterate,
            weighted_average=weighted_average,
            order=order,
            step_schedule=step_schedule,
            regret=regret,
            initial_strategy=initial_strategy,
            feedback=feedback,
            seed=seed,
        )
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame or a DiscountedMarkovGame, got {type(game).__name__}")
    spec = get_algorithm(algorithm)
    check_update_for_game(spec, game)
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


def _residual(residual, interplay: Interplay, convert):
    """The identity residual to report: ``None`` where the lemma it checks does not hold (the
    learners' ``Q`` are estimates under sampled feedback) or the update has none."""
    if residual is None or interplay.feedback.estimates:
        return None
    return convert(residual)


def _suffix(spec: Algorithm, T: int, horizon: int, record: bool, tolerance) -> TrajectorySuffix | None:
    if tolerance is None:
        return None
    if not record:
        raise ValueError("trajectory_tolerance needs record_trajectory=True (it chooses which part to keep)")
    return trajectory_suffix(spec.value_update.index_kernel, T, horizon, tolerance)


@overload
def run_batch(
    games: MarkovGame | Sequence[MarkovGame],
    algorithm: str | Algorithm = ...,
    T: int = ...,
    etas: LearningRate | Sequence[LearningRate] = ...,
    *,
    optimistic: bool = ...,
    record_trajectory: bool = ...,
    trajectory_dir: str | Path | None = ...,
    dtype: str = ...,
    chunk_size: int | None = ...,
    progress: Callable[[int], None] | None = ...,
    checkpoints: Sequence[int] | None = ...,
    state_file: str | Path | None = ...,
    state_every: int | None = ...,
    trajectory_tolerance: float | None = ...,
    group_size: int | None = ...,
    last_iterate: bool | Sequence[int] = ...,
    weighted_average: bool | Sequence[int] = ...,
    order: str = ...,
    step_schedule: str | StepSchedule | None = ...,
    regret: bool = ...,
    feedback: str | Feedback = ...,
    seeds: int | Sequence[int] | None = ...,
) -> BatchRunResult: ...


@overload
def run_batch(
    games: DiscountedMarkovGame | Sequence[DiscountedMarkovGame],
    algorithm: str | Algorithm = ...,
    T: int = ...,
    etas: LearningRate | Sequence[LearningRate] = ...,
    *,
    optimistic: bool = ...,
    record_trajectory: bool = ...,
    trajectory_dir: str | Path | None = ...,
    dtype: str = ...,
    chunk_size: int | None = ...,
    progress: Callable[[int], None] | None = ...,
    checkpoints: Sequence[int] | None = ...,
    state_file: str | Path | None = ...,
    state_every: int | None = ...,
    trajectory_tolerance: float | None = ...,
    group_size: int | None = ...,
    last_iterate: bool | Sequence[int] = ...,
    weighted_average: bool | Sequence[int] = ...,
    order: str = ...,
    step_schedule: str | StepSchedule | None = ...,
    regret: bool = ...,
    feedback: str | Feedback = ...,
    seeds: int | Sequence[int] | None = ...,
) -> DiscountedBatchRunResult: ...


def run_batch(
    games: MarkovGame | DiscountedMarkovGame | Sequence[MarkovGame] | Sequence[DiscountedMarkovGame],
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
) -> BatchRunResult | DiscountedBatchRunResult:
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

    Discounted games (all of one shape, and of one discount where the step sizes depend on it)
    give a [`DiscountedBatchRunResult`][markovgames.dynamics.DiscountedBatchRunResult].
    """
    spec = get_algorithm(algorithm)
    T = _check_T(T)
    keep = _check_checkpoints(checkpoints, T)
    game_list: list = [games] if isinstance(games, (MarkovGame, DiscountedMarkovGame)) else list(games)
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
    if isinstance(game_list[0], DiscountedMarkovGame):
        return run_discounted_batch(
            game_list,
            spec,
            T,
            eta_list,
            optimistic=optimistic,
            record_trajectory=record_trajectory,
            trajectory_dir=trajectory_dir,
            dtype=dtype,
            chunk_size=chunk_size,
            progress=progress,
            checkpoints=keep.tolist() if keep is not None else None,
            state_file=state_file,
            state_every=state_every,
            trajectory_tolerance=trajectory_tolerance,
            group_size=group_size,
            last_iterate=last_iterate,
            weighted_average=weighted_average,
            order=order,
            step_schedule=step_schedule,
            regret=regret,
            feedback=feedback,
            seeds=seed_list,
        )
    key = game_list[0].shape_key
    for k, g in enumerate(game_list):
        if isinstance(g, DiscountedMarkovGame):
            raise ValueError(
                f"games[{k}] is a discounted game and games[0] a finite-horizon one; one batch has games of one kind"
            )
        if not isinstance(g, MarkovGame):
            raise TypeError(f"games[{k}] must be a MarkovGame, got {type(g).__name__}")
        check_update_for_game(spec, g, f"games[{k}]")
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
