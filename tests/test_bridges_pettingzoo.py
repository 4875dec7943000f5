"""markovgames.bridges.pettingzoo: the ParallelEnv (PettingZoo's own API and seed tests) and the mediator."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from conftest import needs_extra

needs_extra("pettingzoo", "pettingzoo", "gymnasium")

from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

import markovgames as mg  # noqa: E402
from conftest import FULL_TESTS, make_paper_game, make_random_game  # noqa: E402
from markovgames.bridges.mediator import Mediator, decode_observation, play_episodes  # noqa: E402
from markovgames.bridges.pettingzoo import DiscountedGameParallelEnv, MarkovGameParallelEnv, parallel_env  # noqa: E402
from markovgames.dynamics import run  # noqa: E402
from markovgames.evaluation import policy_value  # noqa: E402
from markovgames.policies import IndexChainPolicy, MarkovCorrelatedPolicy  # noqa: E402
from markovgames.solvers import solve_equilibrium  # noqa: E402

GAMES = {
    "paper": make_paper_game,
    "random3p": lambda: make_random_game(5, 3, 3, 4, (2, 3, 2), initial_state=2),
    "normal_form": mg.games.chicken,
}


@pytest.mark.parametrize("name", sorted(GAMES))
@pytest.mark.parametrize("observation", ["multidiscrete", "dict"])
def test_pettingzoo_parallel_api_and_seed_tests(name, observation):
    game = GAMES[name]()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"pettingzoo\.")  # PettingZoo reports API problems as warnings
        parallel_api_test(MarkovGameParallelEnv(game, observation=observation), num_cycles=50)
        parallel_seed_test(functools.partial(MarkovGameParallelEnv, game, observation=observation), num_cycles=50)


@pytest.mark.parametrize("observation", ["multidiscrete", "dict"])
def test_episode_rules(observation):
    game = GAMES["random3p"]()
    env = parallel_env(game, observation=observation, render_mode="ansi")
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert [env.action_space(a).n for a in env.possible_agents] == [2, 3, 2]
    rng = np.random.default_rng(0)
    for episode in range(10):
        obs, infos = env.reset(seed=episode)
        assert env.agents == env.possible_agents
        h, s = 0, game.initial_state
        for agent in env.agents:
            assert env.observation_space(agent).contains(obs[agent])
            assert decode_observation(obs[agent]) == (0, s) and infos[agent] == {"step": 0, "state": s}
        while env.agents:
            joint = tuple(int(rng.integers(n)) for n in game.num_actions)
            obs, rewards, term, trunc, infos = env.step({a: joint[i] for i, a in enumerate(env.possible_agents)})
            for i, agent in enumerate(env.possible_agents):
                assert rewards[agent] == game.rewards[(h, i, s, *joint)]
                assert infos[agent]["joint_action"] == joint
            h += 1
            s_next = infos["player_0"]["state"]
            assert game.transitions[(h - 1, s, *joint, s_next)] > 0
            s = s_next
            assert all(decode_observation(o) == (h, s) for o in obs.values())
            assert env.state_space.contains(env.state()) and tuple(env.state()) == (h, s)
            assert all(term[a] == (h == game.horizon) for a in term) and not any(trunc.values())
            assert "step" in env.render()
        assert h == game.horizon and env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_step_errors_and_transition_law():
    game = make_paper_game()
    env = MarkovGameParallelEnv(game)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="no action for"):
        env.step({"player_0": 0})
    with pytest.raises(ValueError, match="not in"):
        env.step({"player_0": 0, "player_1": 2})
    with pytest.raises(ValueError, match="observation"):
        MarkovGameParallelEnv(game, observation="box")
    # The first transition follows transitions[0, s_1, a] (matching actions stay w.p. 0.8).
    stays = 0
    for _ in range(4000):
        env.reset()
        _, _, _, _, infos = env.step({"player_0": 1, "player_1": 1})
        stays += infos["player_0"]["state"] == 0
    assert abs(stays / 4000 - 0.8) < 4 * np.sqrt(0.8 * 0.2 / 4000)


def test_same_seed_same_episodes():
    game = make_paper_game()
    policy = solve_equilibrium(game, "ce").policy
    a = play_episodes(MarkovGameParallelEnv(game), Mediator(policy), 200, seed=7).returns
    b = play_episodes(MarkovGameParallelEnv(game), Mediator(policy), 200, seed=7).returns
    c = play_episodes(MarkovGameParallelEnv(game), Mediator(policy), 200, seed=8).returns
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


#: The length of the short runs below: tests/test_bridges_openspiel.py's (its RUN_T), whose runs
#: of chicken and the paper's game are the same compiled programs.
SHARED_T = 8


@pytest.fixture(scope="module")
def paper_output_policies():
    """Output policies of the paper's game: mixtures of `SHARED_T` index chains (the compiled runs
    of tests/test_bridges_openspiel.py)."""
    game = make_paper_game()
    return game, {
        "smooth_ce": IndexChainPolicy.from_run(run(game, "smooth_ce", T=SHARED_T, eta=0.2)),
        "stage_cce": IndexChainPolicy.from_run(run(game, "stage_cce", T=SHARED_T, eta=0.2)),
    }


#: Episodes played through the environment (a Python loop: seconds per 10,000) outside the full
#: mode: a quarter of the full mode's, whose standard errors (about 0.004) are then about 0.008,
#: still below the bound checked below.
DEFAULT_SHARE = 1 if FULL_TESTS else 4


@pytest.mark.parametrize("algorithm, episodes", [("smooth_ce", 20_000), ("stage_cce", 10_000)])
def test_mediator_returns_match_policy_value(paper_output_policies, algorithm, episodes):
    game, policies = paper_output_policies
    policy = policies[algorithm]
    estimate = play_episodes(MarkovGameParallelEnv(game), Mediator(policy), episodes // DEFAULT_SHARE, seed=2024)
    exact = policy_value(game, policy)
    z = estimate.z_scores(exact)
    assert np.all(np.abs(z) < 4), (estimate.mean, estimate.standard_error, exact)
    assert np.all(estimate.standard_error < 0.015)


def test_mediator_plays_markov_correlated_policies():
    game = make_paper_game()
    policy = solve_equilibrium(game, "ce").policy
    estimate = play_episodes(MarkovGameParallelEnv(game, observation="dict"), Mediator(policy), 20_000 // DEFAULT_SHARE, seed=0)
    assert np.all(np.abs(estimate.z_scores(policy_value(game, policy))) < 4)


def test_mediator_hides_the_index_and_deviations_are_applied():
    game = mg.games.chicken()
    # A deterministic product policy: both swerve (action 0).
    policy = MarkovCorrelatedPolicy(np.array([[[[1.0, 0.0], [0.0, 0.0]]]]), 2)
    env = MarkovGameParallelEnv(game)
    follow = play_episodes(env, Mediator(policy), 5, seed=1)
    np.testing.assert_array_equal(follow.returns, np.tile(game.rewards[0, :, 0, 0, 0], (5, 1)))
    # player_0 deviates to "straight" whatever it is told: gets the (straight, swerve) payoff.
    deviate = play_episodes(env, Mediator(policy), 5, seed=1, deviations={"player_0": lambda obs, rec: 1})
    np.testing.assert_array_equal(deviate.returns, np.tile(game.rewards[0, :, 0, 1, 0], (5, 1)))
    with pytest.raises(ValueError, match="unknown agents"):
        play_episodes(env, Mediator(policy), 1, deviations={"player_9": lambda o, r: 0})
    # The index of an output policy is drawn by the mediator and not in any observation.
    out = IndexChainPolicy.from_run(run(game, "smooth_ce", T=SHARED_T, eta=0.2))
    med = Mediator(out, seed=0)
    obs, _ = env.reset(seed=0)
    med.reset()
    rec = med.recommend(obs)
    assert set(rec) == {"player_0", "player_1"} and 1 <= med.index <= SHARED_T
    assert decode_observation(obs["player_0"]) == (0, 0)
    assert all(np.shape(o) == (2,) for o in obs.values())  # observations are (h, s) only


def test_play_episodes_refuses_a_policy_of_another_game_and_bad_arguments():
    """The mediator's policy must have the environment's (N, H, S, A): a policy for a longer game
    once ran silently and returned meaningless means. Bad counts and unknown agents are named."""
    game = make_paper_game()
    env = MarkovGameParallelEnv(game)
    # An output policy of a game with H = 3, S = 4 (uniform rows: what it plays does not matter).
    policy = IndexChainPolicy("smooth", tuple(np.full((5, 3, 4, 2), 0.5) for _ in range(2)))
    with pytest.raises(
        ValueError, match=r"policy has \(N, H, S, A\) = \(2, 3, 4, \(2, 2\)\) but the game has \(2, 2, 2, \(2, 2\)\)"
    ):
        play_episodes(env, Mediator(policy), 10, seed=0)
    own = Mediator(IndexChainPolicy.from_run(run(game, "smooth_cce", T=SHARED_T, eta=0.2)))
    for count in (0, 2.5, "3"):
        with pytest.raises(ValueError, match="num_episodes must be a positive integer"):
            play_episodes(env, own, count, seed=0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"unknown agents \['player_9'\]"):
        env.step({"player_0": 0, "player_1": 0, "player_9": 0})


# ----------------------------------------------------------------------------- discounted games
def _discounted(**kwargs):
    return mg.games.random_discounted_game(2, 3, (2, 3), 0.8, seed_or_rng=7, **kwargs)


@pytest.mark.parametrize("observation", ["multidiscrete", "dict"])
def test_a_discounted_game_passes_the_parallel_api_and_seed_tests(observation):
    game = _discounted()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"pettingzoo\.")
        parallel_api_test(DiscountedGameParallelEnv(game, max_steps=30, observation=observation), num_cycles=50)
        parallel_seed_test(
            functools.partial(DiscountedGameParallelEnv, game, max_steps=30, observation=observation), num_cycles=50
        )


def test_a_discounted_episode_is_truncated_never_terminated_and_pays_the_games_rewards():
    game = _discounted(num_successors=2)  # a sparse kernel: its successors only
    env = parallel_env(game, max_steps=25, render_mode="ansi")
    assert isinstance(env, DiscountedGameParallelEnv) and env.discount == 0.8
    support = game.transitions > 0
    rng = np.random.default_rng(1)
    obs, infos = env.reset(seed=3)
    s = int(obs["player_0"][0])
    for t in range(1, 26):
        joint = tuple(int(rng.integers(n)) for n in game.num_actions)
        obs, rewards, term, trunc, infos = env.step({a: joint[i] for i, a in enumerate(env.possible_agents)})
        assert [rewards[a] for a in env.possible_agents] == [float(game.rewards[(i, s) + joint]) for i in range(2)]
        s_next = int(obs["player_1"][0])
        assert support[(s, *joint, s_next)] and infos["player_0"] == {"step": t, "state": s_next, "joint_action": joint}
        assert not any(term.values()) and all(trunc.values()) == (t == 25)
        assert env.render().startswith(f"step {t}, state {s_next}")
        s = s_next
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"player_0": 0, "player_1": 0})
    with pytest.raises(TypeError, match="DiscountedMarkovGame"):
        DiscountedGameParallelEnv(make_paper_game())
    with pytest.raises(ValueError, match="max_steps"):
        DiscountedGameParallelEnv(game, max_steps=0)


def test_discounted_returns_in_the_env_agree_with_the_exact_value():
    """Monte Carlo against the linear solve: a stationary product policy played in the environment,
    its discounted returns (truncated where gamma^t < 1e-9) average to `discounted_policy_value`
    within four standard errors, from an initial distribution."""
    from markovgames.evaluation import discounted_policy_value

    base = _discounted()
    game = mg.games.DiscountedMarkovGame(base.rewards, base.transitions, 0.8, initial_distribution=[0.2, 0.5, 0.3])
    rng = np.random.default_rng(2)
    policies = [rng.dirichlet(np.ones(n), size=game.num_states) for n in game.num_actions]
    exact = discounted_policy_value(game, policies).value
    steps = int(np.ceil(np.log(1e-9) / np.log(game.discount)))
    env = DiscountedGameParallelEnv(game, max_steps=steps)
    returns = []
    for episode in range(400):
        obs, _ = env.reset(seed=episode)
        total, weight = np.zeros(2), 1.0
        while env.agents:
            s = int(obs["player_0"][0])
            joint = {a: int(rng.choice(len(policies[i][s]), p=policies[i][s])) for i, a in enumerate(env.possible_agents)}
            obs, rewards, *_ = env.step(joint)
            total += weight * np.array([rewards[a] for a in env.possible_agents])
            weight *= game.discount
        returns.append(total)
    returns = np.array(returns)
    error = returns.std(axis=0, ddof=1) / np.sqrt(len(returns))
    assert np.all(np.abs(returns.mean(axis=0) - exact) <= 4 * error), (returns.mean(axis=0), exact, error)
