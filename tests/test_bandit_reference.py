"""Compositions under bandit feedback (``feedback="bandit:M"``) against their literal definition.

``run_vlearning(game, "LEARNER+UPDATE", E, feedback="bandit:M", draws=...)`` equals
`literal_bandit.literal_bandit` (tests/literal_bandit.py, written from docs/vlearning.md) fed the
same uniform numbers (``vlearning_uniforms``): states, actions and visit counts exactly, the
strategies played and the final value estimates to 1e-12. ``hedge`` and ``bm-hedge`` with
``smooth``, ``smooth-linear`` and ``stage``, and ``hedge`` with ``smooth-uniform``; ``M`` of 1 and 3; two players (``H`` of 2 and 3) and
three players with 2 x 3 x 2 actions; bonus 0, 0.1 and 0.5 (at 0.5 nearly every visited value is
clipped at ``H - h``, so 0.1 is the one that exercises the bonus's formula); optimistic and not;
the default rates and implicit exploration (``ix`` decaying as ``(eta H / 2) / sqrt(c)``, given
as the default or by name) and given ``eta`` and constant ``ix`` (0 included); the learning rate
decaying as ``min(eta, M / sqrt(c))`` (the default, and by name) and constant.

Each distinct configuration compiles once (a few seconds): the cases are a covering list, not a
product, and by default a covering subset of it (`FULL_ONLY`). The comparison can fail: a
perturbed draw, and the reference with another ``M``, another bonus or the other optimism, give
other results.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import conftest
import literal_bandit as lb
from conftest import make_random_game
from markovgames.dynamics import run_vlearning, vlearning_uniforms

TOL = 1e-12
SEED = 7

GAMES = {
    "2p-h2": make_random_game(31, 2, 2, 2, (2, 3)),
    "2p-h3": make_random_game(32, 2, 3, 2, (3, 2)),
    "3p-h2": make_random_game(33, 3, 2, 2, (2, 3, 2)),
    "3p-h3": make_random_game(34, 3, 3, 2, (2, 3, 2)),
}

#: (learner, update, M, game, episodes, bonus, optimistic, eta, ix, bandit_rate); None: the defaults.
CASES = [
    ("hedge", "smooth", 1, "2p-h2", 60, 0.0, True, None, None, None),
    ("hedge", "smooth", 3, "3p-h3", 60, 0.5, False, 0.3, 0.1, None),
    ("hedge", "smooth-linear", 3, "2p-h3", 60, 0.1, True, None, 0.0, None),
    ("hedge", "smooth-linear", 1, "3p-h2", 40, 0.0, False, None, None, None),
    ("hedge", "stage", 3, "2p-h3", 90, 0.0, True, None, None, None),
    ("hedge", "stage", 1, "3p-h3", 60, 0.1, False, 0.3, None, "decaying"),
    ("bm-hedge", "smooth", 3, "3p-h3", 60, 0.1, True, None, None, None),
    ("bm-hedge", "smooth", 1, "2p-h3", 40, 0.5, False, None, 0.0, None),
    ("bm-hedge", "smooth-linear", 1, "2p-h2", 40, 0.1, True, 0.3, None, None),
    ("bm-hedge", "smooth-linear", 3, "3p-h2", 60, 0.0, False, None, 0.1, None),
    ("bm-hedge", "stage", 3, "3p-h3", 60, 0.5, True, None, None, None),
    ("bm-hedge", "stage", 1, "2p-h2", 60, 0.1, False, None, None, None),
    ("hedge", "smooth", 1, "2p-h2", 60, 0.1, True, 0.3, "decaying", "constant"),
    ("hedge", "smooth-uniform", 3, "2p-h2", 60, 0.1, True, None, None, None),
]


#: The cases run only in the full mode (CONTRIBUTING.md, "Tests"). A compiled round is one program
#: per learner, update, M, optimism and game shape (2-4 s each; E, the bonus, eta and ix are its
#: arguments): the four default cases compile three, the last case sharing the first one's. They
#: still cover both learners, every update (hedge with smooth, bm-hedge with smooth-linear and
#: stage), M of 1 and 3, two and three players, H of 2 and 3, each bonus (0.1 and 0.5; the bonus
#: is an argument of every update's round), both optimism settings, the default and a given eta,
#: ix by default, by name ("decaying") and constant (0.1), and the rate decaying by default and
#: constant; the full mode adds the other learner-update pairs (hedge with stage among them: the
#: stage-based round runs with bm-hedge by default, hedge with the smooth rounds), smooth-uniform (its
#: decay at a state's first visit; `test_the_effective_step_falls_like_the_rate` checks it by
#: default), 2p-h3, ix = 0 and the rate "decaying" by name.
FULL_ONLY = {1, 2, 3, 4, 5, 6, 7, 8, 11, 13}
#: (Every default case plays 60 episodes: `vlearning_uniforms` compiles once per E, H and N.)


def case_id(case) -> str:
    learner, update, M, name, E, bonus, optimistic, eta, ix, bandit_rate = case
    rule = "" if bandit_rate is None else f"-{bandit_rate}"
    return f"{learner}+{update}-M{M}-{name}-E{E}-b{bonus}-{'opt' if optimistic else 'plain'}-eta{eta}{rule}-ix{ix}"


def library(case, draws=None, seed=None):
    learner, update, M, name, E, bonus, optimistic, eta, ix, bandit_rate = case
    kwargs = {"draws": draws} if seed is None else {"seed": seed}
    return run_vlearning(
        GAMES[name],
        f"{learner}+{update}",
        E,
        feedback=f"bandit:{M}",
        bonus=bonus,
        eta=eta,
        bandit_rate=bandit_rate,
        ix=ix,
        optimistic=optimistic,
        **kwargs,
    )


def literal(case, draws, **changes):
    learner, update, M, name, E, bonus, optimistic, eta, ix, bandit_rate = case
    settings = {"M": M, "bonus": bonus, "optimistic": optimistic, "eta": 0.2 if eta is None else eta, "ix": ix}
    settings["bandit_rate"] = "decaying" if bandit_rate is None else bandit_rate
    settings.update(changes)
    ua, us = draws
    return lb.literal_bandit(GAMES[name], learner, update, action_uniforms=ua, state_uniforms=us, **settings)


def assert_same_run(result, ref, game, tol=TOL):
    np.testing.assert_array_equal(np.asarray(result.states), ref.states)
    np.testing.assert_array_equal(np.asarray(result.actions), ref.actions)
    np.testing.assert_array_equal(np.asarray(result.counts), ref.counts)
    assert len(result.played) == len(result.value_estimates) == game.num_players
    for i in range(game.num_players):
        np.testing.assert_allclose(np.asarray(result.played[i]), ref.played[i], rtol=0, atol=tol)
        np.testing.assert_allclose(np.asarray(result.value_estimates[i]), ref.value_estimates[i], rtol=0, atol=tol)


def max_difference(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b, strict=True))


# --------------------------------------------------------------------------------------------
# The reference itself
# --------------------------------------------------------------------------------------------


def test_stationary_distribution():
    rng = np.random.default_rng(0)
    for A in (2, 3, 4):
        q = rng.dirichlet(np.ones(A), size=A)
        pi = lb.stationary(q)
        np.testing.assert_allclose(pi @ q, pi, rtol=0, atol=1e-14)
        assert abs(pi.sum() - 1.0) < 1e-14 and np.all(pi > 0)


# --------------------------------------------------------------------------------------------
# The library against the reference
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [conftest.case(c, default=k not in FULL_ONLY, id=case_id(c)) for k, c in enumerate(CASES)])
def test_run_equals_literal(case):
    learner, update, M, name, E, bonus, optimistic, eta, ix, bandit_rate = case
    game = GAMES[name]
    draws = vlearning_uniforms(SEED, E, game)
    result = library(case, draws=draws)
    ref = literal(case, draws)
    assert_same_run(result, ref, game)
    # The learners do not move inside a round: one strategy per (round, h, s), in the library's output.
    states = np.asarray(result.states)
    for r in range(E // M):
        for h in range(game.horizon):
            for e in range(r * M + 1, (r + 1) * M):
                for f in range(r * M, e):
                    if states[e, h] == states[f, h]:
                        for i in range(game.num_players):
                            np.testing.assert_array_equal(result.played[i][e, h], result.played[i][f, h])
    if update == "stage":  # at least two stages end somewhere: restarts and stage values are exercised
        H = game.horizon
        assert np.max(ref.counts) >= H + ((H + 1) * H) // H, ref.counts


def test_the_seed_draws_vlearning_uniforms():
    case = CASES[0]
    game = GAMES[case[3]]
    own = library(case, seed=SEED)
    given = library(case, draws=vlearning_uniforms(SEED, case[4], game))
    np.testing.assert_array_equal(np.asarray(own.states), np.asarray(given.states))
    np.testing.assert_array_equal(np.asarray(own.actions), np.asarray(given.actions))
    for i in range(game.num_players):
        np.testing.assert_array_equal(np.asarray(own.played[i]), np.asarray(given.played[i]))


def test_the_comparison_can_fail():
    case = CASES[10]  # bm-hedge+stage, M = 3, three players, bonus 0.5, optimistic (a default case's program)
    game = GAMES[case[3]]
    M, E = case[2], case[4]
    ua, us = vlearning_uniforms(SEED, E, game)
    result = library(case, draws=(ua, us))
    ref = literal(case, (ua, us))
    assert_same_run(result, ref, game)

    # One perturbed draw: player 0's first action (uniform play) flips; the library follows the
    # perturbed numbers, and no longer matches the reference fed the original ones.
    ua2 = ua.copy()
    ua2[0, 0, 0] = 0.25 if ua[0, 0, 0] >= 0.5 else 0.75
    perturbed = library(case, draws=(ua2, us))
    assert_same_run(perturbed, literal(case, (ua2, us)), game)
    assert not np.array_equal(np.asarray(perturbed.actions), ref.actions)
    with pytest.raises(AssertionError):
        assert_same_run(perturbed, ref, game)

    # The reference with another round length, bonus, optimism or implicit exploration (the
    # default decays: a constant at its first value, eta H / 2, is another run) is another run.
    assert case[8] is None
    for changes in ({"M": 1}, {"bonus": 0.2}, {"optimistic": False}, {"ix": 0.2 * game.horizon / 2}):
        other = literal(case, (ua, us), **changes)
        assert max_difference(result.played, other.played) > 1e-6, changes
    assert M == 3


def test_the_decaying_rate_is_another_run_than_the_constant():
    """With ``M = 1`` the default rate ``min(eta, 1/sqrt(c))`` falls below ``eta = 0.2`` from a
    state's 26th visiting round: the run with the constant rate is another one (the first case's
    program; every episode visits the initial state, 60 rounds)."""
    case = CASES[0]
    assert case[2] == 1 and case[7] is None and case[9] is None and case[4] > 25
    game = GAMES[case[3]]
    draws = vlearning_uniforms(SEED, case[4], game)
    result = library(case, draws=draws)
    assert_same_run(result, literal(case, draws), game)
    constant = literal(case, draws, bandit_rate="constant")
    assert max_difference(result.played, constant.played) > 1e-6
    # ... and identical up to the round where the rates part (the 26th visit of the initial state).
    for i in range(game.num_players):
        np.testing.assert_allclose(np.asarray(result.played[i])[:25, 0], constant.played[i][:25, 0], rtol=0, atol=TOL)


#: The property tests draw 10 examples by default (200 in the full mode) beside their explicit ones,
#: which run in both modes: each update and each schedule, the cap and the fall (c beyond (M / eta)^2).
@settings(max_examples=conftest.examples(10, 200), deadline=None)
@example(per_round=2, eta=0.5, visits=[1, 16, 17, 10**7], stage=False)
@example(per_round=1, eta=0.05, visits=[3, 400, 401, 2500], stage=True)
@given(
    per_round=st.integers(1, 64),
    eta=st.floats(1e-3, 5.0),
    visits=st.lists(st.integers(1, 10**7), min_size=1, max_size=8),
    stage=st.booleans(),
)
def test_the_decaying_rate_is_the_cap_then_falls_like_one_over_sqrt_c(per_round, eta, visits, stage):
    """``eta_c = min(eta, M / sqrt(c))`` (`_vlearning._rates`, whatever the update): the constant
    ``eta`` while ``c <= (M / eta)^2``, then ``M / sqrt(c)``; non-increasing in ``c``; the constant
    schedule is ``eta`` at every ``c``. (The IX scale and the update's decay do not depend on it.)"""
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics import _vlearning as vl

    game = GAMES["2p-h2"]
    algorithm = "hedge+stage" if stage else "hedge+smooth"
    c = np.array(sorted(set(visits)), dtype=np.int32)
    # Padded to the strategy's longest list with its last count: one shape for every example, so
    # that the operations compile once, not once per length (the padding is cut off again).
    padded = np.concatenate([c, np.full(8 - c.size, c[-1], dtype=np.int32)])
    out = {}
    for rule in ("decaying", "constant"):
        spec, numbers, _ = vl._make_spec(game, algorithm, per_round, f"bandit:{per_round}", None, eta, None, None, rule)
        with jax.enable_x64(True):  # as the runs compute it
            rate, decay, gamma = vl._rates(spec, numbers.params(), jnp.asarray(padded), 2, jnp.asarray(3))
        out[rule] = tuple(np.asarray(x)[: c.size] for x in (rate, decay, gamma))
    rate = out["decaying"][0]
    np.testing.assert_allclose(rate, np.minimum(eta, per_round / np.sqrt(c)), rtol=1e-15, atol=0)
    assert np.all(np.diff(rate) <= 0) and np.all(rate <= eta)
    assert np.all(rate[c <= (per_round / eta) ** 2 * (1 - 1e-12)] == eta)
    assert np.all(out["constant"][0] == eta)
    for k in (1, 2):
        np.testing.assert_array_equal(out["decaying"][k], out["constant"][k])


#: The averaging order ``k`` of each smooth update (``alpha_c = (k+1)/(k+c)``; docs/vlearning.md).
SMOOTH_ORDER = {"smooth": "H", "smooth-linear": 1, "smooth-uniform": 0}
MAX_ROUNDS = 600


@settings(max_examples=conftest.examples(10, 200), deadline=None)
@example(per_round=1, eta=0.5, update="smooth", rule="decaying", rounds=40)
@example(per_round=3, eta=2.0, update="smooth-linear", rule="constant", rounds=12)
@example(per_round=2, eta=0.3, update="smooth-uniform", rule="decaying", rounds=120)
@example(per_round=8, eta=0.02, update="stage", rule="constant", rounds=2)
@example(per_round=1, eta=0.1, update="stage", rule="decaying", rounds=300)
@given(
    per_round=st.integers(1, 8),
    eta=st.floats(0.02, 5.0),
    update=st.sampled_from(("smooth", "smooth-linear", "smooth-uniform", "stage")),
    rule=st.sampled_from(("decaying", "constant")),
    rounds=st.integers(2, MAX_ROUNDS),
)
def test_the_effective_step_falls_like_the_rate(per_round, eta, update, rule, rounds):
    """The step that the learner protocol takes on the loss estimates, from `_vlearning._rates`'s
    ``(eta_c, rho_c)`` and the recursion of docs/vlearning.md ("The learning rate's schedule"):
    the ``c``-th visiting round plays ``softmax(eta_c (rho_c G_{c-1} + m_c))`` and observes
    ``G_c = rho_c G_{c-1} + u_c``, so the logits weigh ``u_j`` (``j < c``) by
    ``s_{c,j} = eta_c rho_c rho_{c-1} ... rho_{j+1} = eta_c w_j / w_c``.

    * every ``s_{c,j}`` is finite, and non-increasing in ``c`` (a past estimate never weighs more);
    * with equal estimates ``u_j = u`` the logits are ``E_c (c - 1) u``: the step on the sum of the
      estimates is ``E_c = eta_c / (k + 1)`` for a smooth update of order ``k`` and ``eta_c`` for the
      stage update (within a stage: it restarts the learner), so it falls like ``eta_c``, like
      ``1/sqrt(c)`` once ``c > (M / eta)^2`` under the decaying rate, and stays under the constant.
    """
    import jax
    import jax.numpy as jnp

    from markovgames.dynamics import _vlearning as vl

    game = GAMES["2p-h2"]
    H = game.horizon
    spec, numbers, _ = vl._make_spec(game, f"hedge+{update}", per_round, f"bandit:{per_round}", None, eta, None, None, rule)
    c = np.arange(1, rounds + 1)
    with jax.enable_x64(True):  # as the runs compute it (of one shape for every example: compiled once)
        every = jnp.arange(1, MAX_ROUNDS + 1, dtype=jnp.int32)
        rate, decay, _ = (np.asarray(x)[:rounds] for x in vl._rates(spec, numbers.params(), every, 2, jnp.asarray(H)))
    steps = np.zeros((rounds, rounds))  # steps[c-1, j-1] = s_{c,j}
    G = np.zeros(rounds)  # G as a combination of the unit estimates u_j = e_j
    for n in range(rounds):
        steps[n] = rate[n] * decay[n] * G
        G = decay[n] * G
        G[n] += 1.0
    assert np.all(np.isfinite(steps)), (update, np.flatnonzero(~np.isfinite(steps).all(axis=1))[:3])
    earlier = np.arange(rounds)[None, :] < np.arange(1, rounds - 1)[:, None]  # row c = 2..: the estimates j < c
    assert np.all((steps[2:] <= steps[1:-1] * (1 + 1e-12)) | ~earlier), update
    k = 0 if update == "stage" else (H if SMOOTH_ORDER[update] == "H" else SMOOTH_ORDER[update])
    effective = steps[1:].sum(axis=1) / c[:-1]  # E_c for c = 2..rounds (c - 1 earlier estimates)
    expected = (rate if update == "stage" else rate / (k + 1))[1:]
    np.testing.assert_allclose(effective, expected, rtol=1e-12, atol=0)
    assert np.all(np.diff(effective) <= effective[:-1] * 1e-12)
    late = c[1:] > (per_round / eta) ** 2
    if rule == "decaying":
        np.testing.assert_allclose(effective[late] * np.sqrt(c[1:][late]), per_round / (k + 1), rtol=1e-12)
    else:
        np.testing.assert_allclose(effective, effective[0], rtol=1e-12)


#: Golden numbers of `CASES[0]` (hedge+smooth, bandit:1, 2p-h2, 60 episodes, draws of seed 7, the
#: default eta and ix) as version 0.3.0 computed them, before the rate's schedule existed (its rate
#: was the constant eta): the SHA-256 of every strategy played and the final value estimates
#: (float64, little-endian, player by player), and the value estimates themselves (``float.hex``).
GOLDEN_CONSTANT_SHA256 = "c809fe5f26dcd64f6f29dab9395f1540c42b032a8b1a250f640fb0918b68a650"
GOLDEN_CONSTANT_VALUES = [
    ["0x1.ec05a0cee9bfbp-1", "0x1.0000000000000p+1", "0x1.372e4f23891dfp-1", "0x1.cfc1cc665a3b6p-2"],
    ["0x1.cd2752df76b5ep-1", "0x1.0000000000000p+1", "0x1.1aaf7eb6f76d4p-1", "0x1.fbf70ca242f58p-2"],
]


def test_the_constant_rate_is_the_former_run_bit_for_bit():
    """``bandit_rate="constant"`` plays what 0.3.0 played, to the last bit (its strategies and values;
    `GOLDEN_CONSTANT_SHA256`), and the default, decaying rate does not (`CASES[0]`'s program). On
    another platform or JAX version the last bits may round otherwise: then the comparison to 1e-12
    with the literal reference (`test_run_equals_literal`, the constant case) is the check that
    holds, and the golden numbers are to be recorded anew from the last version with a constant rate."""
    import hashlib

    case = CASES[0]
    game = GAMES[case[3]]
    draws = vlearning_uniforms(SEED, case[4], game)

    def digest(result) -> str:
        h = hashlib.sha256()
        for x in (*result.played, *result.value_estimates):
            h.update(np.ascontiguousarray(np.asarray(x), dtype="<f8").tobytes())
        return h.hexdigest()

    constant = run_vlearning(game, "hedge+smooth", case[4], feedback="bandit:1", bonus=0.0, bandit_rate="constant", draws=draws)
    assert [[float(v).hex() for v in np.asarray(x).ravel()] for x in constant.value_estimates] == GOLDEN_CONSTANT_VALUES
    assert digest(constant) == GOLDEN_CONSTANT_SHA256
    assert digest(library(case, draws=draws)) != GOLDEN_CONSTANT_SHA256  # the default decays from round 26
