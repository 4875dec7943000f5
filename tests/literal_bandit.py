"""Compositions under bandit feedback (``feedback="bandit:M"``) written out literally, for the test-suite only.

Written from docs/vlearning.md ("Bandit feedback for any composition", "The algorithms",
"Randomness: the draws") and the learner protocol of ``markovgames.learners`` (optimistic Hedge
and the Blum–Mansour reduction), in plain loops over rounds, episodes, steps, players and visits.
From the library it takes only the game's arrays and the documented inverse-CDF draw
(`markovgames.dynamics._feedback.sample_index`).

`literal_bandit(game, learner, update, M, action_uniforms, state_uniforms, ...)`:

* **Rounds.** Round ``k`` plays episodes ``(k-1) M + 1 .. k M`` with the policies fixed at the
  round's start; episode ``e`` (1-based) draws player ``i``'s action at step ``h`` from its strategy
  at ``(h, s_h)`` by ``action_uniforms[e-1, h, i]`` and the next state from ``P_h(. | s_h, a)`` by
  ``state_uniforms[e-1, h]`` (unused at the last step).
* **Targets.** A visit of ``(h, s)`` by player ``i`` has the target ``y = r_i + V_{h+1,i}(s')``
  with the round-start values (``V_H = 0``), the loss ``l = (H - y)/H`` and the IX estimate
  ``lhat(b) = l 1{b = a_i} / (theta(b) + gamma)``, ``theta`` the round's strategy at ``(h, s)``;
  ``gamma = ix`` for a number ``ix``, and by default (``ix`` None or ``"decaying"``) EXP3-IX's
  ``gamma_t = eta_t / 2`` with rates falling like ``1/sqrt(t)`` (Neu 2015), at the state's clock:
  ``gamma = (eta H / 2) / sqrt(c)`` in loss units, ``c`` counting this round. With ``n`` visits in the round, ``ybar`` and the mean of
  ``lhat`` are pooled over them, and the learner's utility estimate is ``u_hat = H (1 - mean lhat)``.
* **Clocks.** ``c`` counts the rounds that visited ``(h, s)`` (this one included). States a round
  does not visit do not move.
* **Rates.** The ``c``-th visiting round of ``(h, s)`` plays with ``eta_c = min(eta, M / sqrt(c))``
  by default (``bandit_rate = "decaying"``), or ``eta_c = eta`` (``"constant"``).
* **Learners.** ``hedge``: ``G``; plays ``softmax(eta_c (rho G + m))``, observes ``G <- rho G + u``.
  ``bm-hedge``: one such row per recommended action ``a``; row ``a`` predicts ``pi_prev(a) m`` and
  observes ``pi(a) u``, with ``pi`` the stationary distribution of the rows (the strategy played)
  and ``pi_prev`` the strategy played at the previous visiting round (uniform at first). The
  prediction ``m`` is the last ``u_hat`` at the state if ``optimistic`` (``0`` before any), else 0.
* **smooth / smooth-linear / smooth-uniform** (``k = H`` / ``k = 1`` / ``k = 0``): the ``c``-th
  visiting round plays and observes with ``rho_c = (c-1)/(k+c-1)`` (``rho_1 = 0``: ``w_0 = 0``); ``Vt <- (1 - alpha_c) Vt + alpha_c (ybar + bonus
  sqrt(H^3 A_i / c))``, ``alpha_c = (k+1)/(k+c)``, ``V = min(H - h, Vt)``.
* **stage**: per ``(h, s)``, stages of ``L_1 = H``, ``L_{j+1} = ((H+1) L_j) // H`` visiting rounds;
  decay 1; at a stage's end ``V = min(H - h, sum of the stage's ybar / L + bonus sqrt(H^2 A_i / L))``,
  the learner restarts (``G = 0``, prediction 0) and the sums are reset.

Initial values ``V_h(s) = H - h``, every learner uniform, every clock 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from markovgames.dynamics._feedback import sample_index

LEARNERS = ("hedge", "bm-hedge")
UPDATES = ("smooth", "smooth-linear", "smooth-uniform", "stage")


def softmax(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    z = np.exp(x - np.max(x))
    return z / np.sum(z)


def stationary(q: np.ndarray) -> np.ndarray:
    """``pi`` with ``pi(b) = sum_a pi(a) q[a, b]`` and ``sum(pi) = 1`` (rows strictly positive): one
    direct solve of ``(q^T - I) pi = 0`` with its last equation replaced by ``sum(pi) = 1``."""
    n = q.shape[0]
    system = q.T - np.eye(n)
    system[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    return np.linalg.solve(system, rhs)


def draw(p, u: float) -> int:
    return int(sample_index(np.asarray(p, dtype=np.float64), np.asarray(u, dtype=np.float64)))


class _Hedge:
    """Weighted OFTRL with the entropy regulariser at one ``(h, s)`` of one player."""

    def __init__(self, A: int):
        self.A = A
        self.restart()

    def restart(self) -> None:
        self.G = np.zeros(self.A)
        self.last_u = np.zeros(self.A)  # the prediction before any estimate: 0

    def strategy(self, eta: float, decay: float, optimistic: bool) -> np.ndarray:
        m = self.last_u if optimistic else np.zeros(self.A)
        return softmax(eta * (decay * self.G + m))

    def observe(self, played: np.ndarray, u: np.ndarray, decay: float) -> None:
        self.G = decay * self.G + u
        self.last_u = u.copy()


class _BMHedge:
    """Blum–Mansour over Hedge at one ``(h, s)`` of one player: row ``a`` is recommendation ``a``'s Hedge."""

    def __init__(self, A: int):
        self.A = A
        self.restart()

    def restart(self) -> None:
        A = self.A
        self.G = np.zeros((A, A))
        self.last_u = np.zeros(A)
        self.pi_prev = np.full(A, 1.0 / A)

    def strategy(self, eta: float, decay: float, optimistic: bool) -> np.ndarray:
        A = self.A
        q = np.zeros((A, A))
        for a in range(A):
            m = self.pi_prev[a] * self.last_u if optimistic else np.zeros(A)
            q[a] = softmax(eta * (decay * self.G[a] + m))
        return stationary(q)

    def observe(self, played: np.ndarray, u: np.ndarray, decay: float) -> None:
        for a in range(self.A):
            self.G[a] = decay * self.G[a] + played[a] * u
        self.pi_prev = played.copy()
        self.last_u = u.copy()


class _Cell:
    """Player ``i``'s learner, clock and value bookkeeping at one ``(h, s)``."""

    def __init__(self, learner: str, update: str, H: int, h: int, A: int):
        self.learner = _Hedge(A) if learner == "hedge" else _BMHedge(A)
        self.update, self.H, self.h, self.A = update, H, h, A
        self.k = {"smooth": H, "smooth-linear": 1, "smooth-uniform": 0, "stage": None}[update]
        self.c = 0  # rounds that visited (h, s)
        self.Vtilde = 0.0  # overwritten at the first round (alpha_1 = 1)
        self.L = H  # the current stage's length
        self.position = 0  # visiting rounds in the current stage so far
        self.ysum = 0.0

    def decay(self) -> float:
        """The decay of the next visiting round (the ``c``-th, ``c = self.c + 1``)."""
        if self.update == "stage":
            return 1.0
        c = self.c + 1
        return 0.0 if c == 1 else (c - 1) / (self.k + c - 1)

    def strategy(self, eta: float, optimistic: bool, M: int, decaying_rate: bool) -> np.ndarray:
        c = self.c + 1  # the next visiting round's clock
        rate = min(eta, M / math.sqrt(c)) if decaying_rate else eta
        return self.learner.strategy(rate, self.decay(), optimistic)

    def end_round(self, theta: np.ndarray, ybar: float, u_hat: np.ndarray, bonus: float, V: np.ndarray, s: int):
        """The round visited ``(h, s)``: the learner observes, the value moves (``V`` is written)."""
        H, h, A = self.H, self.h, self.A
        rho = self.decay()
        self.c += 1
        c = self.c
        self.learner.observe(theta, u_hat, rho)
        if self.update != "stage":
            al = (self.k + 1) / (self.k + c)
            self.Vtilde = (1.0 - al) * self.Vtilde + al * (ybar + bonus * math.sqrt(H**3 * A / c))
            V[h, s] = min(H - h, self.Vtilde)
            return
        self.position += 1
        self.ysum += ybar
        if self.position == self.L:
            L = self.L
            V[h, s] = min(H - h, self.ysum / L + bonus * math.sqrt(H**2 * A / L))
            self.L = ((H + 1) * L) // H
            self.position = 0
            self.ysum = 0.0
            self.learner.restart()


@dataclass
class LiteralBanditRun:
    states: np.ndarray  # (E, H) int
    actions: np.ndarray  # (E, H, N) int
    played: tuple  # per player (E, H, A_i)
    value_estimates: tuple  # per player (H, S)
    counts: np.ndarray  # (H, S): rounds that visited


def literal_bandit(
    game,
    learner: str,
    update: str,
    M: int,
    action_uniforms,
    state_uniforms,
    eta: float = 0.2,
    ix: float | str | None = None,
    bonus: float = 0.0,
    optimistic: bool = True,
    bandit_rate: str = "decaying",
) -> LiteralBanditRun:
    """``LEARNER+UPDATE`` under ``bandit:M`` for ``E = len(action_uniforms)`` episodes, literally."""
    if learner not in LEARNERS or update not in UPDATES:
        raise ValueError((learner, update))
    R = np.asarray(game.rewards, dtype=np.float64)
    P = np.asarray(game.transitions, dtype=np.float64)
    H, N, S, A = game.horizon, game.num_players, game.num_states, tuple(game.num_actions)
    ua = np.asarray(action_uniforms, dtype=np.float64)
    us = np.asarray(state_uniforms, dtype=np.float64)
    E = ua.shape[0]
    assert ua.shape == (E, H, N) and us.shape == (E, H), (ua.shape, us.shape)
    assert E % M == 0, (E, M)
    decaying = ix is None or ix == "decaying"
    assert bandit_rate in ("decaying", "constant"), bandit_rate
    decaying_rate = bandit_rate == "decaying"

    cells = [[[_Cell(learner, update, H, h, A[i]) for s in range(S)] for h in range(H)] for i in range(N)]
    # V[i][h, s] for h = 0..H (V_H = 0), optimistic start V_h(s) = H - h.
    V = [np.array([[float(H - h)] * S for h in range(H + 1)]) for i in range(N)]
    for i in range(N):
        V[i][H, :] = 0.0
    states = np.zeros((E, H), dtype=np.int64)
    actions = np.zeros((E, H, N), dtype=np.int64)
    played = tuple(np.zeros((E, H, A[i])) for i in range(N))
    counts = np.zeros((H, S), dtype=np.int64)

    for k in range(1, E // M + 1):
        # The round's policies, fixed for its M episodes.
        theta = [
            [[cells[i][h][s].strategy(eta, optimistic, M, decaying_rate) for s in range(S)] for h in range(H)] for i in range(N)
        ]
        V_start = [v.copy() for v in V]
        visits = [[[] for s in range(S)] for h in range(H)]  # (joint action, next state or None)
        for m in range(1, M + 1):
            e = (k - 1) * M + m
            s = int(game.initial_state)
            for h in range(H):
                states[e - 1, h] = s
                a = []
                for i in range(N):
                    played[i][e - 1, h] = theta[i][h][s]
                    a.append(draw(theta[i][h][s], ua[e - 1, h, i]))
                actions[e - 1, h] = a
                s_next = draw(P[(h, s, *a)], us[e - 1, h]) if h < H - 1 else None
                visits[h][s].append((tuple(a), s_next))
                s = s_next
        # The round's end: every visited (h, s), every player, from the round-start values.
        for h in range(H):
            for s in range(S):
                n = len(visits[h][s])
                if n == 0:
                    continue
                counts[h, s] += 1
                for i in range(N):
                    th = theta[i][h][s]
                    c = cells[i][h][s].c + 1  # this round is the state's c-th visiting round
                    gamma = eta * H / 2.0 / math.sqrt(c) if decaying else float(ix)
                    ysum = 0.0
                    lsum = np.zeros(A[i])
                    for a, s_next in visits[h][s]:
                        y = float(R[(h, i, s, *a)]) + (float(V_start[i][h + 1, s_next]) if s_next is not None else 0.0)
                        loss = (H - y) / H
                        ysum += y
                        for b in range(A[i]):
                            if b == a[i]:
                                lsum[b] += loss / (th[b] + gamma)
                    ybar = ysum / n
                    u_hat = H * (1.0 - lsum / n)
                    cells[i][h][s].end_round(th, ybar, u_hat, bonus, V[i], s)

    for i in range(N):
        assert all(cells[i][h][s].c == counts[h, s] for h in range(H) for s in range(S))
    return LiteralBanditRun(states, actions, played, tuple(V[i][:H].copy() for i in range(N)), counts)
