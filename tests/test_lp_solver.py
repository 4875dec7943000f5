"""Exact (C)CE by backward induction and HiGHS LPs: known normal-form values and brute-force checks.

Everything that judges the solver's output here (policy evaluation, deviation values) is written
out in this file with explicit loops, independently of the library.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import OptimizeResult

from conftest import make_paper_game, make_random_game
from markovgames import MarkovGame
from markovgames.policies import MarkovCorrelatedPolicy
from markovgames.solvers import (
    EquilibriumSolution,
    EquilibriumSolverError,
    _lp,
    solve_equilibrium,
    stage_game_incentives,
)

TOL = 1e-7


# ----------------------------------------------------------------------------- independent helpers
def normal_form(*payoffs) -> MarkovGame:
    """A one-shot game (H = 1, S = 1) from one payoff array per player, indexed [a_0, ..., a_{N-1}]."""
    u = np.stack([np.asarray(p, dtype=float) for p in payoffs])
    rewards = u[None, :, None]  # (H=1, N, S=1, A...)
    transitions = np.ones((1, 1, *u.shape[1:], 1))
    return MarkovGame(rewards, transitions, 0)


def evaluate(game: MarkovGame, joint: np.ndarray) -> np.ndarray:
    """V[h, i, s] of a Markov correlated policy by plain backward induction over joint actions."""
    H, N, S = game.horizon, game.num_players, game.num_states
    V = np.zeros((H + 1, N, S))
    for h in reversed(range(H)):
        for s in range(S):
            for a in np.ndindex(*game.num_actions):
                p = joint[(h, s, *a)]
                for i in range(N):
                    cont = game.transitions[(h, s, *a)] @ V[h + 1, i]
                    V[h, i, s] += p * (game.rewards[(h, i, s, *a)] + cont)
    return V


def deviation_values(game: MarkovGame, joint: np.ndarray, i: int, maps) -> np.ndarray:
    """Player i's values V[h, s] when at each (h, s) it replaces its recommended a_i by maps[h][s][a_i].

    A constant map is a deviation that ignores the recommendation (CCE); a general map
    phi: A_i -> A_i is a strategy modification (CE).
    """
    H, S = game.horizon, game.num_states
    V = np.zeros((H + 1, S))
    for h in reversed(range(H)):
        for s in range(S):
            for a in np.ndindex(*game.num_actions):
                p = joint[(h, s, *a)]
                if p == 0.0:
                    continue
                b = list(a)
                b[i] = maps[h][s][a[i]]
                b = tuple(b)
                V[h, s] += p * (game.rewards[(h, i, s, *b)] + game.transitions[(h, s, *b)] @ V[h + 1])
    return V


def all_deviations(game: MarkovGame, i: int, concept: str):
    """Every per-(h, s) deviation of player i: constant maps (CCE) or all maps A_i -> A_i (CE)."""
    n = game.num_actions[i]
    if concept == "cce":
        per_state = [tuple([b] * n) for b in range(n)]
    else:
        per_state = list(itertools.product(range(n), repeat=n))
    cells = game.horizon * game.num_states
    for choice in itertools.product(per_state, repeat=cells):
        yield [[choice[h * game.num_states + s] for s in range(game.num_states)] for h in range(game.horizon)]


# ----------------------------------------------------------------------------- normal-form games
def test_chicken_max_welfare_ce():
    # Game of chicken with the payoffs of Aumann's example as given in Wikipedia, "Correlated
    # equilibrium" (Dare/Chicken: DD = 0,0; DC = 7,2; CD = 2,7; CC = 6,6), scaled by 1/7.
    # By hand: the CE constraints are p_DC >= 2 p_DD, p_CD >= 2 p_DD (told D), p_CC <= 2 p_CD,
    # p_CC <= 2 p_DC (told C). Welfare 9 (p_DC + p_CD) + 12 p_CC is maximised at p_DD = 0,
    # p_CC = 1/2, p_DC = p_CD = 1/4: welfare 10.5, i.e. 5.25 each (the distribution Wikipedia
    # cites, better than the mixed Nash equilibrium's 14/3 each); scaled: 1.5 and 0.75 each.
    u0 = np.array([[0, 7], [2, 6]]) / 7
    sol = solve_equilibrium(normal_form(u0, u0.T), "ce")
    assert isinstance(sol, EquilibriumSolution)
    assert sol.welfare == pytest.approx(1.5, abs=TOL)
    np.testing.assert_allclose(sol.value, [0.75, 0.75], atol=TOL)
    np.testing.assert_allclose(sol.policy.joint[0, 0], [[0, 0.25], [0.25, 0.5]], atol=TOL)
    assert sol.stage_objectives[0, 0] == pytest.approx(1.5, abs=TOL)


def test_battle_of_the_sexes_objectives():
    # Opera/Football: OO = 3,2; FF = 2,3; mismatch 0,0 (scaled by 1/3). Every mixture of OO and FF
    # is a CE, and no CE puts mass off the diagonal at maximum welfare: welfare 5/3; player 0's
    # best CE is OO (1, 2/3); max-min splits evenly: 5/6 each (min <= welfare / 2 = 5/6).
    u0 = np.array([[3, 0], [0, 2]]) / 3
    u1 = np.array([[2, 0], [0, 3]]) / 3
    game = normal_form(u0, u1)
    assert solve_equilibrium(game, "ce", "welfare").welfare == pytest.approx(5 / 3, abs=TOL)
    np.testing.assert_allclose(solve_equilibrium(game, "ce", "player:0").value, [1, 2 / 3], atol=TOL)
    np.testing.assert_allclose(solve_equilibrium(game, "ce", "player:1").value, [2 / 3, 1], atol=TOL)
    mm = solve_equilibrium(game, "ce", "max-min")
    np.testing.assert_allclose(mm.value, [5 / 6, 5 / 6], atol=TOL)
    assert mm.objective == "max-min" and mm.stage_objectives[0, 0] == pytest.approx(5 / 6, abs=TOL)


@pytest.mark.parametrize("concept", ["ce", "cce"])
@pytest.mark.parametrize("objective", ["welfare", "feasibility", "player:0", "player:1", "max-min"])
def test_matching_pennies_unique_equilibrium_is_uniform(concept, objective):
    # +-1 zero-sum matching pennies mapped into [0, 1] by (x + 1) / 2. Its unique CE (and, with two
    # actions each, CCE: see test_two_action_games_ce_equals_cce) is the uniform product, whatever
    # the objective.
    u0 = np.array([[1.0, 0.0], [0.0, 1.0]])
    sol = solve_equilibrium(normal_form(u0, 1 - u0), concept, objective)
    np.testing.assert_allclose(sol.policy.joint[0, 0], np.full((2, 2), 0.25), atol=TOL)
    np.testing.assert_allclose(sol.value, [0.5, 0.5], atol=TOL)


@pytest.mark.parametrize("concept", ["ce", "cce"])
def test_prisoners_dilemma_is_mutual_defection(concept):
    # CC = 3,3; CD = 0,5; DC = 5,0; DD = 1,1 (scaled by 1/5; C = 0, D = 1). D strictly dominates, so
    # the only CE and the only CCE is (D, D): welfare 2/5.
    u0 = np.array([[3, 0], [5, 1]]) / 5
    sol = solve_equilibrium(normal_form(u0, u0.T), concept)
    np.testing.assert_allclose(sol.policy.joint[0, 0], [[0, 0], [0, 1]], atol=TOL)
    assert sol.welfare == pytest.approx(0.4, abs=TOL)


def test_cce_welfare_at_least_ce_welfare_on_normal_form_games():
    # Every CE is a CCE, so the maximum CCE welfare is at least the maximum CE welfare. With three
    # actions the CCE polytope is strictly larger and some games show a strict gap.
    rng = np.random.default_rng(12)
    strict = 0
    for _ in range(20):
        game = normal_form(*rng.random((2, 3, 3)))
        ce = solve_equilibrium(game, "ce").welfare
        cce = solve_equilibrium(game, "cce").welfare
        assert cce >= ce - TOL
        strict += cce > ce + 1e-6
    assert strict > 0


def test_two_action_games_ce_equals_cce():
    # With two own actions the CCE row for b is exactly the CE row (1 - b -> b), so the two
    # concepts give the same maximum welfare (the paper's game is of this kind).
    rng = np.random.default_rng(3)
    for _ in range(5):
        game = normal_form(*rng.random((3, 2, 2, 2)))
        assert solve_equilibrium(game, "cce").welfare == pytest.approx(solve_equilibrium(game, "ce").welfare, abs=TOL)


# ----------------------------------------------------------------------------- random Markov games
RANDOM_CASES = [
    (0, 2, 2, 2, (2, 2)),
    (1, 2, 2, 3, (3, 2)),
    (2, 2, 2, 2, (3, 3)),
    (3, 3, 2, 2, (2, 2, 2)),
    (4, 3, 2, 3, (2, 3, 2)),
    (5, 3, 2, 2, (3, 3, 3)),
]


@pytest.mark.parametrize("seed,n,h,s,a", RANDOM_CASES)
def test_random_markov_games_incentives_and_values(seed, n, h, s, a):
    game = make_random_game(seed, n, h, s, a, initial_state=s - 1)
    sols = {c: solve_equilibrium(game, c) for c in ("ce", "cce")}
    for concept, sol in sols.items():
        assert sol.concept == concept and sol.objective == "welfare"
        assert sol.values.shape == (h + 1, n, s) and sol.stage_objectives.shape == (h, s)
        np.testing.assert_array_equal(sol.values[h], 0.0)
        # Values equal an independent evaluation of the returned policy.
        independent = evaluate(game, sol.policy.joint)
        np.testing.assert_allclose(sol.values, independent, atol=1e-12)
        np.testing.assert_allclose(sol.value, independent[0, :, game.initial_state], atol=1e-12)
        np.testing.assert_allclose(sol.stage_objectives, sol.values[:h].sum(axis=1), atol=1e-12)
        inc = stage_game_incentives(game, sol.policy)
        np.testing.assert_allclose(inc.values, independent, atol=1e-12)
        # Every incentive constraint of the solved concept holds at every (h, s).
        assert inc.max_cce_violation <= TOL
        if concept == "ce":
            # A CE of each stage game is also a CCE of it (checked just above).
            assert inc.max_ce_violation <= TOL
            assert np.all(inc.ce_gain <= TOL)
        assert sol.solver_status.max_incentive_violation <= TOL
        assert sol.solver_status.num_lps == h * s
    # At the last step both LPs face the same stage games (zero continuation), so CE <= CCE holds
    # per state. At earlier steps the stage games differ (different continuation values), and
    # greedy stage-wise welfare need not be ordered: no assertion there.
    assert np.all(sols["cce"].stage_objectives[h - 1] >= sols["ce"].stage_objectives[h - 1] - TOL)


@pytest.mark.parametrize(
    "seed,n,h,s,a",
    [(10, 2, 2, 2, (2, 2)), (11, 2, 2, 1, (3, 2)), (12, 3, 2, 2, (2, 2, 2))],
)
def test_brute_force_no_strategy_modification_improves_ce(seed, n, h, s, a):
    game = make_random_game(seed, n, h, s, a)
    sol = solve_equilibrium(game, "ce")
    joint = sol.policy.joint
    for i in range(n):
        best = np.full(s, -np.inf)
        for maps in all_deviations(game, i, "ce"):
            best = np.maximum(best, deviation_values(game, joint, i, maps)[0])
        # The identity modification is among them, so best >= own value; nothing does better.
        np.testing.assert_allclose(best, sol.values[0, i], atol=TOL)


@pytest.mark.parametrize(
    "seed,n,h,s,a",
    [(20, 2, 2, 3, (3, 2)), (21, 3, 2, 2, (2, 3, 2)), (22, 2, 2, 2, (3, 3))],
)
def test_brute_force_no_markov_deviation_improves_cce(seed, n, h, s, a):
    game = make_random_game(seed, n, h, s, a)
    sol = solve_equilibrium(game, "cce")
    joint = sol.policy.joint
    for i in range(n):
        best = np.full(s, -np.inf)
        for maps in all_deviations(game, i, "cce"):
            best = np.maximum(best, deviation_values(game, joint, i, maps)[0])
        # The other players' play is Markov (fresh draw each step), so deterministic Markov
        # deviations include a best response.
        assert np.all(best <= sol.values[0, i] + TOL)


def test_paper_game():
    game = make_paper_game()
    ce = solve_equilibrium(game, "ce")
    cce = solve_equilibrium(game, "cce")
    # Two actions each: the CE and CCE LPs coincide stage by stage.
    np.testing.assert_allclose(ce.values, cce.values, atol=TOL)
    assert ce.value.shape == (2,)
    assert stage_game_incentives(game, ce.policy).max_ce_violation <= TOL
    np.testing.assert_allclose(ce.values, evaluate(game, ce.policy.joint), atol=1e-12)
    # Regression values. Every stage game of this game has cyclic best responses, hence a unique
    # (C)CE (minimising and maximising each joint-action probability over the stage polytope
    # agree), so these are the game's only backward-induction Markov (C)CE values.
    np.testing.assert_allclose(ce.value, [1.0681818181818, 0.9320099255583], atol=1e-9)
    assert ce.welfare == pytest.approx(2.000191743740131, abs=1e-9)


def test_brute_force_checker_detects_a_non_equilibrium():
    # Guard against a vacuous brute force: the uniform policy of a random game is not an
    # equilibrium, and the enumeration finds improving deviations of both kinds.
    game = make_random_game(10, 2, 2, 2, (2, 2))
    joint = np.full((2, 2, 2, 2), 0.25)
    own = evaluate(game, joint)[0, 0, 0]
    for concept in ("ce", "cce"):
        best = max(deviation_values(game, joint, 0, m)[0, 0] for m in all_deviations(game, 0, concept))
        assert best > own + 0.01


# ----------------------------------------------------------------------------- incentive helper
def test_stage_game_incentives_detects_violations():
    u0 = np.array([[1.0, 0.0], [0.0, 1.0]])
    game = normal_form(u0, 1 - u0)
    joint = np.zeros((1, 1, 2, 2))
    joint[0, 0, 0, 0] = 1.0  # both play 0: player 1 (the mismatcher) gains 1 by playing 1
    inc = stage_game_incentives(game, MarkovCorrelatedPolicy(joint, 2))
    np.testing.assert_allclose(inc.values[0, :, 0], [1.0, 0.0])
    np.testing.assert_allclose(inc.ce_violation[0, :, 0], [0.0, 1.0])
    np.testing.assert_allclose(inc.cce_violation[0, :, 0], [0.0, 1.0])
    np.testing.assert_allclose(inc.ce_gain[0, :, 0], [0.0, 1.0])
    np.testing.assert_allclose(inc.cce_gain[0, :, 0], [0.0, 1.0])
    assert inc.max_ce_violation == pytest.approx(1.0)
    bad = MarkovCorrelatedPolicy(np.full((1, 1, 2, 3), 1 / 6), 2)
    with pytest.raises(ValueError, match="does not match"):
        stage_game_incentives(game, bad)


# ----------------------------------------------------------------------------- errors and guards
def test_bad_concept_and_objective():
    game = make_paper_game()
    with pytest.raises(ValueError, match="concept"):
        solve_equilibrium(game, "nash")
    with pytest.raises(ValueError, match="out of range"):
        solve_equilibrium(game, "ce", "player:2")
    with pytest.raises(ValueError, match="objective"):
        solve_equilibrium(game, "ce", "utility")


def test_size_guard_names_the_size_and_can_be_raised():
    game = normal_form(*np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="9 joint actions"):
        solve_equilibrium(game, "ce", max_joint_actions=8)
    assert solve_equilibrium(game, "ce", max_joint_actions=9).welfare == pytest.approx(0.0)
    # The default limit (10^5): 17 players with two actions each have 131072 joint actions.
    n = 17
    big = MarkovGame(np.zeros((1, n, 1) + (2,) * n), np.ones((1, 1) + (2,) * n + (1,)))
    with pytest.raises(ValueError, match="131072 joint actions"):
        solve_equilibrium(big, "cce")


def test_solver_failure_names_the_stage(monkeypatch):
    game = make_random_game(0, 2, 2, 2, (2, 2))

    def failing(*args, **kwargs):
        return OptimizeResult(status=2, x=None, message="The problem is infeasible.", nit=0)

    monkeypatch.setattr(_lp, "linprog", failing)
    with pytest.raises(EquilibriumSolverError, match=r"h=1, s=0.*infeasible"):
        solve_equilibrium(game, "ce")


def test_violating_solver_output_is_rejected(monkeypatch):
    u0 = np.array([[1.0, 0.0], [0.0, 1.0]])
    game = normal_form(u0, 1 - u0)

    def pure(c, **kwargs):
        x = np.zeros(np.size(c))
        x[0] = 1.0
        return OptimizeResult(status=0, x=x, message="ok", nit=1)

    monkeypatch.setattr(_lp, "linprog", pure)
    with pytest.raises(EquilibriumSolverError, match=r"h=0, s=0.*player 1"):
        solve_equilibrium(game, "ce")
