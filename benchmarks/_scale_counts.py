"""The counting model of ``bench_scale.py``: the multiply-adds and bytes one iteration of each algorithm needs.

Counting (per iteration; ``J = prod_i A_i`` joint actions, ``W`` entries per transition row: ``S``
dense, ``K`` sparse; every sum over ``(h, s)`` covers all ``H`` steps and ``S`` states, as the
engine applies ``r_h + P_h X`` at every step, with ``X = 0`` beyond the last)

Multiply-adds of a smooth iteration (smooth_ce, smooth_cce), a lower bound: per ``(h, s)``

* transition contraction ``P_h X`` of ``M = 4N`` stacked vectors (algorithm value, output value,
  CCE bound, CE bound, each per player): ``M J W``; adding ``r_h``: ``M J``;
* ``Q`` update ``(1 - alpha) Q + alpha target``: ``2 N J``;
* joint product policy: ``J``; ``<Q_i, joint>`` and ``<value target_i, joint>``: ``2 N J``;
* ``[X_i pi_-i]`` for the algorithm's utilities, the CCE and the CE targets: ``3 N J`` (``J`` each,
  the cost of the last contraction; earlier partial contractions are not counted);
* per player: CCE running average ``2 A_i``; CE matrix ``pi_i(a) u_i(b)`` and its running average
  ``3 A_i^2``; output value running average ``2``;
* learners: Hedge (smooth_cce) ``5 A_i`` (play: decay, scale, one exp each, normalise; observe);
  Blum-Mansour log-barrier (smooth_ce) ``8 A_i^2`` (base predictions, decay, scale, the closed-form
  part of the log-barrier argmax, observe) plus GTH elimination ``sum_{k<A_i} (k^2 + 3k) + 2 A_i``;
  Newton iterations (``A_i >= 3``), maxima and comparisons are not counted.

Multiply-adds of a stage_cce iteration: per ``(h, s)``: ``[Q_i pi_-i]`` ``N J``, joint product ``J``,
stage sum ``J``, Hedge ``5 A_i`` per player. A first-stage iteration adds the output recursion
(``3N`` stacked vectors: ``3N J W + 3N J``; value ``N J``; CCE marginals ``N J``; CE swap matrices
``J sum_i A_i``; ``Jbar`` ``J``); a stage end adds ``<Q, Jsum>`` ``N J``, the value update
``N J W + N J``, the output recursion as above, and the uniform-policy utilities ``N J``.

Bytes of a smooth iteration, a floor (each array read once, written once; intermediates such as
``pi^t``, the Bellman targets and the gathered next-step values assumed to stay in cache):
rewards ``H N S J 8``; transitions ``H S J S 8`` (dense) or ``H S J K (4 + 8)`` (int32 successors and
float64 probabilities); ``Q`` read + write ``2 H N S J 8``; learner state read + write (Hedge:
``2 H S sum A_i 8``; Blum-Mansour ``2 H S sum (A_i^2 + A_i) 8``) and the prediction ``2 H S sum A_i 8``;
running metric arrays (``m_i``, ``D_i``, value) read + write ``2 H S (sum A_i + sum A_i^2 + N) 8``;
the ``3N`` metrics ``3 N 8``. A stage_cce iteration: ``Q`` read ``H N S J 8``, the stage sum of joint
policies read + write ``2 H S J 8``, Hedge state and prediction read + write ``4 H S sum A_i 8``; a
first-stage iteration also reads rewards and transitions and writes ``3 H N S 8``; a stage end reads
rewards and transitions once (both of its contractions can share the pass), ``Q`` and the stage sum,
writes ``Q`` and the zeroed sum, reads and writes the ``3 H N S`` output quantities, and writes
the learner state and prediction.

These counts give ``bench_scale.py``'s arithmetic and memory bounds (``medium``, ``large``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from markovgames.dynamics import stage_schedule

F64 = 8  # bytes of a float64
I32 = 4  # bytes of a device successor index (the engine copies successors as int32)


@dataclass(frozen=True)
class Dims:
    """The sizes the counts depend on; ``width`` is ``S`` (dense) or ``K`` (sparse) per transition row."""

    N: int
    H: int
    S: int
    A: tuple
    width: int
    sparse: bool

    @property
    def J(self) -> int:
        return math.prod(self.A)

    @property
    def HS(self) -> int:
        return self.H * self.S

    @classmethod
    def from_game(cls, game) -> Dims:
        sparse = bool(game.is_sparse)
        width = game.sparse_transitions.num_successors if sparse else game.num_states
        return cls(game.num_players, game.horizon, game.num_states, tuple(game.num_actions), width, sparse)

    @classmethod
    def from_spec(cls, spec: dict) -> Dims:
        k = spec.get("num_successors")
        return cls(
            spec["num_players"],
            spec["horizon"],
            spec["num_states"],
            tuple(spec["num_actions"]),
            k if k else spec["num_states"],
            bool(k),
        )


def _gth_ops(a: int) -> int:
    """GTH elimination and back substitution on an ``a x a`` matrix."""
    return sum(k * k + 3 * k for k in range(1, a)) + 2 * a


def learner_ops(d: Dims, algorithm: str) -> int:
    """Per ``(h, s)``: all players' learner play + observe (see the module docstring)."""
    if algorithm == "smooth_ce":
        return sum(8 * a * a + _gth_ops(a) for a in d.A)
    return sum(5 * a for a in d.A)


def _output_recursion_fma(d: Dims) -> int:
    """Per ``(h, s)``: one step of the stage output recursion (3N stacked vectors)."""
    m = 3 * d.N
    return m * d.J * d.width + m * d.J + d.N * d.J + d.N * d.J + d.J * sum(d.A) + d.J


def smooth_fma(d: Dims, algorithm: str) -> dict:
    """Multiply-adds of one smooth iteration, by component (totals over all ``(h, s)``)."""
    m = 4 * d.N
    per_hs = {
        "transition_contraction": m * d.J * d.width,
        "add_rewards": m * d.J,
        "q_update": 2 * d.N * d.J,
        "joint_product": d.J,
        "joint_expectations": 2 * d.N * d.J,
        "utilities_algorithm_cce_ce": 3 * d.N * d.J,
        "cce_ce_running": sum(2 * a + 3 * a * a for a in d.A) + 2 * d.N,
        "learners": learner_ops(d, algorithm),
    }
    parts = {k: v * d.HS for k, v in per_hs.items()}
    return {"stacked_vectors_M": m, "components": parts, "total": sum(parts.values())}


def stage_fma(d: Dims, T: int) -> dict:
    """Multiply-adds of stage_cce: one ordinary iteration, and amortised over a ``T``-iteration call."""
    iteration = (d.N * d.J + 2 * d.J + learner_ops(d, "stage_cce")) * d.HS
    stage1_extra = _output_recursion_fma(d) * d.HS
    stage_end = (d.N * d.J + (d.N * d.J * d.width + d.N * d.J) + _output_recursion_fma(d) + d.N * d.J) * d.HS
    return _with_amortised({"iteration": iteration, "stage1_extra": stage1_extra, "stage_end": stage_end}, d, T)


def smooth_bytes(d: Dims, algorithm: str) -> dict:
    """Bytes one smooth iteration must read and write, by component."""
    sum_a, sum_a2 = sum(d.A), sum(a * a for a in d.A)
    learner_state = (sum_a2 + sum_a) if algorithm == "smooth_ce" else sum_a
    parts = {
        "rewards_read": d.H * d.N * d.S * d.J * F64,
        "transitions_read": _transition_bytes(d),
        "q_read_write": 2 * d.H * d.N * d.S * d.J * F64,
        "learner_state_read_write": 2 * d.HS * learner_state * F64,
        "prediction_read_write": 2 * d.HS * sum_a * F64,
        "running_metrics_read_write": 2 * d.HS * (sum_a + sum_a2 + d.N) * F64,
        "metrics_write": 3 * d.N * F64,
    }
    return {"components": parts, "total": sum(parts.values())}


def stage_bytes(d: Dims, T: int) -> dict:
    """Bytes of stage_cce: one ordinary iteration, a first-stage iteration's extra, a stage end's extra."""
    q = d.H * d.N * d.S * d.J * F64
    joint_sum = d.HS * d.J * F64
    learner = d.HS * sum(d.A) * F64  # Hedge state; the prediction has the same size
    quantities = 3 * d.H * d.N * d.S * F64
    game = d.H * d.N * d.S * d.J * F64 + _transition_bytes(d)
    iteration = {"q_read": q, "joint_sum_read_write": 2 * joint_sum, "learner_state_and_prediction_read_write": 4 * learner}
    parts = {
        "iteration": sum(iteration.values()),
        "stage1_extra": game + quantities,
        "stage_end": game + 2 * q + 2 * joint_sum + 2 * quantities + 2 * learner,
    }
    out = _with_amortised(parts, d, T)
    out["iteration_components"] = iteration
    return out


def _transition_bytes(d: Dims) -> int:
    per_entry = (I32 + F64) if d.sparse else F64
    return d.HS * d.J * d.width * per_entry


def _with_amortised(parts: dict, d: Dims, T: int) -> dict:
    """Add the per-iteration average over a ``T``-iteration stage_cce call (first stage and stage ends)."""
    sched = stage_schedule(d.H, T)
    first = min(T, int(sched.lengths[0]))
    ends = int(np.sum(sched.is_end))
    total = T * parts["iteration"] + first * parts["stage1_extra"] + ends * parts["stage_end"]
    return {**parts, "T": T, "first_stage_iterations": first, "stage_ends": ends, "amortised": total / T}
