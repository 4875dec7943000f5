r"""The compiled iteration loop: one ``jax.lax.scan`` over iterations, ``jit``-compiled, ``vmap``-able.

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
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..learners import Learner, blum_mansour, optimistic_hedge
from ._algorithms import Algorithm
from ._output_metrics import smooth_metric_step, stacked_targets, stage_index_quantities
from ._tensor import joint_expectation, joint_product, others_expectation
from ._value_updates import bellman_target, smooth_q_update, stage_q_update

__all__ = ["GameArrays", "SmoothCarry", "StageCarry", "init_carry", "compiled_chunk", "make_learner", "stage_prefix_metrics"]

#: Steps of the backward pass are unrolled up to this horizon, scanned beyond it.
_UNROLL_HORIZON = 8


class GameArrays(NamedTuple):
    """The per-run inputs of the compiled loop (batched along axis 0 under ``vmap``)."""

    rewards: jax.Array  # (H, N, S, A...)
    transitions: jax.Array  # (H, S, A..., S)
    initial_state: jax.Array  # () int
    eta: jax.Array  # () learning-rate scale


class SmoothCarry(NamedTuple):
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


def make_learner(algorithm: Algorithm) -> Learner:
    return blum_mansour() if algorithm.learner == "bm_log_barrier" else optimistic_hedge()


def init_carry(algorithm: Algorithm, shape_key, dtype, num_stages: int = 0) -> SmoothCarry | StageCarry:
    """The carry before iteration 1: ``pi^0`` uniform, ``Q = 0``, empty sums.

    ``num_stages`` (stage_cce only): the number of stages that start within the run.
    """
    num_players, horizon, num_states, num_actions = shape_key
    learner = make_learner(algorithm)
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


def _per_player_utilities(q, policies):
    """``u_i = [Q_i pi_{-i}]`` for every player over all ``(h, s)``: player ``i`` sees only its own."""
    return tuple(others_expectation(q[:, i], policies, i) for i in range(len(policies)))


def _smooth_step(algorithm: Algorithm, optimistic: bool, record: bool, game: GameArrays):
    learner = make_learner(algorithm)
    horizon, num_players, num_states = game.rewards.shape[:3]
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
                r_h, p_h, alg_next, value_next, cce_next, ce_next
            )
            q_new = smooth_q_update(q_h, q_target, alpha)
            joint_h = joint_product(pol_h)
            alg_h = joint_expectation(q_new, joint_h, num_players)  # V^t_h of the algorithm
            running, quantities = smooth_metric_step(
                pol_h, joint_h, alpha, (m_h, d_h, value_h), (value_target, cce_target, ce_target)
            )
            # The paper's lemma: Q^t_h = r_h + P_h V^t_{h+1} with V the output policy's value.
            residual = jnp.max(jnp.abs(q_new - value_target))
            return (alg_h, *quantities), (q_new, running, residual)

        zeros = jnp.zeros((num_players, num_states), dtype)
        xs = (game.rewards, game.transitions, carry.q, policies, carry.running_m, carry.running_d, carry.running_value)
        top, (q, (running_m, running_d, running_value), residual) = jax.lax.scan(
            backward,
            (zeros, zeros, zeros, zeros),
            xs,
            reverse=True,
            unroll=horizon if horizon <= _UNROLL_HORIZON else 1,
        )
        utilities = _per_player_utilities(q, policies)
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
            jnp.maximum(carry.identity_residual, jnp.max(residual)),
        )
        s1 = game.initial_state
        _, value, cce, ce = top
        # One (3, N) output per iteration: value, certified CCE bound, certified CE bound at s_1.
        out = {"metrics": jnp.stack([value[:, s1], cce[:, s1], ce[:, s1]])}
        if record:
            out["policies"] = policies
        return new_carry, out

    return step


def _stage_step(algorithm: Algorithm, optimistic: bool, record: bool, game: GameArrays):
    learner = make_learner(algorithm)
    horizon, num_players, num_states = game.rewards.shape[:3]
    num_actions = game.rewards.shape[3:]
    dtype = game.rewards.dtype

    def step(carry: StageCarry, x):
        t, eta_t, is_end, in_stage1, position, length, stage = (x[k] for k in range(7))
        is_end, in_stage1 = is_end > 0.5, in_stage1 > 0.5
        eta = game.eta * eta_t / horizon
        policies = tuple(learner.play(carry.learners[i], carry.prediction[i], eta, 1.0) for i in range(num_players))
        utilities = _per_player_utilities(carry.q, policies)
        learners = tuple(learner.observe(carry.learners[i], policies[i], utilities[i], 1.0) for i in range(num_players))
        joint_sum = carry.joint_sum + joint_product(policies)  # (H, S, A...)
        s1 = game.initial_state

        def at_start(quantities):
            return jnp.stack([c[0, :, s1] for c in quantities])  # (3, N)

        def stage1_update():
            # Stage 1's kernel points to stage 1 itself: recompute from the stage-1 prefix.
            current = stage_index_quantities(game.rewards, game.transitions, joint_sum / position, None)
            row = (position - 1).astype(jnp.int32)
            return current, carry.stage1_values.at[row].set(at_start(current))

        current, stage1_values = jax.lax.cond(
            in_stage1, stage1_update, lambda: (carry.current, carry.stage1_values)
        )

        def end_of_stage():
            # Q^tau is constant during the stage, so the stage sum of [Q^tau_h pi^t'_h] is
            # <Q^tau_h, sum_t' joint^t'_h>: no per-iteration value sums are needed.
            value_sum = joint_expectation(carry.q, joint_sum[:, None], num_players)  # (H, N, S)
            q_next = stage_q_update(game.rewards, game.transitions, value_sum, length)
            next_current = stage_index_quantities(game.rewards, game.transitions, joint_sum / length, current)
            uniform = tuple(jnp.full((horizon, num_states, a), 1.0 / a, dtype) for a in num_actions)
            # The reset of pi to uniform only feeds the next prediction: [Q^{tau+1} uniform_{-i}].
            prediction = _per_player_utilities(q_next, uniform) if optimistic else carry.prediction
            row = (stage + 1).astype(jnp.int32)
            stage_values = carry.stage_values.at[row].set(at_start(next_current))
            return q_next, next_current, prediction, stage_values

        def within_stage():
            return carry.q, current, (utilities if optimistic else carry.prediction), carry.stage_values

        # Only what the value update changes goes through the branch; the restarts are selects,
        # which fuse with their producers instead of copying the whole carry.
        q, current, prediction, stage_values = jax.lax.cond(is_end, end_of_stage, within_stage)
        fresh = tuple(learner.init((horizon, num_states), a, dtype) for a in num_actions)
        learners = jax.tree_util.tree_map(lambda new, old: jnp.where(is_end, new, old), fresh, learners)
        joint_sum = jnp.where(is_end, 0.0, joint_sum)
        new_carry = StageCarry(learners, prediction, q, joint_sum, current, stage_values, stage1_values)
        return new_carry, ({"policies": policies} if record else {})

    return step


def _chunk(algorithm: Algorithm, optimistic: bool, record: bool, game: GameArrays, carry, xs):
    make = _smooth_step if algorithm.value_update == "smooth" else _stage_step
    return jax.lax.scan(make(algorithm, optimistic, record, game), carry, xs)


@lru_cache(maxsize=None)
def compiled_chunk(algorithm: Algorithm, optimistic: bool, record: bool, batched: bool):
    """The jitted function ``(game, carry, xs) -> (carry, outputs)`` scanning one chunk of iterations.

    With ``batched``, ``game`` and ``carry`` carry a leading run axis (``vmap``); ``xs`` (the
    iteration schedule) is shared by all runs.
    """

    def fn(game, carry, xs):
        return _chunk(algorithm, optimistic, record, game, carry, xs)

    if batched:
        fn = jax.vmap(fn, in_axes=(0, 0, None))
    return jax.jit(fn, donate_argnums=(1,), compiler_options=_compiler_options())


def _compiler_options() -> dict:
    """Per-function XLA options (the caller's global flags stay untouched).

    On the CPU, XLA's concurrency-optimised scheduler spreads the loop body's many tiny kernels
    over threads; for this sequential loop that doubles the CPU time for no speed-up
    (benchmarks/README.md). Other backends do not know the option.
    """
    if jax.default_backend() == "cpu":
        return {"xla_cpu_enable_concurrency_optimized_scheduler": False}
    return {}


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
