"""The NumPy benchmark baseline (benchmarks/numpy_loop.py) computes what the engine computes.

Agreement to 1e-10 of every prefix's value and certified CE/CCE bounds and of the whole
trajectory, for the three algorithms on the paper's game at T=200 (also without optimism) and on
a random three-player game (actions 2, 3, 4: the Newton and GTH paths) at T=50, and with the
per-stage theory learning rate.
This is what makes the benchmark's engine-versus-NumPy ratio a comparison of equal computations.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from numpy_loop import run_numpy  # noqa: E402

from conftest import case, make_paper_game, make_random_game  # noqa: E402
from markovgames.dynamics import run  # noqa: E402

TOL = 1e-10

GAMES = {
    "paper": (make_paper_game(), 200, 0.2),
    "random3": (make_random_game(11, 3, 3, 3, (2, 3, 4)), 50, 0.7),
}
METRICS = ("value", "certified_ce_bound", "certified_cce_bound")


# The non-optimistic baselines on the paper's game only (each case costs an engine compilation).
CASES = [(name, True) for name in GAMES] + [("paper", False)]
#: By default the paper's game with both value updates and both learners, the random
#: three-player game with smooth_ce (Blum-Mansour's log-barrier rows at 2, 3 and 4 actions: the
#: Newton and GTH paths) and the plain run with stage_cce; the other cases (and smooth_cce, Hedge
#: with the smooth update) in the full mode.
NUMPY_DEFAULT = {
    ("paper", True, "smooth_ce"),
    ("paper", True, "stage_cce"),
    ("random3", True, "smooth_ce"),
    ("paper", False, "stage_cce"),
}


@pytest.mark.parametrize(
    "name,optimistic,algorithm",
    [
        case(
            name,
            optimistic,
            algorithm,
            default=(name, optimistic, algorithm) in NUMPY_DEFAULT,
            id=f"{name}-{'opt' if optimistic else 'plain'}-{algorithm}",
        )
        for algorithm in ("smooth_ce", "stage_cce", "smooth_cce")
        for name, optimistic in CASES
    ],
)
def test_numpy_loop_matches_engine(name, optimistic, algorithm):
    game, T, eta = GAMES[name]
    engine = run(game, algorithm, T=T, eta=eta, optimistic=optimistic, record_trajectory=True)
    baseline = run_numpy(game, algorithm, T, eta, optimistic=optimistic)
    for key in METRICS:
        assert baseline[key].shape == (T, game.num_players)
        np.testing.assert_allclose(baseline[key], getattr(engine, key), rtol=0, atol=TOL, err_msg=key)
    for i, pol in enumerate(engine.policies):
        assert baseline["policies"][i].shape == pol.shape
        np.testing.assert_allclose(baseline["policies"][i], pol, rtol=0, atol=TOL, err_msg=f"policy {i}")


def test_numpy_loop_theory_rates_stage():
    # The per-stage rate 1/(N max(1, ln L_tau)^4) (a smooth algorithm's theory rate is a constant).
    algorithm = "stage_cce"
    game = make_random_game(3, 2, 2, 3, (3, 2))
    T = 40
    engine = run(game, algorithm, T=T, eta="theory")
    baseline = run_numpy(game, algorithm, T, "theory")
    for key in METRICS:
        np.testing.assert_allclose(baseline[key], getattr(engine, key), rtol=0, atol=TOL, err_msg=key)
