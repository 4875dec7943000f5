"""Sampled feedback against its literal definition, and the exact mode against full information.

* ``sampled:K``: the library's run equals tests/literal_feedback.py (tests/reference_impl.py's
  literal learners and value updates, with a generative model's estimates written out in loops)
  given the same uniform numbers (``iteration_uniforms(run_key_data(seed), t, purpose, ...)``), to
  1e-12: every iteration's policies, the output policy's value and certified CE/CCE bounds (the
  true game's) at prefixes around every stage end, and the draws counted per prefix
  (``samples_used``). Smooth and stage-based updates, two and three players, both update orders,
  two-query learners, ``K`` of 1, 3 and 6, runs in several chunks.
* A sparse kernel: the draws run over a row's successor slots, which in the canonical form
  (``to_sparse()``) list the positive entries in state order, so the run equals the dense game's
  (to rounding). A sparse game whose slots are stored in another order (as ``random_game(...,
  num_successors=K)`` builds them) draws other next states from the same numbers: it compares
  equal to its canonical form, yet its sampled run differs (an expected failure, kept as evidence).
* ``sampled:exact`` is ``full`` bit for bit: every built-in learner with every value update, in
  both orders where the learner allows alternation (a covering subset by default, all in the full
  mode).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import literal_feedback as lit
import reference_impl as ref
from conftest import case
from markovgames.dynamics import VALUE_UPDATES as ALL_VALUE_UPDATES
from markovgames.dynamics import run
from markovgames.dynamics._feedback import NEXT_STATES, OTHERS, PROPOSALS, iteration_uniforms, run_key_data, sample_index
from markovgames.games import random_game
from markovgames.learners import BUILTIN_LEARNERS

TOL = 1e-12
ETA = 0.5

#: Learners that query the utility twice per iteration (no alternation for them).
TWO_QUERY = {name for name, spec in BUILTIN_LEARNERS.items() if spec.learner().propose is not None}

#: Small random games: two players (H = 2, S = 3), three players (H = 2, S = 2), two players with H = 3.
GAMES = {
    "2p": random_game(num_players=2, horizon=2, num_states=3, num_actions=2, seed_or_rng=101),
    "3p": random_game(num_players=3, horizon=2, num_states=2, num_actions=2, seed_or_rng=103),
    "2p-h3": random_game(num_players=2, horizon=3, num_states=2, num_actions=2, seed_or_rng=107),
}

#: The finite-horizon value updates (the discounted ones run on discounted games: tests/test_discounted_dynamics.py).
VALUE_UPDATES = {name: u for name, u in ALL_VALUE_UPDATES.items() if not u.stationary}


def library_draws(seed: int):
    """``draws(t, purpose, shape)``: the library's uniform numbers of the run with ``seed``."""
    key = run_key_data(seed)

    def draws(t, purpose, shape):
        with jax.enable_x64(True):
            return np.asarray(iteration_uniforms(key, t, purpose, tuple(shape), np.float64))

    return draws


def checked_prefixes(update: str, horizon: int, T: int) -> list[int]:
    """The first prefixes, the last ones, and for the stage-based update both sides of every stage end."""
    out = {1, 2, 3, T - 1, T}
    if update == "stage":
        for start, end, _ in ref.stage_partition(horizon, T):
            out |= {start, end}
    else:
        out |= {T // 2}
    return sorted(p for p in out if 1 <= p <= T)


def assert_matches_literal(result, literal, T: int):
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, literal["policies"][i], rtol=0, atol=TOL, err_msg=f"player {i}'s policies")
    for prefix, metrics in literal["metrics"].items():
        for field in ("value", "certified_cce_bound", "certified_ce_bound"):
            np.testing.assert_allclose(
                getattr(result, field)[prefix - 1], metrics[field], rtol=0, atol=TOL, err_msg=f"{field} after {prefix}"
            )
    # The draws made by every prefix: the library's count and the literal run's.
    used = literal["feedback"].used
    per_t = np.array([sum(n for (t, _), n in used.items() if t == s) for s in range(1, T + 1)])
    np.testing.assert_array_equal(result.samples_used, np.cumsum(per_t))


#: (game, composition, K, order, T, optimistic, chunk_size): the literal comparisons. Every value
#: update family, both orders (optimistic, and a plain run whose next prediction is 0), two and three
#: players, one-query and two-query learners under both updates; the stage-based runs are long
#: enough for at least four stage ends at H = 2 (iterations 2, 5, 9, 15, 24). The K = 6 case also
#: crosses chunk boundaries (a chunk's draws are made at once, before its loop). Each case compiles
#: a loop of its own (1-3 s): rm-plus+stage with K = 1, hedge+smooth (whose run, alternating with
#: K = 3 on the two-player shape, test_a_canonical_sparse_kernel_draws_the_dense_kernels_next_states
#: compares with the literal one by default), three players' rm-plus+smooth and exrm-plus+stage run
#: in the full mode (CONTRIBUTING.md, "Tests"); by default the others still cover every value update
#: family, both orders, K of 1, 3 and 6, two and three players, one- and two-query learners (the
#: proposals are drawn at every iteration under either update; the stage-based update draws its
#: next states at the stage ends, checked with a one-query learner).
SAMPLED_CASES = [
    pytest.param("2p", "rm-plus+smooth", 1, "simultaneous", 30, True, None, id="2p-rm-plus+smooth-K1"),
    pytest.param(
        "2p", "hedge+smooth", 3, "alternating", 30, True, None, id="2p-hedge+smooth-K3-alternating", marks=pytest.mark.full
    ),
    pytest.param(
        "3p", "rm-plus+smooth", 3, "alternating", 16, True, None, id="3p-rm-plus+smooth-K3-alternating", marks=pytest.mark.full
    ),
    pytest.param("2p", "rm-plus+stage", 1, "simultaneous", 30, True, None, id="2p-rm-plus+stage-K1", marks=pytest.mark.full),
    pytest.param("3p", "hedge+stage", 3, "alternating", 26, False, None, id="3p-plain-stage_cce-K3-alternating"),
    pytest.param("2p", "extragradient+smooth", 3, "simultaneous", 30, True, None, id="2p-extragradient+smooth-K3"),
    pytest.param("3p", "exrm-plus+stage", 3, "simultaneous", 26, True, None, id="3p-exrm-plus+stage-K3", marks=pytest.mark.full),
    pytest.param("2p-h3", "bm-hedge+smooth-linear", 6, "alternating", 16, True, 7, id="2p-h3-bm-hedge+smooth-linear-K6-chunks"),
]


@pytest.mark.parametrize("game_name,composition,samples,order,T,optimistic,chunk_size", SAMPLED_CASES)
def test_sampled_feedback_is_the_literal_one(game_name, composition, samples, order, T, optimistic, chunk_size):
    game = GAMES[game_name]
    learner, update = composition.split("+")
    seed = 3 + samples
    result = run(
        game,
        composition,
        T=T,
        eta=ETA,
        feedback=f"sampled:{samples}",
        seed=seed,
        order=order,
        optimistic=optimistic,
        chunk_size=chunk_size,
    )
    literal = lit.run_sampled_reference(
        game.rewards,
        game.transitions,
        game.initial_state,
        learner,
        update,
        ETA,
        T,
        samples=samples,
        draws=library_draws(seed),
        optimistic=optimistic,
        order=order,
        prefixes=checked_prefixes(update, game.horizon, T),
    )
    assert_matches_literal(result, literal, T)
    # What the literal run drew: the profiles at every iteration (twice for a two-query learner),
    # the next states at every iteration (smooth) or at the stage ends (stage-based).
    drawn = literal["feedback"].used
    assert {t for t, p in drawn if p == OTHERS} == set(range(1, T + 1))
    assert ({t for t, p in drawn if p == PROPOSALS} == set(range(1, T + 1))) == (learner in TWO_QUERY)
    ends = {end for _, end, complete in ref.stage_partition(game.horizon, T) if complete}
    assert {t for t, p in drawn if p == NEXT_STATES} == (ends if update == "stage" else set(range(1, T + 1)))


def test_the_samples_change_the_run():
    """The comparisons above are not full information's in disguise: another seed, or full
    information, gives another trajectory."""
    game = GAMES["2p"]
    a = run(game, "rm-plus+smooth", T=30, eta=ETA, feedback="sampled:1", seed=4)
    b = run(game, "rm-plus+smooth", T=30, eta=ETA, feedback="sampled:1", seed=5)
    full = run(game, "rm-plus+smooth", T=30, eta=ETA)
    assert np.max(np.abs(a.policies[0] - b.policies[0])) > 1e-3
    assert np.max(np.abs(a.policies[0] - full.policies[0])) > 1e-3
    assert full.samples_used is None


def test_literal_draws_are_the_librarys_sample_index():
    """tests/literal_feedback.py's draw, a loop, against the library's vectorised NumPy one: random
    distributions with zeros (never drawn), sums that rounding leaves short of 1, and numbers on
    the cumulative sums themselves."""
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=400)
    probs[rng.random(probs.shape) < 0.3] = 0.0
    probs[np.all(probs == 0.0, axis=1), 0] = 1.0
    probs[::7] *= 1.0 - 1e-15  # short of 1
    u = rng.random(len(probs))
    u[::5] = np.cumsum(probs, axis=1)[::5, 1] % 1.0  # exactly on a cumulative sum
    expected = sample_index(probs, u)
    drawn = [lit.literal_draw(p, x) for p, x in zip(probs, u, strict=True)]
    np.testing.assert_array_equal(drawn, expected)
    assert all(p[a] > 0 for p, a in zip(probs, drawn, strict=True))
    assert (lit.NEXT_STATES, lit.OTHERS, lit.PROPOSALS) == (NEXT_STATES, OTHERS, PROPOSALS)


# ------------------------------------------------------------------------------------------------
# Sparse kernels
# ------------------------------------------------------------------------------------------------

#: A sparse game of two successors per row (three states: every row has a zero), as random_game
#: stores it (its successors in the order drawn), and its dense and canonical forms: the shapes of
#: GAMES["2p"], so that the dense runs are compiled loops of the literal comparisons above.
STORED = random_game(num_players=2, horizon=2, num_states=3, num_actions=2, seed_or_rng=4, num_successors=2)
DENSE = STORED.to_dense()
CANONICAL = DENSE.to_sparse()
SPARSE_T, SPARSE_K, SPARSE_SEED = 30, 3, 9


def test_the_sparse_games_are_one_game_in_three_forms():
    assert STORED == CANONICAL == DENSE
    assert np.any(DENSE.transitions == 0.0)
    successors = CANONICAL.sparse_transitions.successors
    positive = CANONICAL.sparse_transitions.probabilities > 0
    assert np.all(positive)  # two positive entries in every row: no padding
    assert np.all(np.diff(successors, axis=-1) > 0)  # in state order
    assert not np.array_equal(STORED.sparse_transitions.successors, successors)  # random_game's order is another


@pytest.mark.parametrize(
    "composition,order",
    [("hedge+smooth", "alternating"), pytest.param("rm-plus+stage", "simultaneous", marks=pytest.mark.full)],
)
def test_a_canonical_sparse_kernel_draws_the_dense_kernels_next_states(composition, order):
    settings = dict(T=SPARSE_T, eta=ETA, feedback=f"sampled:{SPARSE_K}", seed=SPARSE_SEED, order=order)
    sparse = run(CANONICAL, composition, **settings)
    dense = run(DENSE, composition, **settings)
    # The same draws: equal to rounding (the sparse and dense contractions round differently, as
    # under full information).
    for a, b in zip(sparse.policies, dense.policies, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)
    for field in ("value", "certified_cce_bound", "certified_ce_bound", "samples_used"):
        np.testing.assert_allclose(getattr(sparse, field), getattr(dense, field), rtol=0, atol=TOL)
    learner, update = composition.split("+")
    literal = lit.run_sampled_reference(
        DENSE.rewards,
        DENSE.transitions,
        DENSE.initial_state,
        learner,
        update,
        ETA,
        SPARSE_T,
        samples=SPARSE_K,
        draws=library_draws(SPARSE_SEED),
        order=order,
        prefixes=checked_prefixes(update, DENSE.horizon, SPARSE_T),
    )
    assert_matches_literal(dense, literal, SPARSE_T)
    assert_matches_literal(sparse, literal, SPARSE_T)


def test_equal_games_give_equal_sampled_runs_whatever_the_order_of_their_successors():
    settings = dict(T=SPARSE_T, eta=ETA, feedback=f"sampled:{SPARSE_K}", seed=SPARSE_SEED, order="alternating")
    stored = run(STORED, "hedge+smooth", **settings)
    canonical = run(CANONICAL, "hedge+smooth", **settings)
    for a, b in zip(stored.policies, canonical.policies, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)


# ------------------------------------------------------------------------------------------------
# sampled:exact is full information
# ------------------------------------------------------------------------------------------------

#: By default a covering subset (each case compiles two loops): every value update, the smooth
#: family and the stage-based update each in both orders, both two-query learners, a plain
#: (non-optimistic) run, five of the ten learners (the exact mode's branch is the loop's, not the
#: learner's); the full mode runs every learner x value update x allowed order.
EXACT_DEFAULT = {
    ("hedge", "smooth", "alternating", True),
    ("exrm-plus", "smooth-uniform", "simultaneous", True),
    ("extragradient", "smooth-linear", "simultaneous", True),
    ("sprm-plus", "stage", "alternating", True),
    ("ogda", "stage", "simultaneous", False),
}
EXACT_CASES = [
    case(
        learner,
        update,
        order,
        optimistic,
        default=(learner, update, order, optimistic) in EXACT_DEFAULT,
        id=f"{'' if optimistic else 'plain-'}{learner}+{update}-{order}",
    )
    for learner in BUILTIN_LEARNERS
    for update in VALUE_UPDATES
    for order in ("simultaneous", "alternating")
    for optimistic in (True, False)
    if (optimistic or (learner, update, order, optimistic) in EXACT_DEFAULT)
    and not (learner in TWO_QUERY and order == "alternating")
]


def test_the_exact_cases_cover_what_they_say():
    defaults = [c.values for c in EXACT_CASES if not c.marks]
    assert len(defaults) == len(EXACT_DEFAULT)
    assert TWO_QUERY <= {d[0] for d in defaults} and len({d[0] for d in defaults}) == len(EXACT_DEFAULT)
    assert {d[1] for d in defaults} == set(VALUE_UPDATES) and not all(d[3] for d in defaults)
    orders = ("simultaneous", "alternating")
    assert {(d[1] == "stage", d[2]) for d in defaults} == {(stage, o) for stage in (False, True) for o in orders}
    assert len(EXACT_CASES) == len(BUILTIN_LEARNERS) * len(VALUE_UPDATES) * 2 - len(TWO_QUERY) * len(VALUE_UPDATES) + 1


@pytest.mark.parametrize("learner,update,order,optimistic", EXACT_CASES)
def test_sampled_exact_is_full_information_bit_for_bit(learner, update, order, optimistic):
    game = random_game(num_players=2, horizon=2, num_states=2, num_actions=2, seed_or_rng=109)
    composition = f"{learner}+{update}"
    settings = dict(T=6, eta=ETA, order=order, optimistic=optimistic)
    full = run(game, composition, **settings)
    exact = run(game, composition, feedback="sampled:exact", seed=7, **settings)
    assert exact.feedback == "sampled:exact" and full.feedback == "full" and exact.samples_used is None
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_array_equal(getattr(exact, field), getattr(full, field))
    for a, b in zip(exact.policies, full.policies, strict=True):
        np.testing.assert_array_equal(a, b)
    if full.identity_residual is not None:  # the smooth updates' Q identity, checked as under full information
        np.testing.assert_array_equal(exact.identity_residual, full.identity_residual)
