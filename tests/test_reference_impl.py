"""Sanity tests of the literal reference implementation itself (tests/reference_impl.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

try:
    import reference_impl as ref
except ImportError:  # pragma: no cover - when tests is imported as a package
    from tests import reference_impl as ref


def make_game(seed, N=2, S=2, H=2, A=(2, 2)):
    rng = np.random.default_rng(seed)
    A = tuple(A)
    rewards = rng.uniform(0.0, 1.0, size=(H, N, S) + A)
    transitions = rng.dirichlet(np.ones(S), size=(H, S) + A)
    return rewards, transitions


def random_policies(seed, T, H, S, A):
    rng = np.random.default_rng(seed)
    pols = []
    for Ai in A:
        p = rng.dirichlet(np.ones(Ai), size=(T + 1, H, S))
        p[0] = 1.0 / Ai
        pols.append(p)
    return pols


GAMES = [
    dict(seed=1, N=2, S=2, H=2, A=(2, 2)),
    dict(seed=2, N=3, S=2, H=2, A=(2, 3, 2)),
    dict(seed=3, N=2, S=3, H=2, A=(3, 2)),
    dict(seed=7, N=2, S=2, H=3, A=(2, 3)),
]


# ---------------------------------------------------------------------------------------------
# weights, stages, kernels
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("H", [1, 2, 3, 5])
def test_alpha_weights(H):
    for t in range(1, 25):
        aw = ref.alpha_weights(H, t)
        assert len(aw) == t
        assert math.isclose(sum(aw), 1.0, rel_tol=0, abs_tol=1e-14)
        W_t = math.comb(H + t, H + 1)
        for j in range(1, t + 1):
            assert math.isclose(aw[j - 1], ref.weight(H, j) / W_t, rel_tol=1e-13, abs_tol=0)
            # w_j = alpha_t^j / alpha_t^1, independent of t
            assert math.isclose(aw[j - 1] / aw[0], ref.weight(H, j), rel_tol=1e-12)
    assert ref.alpha(H, 1) == 1.0


def test_stage_lengths():
    assert ref.stage_lengths(2, 6) == [2, 3, 4, 6, 9, 13]
    assert ref.stage_lengths(1, 4) == [1, 2, 4, 8]
    parts = ref.stage_partition(2, 20)
    assert parts == [(1, 2, True), (3, 5, True), (6, 9, True), (10, 15, True), (16, 20, False)]
    assert ref.stage_partition(2, 15)[-1] == (10, 15, True)
    assert ref.stage_partition(3, 2) == [(1, 2, False)]


@pytest.mark.parametrize("alg", ref.ALGORITHMS)
@pytest.mark.parametrize("T", [1, 2, 7, 16])
def test_kernel_rows(alg, T):
    H = 2
    t0, mu = ref.output_policy_kernel(alg, T, H)
    assert t0.shape == (T + 1,) and mu.shape == (T + 1, T + 1)
    assert t0[0] == 0 and math.isclose(t0.sum(), 1.0)
    assert np.all(mu[0] == 0) and np.all(mu[:, 0] == 0)
    for t in range(1, T + 1):
        assert math.isclose(mu[t].sum(), 1.0, abs_tol=1e-14)
        assert np.all(mu[t] >= 0)
    if alg == "stage_cce":
        assert np.allclose(t0[1:], 1.0 / T)
        stages = ref.stage_partition(H, T)
        for k, (start, end, _) in enumerate(stages):
            ps, pe = (start, end) if k == 0 else stages[k - 1][:2]
            for t in range(start, end + 1):
                support = np.nonzero(mu[t])[0]
                assert list(support) == list(range(ps, pe + 1))
    else:
        assert t0[T] == 1.0
        for t in range(1, T + 1):
            assert np.all(mu[t, t + 1 :] == 0)
            assert mu[t, t] == ref.alpha(H, t)


# ---------------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------------


def test_log_barrier_and_stationary():
    rng = np.random.default_rng(0)
    for _ in range(20):
        A = int(rng.integers(2, 5))
        g = rng.normal(scale=3.0, size=A)
        x = ref.log_barrier_argmax(g)
        assert math.isclose(x.sum(), 1.0, abs_tol=1e-15) and np.all(x > 0)
        lam = g + 1.0 / x  # KKT: lam - g_k = 1/x_k, the same for every k
        assert np.ptp(lam) < 1e-12 * max(1.0, np.abs(lam).max())
        q = rng.dirichlet(np.ones(A), size=A)
        p = ref.stationary_distribution(q)
        assert np.allclose(q.T @ p, p, atol=1e-14, rtol=0) and math.isclose(p.sum(), 1.0)
    assert np.allclose(ref.log_barrier_argmax(np.full(3, 7.0)), 1 / 3, atol=1e-16)


# ---------------------------------------------------------------------------------------------
# dynamics
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alg", ref.ALGORITHMS)
@pytest.mark.parametrize("optimistic", [True, False])
def test_policies_on_simplex(alg, optimistic):
    g = GAMES[1]
    rewards, transitions = make_game(g["seed"], g["N"], g["S"], g["H"], g["A"])
    T = 12
    out = ref.run_reference(rewards, transitions, alg, 0.5, T, optimistic=optimistic)
    pols = out["policies"]
    assert len(pols) == g["N"]
    for i, p in enumerate(pols):
        assert p.shape == (T + 1, g["H"], g["S"], g["A"][i])
        assert np.all(p >= 0)
        assert np.allclose(p.sum(-1), 1.0, atol=1e-14, rtol=0)
        assert np.allclose(p[0], 1.0 / g["A"][i])
        assert np.allclose(p[1], 1.0 / g["A"][i])  # ell^1 = 0 (u^0 = 0 / Q^1 = 0)
        assert not np.allclose(p[T], 1.0 / g["A"][i])  # something was learned
    if alg == "stage_cce":
        assert out["stage_bounds"] == [(1, 2), (3, 5), (6, 9), (10, 12)]
        assert out["stage_complete"] == [True, True, True, False]
        assert out["partial_final_stage"] is True
        assert len(out["stage_Q"]) == 4 and np.all(out["stage_Q"][0] == 0)
    else:
        assert out["Q"].shape == (T + 1, g["H"], g["N"], g["S"]) + g["A"]
        assert np.all(out["Q"][0] == 0)


def test_stage_first_value_update_is_average_reward():
    """With Q^1 = 0 the first value update is Q^2_h = r_h (the continuation is [0 pi] = 0)."""
    rewards, transitions = make_game(4, 2, 2, 2, (2, 3))
    out = ref.run_reference(rewards, transitions, "stage_cce", 0.3, 3)
    assert np.allclose(out["stage_Q"][1], rewards, atol=1e-15, rtol=0)


def test_theory_rates():
    rewards, transitions = make_game(5, 2, 2, 2, (2, 3))
    out = ref.run_reference(rewards, transitions, "smooth_ce", "theory", 2)
    assert out["etas"][1] == 1.0 / (256 * 2 * 2 * math.sqrt(2 * 3))
    out = ref.run_reference(rewards, transitions, "stage_cce", "theory", 9)
    # L = 2, 3, 4 over iterations 1-2, 3-5, 6-9
    assert out["etas"][1] == 1.0 / 2  # ln 2 < 1
    assert out["etas"][4] == 1.0 / (2 * max(1.0, math.log(3)) ** 4)
    assert out["etas"][9] == 1.0 / (2 * max(1.0, math.log(4)) ** 4)


def test_baseline_second_iterate_smooth_cce():
    """Non-optimistic smooth_cce at t=2: pi^2 = softmax(eta w_1 u^1 / w_2)."""
    rewards, transitions = make_game(6, 2, 2, 2, (2, 2))
    H, eta = 2, 0.7
    out = ref.run_reference(rewards, transitions, "smooth_cce", eta, 2, optimistic=False)
    opt = ref.run_reference(rewards, transitions, "smooth_cce", eta, 2, optimistic=True)
    Q1, pols = out["Q"][1], out["policies"]
    for h in range(H):
        for s in range(2):
            u0 = Q1[h, 0, s] @ pols[1][1, h, s]  # player 0's utility vector
            u1 = pols[0][1, h, s] @ Q1[h, 1, s]
            w1, w2 = ref.weight(H, 1), ref.weight(H, 2)
            assert np.allclose(pols[0][2, h, s], ref.softmax(eta * w1 * u0 / w2), atol=1e-15)
            assert np.allclose(pols[1][2, h, s], ref.softmax(eta * w1 * u1 / w2), atol=1e-15)
            assert np.allclose(opt["policies"][0][2, h, s], ref.softmax(eta * (w1 + w2) * u0 / w2))


@pytest.mark.parametrize("alg", ref.ALGORITHMS)
def test_constant_reward_keeps_uniform(alg):
    A = (3, 2)
    rewards = np.full((1, 2, 1) + A, 0.37)
    transitions = np.ones((1, 1) + A + (1,))
    out = ref.run_reference(rewards, transitions, alg, 0.9, 10)
    for i, p in enumerate(out["policies"]):
        assert np.allclose(p, 1.0 / A[i], atol=1e-14, rtol=0)


@pytest.mark.parametrize("alg", ["smooth_ce", "smooth_cce"])
@pytest.mark.parametrize("g", [GAMES[1], GAMES[3]], ids=["g2", "g4"])
def test_smooth_Q_identity(alg, g):
    """Q^t_h = r_h + P_h V^t_{h+1} with V^t the output policy's index-value recursion."""
    rewards, transitions = make_game(g["seed"], g["N"], g["S"], g["H"], g["A"])
    T, H, S, N = 8, g["H"], g["S"], g["N"]
    out = ref.run_reference(rewards, transitions, alg, 0.4, T)
    _, mu = ref.output_policy_kernel(alg, T, H)
    V = ref.index_values(rewards, transitions, out["policies"], mu)
    assert V.shape == (T + 1, H + 1, N, S) and np.all(V[:, H] == 0)
    Q = out["Q"]
    for t in range(1, T + 1):
        for h in range(H):
            target = rewards[h] + np.moveaxis(transitions[h] @ V[t, h + 1].T, -1, 0)
            assert np.allclose(Q[t, h], target, atol=1e-13, rtol=0)


# ---------------------------------------------------------------------------------------------
# metrics at T = 1 against brute force
# ---------------------------------------------------------------------------------------------


def _others_marg(M, pols, i, A):
    """sum_{a_-i} M[..., a] prod_{k != i} pols[k][a_k], as a vector over a_i (brute force)."""
    out = np.zeros(A[i])
    for a in itertools.product(*[range(x) for x in A]):
        p = 1.0
        for k in range(len(A)):
            if k != i:
                p *= pols[k][a[k]]
        out[a[i]] += p * M[a]
    return out


def _evaluate(rewards, transitions, pols_hs, H, S, A, i):
    """Value of a Markov product policy for player i; pols_hs[h][s] = list of per-player vectors."""
    V = np.zeros(S)
    for h in range(H - 1, -1, -1):
        Vn = np.zeros(S)
        for s in range(S):
            for a in itertools.product(*[range(x) for x in A]):
                p = np.prod([pols_hs[h][s][k][a[k]] for k in range(len(A))])
                Vn[s] += p * (rewards[(h, i, s) + a] + transitions[(h, s) + a] @ V)
        V = Vn
    return V


@pytest.mark.parametrize("g", GAMES, ids=["g1", "g2", "g3", "g4"])
def test_T1_metrics_bruteforce(g):
    N, S, H, A = g["N"], g["S"], g["H"], g["A"]
    rewards, transitions = make_game(g["seed"], N, S, H, A)
    pols = random_policies(g["seed"] + 100, 1, H, S, A)
    s1 = 0
    for alg in ref.ALGORITHMS:
        t0, mu = ref.output_policy_kernel(alg, 1, H)
        assert t0[1] == 1.0 and mu[1, 1] == 1.0
        m = ref.reference_metrics(rewards, transitions, s1, pols, t0, mu)
        pi1 = [[[pols[k][1, h, s] for k in range(N)] for s in range(S)] for h in range(H)]
        for i in range(N):
            val = _evaluate(rewards, transitions, pi1, H, S, A, i)[s1]
            assert math.isclose(m["value"][i], val, abs_tol=1e-13)
            # CCE: best deterministic Markov response (exhaustive enumeration)
            best = -np.inf
            for choice in itertools.product(range(A[i]), repeat=H * S):
                dev = [[list(pi1[h][s]) for s in range(S)] for h in range(H)]
                for h in range(H):
                    for s in range(S):
                        e = np.zeros(A[i])
                        e[choice[h * S + s]] = 1.0
                        dev[h][s][i] = e
                best = max(best, _evaluate(rewards, transitions, dev, H, S, A, i)[s1])
            assert math.isclose(m["certified_cce_bound"][i], best, abs_tol=1e-13)
            # CE: best strategy modification phi^s_h: A_i -> A_i (exhaustive per (h, s))
            Wn = np.zeros(S)
            for h in range(H - 1, -1, -1):
                Wh = np.zeros(S)
                for s in range(S):
                    others = pi1[h][s]
                    best_phi = -np.inf
                    for phi in itertools.product(range(A[i]), repeat=A[i]):
                        tot = 0.0
                        for a in range(A[i]):
                            cont = rewards[h, i, s] + transitions[h, s] @ Wn
                            tot += others[i][a] * _others_marg(cont, others, i, A)[phi[a]]
                        best_phi = max(best_phi, tot)
                    Wh[s] = best_phi
                Wn = Wh
            assert math.isclose(m["certified_ce_bound"][i], Wn[s1], abs_tol=1e-13)
        assert math.isclose(m["certified_ce_gap"], max(m["certified_ce_bound"] - m["value"]), abs_tol=0)
        assert m["certified_ce_gap"] >= -1e-14
        assert np.all(m["certified_ce_bound"] >= m["certified_cce_bound"] - 1e-14)
        assert np.all(m["certified_cce_bound"] >= m["value"] - 1e-14)  # single product policy


@pytest.mark.parametrize("alg", ref.ALGORITHMS)
def test_prefix_metrics_and_ordering(alg):
    g = GAMES[0]
    rewards, transitions = make_game(g["seed"], g["N"], g["S"], g["H"], g["A"])
    T, H = 10, g["H"]
    out = ref.run_reference(rewards, transitions, alg, 0.2, T)
    for Tp in (1, 4, T):
        m = ref.metrics_for_prefix(rewards, transitions, 0, alg, out["policies"], Tp, H)
        assert np.all(m["value"] >= 0) and np.all(m["value"] <= H)
        assert m["certified_ce_gap"] >= -1e-14
        assert np.all(m["certified_ce_bound"] >= m["certified_cce_bound"] - 1e-13)
        assert math.isclose(m["certified_cce_gap"], max(m["certified_cce_bound"] - m["value"]), abs_tol=0)
    # the full-length prefix equals the kernel computed directly
    t0, mu = ref.output_policy_kernel(alg, T, H)
    full = ref.reference_metrics(rewards, transitions, 0, out["policies"], t0, mu)
    assert np.array_equal(full["value"], m["value"])
    if alg != "stage_cce":
        # smooth: j_1 ~ alpha_T^j before step 1, so value = sum_j alpha_T^j <Q^j_0, pi^j_0>(s1)
        Q = out["Q"]
        aw = ref.alpha_weights(H, T)
        for i in range(g["N"]):
            v = 0.0
            for j in range(1, T + 1):
                pj = [p[j, 0, 0] for p in out["policies"]]
                for a in itertools.product(range(2), range(2)):
                    v += aw[j - 1] * Q[(j, 0, i, 0) + a] * pj[0][a[0]] * pj[1][a[1]]
            assert math.isclose(full["value"][i], v, abs_tol=1e-13)
