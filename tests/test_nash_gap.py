"""The exact Nash gap of product Markov policies (markovgames.evaluation.nash_gap), and zero-sum games.

Checked against
* a brute force written here: values by explicit recursion over states and joint actions, and the
  best response as the best of *all* deterministic Markov policies of the player, enumerated;
* Nashpy on normal-form games (H = 1, S = 1): its equilibria have gap 0, and the best-response
  values of any mixed profile are the largest entries of ``A y`` and ``x B``;
* the LP solver on zero-sum games: the marginals of a Markov CCE of a constant-sum game form a
  Markov Nash equilibrium (gap 0) whose value is the game's value;
* "reduces to": a product policy's CCE gap as a Markov correlated policy equals its Nash gap.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import make_random_game, needs_extra
from markovgames.evaluation import NashGapResult, exact_cce_gap, nash_gap, policy_value
from markovgames.games import GameValidationError, random_game
from markovgames.policies import DISTRIBUTION_TOLERANCE, MarkovCorrelatedPolicy
from markovgames.solvers import solve_equilibrium

TOL = 1e-10


def random_product_policy(game, rng, concentration=0.7):
    return [rng.dirichlet(np.full(a, concentration), size=(game.horizon, game.num_states)) for a in game.num_actions]


def brute_value(game, policies) -> np.ndarray:
    """``V^pi_{1,i}(s_1)`` for every player by explicit recursion over states and joint actions."""
    n = game.num_players
    memo: dict[tuple[int, int], np.ndarray] = {}

    def v(h: int, s: int) -> np.ndarray:
        if h == game.horizon:
            return np.zeros(n)
        if (h, s) not in memo:
            total = np.zeros(n)
            for a in itertools.product(*(range(k) for k in game.num_actions)):
                prob = 1.0
                for i in range(n):
                    prob *= policies[i][h, s, a[i]]
                if prob == 0.0:
                    continue
                cont = sum(game.transitions[(h, s, *a, s2)] * v(h + 1, s2) for s2 in range(game.num_states))
                total += prob * (game.rewards[(h, slice(None), s, *a)] + cont)
            memo[(h, s)] = total
        return memo[(h, s)]

    return v(0, game.initial_state)


def brute_best_response(game, policies, player: int) -> float:
    """The best value of ``player`` over all its deterministic Markov policies (enumerated)."""
    cells = game.horizon * game.num_states
    best = -np.inf
    for choice in itertools.product(range(game.num_actions[player]), repeat=cells):
        table = np.array(choice).reshape(game.horizon, game.num_states)
        pols = list(policies)
        pols[player] = np.eye(game.num_actions[player])[table]
        best = max(best, float(brute_value(game, pols)[player]))
    return best


# ----------------------------------------------------------------------------------------------
# Brute force
# ----------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from([(2, 1, 1, (3, 2)), (2, 2, 2, (2, 2)), (2, 2, 3, (2, 3)), (3, 2, 2, (2, 2, 2)), (1, 3, 2, (3,))]),
    concentration=st.sampled_from([0.2, 1.0]),
)
def test_nash_gap_matches_brute_force(seed, shape, concentration):
    n, horizon, num_s, acts = shape
    game = make_random_game(seed % 10_000, n, horizon, num_s, acts, initial_state=seed % num_s)
    policies = random_product_policy(game, np.random.default_rng(seed), concentration)
    res = nash_gap(game, policies)
    assert isinstance(res, NashGapResult)
    np.testing.assert_allclose(res.value, brute_value(game, policies), atol=TOL)
    for i in range(n):
        assert res.best_response_value[i] == pytest.approx(brute_best_response(game, policies, i), abs=TOL)
        # The reported best response attains the best-response value when played against pi_{-i}.
        swapped = list(policies)
        swapped[i] = res.best_responses[i]
        assert brute_value(game, swapped)[i] == pytest.approx(res.best_response_value[i], abs=TOL)
        assert res.best_responses[i].shape == policies[i].shape
        assert set(np.unique(res.best_responses[i])) <= {0.0, 1.0}
    np.testing.assert_allclose(res.per_player, res.best_response_value - res.value, atol=0)
    assert res.gap == pytest.approx(res.per_player.max(), abs=0)
    assert res.per_player[res.player] == res.gap
    assert res.gap >= -TOL


def test_nash_gap_reduces_to_the_cce_gap_of_the_product_as_a_correlated_policy():
    game = make_random_game(3, 3, 3, 2, (2, 3, 2))
    policies = random_product_policy(game, np.random.default_rng(4))
    joint = np.einsum("hsa,hsb,hsc->hsabc", *policies)
    correlated = MarkovCorrelatedPolicy(joint, 3)
    res = nash_gap(game, policies)
    cce = exact_cce_gap(game, correlated)
    np.testing.assert_allclose(res.value, policy_value(game, correlated), atol=TOL)
    np.testing.assert_allclose(res.best_response_value, cce.best_response_value, atol=TOL)
    assert res.gap == pytest.approx(cce.gap, abs=TOL)


def test_pure_equilibrium_of_a_known_game_has_gap_zero_and_a_deviation_has_the_hand_computed_gap():
    # Prisoner's dilemma as a one-shot game: (defect, defect) is the unique Nash equilibrium.
    # Payoffs (row player): C/C 0.75, C/D 0, D/C 1, D/D 0.25; symmetric.
    r0 = np.array([[0.75, 0.0], [1.0, 0.25]])
    from markovgames.games import normal_form_game

    game = normal_form_game([r0, r0.T], name="pd")
    defect = np.array([[[0.0, 1.0]]])
    cooperate = np.array([[[1.0, 0.0]]])
    assert nash_gap(game, [defect, defect]).gap == pytest.approx(0.0, abs=TOL)
    res = nash_gap(game, [cooperate, cooperate])
    # Each player gains 1 - 0.75 by defecting.
    np.testing.assert_allclose(res.per_player, [0.25, 0.25], atol=TOL)
    np.testing.assert_allclose(res.best_responses[0], defect, atol=0)


# ----------------------------------------------------------------------------------------------
# Nashpy (normal-form games)
# ----------------------------------------------------------------------------------------------
def test_nashpy_equilibria_have_gap_zero_and_best_responses_match():
    nash = needs_extra("normalform", "nashpy")
    from markovgames.games import normal_form_game

    rng = np.random.default_rng(7)
    for trial in range(6):
        a_rows, a_cols = int(rng.integers(2, 4)), int(rng.integers(2, 4))
        A, B = rng.random((a_rows, a_cols)), rng.random((a_rows, a_cols))
        game = normal_form_game([A, B], name=f"bimatrix-{trial}")
        for x, y in nash.Game(A, B).support_enumeration():
            res = nash_gap(game, [x[None, None], y[None, None]])
            assert res.gap == pytest.approx(0.0, abs=1e-9)
            np.testing.assert_allclose(res.value, nash.Game(A, B)[x, y], atol=1e-12)
        x, y = rng.dirichlet(np.ones(a_rows)), rng.dirichlet(np.ones(a_cols))
        res = nash_gap(game, [x[None, None], y[None, None]])
        np.testing.assert_allclose(res.value, nash.Game(A, B)[x, y], atol=1e-12)
        np.testing.assert_allclose(res.best_response_value, [np.max(A @ y), np.max(x @ B)], atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Zero-sum games and the LP solver
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed, horizon, num_s, acts", [(0, 2, 2, (2, 2)), (1, 3, 3, (2, 3)), (2, 2, 4, (3, 3))])
def test_marginals_of_an_lp_cce_of_a_zero_sum_game_are_a_nash_equilibrium(seed, horizon, num_s, acts):
    game = random_game(2, horizon, num_s, acts, seed_or_rng=seed, zero_sum=True)
    sol = solve_equilibrium(game, "cce", "welfare")
    joint = sol.policy.joint
    marginals = [joint.sum(axis=3), joint.sum(axis=2)]  # (H, S, A_0), (H, S, A_1)
    res = nash_gap(game, marginals)
    # The LP's incentive constraints hold to 1e-6 per stage; the gap adds them over H steps.
    assert res.gap <= 1e-6 * horizon
    np.testing.assert_allclose(res.value, sol.value, atol=1e-6 * horizon)
    assert res.value.sum() == pytest.approx(horizon, abs=1e-9)  # constant-sum: V_0 + V_1 = H


def test_zero_sum_random_game_is_constant_sum_and_documented():
    game = random_game(2, 3, 4, (2, 3), seed_or_rng=11, zero_sum=True)
    np.testing.assert_array_equal(game.rewards[:, 1], 1.0 - game.rewards[:, 0])
    assert game.rewards.min() >= 0.0 and game.rewards.max() <= 1.0
    assert "zero-sum" in game.name and "r_1 = 1 - r_0" in game.description
    # Player 0's rewards are i.i.d. Uniform[0, 1] (drawn first, as documented).
    expected = np.random.default_rng(11).random((3, 1, 4, 2, 3))
    np.testing.assert_array_equal(game.rewards[:, :1], expected)
    bern = random_game(2, 2, 2, 2, seed_or_rng=1, zero_sum=True, reward_distribution="bernoulli")
    assert set(np.unique(bern.rewards)) <= {0.0, 1.0}
    np.testing.assert_array_equal(bern.rewards[:, 1], 1.0 - bern.rewards[:, 0])
    # Without zero_sum the same seed gives the game it always gave.
    np.testing.assert_array_equal(
        random_game(2, 3, 4, (2, 3), seed_or_rng=11).rewards, np.random.default_rng(11).random((3, 2, 4, 2, 3))
    )


@pytest.mark.parametrize("players", [1, 3])
def test_zero_sum_needs_two_players(players):
    with pytest.raises(GameValidationError, match=f"zero_sum: a zero-sum game has two players, got num_players = {players}"):
        random_game(players, 2, 2, 2, seed_or_rng=0, zero_sum=True)


# ----------------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------------
def test_nash_gap_rejects_bad_policies(paper_game):
    good = [np.full((2, 2, 2), 0.5), np.full((2, 2, 2), 0.5)]
    assert nash_gap(paper_game, good).gap >= 0
    cases = [
        ([good[0]], r"policies: expected 2 arrays \(one per player\), got 1"),
        ([good[0], np.full((2, 2, 3), 1 / 3)], r"policies\[1\]: expected shape \(H, S, A_1\) = \(2, 2, 2\), got \(2, 2, 3\)"),
        ([good[0], np.where(np.arange(8).reshape(2, 2, 2) == 5, np.nan, 0.5)], r"policies\[1\]\[1, 0, 1\] = nan is not finite"),
        ([np.array([[[1.2, -0.2]] * 2] * 2), good[1]], r"policies\[0\]\[0, 0, 1\] = -0.2 is negative"),
        ([np.full((2, 2, 2), 0.6), good[1]], r"policies\[0\]\[0, 0\] sums to 1.2, not 1 \(tolerance 1e-08\)"),
        ([good[0], [["a"]]], r"policies\[1\]: not an array of numbers"),
    ]
    for policies, message in cases:
        with pytest.raises(ValueError, match=message):
            nash_gap(paper_game, policies)
    with pytest.raises(TypeError, match="policies must be a list or tuple"):
        nash_gap(paper_game, np.stack(good))
    with pytest.raises(TypeError, match="game must be a MarkovGame"):
        nash_gap("paper", good)


def test_nash_gap_accepts_round_off_within_the_documented_tolerance(paper_game):
    off = DISTRIBUTION_TOLERANCE / 4
    p = np.full((2, 2, 2), 0.5)
    p[..., 0] += off
    q = np.zeros((2, 2, 2))
    q[..., 0], q[..., 1] = 1.0 + off, -off
    res = nash_gap(paper_game, [p, q])
    exact = nash_gap(paper_game, [np.full((2, 2, 2), 0.5), np.eye(2)[np.zeros((2, 2), dtype=int)]])
    np.testing.assert_allclose(res.value, exact.value, atol=1e-8)


@pytest.mark.parametrize("algorithm", ["smooth_cce", "stage_cce", "smooth_ce"])
def test_zero_sum_output_value_lies_within_its_certified_cce_gaps_of_the_game_value(algorithm):
    """Theory: either player can deviate to a maximin policy, which guarantees it the game's value
    v* (player 0) or H - v* (player 1) whatever the other does. So V_0 >= v* - g_0 and
    V_1 = H - V_0 >= H - v* - g_1, i.e. v* - g_0 <= V_0 <= v* + g_1 for the CCE gaps g_i of the
    output policy, and a fortiori for the certified gaps (which bound them)."""
    from markovgames.dynamics import run

    game = random_game(2, 3, 3, (2, 3), seed_or_rng=5, zero_sum=True)
    v_star = solve_equilibrium(game, "cce", "welfare").value[0]
    result = run(game, algorithm, T=2000, eta=0.2, record_trajectory=False)
    value = result.value  # (T, 2), every prefix
    gaps = result.certified_cce_bound - value
    np.testing.assert_allclose(value.sum(axis=1), game.horizon, atol=1e-9)
    assert np.all(value[:, 0] >= v_star - gaps[:, 0] - 1e-9)
    assert np.all(value[:, 0] <= v_star + gaps[:, 1] + 1e-9)
    # Not vacuous: the gaps shrink, so the interval pins V_0 down as T grows.
    assert gaps[-1].max() < 0.6 * gaps[0].max()
