"""Exact evaluation (markovgames.evaluation): values, exact CE and CCE gaps, work limits.

Checked against
* a brute force written here, independent of the library: explicit enumeration of the hidden index
  paths (with the dense kernel of ``tests/reference_impl.py``), states and joint actions, and of
  *all* strategy modifications (CE) / all deterministic history-dependent deviations (CCE);
* the certified bounds reported by ``markovgames.dynamics.run`` (0 <= exact CE <= certified CE,
  exact CCE <= certified CCE; equality at T = 1), on random games with hypothesis;
* hand-computed examples (a negative CCE gap) and relabelling invariance.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_impl as ref
from conftest import PAPER_ALGORITHMS, examples
from markovgames import MarkovGame
from markovgames.dynamics import run
from markovgames.evaluation import (
    CCEGapResult,
    CEGapResult,
    EvaluationTooLarge,
    HistoryDeviation,
    IndexKernel,
    estimate_work,
    exact_cce_gap,
    exact_ce_gap,
    policy_value,
)
from markovgames.policies import IndexChainPolicy, MarkovCorrelatedPolicy, VisitChainPolicy

TOL = 1e-10
#: Every run in this file uses the same T, so each (shape, algorithm) compiles once.
T_RUN = 12


# ----------------------------------------------------------------------------------------------
# Builders (NumPy only)
# ----------------------------------------------------------------------------------------------


def random_game(seed: int, n: int, horizon: int, num_s: int, acts) -> MarkovGame:
    """Uniform[0, 1] rewards, Dirichlet(1) transition rows."""
    rng = np.random.default_rng(seed)
    acts = tuple(acts)
    return MarkovGame(
        rng.random((horizon, n, num_s, *acts)),
        rng.dirichlet(np.ones(num_s), size=(horizon, num_s, *acts)),
        0,
        name=f"random-{seed}",
    )


#: Every output policy's index kernel (Algorithm 3 with each averaging, Algorithm 4).
KINDS = ["smooth", "smooth-uniform", "smooth-linear", "stage"]


def random_index_policy(seed: int, game: MarkovGame, T: int, kind: str, concentration: float = 0.5):
    """Random per-index product policies (Dirichlet rows; small concentration = near-deterministic)."""
    rng = np.random.default_rng(seed)
    pols = tuple(rng.dirichlet(np.full(a, concentration), size=(T, game.horizon, game.num_states)) for a in game.num_actions)
    return IndexChainPolicy(kind, pols)


def random_markov_policy(seed: int, game: MarkovGame) -> MarkovCorrelatedPolicy:
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(game.num_joint_actions, 0.7), size=(game.horizon, game.num_states))
    return MarkovCorrelatedPolicy(joint.reshape((game.horizon, game.num_states) + game.num_actions), game.num_players)


# ----------------------------------------------------------------------------------------------
# Brute force, independent of markovgames.evaluation
# ----------------------------------------------------------------------------------------------


def _dense_kernel(kind: str, T: int, horizon: int):
    """(t0, mu) as dense 1-based arrays from the literal reference implementation."""
    # A kernel's kind is its value update's name (the smooth ones: their averaging).
    return ref.output_policy_kernel("stage_cce" if kind == "stage" else f"x+{kind}", T, horizon)


def _joint_prob(pols, j, h, s, a):
    p = 1.0
    for k, ak in enumerate(a):
        p *= pols[k][j - 1, h, s, ak]
    return p


def bf_index_value(game, policy, player=None, rule=None, uses_history=False):
    """Expected total rewards (N,) by explicit enumeration of (t0, j_1..j_H, s, joint actions).

    ``rule(h, s, recommended_own, history)`` gives the deviator's action; ``history`` is
    ``(s_0, a_0, ..., s_h)`` with joint actions as tuples.
    """
    H, N, S = game.horizon, game.num_players, game.num_states
    T = policy.T
    pols = [np.asarray(p) for p in policy.policies]
    t0, mu = _dense_kernel(policy.kind, T, H)
    joint = list(itertools.product(*[range(a) for a in game.num_actions]))
    R, P = game.rewards, game.transitions

    def rec(h, prev, s, hist):
        if h == H:
            return np.zeros(N)
        out = np.zeros(N)
        for j in range(1, T + 1):
            pj = mu[prev, j]
            if pj == 0.0:
                continue
            for a in joint:
                pa = _joint_prob(pols, j, h, s, a)
                if pa == 0.0:
                    continue
                play = list(a)
                if player is not None:
                    play[player] = rule(h, s, a[player], hist)
                play = tuple(play)
                val = R[(h, slice(None), s) + play].copy()
                for s2 in range(S):
                    p = P[(h, s) + play + (s2,)]
                    if p > 0.0:
                        val += p * step(h + 1, j, s2, hist + (play, s2) if uses_history else None)
                out += pj * pa * val
        return out

    # Without history dependence the value only depends on (h, previous index, state): memoise.
    step = rec if uses_history else lru_cache(maxsize=None)(rec)
    s1 = game.initial_state
    return sum(t0[t] * step(0, t, s1, (s1,) if uses_history else None) for t in range(1, T + 1) if t0[t] > 0)


def bf_markov_value(game, policy, player=None, rule=None, uses_history=False):
    """Expected total rewards (N,) of a Markov correlated policy by explicit enumeration."""
    H, N, S = game.horizon, game.num_players, game.num_states
    joint = list(itertools.product(*[range(a) for a in game.num_actions]))
    R, P, sigma = game.rewards, game.transitions, policy.joint

    def rec(h, s, hist):
        if h == H:
            return np.zeros(N)
        out = np.zeros(N)
        for a in joint:
            pa = sigma[(h, s) + a]
            if pa == 0.0:
                continue
            play = list(a)
            if player is not None:
                play[player] = rule(h, s, a[player], hist)
            play = tuple(play)
            val = R[(h, slice(None), s) + play].copy()
            for s2 in range(S):
                p = P[(h, s) + play + (s2,)]
                if p > 0.0:
                    val += p * step(h + 1, s2, hist + (play, s2) if uses_history else None)
            out += pa * val
        return out

    step = rec if uses_history else lru_cache(maxsize=None)(rec)
    s1 = game.initial_state
    return step(0, s1, (s1,) if uses_history else None)


def _evaluator(policy):
    return bf_index_value if isinstance(policy, IndexChainPolicy) else bf_markov_value


def bf_ce(game, policy):
    """Per player max over ALL strategy modifications phi[h][s][a] of the modified value, and the value."""
    evaluate = _evaluator(policy)
    H, S = game.horizon, game.num_states
    base = evaluate(game, policy)
    best = np.full(game.num_players, -np.inf)
    for i, a_i in enumerate(game.num_actions):
        for flat in itertools.product(range(a_i), repeat=H * S * a_i):
            table = np.array(flat).reshape(H, S, a_i)
            v = evaluate(game, policy, i, lambda h, s, a, _hist, table=table: int(table[h, s, a]))
            best[i] = max(best[i], v[i])
    return base, best


def _all_history_deviations(game, player):
    """Every deterministic deviation of ``player`` on the histories it can reach (s_0, a_0, ..., s_h).

    Off-path histories (own past action different from the deviation's) never occur, so a
    deviation is determined by its on-path choices; these are all enumerated.
    """
    acts, S, H = game.num_actions, game.num_states, game.horizon
    others = [range(a) for k, a in enumerate(acts) if k != player]

    def extend(h, frontier, partial):
        # frontier: histories at step h that still need an action.
        if not frontier:
            yield dict(partial)
            return
        for choice in itertools.product(range(acts[player]), repeat=len(frontier)):
            nxt = dict(partial)
            new_frontier = []
            for hist, b in zip(frontier, choice, strict=True):
                nxt[hist] = b
                if h + 1 < H:
                    for a_o in itertools.product(*others):
                        a = list(a_o)
                        a.insert(player, b)
                        for s2 in range(S):
                            new_frontier.append(hist + (tuple(a), s2))
            yield from extend(h + 1, new_frontier, nxt)

    yield from extend(0, [(game.initial_state,)], {})


def bf_cce(game, policy):
    """Per player max over ALL deterministic history-dependent deviations, and the value."""
    evaluate = _evaluator(policy)
    base = evaluate(game, policy)
    best = np.full(game.num_players, -np.inf)
    for i in range(game.num_players):
        for dev in _all_history_deviations(game, i):
            v = evaluate(game, policy, i, lambda h, s, a, hist, dev=dev: dev[hist], uses_history=True)
            best[i] = max(best[i], v[i])
    return base, best


# ----------------------------------------------------------------------------------------------
# Kernel and value
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("horizon", [1, 2, 3])
def test_kernel_matches_dense_reference(kind, horizon):
    rng = np.random.default_rng(horizon)
    for T in (1, 2, 3, 7, 40):
        kernel = IndexKernel(kind, T, horizon)
        t0, mu = _dense_kernel(kind, T, horizon)
        mu = mu[1:, 1:]
        b = rng.random((T, 3))
        np.testing.assert_allclose(kernel.push(b), mu.T @ b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(kernel.pull(b), mu @ b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(kernel.start_distribution(), t0[1:], atol=1e-15)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("horizon", [1, 2, 50])
def test_kernel_large_T_matches_library_push_and_duality(kind, horizon):
    # H = 50 makes the raw weights w_j ~ j^50 overflow: the smooth sums run over several blocks.
    T = 100_000
    kernel = IndexKernel(kind, T, horizon)
    pols = (np.full((T, horizon, 1, 1), 1.0),)
    lib = IndexChainPolicy(kind, pols)
    rng = np.random.default_rng(0)
    b = rng.dirichlet(np.ones(T))
    g = rng.random(T)
    np.testing.assert_allclose(kernel.push(b), lib.push(b), rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(kernel.first_index_distribution(), lib.first_index_distribution(), rtol=1e-9, atol=1e-300)
    # <push(b), g> = <b, pull(g)>: the two directions are transposes of one kernel.
    assert kernel.push(b) @ g == pytest.approx(b @ kernel.pull(g), rel=1e-11)
    # pull of a constant is that constant (each mu_t is a probability vector).
    np.testing.assert_allclose(kernel.pull(np.ones(T)), 1.0, rtol=1e-11)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_policy_value_matches_run_every_prefix(paper_game, algorithm):
    result = run(paper_game, algorithm, T_RUN, 0.2)
    for T in range(1, T_RUN + 1):
        policy = IndexChainPolicy.from_run(result, T)
        np.testing.assert_allclose(policy_value(paper_game, policy), result.value[T - 1], atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_policy_value_matches_brute_force_and_reference(kind):
    game = random_game(5, 3, 2, 2, (2, 3, 2))
    policy = random_index_policy(6, game, 4, kind)
    v = policy_value(game, policy)
    np.testing.assert_allclose(v, bf_index_value(game, policy), atol=1e-12)
    t0, mu = _dense_kernel(kind, policy.T, game.horizon)
    padded = [np.concatenate([np.zeros((1,) + p.shape[1:]), p]) for p in policy.policies]
    metrics = ref.reference_metrics(game.rewards, game.transitions, 0, padded, t0, mu)
    np.testing.assert_allclose(v, metrics["value"], atol=1e-12)


@pytest.mark.parametrize("kind", ["smooth", "stage"])
def test_policy_value_scales_to_T_1e5(paper_game, kind):
    T = 100_000
    policy = random_index_policy(1, paper_game, T, kind)
    v = policy_value(paper_game, policy)
    # Independent forward pass with the library's own (sequential) kernel push.
    d = np.zeros((T, 2))
    d[:, 0] = policy.first_index_distribution()
    expect = np.zeros(2)
    for h in range(2):
        p0, p1 = policy.policies[0][:, h], policy.policies[1][:, h]
        joint = p0[:, :, :, None] * p1[:, :, None, :]
        expect += np.einsum("ts,tsab,nsab->n", d, joint, paper_game.rewards[h])
        if h == 0:
            d = policy.push(np.einsum("ts,tsab,sabz->tz", d, joint, paper_game.transitions[h]))
    np.testing.assert_allclose(v, expect, rtol=1e-10)


def test_markov_policy_value_matches_brute_force():
    game = random_game(8, 2, 2, 2, (3, 2))
    policy = random_markov_policy(9, game)
    np.testing.assert_allclose(policy_value(game, policy), bf_markov_value(game, policy), atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Exact gaps against brute force
# ----------------------------------------------------------------------------------------------

BRUTE_CASES = [
    # (seed, N, H, S, A, T, kind)
    (11, 2, 2, 2, (2, 2), 3, "smooth"),
    (12, 2, 2, 2, (2, 2), 3, "stage"),
    (13, 2, 2, 1, (2, 2), 2, "smooth"),
    (14, 3, 2, 1, (2, 2, 2), 2, "stage"),
    (15, 3, 1, 2, (2, 3, 2), 3, "smooth"),
]


@pytest.mark.parametrize("seed,n,horizon,num_s,acts,T,kind", BRUTE_CASES)
def test_exact_gaps_match_brute_force_index_chain(seed, n, horizon, num_s, acts, T, kind):
    game = random_game(seed, n, horizon, num_s, acts)
    policy = random_index_policy(seed + 100, game, T, kind)
    ce = exact_ce_gap(game, policy)
    cce = exact_cce_gap(game, policy)
    base, ce_best = bf_ce(game, policy)
    _, cce_best = bf_cce(game, policy)
    np.testing.assert_allclose(ce.value, base, atol=TOL)
    np.testing.assert_allclose(cce.value, base, atol=TOL)
    np.testing.assert_allclose(ce.deviation_value, ce_best, atol=TOL)
    np.testing.assert_allclose(ce.per_player, ce_best - base, atol=TOL)
    np.testing.assert_allclose(cce.best_response_value, cce_best, atol=TOL)
    np.testing.assert_allclose(cce.per_player, cce_best - base, atol=TOL)
    # The returned modification / deviation achieves the reported value (brute-force evaluation).
    for i in range(n):
        table = ce.modifications[i]
        v = bf_index_value(game, policy, i, lambda h, s, a, _h, table=table: int(table[h, s, a]))
        assert v[i] == pytest.approx(ce.deviation_value[i], abs=TOL)
        dev = cce.deviations[i]
        v = bf_index_value(game, policy, i, lambda h, s, a, hist, dev=dev: dev.action(hist), uses_history=True)
        assert v[i] == pytest.approx(cce.best_response_value[i], abs=TOL)


@pytest.mark.parametrize("seed,n,horizon,num_s,acts", [(21, 2, 2, 2, (2, 2)), (22, 3, 2, 1, (2, 2, 2))])
def test_exact_gaps_match_brute_force_markov(seed, n, horizon, num_s, acts):
    game = random_game(seed, n, horizon, num_s, acts)
    policy = random_markov_policy(seed + 1, game)
    ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
    base, ce_best = bf_ce(game, policy)
    _, cce_best = bf_cce(game, policy)
    np.testing.assert_allclose(ce.deviation_value, ce_best, atol=TOL)
    np.testing.assert_allclose(cce.best_response_value, cce_best, atol=TOL)
    np.testing.assert_allclose(ce.value, base, atol=TOL)
    assert ce.gap >= 0.0
    for i in range(n):
        dev = cce.deviations[i]
        v = bf_markov_value(game, policy, i, lambda h, s, a, hist, dev=dev: dev.action(hist), uses_history=True)
        assert v[i] == pytest.approx(cce.best_response_value[i], abs=TOL)


def exhaustive_ce_two_players(game, policy, player):
    """Max over ALL modifications of a 2-player game, every one evaluated at once by a forward pass
    over (index, state) with the library's own kernel push (vectorised over modifications)."""
    H, S, a_i = game.horizon, game.num_states, game.num_actions[player]
    tables = np.array(list(itertools.product(range(a_i), repeat=H * S * a_i))).reshape(-1, H, S, a_i)
    num_m = tables.shape[0]
    d = np.zeros((policy.T, num_m, S))
    d[:, :, game.initial_state] = policy.first_index_distribution()[:, None]
    total = np.zeros(num_m)
    s_idx = np.arange(S)[None, :, None]
    for h in range(H):
        own, other = policy.policies[player][:, h], policy.policies[1 - player][:, h]
        r = game.rewards[h, player] if player == 0 else game.rewards[h, player].transpose(0, 2, 1)
        p = game.transitions[h] if player == 0 else game.transitions[h].transpose(0, 2, 1, 3)
        u = np.einsum("sbc,tsc->tsb", r, other)  # [r pi_-i](s, b) per index
        pm = np.einsum("sbcz,tsc->tsbz", p, other)
        chosen = tables[:, h]  # (M, S, A)
        total += np.einsum("tms,tsa,tmsa->m", d, own, u[:, s_idx, chosen])
        if h + 1 < H:
            d = policy.push(np.einsum("tms,tsa,tmsaz->tmz", d, own, pm[:, s_idx, chosen]))
    return total.max()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("concentration", [0.3, 5.0])
def test_branch_and_bound_matches_exhaustive_enumeration(kind, concentration):
    # H = 3: 4^6 = 4096 modifications per player, every one evaluated; the search must find the max.
    for seed in range(3):
        game = random_game(50 + seed, 2, 3, 2, (2, 2))
        policy = random_index_policy(60 + seed, game, 8, kind, concentration)
        ce = exact_ce_gap(game, policy)
        for i in range(2):
            assert ce.deviation_value[i] == pytest.approx(exhaustive_ce_two_players(game, policy, i), abs=1e-12)


def test_history_deviation_keys_follow_the_deviation():
    game = random_game(31, 2, 2, 2, (2, 2))
    policy = random_index_policy(32, game, 3, "smooth")
    dev = exact_cce_gap(game, policy).deviations[1]
    assert isinstance(dev, HistoryDeviation)
    first = dev.action((0,))
    for key in dev.actions:
        assert key[0] == 0 and len(key) % 2 == 1
        if len(key) > 1:
            assert key[1][1] == first  # the deviator's own past action is its own choice


# ----------------------------------------------------------------------------------------------
# Against the certified bounds of real runs (hypothesis)
# ----------------------------------------------------------------------------------------------

#: (shape, algorithm) pairs: few distinct shapes, since each compiles once (about 1-3 s).
RUN_CASES = [
    ((2, 2, 2, (2, 2)), "smooth_ce"),
    ((2, 2, 2, (2, 2)), "stage_cce"),
    ((2, 2, 2, (2, 2)), "smooth_cce"),
    ((3, 2, 1, (2, 2, 3)), "smooth_ce"),
    ((3, 2, 1, (2, 2, 3)), "stage_cce"),
    ((2, 1, 2, (3, 3)), "smooth_cce"),
]


# 7 examples by default (the runs of the paper's shape are compiled loops of the test above), 14
# in the full mode.
@settings(max_examples=examples(7, 14), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(RUN_CASES),
    seed=st.integers(0, 2**20),
    prefix=st.integers(2, T_RUN),
    eta=st.sampled_from([0.2, 1.0, 5.0]),
)
def test_exact_gaps_are_bounded_by_certified_gaps(case, seed, prefix, eta):
    (n, horizon, num_s, acts), algorithm = case
    game = random_game(seed, n, horizon, num_s, acts)
    result = run(game, algorithm, T_RUN, eta)
    for T in (1, prefix):
        policy = IndexChainPolicy.from_run(result, T)
        ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
        cert_ce = float(np.max(result.certified_ce_bound[T - 1] - result.value[T - 1]))
        cert_cce = float(np.max(result.certified_cce_bound[T - 1] - result.value[T - 1]))
        np.testing.assert_allclose(ce.value, result.value[T - 1], atol=1e-12)
        np.testing.assert_allclose(cce.value, result.value[T - 1], atol=1e-12)
        assert 0.0 <= ce.gap <= cert_ce + 1e-12
        assert cce.gap <= cert_cce + 1e-12
        assert np.all(ce.per_player >= 0.0)
        assert np.all(ce.per_player <= result.certified_ce_bound[T - 1] - result.value[T - 1] + 1e-12)
        assert np.all(cce.per_player <= result.certified_cce_bound[T - 1] - result.value[T - 1] + 1e-12)
        # The pruning bound recomputed here is the run's certified bound.
        np.testing.assert_allclose(ce.certified_bound, result.certified_ce_bound[T - 1], atol=1e-12)
        np.testing.assert_allclose(cce.certified_bound, result.certified_cce_bound[T - 1], atol=1e-12)
        if T == 1:
            # One index: nothing is hidden, so the index-revealing bounds are exact.
            assert ce.gap == pytest.approx(cert_ce, abs=1e-12)
            assert cce.gap == pytest.approx(cert_cce, abs=1e-12)
            np.testing.assert_allclose(ce.deviation_value, result.certified_ce_bound[0], atol=1e-12)
            np.testing.assert_allclose(cce.best_response_value, result.certified_cce_bound[0], atol=1e-12)


# ----------------------------------------------------------------------------------------------
# A negative CCE gap: the common randomness of a traffic light in the game of chicken
# ----------------------------------------------------------------------------------------------

#: Chicken, actions (Dare, Chicken), payoffs / 7 so rewards lie in [0, 1]:
#: (D,D) = (0,0), (D,C) = (7,2), (C,D) = (2,7), (C,C) = (6,6).
CHICKEN = np.array([[[0, 7], [2, 6]], [[0, 2], [7, 6]]], dtype=float) / 7.0  # [i, a0, a1]


def chicken_game(horizon: int) -> MarkovGame:
    rewards = np.broadcast_to(CHICKEN[None, :, None], (horizon, 2, 1, 2, 2)).copy()
    return MarkovGame(rewards, np.ones((horizon, 1, 2, 2, 1)), 0, name="chicken")


def test_cce_gap_can_be_negative_markov_traffic_light():
    game = chicken_game(1)
    joint = np.zeros((1, 1, 2, 2))
    joint[0, 0, 0, 1] = joint[0, 0, 1, 0] = 0.5  # (D, C) or (C, D), fair coin
    policy = MarkovCorrelatedPolicy(joint, 2)
    cce = exact_cce_gap(game, policy)
    # Value 4.5/7; deviations against the uniform opponent: D -> 3.5/7, C -> 4/7.
    np.testing.assert_allclose(cce.value, [4.5 / 7, 4.5 / 7], atol=1e-15)
    np.testing.assert_allclose(cce.per_player, [-0.5 / 7, -0.5 / 7], atol=1e-15)
    assert cce.gap == pytest.approx(-0.5 / 7, abs=1e-15)
    assert exact_ce_gap(game, policy).gap == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("horizon", [1, 2])
def test_cce_gap_can_be_negative_index_chain(horizon):
    # Two deterministic iterates: pi^1 = (D, C), pi^2 = (C, D); the smooth kernel from t_0 = 2 draws
    # index 1 with probability alpha_2^1 = H/(H+2) and index 2 otherwise: the hidden index is the
    # "traffic light". With H = 2 the deviator sees the step-0 actions, which reveal j_1 and hence
    # something about j_2 (from index 1 the chain stays at 1).
    game = chicken_game(horizon)
    pol0 = np.zeros((2, horizon, 1, 2))
    pol1 = np.zeros((2, horizon, 1, 2))
    pol0[0, :, 0, 0] = pol1[0, :, 0, 1] = 1.0  # index 1: (D, C)
    pol0[1, :, 0, 1] = pol1[1, :, 0, 0] = 1.0  # index 2: (C, D)
    policy = IndexChainPolicy("smooth", (pol0, pol1))
    cce = exact_cce_gap(game, policy)
    base, best = bf_cce(game, policy)
    np.testing.assert_allclose(cce.best_response_value, best, atol=TOL)
    np.testing.assert_allclose(cce.per_player, best - base, atol=TOL)
    assert cce.gap < -0.01  # negative, not clipped
    assert isinstance(cce, CCEGapResult)
    if horizon == 1:
        # mu_2 = (1/3, 2/3) for H = 1: value (11/3, 16/3)/7, best deviations (10/3, 14/3)/7.
        np.testing.assert_allclose(cce.per_player, [-1 / 21, -2 / 21], atol=1e-14)


# ----------------------------------------------------------------------------------------------
# Relabelling invariance
# ----------------------------------------------------------------------------------------------


def _permute_actions(game, policy, player, perm):
    """Rename player's action perm[k] as k (new action k = old action perm[k])."""
    r = np.take(game.rewards, perm, axis=3 + player)
    p = np.take(game.transitions, perm, axis=2 + player)
    pols = list(policy.policies)
    pols[player] = pols[player][..., perm]
    return MarkovGame(r, p, game.initial_state), IndexChainPolicy(policy.kind, tuple(pols))


def _swap_players(game, policy):
    """Players 0 and 1 exchange roles (N = 2)."""
    r = game.rewards[:, ::-1].transpose(0, 1, 2, 4, 3)
    p = game.transitions.transpose(0, 1, 3, 2, 4)
    return MarkovGame(r, p, game.initial_state), IndexChainPolicy(policy.kind, policy.policies[::-1])


@pytest.mark.parametrize("kind", ["smooth", "stage"])
def test_gaps_invariant_under_relabelling(kind):
    game = random_game(41, 2, 2, 2, (3, 2))
    policy = random_index_policy(42, game, 6, kind)
    ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
    for player, perm in ((0, [2, 0, 1]), (1, [1, 0])):
        g2, p2 = _permute_actions(game, policy, player, perm)
        ce2, cce2 = exact_ce_gap(g2, p2), exact_cce_gap(g2, p2)
        np.testing.assert_allclose(ce2.per_player, ce.per_player, atol=1e-12)
        np.testing.assert_allclose(cce2.per_player, cce.per_player, atol=1e-12)
        # The maximising modification is the same map under the renaming (when unique).
        if player == 0:
            inv = np.argsort(perm)
            mapped = inv[ce.modifications[0][:, :, perm]]
            np.testing.assert_array_equal(mapped, ce2.modifications[0])
    g3, p3 = _swap_players(game, policy)
    ce3, cce3 = exact_ce_gap(g3, p3), exact_cce_gap(g3, p3)
    np.testing.assert_allclose(ce3.per_player, ce.per_player[::-1], atol=1e-12)
    np.testing.assert_allclose(cce3.per_player, cce.per_player[::-1], atol=1e-12)
    np.testing.assert_allclose(ce3.value, ce.value[::-1], atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Work estimates, refusal, speed
# ----------------------------------------------------------------------------------------------


def test_refuses_too_large_with_size_and_limit(paper_game):
    policy = random_index_policy(3, paper_game, 50, "smooth")
    est = estimate_work(paper_game, policy)
    assert est.index_length == 50
    # One reachable state at step 0 (4 maps), then closed form at the last step: 1 + 4 nodes.
    assert est.ce_nodes == (5, 5)
    assert est.ce_modifications == (4**3, 4**3)
    assert est.cce_history_nodes == (1 + 2 * 2, 1 + 2 * 2)
    assert est.ce_work > 0 and est.cce_work > 0 and "T=50" in est.describe()
    with pytest.raises(EvaluationTooLarge) as info:
        exact_ce_gap(paper_game, policy, max_work=1000)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.limit == 1000 and err.work == est.ce_work
    assert "max_work=1e+03" in str(err) and "T=50" in str(err) and "search nodes" in str(err)
    with pytest.raises(EvaluationTooLarge, match="history nodes"):
        exact_cce_gap(paper_game, policy, max_work=1000)
    # Raising the limit (or None) computes it.
    assert exact_ce_gap(paper_game, policy, max_work=None).gap >= 0.0


def test_work_estimate_grows_with_the_game():
    big = random_game(0, 3, 6, 4, (4, 4, 4))
    policy = random_index_policy(0, big, 2, "smooth", concentration=1.0)
    est = estimate_work(big, policy)
    assert est.ce_nodes[0] >= 10**30  # about (4^4)^(1 + 4 * 4): astronomically many (saturated)
    assert ">=1e+30" in est.describe()
    assert est.ce_work_worst >= 10**30  # without pruning, as many
    # The CE search is estimated by its greedy path (98,160 here): it starts, and the counter stops
    # it once its work passes the limit (stopped). At the default limit that takes about 40 s of
    # search; a limit of 10^6 is passed within a second, the same code path.
    with pytest.raises(EvaluationTooLarge) as stopped:
        exact_ce_gap(big, policy, max_work=10**6)
    assert stopped.value.stopped and est.ce_work <= 10**6
    with pytest.raises(EvaluationTooLarge) as refused:
        exact_cce_gap(big, policy)
    assert not refused.value.stopped


@pytest.mark.parametrize("kind", ["smooth", "stage"])
def test_paper_game_T_1e4_gaps_are_within_the_certified_bounds(paper_game, kind):
    policy = random_index_policy(7, paper_game, 10_000, kind, concentration=1.0)
    ce = exact_ce_gap(paper_game, policy)
    cce = exact_cce_gap(paper_game, policy)
    assert isinstance(ce, CEGapResult)
    assert ce.gap >= 0.0
    assert np.all(ce.deviation_value <= ce.certified_bound + 1e-12)
    assert np.all(cce.best_response_value <= cce.certified_bound + 1e-12)


def test_rejects_mismatched_policy(paper_game):
    other = random_game(0, 2, 2, 2, (3, 2))
    policy = random_index_policy(0, other, 3, "smooth")
    with pytest.raises(ValueError, match="policy has"):
        policy_value(paper_game, policy)
    with pytest.raises(TypeError):
        exact_ce_gap(paper_game, object())


def test_ce_result_helpers(paper_game):
    policy = random_index_policy(17, paper_game, 5, "stage")
    ce = exact_ce_gap(paper_game, policy)
    mod = ce.modification
    assert mod.player == ce.player == int(np.argmax(ce.per_player))
    assert mod.table.shape == (2, 2, 2) and not mod.table.flags.writeable
    assert math.isclose(ce.gap, float(ce.per_player.max()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ce.gap = 0.0  # frozen


def _visit_chain_policy(seed: int, game: MarkovGame, K: int, kind: str) -> VisitChainPolicy:
    """V-learning's output policy of ``K`` random episodes (random states and strategies)."""
    rng = np.random.default_rng(seed)
    states = rng.integers(0, game.num_states, (K, game.horizon))
    states[:, 0] = game.initial_state
    played = tuple(rng.dirichlet(np.ones(a), size=(K, game.horizon)) for a in game.num_actions)
    return VisitChainPolicy.from_episodes(kind, game.num_states, states, played)


#: Games for the work counts: the paper's shapes, three steps (a CE search of 261 nodes at worst
#: per player), three players.
WORK_GAMES = {
    "2x2x2": lambda: random_game(41, 2, 2, 2, (2, 2)),
    "h3-s3": lambda: random_game(42, 2, 3, 3, (2, 2)),
    "3p": lambda: random_game(43, 3, 2, 2, (2, 2, 2)),
}


@pytest.mark.parametrize("name", list(WORK_GAMES))
def test_the_work_estimates_are_the_work_counted(name):
    """`estimate_work` against the work the evaluators count as they run (`CEGapResult.work`,
    `CCEGapResult.work`): for V-learning's output policies (both kernels) and the engine's, within
    a factor 2 (the promise is 10); the CE search's worst case bounds its count."""
    game = WORK_GAMES[name]()
    policies = [_visit_chain_policy(1, game, 300, "smooth"), _visit_chain_policy(2, game, 300, "stage")]
    policies.append(random_index_policy(3, game, 300, "smooth", concentration=1.0))
    for policy in policies:
        est = estimate_work(game, policy)
        ce, cce = exact_ce_gap(game, policy, max_work=None), exact_cce_gap(game, policy, max_work=None)
        assert est.ce_work / 2 <= ce.work <= 2 * est.ce_work, (type(policy).__name__, est, ce.work, ce.nodes)
        assert ce.work <= est.ce_work_worst
        # The history recursion has no pruning: its count is its estimate, up to the joint actions
        # of probability 0 it skips.
        assert est.cce_work / 2 <= cce.work <= est.cce_work, (type(policy).__name__, est, cce.work)


def test_a_search_that_prunes_less_than_estimated_stops_at_the_limit(monkeypatch):
    """With its pruning switched off the CE search visits every node: its count is near the worst
    case, and a limit above the estimate but below that stops it (EvaluationTooLarge, stopped)."""
    import markovgames.evaluation._ce as ce_module

    game = WORK_GAMES["h3-s3"]()
    policy = _visit_chain_policy(4, game, 60, "smooth")
    est = estimate_work(game, policy)
    assert est.ce_work_worst > 4 * est.ce_work
    monkeypatch.setattr(ce_module, "_PRUNE_RTOL", -math.inf)
    full = exact_ce_gap(game, policy, max_work=None)
    assert full.nodes == est.ce_nodes and est.ce_work_worst / 10 <= full.work <= est.ce_work_worst
    with pytest.raises(EvaluationTooLarge, match=r"exact CE gap stopped: its work passed the limit") as info:
        exact_ce_gap(game, policy, max_work=2 * est.ce_work)
    assert info.value.stopped and info.value.work > 2 * est.ce_work
