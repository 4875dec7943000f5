r"""Certify any trajectory: the output policy's value and certified CE/CCE bounds for every prefix.

The value and the certified bounds of an output policy (Algorithm 3 for the smooth value
update, Algorithm 4 for the stage-based one) depend only on the game and the policy sequence
:math:`\pi^1, \dots, \pi^T` it mixes, not on how the sequence was made (docs: "Certified versus
exact gaps"). [`certify`][markovgames.dynamics.certify] runs the same compiled recursions as [`run`][markovgames.dynamics.run]
over a sequence made anywhere (NumPy, another library, a saved trajectory): one pass, ``O(T)``,
every prefix ``T' <= T``. On a run's own trajectory it gives the run's arrays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import numpy as np

from .._waiting import in_background
from ..games import MarkovGame, require_finite_horizon
from ..policies import DISTRIBUTION_TOLERANCE
from ._algorithms import get_value_update
from ._engine import compile_for, compiled_certify, run_work
from ._loop import DTYPES, device_game, precision
from ._plan import chunk_plan
from ._run import PrefixCurves
from ._value_update import ValueUpdate

__all__ = ["certify", "CertifiedCurve"]


@dataclass(frozen=True, eq=False)
class CertifiedCurve(PrefixCurves):
    """Per-prefix value and certified bounds of an output policy (rows: `prefixes`; columns: players).

    Attributes
    ----------
    value : (P, N) exact value ``V_i`` at ``s_1`` of the output policy after ``T'`` iterations.
    certified_ce_bound, certified_cce_bound : (P, N) the index-revealing bounds.
    prefixes : (P,) the prefixes ``T'`` (by default ``1..T``).
    value_update : the value update whose output policy (``"smooth"``, ``"smooth-uniform"``,
        ``"smooth-linear"`` or ``"stage"``).
    """

    value: np.ndarray
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    prefixes: np.ndarray
    value_update: str
    T: int
    wall_time_s: float
    compile_time_s: float


def _check_shapes(game: MarkovGame, policies) -> int:
    if len(policies) != game.num_players:
        raise ValueError(f"policies: expected one array per player ({game.num_players}), got {len(policies)}")
    T = None
    for i, p in enumerate(policies):
        shape = tuple(np.shape(p))
        want = (game.horizon, game.num_states, game.num_actions[i])
        if len(shape) != 4 or shape[1:] != want:
            raise ValueError(f"policies[{i}]: expected shape (T, H, S, A_{i}) = (T, {', '.join(map(str, want))}), got {shape}")
        if not np.issubdtype(np.asarray(p[:0]).dtype, np.floating):
            raise ValueError(f"policies[{i}]: expected floating-point probabilities, got {np.asarray(p[:0]).dtype}")
        if T is None:
            T = shape[0]
        elif shape[0] != T:
            raise ValueError(f"policies[{i}]: {shape[0]} iterations, but policies[0] has {T}")
    if not T:
        raise ValueError("policies: need at least one iteration")
    return int(T)


def _check_chunk(chunk, done: int) -> None:
    """Every ``pi^t(s, .)`` of the chunk is finite and a probability vector within the tolerance."""
    for i, p in enumerate(chunk):
        bad = ~np.isfinite(p) | (p < -DISTRIBUTION_TOLERANCE)
        sums = p.sum(axis=-1)
        off = np.abs(sums - 1.0) > DISTRIBUTION_TOLERANCE
        if bad.any():
            t, h, s, a = (int(k) for k in np.argwhere(bad)[0])
            raise ValueError(f"policies[{i}][{done + t}][{h}][{s}][{a}] = {float(p[t, h, s, a])!r} is not a probability")
        if off.any():
            t, h, s = (int(k) for k in np.argwhere(off)[0])
            raise ValueError(
                f"policies[{i}][{done + t}][{h}][{s}] sums to {float(sums[t, h, s])!r}, not 1 (tolerance {DISTRIBUTION_TOLERANCE:g})"
            )


def certify(
    game: MarkovGame,
    policies: Sequence[np.ndarray],
    value_update: str | ValueUpdate,
    *,
    checkpoints: Sequence[int] | None = None,
    dtype: str = "float64",
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> CertifiedCurve:
    """The value and certified CE/CCE bounds at ``s_1`` of the output policy over ``policies``, for every prefix.

    The certified bounds are upper bounds on the best-deviation values (docs: "Certified versus
    exact gaps"), whatever produced the sequence.

    Parameters
    ----------
    game : the Markov game.
    policies : per player an array ``(T, H, S, A_i)`` whose row ``t - 1`` is ``pi^t`` (a memory
        map is read chunk by chunk). Every ``pi^t(s, .)`` must be a probability vector (within
        ``DISTRIBUTION_TOLERANCE``, [`markovgames.policies`][markovgames.policies]).
    value_update : ``"smooth"`` (Algorithm 3's output policy; ``"smooth-uniform"``,
        ``"smooth-linear"`` with uniform or linear averaging) or ``"stage"`` (Algorithm 4's), or
        the [`ValueUpdate`][markovgames.dynamics.ValueUpdate] object.
    checkpoints : keep only these prefixes ``T'`` (default: all).
    dtype, chunk_size, progress : as for [`run`][markovgames.dynamics.run].
    """
    require_finite_horizon(game, "certify")
    if not isinstance(game, MarkovGame):
        raise TypeError(f"game must be a MarkovGame, got {type(game).__name__}")
    update = get_value_update(value_update)
    policies = tuple(policies)
    T = _check_shapes(game, policies)
    keep = None
    if checkpoints is not None:
        keep = np.unique(np.asarray(list(checkpoints), dtype=np.int64))
        if keep.size == 0 or keep.min() < 1 or keep.max() > T:
            raise ValueError(f"checkpoints must be a non-empty sequence of integers in 1..T = {T}")
    with precision(dtype):
        np_dtype = DTYPES[dtype]
        per_iteration = np.dtype(np_dtype).itemsize * (
            3 * game.num_players + game.horizon * game.num_states * sum(game.num_actions)
        )
        plan = chunk_plan(T, per_iteration, chunk_size)
        start = time.perf_counter()
        compile_time = 0.0
        game_arrays = device_game([game], [1.0], dtype, batched=False)
        work = run_work(T, game_arrays)
        schedule = update.schedule(T, game.horizon, game.num_players, False)
        carry = update.init_certify_carry(game.shape_key, np_dtype, schedule)
        metrics = []
        executables: dict = {}
        done = 0
        for size in plan:
            chunk = tuple(np.asarray(p[done : done + size], dtype=np_dtype) for p in policies)
            _check_chunk(chunk, done)
            sched = update.chunk_inputs(schedule, done, size, np_dtype)
            if size not in executables:
                t0 = time.perf_counter()
                executables[size] = compile_for(
                    compiled_certify(update, False, size), False, game_arrays, carry, sched, chunk, work=work
                )
                compile_time += time.perf_counter() - t0
            carry, out = executables[size](game_arrays, carry, sched, chunk)
            in_background(jax.block_until_ready, (carry, out))  # interruptibly (`markovgames._waiting`)
            if "metrics" in out:
                rows = np.arange(size) if keep is None else keep[(keep > done) & (keep <= done + size)] - done - 1
                metrics.append(np.asarray(out["metrics"])[rows])
            done += size
            if progress is not None:
                progress(done)
        prefixes = np.arange(1, T + 1, dtype=np.int64) if keep is None else keep
        assembled = update.prefix_metrics(jax.tree_util.tree_map(np.asarray, update.prefix_records(carry)), schedule, prefixes)
        stacked = assembled if assembled is not None else np.concatenate(metrics, axis=0)
    return CertifiedCurve(
        value=stacked[:, 0, :],
        certified_ce_bound=stacked[:, 2, :],
        certified_cce_bound=stacked[:, 1, :],
        prefixes=prefixes,
        value_update=update.name,
        T=T,
        wall_time_s=time.perf_counter() - start,
        compile_time_s=compile_time,
    )
