"""A deliberately literal reference of learning dynamics on a discounted game, for the test-suite only.

It follows the recursion docs/discounted.md states ("Learning dynamics": a critic per player and
state, Q^t = r + gamma P V^(t-1), V^t = (1 - alpha_t) V^(t-1) + alpha_t <pi^t, Q^t>, utilities
u^t_i = [Q^t_i pi^t_{-i}], the weighted average iterate with weights alpha_T^j) with explicit Python
loops over iterations, players, states and joint actions, raw weighted sums with explicit
weights w_t (w_1 = 1, w_t = w_{t-1} (k + t - 1)/(t - 1), the binomial coefficients binom(k+t-1, k)
extended to a real k), and explicit products for alpha_T^j. Nothing here is shared with the
library: the per-state learners are the literal ones of `reference_impl` (no JAX).

Conventions (0-based): ``rewards[i, s, a_0, ..., a_{N-1}]``, ``transitions[s, a_0, ..., a_{N-1}, s']``;
iterations ``t = 1..T``; policies of player ``i`` are ``(T + 1, S, A_i)`` with row 0 unused.
"""

from __future__ import annotations

import copy as copy_module

import numpy as np

from reference_impl import _expect_joint, _joint_actions, _utility_vector, make_literal_learner

#: The order k of alpha_t = (k+1)/(k+t) of each discounted update (None: the effective horizon 1/(1-gamma)).
ORDERS = {"discounted-smooth": None, "discounted-smooth-uniform": 0, "discounted-smooth-linear": 1}


def order_of(update: str, discount: float) -> float:
    k = ORDERS[update]
    return 1.0 / (1.0 - discount) if k is None else float(k)


def alpha(k: float, t: int) -> float:
    return (k + 1.0) / (k + t)


def weights(k: float, T: int) -> list[float]:
    """``[w_1, ..., w_{T+1}]``, ``w_1 = 1``, ``w_t = w_{t-1} (k + t - 1) / (t - 1)``."""
    out = [1.0]
    for t in range(2, T + 2):
        out.append(out[-1] * (k + t - 1) / (t - 1))
    return out


def alpha_weights(k: float, T: int) -> list[float]:
    """``[alpha_T^1, ..., alpha_T^T]``, ``alpha_T^j = alpha_j prod_{i=j+1..T} (1 - alpha_i)``."""
    out = []
    for j in range(1, T + 1):
        v = alpha(k, j)
        for i in range(j + 1, T + 1):
            v *= 1.0 - alpha(k, i)
        out.append(v)
    return out


def run_discounted_reference(
    rewards, transitions, discount, learner, update, eta, T, *, optimistic=True, order="simultaneous", initial_distribution
) -> dict:
    """Run ``learner`` with the discounted ``update`` literally for ``T`` iterations.

    Returns ``policies`` (per player ``(T + 1, S, A_i)``), ``values`` (``(T + 1, N, S)``, row ``t``
    the critic ``V^t``), ``value_estimate`` (``(T, N)``: ``V^t(rho)``) and ``weighted_average``
    (per player ``(S, A_i)``: ``sum_j alpha_T^j pi^j``).
    """
    rewards = np.asarray(rewards, np.float64)
    transitions = np.asarray(transitions, np.float64)
    N, S = rewards.shape[:2]
    A = tuple(rewards.shape[2:])
    joint = _joint_actions(A)
    k = order_of(update, discount)
    w = weights(k, T)
    copies = {(i, s): make_literal_learner(learner, A[i]) for i in range(N) for s in range(S)}
    pols = [np.zeros((T + 1, S, A[i])) for i in range(N)]
    V = np.zeros((T + 1, N, S))
    last_u = {key: np.zeros(A[key[0]]) for key in copies}  # u^0 = 0
    for t in range(1, T + 1):
        # Q^t = r + gamma P V^(t-1), literally.
        Q = np.zeros((N, S) + A)
        for n in range(N):
            for s in range(S):
                for a in joint:
                    Q[(n, s) + a] = rewards[(n, s) + a] + discount * sum(
                        transitions[(s,) + a + (sp,)] * V[t - 1, n, sp] for sp in range(S)
                    )
        # Two-query learners: the prediction is the utility under Q^t at the proposed strategies.
        queried = {}
        if all(getattr(c, "two_query", False) for c in copies.values()):
            for s in range(S):
                proposals = [copies[(i, s)].propose() for i in range(N)]
                for i in range(N):
                    queried[(i, s)] = _utility_vector(Q[i, s], proposals, i, A)
        for (i, s), c in copies.items():
            m = queried.get((i, s), last_u[(i, s)] if optimistic else np.zeros(A[i]))
            pols[i][t, s] = c.play(m, w[t - 1], eta)
        al = alpha(k, t)
        for n in range(N):
            for s in range(S):
                V[t, n, s] = (1.0 - al) * V[t - 1, n, s] + al * _expect_joint(Q[n, s], [pols[j][t, s] for j in range(N)], A)
        # Every player's utility against the profile pi^t, or in turn (alternating): player i
        # against (pi^{t+1}_{<i}, pi^t_{>i}), each next strategy played by a copy of the learner.
        for s in range(S):
            upcoming = {}
            for i in range(N):
                view = [pols[j][t, s] for j in range(N)]
                if order == "alternating":
                    view = [upcoming[j] if j < i else view[j] for j in range(N)]
                u = _utility_vector(Q[i, s], view, i, A)
                copies[(i, s)].observe(u, w[t - 1], eta)
                last_u[(i, s)] = u
                if order == "alternating" and i < N - 1:
                    nxt = u if optimistic else np.zeros(A[i])
                    upcoming[i] = copy_module.deepcopy(copies[(i, s)]).play(nxt, w[t], eta)
    rho = np.asarray(initial_distribution, np.float64)
    value_estimate = np.array([[sum(rho[s] * V[t, n, s] for s in range(S)) for n in range(N)] for t in range(1, T + 1)])
    aw = alpha_weights(k, T)
    average = [sum(aw[j - 1] * pols[i][j] for j in range(1, T + 1)) for i in range(N)]
    return {"policies": pols, "values": V, "value_estimate": value_estimate, "weighted_average": average}
