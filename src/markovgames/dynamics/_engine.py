r"""The compiled iteration loop: one ``jax.lax.scan`` over iterations, ``jit``-compiled, for one run or a batch.

Every player runs its own learner on its own utility vectors only (uncoupled): the loop computes
``u^t_i = [Q_i pi_{-i}]`` for each player and hands player ``i``'s learner nothing else.

Per iteration ``t`` of a smooth algorithm (Algorithm 1, and the smooth CCE variant):

1. ``pi^t_i = play(state_i, prediction_i = u^{t-1}_i, eta, rho_t)`` for every ``(h, s, i)``;
2. for ``h = H-1 .. 0``: ``Q^t_h = (1 - alpha_t) Q^{t-1}_h + alpha_t (r_h + P_h [Q^t_{h+1} pi^t_{h+1}])``
   and, in the same pass, the Algorithm-3 recursions of the output policy's value and certified
   bounds (:mod:`._output_metrics`), with one transition contraction for all of them;
3. ``u^t_i = [Q^t_i pi^t_{-i}]``, ``state_i = observe(state_i, pi^t_i, u^t_i, rho_t)``.

Per iteration of the stage-based algorithm (Algorithm 2):

1. ``pi^t_i = play(state_i, prediction_i, eta_tau / H, 1)`` (prediction ``[Q^tau pi^{t-1}_{-i}]``,
   or ``[Q^tau uniform_{-i}]`` right after a value update);
2. ``u^t_i = [Q^tau_i pi^t_{-i}]`` is observed; the stage sums of ``[Q^tau_h pi^t_h]`` and of the
   joint policies grow;
3. at the stage's last iteration: ``Q^{tau+1} = r + P (stage mean of [Q^tau_{h+1} pi_{h+1}])``, the
   learners restart, and the output policy's quantities for the next stage are computed.

For the smooth algorithms the scan emits, for every prefix ``T' = t``, the output policy's exact
value and certified CE and CCE bounds at ``s_1`` for every player; for stage_cce, whose output
policy's quantities only change at stage ends (and during the self-referential stage 1), the carry
records them per stage and :func:`stage_prefix_metrics` assembles the per-prefix curve. The scan
also emits (optionally) the policies ``pi^t`` (the trajectory).

Layout: inside the compiled loop every array of a batch ends with the run axis ``R`` (the runs
side by side), so that XLA vectorises over the runs rather than over the tiny action axes
(benchmarks/README.md); :func:`compiled_chunk` moves it there from the first axis, where its
callers keep it. A single run's arrays have no run axis: ``run_axes`` (0 or 1, static) tells
every function which layout it gets (:mod:`._tensor`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import small_max, small_sum
from ..learners import Learner, blum_mansour, optimistic_hedge
from ._algorithms import Algorithm
from ._output_metrics import smooth_metric_step, stacked_targets, stage_index_quantities
from ._tensor import joint_expectation, joint_product, others_expectation
from ._value_updates import SparseKernel, kernel_step, scanned_step, smooth_q_update, stage_q_update, step_inputs

__all__ = ["GameArrays", "SmoothCarry", "StageCarry", "init_carry", "compiled_chunk", "make_learner", "stage_prefix_metrics"]

#: Steps of the backward pass are unrolled up to this horizon, scanned beyond it.
_UNROLL_HORIZON = 8


class GameArrays(NamedTuple):
    """The per-run inputs of the compiled loop (shapes of one run; see :func:`compiled_chunk`)."""

    rewards: jax.Array  # (H, N, S, A...)
    transitions: jax.Array | SparseKernel  # (H, S, A..., S), or sparse (H, S, A..., K) pairs
    initial_state: jax.Array  # () int
    eta: jax.Array  # () learning-rate scale


class SmoothCarry(NamedTuple):
    """The smooth algorithms' loop state, with one run's shapes as :func:`compiled_chunk`'s callers
    see it (inside the loop, a short float64 game's per-step arrays are tuples over ``h``:
    :func:`split_steps`)."""

    learners: tuple
    prediction: tuple  # per player (H, S, A_i): u^{t-1}
    q: jax.Array  # (H, N, S, A...)
    running_m: tuple  # per player (H, S, A_i)
    running_d: tuple  # per player (H, S, A_i, A_i)
    running_value: jax.Array  # (H, N, S)
    identity_residual: jax.Array  # () max |Q^t_h - (r_h + P_h V^t_{h+1})| so far


class StageCarry(NamedTuple):
    learners: tuple
    prediction: tuple  # per player (H, S, A_i)
    q: jax.Array  # (H, N, S, A...): Q^tau
    joint_sum: jax.Array  # (H, S, A...): sum over the stage of the joint product policies
    current: tuple  # (value, cce, ce), each (H, N, S): quantities of an index of the current stage
    # (value, CCE bound, CE bound) at (h=0, s_1) of an index of stage k (row k; row 0 unused),
    # filled when stage k-1 ends: the per-prefix curve is assembled from them after the loop.
    stage_values: jax.Array  # (num_stages + 2, 3, N): the last stage's end writes row num_stages + 1
    # Stage 1 refers to itself, so its quantities change with the prefix T' <= L_1: row T' - 1.
    stage1_values: jax.Array  # (L_1, 3, N)


def make_learner(algorithm: Algorithm, run_axes: int) -> Learner:
    """The algorithm's learner; its action axis comes before the ``run_axes`` trailing run axes."""
    axis = -1 - run_axes
    return blum_mansour(axis=axis) if algorithm.learner == "bm_log_barrier" else optimistic_hedge(axis)


def init_carry(algorithm: Algorithm, shape_key, dtype, num_stages: int = 0) -> SmoothCarry | StageCarry:
    """One run's carry before iteration 1 (no run axis): ``pi^0`` uniform, ``Q = 0``, empty sums.

    ``num_stages`` (stage_cce only): the number of stages that start within the run.
    """
    num_players, horizon, num_states, num_actions = shape_key
    learner = make_learner(algorithm, run_axes=0)
    batch = (horizon, num_states)
    learners = tuple(learner.init(batch, a, dtype) for a in num_actions)
    prediction = tuple(jnp.zeros((*batch, a), dtype) for a in num_actions)
    q = jnp.zeros((horizon, num_players, num_states, *num_actions), dtype)

    def per_step():
        # Distinct buffers: the carry is donated to the compiled loop, and a buffer may be donated once.
        return jnp.zeros((horizon, num_players, num_states), dtype)

    if algorithm.value_update == "smooth":
        return SmoothCarry(
            learners=learners,
            prediction=prediction,
            q=q,
            running_m=tuple(jnp.zeros((*batch, a), dtype) for a in num_actions),
            running_d=tuple(jnp.zeros((*batch, a, a), dtype) for a in num_actions),
            running_value=per_step(),
            identity_residual=jnp.zeros((), dtype),
        )
    return StageCarry(
        learners=learners,
        prediction=prediction,
        q=q,
        joint_sum=jnp.zeros((horizon, num_states, *num_actions), dtype),
        current=(per_step(), per_step(), per_step()),
        stage_values=jnp.zeros((num_stages + 2, 3, num_players), dtype),
        stage1_values=jnp.zeros((horizon, 3, num_players), dtype),
    )


def _per_player_utilities(q, policies, run_axes: int):
    """``u_i = [Q_i pi_{-i}]`` for every player over all ``(h, s)``: player ``i`` sees only its own."""
    return tuple(others_expectation(q[:, i], policies, i, run_axes) for i in range(len(policies)))


def _at_initial_state(x, initial_state, run_axes: int):
    """``x[:, s_1]`` of every run: ``(N, S, R) -> (N, R)``."""
    if not run_axes:
        return jax.lax.dynamic_index_in_dim(x, initial_state, axis=1, keepdims=False)
    if x.shape[-1] == 1:
        return jax.lax.dynamic_index_in_dim(x, initial_state[0], axis=1, keepdims=False)
    # A masked sum rather than a gather: elementwise over the runs, so it vectorises.
    mask = jnp.arange(x.shape[1])[:, None] == initial_state[None, :]  # (S, R)
    return small_sum(jnp.where(mask, x, 0.0), 1)


def _smooth_step(algorithm: Algorithm, optimistic: bool, record: bool, game: GameArrays, run_axes: int):
    """One iteration of a smooth algorithm: ``(carry, [t]) -> (carry, outputs)``.

    The backward pass over the steps is unrolled up to ``_UNROLL_HORIZON`` steps. Where
    :func:`splits_steps`, the carry is in the per-step form of :func:`split_steps`; otherwise
    the pass is a scan over stacked arrays.
    """
    learner = make_learner(algorithm, run_axes)
    horizon, num_players, num_states = game.rewards.shape[:3]
    split = splits_steps(game.rewards)
    runs = game.rewards.shape[game.rewards.ndim - run_axes :]
    dtype = game.rewards.dtype

    def step(carry: SmoothCarry, x):
        t = x[0]
        alpha = (horizon + 1.0) / (horizon + t)
        rho = (t - 1.0) / (horizon + t - 1.0)
        policies = tuple(
            learner.play(carry.learners[i], carry.prediction[i], game.eta, rho) for i in range(num_players)
        )

        def backward(nxt, xs):
            r_h, p_h, q_h, pol_h, m_h, d_h, value_h = xs
            alg_next, value_next, cce_next, ce_next = nxt
            q_target, value_target, cce_target, ce_target = stacked_targets(
                r_h, p_h, (alg_next, value_next, cce_next, ce_next), run_axes
            )
            q_new = smooth_q_update(q_h, q_target, alpha)
            joint_h = joint_product(pol_h, run_axes)
            alg_h = joint_expectation(q_new, joint_h, num_players, run_axes)  # V^t_h of the algorithm
            running, quantities = smooth_metric_step(
                pol_h, joint_h, alpha, (m_h, d_h, value_h), (value_target, cce_target, ce_target), run_axes
            )
            # The paper's lemma: Q^t_h = r_h + P_h V^t_{h+1} with V the output policy's value.
            # Per run; by slices where axes are short, since a reduction to the minor run axis
            # is a strided scalar loop on the CPU (it was the batch's most expensive kernel).
            gap = jnp.abs(q_new - value_target)
            residual = small_max(gap, tuple(range(q_new.ndim - 1))) if run_axes else jnp.max(gap)
            return (alg_h, *quantities), (q_new, running, residual)

        zeros = jnp.zeros((num_players, num_states, *runs), dtype)
        if split:
            # The carry holds one array per step (:func:`split_steps`): each step's results are
            # new arrays of their own, with no concatenation of the steps and no copy of the
            # loop carry, which the stacked arrays cost per iteration.
            top, q, running_m, running_d, running_value, residual = (zeros,) * 4, [], [], [], [], []
            for h in range(horizon - 1, -1, -1):
                at_h = (carry.q[h], tuple(p[h] for p in policies), tuple(m[h] for m in carry.running_m))
                at_h += (tuple(d[h] for d in carry.running_d), carry.running_value[h])
                top, (q_h, (m_h, d_h, value_h), residual_h) = backward(
                    top, (game.rewards[h], kernel_step(game.transitions, h), *at_h)
                )
                q.insert(0, q_h)
                running_m.insert(0, m_h)
                running_d.insert(0, d_h)
                running_value.insert(0, value_h)
                residual.append(residual_h)
            q, running_value, residual = tuple(q), tuple(running_value), jnp.stack(residual)
            running_m, running_d = tuple(zip(*running_m)), tuple(zip(*running_d))  # per player, per step
            stacked_q = jnp.stack(q)
        else:
            xs = (game.rewards, step_inputs(game.transitions), carry.q, policies, carry.running_m, carry.running_d, carry.running_value)
            top, (q, (running_m, running_d, running_value), residual) = jax.lax.scan(
                lambda nxt, xs: backward(nxt, (xs[0], scanned_step(game.transitions, xs[1]), *xs[2:])),
                (zeros, zeros, zeros, zeros),
                xs,
                reverse=True,
                unroll=horizon if horizon <= _UNROLL_HORIZON else 1,
            )
            stacked_q = q
        utilities = _per_player_utilities(stacked_q, policies, run_axes)
        learners = tuple(
            learner.observe(carry.learners[i], policies[i], utilities[i], rho) for i in range(num_players)
        )
        prediction = utilities if optimistic else carry.prediction
        new_carry = SmoothCarry(
            learners,
            prediction,
            q,
            running_m,
            running_d,
            running_value,
            jnp.maximum(carry.identity_residual, jnp.max(residual, axis=0)),
        )
        s1 = game.initial_state
        _, value, cce, ce = top
        # One (3, N, R) output per iteration: value, certified CCE bound, certified CE bound at s_1.
        out = {"metrics": jnp.stack([_at_initial_state(x, s1, run_axes) for x in (value, cce, ce)])}
        if record:
            out["policies"] = policies
        return new_carry, out

    return step


def splits_steps(rewards) -> bool:
    """Whether the smooth loop carries one array per step (:func:`split_steps`): float64 games of
    up to ``_UNROLL_HORIZON`` steps.

    It removes the per-iteration concatenation of the steps' results and the copies of the loop
    carry: 41 -> 30 kernels per paper-game iteration, 1.15-1.35x faster (benchmarks/README.md).
    Float32 keeps the stacked arrays: with the split form XLA fused its running averages so that
    float32's error against float64 grew 10x over 10^4 iterations (5.9e-5, above the documented
    2e-5).
    """
    return rewards.shape[0] <= _UNROLL_HORIZON and rewards.dtype == jnp.float64


def split_steps(carry: SmoothCarry) -> SmoothCarry:
    """The smooth carry with its per-step arrays (``q``, the running metric arrays) as tuples over ``h``."""
    horizon = carry.q.shape[0]

    def per_step(x):
        return tuple(x[h] for h in range(horizon))

    return carry._replace(
        q=per_step(carry.q),
        running_m=tuple(per_step(m) for m in carry.running_m),
        running_d=tuple(per_step(d) for d in carry.running_d),
        running_value=per_step(carry.running_value),
    )


def stack_steps(carry: SmoothCarry) -> SmoothCarry:
    """The inverse of :func:`split_steps`."""
    return carry._replace(
        q=jnp.stack(carry.q),
        running_m=tuple(jnp.stack(m) for m in carry.running_m),
        running_d=tuple(jnp.stack(d) for d in carry.running_d),
        running_value=jnp.stack(carry.running_value),
    )


def _stage_chunk(
    algorithm: Algorithm, optimistic: bool, record: bool, size: int, game: GameArrays, carry, sched, run_axes: int
):
    """``size`` iterations of Algorithm 2, looping over stage segments rather than testing every iteration.

    ``sched = (stage, position, lengths, eta_multipliers)``: the 0-based stage and the iterations
    already done in it at the chunk's start, and per-stage tables. The loop runs each stage's
    iterations in an inner loop with no branch, and does the stage-end work (value update,
    learner restart, output-policy quantities) once per stage, so no iteration pays for a test.
    """
    learner = make_learner(algorithm, run_axes)
    horizon, num_players, num_states = game.rewards.shape[:3]
    num_actions = game.rewards.shape[3 : game.rewards.ndim - run_axes]
    runs = game.rewards.shape[game.rewards.ndim - run_axes :]
    dtype = game.rewards.dtype
    stage0, position0, lengths, eta_multipliers = sched
    s1 = game.initial_state

    def at_start(quantities):
        return jnp.stack([_at_initial_state(c[0], s1, run_axes) for c in quantities])  # (3, N, R)

    def iterate(stage1: bool, eta, position0, done0):
        """One iteration's body; ``stage1`` also recomputes stage 1's self-referential quantities."""

        def body(j, state):
            c, buffers = state
            policies = tuple(learner.play(c.learners[i], c.prediction[i], eta, 1.0) for i in range(num_players))
            utilities = _per_player_utilities(c.q, policies, run_axes)
            learners = tuple(learner.observe(c.learners[i], policies[i], utilities[i], 1.0) for i in range(num_players))
            joint_sum = c.joint_sum + joint_product(policies, run_axes)  # (H, S, A..., R)
            current, stage1_values = c.current, c.stage1_values
            if stage1:
                position = position0 + j + 1
                current = stage_index_quantities(game.rewards, game.transitions, joint_sum / position, None, run_axes)
                stage1_values = stage1_values.at[position - 1].set(at_start(current))
            prediction = utilities if optimistic else c.prediction
            c = c._replace(
                learners=learners, prediction=prediction, joint_sum=joint_sum, current=current, stage1_values=stage1_values
            )
            if record:
                # All players' policies in one row: one in-place update per iteration, not N.
                row = jnp.concatenate([p.reshape((-1, *runs)) for p in policies])[None]
                start = (done0 + j,) + (jnp.int32(0),) * (1 + run_axes)
                buffers = jax.lax.dynamic_update_slice(buffers, row, start)
            return c, buffers

        return body

    def end_of_stage(c: StageCarry, stage, length):
        # Q^tau is constant during the stage, so the stage sum of [Q^tau_h pi^t'_h] is
        # <Q^tau_h, sum_t' joint^t'_h>: no per-iteration value sums are needed.
        value_sum = joint_expectation(c.q, c.joint_sum[:, None], num_players, run_axes)  # (H, N, S, R)
        q_next = stage_q_update(game.rewards, game.transitions, value_sum, length, run_axes)
        next_current = stage_index_quantities(
            game.rewards, game.transitions, c.joint_sum / length, c.current, run_axes
        )
        uniform = tuple(jnp.full((horizon, num_states, a, *runs), 1.0 / a, dtype) for a in num_actions)
        # The reset of pi to uniform only feeds the next prediction: [Q^{tau+1} uniform_{-i}].
        prediction = _per_player_utilities(q_next, uniform, run_axes) if optimistic else c.prediction
        return c._replace(
            learners=tuple(learner.init((horizon, num_states, *runs), a, dtype) for a in num_actions),
            prediction=prediction,
            q=q_next,
            joint_sum=jnp.zeros_like(c.joint_sum),
            current=next_current,
            # Stage `stage + 1` (1-based) ended: its indices' successors form stage `stage + 2`.
            stage_values=c.stage_values.at[stage + 2].set(at_start(next_current)),
        )

    def segment(state):
        stage, position, done, c, buffers = state
        length = lengths[stage]
        count = jnp.minimum(length - position, size - done)
        eta = game.eta * eta_multipliers[stage] / horizon
        # Two loops, one of them empty, rather than a branch: a branch would copy the trajectory
        # buffer it passes through.
        in_first = jnp.where(stage == 0, count, 0)
        c, buffers = jax.lax.fori_loop(0, in_first, iterate(True, eta, position, done), (c, buffers))
        c, buffers = jax.lax.fori_loop(in_first, count, iterate(False, eta, position, done), (c, buffers))
        position, done = position + count, done + count
        finished = position == length
        c = jax.lax.cond(finished, lambda: end_of_stage(c, stage, length.astype(dtype)), lambda: c)
        return jnp.where(finished, stage + 1, stage), jnp.where(finished, 0, position), done, c, buffers

    width = horizon * num_states * sum(num_actions)
    buffers = jnp.zeros((size, width, *runs), dtype) if record else ()
    state = (stage0, position0, jnp.zeros((), jnp.int32), carry, buffers)
    _, _, _, carry, buffers = jax.lax.while_loop(lambda st: st[2] < size, segment, state)
    if not record:
        return carry, {}
    policies, offset = [], 0
    for a in num_actions:
        block = horizon * num_states * a
        policies.append(buffers[:, offset : offset + block].reshape(size, horizon, num_states, a, *runs))
        offset += block
    return carry, {"policies": tuple(policies)}


@lru_cache(maxsize=None)
def compiled_chunk(algorithm: Algorithm, optimistic: bool, record: bool, batched: bool, size: int):
    """The jitted function ``(game, carry, sched) -> (carry, outputs)`` running ``size`` iterations.

    ``sched`` is the smooth algorithms' ``(size, 1)`` array of iteration numbers, or stage_cce's
    ``(stage, position, lengths, eta_multipliers)`` (see :func:`_stage_chunk`). ``game`` and
    ``carry`` have one run's shapes, or with ``batched`` a leading run axis; so do the outputs
    (after the chunk axis). Inside, a batch's run axis is moved last (see the module docstring);
    ``sched`` is shared by all runs, so loop bounds are the same for all.
    """
    run_axes = 1 if batched else 0

    def runs_last(x):
        return jnp.moveaxis(x, 0, -1)

    def runs_first(x):
        return jnp.moveaxis(x, -1, 0)

    def fn(game, carry, sched):
        if batched:
            game, carry = jax.tree_util.tree_map(runs_last, (game, carry))
        if algorithm.value_update == "smooth":
            split = splits_steps(game.rewards)
            carry = split_steps(carry) if split else carry
            carry, out = jax.lax.scan(_smooth_step(algorithm, optimistic, record, game, run_axes), carry, sched)
            carry = stack_steps(carry) if split else carry
        else:
            carry, out = _stage_chunk(algorithm, optimistic, record, size, game, carry, sched, run_axes)
        if batched:
            # The outputs are (chunk, ..., R): the run axis goes before the chunk axis.
            carry, out = jax.tree_util.tree_map(runs_first, (carry, out))
        return carry, out

    return jax.jit(fn, donate_argnums=(1,), compiler_options=_compiler_options())


def _compiler_options() -> dict:
    """Per-function XLA options (the caller's global flags stay untouched); each is probed first.

    On the CPU:

    * XLA's concurrency-optimised scheduler spreads the loop body's many tiny kernels over
      threads; for this sequential loop that doubles the CPU time for no speed-up.
    * XLA's YNNPACK fusions are switched off: they made stage_cce 3.6x slower on the medium game
      and 2.5x slower on the large sparse game, batches of paper-game runs 2-3x slower, and, since
      the sparse contraction gathers one number per row (:mod:`._value_updates`), the smooth
      algorithms on the large sparse game 1.2-1.4x slower; on a dense game with 1000 states they
      make no measurable difference (benchmarks/README.md).

    An option this jaxlib does not know is left out (other backends know neither).
    """
    if jax.default_backend() != "cpu":
        return {}
    wanted = {"xla_cpu_enable_concurrency_optimized_scheduler": False, "xla_cpu_experimental_ynn_fusion_type": ""}
    return {key: value for key, value in wanted.items() if _option_supported(key, value)}


@lru_cache(maxsize=None)
def _option_supported(key: str, value) -> bool:
    try:
        jax.jit(lambda x: x + 1, compiler_options={key: value}).lower(1.0).compile()
    except Exception:  # noqa: BLE001 - any refusal means "not supported here"
        return False
    return True


def stage_prefix_metrics(stage_values, stage1_values, schedule, prefixes):
    r"""Per-prefix (value, CCE bound, CE bound) at ``s_1`` of Algorithm 4's output from per-stage records.

    The output after ``T'`` iterations mixes over ``t_0 ~ Unif{1..T'}`` the quantities of ``t_0``'s
    stage: for ``T' <= L_1`` every ``t_0`` is in stage 1, whose quantities are those of the stage-1
    prefix ``T'``; beyond, stage 1 contributes ``L_1`` times its final quantities and each later
    stage ``k`` contributes (its iterations up to ``T'``) times ``stage_values[k]``.

    ``stage_values`` (..., K+1, 3, N), ``stage1_values`` (..., L_1, 3, N) (NumPy, leading batch axes
    allowed), ``schedule`` a :class:`~markovgames.dynamics.StageSchedule`, ``prefixes`` 1-based.
    Returns (..., P, 3, N).
    """
    import numpy as np

    prefixes = np.asarray(prefixes, dtype=np.int64)
    first = int(schedule.lengths[0])
    starts = schedule.starts
    ends = starts + schedule.lengths - 1
    out = np.empty(stage_values.shape[:-3] + (len(prefixes),) + stage_values.shape[-2:], stage_values.dtype)
    in_first = prefixes <= first
    if np.any(in_first):
        out[..., in_first, :, :] = np.take(stage1_values, prefixes[in_first] - 1, axis=-3)
    later = prefixes[~in_first]
    if later.size:
        # counts[p, k]: iterations of stage k (0-based over the stages >= 2) that are <= T'_p.
        counts = np.clip(np.minimum(later[:, None], ends[None, 1:]) - starts[None, 1:] + 1, 0, None).astype(stage_values.dtype)
        weighted = np.einsum("pk,...kcn->...pcn", counts, stage_values[..., 2 : len(starts) + 1, :, :])
        final_first = stage1_values[..., first - 1 : first, :, :]
        out[..., ~in_first, :, :] = (first * final_first + weighted) / later[:, None, None].astype(stage_values.dtype)
    return out
