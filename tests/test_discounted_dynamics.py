"""Learning dynamics on discounted games: the engine against a literal reference, batches, chunks,
resumption, the evaluated iterates against the discounted evaluators, gamma = 0 as the stage game
repeated, and the refusals (docs/discounted.md, "Learning dynamics").

Small games and few iterations; the engine runs reuse a handful of compiled shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import StopRun, beyond_default_in_full, case, stop_after
from discounted_reference import alpha_weights, order_of, run_discounted_reference
from markovgames.dynamics import DiscountedBatchRunResult, DiscountedRunResult, run, run_batch
from markovgames.evaluation import discounted_nash_gap
from markovgames.games import DiscountedMarkovGame, MarkovGame


def discounted_game(seed: int, num_players: int, num_states: int, actions, discount: float, *, spread=False, zero_sum=False):
    """Uniform rewards and Dirichlet(1) rows (NumPy only); ``spread``: a random initial distribution."""
    rng = np.random.default_rng(seed)
    rewards = rng.random((num_players, num_states, *actions))
    if zero_sum:
        rewards[1] = 1.0 - rewards[0]
    transitions = rng.dirichlet(np.ones(num_states), size=(num_states, *actions))
    if spread:
        rho = rng.dirichlet(np.ones(num_states))
        return DiscountedMarkovGame(rewards, transitions, discount, initial_distribution=rho, name=f"d{seed}")
    return DiscountedMarkovGame(rewards, transitions, discount, initial_state=0, name=f"d{seed}")


TWO = discounted_game(1, 2, 3, (2, 3), 0.8, spread=True)
THREE = discounted_game(2, 3, 2, (2, 2, 2), 0.6)
ZERO_SUM = discounted_game(3, 2, 3, (2, 2), 0.9, zero_sum=True)
T = 30


#: By default each of hedge and ogda, both games, the smooth and uniform updates, both optimism
#: settings and both orders in some case: hedge-2p (its program is also the average-weights,
#: exact-mode and gamma = 0 tests'), ogda-2p-alternating, hedge-3p-alternating-plain and
#: hedge-2p-uniform; ogda-3p and the other learners and update in the full mode (CONTRIBUTING.md, "Tests").
@pytest.mark.parametrize(
    ("learner", "game", "update", "optimistic", "order"),
    [
        case("hedge", TWO, "discounted-smooth", True, "simultaneous", default=True, id="hedge-2p"),
        case("ogda", TWO, "discounted-smooth", True, "alternating", default=True, id="ogda-2p-alternating"),
        case("hedge", THREE, "discounted-smooth", False, "alternating", default=True, id="hedge-3p-alternating-plain"),
        case("ogda", THREE, "discounted-smooth", True, "simultaneous", default=False, id="ogda-3p"),
        case("hedge", TWO, "discounted-smooth-uniform", True, "simultaneous", default=True, id="hedge-2p-uniform"),
        case("rm-plus", THREE, "discounted-smooth-linear", True, "simultaneous", default=False, id="rm-plus-3p-linear"),
        case("extragradient", TWO, "discounted-smooth", True, "simultaneous", default=False, id="extragradient-2p"),
        case("bm-hedge", TWO, "discounted-smooth", True, "simultaneous", default=False, id="bm-hedge-2p"),
    ],
)
def test_engine_equals_the_literal_reference(learner, game, update, optimistic, order):
    """Policies, value estimates and the weighted average iterate, to 1e-12."""
    eta = 0.3
    ref = run_discounted_reference(
        game.rewards,
        game.transitions,
        game.discount,
        learner,
        update,
        eta,
        T,
        optimistic=optimistic,
        order=order,
        initial_distribution=game.initial_distribution,
    )
    got = run(game, f"{learner}+{update}", T=T, eta=eta, optimistic=optimistic, order=order, weighted_average=[T])
    assert isinstance(got, DiscountedRunResult)
    for i in range(game.num_players):
        np.testing.assert_allclose(got.policies[i], ref["policies"][i][1:], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.weighted_average_policies[i], ref["weighted_average"][i], rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.last_policies[i], ref["policies"][i][T], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.value_estimate, ref["value_estimate"], rtol=0, atol=1e-12)
    assert got.step_order == pytest.approx(order_of(update, game.discount), rel=1e-15)


def _average_from_trajectory(policies, k: float, t: int):
    """``sum_{j <= t} alpha_t^j pi^j`` from the stored trajectory (explicit weights)."""
    aw = alpha_weights(k, t)
    return [sum(aw[j] * p[j] for j in range(t)) for p in policies]


def _in_stretches(monkeypatch):
    """Runs of any size as the loop runs those beyond the quick ones: the weighted average in
    stretches of iterations that test nothing (`segmented_scan`), after the asked prefixes only."""
    from markovgames.dynamics import _engine, _loop

    monkeypatch.setattr(_loop, "QUICK_RUN_WORK", 0)
    monkeypatch.setattr(_engine, "QUICK_RUN_WORK", 0)


# In stretches in the full mode: by default the stretches' evaluated iterates are checked by
# test_batch_equals_single_runs[True] (the average against the evaluators, the last iterate
# against single runs) and test_the_average_in_stretches_changes_nothing_else.
@pytest.mark.parametrize("stretches", beyond_default_in_full([False, True], {False}))
def test_evaluated_iterates_equal_the_discounted_evaluators(stretches, monkeypatch):
    """The last and weighted average iterates' values and best-response values at the prefixes
    each was asked at are the discounted evaluators' on the stored iterates (the average rebuilt
    here with the literal weights alpha_t^j); in the quick runs' loop and in stretches."""
    if stretches:
        _in_stretches(monkeypatch)
    last_at, average_at = [1, 7, 20], [2, 7, 13, 20]
    got = run(ZERO_SUM, "hedge+discounted-smooth", T=20, eta=0.5, last_iterate=last_at, weighted_average=average_at)
    np.testing.assert_array_equal(got.last_iterate_prefixes, last_at)
    np.testing.assert_array_equal(got.weighted_average_prefixes, average_at)
    for row, t in enumerate(last_at):
        last = discounted_nash_gap(ZERO_SUM, [p[t - 1] for p in got.policies])
        np.testing.assert_allclose(got.last_iterate_value[row], last.value, rtol=0, atol=1e-10)
        np.testing.assert_allclose(got.last_iterate_best_response[row], last.best_response_value, rtol=0, atol=1e-10)
        assert got.last_iterate_nash_gap[row] == pytest.approx(last.gap, abs=1e-10)
    for row, t in enumerate(average_at):
        average = discounted_nash_gap(ZERO_SUM, _average_from_trajectory(got.policies, got.step_order, t))
        np.testing.assert_allclose(got.weighted_average_value[row], average.value, rtol=0, atol=1e-10)
        np.testing.assert_allclose(got.weighted_average_best_response[row], average.best_response_value, rtol=0, atol=1e-10)
        assert got.weighted_average_duality_gap[row] == pytest.approx(average.duality_gap, abs=1e-10)
    # A three-player game has no duality gap; its Nash gaps are there. Neither iterate is
    # evaluated (nor the average carried) unless asked for.
    three = run(THREE, "hedge+discounted-smooth", T=5, eta=0.5, last_iterate=True, weighted_average=True, checkpoints=[2, 5])
    assert three.last_iterate_duality_gap is None and three.weighted_average_nash_gap.shape == (2,)
    np.testing.assert_array_equal(three.weighted_average_prefixes, [2, 5])
    plain = run(THREE, "hedge+discounted-smooth", T=5, eta=0.5, checkpoints=[2, 5])
    assert plain.weighted_average_policies is None and plain.weighted_average_value is None
    assert plain.last_iterate_value is None and plain.last_iterate_prefixes is None


def test_the_average_weights_are_the_step_sizes_alpha_T_t():
    """`DiscountedSmoothUpdate.average_weights` (main's mechanism, `smooth_average_weights` with the
    real order k) against the literal product alpha_t prod_{j>t} (1 - alpha_j) of the reference, and
    the uniform and linear updates' closed forms; the loop's average is these weights on the
    trajectory, to rounding."""
    from markovgames.dynamics import VALUE_UPDATES
    from markovgames.evaluation import average_iterate

    for update, gamma in (("discounted-smooth", 0.8), ("discounted-smooth", 0.37), ("discounted-smooth-uniform", 0.9)):
        k = order_of(update, gamma)
        for t in (1, 2, 9, 40):
            np.testing.assert_allclose(VALUE_UPDATES[update].average_weights(t, k), alpha_weights(k, t), rtol=1e-13, atol=0)
    np.testing.assert_allclose(VALUE_UPDATES["discounted-smooth-linear"].average_weights(4, 1.0), [0.1, 0.2, 0.3, 0.4])
    got = run(TWO, "hedge+discounted-smooth", T=T, eta=0.3, weighted_average=[T])
    weights = got.spec.value_update.average_weights(T, got.step_order)
    for a, b in zip(average_iterate(got.policies, weights), got.weighted_average_policies, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


@pytest.mark.parametrize("stretches", [False, True])
def test_batch_equals_single_runs(stretches, monkeypatch):
    if stretches:  # (the weighted average's rows: one per stretch, the run axis first)
        _in_stretches(monkeypatch)
    other = discounted_game(4, 2, 3, (2, 3), 0.8)
    kwargs = dict(last_iterate=[5, T], weighted_average=[5, 12, T])
    batch = run_batch([TWO, other], "hedge+discounted-smooth", T=T, etas=[0.3, 0.1], record_trajectory=True, **kwargs)
    assert isinstance(batch, DiscountedBatchRunResult) and len(batch) == 2
    for index, (game, eta) in enumerate([(TWO, 0.3), (other, 0.1)]):
        single = run(game, "hedge+discounted-smooth", T=T, eta=eta, **kwargs)
        one = batch.run(index)
        np.testing.assert_allclose(one.value_estimate, single.value_estimate, rtol=0, atol=1e-13)
        for a, b in zip(one.policies, single.policies, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
        for a, b in zip(one.weighted_average_policies, single.weighted_average_policies, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
        np.testing.assert_allclose(one.weighted_average_best_response, single.weighted_average_best_response, atol=1e-12)
        np.testing.assert_allclose(one.last_iterate_value, single.last_iterate_value, atol=1e-12)
        # Both are the average of the batch's own trajectory, evaluated at each prefix.
        for row, t in enumerate((5, 12, T)):
            average = discounted_nash_gap(game, _average_from_trajectory(one.policies, one.step_order, t))
            np.testing.assert_allclose(one.weighted_average_value[row], average.value, rtol=0, atol=1e-10)
            np.testing.assert_allclose(one.weighted_average_best_response[row], average.best_response_value, atol=1e-10)


def test_chunks_and_resumption_are_bit_identical(tmp_path):
    evaluated = dict(last_iterate=[3, 17, T], weighted_average=[3, 11, T])
    full = run(TWO, "ogda+discounted-smooth", T=T, eta=0.3, trajectory_dir=tmp_path / "full", **evaluated)
    # In the resumed run's chunks (its compiled loop), uninterrupted.
    chunked = run(TWO, "ogda+discounted-smooth", T=T, eta=0.3, chunk_size=10, **evaluated)
    kwargs = dict(trajectory_dir=tmp_path / "part", state_file=tmp_path / "state.npz", state_every=10, **evaluated)
    with pytest.raises(StopRun):
        run(TWO, "ogda+discounted-smooth", T=T, eta=0.3, progress=stop_after(10), **kwargs)
    resumed = run(TWO, "ogda+discounted-smooth", T=T, eta=0.3, **kwargs)
    for other in (chunked, resumed):
        np.testing.assert_array_equal(other.value_estimate, full.value_estimate)
        np.testing.assert_array_equal(other.weighted_average_value, full.weighted_average_value)
        np.testing.assert_array_equal(other.last_iterate_best_response, full.last_iterate_best_response)
        for a, b in zip(other.policies, full.policies, strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(other.weighted_average_policies, full.weighted_average_policies, strict=True):
            np.testing.assert_array_equal(a, b)
    # Another discount is another run: its state is refused.
    changed = DiscountedMarkovGame(TWO.rewards, TWO.transitions, 0.7, initial_distribution=TWO.initial_distribution)
    with pytest.raises(ValueError, match="different run"):
        run(changed, "ogda+discounted-smooth", T=T, eta=0.3, **kwargs)


@pytest.mark.parametrize(
    ("finite", "discounted"), [("smooth", "discounted-smooth"), ("smooth-uniform", "discounted-smooth-uniform")]
)
def test_discount_zero_is_the_stage_game_repeated(finite, discounted):
    """With gamma = 0, Q^t = r: the discounted run is the finite-horizon engine's on the one-step
    game (H = 1, whose smooth weights are the discounted update's at k = 1/(1 - 0) = 1), and its
    value estimate is the output policy's value there (the alpha-weighted mixture of the iterates)."""
    game = discounted_game(5, 2, 3, (2, 3), 0.0, spread=False)
    one_step = MarkovGame(game.rewards[None], game.transitions[None], 0)
    # (With the average carried, the program of the literal-reference test's hedge-2p: its shapes, T and flags.)
    got = run(game, f"hedge+{discounted}", T=T, eta=0.4, weighted_average=[T])
    want = run(one_step, f"hedge+{finite}", T=T, eta=0.4)
    for a, b in zip(got.policies, want.policies, strict=True):
        np.testing.assert_allclose(a, b[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.value_estimate, want.value, rtol=0, atol=1e-12)


def test_sampled_feedback_exact_mode_is_full_information_and_draws_are_per_run():
    # (The literal-reference test's hedge-2p program: its game, T, rate and average.)
    full = run(TWO, "hedge+discounted-smooth", T=T, eta=0.3, weighted_average=[T])
    exact = run(TWO, "hedge+discounted-smooth", T=T, eta=0.3, weighted_average=[T], feedback="sampled:exact")
    np.testing.assert_array_equal(exact.value_estimate, full.value_estimate)
    sampled = run(TWO, "hedge+discounted-smooth", T=10, eta=0.3, feedback="sampled:4", seed=3)
    batch = run_batch([TWO, TWO], "hedge+discounted-smooth", T=10, etas=0.3, feedback="sampled:4", seeds=[5, 3])
    np.testing.assert_allclose(batch.run(1).value_estimate, sampled.value_estimate, rtol=0, atol=1e-13)
    assert not np.allclose(batch.run(0).value_estimate, sampled.value_estimate)
    # K next states from every row and K profiles per player and state, at every iteration.
    per_iteration = 4 * 2 * 3 + 4 * 3 * 6
    np.testing.assert_array_equal(sampled.samples_used, per_iteration * np.arange(1, 11))


def test_regret_schedules_and_initial_strategies_run():
    got = run(
        THREE,
        "ogda+discounted-smooth",
        T=12,
        eta=(0.2, 0.3, 0.4),
        step_schedule="sqrt",
        regret=True,
        initial_strategy=[[0.9, 0.1], [0.5, 0.5], np.array([[0.2, 0.8], [1.0, 0.0]])],
    )
    assert got.external_regret.shape == (12, 3) and got.swap_regret.shape == (12, 3)
    assert np.all(got.swap_regret >= got.external_regret - 1e-12)
    np.testing.assert_allclose(got.policies[2][0], [[0.2, 0.8], [1.0, 0.0]], atol=1e-12)
    assert got.step_schedule == "sqrt"


# In stretches the loop carries the last iterate and the average in one array: beside the other
# outputs (the last iterate evaluated, regret rows, sampled draws, alternation, a two-query
# learner, chunks of 9), the average changes none of them, bit for bit, and is the trajectory's.
@pytest.mark.parametrize(
    ("composition", "settings"),
    [
        case("hedge+discounted-smooth", dict(regret=True, feedback="sampled:2", seed=3), default=True, id="hedge-regret-sampled"),
        case("ogda+discounted-smooth", dict(order="alternating"), default=False, id="ogda-alternating"),
        case("extragradient+discounted-smooth-linear", {}, default=False, id="extragradient-linear"),
    ],
)
def test_the_average_in_stretches_changes_nothing_else(composition, settings, monkeypatch):
    _in_stretches(monkeypatch)
    game = discounted_game(5, 2, 3, (2, 3), 0.8)
    prefixes = [2, 9, 10, 40, 61]
    # T = 7 chunks of 9: one compiled chunk per run (a shorter last chunk is a loop of its own); the
    # last prefix lies inside the last chunk, two iterations before its end.
    kwargs = dict(T=63, eta=0.3, last_iterate=[1, 5, 61], chunk_size=9, **settings)
    got = run(game, composition, weighted_average=prefixes, **kwargs)
    plain = run(game, composition, **kwargs)
    for name in ("value_estimate", "last_iterate_value", "last_iterate_best_response", "external_regret", "swap_regret"):
        np.testing.assert_array_equal(getattr(got, name), getattr(plain, name), err_msg=name)
    for ours, theirs in zip(got.policies + got.last_policies, plain.policies + plain.last_policies, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    for row, t in enumerate(prefixes):
        average = discounted_nash_gap(game, _average_from_trajectory(got.policies, got.step_order, t))
        np.testing.assert_allclose(got.weighted_average_value[row], average.value, rtol=0, atol=1e-10)
        np.testing.assert_allclose(got.weighted_average_best_response[row], average.best_response_value, rtol=0, atol=1e-10)
    for ours, theirs in zip(
        got.weighted_average_policies, _average_from_trajectory(got.policies, got.step_order, 63), strict=True
    ):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_refusals_name_the_update_and_the_game():
    with pytest.raises(ValueError, match=r"'stage' value update is defined for finite-horizon games only \(no paper"):
        run(TWO, "hedge+stage", T=3)
    with pytest.raises(ValueError, match=r"'smooth' value update .* 'd1' is a discounted game .* use hedge\+discounted-smooth"):
        run(TWO, "smooth_cce", T=3)
    finite = MarkovGame(TWO.rewards[None], TWO.transitions[None], 0, name="one-step")
    with pytest.raises(ValueError, match=r"defined for discounted games, and game 'one-step' is a finite-horizon game"):
        run(finite, "hedge+discounted-smooth", T=3)
    with pytest.raises(ValueError, match=r"'theory:mao2024': Mao et al. 2024's rates are proved for finite-horizon games"):
        run(TWO, "hedge+discounted-smooth", T=3, eta="theory")
    with pytest.raises(ValueError, match="weighted_average: checkpoints must lie in 1..T = 3"):
        run(TWO, "hedge+discounted-smooth", T=3, weighted_average=[4])
    with pytest.raises(ValueError, match="trajectory_tolerance"):
        run(TWO, "hedge+discounted-smooth", T=3, trajectory_tolerance=0.1)
    other = DiscountedMarkovGame(TWO.rewards, TWO.transitions, 0.5)
    with pytest.raises(ValueError, match="one batch needs one discount"):
        run_batch([TWO, other], "hedge+discounted-smooth", T=3)
    # The uniform averaging's step sizes do not depend on the discount: one batch.
    assert len(run_batch([TWO, other], "hedge+discounted-smooth-uniform", T=3)) == 2
    with pytest.raises(ValueError, match="one batch has games of one kind"):
        run_batch([TWO, finite], "hedge+discounted-smooth", T=3)


def test_sparse_kernels_and_float32_runs():
    """A sparse kernel gives the dense kernel's run (to rounding); a float32 run's iterates are
    evaluated too (their rows renormalised in float64), close to float64's."""
    sparse = TWO.to_sparse()
    a = run(sparse, "hedge+discounted-smooth", T=T, eta=0.3, last_iterate=[T], weighted_average=[T])
    b = run(TWO, "hedge+discounted-smooth", T=T, eta=0.3, last_iterate=[T], weighted_average=[T])
    np.testing.assert_allclose(a.value_estimate, b.value_estimate, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.weighted_average_value, b.weighted_average_value, rtol=0, atol=1e-12)
    c = run(TWO, "hedge+discounted-smooth", T=T, eta=0.3, last_iterate=[T], weighted_average=[T], dtype="float32")
    np.testing.assert_allclose(c.value_estimate, b.value_estimate, rtol=0, atol=1e-4)
    np.testing.assert_allclose(c.weighted_average_best_response, b.weighted_average_best_response, rtol=0, atol=1e-4)


def test_a_users_learner_is_guarded_on_a_discounted_game():
    """A strategy off the simplex stops the run naming the iteration, player and state (no step)."""
    import jax.numpy as jnp

    from markovgames.dynamics import Algorithm, LearnerOutputError
    from markovgames.learners import HEDGE, Learner, LearnerSpec

    def build(axis):
        base = HEDGE.build(axis)

        def play(state, prediction, eta, decay):
            x, state = base.play(state, prediction, eta, decay)
            # Off the simplex once it has seen some utility (from iteration 2 on).
            return x * jnp.where(jnp.sum(jnp.abs(state.cumulative)) > 0.0, 2.0, 1.0), state

        return Learner(base.init, play, base.observe)

    doubling = Algorithm(LearnerSpec("doubling", build), "discounted-smooth")
    with pytest.raises(LearnerOutputError, match=r"at iteration 2, player 0, state 0; a strategy must be"):
        run(TWO, doubling, T=5, eta=0.3)
