"""Monte Carlo evaluation: sampled episodes agree with the exact values (docs/gaps.md, values).

With fixed seeds, the exact value of the policy, of the maximising CE modification and of the best
CCE deviation each lie within 4 standard errors of their Monte Carlo estimates; the index chain is
sampled with the right law; sampling is vectorised (1e5 episodes of the paper game in well under a
few seconds) and reproducible.
"""

from __future__ import annotations

import numpy as np
import pytest

import reference_impl as ref
from markovgames import MarkovGame
from markovgames.dynamics import run
from markovgames.evaluation import (
    HistoryDeviation,
    IndexKernel,
    MarkovDeviation,
    MonteCarloEstimate,
    StrategyModification,
    exact_cce_gap,
    exact_ce_gap,
    monte_carlo_value,
    policy_value,
    sample_episodes,
)
from markovgames.policies import IndexChainPolicy, MarkovCorrelatedPolicy

Z_MAX = 4.0
EPISODES = 100_000
T_RUN = 12  # the same T as the other evaluation tests: one compilation per (shape, algorithm)


def random_game(seed: int, n: int, horizon: int, num_s: int, acts) -> MarkovGame:
    rng = np.random.default_rng(seed)
    acts = tuple(acts)
    return MarkovGame(rng.random((horizon, n, num_s, *acts)), rng.dirichlet(np.ones(num_s), size=(horizon, num_s, *acts)), 0)


def random_index_policy(seed, game, T, kind, concentration=0.5):
    rng = np.random.default_rng(seed)
    return IndexChainPolicy(
        kind,
        tuple(rng.dirichlet(np.full(a, concentration), size=(T, game.horizon, game.num_states)) for a in game.num_actions),
    )


def assert_within(estimate: MonteCarloEstimate, exact, players=None):
    z = np.abs(estimate.z_scores(exact))
    idx = slice(None) if players is None else players
    assert np.all(z[idx] <= Z_MAX), (estimate.mean, np.asarray(exact), estimate.stderr, z)


def check_policy_and_deviations(game, policy, seed):
    """Policy value, every player's CE modification and CCE deviation, against Monte Carlo."""
    ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
    assert_within(monte_carlo_value(game, policy, EPISODES, seed), policy_value(game, policy))
    for i in range(game.num_players):
        est = monte_carlo_value(game, policy, EPISODES, seed + 1 + i, deviation=ce.modification_for(i))
        assert_within(est, ce.deviation_value, players=i)
        est = monte_carlo_value(game, policy, EPISODES, seed + 101 + i, deviation=cce.deviation_for(i))
        assert_within(est, cce.best_response_value, players=i)
    return ce, cce


@pytest.mark.parametrize("algorithm", ["smooth_ce", "stage_cce"])
def test_monte_carlo_agrees_on_paper_game_runs(paper_game, algorithm):
    result = run(paper_game, algorithm, T_RUN, 0.2)
    policy = IndexChainPolicy.from_run(result)
    check_policy_and_deviations(paper_game, policy, seed=10)


@pytest.mark.parametrize("kind", ["smooth", "smooth-uniform", "stage"])
def test_monte_carlo_agrees_on_random_three_player_policy(kind):
    # Random, far-from-equilibrium policies: the best modification and deviation are far from the
    # identity / the recommendations, so this checks that they really achieve the exact values.
    game = random_game(3, 3, 2, 2, (2, 3, 2))
    policy = random_index_policy(4, game, 40, kind)
    ce, cce = check_policy_and_deviations(game, policy, seed=20)
    assert ce.gap > 0.05
    # The CCE deviation uses the history: the others' step-0 actions change the deviator's belief.
    dev = cce.deviation
    assert isinstance(dev, HistoryDeviation) and len(dev.actions) > 1


def test_monte_carlo_agrees_on_markov_policy():
    game = random_game(5, 2, 2, 2, (3, 2))
    rng = np.random.default_rng(6)
    joint = rng.dirichlet(np.full(6, 0.7), size=(2, 2)).reshape(2, 2, 3, 2)
    policy = MarkovCorrelatedPolicy(joint, 2)
    ce, cce = check_policy_and_deviations(game, policy, seed=30)
    assert isinstance(cce.deviation, MarkovDeviation)


def test_index_chain_sampling_law():
    # Empirical law of j ~ mu_t against the dense reference kernel, for both kinds.
    for kind, alg in (("smooth", "smooth_ce"), ("stage", "stage_cce")):
        T, H = 9, 2
        kernel = IndexKernel(kind, T, H)
        _, mu = ref.output_policy_kernel(alg, T, H)
        rng = np.random.default_rng(0)
        for t in (1, 2, 5, 9):
            draws = kernel.sample_next(np.full(200_000, t), rng)
            freq = np.bincount(draws, minlength=T + 1)[1:] / draws.size
            se = np.sqrt(mu[t, 1:] * (1 - mu[t, 1:]) / draws.size)
            assert np.all(np.abs(freq - mu[t, 1:]) <= 5 * se + 1e-12), (kind, t, freq, mu[t, 1:])
        starts = kernel.sample_start(1000, rng)
        assert starts.min() >= 1 and starts.max() <= T
        if kind == "smooth":
            assert np.all(starts == T)


def test_episodes_structure_and_modification_applied(paper_game):
    policy = random_index_policy(1, paper_game, 30, "stage")
    table = np.zeros((2, 2, 2), dtype=int)
    table[..., 0] = 1  # swap the two actions everywhere
    table[..., 1] = 0
    mod = StrategyModification(0, table)
    ep = sample_episodes(paper_game, policy, 5000, np.random.default_rng(3), deviation=mod)
    assert ep.states.shape == (5000, 3) and ep.actions.shape == (5000, 2, 2) and len(ep) == 5000
    assert np.all(ep.states[:, 0] == 0)
    assert np.all(ep.actions[:, :, 0] == 1 - ep.recommended[:, :, 0])
    assert np.all(ep.actions[:, :, 1] == ep.recommended[:, :, 1])
    assert ep.indices.shape == (5000, 2) and ep.indices.min() >= 1 and ep.indices.max() <= 30
    assert ep.deviator == 0
    np.testing.assert_allclose(ep.returns, ep.rewards.sum(axis=1))


def test_reproducible_whatever_the_batches(paper_game):
    policy = random_index_policy(2, paper_game, 10_000, "smooth", concentration=1.0)
    a = monte_carlo_value(paper_game, policy, EPISODES, seed=123)
    b = monte_carlo_value(paper_game, policy, EPISODES, seed=123, batch_size=EPISODES)
    c = monte_carlo_value(paper_game, policy, EPISODES, seed=np.random.default_rng(123))
    np.testing.assert_array_equal(a.mean, b.mean)  # batches draw from one generator in sequence
    np.testing.assert_array_equal(a.mean, c.mean)
    assert a.seed == 123 and c.seed is None and a.num_episodes == EPISODES
    assert_within(a, policy_value(paper_game, policy))


def test_progress_is_called_after_every_batch_with_the_episodes_done(paper_game):
    policy = random_index_policy(2, paper_game, 50, "smooth", concentration=1.0)
    done: list[int] = []
    with_progress = monte_carlo_value(paper_game, policy, 1000, seed=7, batch_size=300, progress=done.append)
    assert done == [300, 600, 900, 1000]
    np.testing.assert_array_equal(with_progress.mean, monte_carlo_value(paper_game, policy, 1000, seed=7, batch_size=300).mean)


def test_rejects_bad_deviation(paper_game):
    policy = random_index_policy(2, paper_game, 5, "smooth")
    with pytest.raises(ValueError):
        sample_episodes(paper_game, policy, 10, 0, deviation=StrategyModification(0, np.zeros((2, 2, 3), int)))
    with pytest.raises(ValueError):
        sample_episodes(paper_game, policy, 10, 0, deviation=MarkovDeviation(5, np.zeros((2, 2), int)))
    with pytest.raises(TypeError):
        sample_episodes(paper_game, policy, 10, 0, deviation="swap")
    with pytest.raises(KeyError, match="no action for the sampled history"):
        sample_episodes(paper_game, policy, 100, 0, deviation=HistoryDeviation(0, {(0,): 1}))
