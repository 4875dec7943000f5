"""The compiled engine against the literal reference implementation (tests/reference_impl.py).

Agreement to 1e-12 on small games and small T, for every algorithm, with and without optimism:
the trajectory pi^t (every iteration) and the output policy's value and certified bounds for
several prefixes T' (recomputed offline by the O(T^2) index recursions).
"""

from __future__ import annotations

import numpy as np
import pytest

import reference_impl as ref
from conftest import PAPER_ALGORITHMS, case, make_paper_game, make_random_game
from markovgames.dynamics import run

TOL = 1e-12

CASES = [
    # (seed, N, H, S, A, T); random0 has the paper game's shape and T: its compiled loops.
    (0, 2, 2, 2, (2, 2), 30),
    (1, 2, 3, 2, (3, 2), 20),
    (2, 3, 2, 2, (2, 2, 3), 14),
    (3, 2, 1, 3, (3, 3), 18),
]


def _games():
    yield "paper", make_paper_game(), 30
    for seed, n, h, s, a, t in CASES:
        yield f"random{seed}", make_random_game(seed, n, h, s, a), t


GAMES = list(_games())
ALGORITHMS = ["smooth_ce", "stage_cce", "smooth_cce"]

# By default one case per game (two for random1), so that every game, every algorithm (both value
# updates, both learners, and smooth_cce's branch of the literal reference) and both optimism settings
# are checked: the paper's game and random0 (its shape and T: one compiled loop) with smooth_cce and
# optimism, random1 with smooth_ce without and stage_cce with optimism (the theory test below takes
# them: their compiled loops), random2 (three players) with stage_cce and random3 (one step) with
# smooth_ce, both without optimism. The full mode runs all 30 cases.
DEFAULT_CASES = {
    ("paper", True, "smooth_cce"),
    ("random0", True, "smooth_cce"),
    ("random1", False, "smooth_ce"),
    ("random1", True, "stage_cce"),
    ("random2", False, "stage_cce"),
    ("random3", False, "smooth_ce"),
}
CASES_RUN = [
    case(
        algorithm,
        optimistic,
        name,
        game,
        T,
        default=(name, optimistic, algorithm) in DEFAULT_CASES,
        id=f"{name}-{optimistic}-{algorithm}",
    )
    for name, game, T in GAMES
    for optimistic in (True, False)
    for algorithm in ALGORITHMS
]


@pytest.mark.parametrize("algorithm,optimistic,name,game,T", CASES_RUN)
def test_engine_matches_reference(algorithm, optimistic, name, game, T):
    eta = 0.7
    result = run(game, algorithm, T=T, eta=eta, optimistic=optimistic)
    reference = ref.run_reference(game.rewards, game.transitions, algorithm, eta, T, optimistic=optimistic)
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, reference["policies"][i][1:], rtol=0, atol=TOL)
    for prefix in sorted({1, 2, game.horizon, game.horizon + 1, T // 2, T}):
        offline = ref.metrics_for_prefix(
            game.rewards, game.transitions, game.initial_state, algorithm, reference["policies"], prefix, game.horizon
        )
        row = prefix - 1
        np.testing.assert_allclose(result.value[row], offline["value"], rtol=0, atol=TOL)
        np.testing.assert_allclose(result.certified_cce_bound[row], offline["certified_cce_bound"], rtol=0, atol=TOL)
        np.testing.assert_allclose(result.certified_ce_bound[row], offline["certified_ce_bound"], rtol=0, atol=TOL)


#: Each algorithm's optimism setting in random1's default case (the theory test below takes its shape,
#: T and setting: its compiled loops; the rate is an argument of the loop).
RANDOM1_OPTIMISM = {p.values[0]: p.values[1] for p in CASES_RUN if p.values[2] == "random1" and not p.marks}


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_theory_rates_match_reference(algorithm):
    game = make_random_game(7, *CASES[1][1:5])  # random1's shape and T: two players, 3 and 2 actions
    T = CASES[1][5]
    optimistic = RANDOM1_OPTIMISM.get(algorithm, True)
    result = run(game, algorithm, T=T, eta="theory", optimistic=optimistic)
    reference = ref.run_reference(game.rewards, game.transitions, algorithm, "theory", T, optimistic=optimistic)
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, reference["policies"][i][1:], rtol=0, atol=TOL)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_six_players_match_reference(algorithm):
    # N = 6 with two actions each (64 joint actions): the largest joint space the suite checks.
    game = make_random_game(66, 6, 1, 2, (2,) * 6)
    T = 6
    result = run(game, algorithm, T=T, eta=0.7)
    reference = ref.run_reference(game.rewards, game.transitions, algorithm, 0.7, T)
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, reference["policies"][i][1:], rtol=0, atol=TOL)
    offline = ref.metrics_for_prefix(game.rewards, game.transitions, 0, algorithm, reference["policies"], T, 1)
    np.testing.assert_allclose(result.value[-1], offline["value"], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.certified_ce_bound[-1], offline["certified_ce_bound"], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.certified_cce_bound[-1], offline["certified_cce_bound"], rtol=0, atol=TOL)
