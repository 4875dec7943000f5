r"""Step sizes, OFTRL weights, stage lengths and learning rates (docs/explanation.md: step sizes, weights and learning rates).

Smooth value updates (Algorithm 1) use the step size of Jin et al. (2018)

.. math:: \alpha_t = \frac{H+1}{H+t}, \qquad
          \alpha_t^j = \alpha_j \prod_{k=j+1}^{t} (1-\alpha_k),

with :math:`\alpha_1 = 1`, so :math:`\sum_{j\le t}\alpha_t^j = 1`. The weighted-OFTRL weights
:math:`w_j = \alpha_t^j/\alpha_t^1 = \binom{H+j-1}{H}` do not depend on ``t`` and grow like
:math:`j^H`, so raw weighted sums overflow for large ``H``. The engine never forms them: it keeps
the *normalised* cumulative sum :math:`G^t = \sum_{j\le t} w_j u^j / w_t` through

.. math:: G^t = \rho_t G^{t-1} + u^t, \qquad \rho_t = \frac{w_{t-1}}{w_t} = \frac{t-1}{H+t-1},

which only multiplies by numbers in ``[0, 1)``.

**Averaging.** The same formulas with ``H`` replaced by an *order* ``k >= 0``,

.. math:: \alpha_t = \frac{k+1}{k+t}, \qquad w_j = \binom{k+j-1}{k}, \qquad \rho_t = \frac{t-1}{k+t-1},

give the averagings of the rest of the literature: ``k = 0`` is uniform averaging
(:math:`\alpha_t = 1/t`, :math:`w_j = 1`: textbook OFTRL, Hedge, RM+ and PRM+, which sum their
utilities with equal weights) and ``k = 1`` linear averaging (:math:`\alpha_t = 2/(t+1)`,
:math:`w_j = j`: utilities and output average both weighted by ``j``, as in Linear CFR). The paper's value update is ``k = H``. The value
updates ``smooth`` (``k = H``), ``smooth-uniform`` (``k = 0``) and ``smooth-linear`` (``k = 1``)
use them (`smoothing_order`); their output policies are Algorithm 3 with the same
:math:`\alpha_t^j = w_j / W_t`, :math:`W_t = \binom{k+t}{k+1}`. Stage-based updates (Algorithm 2) use stages of
lengths :math:`L_1 = H`, :math:`L_{\tau+1} = \lfloor (1 + 1/H) L_\tau \rfloor`, computed in exact
integer arithmetic as ``((H + 1) * L) // H``.

**Average iterates.** Each value update also weighs the iterates themselves (`average_weights`):
the state-wise weighted average :math:`\bar\pi^T_h(\cdot|s) = \sum_{t\le T} w^T_t\,\pi^t_h(\cdot|s)`
with the weights of its own value estimate. A smooth update's are :math:`w^T_t = \alpha_T^t`, the
weights of :math:`Q^T_h = \sum_t \alpha_T^t (r_h + P_h V^t_{h+1})` (Zhang et al. 2022 and Yang
and Ma 2023 state their results for this average with ``k = H``), so that

.. math:: \bar\pi^T = (1-\alpha_T)\,\bar\pi^{T-1} + \alpha_T\,\pi^T, \qquad \bar\pi^1 = \pi^1;

``k = 0`` gives the uniform average (:math:`w^T_t = 1/T`) and ``k = 1`` the linear one
(:math:`w^T_t = 2t/(T(T+1))`). The stage-based update's value estimate after ``T`` iterations,
:math:`Q^{\tau+1}_h = r_h + P_h \bar v_{h+1}`, averages the iterates of the last stage complete
by then uniformly: its weights are :math:`1/L_\tau` on that stage (during stage 1, which no value
update has closed yet, :math:`1/T` on the iterations so far, as Algorithm 4's stage 1 refers to
itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "SMOOTH_KERNELS",
    "smoothing_order",
    "smooth_step_size",
    "oftrl_decay",
    "StageSchedule",
    "stage_schedule",
    "theory_eta_smooth",
    "theory_eta_stage",
    "AVERAGINGS",
    "average_weights",
    "smooth_average_weights",
]


#: The smooth output policies' index kernels by name, with the order ``k`` of their averaging
#: (``None``: the paper's ``k = H``).
SMOOTH_KERNELS: dict[str, int | None] = {"smooth": None, "smooth-uniform": 0, "smooth-linear": 1}


def smoothing_order(kind: str, horizon: int) -> int:
    """The order ``k`` of the smooth kernel ``kind`` on a game of horizon ``horizon``:
    ``H`` for ``"smooth"`` (the paper), 0 for ``"smooth-uniform"``, 1 for ``"smooth-linear"``."""
    if kind not in SMOOTH_KERNELS:
        raise ValueError(f"not a smooth index kernel: {kind!r}; choose one of: {', '.join(SMOOTH_KERNELS)}")
    order = SMOOTH_KERNELS[kind]
    return int(horizon) if order is None else order


def smooth_step_size(t, horizon: int, order: int | None = None):
    r"""``alpha_t = (k+1)/(k+t)`` for 1-based iteration ``t``, ``k = order`` (default ``H``, the
    paper's ``(H+1)/(H+t)``; works on NumPy or JAX arrays)."""
    k = horizon if order is None else order
    return (k + 1.0) / (k + t)


def oftrl_decay(t, horizon: int, order: int | None = None):
    r"""``rho_t = w_{t-1}/w_t = (t-1)/(k+t-1)``, ``k = order`` (default ``H``); ``rho_1 = 0``
    since ``w_0 = 0`` (also for ``k = 0``, where the formula reads 0/0)."""
    k = horizon if order is None else order
    if k == 0:
        return (t > 1) * 1.0  # NumPy or JAX alike
    return (t - 1.0) / (k + t - 1.0)


#: The weighted averages of the iterates by name, each the averaging of a value update
#: (`average_weights`): ``paper`` the smooth update's (Algorithm 1, ``alpha_t = (H+1)/(H+t)``),
#: ``uniform`` and ``linear`` those of ``smooth-uniform`` and ``smooth-linear``, ``stage`` the
#: stage-based update's.
AVERAGINGS: dict[str, str] = {"paper": "smooth", "uniform": "smooth-uniform", "linear": "smooth-linear", "stage": "stage"}


def average_weights(kind: str, T: int, horizon: int) -> np.ndarray:
    r"""The weights ``w^T_t`` (row ``t - 1``, ``t = 1..T``) of the state-wise weighted average of the
    first ``T`` iterates under the value update ``kind`` (its name: ``"smooth"``, ``"smooth-uniform"``,
    ``"smooth-linear"`` or ``"stage"``) on a game of horizon ``horizon`` (module docstring).

    Smooth updates: :math:`\alpha_T^t = \alpha_t \prod_{j=t+1}^{T} (1-\alpha_j)` with
    :math:`\alpha_t = (k+1)/(k+t)`, computed as a reversed cumulative product of the factors
    :math:`1 - \alpha_j = (j-1)/(k+j)` in ``[0, 1)`` (no overflow; weights below the smallest
    float64 are 0). Stage-based: ``1/L`` on the last stage complete after ``T`` iterations, or
    ``1/T`` on ``1..T`` while stage 1 is not. The weights are non-negative and sum to 1.
    """
    T, horizon = int(T), int(horizon)
    if T < 1 or horizon < 1:
        raise ValueError(f"need T >= 1 and a horizon >= 1, got T={T}, horizon={horizon}")
    if kind == "stage":
        sched = stage_schedule(horizon, T)
        ends = sched.starts + sched.lengths - 1  # each stage's last iteration (1-based)
        complete = np.flatnonzero(ends <= T)
        weights = np.zeros(T)
        if complete.size == 0:
            weights[:] = 1.0 / T  # stage 1 so far: no value update yet
        else:
            last = int(complete[-1])
            weights[sched.starts[last] - 1 : ends[last]] = 1.0 / float(sched.lengths[last])
        return weights
    return smooth_average_weights(T, smoothing_order(kind, horizon))


def smooth_average_weights(T: int, order: float) -> np.ndarray:
    r""":math:`\alpha_T^t = \alpha_t \prod_{j=t+1}^{T} (1-\alpha_j)` for ``t = 1..T`` (row ``t - 1``),
    :math:`\alpha_t = (k+1)/(k+t)` with ``k = order >= 0``: an integer for the finite-horizon smooth
    updates (`average_weights`), any real for a discounted one (``k = 1/(1-gamma)``, the same
    recursion, `markovgames.dynamics._discounted`)."""
    T, k = int(T), float(order)
    if T < 1 or not k >= 0.0 or not math.isfinite(k):
        raise ValueError(f"need T >= 1 and a finite order k >= 0, got T={T}, k={order!r}")
    if k == 0:
        return np.full(T, 1.0 / T)
    t = np.arange(1, T + 1, dtype=np.float64)
    alpha = (k + 1.0) / (k + t)
    # tail[t-1] = prod_{j=t+1..T} (1 - alpha_j), with 1 - alpha_j = (j - 1)/(k + j) exactly.
    factors = (t[1:] - 1.0) / (k + t[1:])
    tail = np.append(np.cumprod(factors[::-1])[::-1], 1.0)
    return alpha * tail


def theory_eta_smooth(num_players: int, horizon: int, max_actions: int) -> float:
    """Theorem 1's learning rate ``1 / (256 N H sqrt(H A_max))`` (Mao et al. 2024)."""
    return 1.0 / (256.0 * num_players * horizon * math.sqrt(horizon * max_actions))


def theory_eta_stage(num_players: int, stage_length) -> np.ndarray:
    """Theorem 2's rate ``eta_tau = 1 / (N max(1, ln L_tau)^4)`` (the Theta(.) constant set to 1)."""
    log_len = np.maximum(1.0, np.log(np.asarray(stage_length, dtype=np.float64)))
    return 1.0 / (num_players * log_len**4)


@dataclass(frozen=True)
class StageSchedule:
    """Per-iteration view of the stages of Algorithm 2 for iterations ``t = 1..T``.

    All arrays have length ``T`` and index ``t - 1``.

    Attributes
    ----------
    stage : int64 array
        The 1-based stage ``tau(t)``.
    length : int64 array
        ``L_{tau(t)}``, the full length of ``t``'s stage (the last stage may be cut by ``T``).
    position : int64 array
        ``t - t_start(tau(t)) + 1``, the 1-based position inside the stage.
    is_end : bool array
        ``True`` where ``t`` completes its stage (``position == length``): the value update fires.
    starts, lengths : int64 arrays
        Start iteration and full length of each stage that begins at or before ``T``.
    """

    stage: np.ndarray
    length: np.ndarray
    position: np.ndarray
    is_end: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray

    @property
    def num_iterations(self) -> int:
        return int(self.stage.shape[0])


def stage_lengths(horizon: int, total: int) -> list[int]:
    """Lengths ``L_1 = H, L_{tau+1} = ((H+1) L_tau) // H`` of the stages that start at or before ``total``."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    lengths: list[int] = []
    covered = 0
    length = horizon
    while covered < total:
        lengths.append(length)
        covered += length
        length = ((horizon + 1) * length) // horizon
    return lengths


def stage_schedule(horizon: int, total: int) -> StageSchedule:
    """Build the [`StageSchedule`][markovgames.dynamics.StageSchedule] of Algorithm 2 for ``total`` iterations."""
    lengths = np.asarray(stage_lengths(horizon, total), dtype=np.int64)
    starts = np.concatenate([[1], 1 + np.cumsum(lengths)[:-1]]).astype(np.int64)
    t = np.arange(1, total + 1, dtype=np.int64)
    stage = np.searchsorted(starts, t, side="right")  # 1-based stage index
    length = lengths[stage - 1]
    position = t - starts[stage - 1] + 1
    return StageSchedule(
        stage=stage.astype(np.int64),
        length=length,
        position=position,
        is_end=position == length,
        starts=starts,
        lengths=lengths,
    )
