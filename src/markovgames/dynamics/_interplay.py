r"""How the players' learners meet at an iteration: update order, step-size schedules, two-query learners.

Every value update plays and feeds the learners through the functions here, so each choice
below means the same for ``smooth``, ``smooth-uniform``, ``smooth-linear`` and ``stage``.

**Step-size schedules** (`StepSchedule`). The learning rate of iteration ``t`` is
:math:`\eta_{i,t} = c_i\, f(t)`: ``c_i`` the run's rate (one number, or one per player) and ``f`` the
schedule: ``constant`` (:math:`f = 1`, the paper's), ``sqrt`` (:math:`1/\sqrt t`) or ``power:P``
(:math:`t^{-P}`), or a user's function ``f(t)`` of a NumPy array of iterations. Under the stage-based
update ``t`` is the iteration's position in its stage (its learners restart every stage). The factors
are computed on the host before each compiled chunk, so a user's schedule is plain NumPy and is
checked there (finite and positive, or the run stops naming the schedule and ``t``).

**Update order** (`ORDERS`). ``simultaneous`` (the paper's): every player observes
:math:`u^t_i = [Q^t_i \pi^t_{-i}]`. ``alternating`` (Tammelin et al. 2015; Burch, Moravčík and
Schmid 2019): the players update in turn, each against the others' newest strategies. At iteration
``t`` player 0 observes :math:`[Q^t_0 \pi^t_{-0}]` and computes its next strategy
:math:`\pi^{t+1}_0`; player 1 observes its utility against :math:`\pi^{t+1}_0` and the others'
:math:`\pi^t`; and so on: player ``i`` observes

.. math:: u^t_i = \big[Q^t_i\; (\pi^{t+1}_{<i}, \pi^t_{>i})\big].

The profile of iteration ``t`` is still :math:`\pi^t = (\pi^t_0, \dots, \pi^t_{N-1})` (with two
players, :math:`y^t` has seen :math:`x^t`: Burch et al.'s pairs), and the value update, the output
policy and every gap are those of this sequence of profiles, as for simultaneous updates.

**Two-query learners** (`markovgames.learners.Learner.propose`): the prediction of iteration ``t``
is the utility at the strategies the learners propose, :math:`m^t_i = [Q_i \hat x^t_{-i}]`, with
``Q`` the estimate the learners currently see (``Q^{t-1}`` under the smooth update, the rewards at
``t = 1``; the stage's ``Q`` under the stage-based one). Alternation is not defined for them.

**Feedback** (`Interplay.feedback`, `._feedback`): every utility above is the exact expectation
under full information; under ``sampled:K`` it is an estimate from the iteration's draws (each
player's own ``K`` profiles of the others' actions, from its view of them), and the second query
of a two-query learner is estimated from draws of its own.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .._usercode import UserCode
from ._feedback import FULL, PROPOSALS, Estimator, Feedback
from ._tensor import others_expectation
from ._value_update import per_player_utilities

__all__ = [
    "ORDERS",
    "Interplay",
    "SIMULTANEOUS",
    "RateBounds",
    "StepSchedule",
    "bounded_schedule",
    "STEP_SCHEDULES",
    "power_schedule",
    "player_rates",
    "proposed_predictions",
    "observe_round",
]

#: The update orders.
ORDERS = ("simultaneous", "alternating")


class Interplay(NamedTuple):
    """The static choices of how the learners meet (part of a compiled loop's key).

    ``order``: ``"simultaneous"`` or ``"alternating"`` (see the module docstring).
    ``regret``: whether the loop also carries every player's external and swap regret;
    ``average``: whether it carries the weighted average of the iterates.
    """

    order: str = "simultaneous"
    regret: bool = False
    #: Whether the rate has a schedule other than the constant one: only then does the loop read
    #: the factors (a constant rate's loop is the paper's, without a table lookup per iteration).
    scheduled: bool = False
    #: The schedule's factor as a JAX function of the iteration (`StepSchedule.traced`), for the
    #: stage-based loop, which then computes it rather than looking it up in a table of a stage's
    #: length (a large table read in the loop body takes the loop off XLA's fast path).
    traced: Callable | None = None
    #: What the learners observe and the value update applies (`._feedback`): full information
    #: (the paper's) or a generative model's estimates.
    feedback: Feedback = FULL
    #: Whether the loop also carries the state-wise weighted average of the iterates with the
    #: value update's own weights (`markovgames._schedules.average_weights`), evaluated at the
    #: iterations of its mask (`ValueUpdate.run_chunk`'s ``average``).
    average: bool = False


#: The paper's interplay: simultaneous updates, no regret curves.
SIMULTANEOUS = Interplay()


#: Iterations per block when a schedule is checked over a whole run (its memory stays bounded).
_CHECK_BLOCK = 1 << 16


@dataclass(frozen=True)
class RateBounds:
    """The limits of a run's rates ``eta_t = eta f(t)``, the same as those of a constant ``eta``:
    positive in the run's precision (``smallest * f(t)`` does not round to 0) and at most
    ``limit`` (`markovgames.dynamics.max_learning_rate` of the run's ``T``, ``H`` and dtype)."""

    smallest: float
    largest: float
    limit: float
    dtype: str

    def fault(self, t: np.ndarray, factors: np.ndarray) -> str | None:
        """What is wrong with the first rate of ``factors`` (at iterations ``t``) off the limits."""
        with np.errstate(over="ignore", under="ignore"):
            high = self.largest * factors
            low = (self.smallest * factors).astype(self.dtype)
        above = ~(high <= self.limit)
        zero = ~(low > 0)
        bad = above | zero
        if not bad.any():
            return None
        k = int(np.argmax(bad))
        if above.flat[k]:
            return (
                f"eta f(t) at t = {int(t.flat[k])} is {self.largest:g} x {float(factors.flat[k]):.3g} = {float(high.flat[k]):.3g}, "
                f"above {self.limit:.3g}, the largest learning rate of this run in {self.dtype} (the limit of a "
                "constant rate, markovgames.dynamics.max_learning_rate)"
            )
        return (
            f"eta f(t) at t = {int(t.flat[k])} is {self.smallest:g} x {float(factors.flat[k]):.3g}, which is 0 in "
            f"{self.dtype}; a learning rate must be positive"
        )


@dataclass(frozen=True)
class StepSchedule:
    """A step-size schedule: the rate of iteration ``t`` is the run's rate times ``factor(t)``.

    ``factor`` takes a NumPy array of 1-based iterations (float64) and returns an array of the
    same shape of positive finite factors. ``None`` is the constant schedule. A run checks its
    rates ``eta f(t)`` against the limits of a constant rate (`RateBounds`) at every ``t`` before
    it starts (`bounded`), and again on every factor it computes.
    """

    name: str
    factor: Callable[[np.ndarray], np.ndarray] | None = None
    description: str = ""
    #: A user's schedule: the reference it was loaded from, and its file's SHA-256.
    source: str | None = None
    source_sha256: str | None = None
    #: The same factor as a JAX function of a traced (float) iteration, where one is known (the
    #: built-in schedules); ``None`` for a user's NumPy function.
    traced: Callable | None = None
    #: The limits of the run's rates (`bounded`); ``None``: only the factors are checked.
    bounds: RateBounds | None = None

    @property
    def is_constant(self) -> bool:
        return self.factor is None

    @property
    def identity(self) -> str:
        """What distinguishes its numbers: the name, and for a user's schedule its file's content."""
        return self.name if self.source is None else f"{self.name}@{self.source_sha256 or self.source}"

    def factors(self, t: np.ndarray, dtype=np.float64) -> np.ndarray:
        """``factor(t)`` in ``dtype``, checked: a ``ValueError`` names the schedule and the first bad ``t``."""
        t = np.asarray(t, dtype=np.float64)
        if self.factor is None:
            return np.ones(t.shape, dtype)
        # The function gets a copy of its own, read-only: it can neither change the loop's
        # iterations nor keep a reference that it changes later.
        given = t.copy()
        given.flags.writeable = False
        with UserCode(lambda text: ValueError(f"step-size schedule {self.name!r}: factor(t) raised {text}")):
            out = np.array(self.factor(given), dtype=np.float64)
        if out.shape != t.shape:
            try:
                out = np.broadcast_to(out, t.shape)
            except ValueError:
                raise ValueError(
                    f"step-size schedule {self.name!r}: factor(t) returned shape {list(out.shape)} for t of shape {list(t.shape)}"
                ) from None
        bad = ~(np.isfinite(out) & (out > 0))
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(
                f"step-size schedule {self.name!r}: factor(t) at t = {int(t.flat[k])} is {float(out.flat[k])!r}; "
                "it must be a positive finite number"
            )
        if self.bounds is not None:
            fault = self.bounds.fault(t, out)
            if fault is not None:
                raise ValueError(f"step-size schedule {self.name!r}: {fault}")
        return out.astype(dtype)

    def factor_range(self, last: int) -> tuple[float, int, float, int]:
        """``(smallest f(t), its t, largest f(t), its t)`` over ``t = 1..last``, every factor checked
        (`factors`), computed in blocks of iterations."""
        low, t_low, high, t_high = math.inf, 1, -math.inf, 1
        for start in range(1, int(last) + 1, _CHECK_BLOCK):
            t = np.arange(start, min(start + _CHECK_BLOCK, int(last) + 1), dtype=np.float64)
            f = self.factors(t)
            k, j = int(np.argmin(f)), int(np.argmax(f))
            if f[k] < low:
                low, t_low = float(f[k]), int(t[k])
            if f[j] > high:
                high, t_high = float(f[j]), int(t[j])
        return low, t_low, high, t_high

    def bounded(self, bounds: RateBounds, last: int, factor_range: tuple[float, int, float, int] | None = None) -> StepSchedule:
        """This schedule with the limits ``bounds`` on its rates, checked at every ``t = 1..last``
        before the run (``factor_range``: its `factor_range` over them, where it is known); a
        ``ValueError`` names the schedule and the ``t`` of its largest (or smallest) rate, off the
        limits. Checking the extremes is checking every ``t``: the limits are on the rates'
        largest and smallest values."""
        if self.factor is None:
            return self
        low, t_low, high, t_high = self.factor_range(last) if factor_range is None else factor_range
        for t, f in ((t_high, high), (t_low, low)):
            fault = bounds.fault(np.array([float(t)]), np.array([f]))
            if fault is not None:
                raise ValueError(f"step-size schedule {self.name!r}: {fault}")
        return dataclasses.replace(self, bounds=bounds)


def bounded_schedule(schedule: StepSchedule | None, etas, limit: float, dtype: str, last: int, factor_range=None):
    """``schedule`` with the limits of a constant rate (at most ``limit``,
    `markovgames.dynamics.max_learning_rate` of the run, and not 0 in ``dtype``) on every rate
    ``eta f(t)``, checked at every ``t = 1..last`` before the run (`StepSchedule.bounded`; a run of
    ``T`` iterations reads ``t`` up to ``T + 1``: alternating updates play the next iteration's
    strategy within one); ``etas``: the run's rate scales (numbers, or one per player)."""
    if schedule is None or schedule.is_constant:
        return schedule
    scales = [float(x) for e in etas for x in np.ravel(e)]
    return schedule.bounded(RateBounds(min(scales), max(scales), limit, dtype), last, factor_range)


def _sqrt(t: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(t)


def _sqrt_traced(t):
    return 1.0 / jnp.sqrt(t)


@dataclass(frozen=True)
class _Power:
    """``t^{-p}`` (a value, so that two schedules of one power compare equal)."""

    power: float

    def __call__(self, t: np.ndarray) -> np.ndarray:
        return t ** (-self.power)

    def traced(self, t):
        return t ** (-self.power)


def power_schedule(power: float) -> StepSchedule:
    """``eta_t = c t^{-power}`` for ``power`` in ``[0, 1]`` (0 is constant, 1/2 is ``sqrt``)."""
    if isinstance(power, bool) or not isinstance(power, (int, float)) or not math.isfinite(power) or not 0 <= power <= 1:
        raise ValueError(f"a power schedule's exponent must be a number in [0, 1], got {power!r}")
    power = float(power)
    factor = _Power(power)
    return StepSchedule(f"power:{power:g}", factor, f"eta_t = c / t^{power:g}", traced=factor.traced)


#: The built-in schedules by name (``power:P`` is built by `power_schedule`).
STEP_SCHEDULES: dict[str, StepSchedule] = {
    s.name: s
    for s in (
        StepSchedule("constant", None, "eta_t = c (the paper's)"),
        StepSchedule("sqrt", _sqrt, "eta_t = c / sqrt(t)", traced=_sqrt_traced),
    )
}


def player_rates(eta, factor, num_players: int) -> tuple:
    """Each player's rate ``c_i f(t)``: ``eta`` holds ``c_i`` along its first axis ``(N[, R])``;
    ``factor`` ``None`` is the constant schedule."""
    return tuple(eta[i] if factor is None else eta[i] * factor for i in range(num_players))


def proposed_predictions(
    learner, states, rates, decay, q, run_axes: int, estimator: Estimator | None = None
) -> tuple[tuple, tuple]:
    """A two-query learner's predictions: each player's utility at the strategies the learners
    propose, ``[Q_i x_hat_{-i}]`` (``q``: ``(H, N, S, A...)``), or its estimate (``estimator``,
    from the iteration's draws for the second query); and the proposals themselves (a user's are
    checked to be probability vectors, as its played strategies are: `._guard`)."""
    proposals = tuple(learner.propose(state, rate, decay) for state, rate in zip(states, rates, strict=True))
    if estimator is None:
        return per_player_utilities(q, proposals, run_axes), proposals
    return estimator.utilities(q, proposals, PROPOSALS), proposals


def observe_round(
    learner, states, policies, q, rates, decay, run_axes: int, order: str, following=None, estimator: Estimator | None = None
):
    """Feed every player's learner its utility; returns ``(utilities, states)``.

    ``states``: the learners' states after ``play``; ``q``: ``(H, N, S, A...)``, the ``Q`` of the
    utilities. With ``order == "alternating"``, ``following = (predictions, rates, decay)`` of the
    next iteration: each player but the last plays its next strategy at once, and the players after
    it observe their utilities against it (see the module docstring). ``estimator``: the
    iteration's feedback (`._feedback`); ``None`` is full information.
    """
    if order == "simultaneous":
        utilities = per_player_utilities(q, policies, run_axes) if estimator is None else estimator.utilities(q, policies)
        observed = tuple(
            learner.observe_with(state, u, decay, rate) for state, u, rate in zip(states, utilities, rates, strict=True)
        )
        return utilities, observed
    if order != "alternating":  # unreachable: the order is checked where a run starts
        raise AssertionError(f"unknown order {order!r}")
    if following is None:
        raise AssertionError("alternating updates need the next iteration's settings")
    next_predictions, next_rates, next_decay = following
    num_players = len(policies)
    view = list(policies)
    seen: list = []
    fed: list = []
    draws = None if estimator is None else estimator.profile_draws(q)
    for i in range(num_players):
        if estimator is None:
            u = others_expectation(q[:, i], tuple(view), i, run_axes)
        else:
            u = estimator.utility(q, tuple(view), i, draws)
        state = learner.observe_with(states[i], u, decay, rates[i])
        if i < num_players - 1:
            view[i], _ = learner.play(state, next_predictions(i, u), next_rates[i], next_decay)
        seen.append(u)
        fed.append(state)
    return tuple(seen), tuple(fed)
