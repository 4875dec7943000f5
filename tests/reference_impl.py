"""A deliberately literal, slow reference implementation used only by the test-suite.

It follows the paper's pseudo-code (Algorithms 1-4 of Mao et al., L4DC 2024) and the project's
contract (``docs/explanation.md`` and ``docs/gaps.md``) as literally as possible: raw weighted sums with explicit integer
weights ``w_j = binom(H+j-1, H)``, explicit ``alpha_t^j = alpha_j prod_{k=j+1..t} (1 - alpha_k)``,
explicit Python loops over iterations, steps, states, players and actions.  It is independent of
the library (no JAX, no shared code): the log-barrier step is solved by bisection, stationary
distributions by ``numpy.linalg.lstsq``.  It is only meant for small T (<= 60) and H (<= 3).
``run_reference_composition`` also takes the update order and what the learners observe (a
feedback object: `FullInformation` by default; tests/literal_feedback.py's sampled estimates).

Conventions (0-based): players ``i = 0..N-1``, steps ``h = 0..H-1``,
``rewards[h, i, s, a_0, ..., a_{N-1}]``, ``transitions[h, s, a_0, ..., a_{N-1}, s']``.
Iterations ``t = 1..T`` are 1-based; policies of player i are stored as an array of shape
``(T+1, H, S, A_i)`` whose index 0 is the uniform ``pi^0``.
"""

from __future__ import annotations

import copy as copy_module
import itertools
import math

import numpy as np

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")


# ----------------------------------------------------------------------------------------------
# Weights and step sizes
# ----------------------------------------------------------------------------------------------


def weight(H: int, j: int) -> int:
    """``w_j = binom(H+j-1, H)`` as an exact Python int (j >= 1)."""
    return math.comb(H + j - 1, H)


def alpha(H: int, t: int) -> float:
    """``alpha_t = (H+1)/(H+t)``."""
    return (H + 1) / (H + t)


def alpha_weights(H: int, t: int) -> list[float]:
    """``[alpha_t^1, ..., alpha_t^t]`` with ``alpha_t^j = alpha_j prod_{k=j+1..t} (1-alpha_k)``."""
    out = []
    for j in range(1, t + 1):
        v = alpha(H, j)
        for k in range(j + 1, t + 1):
            v *= 1.0 - alpha(H, k)
        out.append(v)
    return out


def stage_lengths(H: int, n: int) -> list[int]:
    """The first n stage lengths: ``L_1 = H``, ``L_{tau+1} = ((H+1) L_tau) // H``."""
    out = [H]
    while len(out) < n:
        out.append(((H + 1) * out[-1]) // H)
    return out[:n]


def stage_partition(H: int, T: int) -> list[tuple[int, int, bool]]:
    """Stages covering iterations 1..T: ``(start, end, complete)``, 1-based inclusive."""
    out = []
    start, L = 1, H
    while start <= T:
        end = start + L - 1
        if end <= T:
            out.append((start, end, True))
        else:
            out.append((start, T, False))
        start = end + 1
        L = ((H + 1) * L) // H
    return out


# ----------------------------------------------------------------------------------------------
# Small literal helpers over joint actions
# ----------------------------------------------------------------------------------------------


def _joint_actions(A):
    return list(itertools.product(*[range(a) for a in A]))


def _prob_others(pols, a, i):
    """prod_{k != i} pols[k][a_k] (pols: list of per-player probability vectors)."""
    p = 1.0
    for k in range(len(pols)):
        if k != i:
            p *= pols[k][a[k]]
    return p


def _prob_joint(pols, a):
    p = 1.0
    for k in range(len(pols)):
        p *= pols[k][a[k]]
    return p


def _utility_vector(M, pols, i, A):
    """``[M pi_{-i}](b) = sum_{a: a_i = b} M[a] prod_{k != i} pi_k(a_k)``; M over joint actions."""
    u = np.zeros(A[i])
    for a in _joint_actions(A):
        u[a[i]] += M[a] * _prob_others(pols, a, i)
    return u


def _expect_joint(M, pols, A):
    """``sum_a M[a] prod_k pi_k(a_k)``."""
    v = 0.0
    for a in _joint_actions(A):
        v += M[a] * _prob_joint(pols, a)
    return v


def _pols_at(policies, t, h, s):
    return [policies[k][t, h, s] for k in range(len(policies))]


def log_barrier_argmax(g: np.ndarray) -> np.ndarray:
    """``argmax_{x in simplex} <x, g> + sum_k log x_k``.

    KKT: ``x_k = 1/(lam - g_k)`` with ``lam > max g`` and ``sum_k x_k = 1``. Since every
    ``x_k <= 1`` we have ``lam - max g`` in ``[1, A]``; bisection on that bracket to full
    float64 precision (on the shifted vector ``g - max g``).
    """
    g = np.asarray(g, dtype=float)
    A = g.shape[0]
    gs = g - np.max(g)

    def f(lam):
        return np.sum(1.0 / (lam - gs)) - 1.0

    lo, hi = 1.0, float(A)
    if f(hi) >= 0.0:  # only when all g are equal: lam = A exactly
        lo = hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    lam = lo if abs(f(lo)) <= abs(f(hi)) else hi
    x = 1.0 / (lam - gs)
    return x / np.sum(x)


def softmax(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def stationary_distribution(q: np.ndarray) -> np.ndarray:
    """pi with ``q^T pi = pi``, ``sum pi = 1`` for the row-stochastic ``q`` (least squares)."""
    A = q.shape[0]
    M = np.vstack([q.T - np.eye(A), np.ones((1, A))])
    rhs = np.zeros(A + 1)
    rhs[-1] = 1.0
    x, *_ = np.linalg.lstsq(M, rhs, rcond=None)
    x = np.clip(x, 0.0, None)
    return x / np.sum(x)


# ----------------------------------------------------------------------------------------------
# Learning dynamics
# ----------------------------------------------------------------------------------------------


def _dims(rewards, transitions):
    rewards = np.asarray(rewards, dtype=float)
    transitions = np.asarray(transitions, dtype=float)
    H, N, S = rewards.shape[:3]
    A = tuple(rewards.shape[3:])
    assert len(A) == N
    assert transitions.shape == (H, S) + A + (S,)
    return rewards, transitions, H, N, S, A


def _uniform_policies(T, H, S, A):
    pols = []
    for Ai in A:
        p = np.zeros((T + 1, H, S, Ai))
        p[0] = 1.0 / Ai
        pols.append(p)
    return pols


def run_reference(rewards, transitions, algorithm, eta, T, optimistic=True) -> dict:
    """Run one of the paper's dynamics literally for T iterations.

    Returns a dict with ``policies`` (list over players of arrays (T+1, H, S, A_i)), ``etas``
    (list, index t = step size used at iteration t, index 0 None) and
    - smooth_ce / smooth_cce: ``Q`` of shape (T+1, H, N, S, A_0..A_{N-1}) with Q^0 = 0;
    - stage_cce: ``stage_Q`` (list, element tau-1 is Q^tau of shape (H, N, S, A...), Q^1 = 0),
      ``stage_bounds`` (list of (start, end), 1-based inclusive, completed stages then the final
      partial stage if any), ``stage_complete`` (parallel list of bools) and
      ``partial_final_stage`` (bool).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(algorithm)
    rewards, transitions, H, N, S, A = _dims(rewards, transitions)
    if algorithm == "stage_cce":
        return _run_stage_cce(rewards, transitions, H, N, S, A, eta, T, optimistic)
    return _run_smooth(rewards, transitions, H, N, S, A, algorithm, eta, T, optimistic)


def _run_smooth(rewards, transitions, H, N, S, A, algorithm, eta, T, optimistic):
    if isinstance(eta, str):
        assert eta == "theory"
        eta_val = 1.0 / (256.0 * N * H * math.sqrt(H * max(A)))
    else:
        eta_val = float(eta)
    w = [None] + [weight(H, j) for j in range(1, T + 1)]
    joint = _joint_actions(A)

    Q = np.zeros((T + 1, H, N, S) + A)  # Q^0 = 0
    pols = _uniform_policies(T, H, S, A)  # pi^0 uniform
    # U[i][j, h, s] = u^j_{h,i}(s, .) = [Q^j_{h,i} pi^j_{h,-i}](s, .), u^0 = 0
    U = [np.zeros((T + 1, H, S, A[i])) for i in range(N)]

    for t in range(1, T + 1):
        # ---- policy update -------------------------------------------------------------
        for h in range(H):
            for s in range(S):
                for i in range(N):
                    Ai = A[i]
                    if algorithm == "smooth_ce":
                        q = np.zeros((Ai, Ai))
                        for a in range(Ai):
                            ell = np.zeros(Ai)
                            for j in range(1, t):
                                for b in range(Ai):
                                    ell[b] += w[j] * pols[i][j, h, s, a] * U[i][j, h, s, b]
                            if optimistic:
                                for b in range(Ai):
                                    ell[b] += w[t] * pols[i][t - 1, h, s, a] * U[i][t - 1, h, s, b]
                            q[a] = log_barrier_argmax(eta_val * ell / w[t])
                        pols[i][t, h, s] = stationary_distribution(q)
                    else:  # smooth_cce
                        ell = np.zeros(Ai)
                        for j in range(1, t):
                            for b in range(Ai):
                                ell[b] += w[j] * U[i][j, h, s, b]
                        if optimistic:
                            for b in range(Ai):
                                ell[b] += w[t] * U[i][t - 1, h, s, b]
                        pols[i][t, h, s] = softmax(eta_val * ell / w[t])

        # ---- value update, h = H-1 down to 0 --------------------------------------------
        al = alpha(H, t)
        for h in range(H - 1, -1, -1):
            # V^t_{h+1}(s') = sum_a Q^t_{h+1}(s', a) prod_k pi^t_{h+1,k}(s', a_k); V_H = 0
            Vnext = np.zeros((N, S))
            if h + 1 < H:
                for n in range(N):
                    for sp in range(S):
                        Vnext[n, sp] = _expect_joint(Q[t, h + 1, n, sp], _pols_at(pols, t, h + 1, sp), A)
            for n in range(N):
                for s in range(S):
                    for a in joint:
                        cont = 0.0
                        for sp in range(S):
                            cont += transitions[(h, s) + a + (sp,)] * Vnext[n, sp]
                        target = rewards[(h, n, s) + a] + cont
                        Q[(t, h, n, s) + a] = (1.0 - al) * Q[(t - 1, h, n, s) + a] + al * target

        # ---- utilities u^t ------------------------------------------------------------
        for h in range(H):
            for s in range(S):
                for i in range(N):
                    U[i][t, h, s] = _utility_vector(Q[t, h, i, s], _pols_at(pols, t, h, s), i, A)

    return {
        "algorithm": algorithm,
        "policies": pols,
        "Q": Q,
        "etas": [None] + [eta_val] * T,
    }


def _run_stage_cce(rewards, transitions, H, N, S, A, eta, T, optimistic):
    joint = _joint_actions(A)
    pols = _uniform_policies(T, H, S, A)
    uniform = [np.full(A[i], 1.0 / A[i]) for i in range(N)]

    stage_Q = [np.zeros((H, N, S) + A)]  # Q^1 = 0
    stage_bounds = []
    stage_complete = []
    tau = 1
    t_start = 1
    L = H
    reset_prev = False  # True at the first iteration of a stage tau >= 2
    etas = [None]

    for t in range(1, T + 1):
        Qtau = stage_Q[tau - 1]
        if isinstance(eta, str):
            assert eta == "theory"
            eta_tau = 1.0 / (N * max(1.0, math.log(L)) ** 4)
        else:
            eta_tau = float(eta)
        etas.append(eta_tau)

        # ---- policy update ---------------------------------------------------------------
        for h in range(H):
            for s in range(S):
                for i in range(N):
                    ell = np.zeros(A[i])
                    for tp in range(t_start, t):
                        ell += _utility_vector(Qtau[h, i, s], _pols_at(pols, tp, h, s), i, A)
                    if optimistic:
                        if reset_prev:
                            prev = [uniform[k] for k in range(N)]
                        else:
                            prev = _pols_at(pols, t - 1, h, s)
                        ell += _utility_vector(Qtau[h, i, s], prev, i, A)
                    pols[i][t, h, s] = softmax(eta_tau * ell / H)
        reset_prev = False

        # ---- stage-end value update ------------------------------------------------------
        if t - t_start + 1 >= L:
            t_end = t
            Qnew = np.zeros((H, N, S) + A)
            for h in range(H):
                for n in range(N):
                    for s in range(S):
                        for a in joint:
                            total = 0.0
                            for tp in range(t_start, t_end + 1):
                                cont = 0.0
                                if h + 1 < H:
                                    for sp in range(S):
                                        vnext = _expect_joint(Qtau[h + 1, n, sp], _pols_at(pols, tp, h + 1, sp), A)
                                        cont += transitions[(h, s) + a + (sp,)] * vnext
                                total += rewards[(h, n, s) + a] + cont
                            Qnew[(h, n, s) + a] = total / L
            stage_Q.append(Qnew)
            stage_bounds.append((t_start, t_end))
            stage_complete.append(True)
            tau += 1
            t_start = t + 1
            L = ((H + 1) * L) // H
            reset_prev = True

    partial = t_start <= T
    if partial:
        stage_bounds.append((t_start, T))
        stage_complete.append(False)

    return {
        "algorithm": "stage_cce",
        "policies": pols,
        "stage_Q": stage_Q,
        "stage_bounds": stage_bounds,
        "stage_complete": stage_complete,
        "partial_final_stage": partial,
        "etas": etas,
    }


# ----------------------------------------------------------------------------------------------
# Any learner with either value update ("LEARNER+UPDATE"), with literal learners
# ----------------------------------------------------------------------------------------------
#
# Each learner below is one copy for one (player, step, state), fed in order. Weighted sums are
# raw: the smooth update passes the explicit integer weight w_t of the current iteration
# (the stage update passes 1), so nothing here uses the library's normalised form.


class LiteralOFTRL:
    """OFTRL with raw weighted sums: plays argmax(eta (sum_j w_j u^j + w_t m) / w_t)."""

    def __init__(self, num_actions, argmax):
        self.total = np.zeros(num_actions)  # sum_j w_j u^j
        self.argmax = argmax

    def play(self, m, w_t, eta):
        return self.argmax(eta * (self.total + w_t * m) / w_t)

    def observe(self, u, w_t, eta=None):
        self.total = self.total + w_t * u


class LiteralRMPlus:
    """Predictive regret matching+ (Farina, Kroer and Sandholm 2021) on raw weighted regrets:
    R^t = [R^{t-1} + w_t (u^t - <u^t, x^t>)]^+, x^t = [R^{t-1} + w_t (m - <m, x^{t-1}>)]^+ normalised
    (uniform when zero)."""

    def __init__(self, num_actions):
        self.regret = np.zeros(num_actions)
        self.last = np.full(num_actions, 1.0 / num_actions)

    def play(self, m, w_t, eta):
        theta = np.maximum(self.regret + w_t * (m - np.dot(m, self.last)), 0.0)
        total = theta.sum()
        x = theta / total if total > 0 else np.full(len(theta), 1.0 / len(theta))
        self.last = x
        return x

    def observe(self, u, w_t, eta=None):
        self.regret = np.maximum(self.regret + w_t * (u - np.dot(u, self.last)), 0.0)


def literal_stationary_distribution(q: np.ndarray) -> np.ndarray:
    """The stationary distribution the library documents for a possibly reducible chain: let k* be
    the highest state from which no lower-numbered state is reachable (0 if none); the unique
    stationary distribution of the closed class of states reachable from k*, zero elsewhere.
    Reachability by breadth-first search over the positive entries; the class's distribution by
    least squares (:func:`stationary_distribution`)."""
    A = q.shape[0]

    def reachable(k):
        seen, todo = {k}, [k]
        while todo:
            i = todo.pop()
            for j in range(A):
                if q[i, j] > 0 and j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen

    k_star = max(k for k in range(A) if min(reachable(k)) == k)
    members = sorted(reachable(k_star))
    pi = np.zeros(A)
    sub = q[np.ix_(members, members)]
    pi[members] = stationary_distribution(sub / sub.sum(axis=1, keepdims=True))
    return pi


class LiteralBlumMansour:
    """The Blum–Mansour reduction: copy a plays row q^a from prediction pi^{t-1}(a) m and observes
    pi^t(a) u; pi^t is the stationary distribution of the rows."""

    def __init__(self, num_actions, make_base):
        self.bases = [make_base() for _ in range(num_actions)]
        self.last = np.full(num_actions, 1.0 / num_actions)

    def play(self, m, w_t, eta):
        rows = np.array([base.play(self.last[a] * m, w_t, eta) for a, base in enumerate(self.bases)])
        self.last = literal_stationary_distribution(rows)
        return self.last

    def observe(self, u, w_t, eta=None):
        for a, base in enumerate(self.bases):
            base.observe(self.last[a] * u, w_t, eta)


def literal_project_simplex(y: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the simplex by the sort-based algorithm (Held, Wolfe and Crowder 1974)."""
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - 1.0
    k = max(k for k in range(1, len(y) + 1) if u[k - 1] - css[k - 1] / k > 0)
    return np.maximum(y - css[k - 1] / k, 0.0)


def literal_project_chopped_cone(y: np.ndarray) -> np.ndarray:
    """Euclidean projection onto {z >= 0, sum z >= 1}: the positive part if it sums to at least 1,
    else the projection onto the simplex (the sum constraint is then active)."""
    positive = np.maximum(y, 0.0)
    return positive if positive.sum() >= 1.0 else literal_project_simplex(y)


class LiteralProjected:
    """The projected-gradient learners, unweighted (they ignore w_t): a base point zhat (uniform at
    first) and the last strategy x. ``ogda``/``extragradient``: x = Pi_simplex(zhat + eta m),
    zhat <- Pi_simplex(zhat + eta u). ``exrm-plus``/``sprm-plus``: on the chopped-off cone C with
    g(z) = z / sum z, x = g(Pi_C(zhat + eta (m - <m, y>))) with y = g(zhat) (ExRM+) or the last x
    (SPRM+), zhat <- Pi_C(zhat + eta (u - <u, x>)). ``extragradient`` and ``exrm-plus`` propose
    g(zhat) (their prediction m is the utility there)."""

    def __init__(self, num_actions, kind):
        self.kind = kind
        self.base = np.full(num_actions, 1.0 / num_actions)
        self.last = np.full(num_actions, 1.0 / num_actions)
        self.cone = kind in ("exrm-plus", "sprm-plus")
        self.two_query = kind in ("extragradient", "exrm-plus")

    def _strategy(self, z):
        return z / z.sum() if self.cone else z

    def _project(self, y):
        return literal_project_chopped_cone(y) if self.cone else literal_project_simplex(y)

    def propose(self):
        return self._strategy(self.base)

    def play(self, m, w_t, eta):
        if self.cone:
            at = self._strategy(self.base) if self.two_query else self.last
            m = m - np.dot(m, at)
        self.last = self._strategy(self._project(self.base + eta * m))
        return self.last

    def observe(self, u, w_t, eta=None):
        step = u - np.dot(u, self.last) if self.cone else u
        self.base = self._project(self.base + eta * step)


def make_literal_learner(name: str, num_actions: int):
    """A fresh literal learner called ``name`` (``hedge``, ``logbarrier``, ``rm-plus``, ``bm-...``,
    ``ogda``, ``extragradient``, ``exrm-plus``, ``sprm-plus``)."""
    if name in ("ogda", "extragradient", "exrm-plus", "sprm-plus"):
        return LiteralProjected(num_actions, name)
    if name.startswith("bm-"):
        return LiteralBlumMansour(num_actions, lambda: make_literal_learner(name[3:], num_actions))
    if name == "hedge":
        return LiteralOFTRL(num_actions, softmax)
    if name == "logbarrier":
        return LiteralOFTRL(num_actions, log_barrier_argmax)
    if name == "rm-plus":
        return LiteralRMPlus(num_actions)
    raise ValueError(name)


#: The order k of each smooth update's averaging (alpha_t = (k+1)/(k+t), w_j = binom(k+j-1, k));
#: None: the paper's k = H.
SMOOTH_ORDERS = {"smooth": None, "smooth-uniform": 0, "smooth-linear": 1}


def smooth_order(update: str, H: int) -> int:
    order = SMOOTH_ORDERS[update]
    return H if order is None else order


class FullInformation:
    """The paper's feedback (the default of :func:`run_reference_composition`): every learner
    observes its exact utility and the value update applies the game's kernel.

    A feedback object has two methods, called at iteration ``t`` (1-based):

    * ``utility(t, purpose, Q, h, s, i, view)``: what player ``i``'s learner at ``(h, s)`` observes
      as its utility under ``Q`` (``(H, N, S, A...)``) against the profile ``view`` (a list over
      players of probability vectors at ``(h, s)``; entry ``i`` unused). ``purpose`` is
      ``"others"`` (the utility of the iteration's profile) or ``"proposals"`` (a two-query
      learner's prediction, at the proposed strategies);
    * ``kernel(t, transitions)``: the transition kernel ``(H, S, A..., S)`` of the Bellman targets
      of the value update made at iteration ``t`` (every iteration of the smooth update; the
      iteration that ends a stage of the stage-based one).
    """

    def utility(self, t, purpose, Q, h, s, i, view):
        return _utility_vector(Q[h, i, s], view, i, Q.shape[3:])

    def kernel(self, t, transitions):
        return transitions


FULL_INFORMATION = FullInformation()

#: The update orders: every player against the profile ``pi^t`` (the paper's), or in turn, player
#: ``i`` against ``(pi^{t+1}_{<i}, pi^t_{>i})``.
ORDERS = ("simultaneous", "alternating")


def _queried(copies, Q, N, H, S, A, utility=None) -> dict:
    """Two-query learners' predictions: each player's utility under ``Q`` at the strategies every
    player's copy at ``(h, s)`` proposes (empty for one-query learners). ``utility(Q, h, s, i,
    view)``: what the player observes (default: the exact utility)."""
    if not all(getattr(copy, "two_query", False) for copy in copies.values()):
        return {}
    out = {}
    for h in range(H):
        for s in range(S):
            proposals = [copies[(i, h, s)].propose() for i in range(N)]
            for i in range(N):
                if utility is None:
                    out[(i, h, s)] = _utility_vector(Q[h, i, s], proposals, i, A)
                else:
                    out[(i, h, s)] = utility(Q, h, s, i, proposals)
    return out


def _observe_round(copies, pols, t, Q, A, order, utility, weights, last_u, following):
    """Feed every copy its utility of iteration ``t`` under ``Q`` and remember it in ``last_u``.

    Simultaneous: every player against the profile ``pi^t``. Alternating: the copies are fed in the
    players' order (``copies`` lists player 0's first), and player ``i`` at ``(h, s)`` observes its
    utility against ``(pi^{t+1}_{<i}, pi^t_{>i})``: each player but the last plays its next strategy
    at once, on a copy of its learner (``following = (prediction(i, u), w_next, eta_next)``, the
    next iteration's settings; the learner itself plays it again at ``t + 1``, from the same state).
    ``weights = (w_t, eta)`` of the observation.
    """
    N = len(A)
    upcoming = {}
    for (i, h, s), copy in copies.items():
        view = _pols_at(pols, t, h, s)
        if order == "alternating":
            view = [upcoming[(j, h, s)] if j < i else view[j] for j in range(N)]
        u = utility(Q, h, s, i, view)
        copy.observe(u, *weights)
        last_u[(i, h, s)] = u
        if order == "alternating" and i < N - 1:
            prediction, w_next, eta_next = following
            upcoming[(i, h, s)] = copy_module.deepcopy(copy).play(prediction(i, u), w_next, eta_next)


def run_reference_composition(
    rewards, transitions, learner, update, eta, T, optimistic=True, *, order="simultaneous", feedback=None
) -> dict:
    """Run ``learner`` with the ``update`` value update literally for T iterations: "smooth"
    (Algorithm 1), "smooth-uniform" or "smooth-linear" (Algorithm 1 with H replaced by the order
    0 or 1 in alpha_t and w_j), or "stage".

    Returns ``policies`` (list over players of (T+1, H, S, A_i), index 0 the uniform pi^0). The
    value updates are those of :func:`run_reference` (Algorithm 1's smooth update, Algorithm 2's
    stages); only the per-state learner differs.

    ``order``: ``"simultaneous"`` (the paper's) or ``"alternating"`` (`_observe_round`; not for
    two-query learners). ``feedback``: what the learners observe and which kernel the value
    update applies (`FullInformation`, the default, is the paper's full information).
    """
    rewards, transitions, H, N, S, A = _dims(rewards, transitions)
    if order not in ORDERS:
        raise ValueError(order)
    feedback = FULL_INFORMATION if feedback is None else feedback
    joint = _joint_actions(A)
    pols = _uniform_policies(T, H, S, A)

    def observed(t, purpose):
        return lambda Qx, h, s, i, view: feedback.utility(t, purpose, Qx, h, s, i, view)

    def next_prediction(i, u):
        # The prediction of the next iteration: its utility (optimistic), else 0.
        return u if optimistic else np.zeros(A[i])

    if update in SMOOTH_ORDERS:
        k = smooth_order(update, H)
        eta_val = 1.0 / (256.0 * N * H * math.sqrt(H * max(A))) if eta == "theory" else float(eta)
        copies = {(i, h, s): make_literal_learner(learner, A[i]) for i in range(N) for h in range(H) for s in range(S)}
        Q = np.zeros((H, N, S) + A)
        last_u = {key: np.zeros(A[key[0]]) for key in copies}  # u^{t-1}, u^0 = 0
        for t in range(1, T + 1):
            w_t = weight(k, t)
            # A two-query learner's prediction: its utility at the proposed strategies, under Q^{t-1}
            # (the rewards at t = 1).
            queried = _queried(copies, rewards if t == 1 else Q, N, H, S, A, observed(t, "proposals"))
            for (i, h, s), copy in copies.items():
                m = queried.get((i, h, s), last_u[(i, h, s)] if optimistic else np.zeros(A[i]))
                pols[i][t, h, s] = copy.play(m, w_t, eta_val)
            al = alpha(k, t)
            P = feedback.kernel(t, transitions)  # the Bellman targets' kernel
            Qn = np.zeros_like(Q)
            for h in range(H - 1, -1, -1):
                Vnext = np.zeros((N, S))
                if h + 1 < H:
                    for n in range(N):
                        for sp in range(S):
                            Vnext[n, sp] = _expect_joint(Qn[h + 1, n, sp], _pols_at(pols, t, h + 1, sp), A)
                for n in range(N):
                    for s in range(S):
                        for a in joint:
                            target = rewards[(h, n, s) + a] + sum(P[(h, s) + a + (sp,)] * Vnext[n, sp] for sp in range(S))
                            Qn[(h, n, s) + a] = (1.0 - al) * Q[(h, n, s) + a] + al * target
            Q = Qn
            following = (next_prediction, weight(k, t + 1), eta_val)
            _observe_round(copies, pols, t, Q, A, order, observed(t, "others"), (w_t, eta_val), last_u, following)
        return {"policies": pols}
    if update != "stage":
        raise ValueError(update)
    Qtau = np.zeros((H, N, S) + A)  # Q^1 = 0
    t_start, L = 1, H
    copies = None
    for t in range(1, T + 1):
        eta_tau = 1.0 / (N * max(1.0, math.log(L)) ** 4) if eta == "theory" else float(eta)
        if t == t_start:
            # A new stage: fresh learners; the prediction starts from the uniform policy's utility
            # (exact: the uniform profile is no one's to sample).
            copies = {(i, h, s): make_literal_learner(learner, A[i]) for i in range(N) for h in range(H) for s in range(S)}
            uniform = [np.full(A[k], 1.0 / A[k]) for k in range(N)]
            last_u = {
                (i, h, s): _utility_vector(Qtau[h, i, s], uniform, i, A) for i in range(N) for h in range(H) for s in range(S)
            }
        queried = _queried(copies, Qtau, N, H, S, A, observed(t, "proposals"))
        for (i, h, s), copy in copies.items():
            m = queried.get((i, h, s), last_u[(i, h, s)] if optimistic else np.zeros(A[i]))
            pols[i][t, h, s] = copy.play(m, 1, eta_tau / H)
        # Alternation at a stage's last iteration: the next strategies are the current learners'
        # (the restart only comes with the value update).
        following = (next_prediction, 1, eta_tau / H)
        _observe_round(copies, pols, t, Qtau, A, order, observed(t, "others"), (1, eta_tau / H), last_u, following)
        if t - t_start + 1 >= L:
            P = feedback.kernel(t, transitions)  # the Bellman targets' kernel at the stage's end
            Qnew = np.zeros_like(Qtau)
            for h in range(H):
                for n in range(N):
                    for s in range(S):
                        for a in joint:
                            total = 0.0
                            for tp in range(t_start, t + 1):
                                cont = 0.0
                                if h + 1 < H:
                                    for sp in range(S):
                                        vnext = _expect_joint(Qtau[h + 1, n, sp], _pols_at(pols, tp, h + 1, sp), A)
                                        cont += P[(h, s) + a + (sp,)] * vnext
                                total += rewards[(h, n, s) + a] + cont
                            Qnew[(h, n, s) + a] = total / L
            Qtau = Qnew
            t_start, L = t + 1, ((H + 1) * L) // H
    return {"policies": pols}


# ----------------------------------------------------------------------------------------------
# Output policies (Algorithms 3 and 4) as index kernels
# ----------------------------------------------------------------------------------------------


def output_policy_kernel(algorithm, T, H):
    """``(t0, mu)``: t0 of shape (T+1,) (index 0 unused, zero) and mu of shape (T+1, T+1)
    with ``mu[t, j]`` = P(next index j | current index t); row and column 0 unused (zero)."""
    t0 = np.zeros(T + 1)
    mu = np.zeros((T + 1, T + 1))
    # A composition "LEARNER+UPDATE" (or the update's name) has its update's output policy.
    update = algorithm.rpartition("+")[2]
    order = smooth_order(update, H) if update in SMOOTH_ORDERS else H  # the paper's names: k = H
    algorithm = {name: "smooth_ce" for name in SMOOTH_ORDERS}.get(update, {"stage": "stage_cce"}.get(update, algorithm))
    if algorithm in ("smooth_ce", "smooth_cce"):
        t0[T] = 1.0
        for t in range(1, T + 1):
            aw = alpha_weights(order, t)
            for j in range(1, t + 1):
                mu[t, j] = aw[j - 1]
    elif algorithm == "stage_cce":
        for t in range(1, T + 1):
            t0[t] = 1.0 / T
        stages = stage_partition(H, T)
        for k, (start, end, _complete) in enumerate(stages):
            if k == 0:
                ps, pe = start, end  # stage 1: uniform over stage 1 itself (<= T)
            else:
                ps, pe, _ = stages[k - 1]
            for t in range(start, end + 1):
                for j in range(ps, pe + 1):
                    mu[t, j] = 1.0 / (pe - ps + 1)
    else:
        raise ValueError(algorithm)
    return t0, mu


# ----------------------------------------------------------------------------------------------
# Metrics (docs/gaps.md: values and certified gaps) by explicit index recursions
# ----------------------------------------------------------------------------------------------


def _check_policies(rewards, transitions, policies, mu):
    rewards, transitions, H, N, S, A = _dims(rewards, transitions)
    T = mu.shape[0] - 1
    assert len(policies) == N
    for i in range(N):
        assert policies[i].shape[0] >= T + 1 and policies[i].shape[1:] == (H, S, A[i])
    return rewards, transitions, H, N, S, A, T


def index_values(rewards, transitions, policies, mu):
    """``V[t, h, i, s] = V^t_h(s)`` for player i: ``V^t_h(s) = sum_j mu[t,j]
    [(r_h + P_h V^j_{h+1}) pi^j_h](s)`` with the joint product policy; shape (T+1, H+1, N, S),
    ``V[:, H] = 0``, row t = 0 unused (zero)."""
    rewards, transitions, H, N, S, A, T = _check_policies(rewards, transitions, policies, mu)
    joint = _joint_actions(A)
    V = np.zeros((T + 1, H + 1, N, S))
    for h in range(H - 1, -1, -1):
        # X[j, i, s] = [(r_h + P_h V^j_{h+1}) pi^j_h](s)
        X = np.zeros((T + 1, N, S))
        for j in range(1, T + 1):
            for s in range(S):
                pj = _pols_at(policies, j, h, s)
                for i in range(N):
                    x = 0.0
                    for a in joint:
                        val = rewards[(h, i, s) + a]
                        for sp in range(S):
                            val += transitions[(h, s) + a + (sp,)] * V[j, h + 1, i, sp]
                        x += _prob_joint(pj, a) * val
                    X[j, i, s] = x
        for t in range(1, T + 1):
            for j in range(1, T + 1):
                if mu[t, j] != 0.0:
                    V[t, h] += mu[t, j] * X[j]
    return V


def certified_cce_values(rewards, transitions, policies, mu):
    """``B[t, h, i, s] = max_b sum_j mu[t,j] [(r_{h,i} + P_h B^j_{h+1}) pi^j_{h,-i}](s, b)``;
    shape (T+1, H+1, N, S), ``B[:, H] = 0``."""
    rewards, transitions, H, N, S, A, T = _check_policies(rewards, transitions, policies, mu)
    joint = _joint_actions(A)
    B = np.zeros((T + 1, H + 1, N, S))
    for h in range(H - 1, -1, -1):
        for i in range(N):
            # Y[j, s, b] = [(r_{h,i} + P_h B^j_{h+1}) pi^j_{h,-i}](s, b)
            Y = np.zeros((T + 1, S, A[i]))
            for j in range(1, T + 1):
                for s in range(S):
                    pj = _pols_at(policies, j, h, s)
                    for a in joint:
                        val = rewards[(h, i, s) + a]
                        for sp in range(S):
                            val += transitions[(h, s) + a + (sp,)] * B[j, h + 1, i, sp]
                        Y[j, s, a[i]] += _prob_others(pj, a, i) * val
            for t in range(1, T + 1):
                for s in range(S):
                    acc = np.zeros(A[i])
                    for j in range(1, T + 1):
                        if mu[t, j] != 0.0:
                            acc += mu[t, j] * Y[j, s]
                    B[t, h, i, s] = np.max(acc)
    return B


def certified_ce_values(rewards, transitions, policies, mu):
    """``W[t, h, i, s] = sum_a max_b D^t_h(s)[a, b]`` with
    ``D^t_h(s)[a, b] = sum_j mu[t,j] sum_{a_-i} pi^j_h(a, a_-i | s)
    [r_{h,i}(s, b, a_-i) + P_h(s, b, a_-i) . W^j_{h+1}]``; shape (T+1, H+1, N, S)."""
    rewards, transitions, H, N, S, A, T = _check_policies(rewards, transitions, policies, mu)
    joint = _joint_actions(A)
    W = np.zeros((T + 1, H + 1, N, S))
    for h in range(H - 1, -1, -1):
        for i in range(N):
            # E[j, s, a, b] = sum_{a_-i} pi^j_h(a, a_-i|s) [r_{h,i}(s,b,a_-i) + P_h(s,b,a_-i).W^j_{h+1}]
            E = np.zeros((T + 1, S, A[i], A[i]))
            for j in range(1, T + 1):
                for s in range(S):
                    pj = _pols_at(policies, j, h, s)
                    for a in joint:  # a = (a_i = recommended action, a_-i)
                        p = _prob_joint(pj, a)
                        for b in range(A[i]):
                            dev = a[:i] + (b,) + a[i + 1 :]
                            val = rewards[(h, i, s) + dev]
                            for sp in range(S):
                                val += transitions[(h, s) + dev + (sp,)] * W[j, h + 1, i, sp]
                            E[j, s, a[i], b] += p * val
            for t in range(1, T + 1):
                for s in range(S):
                    D = np.zeros((A[i], A[i]))
                    for j in range(1, T + 1):
                        if mu[t, j] != 0.0:
                            D += mu[t, j] * E[j, s]
                    total = 0.0
                    for a in range(A[i]):
                        total += np.max(D[a])
                    W[t, h, i, s] = total
    return W


def reference_metrics(rewards, transitions, s1, policies, t0_dist, mu) -> dict:
    """Exact value and certified CE/CCE bounds of the output policy given by (t0, mu).

    Keys: ``value``, ``certified_cce_bound``, ``certified_ce_bound`` (arrays (N,)),
    ``certified_ce_gap_per_player``, ``certified_cce_gap_per_player`` (arrays (N,)),
    ``certified_ce_gap``, ``certified_cce_gap`` (floats, max over players).
    """
    mu = np.asarray(mu, dtype=float)
    t0_dist = np.asarray(t0_dist, dtype=float)
    T = mu.shape[0] - 1
    V = index_values(rewards, transitions, policies, mu)
    B = certified_cce_values(rewards, transitions, policies, mu)
    W = certified_ce_values(rewards, transitions, policies, mu)
    N = V.shape[2]
    value = np.zeros(N)
    cce = np.zeros(N)
    ce = np.zeros(N)
    for i in range(N):
        for t in range(1, T + 1):
            value[i] += t0_dist[t] * V[t, 0, i, s1]
            cce[i] += t0_dist[t] * B[t, 0, i, s1]
            ce[i] += t0_dist[t] * W[t, 0, i, s1]
    ce_pp = ce - value
    cce_pp = cce - value
    return {
        "value": value,
        "certified_cce_bound": cce,
        "certified_ce_bound": ce,
        "certified_ce_gap_per_player": ce_pp,
        "certified_cce_gap_per_player": cce_pp,
        "certified_ce_gap": float(np.max(ce_pp)),
        "certified_cce_gap": float(np.max(cce_pp)),
    }


def metrics_for_prefix(rewards, transitions, s1, algorithm, policies, T_prefix, H) -> dict:
    """Metrics of the output policy after T_prefix iterations (uses iterations 1..T_prefix)."""
    t0, mu = output_policy_kernel(algorithm, T_prefix, H)
    prefix = [p[: T_prefix + 1] for p in policies]
    return reference_metrics(rewards, transitions, s1, prefix, t0, mu)
