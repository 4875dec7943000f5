"""Tests of the literal learner references themselves (tests/literal_learners.py).

The references are the arbiter for the library's compiled learners, so they are checked here against
what does not depend on them: projections against a constrained solver and a grid, hand-computed
iterates, exact invariances, and the last-iterate facts reported by Cai et al. (ICLR 2025) on their 3x3
game. Fast: no JAX, small games.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

import literal_learners as ll

# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------

#: A 2x2 zero-sum game without a pure saddle point, used for hand-computed iterates (row utility).
A2 = np.array([[3.0, -1.0], [-2.0, 1.0]])
GAME2 = [A2, -A2]


def random_game(seed: int, shape: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, shape) for _ in shape]


def interior_2x2(seed: int):
    """A random 2x2 zero-sum game (row utility A) with a unique, interior equilibrium (x*, y*)."""
    rng = np.random.default_rng(seed)
    while True:
        A = rng.uniform(-1.0, 1.0, (2, 2))
        d = A[0, 0] - A[0, 1] - A[1, 0] + A[1, 1]
        if abs(d) < 0.5:
            continue
        p = (A[1, 1] - A[1, 0]) / d
        q = (A[1, 1] - A[0, 1]) / d
        if 0.1 < p < 0.9 and 0.1 < q < 0.9:
            return A, np.array([p, 1.0 - p]), np.array([q, 1.0 - q])


def solver_projection(y: np.ndarray, r0: float | None) -> np.ndarray:
    """argmin ||z - y||^2 over z >= 0 with sum(z) = 1 (r0 None) or sum(z) >= r0, by SLSQP."""
    n = y.size
    if r0 is None:
        constraint = {"type": "eq", "fun": lambda z: np.sum(z) - 1.0, "jac": lambda z: np.ones(n)}
        start = np.full(n, 1.0 / n)
    else:
        constraint = {"type": "ineq", "fun": lambda z: np.sum(z) - r0, "jac": lambda z: np.ones(n)}
        start = np.full(n, 2.0 * r0 / n)
    result = minimize(
        lambda z: float(np.sum((z - y) ** 2)),
        start,
        jac=lambda z: 2.0 * (z - y),
        method="SLSQP",
        bounds=[(0.0, None)] * n,
        constraints=[constraint],
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert result.success, result.message
    return result.x


def assert_on_simplex(strategies) -> None:
    for s in strategies:
        assert np.all(s >= 0.0)
        np.testing.assert_allclose(s.sum(axis=1), 1.0, atol=1e-12)


# ----------------------------------------------------------------------------------------------
# Projections
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_project_simplex_matches_a_constrained_solver(seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 1.0, 2 + seed % 4)
    p = ll.project_simplex(y)
    assert np.all(p >= 0.0) and abs(p.sum() - 1.0) < 1e-12
    np.testing.assert_allclose(p, solver_projection(y, None), atol=1e-6)


def test_project_simplex_exact_properties():
    point = np.array([0.2, 0.3, 0.5])
    np.testing.assert_array_equal(ll.project_simplex(point), point)  # a simplex point is its own projection
    np.testing.assert_allclose(ll.project_simplex(point + 7.0), point, atol=1e-15)  # invariant to shifts along 1
    np.testing.assert_array_equal(ll.project_simplex(np.array([5.0, 0.0, -1.0])), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(ll.project_simplex(np.array([0.0, 0.0]), z=3.0), [1.5, 1.5])
    np.testing.assert_allclose(ll.project_simplex(np.array([1.0, 0.0, 0.0]), z=3.0), [5 / 3, 2 / 3, 2 / 3])
    with pytest.raises(ValueError):
        ll.project_simplex(point, z=0.0)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("r0", [1.0, 0.3])
def test_project_chopped_cone_matches_a_constrained_solver(seed, r0):
    rng = np.random.default_rng(seed)
    n = 2 + seed % 3
    # Three regimes: [y]^+ already past the cut, [y]^+ short of it, y all negative.
    for y in (rng.uniform(-1.0, 2.0, n) + 0.5 * r0, rng.uniform(-1.0, 0.3 * r0 / n, n), -rng.uniform(0.1, 1.0, n)):
        p = ll.project_chopped_cone(y, r0)
        assert np.all(p >= 0.0) and p.sum() >= r0 - 1e-12
        np.testing.assert_allclose(p, solver_projection(y, r0), atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_project_chopped_cone_variational_inequality(seed):
    """p = Pi_C(y) iff <y - p, q - p> <= 0 for every q in C; checked on many random q in C."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(20):
        n = rng.integers(2, 6)
        y = rng.normal(0.0, 1.0, n)
        p = ll.project_chopped_cone(y, 1.0)
        q = rng.exponential(1.0, (500, n))
        q = q * np.maximum(1.0, rng.uniform(1.0, 3.0, (500, 1)) / q.sum(axis=1, keepdims=True))  # sum(q) >= 1
        assert np.all((q - p) @ (y - p) <= 1e-12)


def test_project_chopped_cone_against_a_grid_in_two_dimensions():
    """Brute force: the nearest point of a fine grid of C to y is within the grid's spacing of Pi_C(y)."""
    h = 0.002
    grid = np.stack(np.meshgrid(np.arange(0.0, 2.5, h), np.arange(0.0, 2.5, h)), axis=-1).reshape(-1, 2)
    grid = grid[grid.sum(axis=1) >= 1.0]
    points = [np.array([0.2, 0.3]), np.array([-0.5, 0.4]), np.array([-1.0, -2.0]), np.array([1.5, -0.3])]
    for y in points + list(np.random.default_rng(7).uniform(-1.0, 2.0, (4, 2))):
        p = ll.project_chopped_cone(y, 1.0)
        nearest = grid[np.argmin(np.sum((grid - y) ** 2, axis=1))]
        assert np.linalg.norm(p - y) <= np.linalg.norm(nearest - y) + 1e-12
        assert np.linalg.norm(nearest - p) <= 2 * h


def test_project_chopped_cone_cases_exactly():
    y = np.array([0.7, -0.2, 0.6])  # [y]^+ has sum 1.3 >= 1: the orthant's projection
    np.testing.assert_array_equal(ll.project_chopped_cone(y, 1.0), [0.7, 0.0, 0.6])
    np.testing.assert_array_equal(ll.project_chopped_cone(np.array([0.5, 0.5]), 1.0), [0.5, 0.5])  # on the cut
    np.testing.assert_array_equal(ll.project_chopped_cone(np.array([-1.0, -2.0, -3.0]), 1.0), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(ll.project_chopped_cone(np.array([0.2, 0.2]), 1.0), [0.5, 0.5])
    with pytest.raises(ValueError):
        ll.project_chopped_cone(y, 0.0)


# ----------------------------------------------------------------------------------------------
# Utilities and measures
# ----------------------------------------------------------------------------------------------


def test_utility_vector_is_the_literal_sum():
    game = random_game(3, (2, 3, 4))
    rng = np.random.default_rng(4)
    profile = [rng.dirichlet(np.ones(n)) for n in (2, 3, 4)]
    for i in range(3):
        expected = np.zeros(game[0].shape[i])
        for a in itertools.product(*(range(n) for n in (2, 3, 4))):
            weight = np.prod([profile[k][a[k]] for k in range(3) if k != i])
            expected[a[i]] += game[i][a] * weight
        np.testing.assert_allclose(ll.utility_vector(game, profile, i), expected, atol=1e-14)


def test_regret_measures_on_a_hand_computed_sequence():
    # Profiles (x^1, y^1) = uniform, (x^2, y^2) = ((1, 0), (0, 1)) in the game [A2, -A2].
    # Player 0: u^1 = A y^1 = (1, -1/2), <u^1, x^1> = 1/4; u^2 = A y^2 = (-1, 1), <u^2, x^2> = -1.
    # Player 1: u^1 = -A^T x^1 = (-1/2, 0), <u^1, y^1> = -1/4; u^2 = -A^T x^2 = (-3, 1), <u^2, y^2> = 1.
    xs = np.array([[0.5, 0.5], [1.0, 0.0]])
    ys = np.array([[0.5, 0.5], [0.0, 1.0]])
    external = ll.external_regret(GAME2, [xs, ys])
    np.testing.assert_allclose(external[0], [0.75, 0.625])  # max(.75, -.75); max(.75, 1.25)/2
    np.testing.assert_allclose(external[1], [0.25, 0.125])  # max(-.25, .25); max(-4.25, .25)/2
    weighted = ll.external_regret(GAME2, [xs, ys], weights=[1.0, 3.0])
    np.testing.assert_allclose(weighted[0], [0.75, 5.25 / 4])  # max(.75, -.75 + 3*2)/4
    np.testing.assert_allclose(weighted[1], [0.25, 0.25 / 4])
    swap = ll.swap_regret(GAME2, [xs, ys])
    np.testing.assert_allclose(swap[0], [0.75, 1.0])  # t=2: a=0 -> 1.25, a=1 -> 0.75, total 2 over 2
    np.testing.assert_allclose(swap[1], [0.25, 0.125])
    np.testing.assert_allclose(ll.duality_gap(A2, xs[0], ys[0]), 1.0)  # max(1, -1/2) - min(1/2, 0)
    np.testing.assert_allclose(ll.duality_gap(A2, [3 / 7, 4 / 7], [2 / 7, 5 / 7]), 0.0, atol=1e-15)  # the equilibrium


@pytest.mark.parametrize("seed", range(3))
def test_swap_regret_dominates_external_regret(seed):
    game = random_game(seed, (3, 4))
    rng = np.random.default_rng(seed)
    strategies = [rng.dirichlet(np.ones(3), 12), rng.dirichlet(np.ones(4), 12)]
    weights = rng.uniform(0.5, 2.0, 12)
    for ext, swp in zip(ll.external_regret(game, strategies, weights), ll.swap_regret(game, strategies, weights), strict=True):
        assert np.all(swp >= np.maximum(ext, 0.0) - 1e-12)


def test_cai_game_equilibrium_has_zero_gap():
    game = ll.cai_3x3_game()
    x_star, y_star = np.array([1 / 12, 1 / 12, 5 / 6]), np.array([1 / 3, 5 / 12, 1 / 4])
    assert ll.duality_gap(game[0], x_star, y_star) < 1e-14
    np.testing.assert_allclose(x_star @ ll.CAI_3X3 @ y_star, 0.25)  # the value of min_x max_y x^T A y


# ----------------------------------------------------------------------------------------------
# RM+ and its variants
# ----------------------------------------------------------------------------------------------


def test_rm_plus_hand_computed_iterates():
    # t=1 uniform; r_x^1 = (3/4, -3/4), r_y^1 = (-1/4, 1/4) -> z_x = (3/4, 0), z_y = (0, 1/4).
    # t=2 (1, 0), (0, 1); r_x^2 = (0, 2), r_y^2 = (-4, 0) -> z_x = (3/4, 2), z_y = (0, 1/4).
    x, y = ll.rm_plus(GAME2, 3)
    np.testing.assert_allclose(x, [[0.5, 0.5], [1.0, 0.0], [3 / 11, 8 / 11]])
    np.testing.assert_allclose(y, [[0.5, 0.5], [0.0, 1.0], [0.0, 1.0]])
    # PRM+: x^3 = g([z_x^2 + r_x^2]^+) = g(3/4, 4); y^2 = g([(0, 1/4) + (-1/4, 1/4)]^+) = (0, 1).
    x, y = ll.rm_plus(GAME2, 3, predictive=True)
    np.testing.assert_allclose(x, [[0.5, 0.5], [1.0, 0.0], [3 / 19, 16 / 19]])
    np.testing.assert_allclose(y, [[0.5, 0.5], [0.0, 1.0], [0.0, 1.0]])


def test_alternating_rm_plus_hand_computed_and_differs_from_simultaneous():
    # Round 2: player 0 as in the simultaneous run (x^3 = (3/11, 8/11)); player 1 sees x^3:
    # u_y = -A^T x^3 = (7/11, -5/11), <u_y, y^2> = -5/11, r_y = (12/11, 0), z_y = (12/11, 2) -> y^3 = (6/17, 11/17).
    x, y = ll.rm_plus(GAME2, 3, alternating=True)
    np.testing.assert_allclose(x, [[0.5, 0.5], [1.0, 0.0], [3 / 11, 8 / 11]])
    np.testing.assert_allclose(y, [[0.5, 0.5], [0.0, 1.0], [6 / 17, 11 / 17]])
    for predictive in (False, True):
        game = random_game(5, (3, 4, 2))
        simultaneous = ll.rm_plus(game, 30, predictive=predictive)
        alternating = ll.rm_plus(game, 30, predictive=predictive, alternating=True)
        np.testing.assert_array_equal(alternating[0][:2], simultaneous[0][:2])  # player 0's first update is the same
        assert not np.allclose(alternating[1], simultaneous[1])
        assert not np.allclose(alternating[2], simultaneous[2])


@pytest.mark.parametrize("predictive", [False, True])
@pytest.mark.parametrize("alternating", [False, True])
def test_rm_plus_from_zero_is_invariant_to_eta(predictive, alternating):
    game = random_game(11, (3, 2, 4))
    reference = ll.rm_plus(game, 40, predictive=predictive, alternating=alternating)
    for eta in (0.25, 2.0, 8.0):  # powers of two: z^t scales exactly
        run = ll.rm_plus(game, 40, predictive=predictive, alternating=alternating, eta=eta)
        for a, b in zip(run, reference, strict=True):
            np.testing.assert_array_equal(a, b)
    z0 = [np.array([1.0, 0.0, 0.5]), np.zeros(2), np.ones(4)]
    started = [ll.rm_plus(game, 40, predictive=predictive, alternating=alternating, eta=eta, z0=z0) for eta in (0.25, 8.0)]
    assert not np.allclose(started[0][0], started[1][0])  # from z0 != 0 the step matters


def test_predictive_false_is_plain_rm_plus_and_sprm_plus_without_the_cut_is_prm_plus():
    game = ll.cai_3x3_game()  # no pure equilibrium: the prediction shows from t = 3 on
    plain = ll.rm_plus(game, 25)
    # RM+ written out once more, independently of the function: x^t = g(z^{t-1}), z^t = [z^{t-1} + r^t]^+.
    z = [np.zeros(3), np.zeros(3)]
    for t in range(25):
        x = [ll.regret_matching(zi) for zi in z]
        for i in range(2):
            np.testing.assert_array_equal(plain[i][t], x[i])
        z = [np.maximum(z[i] + ll.regret_vector(ll.utility_vector(game, x, i), x[i]), 0.0) for i in range(2)]
    predictive = ll.rm_plus(game, 25, predictive=True)
    assert not all(np.allclose(a, b) for a, b in zip(predictive, plain, strict=True))
    # Far from the cut (z0 large, r0 tiny) SPRM+'s projections are the orthant's: it IS PRM+, bitwise.
    z0 = [np.full(3, 5.0), np.full(3, 5.0)]
    sprm = ll.sprm_plus(game, 25, 0.1, z0=z0, r0=1e-300)
    prm = ll.rm_plus(game, 25, predictive=True, eta=0.1, z0=z0)
    for a, b in zip(sprm.played, prm, strict=True):
        np.testing.assert_array_equal(a, b)


def test_every_learner_plays_on_the_simplex():
    game = random_game(13, (3, 2, 4))
    assert_on_simplex(ll.rm_plus(game, 20))
    assert_on_simplex(ll.rm_plus(game, 20, predictive=True, alternating=True))
    assert_on_simplex(ll.hedge(game, 20, lambda t: 1.0 / np.sqrt(t), optimistic=True, alternating=True))
    for run in (ll.extragradient(game, 20, 0.5), ll.exrm_plus(game, 20, 0.1), ll.sprm_plus(game, 20, 0.1)):
        assert_on_simplex(run.played)
        assert_on_simplex(run.base)
        for s in run.base:
            np.testing.assert_allclose(s[0], np.full(s.shape[1], 1.0 / s.shape[1]))  # the default start is uniform


def test_regret_matching_of_a_nonpositive_vector_is_uniform():
    np.testing.assert_array_equal(ll.regret_matching(np.array([0.0, -1.0, -3.0])), [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_array_equal(ll.regret_matching(np.array([0.0, 2.0, -3.0])), [0.0, 1.0, 0.0])


# ----------------------------------------------------------------------------------------------
# ExRM+, SPRM+, extragradient, Hedge
# ----------------------------------------------------------------------------------------------


def test_exrm_plus_first_iteration_by_hand():
    # z^1 = (1/2, 1/2) each; r at uniform: r_x = (3/4, -3/4), r_y = (-1/4, 1/4); eta = 1/2.
    # z^{3/2} = Pi_C((7/8, 1/8)) = (7/8, 1/8), Pi_C((3/8, 5/8)) = (3/8, 5/8): the played point.
    run = ll.exrm_plus(GAME2, 2, 0.5)
    np.testing.assert_allclose(run.played[0][0], [7 / 8, 1 / 8])
    np.testing.assert_allclose(run.played[1][0], [3 / 8, 5 / 8])
    # r at the played point: A y = (3*3/8 - 5/8, -6/8 + 5/8) = (1/2, -1/8); <., x> = 7/16 - 1/64 = 27/64
    # r_x = (5/64, -35/64); z^2_x = Pi_C((1/2 + 5/128, 1/2 - 35/128)) = (69/128, 29/128) -> sum 98/128 < 1:
    # the simplex projection adds 15/128 to each: (84/128, 44/128).
    np.testing.assert_allclose(run.base[0][1], [84 / 128, 44 / 128])


def test_sprm_plus_first_iterations_by_hand():
    # zh^1 = (1/2, 1/2), r^0 = 0: x^1 uniform; zh^2 = Pi_C(zh^1 + eta r^1), x^2 = g(Pi_C(zh^2 + eta r^1)).
    eta = 0.5
    run = ll.sprm_plus(GAME2, 2, eta)
    r_x = np.array([0.75, -0.75])
    zh2 = ll.project_chopped_cone(np.array([0.5, 0.5]) + eta * r_x)  # (7/8, 1/8)
    z2 = ll.project_chopped_cone(zh2 + eta * r_x)  # [(5/4, -1/4)]^+ = (5/4, 0)
    np.testing.assert_allclose(run.played[0][1], z2 / z2.sum())
    np.testing.assert_allclose(run.played[0][1], [1.0, 0.0])
    np.testing.assert_allclose(run.base[0][1], [7 / 8, 1 / 8])


@pytest.mark.parametrize("seed", range(3))
def test_extragradient_converges_in_last_iterate_on_a_2x2_game_with_interior_equilibrium(seed):
    A, x_star, y_star = interior_2x2(seed)
    run = ll.extragradient([A, -A], 1500, 0.3)
    assert ll.duality_gap(A, run.base[0][-1], run.base[1][-1]) < 1e-6
    assert ll.duality_gap(A, run.played[0][-1], run.played[1][-1]) < 1e-6
    np.testing.assert_allclose(run.base[0][-1], x_star, atol=1e-6)
    np.testing.assert_allclose(run.base[1][-1], y_star, atol=1e-6)


def test_extragradient_first_step_by_hand():
    # Uniform start, eta = 1/2: u_x = A y = (1, -1/2) -> Pi((1, 1/4)) = (7/8, 1/8);
    # u_y = -A^T x = (-1/2, 0) -> Pi((1/4, 1/2)) = (3/8, 5/8).
    run = ll.extragradient(GAME2, 1, 0.5)
    np.testing.assert_allclose(run.played[0][0], [7 / 8, 1 / 8])
    np.testing.assert_allclose(run.played[1][0], [3 / 8, 5 / 8])


@pytest.mark.parametrize("optimistic", [False, True])
@pytest.mark.parametrize("alternating", [False, True])
def test_hedge_is_ftrl_with_the_rate_on_the_whole_sum(optimistic, alternating):
    game = random_game(21, (3, 2, 3))
    schedule = lambda t: 0.7 / np.sqrt(t)  # noqa: E731
    T = 12
    strategies = ll.hedge(game, T, schedule, optimistic=optimistic, alternating=alternating)
    n = len(game)
    # Rebuild the utilities each player observed, then check x_i^t ~ exp(eta_t (sum_{j<t} u^j + [opt] u^{t-1})).
    observed = [[] for _ in range(n)]
    for t in range(1, T):
        for i in range(n):
            if alternating:  # earlier players already at their iteration-(t+1) strategies
                others = [strategies[k][t] if k < i else strategies[k][t - 1] for k in range(n)]
            else:
                others = [strategies[k][t - 1] for k in range(n)]
            observed[i].append(ll.utility_vector(game, others, i))
    for i in range(n):
        np.testing.assert_allclose(strategies[i][0], np.full(game[0].shape[i], 1.0 / game[0].shape[i]))
        for t in range(2, T + 1):
            signal = np.sum(observed[i][: t - 1], axis=0) + (observed[i][t - 2] if optimistic else 0.0)
            expected = np.exp(schedule(t) * signal)
            np.testing.assert_allclose(strategies[i][t - 1], expected / expected.sum(), rtol=1e-12, atol=1e-15)


# ----------------------------------------------------------------------------------------------
# Cai et al. (ICLR 2025): last iterates on their 3x3 game
# ----------------------------------------------------------------------------------------------


def gaps(game, strategies) -> np.ndarray:
    return np.array([ll.duality_gap(game[0], strategies[0][t], strategies[1][t]) for t in range(len(strategies[0]))])


@pytest.mark.parametrize("variant", [{}, {"predictive": True}, {"alternating": True}], ids=["RM+", "PRM+", "alternating RM+"])
def test_rm_plus_variants_do_not_converge_in_last_iterate_on_the_cai_game(variant):
    """Cai et al.: RM+, PRM+ and alternating RM+ lack last-iterate convergence on this game. Observed here
    (z0 = 0, T = 2000): the gap keeps oscillating, never below ~0.04 in the last 1000 iterations."""
    game = ll.cai_3x3_game()
    g = gaps(game, ll.rm_plus(game, 2000, **variant))
    assert g[-1000:].min() > 0.03
    assert g[-1000:].max() > 0.2


def test_alternating_prm_plus_is_observed_to_converge_on_the_cai_game():
    """Not a claim of the abstract (which lists RM+, PRM+ and alternating RM+ only); observed here:
    alternating PRM+ from z0 = 0 reaches the equilibrium of this game to rounding."""
    game = ll.cai_3x3_game()
    g = gaps(game, ll.rm_plus(game, 2000, predictive=True, alternating=True))
    assert g[-1] < 1e-9


@pytest.mark.parametrize("learner", [ll.exrm_plus, ll.sprm_plus], ids=["ExRM+", "SPRM+"])
def test_smooth_variants_converge_in_last_iterate_on_the_cai_game(learner):
    """Cai et al.: ExRM+ and SPRM+ converge in last iterate. Observed (eta = 0.1, z0 = (1/3) 1): the
    gap of both sequences falls from ~1.3 to below 1e-6 by T = 1000 (about 1e-8 at t = 500)."""
    game = ll.cai_3x3_game()
    run = learner(game, 1000, 0.1)
    for sequence in (run.played, run.base):
        g = gaps(game, sequence)
        assert g[0] > 0.9
        assert g[-1] < 1e-6
        assert g[-100:].max() < 1e-6
        assert g[499] < g[99] < g[0]
