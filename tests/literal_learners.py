"""Literal, slow, NumPy-only references of regret-matching and extragradient learners on normal-form games.

Written straight from the papers' update rules, one function per algorithm, with explicit Python loops
over iterations and players. Independent of the library (no JAX, no import of ``markovgames``): it is
the arbiter the library's compiled learners are checked against, so every rule below is stated in full
and every choice the papers leave open (indexing, the first iterate, ties) is written down.

Conventions
-----------
* Utilities: every player maximises. A game is a list ``payoffs`` of N arrays of one shape
  ``(A_0, ..., A_{N-1})``; ``payoffs[i][a]`` is player i's utility at the pure profile ``a``. Two players:
  ``payoffs = [A, B]``; zero-sum: ``B = -A``.
* Utility vector of player i against the others' mixed strategies:
  ``u_i(x_{-i})[a_i] = sum_{a_{-i}} payoffs[i][a] prod_{k != i} x_k(a_k)``.
* Instantaneous regret vector of player i at a profile x: ``r_i(x) = u_i(x_{-i}) - <u_i(x_{-i}), x_i> 1``
  (its own strategy ``x_i`` in the inner product). The papers' regret operator for the minimising
  player is ``F = -r``.
* Regret matching: ``g(z) = [z]^+ / ||[z]^+||_1``, the uniform strategy where ``[z]^+ = 0``.
  On the chopped cone (below) ``g(z) = z / ||z||_1``, never at zero.
* Iterations are ``t = 1..T``. Every learner returns, per player i, an array of shape ``(T, A_i)`` whose
  row ``t-1`` is player i's strategy in iteration t's profile; all rows lie on the simplex.
  Extragradient-type methods return a `LearnerRun` with two such sequences: ``played`` (the
  extrapolated/optimistic point, the one whose utilities drive the update) and ``base`` (the iterate the
  next step starts from).
* ``[v]^+ = max(v, 0)`` componentwise. ``Pi_S`` is the Euclidean projection onto S.
* Chopped cone of a player with ``n`` actions: ``C(r0) = {z in R^n : z >= 0, ||z||_1 >= r0}``
  (``r0 = 1`` in Farina et al. 2023 and Cai et al. 2025).

Table
-----
``C`` = chopped cone, ``D`` = simplex (per player), ``r(x)`` = the profile of regret vectors at x, ``u(x)`` = the profile of utility vectors at x.

+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| algorithm    | paper                | update as implemented (t = 1..T)               | returned as    | initial point | how eta enters    |
|              |                      |                                                | played (row    |               |                   |
|              |                      |                                                | t-1)           |               |                   |
+==============+======================+================================================+================+===============+===================+
| RM+          | Tammelin 2014,       | x^t = g(z^{t-1});                              | x^t            | z^0 = z0      | scales r; no      |
| (`rm_plus`)  | arXiv:1407.5042      | z^t = [z^{t-1} + eta r(x^t)]^+                 |                | (default 0)   | effect if z0 = 0  |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| PRM+         | Farina, Kroer,       | x^t = g([z^{t-1} + eta r^{t-1}]^+),            | x^t            | z^0 = z0,     | scales r and the  |
| (predictive) | Sandholm, AAAI 2021; | r^{t-1} = r(x^{t-1}), r^0 = 0 (prediction      |                | r^0 = 0       | prediction; none  |
|              | Cai et al. 2025,     | m^t = u^{t-1}: m^t - <m^t, x^{t-1}> 1);        |                |               | if z0 = 0         |
|              | Alg. 2               | z^t = [z^{t-1} + eta r(x^t)]^+                 |                |               |                   |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| alternating  | Tammelin et al.      | round t: players 0..N-1 in turn, each against  | x^{t} after    | as RM+ / PRM+ | as RM+ / PRM+     |
| RM+ / PRM+   | IJCAI 2015; Burch,   | the others' CURRENT strategies (earlier        | round t-1      |               |                   |
|              | Moravcik, Schmid     | players' NEW ones), own pre-update x_i in      | (y^t saw x^t)  |               |                   |
|              | JAIR 2019; Cai et    | <u, x_i>; z_i = [z_i + eta r_i]^+, then x_i    |                |               |                   |
|              | al. 2025, Alg. 7-8   | = g(z_i) or g([z_i + eta r_i]^+)               |                |               |                   |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| ExRM+        | Cai, Farina, Grand-  | z^{t+1/2} = Pi_C(z^t + eta r(g(z^t)));         | g(z^{t+1/2})   | z^1 = z0 in C | step of both      |
| (`exrm_plus`)| Clement, Kroer, Lee, | z^{t+1} = Pi_C(z^t + eta r(g(z^{t+1/2})))      | (base: g(z^t)) | (default      | projections       |
|              | Luo, Zheng, ICLR     |                                                |                | (r0/A_i) 1)   |                   |
|              | 2025, Alg. 3         |                                                |                |               |                   |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| SPRM+        | Farina, Grand-       | z^t = Pi_C(zh^t + eta r^{t-1}), x^t = g(z^t);  | g(z^t)         | zh^1 = z0 in  | step of both      |
| (`sprm_plus`)| Clement, Kroer, Lee, | zh^{t+1} = Pi_C(zh^t + eta r(x^t)); r^0 = 0    | (base:         | C (default    | projections       |
|              | Luo, NeurIPS 2023;   |                                                | g(zh^t))       | (r0/A_i) 1)   |                   |
|              | Cai et al., Alg. 4   |                                                |                |               |                   |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| extragradient| Korpelevich 1976;    | x^{t+1/2} = Pi_D(x^t + eta u(x^t));            | x^{t+1/2}      | x^1 = x0      | gradient step     |
|              | Cai et al., Alg. 9   | x^{t+1} = Pi_D(x^t + eta u(x^{t+1/2}))         | (base: x^t)    | (default      |                   |
|              |                      |                                                |                | uniform)      |                   |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+
| (optimistic) | Syrgkanis, Agarwal,  | x^t ~ exp(eta_t (sum_{j<t} u^j                 | x^t            | x^1 uniform   | eta_t = schedule  |
| Hedge        | Luo, Schapire,       |              + [optimistic] u^{t-1})),         | (alternating:  |               | (t) multiplies    |
|              | NeurIPS 2015 (OFTRL) | u^0 = 0; alternating as for RM+                | as RM+)        |               | the whole sum     |
+--------------+----------------------+------------------------------------------------+----------------+---------------+-------------------+

Sources and what could not be checked against them: see each function's docstring, "Provenance".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "CAI_3X3",
    "LearnerRun",
    "cai_3x3_game",
    "duality_gap",
    "external_regret",
    "extragradient",
    "exrm_plus",
    "hedge",
    "project_chopped_cone",
    "project_simplex",
    "regret_matching",
    "regret_vector",
    "rm_plus",
    "sprm_plus",
    "swap_regret",
    "utility_vector",
]

# ----------------------------------------------------------------------------------------------
# The 3x3 game of Cai et al. (ICLR 2025)
# ----------------------------------------------------------------------------------------------

#: The 3x3 zero-sum matrix game on which Cai, Farina, Grand-Clement, Kroer, Lee, Luo, Zheng,
#: "Last-Iterate Convergence Properties of Regret-Matching Algorithms in Games" (ICLR 2025,
#: arXiv:2311.00676) show numerically that RM+, alternating RM+ and PRM+ do not converge in last
#: iterate (their abstract: these variants "all lack last-iterate convergence guarantees even on a
#: simple 3x3 matrix game"). Provenance of the entries: the same matrix is the game of a public
#: third-party replication of that paper (the ``noregret`` package, example "Replicate Cai et al.
#: (ICLR, 2025)"); it is, as recalled but not read here, the instance Farina, Grand-Clement, Kroer, Lee,
#: Luo (NeurIPS 2023, arXiv:2305.14709) used for RM+'s instability. The paper's own figure could not be
#: read here. In the papers' convention ``min_x max_y x^T A y`` (x, the row player, MINIMISES) -- see
#: `cai_3x3_game`. Its unique Nash equilibrium is interior: x* = (1/12, 1/12, 5/6), y* = (1/3, 5/12, 1/4),
#: value 1/4 (computed here by linear programming).
CAI_3X3 = np.array([[3.0, 0.0, -3.0], [0.0, 3.0, -4.0], [0.0, 0.0, 1.0]])


def cai_3x3_game() -> list[np.ndarray]:
    """`CAI_3X3` as a game in this module's utility convention: ``[-CAI_3X3, CAI_3X3]``.

    Cai et al. (ICLR 2025) and Farina et al. (NeurIPS 2023) write matrix games as
    ``min_{x in Delta} max_{y in Delta} x^T A y``: the row player's LOSS is ``A y``, so its utility matrix
    is ``-A`` and the column player's is ``A``. (The third-party replication mentioned at `CAI_3X3`
    instead gives the row player utility ``A``; since the equilibrium is interior, both readings share
    it, ``x* = (1/12, 1/12, 5/6)``, ``y* = (1/3, 5/12, 1/4)``, but the dynamics differ.)

    What Cai et al. state about last-iterate behaviour (from their abstract, which was read; their
    figures and theorems' constants were not):

    * RM+ (simultaneous), alternating RM+ and predictive RM+ (PRM+): no last-iterate convergence on
      this 3x3 game (numerical evidence): the duality gap of ``(x^t, y^t)`` does not go to zero.
    * Extragradient RM+ (ExRM+) and Smooth PRM+ (SPRM+), with a small enough constant step: asymptotic
      last-iterate convergence (no rate), ``O(1/sqrt(t))`` best-iterate convergence, and linear-rate
      last-iterate convergence when combined with restarting -- for every two-player zero-sum matrix
      game, this one included.

    Observed with this module (in either reading of the matrix, row player minimising or maximising
    ``x^T A y``): RM+, PRM+ and alternating RM+ from ``z0 = 0`` keep a duality gap that oscillates and
    stays above about 0.04 over 20,000 iterations (maxima over windows of 2,000 iterations: 0.26 to 0.99);
    ExRM+ and SPRM+ with ``eta = 0.1`` (uniform start on the cone, r0 = 1) reach a gap of about 1e-8 by
    t = 500 and rounding level by t = 1000, with ``eta = 0.05`` about 1e-8 by t = 2000; with
    ``eta = 0.2`` ExRM+ still converged (by t = 5000) but SPRM+ had not by t = 10,000 (gap ~0.1); and
    alternating PRM+ from ``z0 = 0`` converges to the equilibrium (the abstract does not list it among the
    failures).
    """
    return [-CAI_3X3.copy(), CAI_3X3.copy()]


# ----------------------------------------------------------------------------------------------
# Basic quantities
# ----------------------------------------------------------------------------------------------


class LearnerRun(NamedTuple):
    """The two sequences of an extragradient-type method, per player arrays of shape ``(T, A_i)``.

    ``played[i][t-1]``: player i's strategy in the profile whose utilities drive iteration t's update
    (the extrapolated point ``x^{t+1/2}`` of extragradient/ExRM+, the optimistic point ``g(z^t)`` of
    SPRM+). ``base[i][t-1]``: player i's strategy at the iterate iteration t starts from (``x^t``,
    ``g(z^t)`` of ExRM+, ``g(zh^t)`` of SPRM+)."""

    played: list[np.ndarray]
    base: list[np.ndarray]


def _game(payoffs) -> list[np.ndarray]:
    """The payoff tensors as float arrays, checked: N tensors of one N-dimensional shape."""
    tensors = [np.asarray(p, dtype=float) for p in payoffs]
    n = len(tensors)
    if n < 1:
        raise ValueError("a game needs at least one player")
    shape = tensors[0].shape
    for p in tensors:
        if p.shape != shape or p.ndim != n:
            raise ValueError(f"every payoff tensor must have one shape (A_0, ..., A_{{N-1}}) with N = {n}; got {p.shape}")
    return tensors


def utility_vector(payoffs, strategies: Sequence[np.ndarray], i: int) -> np.ndarray:
    """``u_i(x_{-i})[a_i] = sum_{a_{-i}} payoffs[i][a] prod_{k != i} x_k(a_k)``.

    Contracts ``payoffs[i]`` with every other player's strategy, one axis at a time, from the last
    player down (so the axes still to contract keep their numbers)."""
    tensor = np.asarray(payoffs[i], dtype=float)
    for k in reversed(range(tensor.ndim)):
        if k != i:
            tensor = np.tensordot(tensor, np.asarray(strategies[k], dtype=float), axes=([k], [0]))
    return tensor


def regret_vector(u: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Instantaneous regret ``r = u - <u, x> 1`` of playing x against the utility vector u."""
    return u - float(np.dot(u, x)) * np.ones_like(u)


def regret_matching(z: np.ndarray) -> np.ndarray:
    """``g(z) = [z]^+ / ||[z]^+||_1``; the uniform strategy where ``[z]^+`` is all zero."""
    positive = np.maximum(np.asarray(z, dtype=float), 0.0)
    total = positive.sum()
    if total > 0.0:
        return positive / total
    return np.full(positive.shape, 1.0 / positive.size)


def _regrets(payoffs, profile) -> list[np.ndarray]:
    """``r_i(x)`` for every player i at the profile x (simultaneous: everyone against the same x)."""
    return [regret_vector(utility_vector(payoffs, profile, i), profile[i]) for i in range(len(payoffs))]


def _utilities(payoffs, profile) -> list[np.ndarray]:
    return [utility_vector(payoffs, profile, i) for i in range(len(payoffs))]


# ----------------------------------------------------------------------------------------------
# Projections
# ----------------------------------------------------------------------------------------------


def project_simplex(v: np.ndarray, z: float = 1.0) -> np.ndarray:
    """Euclidean projection of v onto the scaled simplex ``{w >= 0, sum(w) = z}`` (z > 0), by sorting.

    Provenance: Held, Wolfe, Crowder (1974); Duchi, Shalev-Shwartz, Singer, Chandra, ICML 2008, Fig. 1;
    Wang & Carreira-Perpinan, arXiv:1309.1541, Algorithm 1. With ``u`` = v sorted decreasingly,
    ``rho = max{ j : u_j - (sum_{k<=j} u_k - z) / j > 0 }``, ``theta = (sum_{k<=rho} u_k - z) / rho``,
    the projection is ``[v - theta]^+``."""
    v = np.asarray(v, dtype=float)
    if not z > 0.0:
        raise ValueError(f"the simplex's total must be positive; got {z}")
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u)
    rho = 0
    for j in range(1, u.size + 1):
        if u[j - 1] - (cumulative[j - 1] - z) / j > 0.0:
            rho = j
    theta = (cumulative[rho - 1] - z) / rho
    return np.maximum(v - theta, 0.0)


def project_chopped_cone(y: np.ndarray, r0: float = 1.0) -> np.ndarray:
    """Euclidean projection of y onto the chopped cone ``C(r0) = {z >= 0, ||z||_1 >= r0}`` (r0 > 0).

    ``Pi_C(y) = [y]^+`` if ``sum([y]^+) >= r0``, else ``Pi_{r0-simplex}(y)``, the projection onto
    ``{z >= 0, sum(z) = r0}`` (`project_simplex`).

    Why: C is the orthant ``R^n_+`` cut by the half-space ``H = {sum(z) >= r0}`` (on ``R^n_+``,
    ``||z||_1 = sum(z)``). If the orthant's projection ``[y]^+`` lies in H it is the projection onto
    the smaller set C. Otherwise the projection onto C lies on H's boundary: were it in H's interior,
    it would be a local, hence (convexity) the global, minimiser of ``||z - y||`` over the orthant, i.e.
    ``[y]^+``, which is not in H. On the boundary, C is the scaled simplex.

    Provenance: the set is Farina, Grand-Clement, Kroer, Lee, Luo (NeurIPS 2023), "chopping off the
    positive orthant" (``Delta_>=`` there, r0 = 1), used by SPRM+ and by ExRM+ (Cai et al., ICLR 2025).
    The case split above is derived here (and agrees with the public code of Meng et al., NeurIPS 2025,
    "Last-Iterate Convergence of Smooth Regret Matching+ Variants"); it is checked against a
    constrained solver in tests/test_literal_learners.py."""
    y = np.asarray(y, dtype=float)
    if not r0 > 0.0:
        raise ValueError(f"the cone's cut r0 must be positive; got {r0}")
    positive = np.maximum(y, 0.0)
    if positive.sum() >= r0:
        return positive
    return project_simplex(y, r0)


def _chopped_start(z0, sizes: Sequence[int], r0: float, name: str) -> list[np.ndarray]:
    """The initial cone points: ``z0[i]`` (checked to lie in C(r0)) or ``(r0/A_i) 1``."""
    if z0 is None:
        return [np.full(n, r0 / n) for n in sizes]
    start = [np.asarray(z, dtype=float).copy() for z in z0]
    for z, n in zip(start, sizes, strict=True):
        if z.shape != (n,) or np.any(z < 0.0) or z.sum() < r0 * (1.0 - 1e-12):
            raise ValueError(f"{name}: each z0[i] must be a nonnegative vector of length A_i with sum >= r0 = {r0}")
    return start


def _orthant_start(z0, sizes: Sequence[int]) -> list[np.ndarray]:
    if z0 is None:
        return [np.zeros(n) for n in sizes]
    start = [np.asarray(z, dtype=float).copy() for z in z0]
    for z, n in zip(start, sizes, strict=True):
        if z.shape != (n,) or np.any(z < 0.0):
            raise ValueError("rm_plus: each z0[i] must be a nonnegative vector of length A_i")
    return start


def _stack(rows: list[list[np.ndarray]], n_players: int) -> list[np.ndarray]:
    """Per-iteration profiles -> per-player arrays ``(T, A_i)``."""
    return [np.array([profile[i] for profile in rows]) for i in range(n_players)]


# ----------------------------------------------------------------------------------------------
# RM+, PRM+, alternating
# ----------------------------------------------------------------------------------------------


def rm_plus(
    payoffs, T: int, *, predictive: bool = False, alternating: bool = False, eta: float = 1.0, z0=None
) -> list[np.ndarray]:
    """Regret Matching+ and its predictive and alternating variants, N players.

    State per player: ``z_i in R^{A_i}_+`` (cumulative clipped regret; ``z_i^0 = z0[i]``, default 0) and,
    when predictive, the last observed regret ``r_i^{prev}`` (``0`` before the first observation).
    Strategy map: ``x_i = g(z_i)`` (RM+) or ``x_i = g([z_i + eta r_i^{prev}]^+)`` (PRM+).

    Simultaneous (``alternating=False``), t = 1..T::

        x_i^t     = g(z_i^{t-1})                                   (RM+)
        x_i^t     = g([z_i^{t-1} + eta r_i^{t-1}]^+), r_i^0 = 0     (PRM+)
        r_i^t     = u_i(x_{-i}^t) - <u_i(x_{-i}^t), x_i^t> 1
        z_i^t     = [z_i^{t-1} + eta r_i^t]^+

    Returned: row t-1 = ``x_i^t``. With ``z0 = 0`` every ``z^t`` is eta times the eta = 1 one, so the
    strategies do not depend on eta (exactly, for eta a power of two).

    PRM+'s prediction (Farina, Kroer, Sandholm, AAAI 2021, predictive RM+ with prediction ``m^t`` of the
    next utility): ``x^t = g([z^{t-1} + m^t - <m^t, x^{t-1}> 1]^+)`` with ``m^t = u^{t-1}``, the last
    utility vector, so the regret prediction ``m^t - <m^t, x^{t-1}> 1`` is exactly the last regret
    ``r^{t-1}`` (computed with the strategy ``x^{t-1}`` that observed it). Equivalently (Farina et al.
    NeurIPS 2023; Cai et al. ICLR 2025, Alg. 2, with ``F = -r``): ``z^t = Pi_{R+}(zh^t - eta F(z^{t-1}))``,
    ``zh^{t+1} = Pi_{R+}(zh^t - eta F(z^t))``, playing ``g(z^t)``; their ``zh^t`` is ``z^{t-1}`` here.

    Alternating (``alternating=True``): the profile of iteration 1 is ``x_i^1 = g(z_i^0)`` (g of
    ``[z_i^0]^+`` for PRM+, prediction 0). Round t (t = 1..T-1) produces iteration t+1's profile by
    updating the players in turn, i = 0, 1, ..., N-1, each against the others' CURRENT strategies::

        v_i   = u_i(x_0^{t+1}, ..., x_{i-1}^{t+1}, x_{i+1}^t, ..., x_{N-1}^t)   (earlier players' NEW strategies)
        r_i   = v_i - <v_i, x_i^t> 1                                         (its own pre-update strategy)
        z_i   = [z_i + eta r_i]^+
        x_i^{t+1} = g(z_i)  (RM+)   or   g([z_i + eta r_i]^+)  (PRM+: prediction = this last regret)

    So in the returned profile ``(x^t, y^t)`` of two players, ``y^t`` (t >= 2) was computed after seeing
    ``x^t``: player 1's round-(t-1) update used ``u_1(x^t)`` and ``y^{t-1}``; player 0's used ``u_0(y^{t-1})``
    and ``x^{t-1}``. The regrets player 1 actually accumulates are thus against the profiles
    ``(x^{t+1}, y^t)``, player 0's against ``(x^t, y^t)``: ``R_x^{t+1}`` from ``(x^t, y^t)``, then
    ``R_y^{t+1}`` from ``(x^{t+1}, y^t)`` -- the standard alternation of CFR+ (Tammelin et al. 2015), the
    one analysed by Burch, Moravcik, Schmid (JAIR 2019), "Revisiting CFR+ and Alternating Updates", and
    listed by Cai et al. (ICLR 2025) as Alg. 7-8 (alternating RM+ / PRM+; their pseudo-code not read here).

    Provenance: RM+ -- Tammelin, "Solving Large Imperfect Information Games Using CFR+", arXiv:1407.5042
    (2014): ``Q^t(a) = max(0, Q^{t-1}(a) + r^t(a))``, strategy proportional to ``Q``. Alternating updates
    -- Tammelin, Burch, Johanson, Bowling, IJCAI 2015 (CFR+ in heads-up limit hold'em); Burch et al. 2019.
    The step ``eta`` and a nonzero start ``z0`` are the OMD form of RM+ (Farina, Kroer, Sandholm 2021;
    Cai et al. 2025, Alg. 1: ``z^{t+1} = Pi_{R+}(z^t - eta F(z^t))``). The papers' exact pseudo-code
    could not be read here (only abstracts); the rules above are the standard forms, stated in full.
    """
    game = _game(payoffs)
    n = len(game)
    sizes = game[0].shape
    z = _orthant_start(z0, sizes)
    prev_r = [np.zeros(a) for a in sizes]

    def strategy(i: int) -> np.ndarray:
        return regret_matching(z[i] + eta * prev_r[i]) if predictive else regret_matching(z[i])

    rows: list[list[np.ndarray]] = []
    if not alternating:
        for _ in range(1, T + 1):
            x = [strategy(i) for i in range(n)]
            rows.append([xi.copy() for xi in x])
            r = _regrets(game, x)
            for i in range(n):
                z[i] = np.maximum(z[i] + eta * r[i], 0.0)
                prev_r[i] = r[i]
        return _stack(rows, n)

    x = [strategy(i) for i in range(n)]
    rows.append([xi.copy() for xi in x])
    for _ in range(1, T):
        for i in range(n):
            r_i = regret_vector(utility_vector(game, x, i), x[i])
            z[i] = np.maximum(z[i] + eta * r_i, 0.0)
            prev_r[i] = r_i
            x[i] = strategy(i)
        rows.append([xi.copy() for xi in x])
    return _stack(rows, n)


# ----------------------------------------------------------------------------------------------
# ExRM+ and SPRM+ (chopped cone)
# ----------------------------------------------------------------------------------------------


def exrm_plus(payoffs, T: int, eta: float, z0=None, *, r0: float = 1.0) -> LearnerRun:
    """Extragradient RM+ (ExRM+), two operator evaluations per iteration, on the chopped cone C(r0).

    For t = 1..T (the paper's t - 1), with ``g(z) = z / ||z||_1`` per player and ``r(x)`` the profile of
    regret vectors ``r_i(x) = u_i(x_{-i}) - <u_i(x_{-i}), x_i> 1``::

        x^t       = g(z^t)                                  -> base[t-1]
        z^{t+1/2} = Pi_C(z^t + eta r(x^t))                  (per player)
        x^{t+1/2} = g(z^{t+1/2})                            -> played[t-1]
        z^{t+1}   = Pi_C(z^t + eta r(x^{t+1/2}))            (both from z^t; r at x^{t+1/2}, own x_i^{t+1/2} included)

    Initial point ``z^1 = z0`` (each ``z0[i]`` in C(r0); default ``(r0/A_i) 1``, so ``x^1`` is uniform).
    ``eta`` is the constant step of both projections; unlike RM+ the method is not scale-invariant
    (the cut ``||z||_1 >= r0`` fixes the scale).

    Provenance: Cai, Farina, Grand-Clement, Kroer, Lee, Luo, Zheng, "Last-Iterate Convergence Properties
    of Regret-Matching Algorithms in Games", ICLR 2025 (arXiv:2311.00676), Algorithm 3 "Extragradient
    RM+": ``z^{t+1/2} = Pi_{Z>=}(z^t - eta F(z^t))``, ``z^{t+1} = Pi_{Z>=}(z^t - eta F(z^{t+1/2}))`` with
    ``Z>= = Delta^{d1}_>= x Delta^{d2}_>=`` (``r0 = 1``) and ``F(z) = (f(x, A y), f(y, -A^T x))``,
    ``f(x, l) = l - <x, l> 1``, ``(x, y) = g(z)`` for ``min_x max_y x^T A y`` -- i.e. ``F = -r`` in utilities.
    Its guarantees (asymptotic last-iterate convergence, O(1/sqrt t) best iterate) are for two-player
    zero-sum games and a step ``eta`` below a constant over the Lipschitz constant of F on ``Z>=``; the
    precise constant could not be read here. This reference runs the same rule for any N (no guarantee).
    The algorithm list and the abstract were read; the pseudo-code is reconstructed from them and the
    papers' standard OMD notation, not read verbatim.
    """
    game = _game(payoffs)
    n = len(game)
    z = _chopped_start(z0, game[0].shape, r0, "exrm_plus")
    played: list[list[np.ndarray]] = []
    base: list[list[np.ndarray]] = []
    for _ in range(1, T + 1):
        x = [zi / zi.sum() for zi in z]
        base.append(x)
        r = _regrets(game, x)
        z_half = [project_chopped_cone(z[i] + eta * r[i], r0) for i in range(n)]
        x_half = [zi / zi.sum() for zi in z_half]
        played.append(x_half)
        r_half = _regrets(game, x_half)
        z = [project_chopped_cone(z[i] + eta * r_half[i], r0) for i in range(n)]
    return LearnerRun(_stack(played, n), _stack(base, n))


def sprm_plus(payoffs, T: int, eta: float, z0=None, *, r0: float = 1.0) -> LearnerRun:
    """Smooth Predictive RM+ (SPRM+): PRM+ (optimistic OMD on the cone) with every projection onto C(r0).

    For t = 1..T, with ``r^0 = 0`` (no prediction before the first observation)::

        z^t      = Pi_C(zh^t + eta r^{t-1})          (optimistic point; per player)
        x^t      = g(z^t)                            -> played[t-1]
        r^t      = r(x^t)                            (u_i(x_{-i}^t) - <u_i(x_{-i}^t), x_i^t> 1)
        zh^{t+1} = Pi_C(zh^t + eta r^t)
        base[t-1] = g(zh^t)

    Initial point ``zh^1 = z0`` (each in C(r0); default ``(r0/A_i) 1``), hence ``z^1 = zh^1`` and
    ``x^1 = g(z0)`` (uniform by default). The prediction is PRM+'s: the last utility ``m^t = u^{t-1}``,
    turned into the regret prediction ``m^t - <m^t, x^{t-1}> 1 = r^{t-1}``. ``eta`` is the constant step
    (not scale-invariant because of the cut).

    Provenance: Farina, Grand-Clement, Kroer, Lee, Luo, "Regret Matching+: (In)Stability and Fast
    Convergence in Games", NeurIPS 2023 (arXiv:2305.14709): the fix "chopping off the positive orthant"
    -- PRM+ run on ``Delta_>= = {R >= 0, ||R||_1 >= 1}`` with a small step -- is "Smooth PRM+"; Cai et al.
    ICLR 2025, Algorithm 4 (SPRM+): ``z^t = Pi_{Z>=}(zh^t - eta F(z^{t-1}))``, ``zh^{t+1} = Pi_{Z>=}(zh^t -
    eta F(z^t))`` with ``F = -r``. The rule agrees line for line with the public SPRM+ code of Meng et al.
    (NeurIPS 2025, class ``SPRMSolver``: ``zh`` starts at ``1/n``, lower bound 1). Pseudo-code not read
    verbatim (abstracts only); the first prediction ``r^0 = 0`` is this module's choice, as in that code.
    """
    game = _game(payoffs)
    n = len(game)
    sizes = game[0].shape
    z_hat = _chopped_start(z0, sizes, r0, "sprm_plus")
    prev_r = [np.zeros(a) for a in sizes]
    played: list[list[np.ndarray]] = []
    base: list[list[np.ndarray]] = []
    for _ in range(1, T + 1):
        z = [project_chopped_cone(z_hat[i] + eta * prev_r[i], r0) for i in range(n)]
        x = [zi / zi.sum() for zi in z]
        played.append(x)
        base.append([zh / zh.sum() for zh in z_hat])
        r = _regrets(game, x)
        z_hat = [project_chopped_cone(z_hat[i] + eta * r[i], r0) for i in range(n)]
        prev_r = r
    return LearnerRun(_stack(played, n), _stack(base, n))


# ----------------------------------------------------------------------------------------------
# Euclidean extragradient, Hedge
# ----------------------------------------------------------------------------------------------


def extragradient(payoffs, T: int, eta: float, x0=None) -> LearnerRun:
    """Euclidean extragradient (Korpelevich) on the product of simplices, utilities ascended, N players.

    For t = 1..T, with ``u(x)`` the profile of utility vectors ``u_i(x_{-i})``::

        x^{t+1/2} = Pi_D(x^t + eta u(x^t))          -> played[t-1]
        x^{t+1}   = Pi_D(x^t + eta u(x^{t+1/2}))    (from x^t)
        base[t-1] = x^t

    ``Pi_D`` projects each player's vector onto its simplex (`project_simplex`). Initial point
    ``x^1 = x0`` (default uniform). ``eta`` is the constant gradient step.

    Provenance: G. M. Korpelevich, "The extragradient method for finding saddle points and other
    problems", Ekonomika i Matematicheskie Metody 12 (1976) 747-756: ``x_bar = Pi(x - eta F(x))``,
    ``x^+ = Pi(x - eta F(x_bar))``; here ``F = -u`` (players maximise). Cai et al. ICLR 2025, Alg. 9 (EG) is
    the same rule. Standard form; the 1976 text was not read here.
    """
    game = _game(payoffs)
    n = len(game)
    sizes = game[0].shape
    if x0 is None:
        x = [np.full(a, 1.0 / a) for a in sizes]
    else:
        x = [np.asarray(xi, dtype=float).copy() for xi in x0]
    played: list[list[np.ndarray]] = []
    base: list[list[np.ndarray]] = []
    for _ in range(1, T + 1):
        base.append([xi.copy() for xi in x])
        u = _utilities(game, x)
        x_half = [project_simplex(x[i] + eta * u[i]) for i in range(n)]
        played.append(x_half)
        u_half = _utilities(game, x_half)
        x = [project_simplex(x[i] + eta * u_half[i]) for i in range(n)]
    return LearnerRun(_stack(played, n), _stack(base, n))


def _softmax(v: np.ndarray) -> np.ndarray:
    """``exp(v) / sum exp(v)``, computed as ``exp(v - max v) / sum exp(v - max v)`` (the same number)."""
    w = np.exp(v - np.max(v))
    return w / w.sum()


def hedge(
    payoffs, T: int, eta_schedule: Callable[[int], float], *, optimistic: bool = False, alternating: bool = False
) -> list[np.ndarray]:
    """(Optimistic) Hedge = entropic FTRL with a time-varying rate, N players.

    Player i's strategy of iteration t (``U_i^{t-1} = sum_{j<t} u_i^j``, ``u_i^0 = 0``)::

        x_i^t proportional to exp( eta_t * ( U_i^{t-1} + [optimistic] u_i^{t-1} ) ),   eta_t = eta_schedule(t)

    The rate multiplies the WHOLE cumulative sum (FTRL with regulariser ``psi(x)/eta_t``), not each
    increment: changing ``eta_t`` rescales all of the past. ``x^1`` is uniform (empty sum).

    Simultaneous: ``u_i^t = u_i(x_{-i}^t)``. Alternating: iteration 1 is uniform; round t (t = 1..T-1)
    updates players 0..N-1 in turn, player i observing ``u_i^t = u_i(x_0^{t+1}, ..., x_{i-1}^{t+1},
    x_{i+1}^t, ...)`` (earlier players' NEW strategies) and then setting ``x_i^{t+1}`` by the formula
    with ``eta_{t+1}``; the profile after round t is iteration t+1's (as in `rm_plus`).

    Provenance: Syrgkanis, Agarwal, Luo, Schapire, "Fast Convergence of Regularized Learning in Games",
    NeurIPS 2015: Optimistic FTRL ``x^t = argmax_x <x, sum_{j<t} u^j + M^t> - R(x)/eta`` with predictor
    ``M^t = u^{t-1}``; with the entropy ``R`` this is Optimistic Hedge (the paper's constant ``eta``;
    the schedule ``eta_t`` multiplying the whole sum is the standard time-varying FTRL, stated here as
    the rule, not taken from that paper). Hedge: Freund & Schapire 1997 (``optimistic=False``).
    """
    game = _game(payoffs)
    n = len(game)
    sizes = game[0].shape
    cumulative = [np.zeros(a) for a in sizes]
    last = [np.zeros(a) for a in sizes]

    def strategy(i: int, t: int) -> np.ndarray:
        signal = cumulative[i] + last[i] if optimistic else cumulative[i]
        return _softmax(float(eta_schedule(t)) * signal)

    rows: list[list[np.ndarray]] = []
    if not alternating:
        for t in range(1, T + 1):
            x = [strategy(i, t) for i in range(n)]
            rows.append(x)
            u = _utilities(game, x)
            for i in range(n):
                cumulative[i] = cumulative[i] + u[i]
                last[i] = u[i]
        return _stack(rows, n)

    x = [strategy(i, 1) for i in range(n)]
    rows.append([xi.copy() for xi in x])
    for t in range(1, T):
        for i in range(n):
            u_i = utility_vector(game, x, i)
            cumulative[i] = cumulative[i] + u_i
            last[i] = u_i
            x[i] = strategy(i, t + 1)
        rows.append([xi.copy() for xi in x])
    return _stack(rows, n)


# ----------------------------------------------------------------------------------------------
# Measures on a profile sequence
# ----------------------------------------------------------------------------------------------


def _weights(T: int, weights) -> np.ndarray:
    w = np.ones(T) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (T,) or np.any(w < 0.0) or w[0] <= 0.0:
        raise ValueError("weights must be T nonnegative numbers, the first positive")
    return w


def _profile_utilities(game, strategies) -> tuple[int, list[list[np.ndarray]]]:
    """``u_i^j = u_i(x_{-i}^j)`` for every iteration j of the profile sequence and every player i."""
    T = len(strategies[0])
    return T, [[utility_vector(game, [s[j] for s in strategies], i) for i in range(len(game))] for j in range(T)]


def external_regret(payoffs, strategies_per_player: Sequence[np.ndarray], weights=None) -> list[np.ndarray]:
    """Weighted average external regret, per player i and iteration t (array of shape (T,) per player)::

        R_i(t) = max_a  sum_{j<=t} w_j ( u_i^j(a) - <u_i^j, x_i^j> )  /  sum_{j<=t} w_j

    with ``u_i^j = u_i(x_{-i}^j)`` at the j-th profile of the sequence and ``w_j = 1`` by default. Not
    clipped at 0 (it can be negative)."""
    game = _game(payoffs)
    strategies = [np.asarray(s, dtype=float) for s in strategies_per_player]
    T, utilities = _profile_utilities(game, strategies)
    w = _weights(T, weights)
    result = []
    for i in range(len(game)):
        out = np.empty(T)
        for t in range(1, T + 1):
            total = np.zeros(strategies[i].shape[1])
            for j in range(t):
                u = utilities[j][i]
                total = total + w[j] * (u - float(np.dot(u, strategies[i][j])))
            out[t - 1] = np.max(total) / w[:t].sum()
        result.append(out)
    return result


def swap_regret(payoffs, strategies_per_player: Sequence[np.ndarray], weights=None) -> list[np.ndarray]:
    """Weighted average swap regret, per player i and iteration t::

        S_i(t) = max_{phi: A_i -> A_i} sum_{j<=t} w_j sum_a x_i^j(a) ( u_i^j(phi(a)) - u_i^j(a) ) / sum_{j<=t} w_j
               = sum_a max_b sum_{j<=t} w_j x_i^j(a) ( u_i^j(b) - u_i^j(a) ) / sum_{j<=t} w_j

    (the maximum over swap functions separates over a). Always >= 0 (``phi`` = identity)."""
    game = _game(payoffs)
    strategies = [np.asarray(s, dtype=float) for s in strategies_per_player]
    T, utilities = _profile_utilities(game, strategies)
    w = _weights(T, weights)
    result = []
    for i in range(len(game)):
        n_actions = strategies[i].shape[1]
        out = np.empty(T)
        for t in range(1, T + 1):
            value = 0.0
            for a in range(n_actions):
                gains = np.zeros(n_actions)
                for j in range(t):
                    u = utilities[j][i]
                    gains = gains + w[j] * strategies[i][j][a] * (u - u[a])
                value += float(np.max(gains))
            out[t - 1] = value / w[:t].sum()
        result.append(out)
    return result


def duality_gap(A: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Duality gap of (x, y) in the zero-sum game where the row player's utility is ``x^T A y``:
    ``max_{x'} x'^T A y - min_{y'} x^T A y'`` (>= 0, zero exactly at equilibria).

    For a matrix ``M`` given in the ``min_x max_y x^T M y`` convention (e.g. `CAI_3X3`), pass ``A = -M``:
    the gap is the same number, ``max_{y'} x^T M y' - min_{x'} x'^T M y``."""
    A = np.asarray(A, dtype=float)
    return float(np.max(A @ np.asarray(y, dtype=float)) - np.min(np.asarray(x, dtype=float) @ A))
