"""Runs on discounted games: the discounted smooth update (`._discounted`) in the one compiled loop.

[`run`][markovgames.dynamics.run] and [`run_batch`][markovgames.dynamics.run_batch] hand a
[`DiscountedMarkovGame`][markovgames.games.DiscountedMarkovGame] here: the same checks, chunk plan,
state file and loop as a finite-horizon run (`._run_common`), and results whose fields have a
meaning in the discounted setting ([`DiscountedRunResult`][markovgames.dynamics.DiscountedRunResult]).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..games import DiscountedMarkovGame, MarkovGame
from ._algorithms import Algorithm, LearningRate, get_algorithm, resolve_learning_rate
from ._discounted import carried_iterates
from ._feedback import Feedback, parse_feedback, samples_per_iteration
from ._interplay import StepSchedule
from ._loop import Job, loop_shape
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
)

__all__ = ["DiscountedRunResult", "DiscountedBatchRunResult", "run_discounted", "run_discounted_batch", "check_update_for_game"]


def check_update_for_game(spec: Algorithm, game, what: str = "game") -> None:
    """Refuse a value update on a game of the other kind, naming the algorithm, the update and the game."""
    update, learner = spec.value_update, spec.learner.name
    if isinstance(game, DiscountedMarkovGame) and not update.stationary:
        unknown = " (no paper we know defines a stage-based update for discounted games)" if update.name == "stage" else ""
        raise ValueError(
            f"algorithm {spec.name!r}: the {update.name!r} value update is defined for finite-horizon games only{unknown}, "
            f"and {what} {game.name!r} is a discounted game (discount = {game.discount!r}); use {learner}+discounted-smooth"
        )
    if isinstance(game, MarkovGame) and update.stationary:
        raise ValueError(
            f"algorithm {spec.name!r}: the {update.name!r} value update is defined for discounted games, and {what} "
            f"{game.name!r} is a finite-horizon game (H = {game.horizon}); use {learner}+smooth"
        )


class _DiscountedCurves:
    """The gaps of the evaluated prefixes and the row of a prefix (the two result classes' fields)."""

    prefixes: np.ndarray | None
    T: int
    last_iterate_value: np.ndarray | None
    last_iterate_best_response: np.ndarray | None
    weighted_average_value: np.ndarray | None
    weighted_average_best_response: np.ndarray | None

    def _constant_sum_pair(self) -> bool:
        games = [self.game] if isinstance(self, DiscountedRunResult) else list(self.games)  # type: ignore[attr-defined]
        return all(g.num_players == 2 and g.is_constant_sum for g in games)

    @staticmethod
    def _gap(best, value, total: bool):
        if best is None or value is None:
            return None
        gains = np.asarray(best) - np.asarray(value)
        return np.sum(gains, axis=-1) if total else np.max(gains, axis=-1)

    @property
    def last_iterate_nash_gap(self) -> np.ndarray | None:
        """``max_i (V_i^dagger(rho) - V_i(rho))`` of the last iterate ``pi^{T'}`` per prefix of ``last_iterate_prefixes``."""
        return self._gap(self.last_iterate_best_response, self.last_iterate_value, False)

    @property
    def weighted_average_nash_gap(self) -> np.ndarray | None:
        """The same for the weighted average iterate ``sum_j alpha_{T'}^j pi^j`` per prefix of ``weighted_average_prefixes``."""
        return self._gap(self.weighted_average_best_response, self.weighted_average_value, False)

    @property
    def last_iterate_duality_gap(self) -> np.ndarray | None:
        """``sum_i (V_i^dagger(rho) - V_i(rho))`` of the last iterate per evaluated prefix: the duality
        gap, in a two-player constant-sum game (``None`` in any other game, or unevaluated)."""
        return self._gap(self.last_iterate_best_response, self.last_iterate_value, True) if self._constant_sum_pair() else None

    @property
    def weighted_average_duality_gap(self) -> np.ndarray | None:
        """The same for the weighted average iterate."""
        if not self._constant_sum_pair():
            return None
        return self._gap(self.weighted_average_best_response, self.weighted_average_value, True)

    def row(self, T_prime: int) -> int:
        """The row of the per-prefix arrays that holds prefix ``T'``."""
        prefixes = np.arange(1, self.T + 1) if self.prefixes is None else self.prefixes
        rows = np.flatnonzero(prefixes == T_prime)
        if rows.size == 0:
            raise KeyError(f"prefix T' = {T_prime} was not recorded (recorded: {len(prefixes)} prefixes)")
        return int(rows[0])

    def __post_init__(self) -> None:
        if self.prefixes is None:
            object.__setattr__(self, "prefixes", np.arange(1, self.T + 1, dtype=np.int64))


@dataclass(frozen=True, eq=False)
class DiscountedRunResult(_DiscountedCurves):
    """The outcome of one run on a discounted game (docs/discounted.md, "Learning dynamics").

    Per-prefix arrays have one row per prefix in `prefixes` (by default every ``T' = 1..T``), one
    column per player. Values are discounted returns (in ``[0, 1/(1-gamma)]``).

    Attributes
    ----------
    value_estimate : (P, N) the value update's estimate ``V^{T'}_i(rho)`` after ``T'`` iterations
        (``V^t = (1 - alpha_t) V^{t-1} + alpha_t <pi^t, Q^t>``): not the value of a policy.
    policies : per player ``(T, S, A_i)``, ``pi^t`` in row ``t - 1``, or ``None`` when not kept.
    last_policies : per player ``(S, A_i)``: the last iterate ``pi^T``.
    weighted_average_policies : per player ``(S, A_i)``: the weighted average iterate
        ``sum_{j <= T} alpha_T^j pi^j`` with the value update's own weights
        (`ValueUpdate.average_weights`), carried in the loop, when the run evaluated it
        (``weighted_average``); ``None`` otherwise.
    last_iterate_value, last_iterate_best_response : (L, N), exact (policy iteration,
        `markovgames.evaluation.discounted_nash_gap`): each player's value at ``rho`` of the last
        iterate ``pi^{T'}`` and its best-response value against the others' part of it, at the
        prefixes ``last_iterate_prefixes`` (``last_iterate``); ``None`` unless evaluated.
    weighted_average_value, weighted_average_best_response, weighted_average_prefixes : the same
        for the weighted average iterate ``sum_{j <= T'} alpha_{T'}^j pi^j`` (``weighted_average``).
    step_order : the ``k`` of the step sizes ``alpha_t = (k+1)/(k+t)`` (``1/(1-gamma)`` for ``discounted-smooth``).
    external_regret, swap_regret, order, step_schedule, feedback, seed : as for a finite-horizon
        [`RunResult`][markovgames.dynamics.RunResult].
    """

    game: DiscountedMarkovGame
    algorithm: str
    optimistic: bool
    eta: LearningRate
    T: int
    dtype: str
    value_estimate: np.ndarray
    policies: tuple[np.ndarray, ...] | None
    last_policies: tuple[np.ndarray, ...]
    wall_time_s: float
    compile_time_s: float
    step_order: float
    prefixes: np.ndarray | None = None
    spec: Algorithm | None = None
    weighted_average_policies: tuple[np.ndarray, ...] | None = None
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

    @property
    def samples_used(self) -> np.ndarray | None:
        """``(P,)`` the random draws made after each prefix (``None`` without sampled feedback)."""
        return _samples_used(self.feedback, self.spec, self.game, self.prefixes)


@dataclass(frozen=True, eq=False)
class DiscountedBatchRunResult(_DiscountedCurves):
    """A batch of runs on discounted games of one shape; arrays have a leading run axis."""

    games: tuple[DiscountedMarkovGame, ...]
    algorithm: str
    optimistic: bool
    etas: tuple[LearningRate, ...]
    T: int
    dtype: str
    value_estimate: np.ndarray  # (B, P, N)
    policies: tuple[np.ndarray, ...] | None  # per player (B, T, S, A_i)
    last_policies: tuple[np.ndarray, ...]  # per player (B, S, A_i)
    wall_time_s: float
    compile_time_s: float
    step_order: float
    prefixes: np.ndarray | None = None
    spec: Algorithm | None = None
    weighted_average_policies: tuple[np.ndarray, ...] | None = None  # per player (B, S, A_i)
    last_iterate_value: np.ndarray | None = None  # (B, L, N), and the best responses below
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
    seeds: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return len(self.games)

    @property
    def samples_used(self) -> np.ndarray | None:
        return _samples_used(self.feedback, self.spec, self.games[0], self.prefixes)

    def run(self, index: int) -> DiscountedRunResult:
        """The ``index``-th run as a [`DiscountedRunResult`][markovgames.dynamics.DiscountedRunResult]."""

        def pick(x):
            return None if x is None else x[index]

        return DiscountedRunResult(
            game=self.games[index],
            algorithm=self.algorithm,
            optimistic=self.optimistic,
            eta=self.etas[index],
            T=self.T,
            dtype=self.dtype,
            value_estimate=self.value_estimate[index],
            policies=None if self.policies is None else tuple(p[index] for p in self.policies),
            last_policies=tuple(p[index] for p in self.last_policies),
            wall_time_s=self.wall_time_s,
            compile_time_s=self.compile_time_s,
            step_order=self.step_order,
            prefixes=self.prefixes,
            spec=self.spec,
            weighted_average_policies=None
            if self.weighted_average_policies is None
            else tuple(p[index] for p in self.weighted_average_policies),
            last_iterate_value=pick(self.last_iterate_value),
            last_iterate_best_response=pick(self.last_iterate_best_response),
            last_iterate_prefixes=self.last_iterate_prefixes,
            weighted_average_value=pick(self.weighted_average_value),
            weighted_average_best_response=pick(self.weighted_average_best_response),
            weighted_average_prefixes=self.weighted_average_prefixes,
            external_regret=pick(self.external_regret),
            swap_regret=pick(self.swap_regret),
            order=self.order,
            step_schedule=self.step_schedule,
            feedback=self.feedback,
            seed=None if self.seeds is None else self.seeds[index],
        )


def _samples_used(feedback: str, spec: Algorithm | None, game: DiscountedMarkovGame, prefixes) -> np.ndarray | None:
    parsed = parse_feedback(feedback)
    if not parsed.estimates or spec is None or prefixes is None:
        return None
    two_query = spec.learner.learner().propose is not None
    counts = samples_per_iteration(parsed, loop_shape(game), two_query, stationary=True)
    return np.asarray(prefixes, np.int64) * (counts["profiles"] + counts["next_states"])


def _common(
    spec: Algorithm,
    T,
    checkpoints,
    trajectory_tolerance,
    last_iterate,
    weighted_average,
    order,
    step_schedule,
    optimistic,
    regret,
    feedback,
):
    """The checks a single run and a batch share: ``(T, keep, last, average, interplay, schedule)``."""
    T = _check_T(T)
    keep = _check_checkpoints(checkpoints, T)
    if trajectory_tolerance is not None:
        raise ValueError(
            "trajectory_tolerance: a discounted run has no output policy whose index mass it would bound; "
            "keep the whole trajectory or none (record_trajectory)"
        )
    last = _evaluated_prefixes(last_iterate, keep, T, "last_iterate")
    average = _evaluated_prefixes(weighted_average, keep, T, "weighted_average")
    interplay, schedule = _interplay(spec, order, step_schedule, bool(optimistic), regret, feedback, average is not None)
    return T, keep, last, average, interplay, schedule


def _fields(out, last: np.ndarray | None, average: np.ndarray | None, batched: bool) -> dict:
    """The result fields of the loop's output ``out`` common to a run and a batch (``last``,
    ``average``: the prefixes at which the last iterate and the weighted average were evaluated)."""
    last_policies, average_policies = carried_iterates(out.carry, batched)
    return dict(
        value_estimate=out.metrics[..., 0, :],
        policies=out.policies,
        last_policies=last_policies,
        weighted_average_policies=average_policies,
        wall_time_s=out.wall_time_s,
        compile_time_s=out.compile_time_s,
        # (..., L, 2, N): the values and best-response values (`DiscountedSmoothUpdate.evaluate_iterates`).
        last_iterate_value=None if out.last_iterate is None else out.last_iterate[..., 0, :],
        last_iterate_best_response=None if out.last_iterate is None else out.last_iterate[..., 1, :],
        last_iterate_prefixes=last,
        **_average_fields(out.weighted_average, average),
        external_regret=out.metrics[..., 1, :] if out.metrics.shape[-2] > 1 else None,
        swap_regret=out.metrics[..., 2, :] if out.metrics.shape[-2] > 1 else None,
    )


def run_discounted(
    game: DiscountedMarkovGame,
    algorithm: str | Algorithm,
    T: int,
    eta: LearningRate,
    *,
    optimistic: bool,
    record_trajectory: bool,
    trajectory_dir: str | Path | None,
    dtype: str,
    chunk_size: int | None,
    progress: Callable[[int], None] | None,
    checkpoints: Sequence[int] | None,
    state_file: str | Path | None,
    state_every: int | None,
    trajectory_tolerance: float | None,
    last_iterate: bool | Sequence[int],
    weighted_average: bool | Sequence[int],
    order: str,
    step_schedule: str | StepSchedule | None,
    regret: bool,
    initial_strategy: Sequence | None,
    feedback: str | Feedback,
    seed: int,
) -> DiscountedRunResult:
    """[`run`][markovgames.dynamics.run] on a discounted game (its arguments, documented there)."""
    spec = get_algorithm(algorithm)
    check_update_for_game(spec, game)
    T, keep, last, average, interplay, schedule = _common(
        spec,
        T,
        checkpoints,
        trajectory_tolerance,
        last_iterate,
        weighted_average,
        order,
        step_schedule,
        optimistic,
        regret,
        feedback,
    )
    eta_scale, _ = resolve_learning_rate(eta, spec, game)
    initial = _initial_strategies(spec, game, initial_strategy)
    seeds = _check_seeds([seed], "seed") if interplay.feedback.estimates else None
    job = Job(spec, bool(optimistic), (game,), (eta_scale,), False, T, dtype, False, interplay, schedule, initial, seeds)
    out = _execute(
        job,
        record=bool(record_trajectory),
        trajectory_dir=None if trajectory_dir is None else Path(trajectory_dir),
        chunk_size=chunk_size,
        progress=progress,
        keep=keep,
        state_file=None if state_file is None else Path(state_file),
        state_every=state_every,
        first_kept=1,
        last_iterate=last,
        average=average,
    )
    return DiscountedRunResult(
        game=game,
        algorithm=spec.name,
        optimistic=bool(optimistic),
        eta=eta,
        T=T,
        dtype=dtype,
        step_order=spec.value_update.schedule_horizon(game),
        prefixes=keep,
        spec=spec,
        order=interplay.order,
        step_schedule="constant" if schedule is None else schedule.name,
        feedback=interplay.feedback.name,
        seed=None if seeds is None else seeds[0],
        **_fields(out, last, average, batched=False),
    )


def run_discounted_batch(
    games: Sequence[DiscountedMarkovGame],
    algorithm: str | Algorithm,
    T: int,
    etas: Sequence[LearningRate],
    *,
    optimistic: bool,
    record_trajectory: bool,
    trajectory_dir: str | Path | None,
    dtype: str,
    chunk_size: int | None,
    progress: Callable[[int], None] | None,
    checkpoints: Sequence[int] | None,
    state_file: str | Path | None,
    state_every: int | None,
    trajectory_tolerance: float | None,
    group_size: int | None,
    last_iterate: bool | Sequence[int],
    weighted_average: bool | Sequence[int],
    order: str,
    step_schedule: str | StepSchedule | None,
    regret: bool,
    feedback: str | Feedback,
    seeds: Sequence[int] | None,
) -> DiscountedBatchRunResult:
    """[`run_batch`][markovgames.dynamics.run_batch] on discounted games: ``games`` and ``etas`` one per run
    (broadcast by the caller), ``seeds`` one per run or ``None``."""
    spec = get_algorithm(algorithm)
    first = games[0]
    for k, g in enumerate(games):
        if not isinstance(g, DiscountedMarkovGame):
            raise ValueError(
                f"games[{k}] is a finite-horizon game and games[0] a discounted one; one batch has games of one kind"
            )
        check_update_for_game(spec, g, f"games[{k}]")
        if g.shape_key != first.shape_key:
            raise ValueError(f"games[{k}] has shape (N, S, A) = {g.shape_key[1:]}, but games[0] has {first.shape_key[1:]}")
        if _kernel_form(g) != _kernel_form(first):
            raise ValueError(
                f"games[{k}] has {_kernel_form(g)} transitions, but games[0] has {_kernel_form(first)} "
                "(one batch needs one form; convert with DiscountedMarkovGame.to_sparse or to_dense)"
            )
        # The step sizes come with each chunk and are the batch's: one order for all runs.
        if spec.value_update.schedule_horizon(g) != spec.value_update.schedule_horizon(first):
            raise ValueError(
                f"games[{k}] has discount {g.discount!r}, but games[0] has {first.discount!r}: the step sizes of "
                f"{spec.value_update.name!r} depend on the discount, so one batch needs one discount"
            )
    T, keep, last, average, interplay, schedule = _common(
        spec,
        T,
        checkpoints,
        trajectory_tolerance,
        last_iterate,
        weighted_average,
        order,
        step_schedule,
        optimistic,
        regret,
        feedback,
    )
    resolved = [resolve_learning_rate(e, spec, g)[0] for e, g in zip(etas, games, strict=True)]
    run_seeds = None
    if interplay.feedback.estimates:
        checked = _check_seeds(list(range(len(games))) if seeds is None else list(seeds), "seeds")
        run_seeds = checked * len(games) if len(checked) == 1 else checked
    job = Job(spec, bool(optimistic), tuple(games), tuple(resolved), False, T, dtype, True, interplay, schedule, seeds=run_seeds)
    out = _execute(
        job,
        record=bool(record_trajectory),
        trajectory_dir=None if trajectory_dir is None else Path(trajectory_dir),
        chunk_size=chunk_size,
        progress=progress,
        keep=keep,
        state_file=None if state_file is None else Path(state_file),
        state_every=state_every,
        first_kept=1,
        last_iterate=last,
        group_size=group_size,
        average=average,
    )
    return DiscountedBatchRunResult(
        games=tuple(games),
        algorithm=spec.name,
        optimistic=bool(optimistic),
        etas=tuple(etas),
        T=T,
        dtype=dtype,
        step_order=spec.value_update.schedule_horizon(first),
        prefixes=keep,
        spec=spec,
        order=interplay.order,
        step_schedule="constant" if schedule is None else schedule.name,
        feedback=interplay.feedback.name,
        seeds=run_seeds,
        **_fields(out, last, average, batched=True),
    )
