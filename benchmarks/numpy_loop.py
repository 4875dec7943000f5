r"""A plain NumPy implementation of the three learning dynamics, as a benchmark baseline.

This is what a competent researcher would write without JAX: a Python ``for t in range(1, T+1)``
loop of vectorised NumPy calls (vectorised over ``(h, s)``, Python loops over players and over the
steps ``h`` of the backward pass). It computes the same quantities as
:func:`markovgames.dynamics.run` (see ``docs/explanation.md`` and ``docs/gaps.md``):

* the policies ``pi^t`` of every player for ``t = 1..T``;
* for every prefix ``T' = 1..T``, the output policy's exact value and certified CE/CCE bounds at
  ``s_1`` for every player, by the O(T) index recursions (smooth algorithms: running averages with
  ``alpha_t``; stage-based: quantities of a stage computed once from the stage-average joint policy).

It is independent of the library's JAX code (it only reads the game's arrays). The log-barrier
argmax is solved by a safeguarded Newton iteration (closed form for two actions) and the
Blum–Mansour stationary distribution by GTH elimination (closed form for two actions).

Usage::

    out = run_numpy(game, "smooth_ce", T=1000, eta=0.2)
    out["value"], out["certified_ce_bound"], out["certified_cce_bound"]  # (T, N)
    out["policies"]                                                      # per player (T, H, S, A_i)
"""

from __future__ import annotations

import math
import string

import numpy as np

__all__ = ["run_numpy", "ALGORITHMS"]

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")

_NEWTON_MAX_ITERATIONS = 64
_LETTERS = string.ascii_lowercase[:20]  # action axes; 'z' marks a deviation b
_OWN = "z"


# ------------------------------------------------------------------------------------------------
# Contractions over joint actions (trailing N axes, absolute player order; leading axes are batch)
# ------------------------------------------------------------------------------------------------


class _Contractions:
    """einsum specifications for an N-player game, built once."""

    def __init__(self, num_players: int):
        if num_players > len(_LETTERS):
            raise ValueError(f"at most {len(_LETTERS)} players are supported")
        n = num_players
        acts = _LETTERS[:n]
        self.n = n
        self.axes = tuple(range(-n, 0))
        # [X pi_{-i}](., a_i)
        self.others = [
            ",".join(["..." + acts] + ["..." + acts[k] for k in range(n) if k != i]) + "->..." + acts[i] for i in range(n)
        ]
        dev = [acts[:i] + _OWN + acts[i + 1 :] for i in range(n)]
        # sum_{a_-i} X(., b, a_-i) J_{-i}(., a_-i)
        self.marginal = [f"...{dev[i]},...{acts}->...{_OWN}" for i in range(n)]
        # M[a, b] = sum_{a_-i} J(., a, a_-i) X(., b, a_-i)
        self.swap = [f"...{acts},...{dev[i]}->...{acts[i]}{_OWN}" for i in range(n)]

    def others_expectation(self, x_i, policies, i):
        others = [policies[k] for k in range(self.n) if k != i]
        if not others:
            return x_i
        return np.einsum(self.others[i], x_i, *others)

    def joint_product(self, policies):
        joint = policies[0]
        for k in range(1, self.n):
            joint = joint[..., None] * np.expand_dims(policies[k], axis=tuple(range(-k - 1, -1)))
        return joint

    def joint_expectation(self, x, joint):
        return np.sum(x * joint, axis=self.axes)

    def marginal_expectation(self, x_i, joint, i):
        return np.einsum(self.marginal[i], x_i, joint)

    def swap_expectation(self, joint, x_i, i):
        return np.einsum(self.swap[i], joint, x_i)


def _apply_transition(p_h, stacked):
    """``[P_h X](k, s, a) = sum_s' P_h(s'|s,a) X(k, s')`` for stacked ``X`` of shape ``(K, S')``."""
    return np.tensordot(stacked, p_h, axes=([1], [p_h.ndim - 1]))


# ------------------------------------------------------------------------------------------------
# Regularised argmax maps and the stationary distribution
# ------------------------------------------------------------------------------------------------


def _softmax(g):
    z = g - np.max(g, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def _log_barrier_argmax(g):
    """``argmax_x <x, g> + sum_k log x_k`` on the simplex: ``x_k = 1/(c + d_k)``, ``d = max g - g``."""
    num = g.shape[-1]
    if num == 1:
        return np.ones_like(g)
    d = np.max(g, axis=-1, keepdims=True) - g
    if num == 2:
        # Root of c^2 + (d1 - 2) c - d1 = 0 with d1 the nonzero gap; cancellation-free both ways.
        d1 = np.sum(d, axis=-1, keepdims=True)
        root = np.sqrt(d1 * d1 + 4.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(d1 < 2.0, 0.5 * (2.0 - d1 + root), 2.0 * d1 / np.maximum(root + d1 - 2.0, 1e-300))
    else:
        # f(c) = sum_k 1/(c + d_k) - 1 is convex decreasing; Newton from the Jensen lower bound
        # increases monotonically to the root (safeguarded by the bracket [lower, A]).
        lower = np.maximum(1.0, num - np.mean(d, axis=-1, keepdims=True))
        c = lower.copy()
        tol = 4.0 * np.finfo(g.dtype).eps
        for _ in range(_NEWTON_MAX_ITERATIONS):
            inv = 1.0 / (c + d)
            f = np.sum(inv, axis=-1, keepdims=True) - 1.0
            fprime = np.sum(inv * inv, axis=-1, keepdims=True)
            c_new = np.clip(c + f / fprime, lower, float(num))
            delta = np.max(np.abs(c_new - c) / c_new)
            c = c_new
            if delta <= tol:
                break
    x = 1.0 / (c + d)
    return x / np.sum(x, axis=-1, keepdims=True)


def _stationary(q):
    """Stationary distribution of row-stochastic ``q`` (..., A, A): closed form for A=2, else GTH."""
    num = q.shape[-1]
    if num == 1:
        return np.ones(q.shape[:-1])
    if num == 2:
        p01, p10 = q[..., 0, 1], q[..., 1, 0]
        total = p01 + p10
        return np.stack([p10 / total, p01 / total], axis=-1)
    p = q.copy()
    for k in range(num - 1, 0, -1):
        s = np.sum(p[..., k, :k], axis=-1)
        col = p[..., :k, k] / s[..., None]
        p[..., :k, :k] += col[..., :, None] * p[..., k, None, :k]
        p[..., :k, k] = col
    x = np.empty(q.shape[:-1])
    x[..., 0] = 1.0
    for k in range(1, num):
        x[..., k] = np.sum(x[..., :k] * p[..., :k, k], axis=-1)
    return x / np.sum(x, axis=-1, keepdims=True)


# ------------------------------------------------------------------------------------------------
# Learners: Blum–Mansour over log-barrier OFTRL, and optimistic Hedge (weighted, normalised sums)
# ------------------------------------------------------------------------------------------------


class _Hedge:
    """Weighted optimistic Hedge with the normalised cumulative utility ``G^t = rho_t G^{t-1} + u^t``."""

    def __init__(self, batch, num_actions):
        self.cumulative = np.zeros((*batch, num_actions))

    def play(self, prediction, eta, decay):
        return _softmax(eta * (decay * self.cumulative + prediction))

    def observe(self, strategy, utility, decay):
        self.cumulative = decay * self.cumulative + utility


class _BlumMansour:
    """BM reduction: one log-barrier OFTRL copy per recommended action; play the stationary distribution."""

    def __init__(self, batch, num_actions):
        self.cumulative = np.zeros((*batch, num_actions, num_actions))
        self.last = np.full((*batch, num_actions), 1.0 / num_actions)

    def play(self, prediction, eta, decay):
        base_prediction = self.last[..., :, None] * prediction[..., None, :]
        rows = _log_barrier_argmax(eta * (decay * self.cumulative + base_prediction))
        return _stationary(rows)

    def observe(self, strategy, utility, decay):
        self.cumulative = decay * self.cumulative + strategy[..., :, None] * utility[..., None, :]
        self.last = strategy


# ------------------------------------------------------------------------------------------------
# The dynamics
# ------------------------------------------------------------------------------------------------


def _resolve_eta(eta, algorithm, num_players, horizon, max_actions):
    """Constant ``eta`` -> (eta, False); ``"theory"`` -> the theorem rates (stage: per-stage flag)."""
    if isinstance(eta, str):
        if eta != "theory":
            raise ValueError(f"eta must be a positive number or 'theory', got {eta!r}")
        if algorithm == "stage_cce":
            return 1.0, True
        return 1.0 / (256.0 * num_players * horizon * math.sqrt(horizon * max_actions)), False
    return float(eta), False


def _smooth(rewards, transitions, s1, T, eta, optimistic, bm):
    H, N, S = rewards.shape[:3]
    acts = rewards.shape[3:]
    ops = _Contractions(N)
    learner_cls = _BlumMansour if bm else _Hedge
    learners = [learner_cls((H, S), a) for a in acts]
    prediction = [np.zeros((H, S, a)) for a in acts]
    q = np.zeros((H, N, S, *acts))
    run_m = [np.zeros((H, S, a)) for a in acts]  # CCE running average before the max
    run_d = [np.zeros((H, S, a, a)) for a in acts]  # CE running matrix D[a, b]
    run_v = np.zeros((H, N, S))  # output-policy value
    zeros = np.zeros((4 * N, S))

    out_value = np.empty((T, N))
    out_cce = np.empty((T, N))
    out_ce = np.empty((T, N))
    out_pol = [np.empty((T, H, S, a)) for a in acts]

    for t in range(1, T + 1):
        alpha = (H + 1.0) / (H + t)
        rho = (t - 1.0) / (H + t - 1.0)
        policies = [learners[i].play(prediction[i], eta, rho) for i in range(N)]

        # Backward pass: Q update and the Algorithm-3 recursions (value, CCE, CE) in one sweep.
        nxt = zeros
        for h in range(H - 1, -1, -1):
            moved = _apply_transition(transitions[h], nxt)  # (4N, S, A...)
            r_h = rewards[h]
            alg_target = r_h + moved[:N]
            value_target = r_h + moved[N : 2 * N]
            cce_target = r_h + moved[2 * N : 3 * N]
            ce_target = r_h + moved[3 * N :]
            q[h] = (1.0 - alpha) * q[h] + alpha * alg_target
            pol_h = [p[h] for p in policies]
            joint_h = ops.joint_product(pol_h)
            alg_h = ops.joint_expectation(q[h], joint_h)
            cce_h = np.empty((N, S))
            ce_h = np.empty((N, S))
            for i in range(N):
                m = (1.0 - alpha) * run_m[i][h] + alpha * ops.others_expectation(cce_target[i], pol_h, i)
                u = ops.others_expectation(ce_target[i], pol_h, i)
                d = (1.0 - alpha) * run_d[i][h] + alpha * (pol_h[i][:, :, None] * u[:, None, :])
                run_m[i][h] = m
                run_d[i][h] = d
                cce_h[i] = np.max(m, axis=-1)
                ce_h[i] = np.sum(np.max(d, axis=-1), axis=-1)
            run_v[h] = (1.0 - alpha) * run_v[h] + alpha * ops.joint_expectation(value_target, joint_h)
            nxt = np.concatenate([alg_h, run_v[h], cce_h, ce_h], axis=0)

        out_value[t - 1] = run_v[0, :, s1]
        out_cce[t - 1] = cce_h[:, s1]
        out_ce[t - 1] = ce_h[:, s1]
        for i in range(N):
            out_pol[i][t - 1] = policies[i]

        utilities = [ops.others_expectation(q[:, i], policies, i) for i in range(N)]
        for i in range(N):
            learners[i].observe(policies[i], utilities[i], rho)
        if optimistic:
            prediction = utilities

    return out_value, out_cce, out_ce, out_pol


def _stage_quantities(ops, rewards, transitions, joint_avg, next_quantities):
    """Value, CCE and CE bounds (each (H, N, S)) of an index drawn uniformly from one stage.

    ``next_quantities`` are the quantities of the indices the chain moves to (the previous stage);
    ``None`` means self-referential (stage 1): step h+1 uses the result just computed.
    """
    H, N, S = rewards.shape[:3]
    value = np.zeros((H, N, S))
    cce = np.zeros((H, N, S))
    ce = np.zeros((H, N, S))
    nxt = np.zeros((3 * N, S))
    for h in range(H - 1, -1, -1):
        if next_quantities is not None:
            if h + 1 < H:
                nxt = np.concatenate([next_quantities[0][h + 1], next_quantities[1][h + 1], next_quantities[2][h + 1]])
            else:
                nxt = np.zeros((3 * N, S))
        moved = _apply_transition(transitions[h], nxt)
        r_h = rewards[h]
        value_target = r_h + moved[:N]
        cce_target = r_h + moved[N : 2 * N]
        ce_target = r_h + moved[2 * N :]
        jbar = joint_avg[h]
        value[h] = ops.joint_expectation(value_target, jbar)
        for i in range(N):
            cce[h, i] = np.max(ops.marginal_expectation(cce_target[i], jbar, i), axis=-1)
            ce[h, i] = np.sum(np.max(ops.swap_expectation(jbar, ce_target[i], i), axis=-1), axis=-1)
        nxt = np.concatenate([value[h], cce[h], ce[h]])
    return value, cce, ce


def _stage(rewards, transitions, s1, T, eta, optimistic, per_stage_theory):
    H, N, S = rewards.shape[:3]
    acts = rewards.shape[3:]
    ops = _Contractions(N)
    learners = [_Hedge((H, S), a) for a in acts]
    prediction = [np.zeros((H, S, a)) for a in acts]
    q = np.zeros((H, N, S, *acts))  # Q^tau
    value_sum = np.zeros((H, N, S))
    joint_sum = np.zeros((H, S, *acts))
    current = None  # quantities (value, cce, ce) of an index of the current stage
    stage1_count = 0
    stage1_at_start = np.zeros((3, N))
    later_sum = np.zeros((3, N))

    out = np.empty((T, 3, N))
    out_pol = [np.empty((T, H, S, a)) for a in acts]

    stage = 1
    length = H
    position = 0
    for t in range(1, T + 1):
        position += 1
        eta_tau = 1.0 / (N * max(1.0, math.log(length)) ** 4) if per_stage_theory else 1.0
        step_eta = eta * eta_tau / H
        policies = [learners[i].play(prediction[i], step_eta, 1.0) for i in range(N)]
        utilities = [ops.others_expectation(q[:, i], policies, i) for i in range(N)]
        for i in range(N):
            learners[i].observe(policies[i], utilities[i], 1.0)
        joint = ops.joint_product(policies)  # (H, S, A...)
        value_sum += ops.joint_expectation(q, joint[:, None])
        joint_sum += joint

        if stage == 1:
            current = _stage_quantities(ops, rewards, transitions, joint_sum / position, None)
        at_start = np.stack([c[0, :, s1] for c in current])  # (3, N)
        if stage == 1:
            stage1_count = t
            stage1_at_start = at_start
        else:
            later_sum = later_sum + at_start
        out[t - 1] = (stage1_count * stage1_at_start + later_sum) / t
        for i in range(N):
            out_pol[i][t - 1] = policies[i]

        if position == length:  # end of stage: value update, restart the learners
            v_avg = value_sum / length
            q_next = rewards.copy()
            for h in range(H - 1):
                q_next[h] = rewards[h] + _apply_transition(transitions[h], v_avg[h + 1])
            current = _stage_quantities(ops, rewards, transitions, joint_sum / length, current)
            q = q_next
            if optimistic:
                uniform = [np.full((H, S, a), 1.0 / a) for a in acts]
                prediction = [ops.others_expectation(q[:, i], uniform, i) for i in range(N)]
            learners = [_Hedge((H, S), a) for a in acts]
            value_sum = np.zeros((H, N, S))
            joint_sum = np.zeros((H, S, *acts))
            stage += 1
            length = ((H + 1) * length) // H
            position = 0
        elif optimistic:
            prediction = utilities

    return out[:, 0], out[:, 1], out[:, 2], out_pol


def run_numpy(game, algorithm: str, T: int, eta=0.2, optimistic: bool = True) -> dict:
    """Run ``algorithm`` for ``T`` iterations in plain NumPy.

    Returns ``dict(value, certified_ce_bound, certified_cce_bound)`` (each ``(T, N)``, row ``T'-1``
    for the prefix ``T'``) and ``policies`` (per player ``(T, H, S, A_i)``).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {ALGORITHMS}")
    rewards = np.asarray(game.rewards, dtype=np.float64)
    transitions = np.asarray(game.transitions, dtype=np.float64)
    s1 = int(game.initial_state)
    H, N = rewards.shape[:2]
    eta_scale, per_stage = _resolve_eta(eta, algorithm, N, H, max(rewards.shape[3:]))
    if algorithm == "stage_cce":
        value, cce, ce, pol = _stage(rewards, transitions, s1, T, eta_scale, optimistic, per_stage)
    else:
        bm = algorithm == "smooth_ce"
        value, cce, ce, pol = _smooth(rewards, transitions, s1, T, eta_scale, optimistic, bm)
    return {"value": value, "certified_ce_bound": ce, "certified_cce_bound": cce, "policies": pol}
