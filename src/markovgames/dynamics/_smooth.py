r"""The smooth value update (Mao et al. 2024, Algorithm 1) and its output policy (Algorithm 3).

Step sizes :math:`\alpha_t = (H+1)/(H+t)` and the learners' weights :math:`w_j = \binom{H+j-1}{H}`
(decay :math:`\rho_t = w_{t-1}/w_t`; [`markovgames.dynamics`][markovgames.dynamics] schedules). Per iteration ``t``:

1. ``pi^t_i, state_i = play(state_i, prediction_i = u^{t-1}_i, eta, rho_t)`` for every ``(h, s, i)``;
2. for ``h = H-1 .. 0``:
   :math:`Q^t_h = (1-\alpha_t) Q^{t-1}_h + \alpha_t (r_h + P_h V^t_{h+1})` with
   :math:`V^t_{h+1}(s') = \langle Q^t_{h+1}(s', \cdot), \pi^t_{h+1}(s', \cdot)\rangle` (eq. (4)), and in
   the same pass the Algorithm-3 recursions of the output policy's value and certified bounds
   (`._output_metrics`), with one transition contraction for all of them;
3. ``u^t_i = [Q^t_i pi^t_{-i}]``, ``state_i = observe(state_i, u^t_i, rho_t)``.

The rate ``eta`` of step 1 is each player's ``c_i f(t)`` (`._interplay`: step-size schedules, rates
per player); alternating updates change step 3 and two-query learners the prediction of step 1
(`._interplay`); with ``regret``, the players' regret averages move with ``alpha_t`` too (`._regret`).

The output policy (Algorithm 3) starts its index chain at ``t_0 = T`` and moves with
:math:`\mu_t(j) = \alpha_t^j`; its value and bounds after ``T' = t`` iterations are emitted at
every iteration. The paper's lemma :math:`Q^t_h = r_h + P_h V^t_{h+1}` (``V`` the output policy's
value) is checked in the loop: the carry keeps the largest residual.

**Averaging.** `SMOOTH` is the paper's update. `SMOOTH_UNIFORM` (``smooth-uniform``) and
`SMOOTH_LINEAR` (``smooth-linear``) are the same update and output policy with the order ``k`` of
``alpha_t = (k+1)/(k+t)`` and ``w_j = binom(k+j-1, k)`` set to 0 (uniform averaging:
``alpha_t = 1/t``, every ``w_j = 1``, so a learner's sums are the textbook unweighted sums) or 1
(linear averaging: ``alpha_t = 2/(t+1)``, ``w_j = j``, the learners' sums and the output average
both weighted by ``j`` as in Linear CFR; CFR+'s linear average of unweighted RM+ iterates is not
this) instead of ``H`` (`markovgames._schedules`).
The lemma ``Q^t_h = r_h + P_h V^t_{h+1}`` holds for every such ``alpha`` (it needs only
``alpha_1 = 1`` and the output policy's ``alpha_t^j`` from the same ``alpha``), so the
certified bounds are certified for each averaging; Theorem 1's rate is proved for ``k = H`` only.
On a one-state game with ``H = 1``, ``Q^t = r`` at every ``t`` and ``hedge+smooth-uniform`` is
optimistic Hedge, ``rm-plus+smooth-uniform`` predictive RM+ (PRM+; RM+ with ``--no-optimism``).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from .._schedules import smoothing_order, theory_eta_smooth
from .._small_axes import small_max
from ..learners import LearnerSpec
from ._feedback import NEXT_STATES, OTHERS, PROPOSALS, Estimator, chunk_draws
from ._guard import guard_tolerance, strategy_violation
from ._interplay import SIMULTANEOUS, Interplay, observe_round, player_rates, proposed_predictions
from ._output_metrics import (
    RunningAverages,
    product_policy_values,
    smooth_metric_step,
    stacked_targets,
)
from ._regret import RegretCarry, init_regret, regret_step
from ._tensor import joint_expectation, joint_product
from ._transitions import kernel_step, scanned_step, step_inputs
from ._value_update import (
    SEQUENTIAL_BUFFER_BYTES,
    GameArrays,
    ValueUpdate,
    at_initial_state,
    blocked_scan,
    device_zeros,
    learner_for,
    segmented_scan,
    sequential_block,
)

__all__ = [
    "SMOOTH",
    "SMOOTH_UNIFORM",
    "SMOOTH_LINEAR",
    "SmoothUpdate",
    "SmoothCarry",
    "SmoothMetricsCarry",
    "smooth_q_update",
]

#: Steps of the backward pass are unrolled up to this horizon, scanned beyond it.
_UNROLL_HORIZON = 8


def smooth_q_update(q_prev: jax.Array, target: jax.Array, alpha) -> jax.Array:
    """``(1 - alpha_t) Q^{t-1}_h + alpha_t target`` (Algorithm 1, value update)."""
    return (1.0 - alpha) * q_prev + alpha * target


class SmoothCarry(NamedTuple):
    """The smooth update's loop state, with one run's shapes (inside the loop, a short float64
    game's per-step arrays are tuples over ``h``: `split_steps`)."""

    learners: tuple
    prediction: tuple  # per player (H, S, A_i): u^{t-1}
    q: jax.Array | tuple  # (H, N, S, A...), or its steps (split_steps)
    running_m: tuple  # per player (H, S, A_i)
    running_d: tuple  # per player (H, S, A_i, A_i)
    running_value: jax.Array | tuple  # (H, N, S), or its steps (split_steps)
    identity_residual: jax.Array  # () max |Q^t_h - (r_h + P_h V^t_{h+1})| so far
    regret: RegretCarry | tuple = ()  # the players' regret averages (`._regret`), () unless asked for
    # Per player (H, S, A_i): the weighted average of the iterates, bar pi^t = (1 - alpha_t)
    # bar pi^{t-1} + alpha_t pi^t; () unless asked for (`Interplay.average`).
    average: tuple = ()


class SmoothMetricsCarry(NamedTuple):
    """The output policy's running averages alone (certifying a given policy sequence)."""

    running_m: tuple
    running_d: tuple
    running_value: jax.Array


class StepInputs(NamedTuple):
    """Step ``h``'s inputs to the backward pass (`_backward_pass`), one run's shapes."""

    rewards: Any  # r_h (N, S, A...)
    transitions: Any  # P_h: a dense step or a SparseStep (`._transitions`)
    policies: tuple  # per player (S, A_i): pi^t_h
    running: RunningAverages  # Algorithm 3's averages after iteration t-1
    q: Any  # Q^{t-1}_h (N, S, A...); None when certifying a given policy sequence
    estimate: Any = None  # the value update's empirical kernel at h under sampled feedback (`._feedback`), else None


class StepOutputs(NamedTuple):
    """Step ``h``'s results of the backward pass besides the quantities passed to step ``h - 1``."""

    running: RunningAverages  # after iteration t
    q: Any = None  # Q^t_h
    residual: Any = None  # max |Q^t_h - (r_h + P_h V^t_{h+1})| at this step (per run)


def splits_steps(rewards) -> bool:
    """Whether the loop carries one array per step (`split_steps`): float64 games of up to
    ``_UNROLL_HORIZON`` steps.

    It removes the per-iteration concatenation of the steps' results and the copies of the loop
    carry, which on tiny games is where the time goes. Float32 keeps the stacked arrays: the split
    form let XLA fuse its running averages into a less accurate order, outside the documented
    float32 tolerance (benchmarks/README.md, "Smooth single runs on tiny games").
    """
    return rewards.shape[0] <= _UNROLL_HORIZON and rewards.dtype == jnp.float64


def split_steps(carry):
    """The carry with its per-step arrays (``q``, the running metric arrays) as tuples over ``h``."""
    horizon = carry.running_value.shape[0]

    def per_step(x):
        return tuple(x[h] for h in range(horizon))

    split = carry._replace(
        running_m=tuple(per_step(m) for m in carry.running_m),
        running_d=tuple(per_step(d) for d in carry.running_d),
        running_value=per_step(carry.running_value),
    )
    return split._replace(q=per_step(carry.q)) if isinstance(carry, SmoothCarry) else split


def stack_steps(carry):
    """The inverse of `split_steps`."""
    stacked = carry._replace(
        running_m=tuple(jnp.stack(m) for m in carry.running_m),
        running_d=tuple(jnp.stack(d) for d in carry.running_d),
        running_value=jnp.stack(carry.running_value),
    )
    return stacked._replace(q=jnp.stack(carry.q)) if isinstance(carry, SmoothCarry) else stacked


def _step_size(t, order: int):
    """``(alpha_t, rho_t)`` for the traced iteration number ``t`` and the static order ``k`` of the
    averaging (``H`` for the paper's)."""
    if order == 0:  # alpha_t = 1/t; rho_t = 1, but rho_1 = 0 (the formula's 0/0)
        return 1.0 / t, jnp.where(t > 1, 1.0, 0.0).astype(t.dtype)
    return (order + 1.0) / (order + t), (t - 1.0) / (order + t - 1.0)


def _backward_pass(backward, game: GameArrays, carry, per_step_inputs, num_top: int, run_axes: int, estimate=None):
    """Run ``backward`` over the steps ``h = H-1 .. 0`` and return ``(top, per_step_outputs)``.

    ``backward(nxt, xs)`` takes the step-``(h+1)`` quantities ``nxt`` (``num_top`` arrays of
    ``(N, S, R)``) and step ``h``'s `StepInputs` ``xs`` (``per_step_inputs(h)`` with the step's
    rewards and transitions), and returns ``(quantities_h, StepOutputs)``. Where `splits_steps`, the carry is per step and the
    steps are unrolled, each producing new arrays of its own (no concatenation of the steps, no
    copy of the loop carry); otherwise the pass is a scan over the stacked arrays. The per-step
    outputs come back as tuples over ``h`` (split) or stacked along a leading step axis.
    ``estimate``: the value update's empirical kernel (sampled feedback), given to ``backward`` per
    step as ``xs.estimate``.
    """
    horizon, num_players, num_states = game.rewards.shape[:3]
    runs = game.rewards.shape[game.rewards.ndim - run_axes :]
    zeros = jnp.zeros((num_players, num_states, *runs), game.rewards.dtype)
    top = (zeros,) * num_top
    if splits_steps(game.rewards):
        outputs = [None] * horizon
        for h in range(horizon - 1, -1, -1):
            xs = per_step_inputs(h)._replace(rewards=game.rewards[h], transitions=kernel_step(game.transitions, h))
            if estimate is not None:
                xs = xs._replace(estimate=kernel_step(estimate, h))
            top, outputs[h] = backward(top, xs)
        return top, outputs
    stacked = per_step_inputs(None)._replace(rewards=game.rewards, transitions=step_inputs(game.transitions))
    if estimate is not None:
        stacked = stacked._replace(estimate=step_inputs(estimate))

    def scanned(xs):
        xs = xs._replace(transitions=scanned_step(game.transitions, xs.transitions))
        return xs if estimate is None else xs._replace(estimate=scanned_step(estimate, xs.estimate))

    return jax.lax.scan(
        lambda nxt, xs: backward(nxt, scanned(xs)),
        top,
        stacked,
        reverse=True,
        unroll=horizon if horizon <= _UNROLL_HORIZON else 1,
    )


def _per_step(carry, policies, with_q: bool):
    """Step ``h``'s `StepInputs` (without rewards and transitions, which `_backward_pass` adds):
    slices of the carry's per-step arrays and of the policies (``h = None``: all the steps)."""

    def inputs(h):
        if h is None:
            running = RunningAverages(carry.running_m, carry.running_d, carry.running_value)
            return StepInputs(None, None, policies, running, carry.q if with_q else None)
        running = RunningAverages(
            tuple(m[h] for m in carry.running_m), tuple(d[h] for d in carry.running_d), carry.running_value[h]
        )
        return StepInputs(None, None, tuple(p[h] for p in policies), running, carry.q[h] if with_q else None)

    return inputs


def _gather_steps(outputs, split: bool) -> RunningAverages:
    """The per-step `RunningAverages` as the carry keeps them: tuples over ``h`` per player
    (split form, ``outputs`` a list of `StepOutputs`) or the stacked arrays a scan returns."""
    if not split:
        return outputs.running
    running_m = tuple(zip(*[o.running.m for o in outputs], strict=True))
    running_d = tuple(zip(*[o.running.d for o in outputs], strict=True))
    return RunningAverages(running_m, running_d, tuple(o.running.value for o in outputs))


def _metrics_out(top_quantities, initial_state, run_axes: int) -> jax.Array:
    """One ``(3, N[, R])`` output per iteration: value, certified CCE bound, certified CE bound at ``s_1``."""
    return jnp.stack([at_initial_state(x, initial_state, run_axes) for x in top_quantities])


def _values_where(game: GameArrays, policies, flag, run_axes: int):
    """The product policy's ``(2, N[, R])`` values and best-response values at ``s_1`` where ``flag``, else zeros."""
    runs = game.rewards.shape[game.rewards.ndim - run_axes :]

    def values():
        return product_policy_values(
            game.rewards, game.transitions, policies, lambda x: at_initial_state(x, game.initial_state, run_axes), run_axes
        )

    return jax.lax.cond(flag, values, lambda: jnp.zeros((2, game.rewards.shape[1], *runs), game.rewards.dtype))


def _smooth_step(
    learner_spec: LearnerSpec,
    optimistic: bool,
    record: bool,
    last_iterate: bool,
    game: GameArrays,
    run_axes: int,
    kind: str = "smooth",
    interplay: Interplay = SIMULTANEOUS,
    predrawn: bool = False,
    average_how: str = "marked",
):
    """One iteration of the smooth dynamics: ``(carry, (t, flag, average_flag)) -> (carry, outputs)``,
    the flags ``None`` unless the last iterate (``last_iterate``) or the weighted average
    (``interplay.average``, ``average_how="marked"``) is evaluated where they are set (see
    [`ValueUpdate.run_chunk`][markovgames.dynamics.ValueUpdate.run_chunk]); the weighted average,
    which the carry holds with ``interplay.average``, is evaluated in every iteration with
    ``average_how="every"``, and by `_scan_split` after the marked ones with ``"segments"``;
    with ``predrawn``, ``(carry, (x, drawn)) -> ...``: the iteration's draws made before the loop
    (`._feedback.chunk_draws`)."""
    learner = learner_for(learner_spec, run_axes)
    horizon, num_players = game.rewards.shape[:2]
    order = smoothing_order(kind, horizon)
    split = splits_steps(game.rewards)
    # A user's learner: where its first strategy off the simplex is, per iteration (`_guard`).
    guard_tol = guard_tolerance(learner_spec, game.rewards.dtype)
    # The exact mode of sampled feedback is full information's code, bit for bit.
    sampled = interplay.feedback.estimates

    def step(carry: SmoothCarry, x):
        x, drawn = x if predrawn else (x, None)
        row, flag, average_flag = x
        t = row[0]
        factor, next_factor = (row[1], row[2]) if interplay.scheduled else (None, None)
        alpha, rho = _step_size(t, order)
        rates = player_rates(game.eta, factor, num_players)
        # Full information, or this iteration's estimates (`._feedback`).
        estimator = Estimator(interplay.feedback, game, t, run_axes, drawn) if sampled else None
        predictions, proposals = carry.prediction, ()
        if learner.propose is not None:
            # A two-query learner: the prediction is the utility at the proposed strategies, under
            # the current estimate Q^{t-1} (the rewards at t = 1: Q^0 is not an estimate).
            q_prev = jnp.stack(carry.q) if isinstance(carry.q, tuple) else carry.q
            q_prev = jnp.where(t == 1, game.rewards, q_prev)
            predictions, proposals = proposed_predictions(learner, carry.learners, rates, rho, q_prev, run_axes, estimator)
        played = [learner.play(carry.learners[i], predictions[i], rates[i], rho) for i in range(num_players)]
        policies = tuple(p for p, _ in played)

        def backward(nxt, xs: StepInputs):
            # nxt: V^t_{h+1} of the algorithm, then the output policy's value and bounds at h + 1.
            if xs.estimate is None:
                q_target, *metric_targets = stacked_targets(xs.rewards, xs.transitions, nxt, run_axes)
            else:
                # Sampled feedback: the algorithm's target through the empirical kernel; the
                # output policy's, which the learners never see, through the game's.
                (q_target,) = stacked_targets(xs.rewards, xs.estimate, nxt[:1], run_axes)
                metric_targets = list(stacked_targets(xs.rewards, xs.transitions, nxt[1:], run_axes))
            q_new = smooth_q_update(xs.q, q_target, alpha)
            joint_h = joint_product(xs.policies, run_axes)
            alg_h = joint_expectation(q_new, joint_h, num_players, run_axes)  # V^t_h of the algorithm
            running, quantities = smooth_metric_step(xs.policies, joint_h, alpha, xs.running, metric_targets, run_axes)
            # The paper's lemma: Q^t_h = r_h + P_h V^t_{h+1} with V the output policy's value.
            # Per run; by slices where axes are short, since a reduction to the minor run axis
            # is a strided scalar loop on the CPU (it was the batch's most expensive kernel).
            gap = jnp.abs(q_new - metric_targets[0])
            residual = small_max(gap, tuple(range(q_new.ndim - 1))) if run_axes else jnp.max(gap)
            return (alg_h, *quantities), StepOutputs(running, q_new, residual)

        estimate = estimator.kernel(game.transitions) if estimator is not None else None
        top, outputs = _backward_pass(backward, game, carry, _per_step(carry, policies, with_q=True), 4, run_axes, estimate)
        running = _gather_steps(outputs, split)
        if split:
            q = tuple(o.q for o in outputs)
            stacked_q = jnp.stack(q)
            residual = jnp.stack([o.residual for o in outputs])
        else:
            q, residual = outputs.q, outputs.residual
            stacked_q = q
        following = None
        if interplay.order == "alternating":
            _, next_rho = _step_size(t + 1, order)
            next_rates = player_rates(game.eta, next_factor, num_players)
            following = (lambda i, u: u if optimistic else carry.prediction[i], next_rates, next_rho)
        utilities, learners = observe_round(
            learner,
            tuple(s for _, s in played),
            policies,
            stacked_q,
            rates,
            rho,
            run_axes,
            interplay.order,
            following,
            estimator,
        )
        metrics = _metrics_out(top[1:], game.initial_state, run_axes)
        average = carry.average
        if interplay.average:
            # The update's own weights: the alpha_t of its Q update (`markovgames._schedules.average_weights`).
            average = tuple((1.0 - alpha) * a + alpha * p for a, p in zip(carry.average, policies, strict=True))
        regret = carry.regret
        if interplay.regret:
            # Two more rows of the metrics: each player's largest average external and swap regret.
            regret, regret_rows = regret_step(cast(RegretCarry, carry.regret), policies, utilities, alpha, run_axes)
            metrics = jnp.concatenate([metrics, regret_rows])
        new_carry = SmoothCarry(
            learners,
            utilities if optimistic else carry.prediction,
            q,
            running.m,
            running.d,
            running.value,
            jnp.maximum(carry.identity_residual, jnp.max(residual, axis=0)),
            regret,
            average,
        )
        out: dict[str, Any] = {"metrics": metrics}
        if record:
            out["policies"] = policies
        if last_iterate:
            out["last_iterate"] = _values_where(game, policies, flag, run_axes)
        if interplay.average and average_how == "every":
            out["weighted_average"] = _average_value(game, average, run_axes)
        elif interplay.average and average_how == "marked":
            out["weighted_average"] = _values_where(game, average, average_flag, run_axes)
        if guard_tol is not None:
            # A two-query learner's proposals first, then the strategies played (`raise_violation`).
            out["violation"] = strategy_violation(proposals + policies, run_axes, guard_tol)
        return new_carry, out

    return step


def _certify_step(game: GameArrays, run_axes: int, kind: str = "smooth"):
    """One iteration of Algorithm 3's recursions over a given policy: ``(carry, (t, policies)) -> (carry, outputs)``."""
    order = smoothing_order(kind, game.rewards.shape[0])
    split = splits_steps(game.rewards)

    def step(carry: SmoothMetricsCarry, x):
        row, policies = x
        alpha, _ = _step_size(row[0], order)

        def backward(nxt, xs: StepInputs):
            targets = stacked_targets(xs.rewards, xs.transitions, nxt, run_axes)
            joint_h = joint_product(xs.policies, run_axes)
            running, quantities = smooth_metric_step(xs.policies, joint_h, alpha, xs.running, targets, run_axes)
            return quantities, StepOutputs(running)

        top, outputs = _backward_pass(backward, game, carry, _per_step(carry, policies, with_q=False), 3, run_axes)
        running = _gather_steps(outputs, split)
        metrics_carry = SmoothMetricsCarry(running.m, running.d, running.value)
        return metrics_carry, {"metrics": _metrics_out(top, game.initial_state, run_axes)}

    return step


def _average_value(game: GameArrays, average, run_axes: int):
    """``(2, N[, R])``: the value and best-response values at ``s_1`` of the weighted average ``average``."""
    return product_policy_values(
        game.rewards, game.transitions, average, lambda x: at_initial_state(x, game.initial_state, run_axes), run_axes
    )


def _scan_split(step, game: GameArrays, carry, xs, per_iteration_bytes: int, average=None, run_axes: int = 0):
    """The scan of ``step`` over ``xs``, with the carry in the per-step form where
    `splits_steps`, in blocks where that keeps the inner loop on XLA's sequential path
    (`blocked_scan`; ``per_iteration_bytes``: the largest output's size).

    ``average`` (the rows of `segment_ends`, or ``None``): the weighted average of the iterates,
    which the carry holds, evaluated after those rows (`segmented_scan`: its iterations test
    nothing) as ``out["weighted_average"]``, its value and best-response values
    ``(capacity, 2, N[, R])``, one row per stretch."""
    split = splits_steps(game.rewards)
    carry = split_steps(carry) if split else carry
    block = sequential_block(game, carry, per_iteration_bytes)
    if average is None:
        carry, out = blocked_scan(step, carry, xs, block)
    else:
        at_end = lambda c: _average_value(game, c.average, run_axes)  # noqa: E731
        carry, out, values = segmented_scan(step, carry, xs, average, at_end, block)
        out = {**out, "weighted_average": values}
    return (stack_steps(carry) if split else carry), out


def _largest_output_bytes(game: GameArrays, record: bool, run_axes: int, regret: bool = False) -> int:
    """The bytes per iteration of the largest per-iteration output: the metrics ``(3, N[, R])`` (5 rows with regret),
    or with ``record`` a player's policy ``(H, S, A_i[, R])``."""
    rewards = game.rewards
    runs = math.prod(rewards.shape[rewards.ndim - run_axes :])
    horizon, num_players, num_states = rewards.shape[:3]
    actions = rewards.shape[3 : rewards.ndim - run_axes]
    sizes = [(5 if regret else 3) * num_players] + ([horizon * num_states * max(actions)] if record else [])
    return max(sizes) * runs * rewards.dtype.itemsize


#: name -> (description, citation) of each averaging (`markovgames._schedules.SMOOTH_KERNELS`).
_AVERAGINGS = {
    "smooth": (
        "alpha_t = (H+1)/(H+t), learners weighted by w_j = binom(H+j-1, H); output policy Algorithm 3",
        "Mao et al., L4DC 2024, Algorithms 1 and 3",
    ),
    "smooth-uniform": (
        "uniform averaging: alpha_t = 1/t, every w_j = 1 (textbook OFTRL, Hedge, RM+, PRM+); output policy Algorithm 3",
        "Mao et al., L4DC 2024, Algorithms 1 and 3 with alpha_t = 1/t",
    ),
    "smooth-linear": (
        "linear averaging: alpha_t = 2/(t+1), w_j = j (utilities and output both weighted by j, as Linear CFR); "
        "output policy Algorithm 3",
        "Mao et al., L4DC 2024, Algorithms 1 and 3 with alpha_t = 2/(t+1); Brown and Sandholm, AAAI 2019 (Linear CFR)",
    ),
}


class SmoothUpdate(ValueUpdate):
    """Algorithm 1's smooth value update with Algorithm 3's output policy (see the module docstring).

    ``averaging``: the kernel's name, ``"smooth"`` (the paper's ``alpha_t = (H+1)/(H+t)``),
    ``"smooth-uniform"`` or ``"smooth-linear"``; it is the value update's name too.
    """

    per_iteration_metrics = True
    average_in_segments = True

    def __init__(self, averaging: str = "smooth"):
        if averaging not in _AVERAGINGS:
            raise ValueError(f"unknown averaging {averaging!r}; choose one of: {', '.join(_AVERAGINGS)}")
        self.name = self.index_kernel = averaging
        self.description, self.citation = _AVERAGINGS[averaging]

    def theory_rate(self, num_players, horizon, max_actions):
        # Theorem 1's rate (proved for BM-OFTRL; used for every learner with this update).
        return theory_eta_smooth(num_players, horizon, max_actions), False

    def schedule(self, T, horizon, num_players, per_stage_theory, step_schedule=None):
        # alpha_t and rho_t are computed from t inside the loop; the learning rates' factors
        # f(t) come with each chunk (`chunk_inputs`).
        return step_schedule

    def chunk_inputs(self, schedule, done, size, dtype):
        # Per iteration [t], and with a step schedule [t, f(t), f(t + 1)]: the rate's factor of
        # this iteration and of the next (alternating updates play the next strategy within the
        # iteration).
        if schedule is None:
            return np.arange(done + 1, done + size + 1, dtype=dtype)[:, None]
        t = np.arange(done + 1, done + size + 2, dtype=np.float64)
        factors = schedule.factors(t)
        return np.stack([t[:-1], factors[:-1], factors[1:]], axis=1).astype(dtype)

    def init_carry(self, learner, shape_key, dtype, schedule, interplay=SIMULTANEOUS, initial=None):
        num_players, horizon, num_states, num_actions = shape_key
        built = learner_for(learner, run_axes=0)
        if initial is None:
            states = tuple(built.init((horizon, num_states, a), dtype) for a in num_actions)
        elif built.init_at is None:  # unreachable: run() checks the learner first
            raise AssertionError(f"learner {learner.name!r} has no init_at")
        else:
            states = tuple(built.init_at(np.asarray(x, dtype), dtype) for x in initial)
        metrics = self.init_certify_carry(shape_key, dtype, schedule)
        regret = (
            init_regret(horizon, num_states, num_actions, lambda shape: device_zeros(shape, dtype)) if interplay.regret else ()
        )
        average = tuple(device_zeros((horizon, num_states, a), dtype) for a in num_actions) if interplay.average else ()
        return SmoothCarry(
            learners=states,
            prediction=tuple(device_zeros((horizon, num_states, a), dtype) for a in num_actions),
            q=device_zeros((horizon, num_players, num_states, *num_actions), dtype),
            running_m=metrics.running_m,
            running_d=metrics.running_d,
            running_value=metrics.running_value,
            identity_residual=device_zeros((), dtype),
            regret=regret,
            average=average,
        )

    def run_chunk(
        self,
        learner,
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
        # A mask that is None is no input of the scan; with "segments", the weighted average's rows
        # end the loop's stretches (`_scan_split`), and the iterations read no mark.
        segments = average is not None and average_how == "segments"
        xs: tuple = (sched, last_iterate, None if segments else average)
        drawn = None
        if interplay.feedback.estimates:
            # The chunk's draws at once where they are small (`CHUNK_DRAW_BYTES`): the same numbers.
            purposes = (OTHERS, NEXT_STATES) + ((PROPOSALS,) if learner.learner().propose is not None else ())
            first_t = sched[0, 0].astype(jnp.int32)
            drawn = chunk_draws(interplay.feedback, game, first_t, size, run_axes, purposes)
        step = _smooth_step(
            learner,
            optimistic,
            record,
            last_iterate is not None,
            game,
            run_axes,
            self.index_kernel,
            interplay,
            drawn is not None,
            average_how,
        )
        xs = xs if drawn is None else (xs, drawn)
        # The inner loop reads its block of draws: they count with its outputs (`sequential_block`).
        per_iteration = _largest_output_bytes(game, record, run_axes, interplay.regret)
        if drawn is not None:
            per_iteration = max(per_iteration, *(x[0].size * x.dtype.itemsize for x in drawn.values()))
        carry, out = _scan_split(step, game, carry, xs, per_iteration, average if segments else None, run_axes)
        if "violation" in out:  # per iteration -> the chunk's first, as [row, code] (`_guard`)
            codes = out["violation"]
            row = jnp.argmax(codes >= 0).astype(jnp.int32)
            out["violation"] = jnp.where(codes[row] >= 0, jnp.stack([row, codes[row]]), jnp.full(2, -1, jnp.int32))
        return carry, out

    def prefix_metrics(self, records, schedule, prefixes):
        return None

    def identity_residual(self, carry):
        return carry.identity_residual

    def init_certify_carry(self, shape_key, dtype, schedule):
        num_players, horizon, num_states, num_actions = shape_key
        return SmoothMetricsCarry(
            running_m=tuple(device_zeros((horizon, num_states, a), dtype) for a in num_actions),
            running_d=tuple(device_zeros((horizon, num_states, a, a), dtype) for a in num_actions),
            running_value=device_zeros((horizon, num_players, num_states), dtype),
        )

    def certify_chunk(self, size, game, carry, sched, policies, run_axes):
        # The policies come in whole (a chunk): the inner loop cannot stay small.
        return _scan_split(
            _certify_step(game, run_axes, self.index_kernel), game, carry, (sched, policies), SEQUENTIAL_BUFFER_BYTES + 1
        )


#: The smooth value update (the paper's averaging).
SMOOTH = SmoothUpdate("smooth")
#: The smooth value update with uniform averaging (``alpha_t = 1/t``, weights 1).
SMOOTH_UNIFORM = SmoothUpdate("smooth-uniform")
#: The smooth value update with linear averaging (``alpha_t = 2/(t+1)``, weights ``j``).
SMOOTH_LINEAR = SmoothUpdate("smooth-linear")
