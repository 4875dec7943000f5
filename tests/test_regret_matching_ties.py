"""Regret matching follows its rule at exact ties, decided by exact rational arithmetic.

PRM+ plays ``theta / |theta|_1``; a compiler that turns the division into a multiplication by the
reciprocal rounds twice, so a strategy with one positive entry came out as ``[0, 0.9999999999999999]``
about one time in seven. The next regret of the action just played is then ``1e-16`` instead of
``0``, and the learner plays pure where the rule plays uniform: whole runs part ways. These tests
decide every tie with tests/exact_reference.py (the literal algorithms in `fractions.Fraction`,
no rounding anywhere) on games whose payoffs are multiples of 1/4, where ties are the rule, not
the exception. Each fails with the division compiled as a multiplication (checked).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import case, examples
from exact_reference import exact_regret_matching_run
from markovgames import MarkovGame
from markovgames.dynamics import Algorithm, run
from markovgames.learners import Learner, LearnerSpec, exact_quotient, predictive_regret_matching_plus


def _quarter_game(seed: int, num_players: int, horizon: int, num_states: int, actions) -> MarkovGame:
    """Rewards in {0, 1/4, ..., 1} and transitions in multiples of 1/4: many exact ties."""
    rng = np.random.default_rng(seed)
    rewards = rng.integers(0, 5, size=(horizon, num_players, num_states, *actions)) / 4
    counts = rng.multinomial(4, np.ones(num_states) / num_states, size=(horizon, num_states, *actions))
    return MarkovGame(rewards, counts / 4, 0, name=f"quarters-{seed}")


# Each game with the longest run its exact arithmetic stays fast at (the denominators grow with T,
# fastest with three players and the smooth update: about a second here, a minute at T = 16).
GAMES = {
    "2p-1state": (lambda: _quarter_game(1, 2, 1, 1, (2, 2)), 40),
    "2p-3x2": (lambda: _quarter_game(2, 2, 2, 2, (3, 2)), 20),
    "3x3-normal-form": (lambda: _quarter_game(5, 2, 1, 1, (3, 3)), 40),
    "3p": (lambda: _quarter_game(3, 3, 2, 2, (2, 2, 2)), 10),
}


def _cases():
    out = []
    for g, game in enumerate(GAMES):
        for k, learner in enumerate(("rm-plus", "bm-rm-plus")):
            for u, update in enumerate(("smooth", "stage")):
                for optimistic in (True, False):
                    default = (g + k + u + int(optimistic)) % 2 == 0
                    out.append(
                        case(game, learner, update, optimistic, default=default, id=f"{game}-{learner}+{update}-{optimistic}")
                    )
    return out


@pytest.mark.parametrize("game,learner,update,optimistic", _cases())
def test_regret_matching_follows_the_exact_rule(game, learner, update, optimistic):
    make, T = GAMES[game]
    g = make()
    result = run(g, f"{learner}+{update}", T=T, eta=0.5, optimistic=optimistic)
    exact = exact_regret_matching_run(g.rewards, g.transitions, learner, update, T, optimistic)
    for i, policy in enumerate(result.policies):
        expected = np.array([[[[float(p) for p in x] for x in row] for row in it] for it in exact[i]])
        # Rounding only: a tie decided the other way differs by a third or more.
        np.testing.assert_allclose(policy, expected, rtol=0, atol=1e-10)


def test_a_single_positive_regret_plays_exactly_pure():
    # theta with one positive entry: the strategy is exactly one-hot, for every magnitude
    # (with the reciprocal, about 15% of these came out as 0.9999999999999999).
    rng = np.random.default_rng(0)
    learner = predictive_regret_matching_plus()
    with jax.enable_x64(True):
        regret = np.zeros((4000, 3))
        regret[np.arange(4000), rng.integers(0, 3, 4000)] = rng.random(4000) * 10.0 ** rng.integers(-6, 6, 4000)
        state = learner.init((4000, 3), jnp.float64)._replace(regret=jnp.asarray(regret))
        play = jax.jit(lambda s, m: learner.play(s, m, 1.0, 1.0)[0])
        strategy = np.asarray(play(state, jnp.zeros((4000, 3))))
    assert np.array_equal(strategy, (regret > 0).astype(float))


@settings(max_examples=examples(40, 400), deadline=None)
# Quotients stay normal numbers: XLA's CPU code flushes subnormal results to zero, a matter apart.
@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-100, 1e6)), min_size=2, max_size=6), st.integers(0, 5))
def test_exact_quotient_is_ieee_division(values, zeros):
    numerator = np.array(values)
    numerator[: min(zeros, len(values) - 1)] = 0.0
    total = numerator.sum() or 1.0
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(lambda x, d: exact_quotient(x, d))(numerator, np.array([total])))
    assert np.array_equal(got, numerator / total)


def test_a_user_written_regret_matching_equals_the_built_in():
    # Regret matching written from docs/learners.md with the public pieces, as a user would.
    def build(axis: int) -> Learner:
        def init(shape, dtype=jnp.float64):
            return (jnp.zeros(shape, dtype), jnp.full(shape, 1.0 / shape[axis], dtype))

        def play(state, prediction, eta, decay):
            regret, last = state
            theta = jnp.maximum(decay * regret + prediction - jnp.sum(prediction * last, axis, keepdims=True), 0.0)
            total = jnp.sum(theta, axis, keepdims=True)
            x = jnp.where(total > 0, exact_quotient(theta, jnp.where(total > 0, total, 1.0)), 1.0 / theta.shape[axis])
            return x, (regret, x)

        def observe(state, utility, decay):
            regret, last = state
            return (jnp.maximum(decay * regret + utility - jnp.sum(utility * last, axis, keepdims=True), 0.0), last)

        return Learner(init, play, observe)

    game = _quarter_game(4, 2, 2, 2, (2, 3))
    mine = Algorithm(LearnerSpec("my-rm", build), "smooth")
    a = run(game, mine, T=200, eta=0.5)
    b = run(game, "rm-plus+smooth", T=200, eta=0.5)
    for pa, pb in zip(a.policies, b.policies, strict=True):
        # The two compile differently (rounding at 1e-14); every tie is decided the same way.
        np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-12)
