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

# By default the paper's game takes every algorithm with both optimism settings, and the random
# games smooth_ce and stage_cce (both value updates, both learners of smooth_cce) with one
# optimism setting each, alternating, so that every (game, optimism) and (algorithm, optimism)
# pair is checked, and every game with both value updates and both learners; the full mode runs
# all 30 cases (smooth_cce's composition, hedge+smooth, is checked against the literal reference
# on a random game by default in test_compositions.py).
CASES_RUN = [
    case(
        algorithm,
        optimistic,
        name,
        game,
        T,
        default=g == 0 or ((g + a) % 2 == int(optimistic) and algorithm != "smooth_cce"),
        id=f"{name}-{optimistic}-{algorithm}",
    )
    for g, (name, game, T) in enumerate(GAMES)
    for optimistic in (True, False)
    for a, algorithm in enumerate(ALGORITHMS)
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
