r"""The discounted smooth value update: learning dynamics on a discounted, infinite-horizon game.

A discounted game (`markovgames.games.DiscountedMarkovGame`) has one stationary layer: one reward
function, one kernel and a discount :math:`\gamma`. Every player runs its learner at every state
(a stationary policy :math:`\pi^t_i(\cdot \mid s)`) and keeps a value estimate
:math:`V^t_i(s)`, with ``V^0 = 0``. Iteration ``t`` (docs/discounted.md, "Learning dynamics",
states where each piece comes from and which were our choices):

1. :math:`Q^t_i = r_i + \gamma P V^{t-1}_i` (the next-state values are the previous iteration's:
   the stationary layer's "next step" is the same layer one iteration earlier);
2. ``pi^t_i, state_i = play(state_i, prediction_i = u^{t-1}_i, eta, rho_t)`` at every state;
3. :math:`V^t_i(s) = (1 - \alpha_t) V^{t-1}_i(s) + \alpha_t \langle \pi^t(\cdot \mid s), Q^t_i(s, \cdot)\rangle`;
4. ``u^t_i = [Q^t_i pi^t_{-i}]``, ``state_i = observe(state_i, u^t_i, rho_t)``;

and, where the run asks for it (``weighted_average``, `Interplay.average`), the state-wise weighted
average iterate :math:`\bar\pi^t_i(s) = (1 - \alpha_t)\bar\pi^{t-1}_i(s) + \alpha_t \pi^t_i(s) =
\sum_{j \le t} \alpha_t^j \pi^j_i(s)`, with :math:`\alpha_t^j = \alpha_j \prod_{k=j+1}^t (1 - \alpha_k)`,
is carried in the loop as the finite-horizon smooth update carries its own (`._smooth`): its
weights are the value update's (`DiscountedSmoothUpdate.average_weights`,
`markovgames._schedules.smooth_average_weights` with the order ``k`` below).

Step sizes :math:`\alpha_t = (k + 1)/(k + t)` and the learners' decay
:math:`\rho_t = w_{t-1}/w_t = (t - 1)/(k + t - 1)` (weights :math:`w_j \propto \alpha_t^j`, the same
proportions as the value update's) for the order ``k`` of the averaging:
``discounted-smooth`` :math:`k = 1/(1-\gamma)` (the effective horizon, not an integer in general),
``discounted-smooth-uniform`` ``k = 0`` (:math:`\alpha_t = 1/t`), ``discounted-smooth-linear``
``k = 1`` (:math:`\alpha_t = 2/(t+1)`). They are computed on the host in float64 and come with
each chunk (`DiscountedSmoothUpdate.chunk_inputs`), so one compiled loop serves every discount.

Step-size schedules, rates per player, alternating updates, two-query learners (whose query is
made under :math:`Q^t`, known before the strategies are played), regret curves and sampled
feedback (``K`` next states from every row for the target, `._feedback`) work as for the
finite-horizon smooth update (`._interplay`). The stage-based update has no discounted form here.

What a run reports: per prefix, the value estimate :math:`V^{T'}_i(\rho)` (cheap, in the loop;
not the value of a policy); at the prefixes asked for (``last_iterate``, ``weighted_average``), the
exact values and best-response values at :math:`\rho` of the last iterate :math:`\pi^{T'}` (of
the weighted average iterate :math:`\bar\pi^{T'}`), computed on the host by the discounted
evaluators (`markovgames.evaluation.discounted_nash_gap`, policy iteration) from the iterates the
loop emits at those prefixes (`DiscountedSmoothUpdate.evaluate_iterates`). There is no correlated
output policy.

Attribution (docs/discounted.md, "Where each piece comes from"): the smooth value update of
Zhang et al. (NeurIPS 2022) and Yang and Ma (ICLR 2023) is stated for finite-horizon games; this
is its discounted analogue, with the effective horizon ``1/(1-gamma)`` for ``H``, and the critic
of the public code of Wei, Lee, Zhang and Luo (COLT 2021). No rate is known here to be proved for
it (`markovgames._papers`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from .._papers import PAPERS
from .._schedules import oftrl_decay, smooth_average_weights, smooth_step_size
from ..evaluation import discounted_nash_gap
from ..learners import LearnerSpec
from ._feedback import NEXT_STATES, OTHERS, PROPOSALS, Estimator, chunk_draws
from ._guard import guard_tolerance, strategy_violation
from ._interplay import SIMULTANEOUS, Interplay, observe_round, player_rates, proposed_predictions
from ._output_metrics import stacked_targets
from ._regret import RegretCarry, init_regret, regret_step
from ._tensor import joint_expectation, joint_product
from ._transitions import SparseKernel, kernel_step
from ._value_update import (
    GameArrays,
    ValueUpdate,
    at_distribution,
    blocked_scan,
    device_zeros,
    learner_for,
    segmented_scan,
    sequential_block,
)

__all__ = [
    "DISCOUNTED_SMOOTH",
    "DISCOUNTED_SMOOTH_UNIFORM",
    "DISCOUNTED_SMOOTH_LINEAR",
    "DiscountedSmoothUpdate",
    "DiscountedCarry",
    "DiscountedSchedule",
    "step_order",
    "as_distributions",
]

#: averaging -> (order k of alpha_t = (k+1)/(k+t), or None for the effective horizon 1/(1-gamma); description).
_AVERAGINGS: dict[str, tuple[int | None, str]] = {
    "discounted-smooth": (
        None,
        "discounted games: Q^t = r + gamma P V^(t-1), V^t = (1-alpha_t) V^(t-1) + alpha_t <pi^t, Q^t>, "
        "alpha_t = (H+1)/(H+t) with H = 1/(1-gamma); last and weighted average iterates",
    ),
    "discounted-smooth-uniform": (
        0,
        "discounted-smooth with uniform averaging: alpha_t = 1/t, every learner weight 1",
    ),
    "discounted-smooth-linear": (
        1,
        "discounted-smooth with linear averaging: alpha_t = 2/(t+1), learner weights w_j = j",
    ),
}

_CITATION = (
    "the discounted analogue of the finite-horizon smooth value update (Zhang, Liu, Wang, Xiong, Li and Bai, NeurIPS "
    "2022; Yang and Ma, ICLR 2023: stated for finite horizons) with H = 1/(1-gamma), the critic of Wei, Lee, Zhang and "
    "Luo's public code (COLT 2021); no rate proved for it is known here; docs/discounted.md says what was verified"
)


def step_order(averaging: str, discount: float) -> float:
    """The order ``k`` of ``alpha_t = (k+1)/(k+t)`` of the discounted ``averaging`` for ``discount``:
    the effective horizon ``1/(1-gamma)`` for ``discounted-smooth``, 0 or 1 for the uniform and linear ones."""
    order = _AVERAGINGS[averaging][0]
    return 1.0 / (1.0 - float(discount)) if order is None else float(order)


class DiscountedSchedule(NamedTuple):
    """What the discounted loop needs before it starts: the order ``k`` of its step sizes and the
    learning rate's schedule (``None``: constant)."""

    order: float
    step_schedule: Any = None


class DiscountedCarry(NamedTuple):
    """The discounted smooth update's loop state, with one run's shapes (the layer axis of length 1
    kept on the learners' arrays, as the finite-horizon loops have their step axis)."""

    learners: tuple
    prediction: tuple  # per player (1, S, A_i): u^{t-1}
    value: jax.Array  # (N, S): V^{t-1}
    last: tuple  # per player (S, A_i): the last iterate pi^(t-1) (uniform before iteration 1); () with `average`
    regret: RegretCarry | tuple = ()  # the players' regret averages (`._regret`), () unless asked for
    # With `Interplay.average`, one array (2 S sum_i A_i[, R]) in place of `last`: the last iterate
    # pi^(t-1), then the weighted average iterate after t - 1 iterations, each player's (S, A_i)
    # flattened in turn (`_iterates`). One array is one kernel per iteration for both, where one
    # array per player for each added a kernel per player: on the two-state game 1.22-1.26x the
    # run without the average, against 1.13-1.17x (benchmarks/README.md, "The discounted average
    # in one array"). () unless asked for.
    average: tuple = ()


def _flat(policies, run_axes: int):
    """Per player ``(S, A_i[, R])`` -> ``(S sum_i A_i[, R])``, the players in turn."""
    return jnp.concatenate([p.reshape(-1, *p.shape[p.ndim - run_axes :]) for p in policies])


def _iterates(flat, num_states: int, num_actions, axis: int = 0) -> tuple[tuple, tuple]:
    """``(last, average)`` per player ``(S, A_i)`` from `DiscountedCarry.average`'s one array
    (its entries along ``axis``: 0 on the device, where a batch's run axis is last, 1 on the host
    for a batch, whose run axis is first), on the device or on the host."""
    ends = np.cumsum([0] + [num_states * a for a in num_actions] * 2)
    parts = [
        flat[(slice(None),) * axis + (slice(int(lo), int(hi)),)].reshape(
            *flat.shape[:axis], num_states, a, *flat.shape[axis + 1 :]
        )
        for lo, hi, a in zip(ends[:-1], ends[1:], list(num_actions) * 2, strict=True)
    ]
    return tuple(parts[: len(num_actions)]), tuple(parts[len(num_actions) :])


def carried_iterates(carry: DiscountedCarry, batched: bool) -> tuple[tuple, tuple | None]:
    """The last iterate and the weighted average iterate (``None`` unless carried) per player
    ``(S, A_i)`` (a batch's ``(R, S, A_i)``) in a loop state copied to the host."""
    if not carry.average:
        return tuple(np.asarray(p) for p in carry.last), None
    shapes = [np.shape(p)[-2:] for p in carry.prediction]  # (1, S, A_i), a batch's (R, 1, S, A_i)
    last, average = _iterates(np.asarray(carry.average[0]), shapes[0][0], [a for _, a in shapes], int(batched))
    return last, average


def _successors_first(transitions, run_axes: int):
    """A dense kernel's layer ``(S, A..., S'[, R])`` with the successor axis first, ``(S', S, A...[, R])``,
    written to memory once (before a chunk's loop), or ``None`` for a sparse kernel.

    Contracted over its last axis inside the loop, the kernel passed in as an argument made XLA's
    CPU dot about five times slower than with the successors first (a plain matrix product):
    150 against 34 microseconds per contraction on a game of 20 states and 4 x 4 x 4 actions."""
    if isinstance(transitions, SparseKernel):
        return None
    layer = transitions[0]
    return jax.lax.optimization_barrier(jnp.moveaxis(layer, layer.ndim - 1 - run_axes, 0))


def _next_values(moved_kernel, values, run_axes: int):
    """``[P V](s, a)`` for per-player values ``V`` ``(N, S'[, R])`` through `_successors_first`'s kernel:
    ``(N, S, A...[, R])``."""
    if not run_axes:
        return jnp.tensordot(values, moved_kernel, axes=([1], [0]))
    out = jax.lax.dot_general(values, moved_kernel, (((1,), (0,)), ((2,), (moved_kernel.ndim - 1,))))
    return jnp.moveaxis(out, 0, -1)  # (R, N, S, A...) -> (N, S, A..., R)


def _discounted_step(
    learner_spec: LearnerSpec,
    optimistic: bool,
    record: bool,
    emit_last: bool,
    game: GameArrays,
    run_axes: int,
    interplay: Interplay,
    predrawn: bool,
    moved_kernel=None,
    average_how: str = "marked",
):
    """One iteration: ``(carry, row) -> (carry, outputs)`` (see the module docstring); ``row`` is
    ``[t, alpha_t, rho_t, rho_(t+1), f(t), f(t+1)]`` (`DiscountedSmoothUpdate.chunk_inputs`), with
    ``predrawn`` ``(row, drawn)``: the iteration's draws made before the loop. ``moved_kernel``:
    the dense kernel with its successors first (`_successors_first`), used under full information.
    ``emit_last``: emit the last iterate at every iteration (the loop keeps the evaluated
    prefixes' rows); with ``interplay.average`` the weighted average is carried, and emitted at
    every iteration unless ``average_how`` is ``"segments"``."""
    learner = learner_for(learner_spec, run_axes)
    num_players, num_states = game.rewards.shape[1:3]
    num_actions = game.rewards.shape[3 : 3 + num_players]
    guard_tol = guard_tolerance(learner_spec, game.rewards.dtype)
    sampled = interplay.feedback.estimates
    if game.discount is None or game.initial_distribution is None:  # unreachable: device_game sets both
        raise AssertionError("a discounted run needs its games' discounts and initial distributions")
    discount, distribution = game.discount, game.initial_distribution

    def step(carry: DiscountedCarry, x):
        row, drawn = x if predrawn else (x, None)
        t, alpha, rho, next_rho = row[0], row[1], row[2], row[3]
        factor, next_factor = (row[4], row[5]) if interplay.scheduled else (None, None)
        rates = player_rates(game.eta, factor, num_players)
        estimator = Estimator(interplay.feedback, game, t, run_axes, drawn, stationary=True) if sampled else None
        # Q^t = r + gamma P V^(t-1), one contraction for all players (the layer axis kept: (1, N, S, A...)).
        if estimator is None and moved_kernel is not None:
            target = game.rewards[0] + _next_values(moved_kernel, discount * carry.value, run_axes)
        else:
            kernel = game.transitions if estimator is None else estimator.kernel(game.transitions)
            (target,) = stacked_targets(game.rewards[0], kernel_step(kernel, 0), (discount * carry.value,), run_axes)
        q = target[None]
        predictions = carry.prediction
        if learner.propose is not None:
            # A two-query learner's second query, under Q^t: known before anyone plays.
            predictions, proposals = proposed_predictions(learner, carry.learners, rates, rho, q, run_axes, estimator)
        else:
            proposals = ()
        played = [learner.play(carry.learners[i], predictions[i], rates[i], rho) for i in range(num_players)]
        policies = tuple(p for p, _ in played)
        stationary = tuple(p[0] for p in policies)  # per player (S, A_i[, R])
        joint = joint_product(stationary, run_axes)
        value = (1.0 - alpha) * carry.value + alpha * joint_expectation(target, joint, num_players, run_axes)
        last, average = stationary, carry.average
        if interplay.average:
            # The update's own weights alpha_T^t (`DiscountedSmoothUpdate.average_weights`), by their
            # recursion; with the last iterate in one array (`DiscountedCarry.average`).
            now = _flat(stationary, run_axes)
            before = carry.average[0][now.shape[0] :]
            last, average = (), (jnp.concatenate([now, (1.0 - alpha) * before + alpha * now]),)
        following = None
        if interplay.order == "alternating":
            next_rates = player_rates(game.eta, next_factor, num_players)
            following = (lambda i, u: u if optimistic else carry.prediction[i], next_rates, next_rho)
        utilities, learners = observe_round(
            learner, tuple(s for _, s in played), policies, q, rates, rho, run_axes, interplay.order, following, estimator
        )
        metrics = at_distribution(value, distribution, run_axes)[None]  # (1, N[, R]): V^t(rho)
        regret = carry.regret
        if interplay.regret:
            regret, regret_rows = regret_step(cast(RegretCarry, carry.regret), policies, utilities, alpha, run_axes)
            metrics = jnp.concatenate([metrics, regret_rows])
        new_carry = DiscountedCarry(learners, utilities if optimistic else carry.prediction, value, last, regret, average)
        out: dict[str, Any] = {"metrics": metrics}
        if record:
            out["policies"] = stationary
        # The iterates themselves, per player (S, A_i[, R]); the loop keeps the rows of the prefixes
        # it evaluates and evaluates them on the host (`DiscountedSmoothUpdate.evaluate_iterates`).
        if emit_last:
            out["last_iterate"] = stationary
        if interplay.average and average_how != "segments":  # (else after the marked stretches)
            out["weighted_average"] = _iterates(average[0], num_states, num_actions)[1]
        if guard_tol is not None:
            # A two-query learner's proposals first, then the strategies played (`raise_violation`).
            out["violation"] = strategy_violation(proposals + policies, run_axes, guard_tol)
        return new_carry, out

    return step


def as_distributions(policy) -> np.ndarray:
    """A stationary policy ``(S, A_i)`` of a run, in float64 with every row renormalised to sum to 1:
    the run's rows sum to 1 within its precision only (a float32 row within about ``1e-7``, beyond
    the evaluators' tolerance; a float64 row's renormalisation changes it by about ``1e-16``)."""
    p = np.maximum(np.asarray(policy, np.float64), 0.0)
    return p / p.sum(axis=-1, keepdims=True)


def _largest_output_bytes(game: GameArrays, record: bool, emitted: int, run_axes: int, regret: bool) -> int:
    """The bytes per iteration of the largest per-iteration output (`sequential_block`); ``emitted``:
    the number of iterates emitted (the last iterate, the weighted average)."""
    rewards = game.rewards
    runs = math.prod(rewards.shape[rewards.ndim - run_axes :])
    num_players, num_states = rewards.shape[1:3]
    actions = rewards.shape[3 : rewards.ndim - run_axes]
    sizes = [(3 if regret else 1) * num_players]
    sizes += [num_states * max(actions)] if record else []
    sizes += [num_states * max(actions)] if emitted else []
    return max(sizes) * runs * rewards.dtype.itemsize


class DiscountedSmoothUpdate(ValueUpdate):
    """The discounted smooth value update (see the module docstring); ``averaging`` is its name:
    ``"discounted-smooth"``, ``"discounted-smooth-uniform"`` or ``"discounted-smooth-linear"``."""

    per_iteration_metrics = True
    average_in_segments = True
    metric_rows = 1
    stationary = True
    index_kernel = "none"
    citation = _CITATION

    def __init__(self, averaging: str = "discounted-smooth"):
        if averaging not in _AVERAGINGS:
            raise ValueError(f"unknown discounted averaging {averaging!r}; choose one of: {', '.join(_AVERAGINGS)}")
        self.name = averaging
        self.description = _AVERAGINGS[averaging][1]

    def schedule_horizon(self, game) -> float:
        return step_order(self.name, game.discount)

    def average_weights(self, T, horizon):
        # horizon: the order k of the step sizes (`schedule_horizon`): alpha_T^t of alpha_t = (k+1)/(k+t).
        return smooth_average_weights(T, horizon)

    def theory_rate(self, num_players, horizon, max_actions):
        raise ValueError(
            f"learning rate 'theory': no paper's learning rate is implemented for the {self.name!r} update; give a number"
        )

    def theory_rate_for(self, game, paper):
        # Every implemented rate (`markovgames._papers.THEORY_RATES`) is a finite-horizon theorem's.
        raise ValueError(
            f"learning rate 'theory:{paper}': {PAPERS[paper].short}'s rates are proved for finite-horizon games, and "
            f"markovgames implements no paper's rate for the {self.name!r} update of a discounted game; give a number"
        )

    def schedule(self, T, horizon, num_players, per_stage_theory, step_schedule=None):
        # horizon: the order k of the step sizes (`schedule_horizon`).
        return DiscountedSchedule(float(horizon), step_schedule)

    def chunk_inputs(self, schedule, done, size, dtype):
        # Per iteration [t, alpha_t, rho_t, rho_(t+1), f(t), f(t+1)], in float64 on the host.
        t = np.arange(done + 1, done + size + 2, dtype=np.float64)
        alpha = smooth_step_size(t, 0, schedule.order)
        rho = oftrl_decay(t, 0, schedule.order)
        factors = np.ones_like(t) if schedule.step_schedule is None else schedule.step_schedule.factors(t)
        return np.stack([t[:-1], alpha[:-1], rho[:-1], rho[1:], factors[:-1], factors[1:]], axis=1).astype(dtype)

    def init_carry(self, learner, shape_key, dtype, schedule, interplay=SIMULTANEOUS, initial=None):
        num_players, layers, num_states, num_actions = shape_key  # the loop's shape (N, 1, S, A)
        built = learner_for(learner, run_axes=0)
        if initial is None:
            states = tuple(built.init((layers, num_states, a), dtype) for a in num_actions)
        elif built.init_at is None:  # unreachable: run() checks the learner first
            raise AssertionError(f"learner {learner.name!r} has no init_at")
        else:
            states = tuple(built.init_at(np.asarray(x, dtype)[None], dtype) for x in initial)
        regret = (
            init_regret(layers, num_states, num_actions, lambda shape: device_zeros(shape, dtype)) if interplay.regret else ()
        )
        uniform = [np.full((num_states, a), 1.0 / a, dtype) for a in num_actions]
        last: tuple
        average: tuple
        if interplay.average:  # the last iterate, then the average (zeros), in one array
            flat = np.concatenate([u.ravel() for u in uniform] + [np.zeros(num_states * sum(num_actions), dtype)])
            last, average = (), (jax.device_put(flat),)
        else:
            last, average = tuple(jax.device_put(u) for u in uniform), ()
        return DiscountedCarry(
            learners=states,
            prediction=tuple(device_zeros((layers, num_states, a), dtype) for a in num_actions),
            value=device_zeros((num_players, num_states), dtype),
            last=last,
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
        # The masks only say whether an iterate is evaluated: the loop keeps the rows it marks, and
        # the host evaluates them (`evaluate_iterates`). The weighted average is emitted by every
        # iteration, or with "segments" after the marked iterations only.
        emit = last_iterate is not None
        segments = interplay.average and average_how == "segments"
        if (average is not None) != interplay.average:  # unreachable: the engine passes both or neither
            raise AssertionError("the weighted average's mask and Interplay.average disagree")
        drawn = None
        if interplay.feedback.estimates:
            purposes = (OTHERS, NEXT_STATES) + ((PROPOSALS,) if learner.learner().propose is not None else ())
            first_t = sched[0, 0].astype(jnp.int32)
            drawn = chunk_draws(interplay.feedback, game, first_t, size, run_axes, purposes, stationary=True)
        moved = None if interplay.feedback.estimates else _successors_first(game.transitions, run_axes)
        step = _discounted_step(
            learner, optimistic, record, emit, game, run_axes, interplay, drawn is not None, moved, average_how
        )
        xs = sched if drawn is None else (sched, drawn)
        emitted = int(emit) + int(interplay.average and not segments)
        per_iteration = _largest_output_bytes(game, record, emitted, run_axes, interplay.regret)
        if drawn is not None:
            per_iteration = max(per_iteration, *(x[0].size * x.dtype.itemsize for x in drawn.values()))
        block = sequential_block(game, carry, per_iteration)
        if segments:
            num_states, num_actions = game.rewards.shape[2], game.rewards.shape[3 : 3 + game.rewards.shape[1]]
            at_end = lambda c: _iterates(c.average[0], num_states, num_actions)[1]  # noqa: E731
            carry, out, values = segmented_scan(step, carry, xs, average, at_end, block)
            out = {**out, "weighted_average": values}
        else:
            carry, out = blocked_scan(step, carry, xs, block)
        if "violation" in out:  # per iteration -> the chunk's first, as [row, code] (`_guard`)
            codes = out["violation"]
            row = jnp.argmax(codes >= 0).astype(jnp.int32)
            out["violation"] = jnp.where(codes[row] >= 0, jnp.stack([row, codes[row]]), jnp.full(2, -1, jnp.int32))
        return carry, out

    def evaluate_iterates(self, outputs, games, batched):
        # outputs: per player (..., L, S, A_i) on the host: the last iterate or the weighted average
        # at each evaluated prefix, each evaluated exactly (policy iteration): (..., L, 2, N).
        games = list(games) if batched else [games[0]]
        num_players = games[0].num_players
        rows = outputs[0].shape[1 if batched else 0]
        result = np.empty((len(games), rows, 2, num_players), np.float64)
        for r, game in enumerate(games):
            for k in range(rows):
                gap = discounted_nash_gap(game, [as_distributions(p[r, k] if batched else p[k]) for p in outputs])
                result[r, k] = gap.value, gap.best_response_value
        return result if batched else result[0]

    def prefix_metrics(self, records, schedule, prefixes):
        return None

    def init_certify_carry(self, shape_key, dtype, schedule):
        raise ValueError(f"the {self.name!r} update has no output policy to certify")

    def certify_chunk(self, size, game, carry, sched, policies, run_axes):
        raise ValueError(f"the {self.name!r} update has no output policy to certify")


#: The discounted smooth value update (``alpha_t = (H+1)/(H+t)``, ``H = 1/(1-gamma)``).
DISCOUNTED_SMOOTH = DiscountedSmoothUpdate("discounted-smooth")
#: With uniform averaging (``alpha_t = 1/t``).
DISCOUNTED_SMOOTH_UNIFORM = DiscountedSmoothUpdate("discounted-smooth-uniform")
#: With linear averaging (``alpha_t = 2/(t+1)``).
DISCOUNTED_SMOOTH_LINEAR = DiscountedSmoothUpdate("discounted-smooth-linear")
