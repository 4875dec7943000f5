"""What single runs and batches share: argument checks, the interplay of the learners, and the
plan, state file and loop of a run (`._run` for finite-horizon games, `._discounted_run` for
discounted ones)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..games import DiscountedMarkovGame
from ._algorithms import Algorithm, get_step_schedule
from ._checkpoint import StateFile, fingerprint
from ._feedback import CHUNK_DRAW_BYTES, draws_per_iteration, parse_feedback
from ._guard import check_init_at
from ._interplay import ORDERS, Interplay, StepSchedule, bounded_schedule
from ._loop import DTYPES, Job, loop_shape, run_loop
from ._plan import chunk_plan

__all__ = ["max_learning_rate"]


def _kernel_form(game) -> str:
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


def max_learning_rate(T: int, horizon: float, dtype: str = "float64") -> float:
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


def _checked_rates(job: Job, horizon: float) -> StepSchedule | None:
    """Refuse a rate above `max_learning_rate`, at any ``t`` of a schedule too (`bounded_schedule`); the
    schedule, bounded. ``horizon``: the bound on the utilities (``H``; a discounted game's ``1/(1-gamma)``)."""
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
    num_players, horizon, num_states, num_actions = loop_shape(job.games[0])
    update = job.algorithm.value_update
    # Utilities lie in [0, H]; a discounted game's in [0, 1/(1-gamma)].
    scale = job.games[0].effective_horizon if update.stationary else horizon
    job = job._replace(step_schedule=_checked_rates(job, scale))
    itemsize = np.dtype(DTYPES[job.dtype]).itemsize
    width = update.metric_rows + (2 if job.interplay.regret else 0)
    layers = 1 if update.stationary else horizon
    policy_entries = layers * num_states * sum(num_actions)
    per_iteration = (
        len(job.games)
        * itemsize
        * (
            width * num_players
            + (policy_entries if record else 0)
            # A discounted run emits the iterates it evaluates (the last, the weighted average) every iteration.
            + (((last_iterate is not None) + (average is not None)) * policy_entries if update.stationary else 0)
        )
    )
    if state_every is not None:
        if isinstance(state_every, bool) or not isinstance(state_every, (int, np.integer)) or state_every < 1:
            raise ValueError(f"state_every must be a positive integer, got {state_every!r}")
        chunk_size = state_every if chunk_size is None else min(chunk_size, state_every)
    # Sampled feedback draws a chunk's numbers before its loop: chunks short enough for them.
    two_query = job.algorithm.learner.learner().propose is not None
    smooth = job.algorithm.value_update.per_iteration_metrics
    draws = draws_per_iteration(
        job.interplay.feedback, (num_players, horizon, num_states, num_actions), two_query, smooth, update.stationary
    )
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


def _average_fields(values: np.ndarray | None, prefixes: np.ndarray | None) -> dict:
    """The result's weighted-average fields from the loop's ``(..., P, 2, N)`` values."""
    if values is None:
        return {}
    return {
        "weighted_average_value": values[..., 0, :],
        "weighted_average_best_response": values[..., 1, :],
        "weighted_average_prefixes": prefixes,
    }


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


def _initial_strategies(spec: Algorithm, game, initial) -> tuple[np.ndarray, ...] | None:
    """Per player the ``(H, S, A_i)`` initial strategies (a discounted game's: ``(S, A_i)``), checked, or ``None``."""
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
        full = (game.num_states, a) if isinstance(game, DiscountedMarkovGame) else (game.horizon, game.num_states, a)
        if arr.shape not in ((a,), full):
            raise ValueError(f"initial_strategy[{i}]: expected shape ({a},) or {full}, got {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(np.abs(arr.sum(axis=-1) - 1.0) > 1e-9):
            raise ValueError(f"initial_strategy[{i}]: must be probability vectors (finite, >= 0, summing to 1)")
        out.append(np.broadcast_to(arr, full).copy())
    # As the loop holds them: a discounted game's with its one layer (`._discounted`).
    check_init_at(spec.learner, [x[None] for x in out] if isinstance(game, DiscountedMarkovGame) else out, np.float64)
    return tuple(out)
