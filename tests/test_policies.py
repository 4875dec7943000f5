"""Output policies as objects: kernel, step-by-step play, save/load, summary."""

from __future__ import annotations

import numpy as np
import pytest

import reference_impl as ref
from conftest import make_paper_game
from markovgames.dynamics import run
from markovgames.evaluation import policy_value
from markovgames.policies import IndexChainPolicy, MarkovCorrelatedPolicy, PolicyPlayer


@pytest.mark.parametrize("algorithm,kind", [("smooth_ce", "smooth"), ("stage_cce", "stage")])
@pytest.mark.parametrize("H", [1, 2, 3])
def test_kernel_rows_match_reference(algorithm, kind, H):
    T = 23
    policy = IndexChainPolicy(kind, (np.full((T, H, 1, 2), 0.5),))
    t0, mu = ref.output_policy_kernel(algorithm, T, H)
    dense = np.stack([policy.kernel_row(t) for t in range(1, T + 1)])
    np.testing.assert_allclose(dense, mu[1:, 1:], atol=1e-15)
    np.testing.assert_allclose(policy.start_distribution(), t0[1:], atol=1e-15)


@pytest.mark.parametrize("algorithm", ["smooth_ce", "stage_cce"])
def test_step_by_step_play_matches_exact_value(algorithm):
    game = make_paper_game()
    policy = IndexChainPolicy.from_run(run(game, algorithm, T=60, eta=0.5))
    player = PolicyPlayer(policy, np.random.default_rng(7))
    episodes = 6000
    returns = np.zeros((episodes, 2))
    rng = np.random.default_rng(8)
    for e in range(episodes):
        player.reset()
        s = game.initial_state
        for h in range(game.horizon):
            a = player.act(h, s)
            returns[e] += game.rewards[(h, slice(None), s) + a]
            s = rng.choice(game.num_states, p=game.transitions[(h, s) + a])
    exact = policy_value(game, policy)
    stderr = returns.std(axis=0, ddof=1) / np.sqrt(episodes)
    assert np.all(np.abs(returns.mean(axis=0) - exact) < 4 * stderr)


def test_play_is_reproducible_and_checks_step_order():
    policy = IndexChainPolicy.from_run(run(make_paper_game(), "smooth_cce", T=30))
    draws = []
    for _ in range(2):
        p = PolicyPlayer(policy, 123)
        p.reset()
        draws.append([p.act(0, 0), p.act(1, 1)])
    assert draws[0] == draws[1]
    p = PolicyPlayer(policy, 1)
    p.reset()
    with pytest.raises(ValueError, match="expected step 0"):
        p.act(1, 0)


def test_save_load_round_trip_and_summary(tmp_path):
    result = run(make_paper_game(), "stage_cce", T=50)
    policy = IndexChainPolicy.from_run(result, 40)
    assert policy.T == 40
    path = tmp_path / "policy.npz"
    policy.save(path)
    loaded = IndexChainPolicy.load(path)
    assert loaded.kind == "stage" and loaded.T == 40
    for a, b in zip(policy.policies, loaded.policies, strict=True):
        np.testing.assert_array_equal(a, b)
    summary = policy.summary()
    assert 1 <= summary["support"] <= 40 and summary["effective_support_step0"] >= 1.0
    markov = MarkovCorrelatedPolicy(np.full((2, 2, 2, 2), 0.25), 2)
    markov.save(tmp_path / "m.npz")
    np.testing.assert_array_equal(MarkovCorrelatedPolicy.load(tmp_path / "m.npz").joint, markov.joint)


def test_markov_policy_validation():
    with pytest.raises(ValueError, match="sums to"):
        MarkovCorrelatedPolicy(np.full((1, 1, 2, 2), 0.3), 2)
    with pytest.raises(ValueError, match="negative"):
        MarkovCorrelatedPolicy(np.array([[[[1.5, -0.5], [0.0, 0.0]]]]), 2)
