"""V-learning and its output policy written out literally, for the test-suite only.

Everything here is written from docs/vlearning.md (the algorithms ``cce-v``, ``ce-v`` and
``stage-v``, their draws, and the output policy with its hidden episode index), in plain Python
loops over episodes, steps, players and visits, and never from the library's code: the library is
used only for the game (`markovgames.games.MarkovGame`'s arrays).

* `literal_vlearning`: a run fed the uniform numbers ``action_uniforms[k - 1, h, i]`` and
  ``state_uniforms[k - 1, h]`` (episode ``k`` is 1-based), as ``vlearning_uniforms`` returns them.
* `kernel_matrix`, `index_policies`, `outcome_tensor`: the output policy at ``(h, s)`` as dense
  ``K x K`` matrices (the hidden index's draw) and the policies played under each index.
* `brute_value`, `brute_ce_gap`, `brute_cce_gap`: the exact value of the output policy at the initial
  state, and its exact CE and CCE gaps by enumerating every strategy modification / every
  deterministic history deviation (tiny games only).
* `monte_carlo_value`: the output policy played literally, episode by episode, with a NumPy
  generator (a sanity check of `brute_value`).

Conventions (docs/vlearning.md): steps ``h = 0..H-1``, ``alpha_t = (H+1)/(H+t)``,
``rho_t = (t-1)/(H+t-1)``, stage lengths ``L_1 = H``, ``L_{j+1} = floor((1 + 1/H) L_j)`` computed
exactly in integers as ``((H+1) L_j) // H``. Within an episode each player updates its estimates at
``(h, s_h)`` right after step ``h`` (forward in ``h``), so the target ``y = r + V_{h+1}(s_{h+1})``
reads the next step's estimate as it was before this episode's update there.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

ALGORITHMS = ("cce-v", "ce-v", "stage-v")
#: The output policy's kernel of each algorithm.
KERNEL = {"cce-v": "smooth", "ce-v": "smooth", "stage-v": "stage"}


# --------------------------------------------------------------------------------------------
# Small pieces
# --------------------------------------------------------------------------------------------


def inverse_cdf(p, u: float) -> int:
    """The item drawn from the distribution ``p`` by ``u``: the first item whose cumulative
    probability exceeds ``u``, the sum counting as 1 from the last item of positive probability on."""
    last = max(b for b in range(len(p)) if p[b] > 0.0)
    total = 0.0
    for b in range(len(p)):
        total += float(p[b])
        if b >= last or total > u:
            return b
    raise AssertionError("unreachable")


def softmax(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    z = np.exp(x - np.max(x))
    return z / np.sum(z)


def stationary(q: np.ndarray) -> np.ndarray:
    """The distribution ``pi`` with ``pi = q^T pi`` (``pi(b) = sum_a pi(a) q[a, b]``, rows of ``q``
    strictly positive), by one direct linear solve: ``(q^T - I) pi = 0`` with the last equation
    replaced by ``sum(pi) = 1``."""
    n = q.shape[0]
    system = q.T - np.eye(n)
    system[-1, :] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    return np.linalg.solve(system, rhs)


def alpha(H: int, t: int) -> float:
    return (H + 1) / (H + t)


def stage_lengths(H: int, total: int) -> list[int]:
    """``L_1 = H``, ``L_{j+1} = floor((1 + 1/H) L_j)``, until the lengths sum to at least ``total``."""
    lengths = [H]
    while sum(lengths) < total:
        lengths.append(((H + 1) * lengths[-1]) // H)
    return lengths


# --------------------------------------------------------------------------------------------
# The learners of one player: one per (h, s)
# --------------------------------------------------------------------------------------------


class _Smooth:
    """``cce-v`` / ``ce-v`` at one ``(h, s)`` of one player."""

    def __init__(self, H: int, h: int, A: int, bonus: float, swap: bool):
        self.H, self.h, self.A, self.c, self.swap = H, h, A, bonus, swap
        self.t = 0
        self.Vtilde = 0.0  # overwritten at the first visit (alpha_1 = 1)
        self.theta = np.full(A, 1.0 / A)
        self.G = np.zeros((A, A)) if swap else np.zeros(A)

    def visit(self, a_i: int, y: float, V: np.ndarray, s: int) -> None:
        H, A = self.H, self.A
        self.t += 1
        t = self.t
        al = alpha(H, t)
        beta = self.c * math.sqrt(H**3 * A**2 / t) if self.swap else self.c * math.sqrt(H**3 * A / t)
        self.Vtilde = (1.0 - al) * self.Vtilde + al * (y + beta)
        V[self.h, s] = min(H - self.h, self.Vtilde)
        loss = (H - y) / H
        eta = gamma = math.sqrt(H * math.log(A) / (A * t))
        rho = (t - 1) / (H + t - 1)
        theta = self.theta
        if not self.swap:
            lhat = np.zeros(A)
            lhat[a_i] = loss / (theta[a_i] + gamma)
            self.G = rho * self.G + lhat
            self.theta = softmax(-eta * self.G)
            return
        q = np.zeros((A, A))
        for a in range(A):  # the recommended action's own FTRL (Blum-Mansour)
            lhat = np.zeros(A)
            lhat[a_i] = theta[a] * loss / (theta[a_i] + gamma)
            self.G[a] = rho * self.G[a] + lhat
            q[a] = softmax(-eta * self.G[a])
        self.theta = stationary(q)


class _Stage:
    """``stage-v`` at one ``(h, s)`` of one player: EXP3-IX restarted at every stage."""

    def __init__(self, H: int, h: int, A: int, bonus: float):
        self.H, self.h, self.A, self.c = H, h, A, bonus
        self.t = 0
        self.L = H  # the current stage's length
        self.position = 0  # visits in the current stage so far
        self.ysum = 0.0
        self.Lhat = np.zeros(A)
        self.theta = np.full(A, 1.0 / A)

    def visit(self, a_i: int, y: float, V: np.ndarray, s: int) -> None:
        H, A, L = self.H, self.A, self.L
        self.t += 1
        self.position += 1
        self.ysum += y
        loss = (H - y) / H
        eta = math.sqrt(2.0 * math.log(A) / (A * L))
        gamma = eta / 2.0
        lhat = np.zeros(A)
        lhat[a_i] = loss / (self.theta[a_i] + gamma)
        self.Lhat = self.Lhat + lhat
        self.theta = softmax(-eta * self.Lhat)
        if self.position == L:  # the stage ends: new value, new stage, fresh bandit
            V[self.h, s] = min(H - self.h, self.ysum / L + self.c * math.sqrt(H**2 * A / L))
            self.L = ((H + 1) * L) // H
            self.position = 0
            self.ysum = 0.0
            self.Lhat = np.zeros(A)
            self.theta = np.full(A, 1.0 / A)


@dataclass
class LiteralRun:
    states: np.ndarray  # (K, H) int
    actions: np.ndarray  # (K, H, N) int
    played: tuple  # per player (K, H, A_i)
    value_estimates: tuple  # per player (H, S)
    counts: np.ndarray  # (H, S)


def literal_vlearning(game, algorithm: str, action_uniforms, state_uniforms, bonus: float = 1.0) -> LiteralRun:
    """V-learning (docs/vlearning.md) for ``K = len(action_uniforms)`` episodes, literally."""
    if algorithm not in ALGORITHMS:
        raise ValueError(algorithm)
    R = np.asarray(game.rewards, dtype=np.float64)
    P = np.asarray(game.transitions, dtype=np.float64)
    H, N, S, A = game.horizon, game.num_players, game.num_states, tuple(game.num_actions)
    ua = np.asarray(action_uniforms, dtype=np.float64)
    us = np.asarray(state_uniforms, dtype=np.float64)
    K = ua.shape[0]
    assert ua.shape == (K, H, N) and us.shape == (K, H), (ua.shape, us.shape)

    def learner(i, h):
        if algorithm == "stage-v":
            return _Stage(H, h, A[i], bonus)
        return _Smooth(H, h, A[i], bonus, swap=(algorithm == "ce-v"))

    learners = [[[learner(i, h) for s in range(S)] for h in range(H)] for i in range(N)]
    # V[i][h, s] for h = 0..H, with V_H = 0; optimistic start V_h(s) = H - h.
    V = [np.array([[float(H - h)] * S for h in range(H + 1)]) for i in range(N)]
    for i in range(N):
        V[i][H, :] = 0.0
    states = np.zeros((K, H), dtype=np.int64)
    actions = np.zeros((K, H, N), dtype=np.int64)
    played = tuple(np.zeros((K, H, A[i])) for i in range(N))
    counts = np.zeros((H, S), dtype=np.int64)

    for k in range(1, K + 1):
        s = int(game.initial_state)
        for h in range(H):
            states[k - 1, h] = s
            counts[h, s] += 1
            a = []
            for i in range(N):
                theta = learners[i][h][s].theta.copy()
                played[i][k - 1, h] = theta
                a.append(inverse_cdf(theta, ua[k - 1, h, i]))
            actions[k - 1, h] = a
            s_next = inverse_cdf(P[(h, s, *a)], us[k - 1, h]) if h < H - 1 else None
            for i in range(N):
                r = float(R[(h, i, s, *a)])
                y = r + (float(V[i][h + 1, s_next]) if s_next is not None else 0.0)
                learners[i][h][s].visit(a[i], y, V[i], s)
            s = s_next
    for i in range(N):
        assert all(learners[i][h][s].t == counts[h, s] for h in range(H) for s in range(S))
    return LiteralRun(states, actions, played, tuple(V[i][:H].copy() for i in range(N)), counts)


# --------------------------------------------------------------------------------------------
# The output policy as dense matrices
# --------------------------------------------------------------------------------------------


def smooth_weights(H: int, n: int) -> list[float]:
    """``[alpha_n^1, ..., alpha_n^n]``, ``alpha_n^l = alpha_l prod_{m=l+1..n} (1 - alpha_m)``."""
    weights = [0.0] * n
    tail = 1.0  # prod_{m=j+1..n} (1 - alpha_m)
    for j in range(n, 0, -1):  # alpha_n^j
        weights[j - 1] = alpha(H, j) * tail
        tail *= 1.0 - alpha(H, j)
    return weights


def stage_weights(H: int, n: int) -> list[float]:
    """Uniform over the last complete stage among the first ``n`` visits (over ``1..n`` if none)."""
    ends, total = [], 0
    for length in stage_lengths(H, n + 1):
        total += length
        ends.append(total)
    complete = [j for j, end in enumerate(ends) if end <= n]
    if not complete:
        return [1.0 / n] * n
    j = complete[-1]
    first = ends[j - 1] if j > 0 else 0  # positions first+1..ends[j]
    length = ends[j] - first
    return [1.0 / length if first < pos <= ends[j] else 0.0 for pos in range(1, n + 1)]


def kernel_matrix(kind: str, H: int, states: np.ndarray, h: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """``(M, n)`` at ``(h, s)``: ``M[k, k']`` (0-based episodes) the probability that the hidden index
    ``k`` moves to ``k'``, and ``n[k]`` the number of episodes before ``k`` that visited ``s`` at step
    ``h`` (``n = 0``: the index stays, ``M[k, k] = 1``)."""
    K = states.shape[0]
    M = np.zeros((K, K))
    n = np.zeros(K, dtype=np.int64)
    visits = [e for e in range(K) if states[e, h] == s]
    for k in range(K):
        earlier = [e for e in visits if e < k]
        n[k] = len(earlier)
        if not earlier:
            M[k, k] = 1.0
            continue
        weights = smooth_weights(H, len(earlier)) if kind == "smooth" else stage_weights(H, len(earlier))
        for e, w in zip(earlier, weights, strict=True):
            M[k, e] += w
    return M, n


def index_policies(played, states: np.ndarray, h: int, s: int, num_actions) -> list[np.ndarray]:
    """Per player ``(K, A_i)``: the policy played at ``(h, s)`` under index ``k'``: episode ``k'``'s
    ``played`` row if it visited ``s`` at step ``h``, else uniform."""
    out = []
    for i, A in enumerate(num_actions):
        rows = np.full((states.shape[0], A), 1.0 / A)
        for k in range(states.shape[0]):
            if states[k, h] == s:
                rows[k] = played[i][k, h]
        out.append(rows)
    return out


def outcome_tensor(kind: str, H: int, states, played, h: int, s: int, num_actions) -> np.ndarray:
    """``T[k, k', a_0, ..., a_{N-1}]``: from index ``k`` at ``(h, s)``, the probability of the new index
    ``k'`` and the recommended joint action ``a`` (``n = 0``: stay, every player uniform)."""
    M, n = kernel_matrix(kind, H, states, h, s)
    pols = index_policies(played, states, h, s, num_actions)
    K = states.shape[0]
    T = np.zeros((K, K, *num_actions))
    for a in itertools.product(*[range(A) for A in num_actions]):
        joint = np.ones(K)
        for i, b in enumerate(a):
            joint = joint * pols[i][:, b]
        uniform = 1.0 / math.prod(num_actions)
        T[(slice(None), slice(None), *a)] = M * joint[None, :]
        for k in range(K):
            if n[k] == 0:
                T[(k, k, *a)] = uniform
    return T


class _Chain:
    """The output policy of the first ``K`` episodes as dense tensors, per ``(h, s)``."""

    def __init__(self, game, kind: str, states, played, K=None):
        if kind not in ("smooth", "stage"):
            raise ValueError(kind)
        states = np.asarray(states)
        K = states.shape[0] if K is None else int(K)
        self.states = states[:K]
        self.played = tuple(np.asarray(p, dtype=np.float64)[:K] for p in played)
        self.game, self.kind, self.K = game, kind, K
        self.R = np.asarray(game.rewards, dtype=np.float64)
        self.P = np.asarray(game.transitions, dtype=np.float64)
        self.H, self.S, self.N, self.A = game.horizon, game.num_states, game.num_players, tuple(game.num_actions)
        self.T = {
            (h, s): outcome_tensor(kind, self.H, self.states, self.played, h, s, self.A)
            for h in range(self.H)
            for s in range(self.S)
        }

    def joint_actions(self):
        return itertools.product(*[range(A) for A in self.A])

    def backward(self, player: int | None = None, modification=None) -> np.ndarray:
        """``V_0(s_0)`` averaged over the start index: every player's (``player=None``) or, with
        ``modification[(h, s)][a_i] = b``, ``player``'s when it plays ``b`` where told ``a_i``."""
        H, S, K = self.H, self.S, self.K
        players = range(self.N) if player is None else [player]
        nxt = np.zeros((S, K, len(players)))
        for h in range(H - 1, -1, -1):
            cur = np.zeros((S, K, len(players)))
            for s in range(S):
                T = self.T[(h, s)]
                for a in self.joint_actions():
                    b = list(a)
                    if modification is not None:
                        b[player] = modification[(h, s)][a[player]]
                    b = tuple(b)
                    q = np.array([self.R[(h, i, s, *b)] for i in players])[None, :] + np.einsum(
                        "t,tkj->kj", self.P[(h, s, *b)], nxt
                    )  # (K', players)
                    cur[s] += T[(slice(None), slice(None), *a)] @ q
            nxt = cur
        return nxt[self.game.initial_state].mean(axis=0)

    def deviation_value(self, player: int, deviation: dict) -> float:
        """``player``'s value when it plays ``deviation[history]`` (history ``(s_0, a_0, s_1, ...,
        s_h)``, joint actions as tuples) and the others follow the output policy."""
        w = np.full(self.K, 1.0 / self.K)
        s0 = int(self.game.initial_state)
        return self._forward(player, deviation, 0, s0, (s0,), w)

    def _forward(self, player, deviation, h, s, history, w) -> float:
        b = deviation[history]
        T = self.T[(h, s)].sum(axis=2 + player)  # the deviator ignores its recommendation
        mass = np.tensordot(w, T, axes=(0, 0))  # (K', a_-i)
        total = 0.0
        others = [range(A) for j, A in enumerate(self.A) if j != player]
        for rest in itertools.product(*others):
            m = mass[(slice(None), *rest)]
            joint = (*rest[:player], b, *rest[player:])
            total += float(m.sum()) * float(self.R[(h, player, s, *joint)])
            if h + 1 < self.H:
                for s2 in range(self.S):
                    p = float(self.P[(h, s, *joint, s2)])
                    if p > 0.0:
                        total += self._forward(player, deviation, h + 1, s2, (*history, joint, s2), m * p)
        return total


def brute_value(game, kind: str, states, played, K=None) -> np.ndarray:
    """(N,) exact value at the initial state of the output policy of the first ``K`` episodes."""
    return _Chain(game, kind, states, played, K).backward()


def all_modifications(H: int, S: int, A: int):
    """Every ``{(h, s): phi}`` with ``phi`` a map ``A_i -> A_i`` (a tuple)."""
    maps = list(itertools.product(range(A), repeat=A))
    keys = [(h, s) for h in range(H) for s in range(S)]
    for choice in itertools.product(maps, repeat=len(keys)):
        yield dict(zip(keys, choice, strict=True))


def brute_ce_gap(game, kind: str, states, played, K=None) -> np.ndarray:
    """(N,) per-player exact CE gaps: the best strategy modification ``phi^s_{h,i}`` (every one
    enumerated) minus the value."""
    chain = _Chain(game, kind, states, played, K)
    value = chain.backward()
    gaps = np.zeros(chain.N)
    for i in range(chain.N):
        best = max(float(chain.backward(i, phi)[0]) for phi in all_modifications(chain.H, chain.S, chain.A[i]))
        gaps[i] = best - value[i]
    return gaps


def all_deviations(chain: _Chain, player: int, h: int, history: tuple):
    """Every deterministic deviation from ``history`` on (a dict history -> own action), over the
    histories it can reach (its own past actions being its own choices)."""
    for b in range(chain.A[player]):
        if h == chain.H - 1:
            yield {history: b}
            continue
        others = [range(A) for j, A in enumerate(chain.A) if j != player]
        children = []
        for rest in itertools.product(*others):
            joint = (*rest[:player], b, *rest[player:])
            for s2 in range(chain.S):
                children.append((*history, joint, s2))
        subtrees = [list(all_deviations(chain, player, h + 1, child)) for child in children]
        for combo in itertools.product(*subtrees):
            deviation = {history: b}
            for sub in combo:
                deviation.update(sub)
            yield deviation


def brute_cce_gap(game, kind: str, states, played, K=None) -> np.ndarray:
    """(N,) per-player exact CCE gaps: the best deterministic deviation on observable histories
    (every one enumerated) minus the value. May be negative."""
    chain = _Chain(game, kind, states, played, K)
    value = chain.backward()
    s0 = int(game.initial_state)
    gaps = np.zeros(chain.N)
    for i in range(chain.N):
        best = max(chain.deviation_value(i, d) for d in all_deviations(chain, i, 0, (s0,)))
        gaps[i] = best - value[i]
    return gaps


# --------------------------------------------------------------------------------------------
# Monte Carlo: the output policy played step by step (docs/vlearning.md, "The output policy")
# --------------------------------------------------------------------------------------------


def monte_carlo_value(game, kind: str, states, played, episodes: int, seed: int, K=None):
    """(mean, standard error), per player, of the total reward over ``episodes`` plays."""
    rng = np.random.default_rng(seed)
    states = np.asarray(states)
    K = states.shape[0] if K is None else int(K)
    H, N, A = game.horizon, game.num_players, tuple(game.num_actions)
    totals = np.zeros((episodes, N))
    for e in range(episodes):
        k = int(rng.integers(K))  # 0-based: episode k + 1
        s = int(game.initial_state)
        for h in range(H):
            earlier = [j for j in range(k) if states[j, h] == s]
            if earlier:
                weights = smooth_weights(H, len(earlier)) if kind == "smooth" else stage_weights(H, len(earlier))
                k = earlier[inverse_cdf(weights, rng.random())]
                dists = [played[i][k, h] for i in range(N)]
            else:
                dists = [np.full(A[i], 1.0 / A[i]) for i in range(N)]
            a = tuple(inverse_cdf(dists[i], rng.random()) for i in range(N))
            totals[e] += game.rewards[(h, slice(None), s, *a)]
            s = inverse_cdf(game.transitions[(h, s, *a)], rng.random())
    return totals.mean(axis=0), totals.std(axis=0, ddof=1) / math.sqrt(episodes)
