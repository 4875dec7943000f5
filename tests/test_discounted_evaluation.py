"""Exact evaluation in discounted games, against independent routes.

* policy values against the truncated Neumann series ``sum_t gamma^t P_pi^t r_pi``, with the joint
  policy built joint action by joint action (not by the library's contraction);
* best responses (policy iteration, and value iteration within its stated bound) against brute
  force: every deterministic stationary policy of the deviating player, each valued by its own
  linear solve, on games with 2 and 3 players;
* the Shapley value against value iteration written here on the *column* player's LP;
* the duality gap against brute-force max-min over deterministic stationary deviations;
* "reduces to": a one-state game is its stage game, scaled by ``1 / (1 - gamma)``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from markovgames.evaluation import (
    discounted_best_response,
    discounted_duality_gap,
    discounted_nash_gap,
    discounted_policy_value,
)
from markovgames.games import (
    DiscountedMarkovGame,
    get_discounted_builtin,
    paper_game,
    random_discounted_game,
)
from markovgames.solvers import shapley_value


def _random_policy(rng, game: DiscountedMarkovGame) -> list[np.ndarray]:
    return [rng.dirichlet(np.ones(a), size=game.num_states) for a in game.num_actions]


def _literal_bellman(game, policies):
    """r_pi (N, S) and P_pi (S, S), summing over joint actions one by one."""
    n, s_count = game.num_players, game.num_states
    r = np.zeros((n, s_count))
    p = np.zeros((s_count, s_count))
    for s in range(s_count):
        for a in itertools.product(*(range(k) for k in game.num_actions)):
            weight = np.prod([policies[i][s, a[i]] for i in range(n)])
            r[:, s] += weight * game.rewards[(slice(None), s, *a)]
            p[s] += weight * game.transitions[(s, *a)]
    return r, p


def _series_values(game, policies, terms: int) -> np.ndarray:
    r, p = _literal_bellman(game, policies)
    total, power = np.zeros_like(r), np.eye(game.num_states)
    for t in range(terms):
        total += game.discount**t * (power @ r.T).T
        power = power @ p
    return total


GAMES = [
    pytest.param((2, 3, (2, 3), 0.7, 11), id="N2"),
    pytest.param((3, 2, (2, 2, 3), 0.6, 12), id="N3"),
]


@pytest.mark.parametrize("sizes", GAMES)
def test_policy_value_is_the_discounted_series(sizes):
    n, s, a, gamma, seed = sizes
    game = random_discounted_game(n, s, a, gamma, seed_or_rng=seed)
    rng = np.random.default_rng(seed)
    pols = _random_policy(rng, game)
    got = discounted_policy_value(game, pols)
    want = _series_values(game, pols, terms=160)  # gamma^160 < 1e-24
    assert np.max(np.abs(got.state_values - want)) < 1e-12
    assert np.allclose(got.value, want[:, 0], atol=1e-12, rtol=0)
    # An initial distribution averages the states' values.
    rho = np.linspace(1.0, 2.0, s)
    rho /= rho.sum()
    spread = DiscountedMarkovGame(game.rewards, game.transitions, gamma, initial_distribution=rho)
    assert np.allclose(discounted_policy_value(spread, pols).value, want @ rho, atol=1e-12, rtol=0)


def _deterministic_values(game, policies, player):
    """V_i(s) of every deterministic stationary policy of ``player`` against the others: (count, S)."""
    values = []
    for choice in itertools.product(range(game.num_actions[player]), repeat=game.num_states):
        pols = list(policies)
        pols[player] = np.eye(game.num_actions[player])[list(choice)]
        r, p = _literal_bellman(game, pols)
        values.append(np.linalg.solve(np.eye(game.num_states) - game.discount * p, r[player]))
    return np.array(values)


@pytest.mark.parametrize("sizes", GAMES)
def test_best_responses_equal_brute_force(sizes):
    n, s, a, gamma, seed = sizes
    game = random_discounted_game(n, s, a, gamma, seed_or_rng=seed)
    pols = _random_policy(np.random.default_rng(seed + 100), game)
    result = discounted_nash_gap(game, pols)
    vi = discounted_nash_gap(game, pols, method="value_iteration", tolerance=1e-9)
    own = discounted_policy_value(game, pols).state_values
    for i in range(n):
        brute = _deterministic_values(game, pols, i)
        best = brute.max(axis=0)  # an optimal stationary policy is optimal in every state at once
        assert np.max(np.abs(result.best_response_state_values[i] - best)) < 1e-10
        assert np.max(np.abs(vi.best_response_state_values[i] - best)) <= vi.error_bound + 1e-12
        assert vi.error_bound <= 1e-9
        # The returned best response attains it.
        values, response, _ = discounted_best_response(game, pols, i)
        deviated = list(pols)
        deviated[i] = response
        assert np.allclose(discounted_policy_value(game, deviated).state_values[i], best, atol=1e-10, rtol=0)
        assert result.per_player[i] == pytest.approx(best[0] - own[i, 0], abs=1e-10)
    assert result.gap == pytest.approx(max(result.per_player)) and result.gap > 0.0
    assert result.state_gap >= result.gap - 1e-12


def _column_player_value(matrix: np.ndarray) -> float:
    """min_y max_i (M y)_i by the column player's own LP (variables y, w): min w, M y <= w."""
    rows, cols = matrix.shape
    c = np.r_[np.zeros(cols), 1.0]
    a_ub = np.hstack([matrix, -np.ones((rows, 1))])
    a_eq = np.r_[np.ones(cols), 0.0][None]
    res = linprog(c, A_ub=a_ub, b_ub=np.zeros(rows), A_eq=a_eq, b_eq=[1.0], bounds=[(0, None)] * cols + [(None, None)])
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("gamma", [0.0, 0.5])
def test_shapley_value_against_an_independent_lp(gamma):
    game = random_discounted_game(2, 3, (3, 2), gamma, seed_or_rng=21, zero_sum=True)
    solution = shapley_value(game, tolerance=1e-11)
    values = np.zeros(3)
    for _ in range(200):  # 0.5^60 < 1e-18: converged far below the LPs' tolerance
        stage = game.rewards[0] + gamma * game.transitions @ values
        updated = np.array([_column_player_value(stage[s]) for s in range(3)])
        done = np.max(np.abs(updated - values)) < 1e-15
        values = updated
        if done:
            break
    assert np.max(np.abs(solution.state_values[0] - values)) < 1e-8
    assert np.allclose(solution.state_values.sum(axis=0), 1.0 / (1.0 - gamma))  # r_0 + r_1 = 1
    gap = discounted_nash_gap(game, list(solution.policies))
    assert abs(gap.gap) < 1e-7 and abs(gap.duality_gap) < 1e-7
    assert np.allclose(gap.value, solution.value, atol=1e-7, rtol=0)


def test_the_one_state_game_is_its_stage_game():
    game = get_discounted_builtin("matching_pennies_discounted")
    solution = shapley_value(game)
    assert np.allclose(solution.value, [5.0, 5.0], atol=1e-9)  # 0.5 / (1 - 0.9)
    assert np.allclose(solution.policies[0], 0.5, atol=1e-9) and np.allclose(solution.policies[1], 0.5, atol=1e-9)
    x, y = np.array([[0.8, 0.2]]), np.array([[0.3, 0.7]])
    stage = game.rewards[:, 0]  # (2, 2, 2)
    u = np.einsum("iab,a,b->i", stage, x[0], y[0])
    assert np.allclose(discounted_policy_value(game, [x, y]).value, u / 0.1, atol=1e-12, rtol=0)
    gap = discounted_nash_gap(game, [x, y])
    best = [np.max(stage[0] @ y[0]), np.max(x[0] @ stage[1])]
    assert np.allclose(gap.best_response_value, np.array(best) / 0.1, atol=1e-12, rtol=0)


def test_duality_gap_is_max_min_by_brute_force():
    game = random_discounted_game(2, 2, (2, 3), 0.6, seed_or_rng=4, zero_sum=True)
    pols = _random_policy(np.random.default_rng(4), game)
    best0 = _deterministic_values(game, pols, 0)[:, 0].max()
    # min over player 1's deviations of player 0's value = player 1's best response, r_1 = 1 - r_0.
    best1 = _deterministic_values(game, pols, 1)[:, 0].max()
    own = discounted_policy_value(game, pols).value
    assert discounted_duality_gap(game, pols) == pytest.approx(best0 - own[0] + best1 - own[1], abs=1e-10)
    with pytest.raises(ValueError, match=r"two-player constant-sum"):
        discounted_duality_gap(random_discounted_game(2, 2, 2, 0.5, seed_or_rng=1), pols[:1] * 2)


def test_bad_policies_and_games_are_refused():
    game = random_discounted_game(2, 2, (2, 3), 0.6, seed_or_rng=4)
    with pytest.raises(ValueError, match=r"policies\[1\]: expected shape \(S, A_1\) = \(2, 3\)"):
        discounted_policy_value(game, [np.full((2, 2), 0.5), np.full((2, 2), 0.5)])
    with pytest.raises(ValueError, match=r"policies\[0\]\[1\] sums to"):
        discounted_policy_value(game, [np.array([[0.5, 0.5], [0.5, 0.6]]), np.full((2, 3), 1 / 3)])
    with pytest.raises(TypeError, match=r"game must be a DiscountedMarkovGame, got MarkovGame"):
        discounted_policy_value(paper_game(), [np.full((2, 2), 0.5)] * 2)
    with pytest.raises(ValueError, match=r"method: expected one of policy_iteration, value_iteration"):
        discounted_nash_gap(game, [np.full((2, 2), 0.5), np.full((2, 3), 1 / 3)], method="exact")
    with pytest.raises(ValueError, match=r"Shapley value is defined for two-player constant-sum games"):
        shapley_value(game)
