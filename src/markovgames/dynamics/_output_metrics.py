r"""Exact value and certified CE/CCE bounds of the output policy, for every prefix, in O(T).

The output policies (Algorithms 3 and 4, docs/explanation.md, "The output policies") play through a hidden index chain
``j_1 ~ mu_{t_0}, j_{h+1} ~ mu_{j_h}``; at step ``h`` everybody plays ``pi^{j_h}_h``. Every
quantity below is an index recursion (docs/gaps.md), per player ``i``:

* value      :math:`V^t_h(s) = \sum_j \mu_t(j) [(r_h + P_h V^j_{h+1}) \pi^j_h](s)`,
* CCE bound  :math:`B^t_h(s) = \max_b \sum_j \mu_t(j) [(r_h + P_h B^j_{h+1}) \pi^j_{h,-i}](s, b)`,
* CE bound   :math:`D^t_h(s)[a,b] = \sum_j \mu_t(j) \sum_{a_{-i}} \pi^j_h(a, a_{-i}|s)
  [r_h(s,b,a_{-i}) + P_h(s,b,a_{-i})\cdot W^j_{h+1}]`, :math:`W^t_h(s) = \sum_a \max_b D^t_h(s)[a,b]`,

with ``V_H = B_H = W_H = 0``; the bounds reveal the index to the deviator, so they upper-bound
the true best-deviation values (the recursions in the proofs of Lemmas 1 and 3).

Smooth output (Algorithm 3, ``mu_t(j) = alpha_t^j``): each sum is a running average
``X^t = (1 - alpha_t) X^{t-1} + alpha_t x^t`` of a per-iteration term ``x^t`` that only needs the
``t``-th policy and the step-``(h+1)`` quantities of index ``t`` — so the whole curve is O(T).

Stage output (Algorithm 4): ``mu_t`` is uniform over the stage before ``t``'s stage (stage 1 over
itself), so every index of one stage has the same quantities. They are computed from the stage
average of the joint product policies, ``Jbar_h(s, a) = mean_{j in stage} prod_k pi^j_{h,k}(s, a_k)``,
once per stage; during stage 1 (which refers to itself) they are recomputed each iteration from
the stage-1 prefix. The output after ``T'`` iterations mixes over ``t_0 ~ Unif{1..T'}``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .._small_axes import small_max, small_sum
from ._tensor import (
    joint_expectation,
    joint_product,
    marginal_expectation,
    others_expectation,
    swap_expectation,
)
from ._transitions import (
    SparseStep,
    apply_transition,
    kernel_step,
    scanned_step,
    sparse_transition_parts,
    step_inputs,
)

__all__ = ["RunningAverages", "stacked_targets", "smooth_metric_step", "stage_index_quantities", "product_policy_values"]

#: `stage_index_quantities` loops over the steps (rather than unrolling them) when one
#: step's rewards have more entries than this.
_SCAN_STEPS_ABOVE_ENTRIES = 4096


def stacked_targets(r_h, p_h, next_values, run_axes: int):
    """``r_h + P_h X`` for several stacked next-step quantities ``X`` (each ``(N, S', R)``), one contraction."""
    num_players = r_h.shape[0]
    if isinstance(p_h, SparseStep):
        # One gather-and-accumulate per vector; each quantity's are stacked on their own, so no
        # consumer slices (and recomputes) an accumulation it does not use.
        parts = sparse_transition_parts(p_h, jnp.concatenate(next_values, axis=0), run_axes)
        return tuple(r_h + jnp.stack(parts[k * num_players : (k + 1) * num_players]) for k in range(len(next_values)))
    moved = apply_transition(p_h, jnp.concatenate(next_values, axis=0), run_axes)
    return tuple(r_h + moved[k * num_players : (k + 1) * num_players] for k in range(len(next_values)))


class RunningAverages(NamedTuple):
    """Algorithm 3's running averages over ``j <= t`` at one step ``h`` (or stacked over the steps).

    ``m``: per player ``(S, A_i[, R])``, the CCE average before the max; ``d``: per player
    ``(S, A_i, A_i[, R])``, the CE matrix ``D^t_h``; ``value``: ``(N, S[, R])``, ``V^t_h``.
    """

    m: tuple
    d: tuple
    value: Any


def smooth_metric_step(policies_h, joint_h, alpha, running: RunningAverages, targets, run_axes: int):
    r"""One step ``h`` of the Algorithm-3 recursions at iteration ``t`` (running averages over ``j <= t``).

    Parameters
    ----------
    Every array of a batch ends with the run axis ``R``; a single run's have none (``run_axes``,
    `._tensor`).

    policies_h : per-player ``(S, A_i, R)`` strategies ``pi^t_h``; ``joint_h`` their product ``(S, A..., R)``.
    alpha : ``alpha_t``.
    running : the `RunningAverages` after iteration ``t-1``.
    targets : ``(r_h + P_h V^t_{h+1}, r_h + P_h B^t_{h+1}, r_h + P_h W^t_{h+1})``, each ``(N, S, A..., R)``.

    Returns
    -------
    running : the updated `RunningAverages`;
    quantities : ``(value, cce_bound, ce_bound)`` at step ``h`` for index ``t``, each ``(N, S, R)``.
    """
    value_target, cce_target, ce_target = targets
    num_players = len(policies_h)
    action = -1 - run_axes  # the action axis of a policy, and of a CE matrix's "played" axis b
    new_m, new_d, cce_h, ce_h = [], [], [], []
    for i in range(num_players):
        m_i = (1.0 - alpha) * running.m[i] + alpha * others_expectation(cce_target[i], policies_h, i, run_axes)
        u_i = others_expectation(ce_target[i], policies_h, i, run_axes)
        # pi^t(a, a_-i) is a product, so sum_{a_-i} pi(a, a_-i) X(b, a_-i) = pi_i(a) [X pi_-i](b).
        outer = jnp.expand_dims(policies_h[i], action) * jnp.expand_dims(u_i, action - 1)
        d_i = (1.0 - alpha) * running.d[i] + alpha * outer
        new_m.append(m_i)
        new_d.append(d_i)
        cce_h.append(small_max(m_i, action))
        ce_h.append(small_sum(small_max(d_i, action), action))
    value_h = (1.0 - alpha) * running.value + alpha * joint_expectation(value_target, joint_h, num_players, run_axes)
    return RunningAverages(tuple(new_m), tuple(new_d), value_h), (value_h, jnp.stack(cce_h), jnp.stack(ce_h))


def stage_index_quantities(rewards, transitions, joint_avg, next_quantities, run_axes: int):
    r"""Value and certified bounds, at every step, of an index drawn uniformly from one stage.

    ``joint_avg`` (shape ``(H, S, A..., R)``) is the stage average of the joint product policies.
    With ``next_quantities`` (a triple of ``(H, N, S, R)`` arrays: the quantities of the indices the
    chain moves to next) the recursion uses them at step ``h+1``; with ``None`` it is
    self-referential (stage 1, whose kernel points to itself) and uses the step-``(h+1)`` result
    just computed.

    Returns a triple ``(value, cce_bound, ce_bound)`` of ``(H, N, S, R)`` arrays.
    """
    horizon, num_players, num_states = rewards.shape[:3]
    runs = rewards.shape[rewards.ndim - run_axes :]
    zeros = jnp.zeros((num_players, num_states, *runs), rewards.dtype)
    action = -1 - run_axes

    def one_step(r_h, p_h, jbar, nxt):
        value_target, cce_target, ce_target = stacked_targets(r_h, p_h, nxt, run_axes)
        value_h = joint_expectation(value_target, jbar, num_players, run_axes)
        cce_h = jnp.stack(
            [
                jnp.max(marginal_expectation(cce_target[i], jbar, i, num_players, run_axes), axis=action)
                for i in range(num_players)
            ]
        )
        ce_h = jnp.stack(
            [
                jnp.sum(jnp.max(swap_expectation(jbar, ce_target[i], i, num_players, run_axes), axis=action), axis=action)
                for i in range(num_players)
            ]
        )
        return value_h, cce_h, ce_h

    if rewards[0].size > _SCAN_STEPS_ABOVE_ENTRIES:
        # Large games: a loop over the steps, so that one step's intermediates are live at a time
        # (unrolled, XLA kept every step's: 1.3 GB of temporaries on a 10^4-state game).
        def body(nxt, xs):
            r_h, p_h, jbar, later = xs
            own = one_step(r_h, scanned_step(transitions, p_h), jbar, nxt if next_quantities is None else later)
            return own, own

        if next_quantities is None:
            later: tuple[jax.Array, ...] = (zeros[None].repeat(horizon, 0),) * 3  # unused: the chain refers to itself
        else:
            # Step h uses the next stage's quantities at h + 1 (zero beyond the horizon).
            later = tuple(jnp.concatenate([q[1:], zeros[None]], axis=0) for q in next_quantities)
        _, out = jax.lax.scan(body, (zeros, zeros, zeros), (rewards, step_inputs(transitions), joint_avg, later), reverse=True)
        return out

    # Every step's entry is replaced below (from the last step back).
    out_v, out_b, out_w = [zeros] * horizon, [zeros] * horizon, [zeros] * horizon
    nxt = (zeros, zeros, zeros)
    for h in range(horizon - 1, -1, -1):
        if next_quantities is not None:
            nxt = (
                (next_quantities[0][h + 1], next_quantities[1][h + 1], next_quantities[2][h + 1])
                if h + 1 < horizon
                else (zeros, zeros, zeros)
            )
        out_v[h], out_b[h], out_w[h] = one_step(rewards[h], kernel_step(transitions, h), joint_avg[h], nxt)
        nxt = (out_v[h], out_b[h], out_w[h])
    return jnp.stack(out_v), jnp.stack(out_b), jnp.stack(out_w)


def product_policy_values(rewards, transitions, policies, initial_state_values, run_axes: int):
    r"""Value and best-response value at every state of the product Markov policy ``policies``
    (per player ``(H, S, A_i[, R])``: the last iterate :math:`\pi^t` itself, no index chain).

    Backward induction: :math:`V_h(s) = [(r_h + P_h V_{h+1}) \pi_h](s)` and, per player ``i``,
    :math:`B_{h,i}(s) = \max_b [(r_{h,i} + P_h B_{h+1,i}) \pi_{h,-i}](s, b)` (player ``i``'s best
    response to the others' policy), with ``V_H = B_H = 0``: the single-index case of the value
    and certified CCE recursions. The Nash gap is :math:`\max_i (B_i - V_i)` at ``s_1``.

    ``initial_state_values(x)`` picks ``x[:, s_1]`` of every run; returns ``(2, N[, R])``: the
    values and the best-response values at ``s_1``.
    """
    horizon, num_players, num_states = rewards.shape[:3]
    runs = rewards.shape[rewards.ndim - run_axes :]
    action = -1 - run_axes
    zeros = jnp.zeros((num_players, num_states, *runs), rewards.dtype)

    def one_step(r_h, p_h, pol_h, nxt):
        value_target, br_target = stacked_targets(r_h, p_h, nxt, run_axes)
        value_h = joint_expectation(value_target, joint_product(pol_h, run_axes), num_players, run_axes)
        br_h = jnp.stack([small_max(others_expectation(br_target[i], pol_h, i, run_axes), action) for i in range(num_players)])
        return value_h, br_h

    if horizon > _UNROLL_STEPS:

        def body(nxt, xs):
            r_h, p_h, pol_h = xs
            own = one_step(r_h, scanned_step(transitions, p_h), pol_h, nxt)
            return own, None

        top, _ = jax.lax.scan(body, (zeros, zeros), (rewards, step_inputs(transitions), policies), reverse=True)
    else:
        top = (zeros, zeros)
        for h in range(horizon - 1, -1, -1):
            top = one_step(rewards[h], kernel_step(transitions, h), tuple(p[h] for p in policies), top)
    return jnp.stack([initial_state_values(top[0]), initial_state_values(top[1])])


#: `product_policy_values` unrolls its steps up to this horizon and scans beyond.
_UNROLL_STEPS = 8
