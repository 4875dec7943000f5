"""Regret matching follows its rule at exact ties, decided by exact rational arithmetic.

PRM+ plays ``theta / |theta|_1``; a compiler that turns the division into a multiplication by the
reciprocal rounds twice, so a strategy with one positive entry came out as ``[0, 0.9999999999999999]``
about one time in seven. The next regret of the action just played is then ``1e-16`` instead of
``0``, and the learner plays pure where the rule plays uniform: whole runs part ways. These tests
decide every tie with tests/exact_reference.py (the literal algorithms in `fractions.Fraction`,
no rounding anywhere) and compare the engine's runs, every strategy played, against it:

* on games whose payoffs are multiples of 1/4, where ties are the rule, not the exception (each
  fails with the division compiled as a multiplication: checked);
* on the paper's game, whose decimals tie (``0.8 + 0.2 = 0 + 1``) only as decimals: the reference
  reads each number as the decimal it prints as. Its value updates compute two such utilities
  one epsilon apart, and with regrets formed as ``u - <u, x> 1`` PRM+ left the rule there
  (``rm-plus+stage`` played ``(1, 0)`` at ``t = 7`` without optimism and at ``t = 10`` with it, where
  the rule plays ``(1/2, 1/2)``; ``bm-rm-plus+stage`` at ``t = 6`` and ``7``): these cases fail with
  that regret (checked), and pass with `markovgames.learners.regret_vector`'s;
* on random games with Uniform[0, 1] payoffs (no ties but the structural ones), against each
  float's exact binary value.

The first iterations only: the denominators of exact arithmetic grow with ``T``, and over longer
runs float64 parts from it at near-cancellations that are not ties (docs/learners.md).
"""

from __future__ import annotations

from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import case, examples, make_paper_game, make_random_game
from exact_reference import exact_regret_matching_run
from markovgames import MarkovGame
from markovgames.dynamics import Algorithm, run
from markovgames.learners import Learner, LearnerSpec, exact_quotient, predictive_regret_matching_plus, regret_vector


def _quarter_game(seed: int, num_players: int, horizon: int, num_states: int, actions) -> MarkovGame:
    """Rewards in {0, 1/4, ..., 1} and transitions in multiples of 1/4: many exact ties."""
    rng = np.random.default_rng(seed)
    rewards = rng.integers(0, 5, size=(horizon, num_players, num_states, *actions)) / 4
    counts = rng.multinomial(4, np.ones(num_states) / num_states, size=(horizon, num_states, *actions))
    return MarkovGame(rewards, counts / 4, 0, name=f"quarters-{seed}")


# Each game with the longest run its exact arithmetic stays fast at (the denominators grow with T,
# fastest with three players and the smooth update: about a second here, a minute at T = 16), per
# value update where they differ, and whether the reference reads the game's numbers as decimals.
GAMES = {
    "2p-1state": (lambda: _quarter_game(1, 2, 1, 1, (2, 2)), {"smooth": 40, "stage": 40}, False),
    "2p-3x2": (lambda: _quarter_game(2, 2, 2, 2, (3, 2)), {"smooth": 20, "stage": 20}, False),
    "3x3-normal-form": (lambda: _quarter_game(5, 2, 1, 1, (3, 3)), {"smooth": 40, "stage": 40}, False),
    "3p": (lambda: _quarter_game(3, 3, 2, 2, (2, 2, 2)), {"smooth": 10, "stage": 10}, False),
    # Past the stage update's t = 10 (stages start at t = 1, 3, 6, 10): where PRM+ left the rule.
    "paper": (make_paper_game, {"smooth": 12, "stage": 16}, True),
    # The paper game's shapes and lengths (its compiled loops); binary values, Uniform[0, 1] payoffs.
    "random": (lambda: make_random_game(11, 2, 2, 2, (2, 2)), {"smooth": 12, "stage": 16}, False),
}


#: The default cases: one per game, together every learner, every value update and both
#: optimism settings (each game with both of each, and the pairs of them: the full mode). The
#: paper's game keeps rm-plus+stage with optimism (where PRM+ left the rule at t = 10); the random
#: game takes the same case (its compiled loop); 2p-1state runs the stage update on one step.
#: Every case in the full mode.
_DEFAULT_CASES = {
    "2p-1state": ("bm-rm-plus", "stage", True),
    "2p-3x2": ("bm-rm-plus", "stage", False),
    "3x3-normal-form": ("bm-rm-plus", "smooth", True),
    "3p": ("rm-plus", "smooth", False),
    "paper": ("rm-plus", "stage", True),
    "random": ("rm-plus", "stage", True),
}


def _cases():
    out = []
    for game in GAMES:
        for learner in ("rm-plus", "bm-rm-plus"):
            for update in ("smooth", "stage"):
                for optimistic in (True, False):
                    default = (learner, update, optimistic) == _DEFAULT_CASES[game]
                    out.append(
                        case(game, learner, update, optimistic, default=default, id=f"{game}-{learner}+{update}-{optimistic}")
                    )
    return out


def _as_floats(exact_policies) -> np.ndarray:
    return np.array([[[[float(p) for p in x] for x in row] for row in it] for it in exact_policies])


@pytest.mark.parametrize("game,learner,update,optimistic", _cases())
def test_regret_matching_follows_the_exact_rule(game, learner, update, optimistic):
    make, lengths, decimal = GAMES[game]
    g, T = make(), lengths[update]
    result = run(g, f"{learner}+{update}", T=T, eta=0.5, optimistic=optimistic)
    exact = exact_regret_matching_run(g.rewards, g.transitions, learner, update, T, optimistic, decimal=decimal)
    for i, policy in enumerate(result.policies):
        # Rounding only: a tie decided the other way differs by a third or more.
        np.testing.assert_allclose(policy, _as_floats(exact[i]), rtol=0, atol=1e-10)


def test_the_paper_games_ties_are_decimal_ones():
    # Why the reference reads the paper's game as decimals: as binary values 0.8 + 0.2 exceeds
    # 0 + 1 by 5.6e-17, and exact arithmetic on them plays (1, 0) at t = 2, a difference float64
    # cannot even represent in the utilities (0.4 + 0.1 rounds to 0.5). As decimals it is a tie.
    g = make_paper_game()
    binary = exact_regret_matching_run(g.rewards, g.transitions, "rm-plus", "smooth", 2, False)
    decimal = exact_regret_matching_run(g.rewards, g.transitions, "rm-plus", "smooth", 2, False, decimal=True)
    assert _as_floats(binary[0])[1, 0, 0].tolist() == [1.0, 0.0]
    assert _as_floats(decimal[0])[1, 0, 0].tolist() == [0.5, 0.5]
    played = run(g, "rm-plus+smooth", T=2, eta=0.5, optimistic=False).policies[0]
    assert played[1, 0, 0].tolist() == [0.5, 0.5]


def _exact_regret(u, x):
    return [sum((Fraction(xb) * (Fraction(ua) - Fraction(ub)) for ub, xb in zip(u, x, strict=True)), Fraction(0)) for ua in u]


@settings(max_examples=examples(15, 400), deadline=None)
@given(st.integers(2, 20), st.floats(0.01, 4.0), st.integers(0, 2**32 - 1))
def test_regret_vector_is_exact_at_ties_and_signs(n, value, seed):
    # A strategy whose support shares one utility `value` (some of its entries one or two epsilons
    # off: ties that rounding broke), the other utilities from a pool of three values (more ties).
    # Where the rule's regret sum_b x_b (u_a - u_b) is 0 (differences within 16 epsilons of the
    # larger utility taken as ties) the vector is exactly 0; elsewhere it has the rule's sign and is
    # within rounding of it and of u - <u, x> 1. (Normal numbers only: XLA's CPU code flushes
    # subnormal products to zero, a matter apart.)
    rng = np.random.default_rng(seed)
    support = rng.random(n) < 0.5
    support[rng.integers(n)] = True
    u = rng.choice([value, value / 3, value * 1.5], n)
    u[support] = value
    for k in np.flatnonzero(support & (rng.random(n) < 0.4)):
        u[k] = np.nextafter(np.nextafter(u[k], 0.0), 0.0) if rng.random() < 0.5 else np.nextafter(u[k], np.inf)
    x = np.where(support, rng.uniform(1e-3, 1.0, n), 0.0)
    x /= x.sum()
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(regret_vector)(u, x))
    tie = 16 * np.finfo(float).eps
    for a in range(n):
        rule = sum(
            (Fraction(x[b]) * (Fraction(u[a]) - Fraction(u[b])) for b in range(n) if abs(u[a] - u[b]) > tie * max(u[a], u[b])),
            Fraction(0),
        )
        assert (got[a] > 0) == (rule > 0) and (got[a] < 0) == (rule < 0), (a, got[a], rule)
        assert abs(got[a] - float(rule)) <= 64 * np.finfo(float).eps * float(np.abs(u).max())
    assert np.all(got[support] == 0.0)  # the support ties: the rule's regret there is 0
    np.testing.assert_allclose(got, u - u @ x, rtol=0, atol=1e-13 * float(np.abs(u).max()))


def test_regret_vector_on_the_paper_games_tie():
    # The utilities rm-plus+stage saw at t = 6 on the paper game (h = 0, s = 0), equal as decimals:
    # one epsilon apart in float64. The rule's regret at the uniform strategy is 0, both ways.
    u = np.array([1.2001984126984128, 1.2001984126984126])
    with jax.enable_x64(True):
        # Compiled, as the engine runs it (one program for both calls, not one per operation).
        compiled = jax.jit(regret_vector)
        assert np.asarray(compiled(u, np.array([0.5, 0.5]))).tolist() == [0.0, 0.0]
        # Past the tolerance, a difference counts: 1e-12 apart is a regret of 5e-13 each way.
        apart = np.asarray(compiled(u + np.array([1e-12, 0.0]), np.array([0.5, 0.5])))
    assert apart[0] > 0 > apart[1]
    # The old regret, u - <u, x> 1, is not 0 there (what PRM+ then played pure on).
    assert (u - u @ np.array([0.5, 0.5])).tolist() != [0.0, 0.0]


def test_regret_vector_long_action_axes_loop(monkeypatch):
    # More than 16 actions take a loop over b instead of straight-line code: the same numbers, and
    # exact arithmetic's up to rounding (payoffs in quarters: many ties).
    import markovgames._small_axes as small_axes

    rng = np.random.default_rng(3)
    u = rng.integers(0, 4, (5, 40)) / 4
    x = rng.dirichlet(np.ones(40), 5)
    with jax.enable_x64(True):
        looped = np.asarray(jax.jit(regret_vector)(u, x))
        monkeypatch.setattr(small_axes, "_UNROLLED_PAIRS", 64)
        unrolled = np.asarray(jax.jit(regret_vector)(u, x))
    assert np.array_equal(looped, unrolled)
    for row in range(5):
        exact = _exact_regret(u[row], x[row])
        np.testing.assert_allclose(looped[row], [float(r) for r in exact], rtol=0, atol=1e-14)
        assert all((g == 0) == (e == 0) for g, e in zip(looped[row], exact, strict=True))


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


#: Compiled once per shape for every example (a function made in the test would compile per example).
_exact_quotient = jax.jit(exact_quotient)


@settings(max_examples=examples(15, 400), deadline=None)
# Quotients stay normal numbers: XLA's CPU code flushes subnormal results to zero, a matter apart.
@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-100, 1e6)), min_size=2, max_size=6), st.integers(0, 5))
def test_exact_quotient_is_ieee_division(values, zeros):
    numerator = np.array(values)
    numerator[: min(zeros, len(values) - 1)] = 0.0
    total = numerator.sum() or 1.0
    with jax.enable_x64(True):
        got = np.asarray(_exact_quotient(numerator, np.array([total])))
    assert np.array_equal(got, numerator / total)


def test_a_user_written_regret_matching_equals_the_built_in():
    # Regret matching written from docs/learners.md with the public pieces (exact_quotient,
    # regret_vector), as a user would.
    def build(axis: int) -> Learner:
        def init(shape, dtype=jnp.float64):
            return (jnp.zeros(shape, dtype), jnp.full(shape, 1.0 / shape[axis], dtype))

        def play(state, prediction, eta, decay):
            regret, last = state
            theta = jnp.maximum(decay * regret + regret_vector(prediction, last, axis), 0.0)
            total = jnp.sum(theta, axis, keepdims=True)
            x = jnp.where(total > 0, exact_quotient(theta, jnp.where(total > 0, total, 1.0)), 1.0 / theta.shape[axis])
            return x, (regret, x)

        def observe(state, utility, decay):
            regret, last = state
            return (jnp.maximum(decay * regret + regret_vector(utility, last, axis), 0.0), last)

        return Learner(init, play, observe)

    game = _quarter_game(4, 2, 2, 2, (2, 3))
    mine = Algorithm(LearnerSpec("my-rm", build), "smooth")
    a = run(game, mine, T=200, eta=0.5)
    b = run(game, "rm-plus+smooth", T=200, eta=0.5)
    for pa, pb in zip(a.policies, b.policies, strict=True):
        # The two compile differently (rounding at 1e-14); every tie is decided the same way.
        np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-12)
