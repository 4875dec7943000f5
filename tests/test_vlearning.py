"""V-learning (markovgames.dynamics.run_vlearning) and its output policy (VisitChainPolicy).

The literal reference (the same draws, to 1e-12) and the brute-force evaluators are in
test_vlearning_reference.py; here: the kernel against its definition, runs (seeds, batches,
chunks), every prefix's curves against the exact evaluators, files, Monte Carlo through the
PettingZoo mediator and bad input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FULL_TESTS, beyond_default_in_full, make_paper_game, make_random_game, needs_extra
from markovgames.dynamics import _vlearning, run_vlearning, run_vlearning_batch, vlearning_uniforms
from markovgames.evaluation import (
    exact_cce_gap,
    exact_ce_gap,
    monte_carlo_value,
    policy_value,
    prefix_curves,
)
from markovgames.policies import VisitChainPolicy

ALGORITHMS = ("cce-v", "ce-v", "stage-v")
#: Episodes of the runs on games of the paper's shape (N = H = S = 2, two actions each), and of the
#: three-player runs (H = 3, 2 x 3 x 2 actions): those of test_vlearning_reference.py. A compiled
#: round is one program per algorithm, game shape, episode count and batch size (seconds each), so
#: the runs here reuse those programs rather than compile their own.
EPISODES = 120
EPISODES_3P = 80


def alpha_weights(n: int, horizon: int) -> np.ndarray:
    """``alpha_n^l`` for ``l = 1..n`` from the definition: ``alpha_l prod_{m=l+1..n} (1 - alpha_m)``."""
    alpha = (horizon + 1.0) / (horizon + np.arange(1, n + 1))
    out = np.empty(n)
    for lvl in range(1, n + 1):
        out[lvl - 1] = alpha[lvl - 1] * np.prod(1.0 - alpha[lvl:n])
    return out


def stage_targets(n: int, horizon: int) -> np.ndarray:
    """The visits (0-based) the stage kernel draws from after ``n`` visits, from docs/vlearning.md."""
    lengths, ends = [horizon], [horizon]
    while ends[-1] < n:
        lengths.append(((horizon + 1) * lengths[-1]) // horizon)
        ends.append(ends[-1] + lengths[-1])
    complete = [j for j, e in enumerate(ends) if e <= n]
    if not complete:
        return np.arange(n)
    j = complete[-1]
    return np.arange(ends[j] - lengths[j], ends[j])


def dense_kernel(policy: VisitChainPolicy, h: int, s: int) -> np.ndarray:
    """``M[k, k']`` of the draw at step ``h`` in state ``s``, straight from the definition."""
    K = policy.T
    visits = np.flatnonzero(policy.visited[:, h, s])
    M = np.zeros((K, K))
    for k in range(K):
        before = visits[visits < k]
        n = len(before)
        if n == 0:
            M[k, k] = 1.0
        elif policy.kind == "smooth":
            M[k, before] = alpha_weights(n, policy.horizon)
        else:
            targets = before[stage_targets(n, policy.horizon)]
            M[k, targets] = 1.0 / len(targets)
    return M


def random_policy(rng, kind: str, K: int, horizon: int, num_states: int, actions) -> VisitChainPolicy:
    states = rng.integers(0, num_states, (K, horizon))
    states[:, 0] = 0
    played = tuple(rng.dirichlet(np.ones(a), (K, horizon)) for a in actions)
    return VisitChainPolicy.from_episodes(kind, num_states, states, played)


@pytest.mark.parametrize("kind", ["smooth", "stage"])
def test_kernel_push_pull_and_sampling_follow_the_definition(kind):
    rng = np.random.default_rng(3)
    policy = random_policy(rng, kind, 40, 3, 3, (2, 2))
    kernel = policy.kernel
    for h in range(3):
        for s in range(3):
            M = dense_kernel(policy, h, s)
            b = rng.random((40, 2))
            g = rng.random((40, 3))
            np.testing.assert_allclose(kernel.push_at(h, s, b), M.T @ b, rtol=0, atol=1e-13)
            np.testing.assert_allclose(kernel.pull_at(h, s, g), M @ g, rtol=0, atol=1e-13)
    # Sampling: 200,000 draws from the last index at (1, 1); each frequency within 5 standard errors.
    M = dense_kernel(policy, 1, 1)
    draws = kernel.sample_next_at(1, np.ones(200_000, np.int64), np.full(200_000, 40), np.random.default_rng(0))
    freq = np.bincount(draws - 1, minlength=40) / 200_000
    se = np.sqrt(M[-1] * (1 - M[-1]) / 200_000) + 1e-12
    assert np.all(np.abs(freq - M[-1]) <= 5 * se)


def test_runs_are_reproducible_batched_chunked_and_fed_draws(monkeypatch):
    game = make_random_game(5, 2, 2, 2, (2, 2))
    # (A batch of two cce-v runs of 120 episodes: the program of test_sweep_bandit.py's batches.)
    one = run_vlearning(game, "cce-v", EPISODES, seed=11)
    batch = run_vlearning_batch(game, "cce-v", EPISODES, [4, 11])
    fed = run_vlearning(game, "cce-v", EPISODES, draws=vlearning_uniforms(11, EPISODES, game))
    # 120 episodes in 8 compiled calls of 16 episodes (the last one padded: 8 played): one program,
    # the short chunks of the next test.
    monkeypatch.setattr(_vlearning, "_SHORT_CHUNK", 16)
    monkeypatch.setattr(_vlearning, "_CHUNK", 16)
    assert _vlearning._chunks(EPISODES, 1) == [(16, 16)] * 7 + [(8, 16)]
    chunked = run_vlearning(game, "cce-v", EPISODES, seed=11)
    for other in (batch[1], fed, chunked):
        np.testing.assert_array_equal(other.states, one.states)
        np.testing.assert_array_equal(other.actions, one.actions)
        for a, b in zip(other.played, one.played, strict=True):
            if other is batch[1]:
                # A batch is one vmap: XLA may fuse the arithmetic differently (rounding only).
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
            else:
                np.testing.assert_array_equal(a, b)
    assert not np.array_equal(batch[0].actions, one.actions)
    assert one.seed == 11 and fed.seed is None and one.samples_used == 2 * EPISODES
    np.testing.assert_array_equal(one.counts.sum(axis=1), [EPISODES, EPISODES])


def test_bonus_eta_and_ix_are_arguments_of_the_compiled_round_not_constants():
    # Another value runs the same compiled program: a sweep over them compiles once.
    # (hedge+smooth on bandit:4, 12 rounds, on a game of the paper's shape: the program of
    # test_bandit_feedback.py's rounds of M episodes and of the command line's tests.)
    game = make_random_game(6, 2, 2, 2, (2, 2))
    base = run_vlearning(game, "hedge+smooth", 48, seed=3, feedback="bandit:4", bonus=0.0, eta=0.1, ix=0.05)
    compiled = _vlearning._chunk_batch._cache_size()
    other = run_vlearning(game, "hedge+smooth", 48, seed=3, feedback="bandit:4", bonus=0.01, eta=0.3, ix=0.2)
    assert _vlearning._chunk_batch._cache_size() == compiled
    # ... and the values reach it: the same draws, other strategies and value estimates.
    np.testing.assert_array_equal(other.states[0], base.states[0])
    assert not np.allclose(other.played[0], base.played[0])
    assert not np.allclose(other.value_estimates[0], base.value_estimates[0])
    assert (other.bonus, other.eta, other.ix) == (0.01, 0.3, 0.2)


def test_another_number_of_episodes_compiles_nothing(monkeypatch):
    # Chunks have two lengths whatever the run's (the last one padded): a run of another length
    # reuses the compiled rounds, and its padding changes nothing (a longer run's prefix is the run).
    monkeypatch.setattr(_vlearning, "_SHORT_CHUNK", 8)
    monkeypatch.setattr(_vlearning, "_CHUNK", 16)
    assert _vlearning._chunks(37, 1) == [(16, 16), (16, 16), (5, 8)]
    assert _vlearning._chunks(10, 2) == [(8, 8), (2, 4)]
    # The runs: short chunks of 16 episodes and long ones of 512 (cce-v on a game of the paper's
    # shape: the programs of the test above, its chunked run and its single ones; the test above
    # plays many chunks in one run).
    monkeypatch.setattr(_vlearning, "_SHORT_CHUNK", 16)
    monkeypatch.setattr(_vlearning, "_CHUNK", 512)
    game = make_random_game(6, 2, 2, 2, (2, 2))
    short = run_vlearning(game, "cce-v", 5, seed=2)  # one short chunk, 11 rounds of padding
    long = run_vlearning(game, "cce-v", 37, seed=2)  # one long chunk, 475 rounds of padding
    compiled = _vlearning._chunk_batch._cache_size()
    again = run_vlearning(game, "cce-v", 23, seed=2)  # long
    assert _vlearning._chunk_batch._cache_size() == compiled
    assert [_vlearning._chunks(K, 1) for K in (5, 37, 23)] == [[(5, 16)], [(37, 512)], [(23, 512)]]
    for run in (short, again):
        K = run.episodes
        np.testing.assert_array_equal(run.states, long.states[:K])
        np.testing.assert_array_equal(run.actions, long.actions[:K])
        for a, b in zip(run.played, long.played, strict=True):
            np.testing.assert_array_equal(a, b[:K])


def test_on_the_cpu_the_rounds_inputs_are_made_by_numpy(monkeypatch):
    # jax.numpy outside a compiled function compiles a small program per operation and shape: 19
    # of the 23 programs of a first `vlearn` were the initial state, the uniforms stacked and
    # reshaped, and the padding's mask. On the CPU they are NumPy arrays (the uniforms' views).
    import jax

    if jax.default_backend() != "cpu":
        pytest.skip("off the CPU the rounds' inputs are made on the device")
    real, calls = _vlearning._chunk_batch, []

    def recording(spec, params, rewards, transitions, lengths, state, ua, us, active):
        calls.append([ua, us, active, *(jax.tree.leaves(state) if not calls else [])])
        return real(spec, params, rewards, transitions, lengths, state, ua, us, active)

    monkeypatch.setattr(_vlearning, "_chunk_batch", recording)
    game = make_random_game(5, 2, 2, 2, (2, 2))  # (the programs of the test above)
    drawn = run_vlearning_batch(game, "cce-v", EPISODES, [4, 11])
    fed = run_vlearning(game, "cce-v", EPISODES, draws=vlearning_uniforms(11, EPISODES, game))
    assert len(calls) == 2 * len(_vlearning._chunks(EPISODES, 1))
    for inputs in calls:
        assert all(type(x) is np.ndarray for x in inputs), [type(x) for x in inputs]
    np.testing.assert_array_equal(fed.actions, drawn[1].actions)


#: ce-v and stage-v in the full mode (a compiled round each at this shape, seconds): the three
#: algorithms share the record (states, actions, rewards, estimates) that this test checks;
#: their bandits' distributions at this shape equal the literal reference's to 1e-12 by default
#: (test_vlearning_reference.py, "3p-h3"), and each plays valid distributions on the paper's
#: game below (test_prefix_curves_equal_the_exact_evaluators: its exact evaluators read them).
@pytest.mark.parametrize("algorithm", beyond_default_in_full(ALGORITHMS, {"cce-v"}))
def test_a_run_plays_its_bandits_distributions(algorithm):
    game = make_random_game(8, 3, 3, 2, (2, 3, 2))
    result = run_vlearning(game, algorithm, EPISODES_3P, seed=1)
    for i, p in enumerate(result.played):
        assert p.shape == (EPISODES_3P, 3, game.num_actions[i])
        assert np.all(p >= 0) and np.allclose(p.sum(axis=-1), 1.0, atol=1e-12)
        assert np.all(p[np.arange(EPISODES_3P)[:, None], np.arange(3), result.actions[..., i]] > 0)
    # Rewards are the game's at the visited states and the actions played.
    h, k = 1, 77
    a = tuple(result.actions[k, h])
    np.testing.assert_array_equal(result.rewards[k, h], game.rewards[h][(slice(None), result.states[k, h]) + a])
    for v, h in ((v, h) for v in result.value_estimates for h in range(3)):
        assert np.all(v[h] <= 3 - h + 1e-12) and np.all(v[h] >= 0)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_prefix_curves_equal_the_exact_evaluators(algorithm):
    game = make_paper_game()
    result = run_vlearning(game, algorithm, EPISODES, seed=2)
    prefixes = [1, 2, 13, EPISODES]
    curves = prefix_curves(game, result.policy, prefixes)
    for j, K in enumerate(prefixes):
        policy = result.policy.prefix(K)
        value = policy_value(game, policy)
        ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
        np.testing.assert_allclose(curves.value[j], value, rtol=0, atol=1e-12)
        np.testing.assert_allclose(curves.certified_ce[j], ce.certified_bound, rtol=0, atol=1e-12)
        np.testing.assert_allclose(curves.certified_cce[j], cce.certified_bound, rtol=0, atol=1e-12)
        assert -1e-12 <= ce.gap <= curves.certified_ce_gap[j] + 1e-12
        assert cce.gap <= curves.certified_cce_gap[j] + 1e-12


def test_one_episode_plays_uniformly():
    """After one episode every count before it is 0: the output policy is the uniform product policy."""
    game = make_paper_game()
    policy = run_vlearning(game, "cce-v", 1, seed=0).policy
    uniform = 0.25 * game.rewards.sum(axis=(-1, -2))  # (H, N, S): expected reward of uniform play
    # Step 0 from state 0, then the uniform chain's next state.
    p1 = game.transitions[0, 0].mean(axis=(0, 1))
    np.testing.assert_allclose(policy_value(game, policy), uniform[0, :, 0] + uniform[1] @ p1, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["smooth", "stage"]), K=st.integers(1, 25))
def test_property_gaps_are_ordered(seed, kind, K):
    """For any visit-chain policy: 0 <= exact CE gap <= certified, exact CCE gap <= certified."""
    rng = np.random.default_rng(seed)
    game = make_random_game(seed, 2, 2, 2, (2, 2))
    policy = random_policy(rng, kind, K, 2, 2, (2, 2))
    ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
    assert ce.gap >= -1e-12
    assert np.all(ce.per_player <= ce.certified_bound - ce.value + 1e-12)
    assert np.all(cce.per_player <= cce.certified_bound - cce.value + 1e-12)


def test_monte_carlo_and_the_mediator_agree_with_the_exact_values():
    needs_extra("pettingzoo", "pettingzoo", "gymnasium")
    from markovgames.bridges.mediator import Mediator, play_episodes
    from markovgames.bridges.pettingzoo import MarkovGameParallelEnv

    game = make_paper_game()
    policy = run_vlearning(game, "stage-v", EPISODES, seed=5).policy
    # Episodes: a quarter of the full mode's outside it (the mediator plays them in a Python loop).
    share = 1 if FULL_TESTS else 4
    exact = policy_value(game, policy)
    estimate = play_episodes(MarkovGameParallelEnv(game), Mediator(policy), 10_000 // share, seed=9)
    assert np.all(np.abs(estimate.z_scores(exact)) < 4)
    # The best strategy modification, played through the mediator by player 0.
    ce = exact_ce_gap(game, policy)
    table = ce.modifications[0]  # (H, S, A_0): the played action per recommendation

    def modified(observation, recommended):
        h, s = int(observation["step"]), int(observation["state"])
        return int(table[h, s, recommended])

    env = MarkovGameParallelEnv(game, observation="dict")
    deviating = play_episodes(env, Mediator(policy), 10_000 // share, seed=10, deviations={"player_0": modified})
    assert abs(deviating.z_scores(ce.deviation_value)[0]) < 4
    # The best CCE deviation (history-dependent), simulated.
    cce = exact_cce_gap(game, policy)
    mc = monte_carlo_value(game, policy, 20_000 // share, seed=12, deviation=cce.deviations[1])
    assert abs(mc.z_scores(cce.best_response_value)[1]) < 4


def test_policy_files_round_trip_and_tampering_is_refused(tmp_path):
    game = make_random_game(2, 2, 2, 2, (2, 2))
    policy = run_vlearning(game, "stage-v", EPISODES, seed=0).policy
    path = tmp_path / "policy.npz"
    policy.save(path)
    back = VisitChainPolicy.load(path)
    assert back.kind == "stage" and back.num_states == 2 and back.T == EPISODES
    np.testing.assert_array_equal(back.visited, policy.visited)
    np.testing.assert_allclose(policy_value(game, back), policy_value(game, policy), rtol=0, atol=0)
    bad = dict(np.load(path))
    bad["visited"] = bad["visited"].astype(np.int64)
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match=r"bad\.npz: visited: expected a boolean array"):
        VisitChainPolicy.load(tmp_path / "bad.npz")
    bad = dict(np.load(path))
    bad["policy_1"] = 2.0 * bad["policy_1"]
    np.savez(tmp_path / "scaled.npz", **bad)
    with pytest.raises(ValueError, match=r"scaled\.npz: policies\[1\]: every row must be a probability vector"):
        VisitChainPolicy.load(tmp_path / "scaled.npz")
    bad = dict(np.load(path))
    bad["format"] = np.asarray("index-chain")
    np.savez(tmp_path / "other.npz", **bad)
    with pytest.raises(ValueError, match="not a V-learning output policy"):
        VisitChainPolicy.load(tmp_path / "other.npz")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"algorithm": "cce_v"}, r"unknown algorithm 'cce_v' \(did you mean 'cce-v'\?\)"),
        # A composition's own error names the part that is wrong (not "did you mean 'stage-v'").
        ({"algorithm": "mwu+stage"}, r"^unknown learner 'mwu' \(did you mean 'hedge'\?\)"),
        ({"episodes": 0}, "episodes must be a positive integer"),
        ({"episodes": 2.5}, "episodes must be a positive integer"),
        ({"bonus": -1.0}, "bonus must be a finite number >= 0"),
        ({"bonus": float("nan")}, "bonus must be a finite number >= 0"),
        ({"seed": -3}, "a seed must be a non-negative integer"),
        ({"episodes": 10**12}, "the run's record would take"),
        # A composition's rate: the limit of run's (max_learning_rate over the rounds, 5 + H = 7).
        ({"algorithm": "hedge+smooth", "eta": 1e308}, r"^eta: 1e\+308 is too large for 5 rounds in float64; at most 5.15e\+15"),
        ({"algorithm": "hedge+smooth", "eta": 5.2e15}, "eta: 5.2e.15 is too large for 5 rounds"),
        ({"algorithm": "hedge+smooth", "eta": float("inf")}, "eta must be a finite number > 0"),
        ({"algorithm": "hedge+smooth", "ix": -1.0}, "ix must be 'decaying' or a finite number >= 0"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    game = make_paper_game()
    args = {"algorithm": "cce-v", "episodes": 5} | kwargs
    with pytest.raises(ValueError, match=message):
        run_vlearning(game, args.pop("algorithm"), args.pop("episodes"), **args)


def test_bad_draws_and_policies_are_refused():
    game = make_paper_game()
    ua, us = (x[:4] for x in vlearning_uniforms(0, EPISODES, game))  # (the 120 episodes' program)
    with pytest.raises(ValueError, match=r"draws: expected shapes \(4, 2, 2\) and \(4, 2\)"):
        run_vlearning(game, "cce-v", 4, draws=(ua[:3], us))
    with pytest.raises(ValueError, match=r"in \[0, 1\)"):
        run_vlearning(game, "cce-v", 4, draws=(ua + 1.0, us))
    states = np.zeros((3, 2), np.int64)
    half = (np.full((3, 2, 2), 0.5),) * 2
    with pytest.raises(ValueError, match="kind must be one of"):
        VisitChainPolicy.from_episodes("smooth-cubic", 2, states, half)
    with pytest.raises(ValueError, match="probability vector"):
        VisitChainPolicy.from_episodes("smooth", 2, states, (np.full((3, 2, 2), 0.6),) * 2)
    with pytest.raises(ValueError, match=r"played\[1\]: expected shape"):
        VisitChainPolicy.from_episodes("smooth", 2, states, (half[0], np.full((2, 2, 2), 0.5)))
    with pytest.raises(ValueError, match=r"states: every entry must be a state in 0\.\.1"):
        VisitChainPolicy.from_episodes("smooth", 2, states + 2, half)
    with pytest.raises(ValueError, match="episodes_per_round: 2 does not divide the 3 episodes"):
        VisitChainPolicy.from_episodes("smooth", 2, states, half, episodes_per_round=2)
    with pytest.raises(ValueError, match="prefix K must be an integer in 1..3"):
        VisitChainPolicy.from_episodes("smooth", 2, states, half).prefix(4)


def test_sizes_that_would_exhaust_memory_are_refused_before_allocating(monkeypatch):
    from markovgames.evaluation import _prefix_curves
    from markovgames.policies import _visit_chain

    game = make_paper_game()
    result = run_vlearning(game, "cce-v", EPISODES, seed=0)
    policy = result.policy
    monkeypatch.setattr(_prefix_curves, "MAX_DENSE_ENTRIES", 1000)
    # K x S x joint actions x S = 120 x 2 x 4 x 2; K x H x S x (1 + A_0 + A_1) = 120 x 2 x 2 x 5.
    with pytest.raises(ValueError, match=r"prefix_curves needs arrays of 1,920 entries"):
        prefix_curves(game, policy)
    monkeypatch.setattr(_visit_chain, "MAX_DENSE_ENTRIES", 1000)
    with pytest.raises(ValueError, match=r"dense form of this output policy needs 2,400 entries"):
        VisitChainPolicy.from_episodes("smooth", 2, result.states, result.played)
    monkeypatch.setattr(_visit_chain, "MAX_DENSE_ENTRIES", 300)
    with pytest.raises(ValueError, match=r"visit counts of this output policy need 396 entries"):
        policy.prefix(99).kernel.push_at(0, 0, np.ones(99))


def test_the_docs_example_runs():
    """docs/vlearning.md's first example, at a smaller size (the same calls; 120 episodes, a
    program the runs above compile)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "vlearning.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert "run_vlearning" in code and "prefix_curves" in code
    small = code.replace("20_000", "120").replace("2_000", "12")
    assert small != code
    exec(small, {})
