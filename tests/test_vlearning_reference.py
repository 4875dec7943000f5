"""V-learning against its literal definition, and its output policy's evaluators against brute force.

* The reference itself (tests/literal_vlearning.py, written from docs/vlearning.md only): the smooth
  kernel's weights are the ratios ``w_l / W_n`` of binomials the document states, the stage
  kernel's support is the last complete stage (tables worked out by hand from the stage lengths),
  the stationary distribution is stationary, the dense value equals a Monte Carlo of the policy
  played step by step, and with one episode (every player uniform, a product policy) the brute CE
  and CCE gaps both equal the library's Nash gap of the uniform policy.
* ``run_vlearning`` equals `literal_vlearning` fed the run's own numbers (``vlearning_uniforms``)
  or numbers given as ``draws``: states and actions exactly, the distributions played and the final
  value estimates to 1e-12, the visit counts; ``cce-v``, ``ce-v`` and ``stage-v``, two and three
  players (unequal action counts), ``H`` of 2 and 3, bonus 1, 0.1 and 0.
* The output policy (``result.policy``, a ``VisitChainPolicy``) and its prefixes: ``policy_value``
  and ``prefix_curves``'s values equal the dense index recursion of `brute_value` to 1e-12; ``exact_ce_gap`` and
  ``exact_cce_gap`` equal the enumeration of every strategy modification / every deterministic
  history deviation (tiny games) to 1e-10, and their certified bounds (and ``prefix_curves``') are
  at least the exact gaps.
* The comparisons can fail: shifted draws, another bonus or the other kernel give other results.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import literal_vlearning as lv
from conftest import beyond_default_in_full, case
from markovgames.dynamics import run_vlearning, vlearning_uniforms
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, nash_gap, policy_value, prefix_curves
from markovgames.games import paper_game, random_game
from markovgames.policies import VisitChainPolicy

TOL = 1e-12
GAP_TOL = 1e-10

#: (game, episodes): two players (H = 2: the paper's game and a tiny random game, of one shape so
#: that they share compiled programs), three players with 2 x 3 x 2 actions (H = 3). Each new
#: (shape, algorithm, bonus) compiles a program (seconds): the cases below use few of them.
GAMES = {
    "paper": (paper_game(), 120),
    "tiny": (random_game(2, 2, 2, 2, seed_or_rng=17), 120),
    "3p-h3": (random_game(3, 3, 2, (2, 3, 2), seed_or_rng=23), 80),
}
#: Games small enough to enumerate every CE modification and CCE deviation (H = S = A_i = 2).
TINY = ["paper", "tiny"]
SEED = 5


@functools.cache
def library_and_literal(name: str, algorithm: str, bonus: float, seed: int = SEED):
    """The library's run with ``seed`` and the literal one fed its numbers (computed once; never
    modified by the tests)."""
    game, K = GAMES[name]
    result = run_vlearning(game, algorithm, K, seed=seed, bonus=bonus)
    ua, us = vlearning_uniforms(seed, K, game)
    return game, result, lv.literal_vlearning(game, algorithm, ua, us, bonus=bonus)


def assert_same_run(result, literal, game, tol=TOL):
    np.testing.assert_array_equal(np.asarray(result.states), literal.states)
    np.testing.assert_array_equal(np.asarray(result.actions), literal.actions)
    np.testing.assert_array_equal(np.asarray(result.counts), literal.counts)
    assert len(result.played) == len(result.value_estimates) == game.num_players
    for i in range(game.num_players):
        np.testing.assert_allclose(np.asarray(result.played[i]), literal.played[i], rtol=0, atol=tol)
        np.testing.assert_allclose(np.asarray(result.value_estimates[i]), literal.value_estimates[i], rtol=0, atol=tol)


# --------------------------------------------------------------------------------------------
# The reference itself
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("H", [1, 2, 3, 5])
def test_smooth_weights_are_binomial_ratios(H):
    # docs/vlearning.md: alpha_t^j = w_j / W_t with w_j = binom(H+j-1, H), so W_n = binom(H+n, H+1).
    for n in range(1, 40):
        weights = lv.smooth_weights(H, n)
        expected = [math.comb(H + j - 1, H) / math.comb(H + n, H + 1) for j in range(1, n + 1)]
        np.testing.assert_allclose(weights, expected, rtol=1e-13, atol=0)
        assert abs(sum(weights) - 1.0) < 1e-13


# Stage lengths H = 2: 2, 3, 4, 6 (visits 1-2, 3-5, 6-9, 10-15); H = 3: 3, 4, 5, 6 (1-3, 4-7, 8-12, 13-18).
STAGE_SUPPORTS = [
    (2, 1, (1, 1)),
    (2, 2, (1, 2)),
    (2, 4, (1, 2)),
    (2, 5, (3, 5)),
    (2, 8, (3, 5)),
    (2, 9, (6, 9)),
    (2, 14, (6, 9)),
    (2, 15, (10, 15)),
    (3, 2, (1, 2)),
    (3, 3, (1, 3)),
    (3, 6, (1, 3)),
    (3, 7, (4, 7)),
    (3, 12, (8, 12)),
    (3, 18, (13, 18)),
]


@pytest.mark.parametrize("H, n, support", STAGE_SUPPORTS)
def test_stage_weights_cover_the_last_complete_stage(H, n, support):
    first, last = support
    expected = [1.0 / (last - first + 1) if first <= pos <= last else 0.0 for pos in range(1, n + 1)]
    assert lv.stage_weights(H, n) == pytest.approx(expected, abs=1e-15)


def test_stationary_distribution():
    rng = np.random.default_rng(0)
    for A in (2, 3, 5):
        q = rng.dirichlet(np.ones(A), size=A)
        pi = lv.stationary(q)
        np.testing.assert_allclose(pi @ q, pi, atol=1e-14)
        assert abs(pi.sum() - 1.0) < 1e-14 and np.all(pi > 0)


def literal_with_numpy_draws(game, algorithm, K, seed, bonus=1.0):
    rng = np.random.default_rng(seed)
    ua = rng.random((K, game.horizon, game.num_players))
    us = rng.random((K, game.horizon))
    return lv.literal_vlearning(game, algorithm, ua, us, bonus=bonus)


@pytest.mark.parametrize("algorithm", lv.ALGORITHMS)
def test_brute_value_against_monte_carlo(algorithm):
    game, _ = GAMES["3p-h3"]
    run = literal_with_numpy_draws(game, algorithm, 60, seed=1, bonus=0.0)
    kind = lv.KERNEL[algorithm]
    exact = lv.brute_value(game, kind, run.states, run.played)
    mean, se = lv.monte_carlo_value(game, kind, run.states, run.played, episodes=3000, seed=2)
    assert np.all(np.abs(exact - mean) < 5 * se), (exact, mean, se)


@pytest.mark.parametrize("name", TINY)
def test_brute_gaps_of_one_episode_are_the_nash_gap_of_uniform_play(name):
    # With K = 1 the index never moves and nobody has visited anything before: every player plays
    # uniformly, a product Markov policy, whose CE, CCE and Nash gaps coincide.
    game, _ = GAMES[name]
    run = literal_with_numpy_draws(game, "cce-v", 10, seed=3)
    uniform = [np.full((game.horizon, game.num_states, A), 1.0 / A) for A in game.num_actions]
    expected = nash_gap(game, uniform).per_player
    for kind in ("smooth", "stage"):
        np.testing.assert_allclose(lv.brute_ce_gap(game, kind, run.states, run.played, K=1), expected, atol=GAP_TOL)
        np.testing.assert_allclose(lv.brute_cce_gap(game, kind, run.states, run.played, K=1), expected, atol=GAP_TOL)


# --------------------------------------------------------------------------------------------
# The library's run
# --------------------------------------------------------------------------------------------


#: (game, bonus) of the runs: bonus 1 (the default; with H = 2 the estimates mostly stay at the
#: clip H - h), 0 (no optimism), and 0.1 with unequal action counts (the bonus's A_i matters).
RUNS = [("paper", 1.0), ("paper", 0.0), ("tiny", 0.0), ("3p-h3", 0.1)]

#: The three-player game's runs compile programs of their own (seconds each, H = 3): by default
#: ``ce-v`` only (its Blum-Mansour rows over unequal action counts), every algorithm in the full
#: mode; the two-player games run every algorithm by default.
THREE_PLAYER_DEFAULT = "ce-v"


def _by_default(algorithm: str, name: str) -> bool:
    return name != "3p-h3" or algorithm == THREE_PLAYER_DEFAULT


@pytest.mark.parametrize(
    "algorithm, name, bonus",
    [
        case(algorithm, name, bonus, default=_by_default(algorithm, name), id=f"{algorithm}-{name}-{bonus}")
        for algorithm in lv.ALGORITHMS
        for name, bonus in RUNS
    ],
)
def test_run_equals_literal(algorithm, name, bonus):
    game, result, literal = library_and_literal(name, algorithm, bonus)
    K = GAMES[name][1]
    assert result.samples_used == K * game.horizon
    assert_same_run(result, literal, game)
    policy = result.policy
    assert isinstance(policy, VisitChainPolicy) and policy.kind == lv.KERNEL[algorithm]
    # The policy's visited rounds and the policies at them are the literal run's.
    K_, H_ = literal.states.shape
    rows, steps = np.arange(K_)[:, None], np.arange(H_)[None, :]
    assert policy.visited.sum() == K_ * H_ and np.all(policy.visited[rows, steps, literal.states])
    for i in range(game.num_players):
        np.testing.assert_allclose(policy.policies[i][rows, steps, literal.states], literal.played[i], rtol=0, atol=TOL)


@pytest.mark.parametrize("algorithm", beyond_default_in_full(lv.ALGORITHMS, {THREE_PLAYER_DEFAULT}))
def test_given_draws_are_the_draws_used(algorithm):
    # Numbers that are not the library's own: the run follows them, and only them.
    game, K = GAMES["3p-h3"]
    rng = np.random.default_rng(99)  # (bonus 0.1: the compiled program of RUNS)
    ua = rng.random((K, game.horizon, game.num_players))
    us = rng.random((K, game.horizon))
    result = run_vlearning(game, algorithm, K, seed=SEED, bonus=0.1, draws=(ua, us))
    assert_same_run(result, lv.literal_vlearning(game, algorithm, ua, us, bonus=0.1), game)
    own = run_vlearning(game, algorithm, K, seed=SEED, bonus=0.1)
    assert not np.array_equal(np.asarray(own.actions), np.asarray(result.actions))


def test_vlearning_uniforms_shapes():
    game, K = GAMES["3p-h3"]
    ua, us = vlearning_uniforms(SEED, K, game)
    assert ua.shape == (K, game.horizon, game.num_players) and us.shape == (K, game.horizon)
    assert ua.dtype == us.dtype == np.float64
    assert np.all((ua >= 0) & (ua < 1)) and np.all((us >= 0) & (us < 1))


# --------------------------------------------------------------------------------------------
# The output policy
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "algorithm, name, bonus",
    [
        case(algorithm, name, bonus, default=_by_default(algorithm, name), id=f"{algorithm}-{name}-{bonus}")
        for algorithm in lv.ALGORITHMS
        for name, bonus in [("paper", 0.0), ("3p-h3", 0.1)]
    ],
)
def test_policy_value_equals_brute(algorithm, name, bonus):
    game, result, literal = library_and_literal(name, algorithm, bonus)
    np.testing.assert_array_equal(np.asarray(result.states), literal.states)
    kind = lv.KERNEL[algorithm]
    K = GAMES[name][1]
    prefixes = [1, 2, 7, K // 2, K - 1, K]
    curves = prefix_curves(game, result.policy, prefixes=prefixes)
    np.testing.assert_array_equal(curves.episodes, prefixes)
    for row, prefix in enumerate(prefixes):
        expected = lv.brute_value(game, kind, literal.states, literal.played, K=prefix)
        policy = result.policy if prefix == K else result.policy.prefix(prefix)
        np.testing.assert_allclose(policy_value(game, policy), expected, rtol=0, atol=TOL, err_msg=f"K'={prefix}")
        np.testing.assert_allclose(curves.value[row], expected, rtol=0, atol=TOL, err_msg=f"curves, K'={prefix}")


@pytest.mark.parametrize("prefix", [5, 17, 30])
@pytest.mark.parametrize("name", TINY)
@pytest.mark.parametrize("algorithm", lv.ALGORITHMS)
def test_exact_gaps_equal_brute_force(algorithm, name, prefix):
    game, result, literal = library_and_literal(name, algorithm, 0.0)
    np.testing.assert_array_equal(np.asarray(result.states), literal.states)
    kind = lv.KERNEL[algorithm]
    policy = result.policy.prefix(prefix)
    value = lv.brute_value(game, kind, literal.states, literal.played, K=prefix)
    ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
    np.testing.assert_allclose(ce.value, value, rtol=0, atol=TOL)
    np.testing.assert_allclose(cce.value, value, rtol=0, atol=TOL)
    brute_ce = lv.brute_ce_gap(game, kind, literal.states, literal.played, K=prefix)
    brute_cce = lv.brute_cce_gap(game, kind, literal.states, literal.played, K=prefix)
    np.testing.assert_allclose(ce.per_player, brute_ce, rtol=0, atol=GAP_TOL)
    np.testing.assert_allclose(cce.per_player, brute_cce, rtol=0, atol=GAP_TOL)
    assert np.all(brute_ce >= -GAP_TOL)
    assert np.all(ce.certified_bound - value >= brute_ce - GAP_TOL), (ce.certified_bound - value, brute_ce)
    assert np.all(cce.certified_bound - value >= brute_cce - GAP_TOL), (cce.certified_bound - value, brute_cce)
    curves = prefix_curves(game, result.policy, prefixes=[prefix])
    np.testing.assert_allclose(curves.value[0], value, rtol=0, atol=TOL)
    assert np.all(curves.certified_ce[0] - value >= brute_ce - GAP_TOL), (curves.certified_ce[0] - value, brute_ce)
    assert np.all(curves.certified_cce[0] - value >= brute_cce - GAP_TOL), (curves.certified_cce[0] - value, brute_cce)


# --------------------------------------------------------------------------------------------
# The comparisons can fail
# --------------------------------------------------------------------------------------------


# (On the three-player game's runs: ``ce-v`` by default, every algorithm in the full mode.)
@pytest.mark.parametrize("algorithm", beyond_default_in_full(lv.ALGORITHMS, {THREE_PLAYER_DEFAULT}))
def test_mutations_are_caught(algorithm):
    game, result, literal = library_and_literal("3p-h3", algorithm, 0.1)
    K = GAMES["3p-h3"][1]
    ua, us = vlearning_uniforms(SEED, K, game)
    # Draws shifted by one episode, or the next-state numbers of the step before.
    for shifted in (
        lv.literal_vlearning(game, algorithm, np.roll(ua, 1, axis=0), us, bonus=0.1),
        lv.literal_vlearning(game, algorithm, ua, np.roll(us, 1, axis=1), bonus=0.1),
    ):
        with pytest.raises(AssertionError):
            assert_same_run(result, shifted, game)
    # Another bonus: the same actions for a while, other estimates.
    with pytest.raises(AssertionError):
        assert_same_run(result, lv.literal_vlearning(game, algorithm, ua, us, bonus=0.2), game)
    # The other kernel gives another value.
    other = {"smooth": "stage", "stage": "smooth"}[lv.KERNEL[algorithm]]
    wrong = lv.brute_value(game, other, literal.states, literal.played)
    assert np.max(np.abs(policy_value(game, result.policy) - wrong)) > 1e-6
