"""Shared fixtures: small random games built without the library's generators (independent of them)."""

from __future__ import annotations

import numpy as np
import pytest

from markovgames import MarkovGame


def make_random_game(seed: int, num_players: int, horizon: int, num_states: int, num_actions, initial_state=0):
    """A random game: Uniform[0,1] rewards, Dirichlet(1) transition rows (NumPy only)."""
    rng = np.random.default_rng(seed)
    acts = tuple(num_actions)
    rewards = rng.random((horizon, num_players, num_states, *acts))
    transitions = rng.dirichlet(np.ones(num_states), size=(horizon, num_states, *acts))
    return MarkovGame(rewards, transitions, initial_state, name=f"random-{seed}")


def make_paper_game() -> MarkovGame:
    """The paper's game, written out here independently of the library's built-in copy.

    Source: Mao et al. (2024), appendix "Simulation Details", Tables 2 and 3 and the text below them.
    """
    p0 = np.array([[[0.8, 0.2], [0.0, 1.0]], [[1.0, 0.2], [0.5, 0.8]]])  # [s, a, b]
    p1 = np.array([[[0.2, 1.0], [0.5, 0.0]], [[0.5, 1.0], [1.0, 0.2]]])
    rewards = np.zeros((2, 2, 2, 2, 2))
    transitions = np.zeros((2, 2, 2, 2, 2))
    for h in range(2):
        rewards[h, 0], rewards[h, 1] = p0, p1
        for s in range(2):
            for a in range(2):
                for b in range(2):
                    # Matching actions stay w.p. 0.8, opposite actions w.p. 0.2 (written as
                    # literals: 1 - 0.8 is not 0.2 in floating point).
                    stay, move = (0.8, 0.2) if a == b else (0.2, 0.8)
                    transitions[h, s, a, b, s] = stay
                    transitions[h, s, a, b, 1 - s] = move
    return MarkovGame(rewards, transitions, 0, name="paper")


@pytest.fixture
def paper_game() -> MarkovGame:
    return make_paper_game()
