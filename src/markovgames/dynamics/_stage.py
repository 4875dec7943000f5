r"""The stage-based value update (Mao et al. 2024, Algorithm 2) and its output policy (Algorithm 4).

Stages of lengths :math:`L_1 = H`, :math:`L_{\tau+1} = \lfloor(1 + 1/H) L_\tau\rfloor`; ``Q^1 = 0``.
Per iteration ``t`` of stage :math:`\tau`:

1. ``pi^t_i, state_i = play(state_i, prediction_i, eta_tau / H, 1)`` (prediction
   :math:`[Q^\tau \pi^{t-1}_{-i}]`, or :math:`[Q^\tau \mathrm{uniform}_{-i}]` right after a value update);
2. ``u^t_i = [Q^tau_i pi^t_{-i}]`` is observed; the stage sum of the joint product policies grows;
3. at the stage's last iteration:
   :math:`Q^{\tau+1}_h = \frac1{L_\tau}\sum_{t'\in\text{stage}} (r_h + P_h[Q^\tau_{h+1}\pi^{t'}_{h+1}])
   = r_h + P_h \bar v_{h+1}` with :math:`\bar v_{h+1}` the stage average of
   :math:`[Q^\tau_{h+1}\pi^{t'}_{h+1}]` (the operator is affine, so averaging first is exact); the
   learners restart, and the output policy's quantities for the next stage are computed. A final
   partial stage gets no value update.

Step-size schedules, rates per player, alternating updates and two-query learners work as for the
smooth update (`._interplay`), with a schedule's ``t`` the position in the stage.

Regret curves (``regret``, `._regret`): the learners restart every stage with weight 1 per
iteration, so a player's regret at iteration ``t`` is the average regret over the iterations of
``t``'s stage so far (uniform weights within the stage: ``alpha = 1/position``, the 1-based position
of ``t`` in its stage), against the utilities the learner saw in that stage
(:math:`[Q^\tau\pi^t_{-i}]`, or the alternated ones), the largest over steps and states. It
restarts at 0 with each stage: a stage's first iteration has ``alpha = 1``, which discards the
previous stage's average exactly.

The output policy (Algorithm 4) draws ``t_0 ~ Unif{1..T}`` and moves uniformly over the stage
before the current one (stage 1 over itself), so its quantities only change at stage ends (and
during the self-referential stage 1): the carry records them per stage, every chunk emits these
records, and `StageUpdate.prefix_metrics` assembles the chunk's part of the per-prefix curve from them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from .._schedules import StageSchedule, stage_schedule, theory_eta_stage
from ..learners import LearnerSpec
from ._feedback import OTHERS, PROPOSALS, Estimator, chunk_draws
from ._guard import ViolationWatch, guard_tolerance
from ._interplay import SIMULTANEOUS, observe_round, player_rates, proposed_predictions
from ._output_metrics import product_policy_values, stage_index_quantities
from ._regret import RegretCarry, init_regret, regret_step
from ._tensor import joint_expectation, joint_product
from ._transitions import SparseKernel, bellman_target, kernel_step
from ._value_update import (
    GameArrays,
    ValueUpdate,
    at_initial_state,
    device_zeros,
    learner_for,
    per_player_utilities,
    sequential_block,
)

__all__ = ["STAGE", "StageUpdate", "StageCarry", "stage_q_update", "stage_prefix_metrics"]


def stage_q_update(rewards: jax.Array, transitions, v_sum: jax.Array, stage_length, run_axes: int) -> jax.Array:
    """``Q^{tau+1}`` for all steps from the stage sums ``v_sum[h] = sum_t' [Q^tau_h pi^t'_h]``, shape ``(H, N, S, R)``.

    Step ``H-1`` has no successor: ``Q^{tau+1}_{H-1} = r_{H-1}``.
    """
    horizon = rewards.shape[0]
    if horizon == 1:
        return rewards
    v_avg = v_sum / stage_length
    if isinstance(transitions, SparseKernel):
        # A loop over the steps: each reads its rows in place (`SparseStep`).
        later = jax.lax.map(
            lambda h: bellman_target(rewards[h], kernel_step(transitions, h), v_avg[h + 1], run_axes),
            jnp.arange(horizon - 1),
        )
    else:
        later = jax.vmap(lambda r, p, v: bellman_target(r, p, v, run_axes))(rewards[:-1], transitions[:-1], v_avg[1:])
    return jnp.concatenate([later, rewards[-1:]], axis=0)


class StageCarry(NamedTuple):
    """The stage update's loop state (one run's shapes). Certifying a given policy sequence uses
    the same state with no learners, predictions or ``Q`` (empty tuples)."""

    learners: tuple
    prediction: tuple  # per player (H, S, A_i)
    q: jax.Array | tuple  # (H, N, S, A...): Q^tau
    joint_sum: jax.Array  # (H, S, A...): sum over the stage of the joint product policies
    current: tuple  # (value, cce, ce), each (H, N, S): quantities of an index of the current stage
    # (value, CCE bound, CE bound) at (h=0, s_1) of an index of stage k (row k; row 0 unused),
    # filled when stage k-1 ends: the per-prefix curve is assembled from them after the loop.
    stage_values: jax.Array  # (num_stages + 2, 3, N): the last stage's end writes row num_stages + 1
    # Stage 1 refers to itself, so its quantities change with the prefix T' <= L_1: row T' - 1.
    stage1_values: jax.Array  # (L_1, 3, N)
    regret: RegretCarry | tuple = ()  # the players' regret averages within the stage (`._regret`), () unless asked for
    # The weighted average of the iterates (`Interplay.average`; () unless asked for), per player
    # (H, S, A_i): the mean of the last complete stage's iterates (`_close_average`).
    average: tuple = ()


class StageRecords(NamedTuple):
    """The part of a `StageCarry` that the per-prefix curve is assembled from (`stage_prefix_metrics`)."""

    stage_values: jax.Array
    stage1_values: jax.Array


class _Schedule(NamedTuple):
    """The stages of a run: the NumPy schedule and the per-stage tables the loop reads."""

    stages: StageSchedule
    lengths: np.ndarray  # int32, per stage
    eta_multipliers: np.ndarray  # per stage: Theorem 2's rate, or 1 for a constant rate
    factors: np.ndarray  # the step schedule's f(position) for positions 1..max length + 1 (row position - 1)


#: ``iteration(c, j, drawn) -> (c, policies, proposals, regret_rows)``: the policies of the chunk's
#: iteration ``j`` (``drawn``: its draws made before the loop, `._feedback.chunk_draws`, or ``None``),
#: the state after whatever producing them changes (learners play and observe; or a given
#: sequence), a two-query learner's proposals (else ``()``), and with regret curves the
#: iteration's ``(2, N[, R])`` regret rows (else ``None``).
_Iteration = Callable[[StageCarry, jax.Array], tuple[StageCarry, tuple, tuple, jax.Array | None]]


def _record(buffers, policies, row, runs):
    """Write iteration ``row``'s policies into the trajectory buffer ``(size, width[, R])``.

    All players' policies in one row: one in-place update per iteration, not N.
    """
    values = jnp.concatenate([p.reshape((-1, *runs)) for p in policies])[None]
    return jax.lax.dynamic_update_slice(buffers, values, (row,) + (jnp.int32(0),) * (1 + len(runs)))


def _stage_loop(
    size: int,
    game: GameArrays,
    carry: StageCarry,
    sched,
    run_axes: int,
    iteration_for,
    stage_end,
    record: bool,
    last_iterate=None,
    guard_tol: float | None = None,
    regret: bool = False,
    drawn: dict | None = None,
    average=None,
):
    """``size`` iterations of Algorithm 2's stages, looping over stage segments rather than testing
    every iteration.

    ``sched = (stage, position, lengths, eta_multipliers, factors, done)``: the 0-based stage and the
    iterations already done in it at the chunk's start, per-stage tables, the step schedule's
    factors by position in a stage, and the iterations done before the chunk. Each stage's iterations run in an inner loop with no branch
    (``iteration_for(eta, done, position)`` makes the body of one iteration at the chunk's offset
    ``done``, in a segment that starts after ``position`` iterations of its stage), and the
    stage-end work once per stage: the output policy's quantities of the next stage here, and
    ``stage_end(c, stage, length, t) -> c`` (the value update and the learners' restart, for a run;
    ``t`` the 1-based iteration that ends the stage), so
    no iteration pays for a test. ``last_iterate`` (a ``(size,)`` mask, or ``None``): the product
    policy's values at the marked iterations
    ([`ValueUpdate.run_chunk`][markovgames.dynamics.ValueUpdate.run_chunk]); ``average`` (likewise):
    those of the weighted average of the iterates, which the carry then holds: the uniform mean of
    the last complete stage (of stage 1's iterations so far while stage 1 runs). ``guard_tol`` (a user's
    learner, `_guard`): the chunk's first strategy off the simplex, as ``out["violation"]`` ``[row,
    code]`` (``[-1, -1]`` if none). ``regret``: the iterations' regret rows (the third output of
    ``iteration``) as ``out["regret"]`` ``(size, 2, N[, R])``.
    """
    horizon = game.rewards.shape[0]
    num_actions = game.rewards.shape[3 : game.rewards.ndim - run_axes]
    num_states = game.rewards.shape[2]
    runs = game.rewards.shape[game.rewards.ndim - run_axes :]
    dtype = game.rewards.dtype
    stage0, position0, lengths, eta_multipliers, _, chunk_start = sched

    def at_s1(x):
        return at_initial_state(x, game.initial_state, run_axes)

    def at_start(quantities):
        return jnp.stack([at_s1(c[0]) for c in quantities])  # (3, N, R)

    def body_for(stage1: bool, eta, position0, done0, base, mask, draws, length):
        """One iteration's body; ``stage1`` also recomputes stage 1's self-referential quantities.
        Iteration ``j`` of the segment writes its outputs at row ``j - base`` of the buffers it
        is given, and reads its evaluation flags at ``mask[j - base]`` and its draws at ``draws[j - base]``."""
        iteration = iteration_for(eta, done0, position0)

        def body(j, state):
            c, buffers, last, reg, viol = state
            drawn_j = _row(draws, j - base)
            c, policies, proposals, regret_rows = iteration(c, j, drawn_j)
            # A two-query learner's proposals first, then the strategies played (`raise_violation`).
            viol = watch(viol, done0 + j, proposals + policies)
            joint_sum = c.joint_sum + joint_product(policies, run_axes)  # (H, S, A..., R)
            current, stage1_values = c.current, c.stage1_values
            if stage1:
                position = position0 + j + 1
                current = stage_index_quantities(game.rewards, game.transitions, joint_sum / position, None, run_axes)
                stage1_values = stage1_values.at[position - 1].set(at_start(current))
            c = c._replace(joint_sum=joint_sum, current=current, stage1_values=stage1_values)
            if record:
                buffers = _record(buffers, policies, j - base, runs)
            # After stage 1 the weighted average changes only at stage ends: its rows are filled
            # after the loop (`_average_rows`), so that these iterations do not evaluate it.
            names = written[stage1]
            if names:
                position = position0 + j + 1
                flags = mask[j - base][: len(names)]  # the last iterate's column comes first
                values = _evaluated_values(game, names, flags, policies, c, position, at_s1, run_axes)
                last = jax.lax.dynamic_update_slice(last, values[None], (j - base,) + (jnp.int32(0),) * (3 + run_axes))
            if regret:
                reg = jax.lax.dynamic_update_slice(reg, regret_rows[None], (j - base,) + (jnp.int32(0),) * (2 + run_axes))
            return c, buffers, last, reg, viol

        return body

    def iterations(lo, hi, stage1: bool, eta, position, done, length, state):
        """Iterations ``lo..hi-1`` of the segment that starts at the chunk's offset ``done``.

        Where they record outputs, in blocks of ``block`` iterations: an inner loop writes a
        block's outputs into small buffers, so that it stays on XLA's sequential path
        (`sequential_block`), and an outer loop copies each block into
        the chunk's buffers (padded by a block, so a partial last block never lands short).
        """
        if block == 1:
            body = body_for(stage1, eta, position, done, -done, padded_mask, padded_draws, length)
            return jax.lax.fori_loop(lo, hi, body, state)
        # After stage 1, iterations that evaluate nothing (the weighted average alone) write no rows.
        writes = bool(written[stage1])

        def one_block(k, state):
            c, buffers, last, reg, viol = state
            start = lo + k * block
            at = (done + start,)
            small = (
                jnp.zeros((block, *buffers.shape[1:]), dtype) if record else (),
                jnp.zeros((block, *last.shape[1:]), dtype) if writes else (),
                jnp.zeros((block, *reg.shape[1:]), dtype) if regret else (),
            )
            mask = jax.lax.dynamic_slice_in_dim(cast(jax.Array, padded_mask), done + start, block) if writes else None
            draws = _block_rows(padded_draws, done + start, block)
            c, rows, values, regret_rows, viol = jax.lax.fori_loop(
                start,
                jnp.minimum(start + block, hi),
                body_for(stage1, eta, position, done, start, mask, draws, length),
                (c, *small, viol),
            )
            if record:
                buffers = jax.lax.dynamic_update_slice(buffers, rows, at + (jnp.int32(0),) * (1 + run_axes))
            if writes:
                last = jax.lax.dynamic_update_slice(last, values, at + (jnp.int32(0),) * (3 + run_axes))
            if regret:
                reg = jax.lax.dynamic_update_slice(reg, regret_rows, at + (jnp.int32(0),) * (2 + run_axes))
            return c, buffers, last, reg, viol

        return jax.lax.fori_loop(0, (hi - lo + block - 1) // block, one_block, state)

    def end_of_stage(c: StageCarry, stage, length, t):
        c = _close_average(stage_end(c, stage, length, t), length)
        next_current = stage_index_quantities(game.rewards, game.transitions, c.joint_sum / length, c.current, run_axes)
        c = c._replace(
            joint_sum=jnp.zeros_like(c.joint_sum),
            current=next_current,
            # Stage `stage + 1` (1-based) ended: its indices' successors form stage `stage + 2`.
            stage_values=c.stage_values.at[stage + 2].set(at_start(next_current)),
        )
        # The weighted average just closed: its value holds until the next stage's end.
        return c, (average_value(c.average) if at_ends else ())

    def segment(state):
        stage, position, done, c, buffers, last, reg, viol, ends = state
        length = lengths[stage]
        count = jnp.minimum(length - position, size - done)
        eta = game.eta * eta_multipliers[stage] / horizon
        # Two loops, one of them empty, rather than a branch: a branch would copy the trajectory
        # buffer it passes through.
        in_first = jnp.where(stage == 0, count, 0)
        c, buffers, last, reg, viol = iterations(0, in_first, True, eta, position, done, length, (c, buffers, last, reg, viol))
        c, buffers, last, reg, viol = iterations(
            in_first, count, False, eta, position, done, length, (c, buffers, last, reg, viol)
        )
        position, done = position + count, done + count
        finished = position == length
        c, value = jax.lax.cond(
            finished,
            lambda: end_of_stage(c, stage, length.astype(dtype), chunk_start + done),
            lambda: (c, jnp.zeros((2, num_players, *runs), dtype) if at_ends else ()),
        )
        ends = _mark_segment_end(ends, done - 1, value, finished)
        next_stage, next_position = jnp.where(finished, stage + 1, stage), jnp.where(finished, 0, position)
        return next_stage, next_position, done, c, buffers, last, reg, viol, ends

    width = horizon * num_states * sum(num_actions)
    num_players = game.rewards.shape[1]
    itemsize = jnp.dtype(dtype).itemsize * math.prod(runs)
    evaluated, stacked_mask = _evaluation_masks(last_iterate, average)
    at_ends = average is not None
    # What an iteration evaluates, by whether it is in stage 1: after it, the weighted average is
    # evaluated at stage ends (`_average_rows`), only the last iterate at its marked iterations.
    written = {False: evaluated[: last_iterate is not None], True: evaluated}
    outputs = _output_bytes(width, num_players, itemsize, record, len(written[False]), regret)
    # The inner loop reads its block of the chunk's draws, as it writes its block of outputs.
    outputs += [x[0].size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(drawn)]
    # The per-stage records are only touched at stage ends, outside the inner loops.
    touched = {k: v for k, v in carry._asdict().items() if k not in ("stage_values", "stage1_values")}
    block = sequential_block(game, touched, max(outputs)) if outputs else 1
    pad = block if block > 1 else 0
    buffers = jnp.zeros((size + pad, width, *runs), dtype) if record else ()
    last = jnp.zeros((size + pad, len(evaluated), 2, num_players, *runs), dtype) if evaluated else ()
    reg = jnp.zeros((size + pad, 2, num_players, *runs), dtype) if regret else ()
    padded_mask = None if stacked_mask is None else jnp.concatenate([stacked_mask, jnp.zeros((pad, len(evaluated)), bool)])
    padded_draws = _padded_rows(drawn, pad)
    watch = ViolationWatch(guard_tol, run_axes)
    viol = watch.initial()
    # The value of a weighted average at s_1: its value and best-response values, (2, N[, R]).
    average_value = functools.partial(
        product_policy_values, game.rewards, game.transitions, initial_state_values=at_s1, run_axes=run_axes
    )
    ends, start_value = _average_start(carry, size, average_value) if at_ends else ((), None)
    state = (stage0, position0, jnp.zeros((), jnp.int32), carry, buffers, last, reg, viol, ends)
    _, _, _, carry, buffers, last, reg, viol, ends = jax.lax.while_loop(lambda st: st[2] < size, segment, state)
    out = watch.output(viol) | {name: cast(jax.Array, last)[:size, k] for k, name in enumerate(evaluated)}
    # The chunk's stage-1 rows come first.
    first_rows = jnp.where(stage0 == 0, jnp.minimum(lengths[0] - position0, size), 0)
    out = _with_average_rows(out, ends, start_value, first_rows, average)
    out |= {"regret": cast(jax.Array, reg)[:size]} if regret else {}
    if not record:
        return carry, out
    # With record, the buffers are the trajectory array (else the placeholder ()).
    return carry, {**out, "policies": _trajectory(cast(jax.Array, buffers)[:size], horizon, num_states, num_actions, runs)}


def _padded_rows(tree, pad: int):
    """Every array of ``tree`` (``None``: none) with ``pad`` rows of zeros appended."""
    if tree is None:
        return None
    return jax.tree_util.tree_map(lambda x: jnp.concatenate([x, jnp.zeros((pad, *x.shape[1:]), x.dtype)]), tree)


def _row(tree, row):
    """Row ``row`` of every array of ``tree`` (``None``: none)."""
    return None if tree is None else jax.tree_util.tree_map(lambda x: x[row], tree)


def _block_rows(tree, start, block: int):
    """Rows ``start .. start + block - 1`` of every array of ``tree`` (``None``: none)."""
    if tree is None:
        return None
    return jax.tree_util.tree_map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, block), tree)


def _evaluation_masks(last_iterate, average) -> tuple[list[str], jax.Array | None]:
    """The names of the policies evaluated at flagged iterations (``"last_iterate"``,
    ``"weighted_average"``: those whose ``(size,)`` mask is given) and their masks as the columns
    of one ``(size, K)`` array (``None`` when none is)."""
    masks = {"last_iterate": last_iterate, "weighted_average": average}
    evaluated = [name for name, mask in masks.items() if mask is not None]
    return evaluated, (jnp.stack([masks[n] for n in evaluated], axis=1) if evaluated else None)


def _close_average(c: StageCarry, length) -> StageCarry:
    """At a stage's end: its mean becomes the weighted average (until the next stage is complete)."""
    if not c.average:
        return c
    return c._replace(average=_stage_means(c.joint_sum, length, len(c.average)))


def _stage_means(joint_sum, count, num_players: int) -> tuple:
    """Per player ``(H, S, A_i[, R])``, the mean of the stage's ``count`` iterates so far: the
    marginals of their joint product policies' sum ``joint_sum`` (which the stage's update keeps
    anyway), over ``count``. Each player's policy sums to one (to rounding for the built-in
    learners; for a user's learner within the strategy guard's tolerance, beyond which the run
    stops), so the marginal of ``sum_t prod_j pi_j^t`` is ``sum_t pi_i^t``: no iteration pays for
    a separate sum (on a small game it cost as much as a tenth of an iteration)."""
    axes = range(2, 2 + num_players)
    return tuple(jnp.sum(joint_sum, axis=tuple(a for a in axes if a != 2 + i)) / count for i in range(num_players))


def _evaluated_values(game: GameArrays, evaluated: list[str], flags, policies, c: StageCarry, position, at_s1, run_axes: int):
    """``(K, 2, N[, R])``: per evaluated policy (``"last_iterate"``: the iteration's ``policies``;
    ``"weighted_average"``, in stage 1 only: `_stage1_average` after the iteration at ``position``)
    its value and best-response values where its flag in ``flags`` (``(K,)``) is set, else zeros."""
    runs = game.rewards.shape[game.rewards.ndim - run_axes :]
    zeros = jnp.zeros((2, game.rewards.shape[1], *runs), game.rewards.dtype)

    def values(name: str):
        chosen = policies if name == "last_iterate" else _stage1_average(c, position)
        return product_policy_values(game.rewards, game.transitions, chosen, at_s1, run_axes)

    return jnp.stack([jax.lax.cond(flags[k], lambda name=name: values(name), lambda: zeros) for k, name in enumerate(evaluated)])


def _stage1_average(c: StageCarry, position) -> tuple:
    """The weighted average of the iterates after stage 1's iteration at 1-based ``position``, whose
    joint product ``c.joint_sum`` already holds: the mean of stage 1 so far."""
    return _stage_means(c.joint_sum, position.astype(c.joint_sum.dtype), len(c.average))


def _average_start(carry: StageCarry, size: int, value_of) -> tuple:
    """With the weighted average, a chunk's ``ends`` (`_average_rows`: per row, the average's value
    if a stage ends there, and whether one does) and the average's value before its first stage
    end (``value_of(carry.average)``: the carry's average, complete after stage 1)."""
    start_value = value_of(carry.average)
    return (jnp.zeros((size, *start_value.shape), start_value.dtype), jnp.zeros((size,), bool)), start_value


def _mark_segment_end(ends, row, value, finished):
    """``ends`` (`_average_rows`; ``()`` without the weighted average) with the segment that ends
    on ``row`` marked: the average's ``value`` there, closed if the stage is ``finished``. Only a
    chunk's last segment may end unfinished, and no other segment ends on its row."""
    if not ends:
        return ends
    return ends[0].at[row].set(value), ends[1].at[row].set(finished)


def _with_average_rows(out: dict, ends, start_value, first_rows, mask) -> dict:
    """``out`` with its weighted average's rows completed by `_average_rows` (``ends``: ``()``
    without the weighted average: ``out`` as it is)."""
    if not ends:
        return out
    return out | {"weighted_average": _average_rows(out["weighted_average"], ends, start_value, first_rows, mask)}


def _average_rows(stage1_rows, ends, start_value, first_rows, mask):
    """The weighted average's ``(size, 2, N[, R])`` rows of a chunk: the per-iteration rows
    ``stage1_rows`` in its first ``first_rows`` rows (stage 1's, whose average changes every
    iteration), and after them the value of the average closed at the latest stage end at or
    before the row (``ends``: per row, that value where a stage ends there, and whether one does),
    or ``start_value`` before the chunk's first; zeros where ``mask`` is not set.

    After stage 1 the average is the mean of the last complete stage (`_close_average`): the same
    rows as evaluating it at every marked iteration, at the cost of one evaluation per stage."""
    closed, is_end = ends
    size = is_end.shape[0]
    rows = jnp.arange(size)
    latest = jax.lax.cummax(jnp.where(is_end, rows, -1), axis=0)
    trailing = (1,) * (closed.ndim - 1)
    filled = jnp.where((latest >= 0).reshape(size, *trailing), closed[jnp.maximum(latest, 0)], start_value[None])
    filled = jnp.where(mask.reshape(size, *trailing), filled, jnp.zeros_like(filled))
    return jnp.where((rows < first_rows).reshape(size, *trailing), stage1_rows, filled)


def _output_bytes(width: int, num_players: int, itemsize: int, record: bool, evaluated: int, regret: bool) -> list[int]:
    """Bytes per iteration of each output the loop writes: the trajectory row, the evaluated
    policies' values (``evaluated`` of them: the last iterate, the weighted average) and the regret rows."""
    sizes = (width, record), (2 * num_players * evaluated, evaluated > 0), (2 * num_players, regret)
    return [n * itemsize for n, present in sizes if present]


def _trajectory(buffers: jax.Array, horizon: int, num_states: int, num_actions, runs) -> tuple:
    """The trajectory buffer's rows ``(size, width[, R])`` as per player ``(size, H, S, A_i[, R])``."""
    policies, offset = [], 0
    for a in num_actions:
        block = horizon * num_states * a
        policies.append(buffers[:, offset : offset + block].reshape(buffers.shape[0], horizon, num_states, a, *runs))
        offset += block
    return tuple(policies)


def stage_prefix_metrics(stage_values, stage1_values, schedule: StageSchedule, prefixes):
    r"""Per-prefix (value, CCE bound, CE bound) at ``s_1`` of Algorithm 4's output from per-stage records.

    The output after ``T'`` iterations mixes over ``t_0 ~ Unif{1..T'}`` the quantities of ``t_0``'s
    stage: for ``T' <= L_1`` every ``t_0`` is in stage 1, whose quantities are those of the stage-1
    prefix ``T'``; beyond, stage 1 contributes ``L_1`` times its final quantities and each later
    stage ``k`` contributes (its iterations up to ``T'``) times ``stage_values[k]``.

    ``stage_values`` (..., K+1, 3, N), ``stage1_values`` (..., L_1, 3, N) (NumPy, leading batch axes
    allowed), ``schedule`` a [`StageSchedule`][markovgames.dynamics.StageSchedule], ``prefixes`` 1-based.
    Returns (..., P, 3, N).
    """
    prefixes = np.asarray(prefixes, dtype=np.int64)
    first = int(schedule.lengths[0])
    starts = schedule.starts
    lead, cells = stage_values.shape[:-3], stage_values.shape[-2:]
    dtype = stage_values.dtype
    # (value, bound, bound) x players as one axis of 3N cells, prefixes sorted (they are unique
    # and increasing): the prefixes in stage 1 are a head, the others a tail.
    flat = stage_values.reshape(*lead, stage_values.shape[-3], -1)
    first_flat = stage1_values.reshape(*lead, stage1_values.shape[-3], -1)
    out = np.empty((*lead, len(prefixes), flat.shape[-1]), dtype)
    head = int(np.searchsorted(prefixes, first, side="right"))
    out[..., :head, :] = first_flat[..., prefixes[:head] - 1, :]
    later = prefixes[head:]
    if later.size:
        # O(P + K): the full stages 2..m-1 before T''s stage m through a cumulative sum of
        # L_k * stage_values[k], and stage m's first T' - start_m + 1 iterations.
        num = len(starts)
        values = flat[..., 2 : num + 1, :]  # stages 2..K (1-based)
        weighted = np.cumsum(schedule.lengths[1:].astype(dtype)[:, None] * values, axis=-2)
        # before[k]: L_1 times stage 1's final quantities plus the full stages 2..k+1.
        before = first * first_flat[..., first - 1 : first, :] + np.concatenate(
            [np.zeros_like(weighted[..., :1, :]), weighted[..., :-1, :]], axis=-2
        )
        # In blocks of prefixes, so that the gathered temporaries stay in the cache (with a
        # million prefixes, whole-array temporaries made this several times slower).
        for lo in range(0, later.size, _PREFIX_BLOCK):
            block = later[lo : lo + _PREFIX_BLOCK]
            stage = np.searchsorted(starts, block, side="right") - 2  # 0-based among stages 2..K
            inside = (block - starts[stage + 1] + 1).astype(dtype)[:, None]
            tail = out[..., head + lo : head + lo + block.size, :]
            np.multiply(inside, values[..., stage, :], out=tail)
            tail += before[..., stage, :]
            tail /= block.astype(dtype)[:, None]
    return out.reshape(*lead, len(prefixes), *cells)


#: Prefixes per block of `stage_prefix_metrics`.
_PREFIX_BLOCK = 8192


class StageUpdate(ValueUpdate):
    """Algorithm 2's stage-based value update with Algorithm 4's output policy (see the module docstring)."""

    name = "stage"
    index_kernel = "stage"
    per_iteration_metrics = False
    description = "stages L_1 = H, L_(k+1) = floor((1 + 1/H) L_k); output policy Algorithm 4"
    citation = "Mao et al., L4DC 2024, Algorithms 2 and 4"

    def theory_rate(self, num_players, horizon, max_actions):
        # Theorem 2's rate 1/(N max(1, ln L_tau)^4) changes per stage: the schedule carries it.
        return 1.0, True

    def schedule(self, T, horizon, num_players, per_stage_theory, step_schedule=None):
        stages = stage_schedule(horizon, T)
        multipliers = theory_eta_stage(num_players, stages.lengths) if per_stage_theory else np.ones(len(stages.lengths))
        # The learners restart every stage: a schedule's t is the position in the stage.
        if step_schedule is None:
            factors = np.ones(1)  # unread: a constant rate's loop reads no factors (`Interplay.scheduled`)
        else:
            factors = step_schedule.factors(np.arange(1, int(stages.lengths.max()) + 2, dtype=np.float64))
        return _Schedule(stages, stages.lengths.astype(np.int32), multipliers, factors)

    def chunk_inputs(self, schedule, done, size, dtype):
        # Where the chunk starts: 0-based stage and iterations already done in it.
        return (
            np.int32(schedule.stages.stage[done] - 1),
            np.int32(schedule.stages.position[done] - 1),
            schedule.lengths,
            schedule.eta_multipliers.astype(dtype),
            schedule.factors.astype(dtype),
            np.int32(done),
        )

    def init_carry(self, learner, shape_key, dtype, schedule, interplay=SIMULTANEOUS, initial=None):
        # Initial strategies are the smooth updates' (the learners restart every stage at init's
        # state; `run` refuses them here).
        del initial
        num_players, horizon, num_states, num_actions = shape_key
        built = learner_for(learner, run_axes=0)
        regret = (
            init_regret(horizon, num_states, num_actions, lambda shape: device_zeros(shape, dtype)) if interplay.regret else ()
        )
        return self.init_certify_carry(shape_key, dtype, schedule)._replace(
            learners=tuple(built.init((horizon, num_states, a), dtype) for a in num_actions),
            prediction=tuple(device_zeros((horizon, num_states, a), dtype) for a in num_actions),
            q=device_zeros((horizon, num_players, num_states, *num_actions), dtype),
            regret=regret,
            average=tuple(device_zeros((horizon, num_states, a), dtype) for a in num_actions) if interplay.average else (),
        )

    def run_chunk(
        self,
        learner: LearnerSpec,
        optimistic,
        record,
        size,
        game,
        carry,
        sched,
        last_iterate,
        run_axes,
        interplay=SIMULTANEOUS,
        average=None,
        average_how="marked",
    ):
        # average_how changes nothing here: after stage 1 the loop evaluates the average at stage
        # ends whatever the mask (`_average_rows`).
        built = learner_for(learner, run_axes)
        factors, chunk_start = sched[4], sched[5]
        # The exact mode of sampled feedback is full information's code, bit for bit.
        sampled = interplay.feedback.estimates
        horizon, num_players, num_states = game.rewards.shape[:3]
        num_actions = game.rewards.shape[3 : game.rewards.ndim - run_axes]
        runs = game.rewards.shape[game.rewards.ndim - run_axes :]
        dtype = game.rewards.dtype

        def factor_at(position):
            """The schedule's factor at the 0-based position in the stage (``None``: constant)."""
            if not interplay.scheduled:
                return None
            if interplay.traced is not None:
                return interplay.traced((position + 1).astype(dtype))
            return factors[position]

        def iteration_for(eta, done0, position0):
            def iteration(c: StageCarry, j, drawn_j):
                position = position0 + j  # 0-based position in the stage
                rates = player_rates(eta, factor_at(position), num_players)
                # Full information, or the estimates of iteration t (1-based, `._feedback`).
                t = chunk_start + done0 + j + 1
                estimator = Estimator(interplay.feedback, game, t, run_axes, drawn_j) if sampled else None
                predictions, proposals = c.prediction, ()
                if built.propose is not None:
                    predictions, proposals = proposed_predictions(built, c.learners, rates, 1.0, c.q, run_axes, estimator)
                played = [built.play(c.learners[i], predictions[i], rates[i], 1.0) for i in range(num_players)]
                policies = tuple(p for p, _ in played)
                following = None
                if interplay.order == "alternating":
                    next_rates = player_rates(eta, factor_at(position + 1), num_players)
                    following = (lambda i, u: u if optimistic else c.prediction[i], next_rates, 1.0)
                utilities, learners = observe_round(
                    built,
                    tuple(s for _, s in played),
                    policies,
                    c.q,
                    rates,
                    1.0,
                    run_axes,
                    interplay.order,
                    following,
                    estimator,
                )
                prediction = utilities if optimistic else c.prediction
                c = c._replace(learners=learners, prediction=prediction)
                if not interplay.regret:
                    return c, policies, proposals, None
                # Uniform weights within the stage: alpha = 1/position (1-based), so a stage's
                # first iteration (alpha = 1) discards the previous stage's average exactly.
                alpha = 1.0 / (position + 1).astype(dtype)
                regret, rows = regret_step(cast(RegretCarry, c.regret), policies, utilities, alpha, run_axes)
                return c._replace(regret=regret), policies, proposals, rows

            return iteration

        def stage_end(c: StageCarry, stage, length, t):
            # Q^tau is constant during the stage, so the stage sum of [Q^tau_h pi^t'_h] is
            # <Q^tau_h, sum_t' joint^t'_h>: no per-iteration value sums are needed.
            if isinstance(c.q, tuple):  # unreachable: only certifying leaves Q out, and it has no Q update
                raise AssertionError("a learning run's stage state without Q")
            value_sum = joint_expectation(c.q, c.joint_sum[:, None], num_players, run_axes)  # (H, N, S, R)
            # Sampled feedback: the targets through the empirical kernel of the draws of iteration
            # t, the one that ends the stage (`._feedback`).
            kernel = Estimator(interplay.feedback, game, t, run_axes).kernel(game.transitions) if sampled else game.transitions
            q_next = stage_q_update(game.rewards, kernel, value_sum, length, run_axes)
            uniform = tuple(jnp.full((horizon, num_states, a, *runs), 1.0 / a, dtype) for a in num_actions)
            # The reset of pi to uniform only feeds the next prediction: [Q^{tau+1} uniform_{-i}].
            prediction = per_player_utilities(q_next, uniform, run_axes) if optimistic else c.prediction
            return c._replace(
                learners=tuple(built.init((horizon, num_states, a, *runs), dtype) for a in num_actions),
                prediction=prediction,
                q=q_next,
            )

        guard_tol = guard_tolerance(learner, dtype)
        drawn = None
        if sampled:
            # The chunk's draws at once where they are small (`CHUNK_DRAW_BYTES`): the same numbers.
            purposes = (OTHERS,) + ((PROPOSALS,) if built.propose is not None else ())
            drawn = chunk_draws(interplay.feedback, game, chunk_start + 1, size, run_axes, purposes)
        carry, out = _stage_loop(
            size,
            game,
            carry,
            sched,
            run_axes,
            iteration_for,
            stage_end,
            record,
            last_iterate,
            guard_tol,
            interplay.regret,
            drawn,
            average,
        )
        # The per-stage records after this chunk: its prefixes are assembled while the next one runs.
        return carry, {**out, "prefix_records": self.prefix_records(carry)}

    def prefix_records(self, carry):
        # Every row is written once (stage k's when stage k-1 ends; stage 1's row T' - 1 at
        # iteration T'), so the records after t iterations hold every prefix T' <= t.
        return StageRecords(carry.stage_values, carry.stage1_values)

    def prefix_metrics(self, records, schedule, prefixes):
        return stage_prefix_metrics(
            np.asarray(records.stage_values), np.asarray(records.stage1_values), schedule.stages, prefixes
        )

    def init_certify_carry(self, shape_key, dtype, schedule):
        num_players, horizon, num_states, num_actions = shape_key

        def per_step():
            # Distinct buffers: the carry is donated to the compiled loop, and a buffer may be donated once.
            return device_zeros((horizon, num_players, num_states), dtype)

        return StageCarry(
            learners=(),
            prediction=(),
            q=(),
            joint_sum=device_zeros((horizon, num_states, *num_actions), dtype),
            current=(per_step(), per_step(), per_step()),
            stage_values=device_zeros((len(schedule.lengths) + 2, 3, num_players), dtype),
            stage1_values=device_zeros((horizon, 3, num_players), dtype),
        )

    def certify_chunk(self, size, game, carry, sched, policies, run_axes):
        def iteration_for(eta, done0, position0):
            del eta, position0

            def iteration(c: StageCarry, j, drawn_j):
                return c, tuple(jax.lax.dynamic_index_in_dim(p, done0 + j, axis=0, keepdims=False) for p in policies), (), None

            return iteration

        return _stage_loop(size, game, carry, sched, run_axes, iteration_for, lambda c, stage, length, t: c, record=False)


#: The stage-based value update.
STAGE = StageUpdate()
