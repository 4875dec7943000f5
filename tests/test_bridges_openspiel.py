"""markovgames.bridges.openspiel: export, import (round trip), correlation devices, and OpenSpiel's CE/CCE distances."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from conftest import make_paper_game, make_random_game, needs_extra

pyspiel = needs_extra("openspiel", "pyspiel")

import markovgames as mg  # noqa: E402
from markovgames.bridges import openspiel as osb  # noqa: E402
from markovgames.dynamics import run  # noqa: E402
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, policy_value  # noqa: E402
from markovgames.policies import IndexChainPolicy, MarkovCorrelatedPolicy  # noqa: E402
from markovgames.solvers import solve_equilibrium  # noqa: E402

RUN_T = 8  # one compiled run per (game shape, algorithm); shorter outputs are its prefixes


@functools.cache
def _run(game_name: str, algorithm: str):
    return run(GAMES[game_name](), algorithm, T=RUN_T, eta=0.2)


def output_policy(game_name: str, algorithm: str, T: int) -> IndexChainPolicy:
    """The output policy after T <= RUN_T iterations of a run with eta = 0.2."""
    return IndexChainPolicy.from_run(_run(game_name, algorithm), T)


def sparse_random_game(seed: int) -> mg.MarkovGame:
    """3 players, H = 2, S = 3, some zero transition probabilities, non-zero initial state."""
    rng = np.random.default_rng(seed)
    acts = (2, 3, 2)
    rewards = rng.random((2, 3, 3, *acts))
    trans = rng.dirichlet(np.ones(3), size=(2, 3, *acts))
    trans[..., 0] = np.where(rng.random(trans.shape[:-1]) < 0.4, 0.0, trans[..., 0])
    trans /= trans.sum(axis=-1, keepdims=True)
    return mg.MarkovGame(rewards, trans, initial_state=2, name="sparse")


def uniform_policy(game: mg.MarkovGame) -> MarkovCorrelatedPolicy:
    joint = np.full((game.horizon, game.num_states, *game.num_actions), 1.0 / game.num_joint_actions)
    return MarkovCorrelatedPolicy(joint, game.num_players)


def openspiel_uniform_value(os_game) -> np.ndarray:
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import expected_game_score

    return np.asarray(expected_game_score.policy_value(os_game.new_initial_state(), os_policy.UniformRandomPolicy(os_game)))


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------
def test_exported_game_type_and_info():
    game = make_paper_game()
    os_game = osb.export_game(game)
    gt = os_game.get_type()
    assert gt.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    assert gt.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert gt.utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert gt.reward_model == pyspiel.GameType.RewardModel.REWARDS
    assert os_game.num_players() == 2
    assert os_game.num_distinct_actions() == 2
    assert os_game.max_chance_outcomes() == 2
    assert os_game.max_game_length() == 2
    assert os_game.markov_game == game
    # Registered: loadable by name, also inside OpenSpiel's game transforms.
    name = gt.short_name
    assert pyspiel.load_game(name).markov_game == game
    assert "turn_based_simultaneous_game" in str(pyspiel.load_game(f"turn_based_simultaneous_game(game={name}())"))
    # An equal game exports to the same registered game; a taken name is refused for another game.
    assert osb.export_game(make_paper_game()).get_type().short_name == name
    assert osb.export_game(mg.games.paper_game()).get_type().short_name != name  # another description
    osb.export_game(game, short_name="markovgames_test_named_paper")
    with pytest.raises(ValueError, match="already registered"):
        osb.export_game(mg.games.chicken(), short_name="markovgames_test_named_paper")
    with pytest.raises(ValueError, match="taken"):
        osb.export_game(game, short_name="kuhn_poker")


def test_an_episode_follows_the_arrays():
    game = sparse_random_game(1)
    os_game = osb.export_game(game)
    rng = np.random.default_rng(0)
    for _ in range(20):
        st = os_game.new_initial_state()
        total = np.zeros(3)
        h, s = 0, game.initial_state
        while not st.is_terminal():
            assert st.is_simultaneous_node()
            assert osb.markov_state_key(st) == s and st.step == h
            assert [st.legal_actions(p) for p in range(3)] == [list(range(a)) for a in game.num_actions]
            joint = tuple(int(rng.integers(a)) for a in game.num_actions)
            st.apply_actions(list(joint))
            r = game.rewards[(h, slice(None), s, *joint)]
            np.testing.assert_array_equal(st.rewards(), r)
            total += r
            assert st.is_chance_node()
            outcomes = dict(st.chance_outcomes())
            row = game.transitions[(h, s, *joint)]
            assert outcomes == {k: row[k] for k in range(3) if row[k] > 0}
            s = int(rng.choice(3, p=row))
            st.apply_action(s)
            h += 1
            np.testing.assert_array_equal(st.rewards(), r)  # reported until the next move
        assert h == game.horizon and st.markov_state == s
        np.testing.assert_allclose(st.returns(), total, rtol=0, atol=1e-12)


def test_openspiel_tools_accept_the_exported_game():
    game = make_paper_game()
    os_game = osb.export_game(game)
    pyspiel.random_sim_test(os_game, num_sims=10, serialize=False, verbose=False)
    pyspiel.random_sim_test(pyspiel.convert_to_turn_based(os_game), num_sims=10, serialize=False, verbose=False)
    # OpenSpiel's exact policy evaluation agrees with ours.
    np.testing.assert_allclose(openspiel_uniform_value(os_game), policy_value(game, uniform_policy(game)), atol=1e-12)
    # The RL environment: summed per-step rewards are the returns.
    from open_spiel.python import rl_environment

    env = rl_environment.Environment(os_game, seed=3)
    ts = env.reset()
    total = np.zeros(2)
    while not ts.last():
        ts = env.step([0, 1])
        total += ts.rewards
    np.testing.assert_allclose(total, env.get_state.returns())
    # Strings and tensors: the information state carries the history, the observation (h, s).
    st = os_game.new_initial_state()
    st.apply_actions([1, 0])
    st.apply_action(1)
    assert st.information_state_string(0) == "markovgames player=0 step=1 state=1 history=0:1,0"
    assert st.observation_string(1) == "step=1 state=1"
    assert len(st.information_state_tensor(0)) == os_game.information_state_tensor_size() == 3 + 2 + 4 + 8
    obs = np.asarray(st.observation_tensor(0))
    np.testing.assert_array_equal(obs, [0, 1, 0, 0, 1])


# ---------------------------------------------------------------------------------------------
# Import and the round trip
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "game",
    [make_paper_game(), sparse_random_game(2), make_random_game(4, 2, 3, 2, (2, 2), initial_state=1), mg.games.shapley()],
    ids=["paper", "sparse3p", "random", "shapley"],
)
def test_round_trip_gives_the_same_arrays(game):
    os_game = osb.export_game(game)
    imp = osb.import_game(os_game, osb.markov_state_key, roots=osb.exported_roots(os_game), state_order=range(game.num_states))
    assert imp.rescaling.is_identity
    assert imp.reachable.all()
    assert imp.state_keys == tuple(range(game.num_states))
    assert imp.game.initial_state == game.initial_state
    np.testing.assert_array_equal(imp.game.rewards, game.rewards)
    np.testing.assert_array_equal(imp.game.transitions, game.transitions)
    assert imp.action_ids == tuple(tuple(range(a)) for a in game.num_actions)


def test_import_from_the_initial_state_alone_agrees_where_reachable():
    game = sparse_random_game(3)
    os_game = osb.export_game(game)
    imp = osb.import_game(os_game, osb.markov_state_key, state_order=range(game.num_states))
    assert imp.reachable[0].tolist() == [s == game.initial_state for s in range(3)]
    for h, s in zip(*np.nonzero(imp.reachable), strict=True):
        np.testing.assert_array_equal(imp.game.rewards[h, :, s], game.rewards[h, :, s])
        np.testing.assert_array_equal(imp.game.transitions[h, s], game.transitions[h, s])
    # Unreachable entries do not matter: the same values and equilibria.
    np.testing.assert_allclose(
        policy_value(imp.game, uniform_policy(imp.game)), policy_value(game, uniform_policy(game)), atol=1e-12
    )
    a = solve_equilibrium(imp.game, "ce").value
    b = solve_equilibrium(game, "ce").value
    np.testing.assert_allclose(a, b, atol=1e-7)
    # Without verification one OpenSpiel state per (step, key) is expanded: fewer nodes, same game.
    quick = osb.import_game(os_game, osb.markov_state_key, state_order=range(3), verify=False)
    assert quick.num_nodes < imp.num_nodes
    np.testing.assert_array_equal(quick.game.rewards, imp.game.rewards)


def test_import_openspiel_matrix_games_with_rescaling():
    for name in ("matrix_pd", "matrix_rps", "matching_pennies_3p"):
        os_game = pyspiel.load_game(name)
        imp = osb.import_game(os_game, lambda st: "only")
        g = imp.game
        assert (g.horizon, g.num_states) == (1, 1)
        # OpenSpiel's payoffs, mapped by the returned affine map.
        for joint in np.ndindex(*g.num_actions):
            st = os_game.new_initial_state()
            st.apply_actions(list(joint))
            np.testing.assert_allclose(g.rewards[(0, slice(None), 0, *joint)], imp.rescaling.apply(st.returns()), atol=1e-15)
        assert g.rewards.min() == 0.0 and g.rewards.max() == 1.0
        np.testing.assert_allclose(
            imp.openspiel_value(policy_value(g, uniform_policy(g))), openspiel_uniform_value(os_game), atol=1e-12
        )


def test_import_stochastic_game_that_ends_early():
    import open_spiel.python.games  # noqa: F401  (registers OpenSpiel's Python games)

    os_game = pyspiel.load_game("python_iterated_prisoners_dilemma(max_game_length=3,termination_probability=0.25)")
    imp = osb.import_game(os_game, lambda st: "play")
    g = imp.game
    assert g.horizon == 3 and imp.state_keys == ("play", osb.TERMINAL)
    # Stopping (probability 0.25) after steps 1 and 2 leads to the absorbing state; after step 3 the game ends anyway.
    np.testing.assert_allclose(g.transitions[0, 0, 1, 0], [0.75, 0.25])
    np.testing.assert_allclose(g.transitions[2, 0, 1, 0], [1.0, 0.0])
    np.testing.assert_array_equal(g.transitions[:, 1, :, :, 1], 1.0)
    assert imp.rescaling.scale == pytest.approx(0.1) and imp.rescaling.offset == 0.0
    # Values: OpenSpiel's exact evaluation of the uniform policy, through the affine map.
    np.testing.assert_allclose(
        imp.openspiel_value(policy_value(g, uniform_policy(g))), openspiel_uniform_value(os_game), atol=1e-12
    )


def test_import_deterministic_repeated_game_with_history_key():
    os_game = pyspiel.load_game("repeated_game(stage_game=matrix_pd(),num_repetitions=3)")

    def last_joint_action(st):
        h = st.history()
        return tuple(h[-2:]) if h else "start"

    imp = osb.import_game(os_game, last_joint_action)
    g = imp.game
    assert (g.horizon, g.num_states) == (3, 5)
    assert imp.state_keys[0] == "start"
    np.testing.assert_allclose(
        imp.openspiel_value(policy_value(g, uniform_policy(g))), openspiel_uniform_value(os_game), atol=1e-12
    )
    # The LP CE of the imported game is a CE there (exact gap 0).
    assert exact_ce_gap(g, solve_equilibrium(g, "ce").policy).gap <= 1e-7


def test_import_refuses_what_is_not_a_markov_game():
    os_game = osb.export_game(make_paper_game())
    with pytest.raises(osb.OpenSpielImportError, match="does not name a Markov state"):
        osb.import_game(os_game, lambda st: "same")  # states 0 and 1 have different rewards
    with pytest.raises(osb.OpenSpielImportError, match="moving alone"):
        osb.import_game(pyspiel.load_game("tic_tac_toe"), lambda st: str(st))
    with pytest.raises(osb.OpenSpielImportError, match="chance node"):
        osb.import_game(pyspiel.load_game("kuhn_poker"), lambda st: str(st))
    with pytest.raises(osb.OpenSpielImportError, match="max_nodes"):
        osb.import_game(os_game, osb.markov_state_key, max_nodes=10)


# ---------------------------------------------------------------------------------------------
# Correlation devices
# ---------------------------------------------------------------------------------------------
def test_device_of_a_normal_form_output_policy_is_the_first_index_mixture():
    game = mg.games.chicken()
    policy = output_policy("chicken", "smooth_cce", 6)
    turn_based = pyspiel.convert_to_turn_based(osb.export_game(game))
    device = osb.correlation_device(turn_based, policy)
    weights = policy.first_index_distribution()
    assert len(device) == policy.T
    np.testing.assert_allclose([w for w, _ in device], weights, rtol=0, atol=1e-15)
    st = turn_based.new_initial_state()
    for (_, tab), t in zip(device, range(policy.T), strict=True):
        probs = dict(tab.policy_table()[st.information_state_string(0)])
        np.testing.assert_allclose([probs[a] for a in range(2)], policy.policies[0][t, 0, 0])


def test_device_of_a_markov_game_output_policy_enumerates_index_sequences():
    game = make_paper_game()
    policy = output_policy("paper", "smooth_ce", 4)
    comps = osb.policy_components(policy)
    # Smooth kernel: j_1 <= T, j_2 <= j_1 -> T (T + 1) / 2 sequences.
    assert len(comps) == 4 * 5 // 2
    assert sum(w for w, _ in comps) == pytest.approx(1.0, abs=1e-15)
    # The mixture reproduces the value.
    mix = sum(w * policy_value(game, MarkovCorrelatedPolicy(_joint(comp), 2)) for w, comp in comps)
    np.testing.assert_allclose(mix, policy_value(game, policy), atol=1e-12)
    with pytest.raises(ValueError, match="max_size"):
        osb.policy_components(policy, max_size=5)


def _joint(per_player):
    joint = np.ones(per_player[0].shape[:2])
    for p in per_player:
        joint = joint[..., None] * p.reshape(p.shape[:2] + (1,) * (joint.ndim - 2) + (p.shape[2],))
    return joint


# ---------------------------------------------------------------------------------------------
# Cross-check: our exact gaps against OpenSpiel's cce_dist / ce_dist
# ---------------------------------------------------------------------------------------------
def random_normal_form_3p() -> mg.MarkovGame:
    return mg.games.normal_form_game(np.random.default_rng(7).random((3, 2, 2, 3)), name="random3p")


GAMES = {
    "chicken": mg.games.chicken,
    "battle_of_the_sexes": mg.games.battle_of_the_sexes,
    "random3p": random_normal_form_3p,
    "paper": make_paper_game,
}
CROSS_GAMES = ("battle_of_the_sexes", "chicken", "random3p")
CROSS_RUNS = [("smooth_ce", 4), ("smooth_cce", 5), ("stage_cce", 7)]


@pytest.mark.parametrize("game_name", CROSS_GAMES)
@pytest.mark.parametrize("algorithm, T", CROSS_RUNS)
def test_exact_gaps_agree_with_openspiel_on_normal_form_games(game_name, algorithm, T):
    game = GAMES[game_name]()
    policy = output_policy(game_name, algorithm, T)
    value = policy_value(game, policy)
    ours_cce = exact_cce_gap(game, policy)
    theirs_cce = osb.openspiel_cce_dist(game, policy)
    np.testing.assert_allclose(theirs_cce.on_policy_values, value, atol=1e-12)
    np.testing.assert_allclose(theirs_cce.best_response_values, ours_cce.best_response_value, atol=1e-12)
    np.testing.assert_allclose(theirs_cce.unclipped, ours_cce.per_player, atol=1e-12)
    # OpenSpiel clips each player's incentive at 0 and sums over players; we report the max, unclipped.
    np.testing.assert_allclose(theirs_cce.deviation_incentives, np.maximum(ours_cce.per_player, 0.0), atol=1e-12)
    assert theirs_cce.dist_value == pytest.approx(np.maximum(ours_cce.per_player, 0.0).sum(), abs=1e-12)
    assert theirs_cce.gap == pytest.approx(ours_cce.gap, abs=1e-12)

    ours_ce = exact_ce_gap(game, policy)
    theirs_ce = osb.openspiel_ce_dist(game, policy)
    np.testing.assert_allclose(theirs_ce.on_policy_values, value, atol=1e-12)
    np.testing.assert_allclose(theirs_ce.best_response_values, ours_ce.deviation_value, atol=1e-12)
    np.testing.assert_allclose(theirs_ce.deviation_incentives, ours_ce.per_player, atol=1e-12)
    assert theirs_ce.dist_value == pytest.approx(ours_ce.per_player.sum(), abs=1e-12)


@pytest.mark.parametrize("algorithm, T", [("smooth_ce", 3), ("smooth_cce", 3), ("stage_cce", 4)])
def test_exact_cce_gap_agrees_with_openspiel_on_the_paper_game(algorithm, T):
    game = make_paper_game()
    policy = output_policy("paper", algorithm, T)
    ours = exact_cce_gap(game, policy)
    theirs = osb.openspiel_cce_dist(game, policy)
    np.testing.assert_allclose(theirs.on_policy_values, ours.value, atol=1e-12)
    np.testing.assert_allclose(theirs.best_response_values, ours.best_response_value, atol=1e-12)
    np.testing.assert_allclose(theirs.unclipped, ours.per_player, atol=1e-12)


def test_lp_equilibria_are_equilibria_for_openspiel_too():
    game = make_paper_game()
    cce = osb.openspiel_cce_dist(game, solve_equilibrium(game, "cce").policy)
    assert cce.dist_value <= 1e-9
    chicken = mg.games.chicken()
    ce = osb.openspiel_ce_dist(chicken, solve_equilibrium(chicken, "ce").policy)
    assert ce.dist_value <= 1e-9


def test_openspiel_ce_dist_refuses_multi_step_games():
    game = make_paper_game()
    policy = output_policy("paper", "smooth_ce", 2)
    with pytest.raises(ValueError, match="normal-form CE"):
        osb.openspiel_ce_dist(game, policy)
    with pytest.raises(ValueError, match=r"\(N, H, S, A\)"):
        osb.openspiel_cce_dist(mg.games.chicken(), policy)


def test_negative_cce_gap_is_clipped_by_openspiel():
    # Chicken's "traffic light": (swerve, straight) or (straight, swerve) with probability 1/2 each.
    # Following is worth 10/11; the best uninformed deviation (always swerve) 19/22: gap -1/22 < 0.
    game = mg.games.chicken()
    policy = MarkovCorrelatedPolicy(np.array([[[[0.0, 0.5], [0.5, 0.0]]]]), 2)
    ours = exact_cce_gap(game, policy)
    np.testing.assert_allclose(ours.per_player, [-1 / 22, -1 / 22], atol=1e-15)
    theirs = osb.openspiel_cce_dist(game, policy)
    np.testing.assert_allclose(theirs.unclipped, ours.per_player, atol=1e-15)
    np.testing.assert_array_equal(theirs.deviation_incentives, [0.0, 0.0])
    assert theirs.dist_value == 0.0


def test_exported_games_and_states_pickle(tmp_path):
    """Exported games and their states pickle (for worker processes): a game is exported again on
    loading, also in a fresh process; a state is its moves replayed, OpenSpiel's history included."""
    import pickle
    import subprocess
    import sys

    game = make_paper_game()
    os_game = osb.export_game(game)
    again = pickle.loads(pickle.dumps(os_game))
    assert again.markov_game == game and str(again) == str(os_game)
    state = os_game.new_initial_state()
    state.apply_actions([0, 1])
    state.apply_action(1)
    for st in (os_game.new_initial_state(), state):  # a decision node, then a chance node
        copy = pickle.loads(pickle.dumps(st))
        assert str(copy) == str(st) and copy.history() == st.history() and copy.returns() == st.returns()
        assert copy.is_chance_node() == st.is_chance_node()
    state.apply_actions([1, 1])
    path = tmp_path / "state.pkl"
    path.write_bytes(pickle.dumps(state))
    code = "import pickle, sys; st = pickle.loads(open(sys.argv[1], 'rb').read()); print(st.markov_state, st.step, st.returns())"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(state.markov_state), str(state.step), *str(state.returns()).split()]


def test_correlation_device_refuses_a_policy_of_another_shape():
    """A policy of another game's shape is refused, for the exported game and its turn-based form
    (it once built a device with illegal actions, or silently one for the wrong game)."""
    small = make_random_game(3, 2, 1, 1, (2, 2))
    other = make_random_game(3, 2, 1, 1, (3, 3))
    policy = IndexChainPolicy.from_run(run(other, "smooth_cce", T=5, eta=0.2))
    exported = osb.export_game(small)
    turn_based = pyspiel.convert_to_turn_based(exported)
    for os_game in (exported, turn_based):
        with pytest.raises(ValueError, match=r"policy has \(N, H, S, A\) = .* but the game has"):
            osb.correlation_device(os_game, policy)


def test_import_game_names_bad_arguments():
    game = pyspiel.load_game("matrix_pd")
    with pytest.raises(TypeError, match="import_game: expected a pyspiel.Game, got NoneType"):
        osb.import_game(None, lambda s: 0)
    with pytest.raises(TypeError, match="state_key must return a hashable key, got a list"):
        osb.import_game(game, lambda s: [1])
    with pytest.raises(ValueError, match="bounds must be .* a pair of numbers"):
        osb.import_game(game, lambda s: 0, bounds=(0,))


def test_exported_states_refuse_moves_outside_the_game():
    """A traversal root outside the arrays, a joint action outside the action sets and a chance
    outcome of probability 0 are refused with the values named."""
    os_game = osb.export_game(make_paper_game())
    with pytest.raises(ValueError, match=r"^need 0 <= step < 2 and 0 <= state < 2, got \(2, 0\)$"):
        os_game.new_state_at(2, 0)
    with pytest.raises(ValueError, match=r"^need 0 <= step < 2 and 0 <= state < 2, got \(0, -1\)$"):
        os_game.new_state_at(0, -1)
    st = os_game.new_initial_state()
    for joint, shown in (([2, 0], r"\(2, 0\)"), ([0], r"\(0,\)")):
        with pytest.raises(ValueError, match=rf"^joint action {shown} is not in the action sets \(2, 2\)$"):
            st.apply_actions(joint)
    st.apply_actions([0, 0])
    with pytest.raises(ValueError, match=r"^chance outcome 2 has probability 0$"):
        st.apply_action(2)


# ---------------------------------------------------------------------------------------------
# A game whose reward is decided by a chance node after the move
# ---------------------------------------------------------------------------------------------
_COIN_TYPE = pyspiel.GameType(
    short_name="markovgames_test_coin",
    long_name="markovgames test: a coin after the move",
    dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.PERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.REWARDS,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=False,
    provides_information_state_tensor=False,
    provides_observation_string=False,
    provides_observation_tensor=False,
    parameter_specification={"actions": 2},
)


class _CoinGame(pyspiel.Game):
    """Both players move once; then a coin decides the payoff: heads (probability 1/4) pays
    ``(1, a_1 / 2)``, tails ``(0, 1)``. Player 1 has ``actions`` legal actions (default 2)."""

    def __init__(self, params=None):
        params = params or {"actions": 2}
        info = pyspiel.GameInfo(
            num_distinct_actions=2,
            max_chance_outcomes=2,
            num_players=2,
            min_utility=0.0,
            max_utility=1.0,
            utility_sum=None,
            max_game_length=1,
        )
        super().__init__(_COIN_TYPE, info, params)
        self.actions = int(params["actions"])

    def new_initial_state(self):
        return _CoinState(self)


class _CoinState(pyspiel.State):
    def __init__(self, game):
        super().__init__(game)
        self._actions = game.actions
        self._joint = None
        self._coin = None

    def current_player(self):
        if self._coin is not None:
            return pyspiel.PlayerId.TERMINAL
        return pyspiel.PlayerId.CHANCE if self._joint is not None else pyspiel.PlayerId.SIMULTANEOUS

    def _legal_actions(self, player):
        return list(range(2 if player == 0 else self._actions))

    def chance_outcomes(self):
        return [(0, 0.25), (1, 0.75)]

    def _apply_actions(self, actions):
        self._joint = tuple(actions)

    def _apply_action(self, action):
        self._coin = action

    def _action_to_string(self, player, action):
        return f"player {player} action {action}"

    def is_terminal(self):
        return self._coin is not None

    def returns(self):
        if self._coin is None:
            return [0.0, 0.0]
        return [1.0, self._joint[1] / 2] if self._coin == 0 else [0.0, 1.0]

    def rewards(self):
        return self.returns()

    def __str__(self):
        return f"joint={self._joint} coin={self._coin}"


if _COIN_TYPE.short_name not in pyspiel.registered_names():
    pyspiel.register_game(_COIN_TYPE, _CoinGame)


def test_import_takes_the_expected_reward_over_chance():
    """When chance after the move changes the reward, the imported reward is its expectation:
    player 0 gets 1/4 * 1 + 3/4 * 0 = 1/4, player 1 gets 1/4 * a_1 / 2 + 3/4 * 1 (0.75, 0.875)."""
    os_game = pyspiel.load_game("markovgames_test_coin")
    imp = osb.import_game(os_game, lambda st: "end" if st.is_terminal() else "start")
    g = imp.game
    assert imp.state_keys == ("start", "end") and imp.rescaling.is_identity
    np.testing.assert_array_equal(g.rewards[0, :, 0], [[[0.25, 0.25], [0.25, 0.25]], [[0.75, 0.875], [0.75, 0.875]]])
    np.testing.assert_array_equal(g.transitions[0, 0, :, :, 1], 1.0)
    # OpenSpiel's exact evaluation of the uniform policy agrees.
    np.testing.assert_allclose(
        imp.openspiel_value(policy_value(g, uniform_policy(g))), openspiel_uniform_value(os_game), atol=1e-12
    )


def test_import_game_refuses_bad_roots_keys_and_action_sets():
    pd = pyspiel.load_game("matrix_pd")
    with pytest.raises(ValueError, match=r"^roots: need at least one \(step, state\)$"):
        osb.import_game(pd, lambda st: 0, roots=[])
    with pytest.raises(ValueError, match=r"^roots: the first root is the initial state and must be at step 0, got step 1$"):
        osb.import_game(pd, lambda st: 0, roots=[(1, pd.new_initial_state())])
    with pytest.raises(osb.OpenSpielImportError, match=r"^state_key returned None for a simultaneous-move state$"):
        osb.import_game(pd, lambda st: None)
    with pytest.raises(osb.OpenSpielImportError, match=r"^step 0: player 1 has no legal action \(joint=None coin=None\)$"):
        osb.import_game(pyspiel.load_game("markovgames_test_coin(actions=0)"), lambda st: "start")
    # Goofspiel: every card played leaves the hand, so the action sets shrink.
    goofspiel = pyspiel.load_game("goofspiel(num_cards=3,points_order=descending)")
    with pytest.raises(
        osb.OpenSpielImportError,
        match=r"^step 1: legal actions \[\(1, 2\), \(1, 2\)\] differ from \[\(0, 1, 2\), \(0, 1, 2\)\] seen before \(.*\); "
        "a Markov game needs the same action sets everywhere$",
    ):
        osb.import_game(goofspiel, str)
