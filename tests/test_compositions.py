"""Algorithms as compositions: every learner with both value updates, against literal references.

* The engine's trajectory and per-prefix metrics equal the literal reference
  (tests/reference_impl.py, raw weighted sums, literal learners) for every learner x value update x
  optimism, to 1e-12 (by default each learner with one value update and one optimism setting, every
  update and setting among them), and certifying the run's own trajectory reproduces its arrays.
* The paper's names are aliases: ``smooth_ce`` = ``bm-logbarrier+smooth``, ``smooth_cce`` =
  ``hedge+smooth``, ``stage_cce`` = ``hedge+stage`` give identical arrays.
* On a normal-form game (H = 1, S = 1) each learner reduces to its textbook form: with the
  smooth update, the learner on the bimatrix game with linear weights w_j = j; with the stage
  update, the unweighted learner restarted at stages of lengths 1, 2, 4, ... (uniform play in
  stage 1, where Q = 0).
* Unknown names are errors that list the choices, never a fallback.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import reference_impl as ref
from conftest import FULL_TESTS, case, make_paper_game, make_random_game
from markovgames import MarkovGame
from markovgames.dynamics import ALGORITHMS, Algorithm, certify, get_algorithm, run
from markovgames.learners import BUILTIN_LEARNERS

TOL = 1e-12
#: The literal-reference test's game and length, shared by the tests below that need a small
#: Markov game and a short run: the same compiled loops (T = 14 ends inside the stage-based
#: update's fourth stage).
SHAPE, T_SHORT = (2, 2, 2, (3, 2)), 14
LEARNERS = list(BUILTIN_LEARNERS)
UPDATES = ["smooth", "stage"]
COMPOSITIONS = [f"{learner}+{update}" for learner, update in itertools.product(LEARNERS, UPDATES)]


#: Learners that query the utility twice per iteration: their prediction is the second query, so
#: they have no non-optimistic form (refused), and their one setting runs by default.
TWO_QUERY = {name for name, spec in BUILTIN_LEARNERS.items() if spec.learner().propose is not None}


def _composition_cases(parity: int, default=lambda composition: True):
    """Every composition with both optimism settings (the one of the two-query learners), of which
    the ``default`` compositions with one setting, alternating with the learner, the update and
    ``parity``. The two parities' settings are each other's opposites."""
    return [
        case(
            f"{learner}+{update}",
            optimistic,
            default=((i + j + parity) % 2 == int(optimistic) or learner in TWO_QUERY) and default(f"{learner}+{update}"),
            id=f"{'optimistic' if optimistic else 'plain'}-{learner}+{update}",
        )
        for i, learner in enumerate(LEARNERS)
        for j, update in enumerate(UPDATES)
        for optimistic in (True, False)
        if optimistic or learner not in TWO_QUERY
    ]


def _update_index(composition: str) -> int:
    """Which of the two value updates a composition's learner takes in the literal-reference and
    learning tests by default (0 or 1); the textbook test takes the other one. Pairs of learners
    alternate, so that each update runs with both optimism settings in each test, and between them
    every learner runs with both updates."""
    learner, update = composition.split("+")
    return (LEARNERS.index(learner) // 2 + UPDATES.index(update)) % 2


def _reference_cases():
    """Each learner with one value update (the learning test's) and one optimism setting by default,
    alternating, so that every learner, every update and every optimism setting is checked (each
    update with both settings); every composition with both settings in the full mode."""
    return _composition_cases(0, lambda composition: _update_index(composition) == 0)


def _textbook_cases():
    """The literal-reference test's other optimism setting: by default each learner with the value
    update the literal-reference and learning tests do not take; every case in the full mode."""
    return _composition_cases(1, lambda composition: _update_index(composition) == 1)


def _learning_cases():
    """The literal-reference test's learner and update, with its other optimism setting, by
    default; every case in the full mode."""
    return _composition_cases(1, lambda composition: _update_index(composition) == 0)


def _defaults(cases) -> dict[str, bool]:
    """The optimism setting of each composition that runs by default in ``cases``."""
    return {p.values[0]: p.values[1] for p in cases if not p.marks}


#: The compositions of the literal-reference and textbook tests' default cases, with their optimism
#: settings: the tests whose point does not depend on the game or optimism run each composition
#: on the game, ``T`` and setting of the test that runs it by default (its compiled loop).
REFERENCE_DEFAULT, TEXTBOOK_DEFAULT = _defaults(_reference_cases()), _defaults(_textbook_cases())
#: The textbook test's length.
T_TEXTBOOK = 30


def _normal_form_game(payoff) -> MarkovGame:
    """The bimatrix game ``payoff[player, a, b]`` as a Markov game with H = 1 and S = 1."""
    return MarkovGame(payoff[None, :, None], np.ones((1, 1, *payoff.shape[1:], 1)))


def _shared_loops(composition: str, seed: int) -> tuple[MarkovGame, int, tuple[bool, ...]]:
    """A game (drawn from ``seed``), ``T`` and optimism settings that run ``composition`` with the
    compiled loop of the literal-reference test's default case or else the textbook test's: that
    case's setting by default; both settings (the one of the two-query learners) in the full mode."""
    if composition in REFERENCE_DEFAULT:
        game, T, optimistic = make_random_game(seed, *SHAPE), T_SHORT, REFERENCE_DEFAULT[composition]
    else:
        game, T = _normal_form_game(np.random.default_rng(seed).random((2, 3, 2))), T_TEXTBOOK
        optimistic = TEXTBOOK_DEFAULT[composition]
    if composition.split("+")[0] in TWO_QUERY:
        return game, T, (True,)
    return game, T, (True, False) if FULL_TESTS else (optimistic,)


@pytest.mark.parametrize("composition,optimistic", _reference_cases())
def test_engine_matches_the_literal_reference(composition, optimistic):
    learner, update = composition.split("+")
    game = make_random_game(4, *SHAPE)
    T = T_SHORT
    result = run(game, composition, T=T, eta=0.8, optimistic=optimistic)
    reference = ref.run_reference_composition(game.rewards, game.transitions, learner, update, 0.8, T, optimistic)
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, reference["policies"][i][1:], rtol=0, atol=TOL)
    for prefix in (1, game.horizon + 1, T):
        offline = ref.metrics_for_prefix(
            game.rewards, game.transitions, game.initial_state, composition, reference["policies"], prefix, game.horizon
        )
        np.testing.assert_allclose(result.value[prefix - 1], offline["value"], rtol=0, atol=TOL)
        np.testing.assert_allclose(result.certified_cce_bound[prefix - 1], offline["certified_cce_bound"], rtol=0, atol=TOL)
        np.testing.assert_allclose(result.certified_ce_bound[prefix - 1], offline["certified_ce_bound"], rtol=0, atol=TOL)
    # Certifying the run's own trajectory reproduces its arrays (in this test, with its compiled loop).
    curve = certify(game, result.policies, result.spec.value_update)
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_allclose(getattr(curve, field), getattr(result, field), rtol=0, atol=1e-12)
    kept = certify(game, result.policies, result.spec.value_update.name, checkpoints=[1, 7, 14])
    np.testing.assert_allclose(kept.value, result.value[[0, 6, 13]], rtol=0, atol=1e-12)


#: The smooth update's other averagings (uniform: k = 0, linear: k = 1, for the paper's k = H): by
#: default five cases, each averaging with both optimism settings, with learners of external regret
#: (one of them of two queries) and of swap regret (Blum-Mansour) under each; every learner with
#: both in the full mode. The order k is the value update's (its step sizes and the weights w_j it
#: gives every learner alike); the literal-reference test checks every learner with w_j of k = H.
AVERAGING_DEFAULT = {
    ("hedge", "smooth-uniform", True),
    ("rm-plus", "smooth-uniform", False),
    ("bm-logbarrier", "smooth-uniform", True),
    ("exrm-plus", "smooth-linear", True),
    ("bm-hedge", "smooth-linear", False),
}
AVERAGING_CASES = [
    case(
        learner,
        update,
        optimistic,
        default=(learner, update, optimistic) in AVERAGING_DEFAULT,
        id=f"{'optimistic' if optimistic else 'plain'}-{learner}+{update}",
    )
    for learner in LEARNERS
    for update in ["smooth-uniform", "smooth-linear"]
    for optimistic in (True, False)
    if optimistic or learner not in TWO_QUERY
]


@pytest.mark.parametrize("learner,update,optimistic", AVERAGING_CASES)
def test_uniform_and_linear_averaging_match_the_literal_reference(learner, update, optimistic):
    """The literal reference with ``H`` replaced by the order ``k`` (0: uniform, 1: linear) in
    ``alpha_t`` and ``w_j``, and Algorithm 3's kernel with the same ``alpha_t^j``: the trajectory
    and every prefix's value and certified bounds, to 1e-12 (H = 2, so k differs from H; the
    literal-reference test's shape and T)."""
    game = make_random_game(21, *SHAPE)
    T = T_SHORT
    composition = f"{learner}+{update}"
    result = run(game, composition, T=T, eta=0.8, optimistic=optimistic)
    reference = ref.run_reference_composition(game.rewards, game.transitions, learner, update, 0.8, T, optimistic)
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, reference["policies"][i][1:], rtol=0, atol=TOL)
    for prefix in (1, 2, T):
        offline = ref.metrics_for_prefix(
            game.rewards, game.transitions, game.initial_state, composition, reference["policies"], prefix, game.horizon
        )
        np.testing.assert_allclose(result.value[prefix - 1], offline["value"], rtol=0, atol=TOL)
        np.testing.assert_allclose(result.certified_cce_bound[prefix - 1], offline["certified_cce_bound"], rtol=0, atol=TOL)
        np.testing.assert_allclose(result.certified_ce_bound[prefix - 1], offline["certified_ce_bound"], rtol=0, atol=TOL)
    assert result.identity_residual < 1e-12  # the smooth Q identity holds for every averaging


# Every learner and both updates by default (one update each, alternating); all six in the full mode.
@pytest.mark.parametrize(
    "learner,update",
    [
        case(learner, update, default=(i + j) % 2 == 0, id=f"{learner}+{update}")
        for i, learner in enumerate(["rm-plus", "bm-rm-plus", "bm-hedge"])
        for j, update in enumerate(UPDATES)
    ],
)
def test_three_players_and_the_theory_rate_match_the_literal_reference(learner, update):
    game = make_random_game(8, 3, 2, 2, (2, 3, 2))
    result = run(game, f"{learner}+{update}", T=10, eta="theory")
    reference = ref.run_reference_composition(game.rewards, game.transitions, learner, update, "theory", 10)
    for i, pol in enumerate(result.policies):
        np.testing.assert_allclose(pol, reference["policies"][i][1:], rtol=0, atol=TOL)


@pytest.mark.parametrize("alias", list(ALGORITHMS))
def test_the_paper_names_are_their_compositions_bit_for_bit(alias):
    # The game, T and (by default) optimism of the literal-reference or textbook test's default
    # case of the composition: its compiled loops.
    composition = ALGORITHMS[alias].composition
    game, T, settings = _shared_loops(composition, 30)
    for optimistic in settings:
        a = run(game, alias, T=T, eta=0.3, optimistic=optimistic)
        b = run(game, composition, T=T, eta=0.3, optimistic=optimistic)
        assert a.algorithm == alias and b.algorithm == composition and a.spec.concept == b.spec.concept
        for field in ("value", "certified_ce_bound", "certified_cce_bound"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        for pa, pb in zip(a.policies, b.policies, strict=True):
            np.testing.assert_array_equal(pa, pb)


@pytest.mark.parametrize("alias", list(ALGORITHMS))
def test_the_literal_reference_of_a_composition_is_the_papers(alias):
    # The reference's generic learners against its own literal paper algorithms: two routes to one number.
    game = make_random_game(9, 2, 2, 2, (2, 3))
    learner, update = ALGORITHMS[alias].composition.split("+")
    generic = ref.run_reference_composition(game.rewards, game.transitions, learner, update, 0.6, 12)
    literal = ref.run_reference(game.rewards, game.transitions, alias, 0.6, 12)
    for a, b in zip(generic["policies"], literal["policies"], strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


def _textbook_normal_form(payoff, learner: str, update: str, eta: float, T: int, optimistic: bool):
    """The bimatrix game ``payoff[player, a, b]`` played by ``learner`` in its textbook form.

    Smooth update: every iteration t weighs the learner's utilities by w_j = j. Stage update:
    stages of lengths 1, 2, 4, ...; uniform play in stage 1, then a fresh unweighted learner per
    stage (its first prediction the utility of the uniform opponent).
    """
    sizes = payoff.shape[1:]
    players = [ref.make_literal_learner(learner, sizes[i]) for i in range(2)]
    x = [np.full(sizes[i], 1.0 / sizes[i]) for i in range(2)]
    last_u = [np.zeros(sizes[i]) for i in range(2)]
    played = []
    stage_end, length = 1, 1
    for t in range(1, T + 1):
        if update == "smooth":
            weight, rate = t, eta
        else:
            weight, rate = 1, eta
            if t == stage_end + 1:  # a new stage: restart, predicting against the uniform opponent
                players = [ref.make_literal_learner(learner, sizes[i]) for i in range(2)]
                uniform = [np.full(n, 1.0 / n) for n in sizes]
                last_u = [payoff[0] @ uniform[1], payoff[1].T @ uniform[0]]
                length *= 2
                stage_end += length
        if update == "stage" and t == 1:
            x = [np.full(n, 1.0 / n) for n in sizes]  # stage 1: Q^1 = 0, every utility is 0
            played.append(x)
            continue
        m = [last_u[i] if optimistic else np.zeros(sizes[i]) for i in range(2)]
        if learner in TWO_QUERY:  # extragradient: the prediction is the utility at the base points
            y = [p.propose() for p in players]
            m = [payoff[0] @ y[1], payoff[1].T @ y[0]]
        x = [players[i].play(m[i], weight, rate) for i in range(2)]
        u = [payoff[0] @ x[1], payoff[1].T @ x[0]]
        for i in range(2):
            players[i].observe(u[i], weight, rate)
        last_u = u
        played.append(x)
    return played


@pytest.mark.parametrize("composition,optimistic", _textbook_cases())
def test_each_learner_reduces_to_its_textbook_form_on_a_normal_form_game(composition, optimistic):
    learner, update = composition.split("+")
    payoff = np.random.default_rng(17).random((2, 3, 2))  # [player, a, b]
    game = _normal_form_game(payoff)
    T = T_TEXTBOOK
    result = run(game, composition, T=T, eta=0.7, optimistic=optimistic)
    textbook = _textbook_normal_form(payoff, learner, update, 0.7, T, optimistic)
    for t in range(T):
        for i in range(2):
            np.testing.assert_allclose(result.policies[i][t, 0, 0], textbook[t][i], rtol=0, atol=TOL)


def test_regret_matching_ignores_the_learning_rate():
    # With each update, the game, T and (by default) optimism of the literal-reference or textbook
    # test's default case: its compiled loops.
    for update in UPDATES:
        game, T, settings = _shared_loops(f"rm-plus+{update}", 3)
        for optimistic in settings:
            a = run(game, f"rm-plus+{update}", T=T, eta=0.05, optimistic=optimistic)
            b = run(game, f"rm-plus+{update}", T=T, eta=7.0, optimistic=optimistic)
            np.testing.assert_array_equal(a.value, b.value)
            np.testing.assert_array_equal(a.policies[0], b.policies[0])


@pytest.mark.parametrize("composition,optimistic", _learning_cases())
def test_every_composition_learns_on_the_paper_game(composition, optimistic):
    # Finite, and the certified gap of the algorithm's own concept halves or better from T' = 30
    # to T = 3000 (measured: every composition's shrinks by 2.5x to 70x, and by 14x or more up
    # to T = 30000; a run that stalled or diverged would not).
    result = run(make_paper_game(), composition, T=3000, eta=0.2, optimistic=optimistic, record_trajectory=False)
    gap = result.certified_ce_gap if result.spec.concept == "ce" else result.certified_cce_gap
    assert np.all(np.isfinite(gap))
    assert gap[-1] < gap[29] / 2


class TestNames:
    def test_an_unknown_learner_lists_the_choices(self):
        with pytest.raises(ValueError, match=r"unknown learner 'rm_plus' \(did you mean 'rm-plus'\?\); choose one of: hedge, "):
            Algorithm("rm_plus", "smooth")

    def test_an_unknown_value_update_lists_the_choices(self):
        with pytest.raises(
            ValueError, match=r"unknown value update 'foo'; choose one of: smooth, smooth-uniform, smooth-linear, stage"
        ):
            Algorithm("hedge", "foo")
        with pytest.raises(ValueError, match=r"unknown value update 'foo'"):
            get_algorithm("hedge+foo")

    def test_an_unknown_algorithm_lists_the_choices(self):
        with pytest.raises(
            ValueError, match=r"unknown algorithm 'smooth-ce' \(did you mean 'smooth_ce'\?\); choose one of: smooth_ce"
        ):
            get_algorithm("smooth-ce")

    def test_swap_regret_of_any_external_learner_by_name(self):
        assert get_algorithm("bm-hedge+stage").concept == "ce"
        with pytest.raises(ValueError, match="unknown learner 'bm-bm-hedge'"):
            get_algorithm("bm-bm-hedge+smooth")

    def test_compositions_have_the_parts_they_name(self):
        for composition in COMPOSITIONS:
            algorithm = get_algorithm(composition)
            learner, update = composition.split("+")
            assert (algorithm.learner.name, algorithm.value_update.name, algorithm.name) == (learner, update, composition)
            assert algorithm.concept == ("ce" if learner.startswith("bm-") else "cce")
        assert get_algorithm("smooth_ce").composition == "bm-logbarrier+smooth"
        assert get_algorithm("stage_cce").composition == "hedge+stage"
        assert get_algorithm("smooth_cce").composition == "hedge+smooth"
