"""Validation of the MarkovGame model: every error names the field and the first bad index."""

from __future__ import annotations

import re

import numpy as np
import pytest

from markovgames.games import PROBABILITY_TOLERANCE, GameValidationError, MarkovGame


def _uniform_game(horizon=2, num_states=2, num_actions=(2, 3)):
    num_players = len(num_actions)
    rewards = np.full((horizon, num_players, num_states, *num_actions), 0.5)
    transitions = np.full((horizon, num_states, *num_actions, num_states), 1.0 / num_states)
    return rewards, transitions


def test_valid_game_sizes_and_repr():
    rewards, transitions = _uniform_game(horizon=3, num_states=4, num_actions=(2, 3))
    game = MarkovGame(rewards, transitions, initial_state=1, name="g")
    assert (game.horizon, game.num_players, game.num_states) == (3, 2, 4)
    assert game.num_actions == (2, 3)
    assert game.num_joint_actions == 6
    assert game.shape_key == (2, 3, 4, (2, 3))
    assert game.initial_state == 1
    assert "N=2" in repr(game) and "S=4" in repr(game)


def test_game_owns_read_only_copies():
    rewards, transitions = _uniform_game()
    game = MarkovGame(rewards, transitions)
    rewards[0, 0, 0, 0, 0] = 0.9  # mutating the caller's array must not change the game
    assert game.rewards[0, 0, 0, 0, 0] == 0.5
    with pytest.raises(ValueError):
        game.rewards[0, 0, 0, 0, 0] = 0.1
    with pytest.raises(ValueError):
        game.transitions[0, 0, 0, 0, 0] = 0.1
    assert game.rewards.dtype == np.float64


def test_boundary_values_accepted():
    rewards, transitions = _uniform_game(num_states=1)
    rewards[0, 0, 0, 0, 0] = 0.0
    rewards[0, 1, 0, 1, 2] = 1.0
    game = MarkovGame(rewards, transitions)
    assert game.rewards.min() == 0.0 and game.rewards.max() == 1.0


def test_equality_and_unhashable():
    rewards, transitions = _uniform_game()
    a = MarkovGame(rewards, transitions, name="x")
    b = MarkovGame(rewards.copy(), transitions.copy(), name="x")
    c = MarkovGame(rewards, transitions, name="y")
    assert a == b
    assert a != c
    with pytest.raises(TypeError):
        hash(a)


def test_rewards_too_few_axes():
    with pytest.raises(GameValidationError, match=r"rewards: expected shape .* at least 4 axes, got shape \(2, 2, 2\)"):
        MarkovGame(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))


def test_player_axis_mismatch():
    rewards = np.zeros((1, 3, 1, 2, 2))  # 3 players but only 2 action axes
    with pytest.raises(GameValidationError, match=r"rewards: axis 1 has 3 players but there are 2 action axes"):
        MarkovGame(rewards, np.ones((1, 1, 2, 2, 1)))


def test_transition_shape_mismatch_names_expected_shape():
    rewards, transitions = _uniform_game(horizon=2, num_states=2, num_actions=(2, 3))
    with pytest.raises(
        GameValidationError,
        match=re.escape("transitions: expected shape (H, S, A_0, ..., A_(N-1), S) = (2, 2, 2, 3, 2), got (2, 2, 3, 2, 2)"),
    ):
        MarkovGame(rewards, np.swapaxes(transitions, 2, 3))


def test_zero_size_axis_refused():
    with pytest.raises(GameValidationError, match=r"num_states S must be at least 1, got 0"):
        MarkovGame(np.zeros((1, 1, 0, 2)), np.zeros((1, 0, 2, 0)))
    with pytest.raises(GameValidationError, match=r"num_actions\[1\] must be at least 1, got 0"):
        MarkovGame(np.zeros((1, 2, 1, 2, 0)), np.zeros((1, 1, 2, 0, 1)))


def test_nan_reward_names_index():
    rewards, transitions = _uniform_game()
    rewards[1, 0, 1, 0, 2] = np.nan
    with pytest.raises(GameValidationError, match=re.escape("rewards[1, 0, 1, 0, 2] = ") + r".*nan.* is not finite"):
        MarkovGame(rewards, transitions)


def test_inf_transition_names_index():
    rewards, transitions = _uniform_game()
    transitions[0, 1, 1, 2, 0] = np.inf
    with pytest.raises(GameValidationError, match=re.escape("transitions[0, 1, 1, 2, 0] = ") + r".*inf.* is not finite"):
        MarkovGame(rewards, transitions)


@pytest.mark.parametrize("value", [1.5, -0.25, 1.0 + 1e-12])
def test_reward_outside_unit_interval(value):
    rewards, transitions = _uniform_game()
    rewards[0, 1, 0, 1, 0] = value
    with pytest.raises(GameValidationError, match=re.escape("rewards[0, 1, 0, 1, 0] = ") + r".* is outside \[0, 1\]"):
        MarkovGame(rewards, transitions)


def test_negative_probability_names_index():
    rewards, transitions = _uniform_game(num_states=2)
    transitions[1, 0, 1, 1] = [-0.5, 1.5]
    with pytest.raises(GameValidationError, match=re.escape("transitions[1, 0, 1, 1, 0] = ") + r".* is negative"):
        MarkovGame(rewards, transitions)


def test_row_not_summing_to_one_names_row():
    rewards, transitions = _uniform_game(num_states=2)
    transitions[1, 1, 0, 2] = [0.5, 0.6]
    with pytest.raises(GameValidationError, match=re.escape("transitions[1, 1, 0, 2] sums to") + r".*not 1"):
        MarkovGame(rewards, transitions)


def test_probability_tolerance():
    rewards, transitions = _uniform_game(num_states=2)
    transitions[0, 0, 0, 0] = [0.5, 0.5 + PROBABILITY_TOLERANCE / 10]
    MarkovGame(rewards, transitions)  # within tolerance: accepted
    transitions[0, 0, 0, 0] = [0.5, 0.5 + 1e-6]
    with pytest.raises(GameValidationError, match=r"transitions\[0, 0, 0, 0\] sums to"):
        MarkovGame(rewards, transitions)


@pytest.mark.parametrize(
    ("initial_state", "pattern"),
    [
        (2, r"initial_state = 2 is out of range 0\.\.1"),
        (-1, r"initial_state = -1 is out of range 0\.\.1"),
        (True, r"initial_state: expected an integer, got True"),
        (0.0, r"initial_state: expected an integer, got 0\.0"),
        ("0", r"initial_state: expected an integer, got '0'"),
    ],
)
def test_bad_initial_state(initial_state, pattern):
    rewards, transitions = _uniform_game(num_states=2)
    with pytest.raises(GameValidationError, match=pattern):
        MarkovGame(rewards, transitions, initial_state=initial_state)


def test_numpy_integer_initial_state_accepted():
    rewards, transitions = _uniform_game(num_states=2)
    game = MarkovGame(rewards, transitions, initial_state=np.int64(1))
    assert game.initial_state == 1 and type(game.initial_state) is int


def test_non_numeric_arrays_refused():
    rewards, transitions = _uniform_game()
    with pytest.raises(GameValidationError, match=r"rewards: expected a numeric array, got dtype"):
        MarkovGame(rewards.astype(str), transitions)
    with pytest.raises(GameValidationError, match=r"transitions: expected a numeric array, got dtype object"):
        MarkovGame(rewards, transitions.astype(object))


def test_max_entries_refused_and_raisable():
    rewards, transitions = _uniform_game(horizon=2, num_states=2, num_actions=(2, 3))
    with pytest.raises(GameValidationError, match=r"rewards: 48 entries exceed the limit of 10"):
        MarkovGame(rewards, transitions, max_entries=10)
    assert MarkovGame(rewards, transitions, max_entries=48).num_states == 2
