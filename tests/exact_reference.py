"""An exact arbiter for regret matching: PRM+ and the Blum–Mansour reduction over it in rational arithmetic.

Regret matching is discontinuous where its positive part vanishes: a regret of ``1e-16`` left by
rounding plays pure where an exact ``0`` plays uniform. Two float64 implementations of the same
rule (the engine, tests/reference_impl.py) can therefore part ways at an exact tie, and comparing
them says only that they differ. This module says which one follows the rule: it runs the literal
algorithms of tests/reference_impl.py (same value updates, same learners, raw weighted regrets)
with every number a `fractions.Fraction`, the game's floats converted exactly. No rounding
happens anywhere, so every tie is decided as the rule decides it.

Written independently of the library from its documentation (docs/learners.md: ``rm-plus``,
``bm-NAME`` and its choice of stationary distribution for reducible matrices; the value updates of
docs/explanation.md). Slow (the denominators grow with ``T``): for tiny games and ``T`` of tens.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

__all__ = ["exact_regret_matching_run"]


def _frac(array, decimal: bool = False) -> np.ndarray:
    """A float array as an object array of exact Fractions: each float's own binary value, or with
    ``decimal`` the shortest decimal that reads back as it (``Fraction(repr(x))``: ``0.8`` is 4/5)."""
    array = np.asarray(array, dtype=float)
    convert = (lambda x: Fraction(repr(float(x)))) if decimal else Fraction
    return np.vectorize(convert, otypes=[object])(array) if array.size else array.astype(object)


class _ExactRMPlus:
    """PRM+ on raw weighted regrets: ``x = [R + w (m - <m, x_last>)]^+`` normalised (uniform at 0),
    ``R = [R + w (u - <u, x>)]^+``."""

    def __init__(self, num_actions: int):
        self.regret = [Fraction(0)] * num_actions
        self.last = [Fraction(1, num_actions)] * num_actions

    def play(self, m, w):
        expected = sum(mk * xk for mk, xk in zip(m, self.last, strict=True))
        theta = [max(r + w * (mk - expected), Fraction(0)) for r, mk in zip(self.regret, m, strict=True)]
        total = sum(theta)
        self.last = [th / total for th in theta] if total > 0 else [Fraction(1, len(theta))] * len(theta)
        return self.last

    def observe(self, u, w):
        expected = sum(uk * xk for uk, xk in zip(u, self.last, strict=True))
        self.regret = [max(r + w * (uk - expected), Fraction(0)) for r, uk in zip(self.regret, u, strict=True)]


def _stationary(q: list[list[Fraction]]) -> list[Fraction]:
    """The documented stationary distribution of a row-stochastic ``q`` (docs/learners.md, "bm-NAME"):
    the closed class reachable from ``k*``, the highest state that reaches no lower-numbered one;
    its unique stationary distribution by exact Gaussian elimination, zero elsewhere."""
    n = len(q)

    def reachable(k):
        seen, todo = {k}, [k]
        while todo:
            i = todo.pop()
            for j in range(n):
                if q[i][j] > 0 and j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen

    k_star = max(k for k in range(n) if min(reachable(k)) == k)
    members = sorted(reachable(k_star))
    size = len(members)
    # pi (Q - I) = 0 with sum(pi) = 1: the equations are the columns of Q - I, one replaced by the sum.
    rows = [[q[members[i]][members[j]] - (1 if i == j else 0) for i in range(size)] + [Fraction(0)] for j in range(size)]
    rows[-1] = [Fraction(1)] * size + [Fraction(1)]
    for col in range(size):
        pivot = next(r for r in range(col, size) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(size):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    pi = [Fraction(0)] * n
    for k, member in enumerate(members):
        pi[member] = rows[k][-1] / rows[k][k]
    return pi


class _ExactBlumMansour:
    def __init__(self, num_actions: int):
        self.copies = [_ExactRMPlus(num_actions) for _ in range(num_actions)]
        self.last = [Fraction(1, num_actions)] * num_actions

    def play(self, m, w):
        rows = [copy.play([self.last[a] * mk for mk in m], w) for a, copy in enumerate(self.copies)]
        self.last = _stationary(rows)
        return self.last

    def observe(self, u, w):
        for a, copy in enumerate(self.copies):
            copy.observe([self.last[a] * uk for uk in u], w)


def _utility(M, pols, i, A):
    """``[M pi_{-i}](b)`` over the joint actions, exactly."""
    u = [Fraction(0)] * A[i]
    for a in itertools.product(*[range(n) for n in A]):
        p = Fraction(1)
        for k, pk in enumerate(pols):
            if k != i:
                p *= pk[a[k]]
        u[a[i]] += M[a] * p
    return u


def _expect(M, pols, A):
    total = Fraction(0)
    for a in itertools.product(*[range(n) for n in A]):
        p = Fraction(1)
        for k, pk in enumerate(pols):
            p *= pk[a[k]]
        total += M[a] * p
    return total


def exact_regret_matching_run(
    rewards, transitions, learner: str, update: str, T: int, optimistic: bool = True, *, decimal: bool = False
):
    """The strategies of ``learner`` (``rm-plus`` or ``bm-rm-plus``) with the ``update`` value update,
    exactly: a list over players of ``(T, H, S)`` nested lists of Fraction vectors (iterations 1..T).

    The value updates are tests/reference_impl.py's ``run_reference_composition``, line for line,
    in rational arithmetic (the learning rate does not enter regret matching).

    ``decimal``: the game's numbers are the decimals they print as (a game written in decimals,
    such as the paper's ``0.8`` and ``0.2``, whose ties hold for the decimals: ``0.8 + 0.2 = 1``
    exactly, while the binary values of the two floats sum to ``1 + 5.6e-17``). Otherwise each
    float's exact binary value.
    """
    rewards, transitions = _frac(rewards, decimal), _frac(transitions, decimal)
    H, N, S = rewards.shape[:3]
    A = tuple(rewards.shape[3:])
    joint = list(itertools.product(*[range(n) for n in A]))
    make = {"rm-plus": _ExactRMPlus, "bm-rm-plus": _ExactBlumMansour}[learner]
    keys = [(i, h, s) for i in range(N) for h in range(H) for s in range(S)]
    policies = [[[[None] * S for _ in range(H)] for _ in range(T)] for _ in range(N)]

    def current(t, h, s):
        return [policies[k][t - 1][h][s] for k in range(N)]

    def zero_q():
        return np.full((H, N, S, *A), Fraction(0), dtype=object)

    if update == "smooth":
        copies = {key: make(A[key[0]]) for key in keys}
        last_u = {key: [Fraction(0)] * A[key[0]] for key in keys}
        Q = zero_q()
        for t in range(1, T + 1):
            w = math.comb(H + t - 1, H)
            for (i, h, s), copy in copies.items():
                m = last_u[(i, h, s)] if optimistic else [Fraction(0)] * A[i]
                policies[i][t - 1][h][s] = copy.play(m, w)
            al = Fraction(H + 1, H + t)
            new = zero_q()
            for h in range(H - 1, -1, -1):
                for n in range(N):
                    for s in range(S):
                        for a in joint:
                            target = rewards[(h, n, s) + a]
                            if h + 1 < H:
                                target += sum(
                                    transitions[(h, s) + a + (sp,)] * _expect(new[h + 1, n, sp], current(t, h + 1, sp), A)
                                    for sp in range(S)
                                )
                            new[(h, n, s) + a] = (1 - al) * Q[(h, n, s) + a] + al * target
            Q = new
            for (i, h, s), copy in copies.items():
                u = _utility(Q[h, i, s], current(t, h, s), i, A)
                copy.observe(u, w)
                last_u[(i, h, s)] = u
        return policies
    if update != "stage":
        raise ValueError(update)
    Qtau = zero_q()
    t_start, L = 1, H
    for t in range(1, T + 1):
        if t == t_start:
            copies = {key: make(A[key[0]]) for key in keys}
            uniform = [[Fraction(1, n)] * n for n in A]
            last_u = {(i, h, s): _utility(Qtau[h, i, s], uniform, i, A) for (i, h, s) in keys}
        for (i, h, s), copy in copies.items():
            m = last_u[(i, h, s)] if optimistic else [Fraction(0)] * A[i]
            policies[i][t - 1][h][s] = copy.play(m, 1)
        for (i, h, s), copy in copies.items():
            u = _utility(Qtau[h, i, s], current(t, h, s), i, A)
            copy.observe(u, 1)
            last_u[(i, h, s)] = u
        if t - t_start + 1 >= L:
            new = zero_q()
            for h in range(H):
                for n in range(N):
                    for s in range(S):
                        for a in joint:
                            total = Fraction(0)
                            for tp in range(t_start, t + 1):
                                total += rewards[(h, n, s) + a]
                                if h + 1 < H:
                                    total += sum(
                                        transitions[(h, s) + a + (sp,)] * _expect(Qtau[h + 1, n, sp], current(tp, h + 1, sp), A)
                                        for sp in range(S)
                                    )
                            new[(h, n, s) + a] = total / L
            Qtau = new
            t_start, L = t + 1, ((H + 1) * L) // H
    return policies
