"""Discounted games: the model, its validation, its files, the random and built-in games."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import needs_extra
from markovgames.games import (
    DISCOUNTED_GAMES,
    DiscountedMarkovGame,
    FiniteHorizonOnlyError,
    GameFileError,
    GameValidationError,
    SparseTransitions,
    discounted_normal_form_game,
    game_to_dict,
    get_discounted_builtin,
    load_any_game,
    load_game,
    matching_pennies,
    random_discounted_game,
    random_game,
    resolve_any_game,
    resolve_game,
    save_game,
)


def _game(**kw) -> DiscountedMarkovGame:
    return random_discounted_game(2, 3, (2, 3), 0.9, seed_or_rng=7, **kw)


# ----------------------------------------------------------------------------------- model
def test_random_discounted_game_is_random_game_with_one_step():
    """The same seed draws the same numbers as random_game(N, 1, S, A): its one step, stationary."""
    for kw in ({}, {"zero_sum": True}, {"num_successors": 2}):
        g = random_discounted_game(2, 4, (2, 3), 0.8, seed_or_rng=3, **kw)
        f = random_game(2, 1, 4, (2, 3), seed_or_rng=3, **kw)
        assert np.array_equal(g.rewards, f.rewards[0])
        assert np.array_equal(g.transitions, f.transitions[0])
        assert g.is_sparse == f.is_sparse
        assert g.discount == 0.8 and g.effective_horizon == pytest.approx(5.0)
    assert random_discounted_game(2, 4, 2, 0.8, seed_or_rng=3, zero_sum=True).is_constant_sum
    assert not _game().is_constant_sum


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_discount_accepted_exactly_in_the_half_open_unit_interval(gamma):
    g = _game()
    if 0.0 <= gamma < 1.0:
        assert DiscountedMarkovGame(g.rewards, g.transitions, gamma).discount == gamma
    else:
        with pytest.raises(GameValidationError, match=r"^discount"):
            DiscountedMarkovGame(g.rewards, g.transitions, gamma)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1, r"discount = 1\.0 is not below 1"),
        (1.0, r"discount = 1\.0 is not below 1"),
        (-0.1, r"discount = -0\.1 is negative"),
        (float("nan"), r"discount = nan is not a finite number"),
        ("0.9", r"discount: expected a number in \[0, 1\), got a string \('0\.9'\)"),
        (None, r"discount: expected a number in \[0, 1\), got null"),
        (True, r"discount: expected a number in \[0, 1\), got a boolean \(true\)"),
    ],
)
def test_bad_discounts_are_refused_by_name(value, message):
    g = _game()
    with pytest.raises(GameValidationError, match=message):
        DiscountedMarkovGame(g.rewards, g.transitions, value)


def test_validation_is_shared_with_finite_horizon_games_on_the_stationary_shapes():
    g = _game()
    bad = np.array(g.rewards)
    bad[1, 2, 0, 1] = 1.5
    with pytest.raises(GameValidationError, match=r"rewards\[1, 2, 0, 1\] = 1\.5 is outside \[0, 1\]"):
        DiscountedMarkovGame(bad, g.transitions, 0.5)
    with pytest.raises(GameValidationError, match=r"rewards: expected shape \(N, S, A_0, \.\.\., A_\(N-1\)\) with at least 3"):
        DiscountedMarkovGame(np.zeros((2, 3)), g.transitions, 0.5)
    with pytest.raises(
        GameValidationError, match=r"transitions: expected shape \(S, A_0, \.\.\., A_\(N-1\), S\) = \(3, 2, 3, 3\)"
    ):
        DiscountedMarkovGame(g.rewards, g.transitions[None], 0.5)
    t = np.array(g.transitions)
    t[2, 1, 0] *= 2
    with pytest.raises(GameValidationError, match=r"transitions\[2, 1, 0\] sums to"):
        DiscountedMarkovGame(g.rewards, t, 0.5)
    sparse = g.to_sparse().sparse_transitions
    with pytest.raises(GameValidationError, match=r"transition_successors: expected shape \(S, A_0, \.\.\., A_\(N-1\), K\)"):
        DiscountedMarkovGame(g.rewards, SparseTransitions(sparse.successors[None], sparse.probabilities[None]), 0.5)
    with pytest.raises(GameValidationError, match=r"initial_state = 3 is out of range 0\.\.2"):
        DiscountedMarkovGame(g.rewards, g.transitions, 0.5, 3)
    with pytest.raises(GameValidationError, match=r"initial_distribution sums to"):
        DiscountedMarkovGame(g.rewards, g.transitions, 0.5, initial_distribution=[0.5, 0.5, 0.5])
    with pytest.raises(GameValidationError, match=r"initial_distribution\[1\] = -0\.5 is negative"):
        DiscountedMarkovGame(g.rewards, g.transitions, 0.5, initial_distribution=[1.0, -0.5, 0.5])
    with pytest.raises(GameValidationError, match=r"both given"):
        DiscountedMarkovGame(g.rewards, g.transitions, 0.5, 0, initial_distribution=[1.0, 0.0, 0.0])


def test_immutable_picklable_and_forms_equal():
    g = _game()
    with pytest.raises(AttributeError):
        g.discount = 0.5  # type: ignore[misc]
    with pytest.raises(ValueError):
        g.rewards[0, 0, 0, 0] = 0.5
    assert pickle.loads(pickle.dumps(g)) == g
    assert g.to_sparse() == g and g.to_sparse().to_dense() == g
    assert g.to_sparse().transition_bytes() != g.transition_bytes()
    rho = DiscountedMarkovGame(g.rewards, g.transitions, 0.9, initial_distribution=[0.2, 0.3, 0.5])
    assert rho.initial_state is None and rho != g
    assert np.array_equal(g.initial_distribution, [1.0, 0.0, 0.0])


def test_finite_horizon_only_code_refuses_a_discounted_game():
    from markovgames.evaluation import nash_gap

    g = _game()
    with pytest.raises(FiniteHorizonOnlyError, match=r"horizon: .* is a discounted game \(discount = 0\.9\)"):
        g.horizon  # noqa: B018
    with pytest.raises(FiniteHorizonOnlyError, match=r"game: .* is a discounted game"):
        nash_gap(g, [np.full((1, 3, 2), 0.5), np.full((1, 3, 3), 1 / 3)])
    with pytest.raises(FiniteHorizonOnlyError, match=r"'matching_pennies_discounted' is a built-in discounted game"):
        resolve_game("matching_pennies_discounted")


def test_the_engine_solvers_and_bridges_refuse_a_discounted_game_by_name():
    from markovgames.dynamics import certify, run, run_batch
    from markovgames.solvers import solve_equilibrium

    g = get_discounted_builtin("matching_pennies_discounted")
    # The engine runs a discounted game with a discounted value update only (test_discounted_dynamics.py).
    for call, where in (
        (lambda: run(g, "smooth_ce", 10), "game"),
        (lambda: run_batch(g, "smooth_ce", 10), r"games\[0\]"),
    ):
        with pytest.raises(
            ValueError, match=rf"'smooth' value update .* and {where} 'matching_pennies_discounted' is a discounted game"
        ):
            call()
    with pytest.raises(ValueError, match=r"games\[1\] is a discounted game and games\[0\] a finite-horizon one"):
        run_batch([matching_pennies(), g], "smooth_ce", 10)
    for call, where in (
        (lambda: solve_equilibrium(g, "cce"), "solve_equilibrium"),
        (lambda: certify(g, [np.ones((1, 1, 1, 2)) / 2] * 2, "smooth"), "certify"),
    ):
        with pytest.raises(FiniteHorizonOnlyError, match=rf"^{where}: 'matching_pennies_discounted' is a discounted game"):
            call()


def test_normal_form_bridge_reads_a_one_state_discounted_game():
    needs_extra("normalform", "nashpy")
    from markovgames.bridges.normal_form import nash_equilibria

    ((x, y),) = nash_equilibria(get_discounted_builtin("prisoners_dilemma_discounted"))
    assert np.allclose(x, [0, 1]) and np.allclose(y, [0, 1])  # mutual defection
    with pytest.raises(ValueError, match=r"expected a one-state discounted game, got S = 3"):
        nash_equilibria(random_discounted_game(2, 3, 2, 0.5, seed_or_rng=0))


def test_the_discounted_normal_form_game_reduces_to_the_stage_game():
    mp = matching_pennies()
    g = get_discounted_builtin("matching_pennies_discounted")
    assert np.array_equal(g.rewards, mp.rewards[0]) and g.discount == 0.9 and g.units == mp.units
    assert g.is_constant_sum and g.num_states == 1
    # Units of a discounted return: V01 = scale V + offset / (1 - gamma).
    assert g.original_value(5.0) == pytest.approx(0.0)  # the value of the game, 0 in +1/-1 units
    with pytest.raises(GameValidationError, match=r"payoffs\[0, 1, 1\] = 2\.0 is not in \[0, 1\]"):
        discounted_normal_form_game([[[0, 0], [0, 2]], [[0, 0], [0, 0]]], 0.5)
    for name in DISCOUNTED_GAMES:
        assert get_discounted_builtin(name).name == name


# ----------------------------------------------------------------------------------- files
@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_files_round_trip_every_form(tmp_path, suffix):
    g = _game()
    rho = DiscountedMarkovGame(
        g.rewards,
        g.transitions,
        0.25,
        initial_distribution=[0.125, 0.375, 0.5],
        units=get_discounted_builtin("matching_pennies_discounted").units,
    )
    for k, game in enumerate((g, g.to_sparse(), rho, get_discounted_builtin("prisoners_dilemma_discounted"))):
        path = save_game(game, tmp_path / f"g{k}{suffix}")
        assert load_any_game(path) == game
        assert resolve_any_game(str(path)) == game
        with pytest.raises(GameFileError, match=r"discount: this is a discounted game, and a finite-horizon game"):
            load_game(path)
    # A finite-horizon file still reads with either reader.
    path = save_game(matching_pennies(), tmp_path / f"f{suffix}")
    assert load_any_game(path) == load_game(path) == matching_pennies()


def _write(tmp_path, data) -> str:
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_file_errors_name_the_field(tmp_path):
    base = game_to_dict(_game())
    cases = {
        "discount-one": ({"discount": 1}, r"discount = 1\.0 is not below 1"),
        "discount-negative": ({"discount": -0.5}, r"discount = -0\.5 is negative"),
        "discount-string": ({"discount": "0.9"}, r"discount: expected a number in \[0, 1\), got a string"),
        "horizon-too": ({"horizon": 2}, r"horizon: a discounted game \(the file has 'discount'\) has no horizon"),
        "step-axis": (
            {"rewards": [base["rewards"]]},
            r"rewards: expected 2 entries \(num_players\), got 1",
        ),
        "distribution": ({"initial_distribution": [0.5, 0.5]}, r"both given"),
    }
    for key, (change, message) in cases.items():
        data = {**base, **change}
        with pytest.raises(GameFileError, match=message):
            load_any_game(_write(tmp_path, data))
        del key
    data = dict(base)
    data.pop("initial_state")
    data["initial_distribution"] = [0.5, 0.5]
    with pytest.raises(GameFileError, match=r"initial_distribution: expected 3 entries \(num_states\), got 2"):
        load_any_game(_write(tmp_path, data))
    # Neither 'horizon' nor 'discount': the message names both.
    data = dict(base)
    data.pop("discount")
    with pytest.raises(GameFileError, match=r"missing key\(s\): 'horizon' \(a finite-horizon game; or 'discount'"):
        load_any_game(_write(tmp_path, data))


def test_npz_discount_header_is_checked(tmp_path):
    g = _game()
    path = save_game(g, tmp_path / "g.npz")
    with np.load(path) as archive:
        arrays = dict(archive)
    arrays["discount"] = np.array([0.9, 0.9])
    bad = tmp_path / "bad.npz"
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(GameFileError, match=r"discount: expected a 0-d float array"):
        load_any_game(bad)
    arrays["discount"] = np.array(math.nan)
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(GameFileError, match=r"discount = nan is not a finite number"):
        load_any_game(bad)
