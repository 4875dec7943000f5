"""Built-in games (golden numbers), random games, the registry, and the ``games`` CLI."""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markovgames.cli._errors import CliError
from markovgames.cli._games import add_games_parser
from markovgames.games import (
    BUILTIN_GAMES,
    GameFileError,
    GameValidationError,
    MarkovGame,
    UnknownGameError,
    battle_of_the_sexes,
    chicken,
    get_builtin,
    load_game,
    matching_pennies,
    normal_form_game,
    paper_game,
    prisoners_dilemma,
    random_game,
    repeated_game,
    repeated_prisoners_dilemma,
    resolve_game,
    save_game,
    shapley,
)

# ------------------------------------------------------------------------------ helpers


def _pure_nash(payoffs: np.ndarray) -> set[tuple[int, int]]:
    """Pure Nash equilibria of a bimatrix game ``payoffs[i, a, b]``."""
    row, col = payoffs
    return {
        (a, b)
        for a, b in itertools.product(range(row.shape[0]), range(row.shape[1]))
        if row[a, b] >= row[:, b].max() and col[a, b] >= col[a, :].max()
    }


def _uniform_policy_values(game: MarkovGame) -> np.ndarray:
    """``V_{0,i}(s)`` of every player under uniform play, by backward induction: shape (N, S)."""
    n, s_count = game.num_players, game.num_states
    values = np.zeros((n, s_count))
    action_axes = tuple(range(2, 2 + n))
    for h in reversed(range(game.horizon)):
        # q[i, s, a] = r_h[i, s, a] + sum_s' P_h[s, a, s'] V[i, s']
        q = game.rewards[h] + np.einsum("s...t,it->is...", game.transitions[h], values)
        values = q.mean(axis=action_axes)
    return values


def _permute_actions(game: MarkovGame, player: int, perm: np.ndarray) -> MarkovGame:
    """Relabel player ``player``'s actions: new action ``k`` is old action ``perm[k]``."""
    return MarkovGame(
        game.rewards.take(perm, axis=3 + player),
        game.transitions.take(perm, axis=2 + player),
        initial_state=game.initial_state,
        name=game.name,
        description=game.description,
    )


# ---------------------------------------------------------------------- paper game


def test_paper_game_golden_tables():
    # Golden numbers: Mao et al. (2024), appendix "Simulation Details", Tables "Reward matrices
    # for Player 1" and "for Player 2" (rows a_0, a_1; columns b_0, b_1), and the transition
    # rule stated below them (matching actions stay w.p. 0.8, opposite actions w.p. 0.2).
    game = paper_game()
    assert game.name == "paper"
    assert (game.num_players, game.horizon, game.num_states, game.num_actions) == (2, 2, 2, (2, 2))
    assert game.initial_state == 0
    player0 = {0: [[0.8, 0.2], [0.0, 1.0]], 1: [[1.0, 0.2], [0.5, 0.8]]}
    player1 = {0: [[0.2, 1.0], [0.5, 0.0]], 1: [[0.5, 1.0], [1.0, 0.2]]}
    for h in range(2):  # the same tables at both steps
        for s in range(2):
            np.testing.assert_array_equal(game.rewards[h, 0, s], player0[s])
            np.testing.assert_array_equal(game.rewards[h, 1, s], player1[s])
    # transitions[h, s, a, b, s']
    for h, s in itertools.product(range(2), range(2)):
        other = 1 - s
        for a, b in [(0, 0), (1, 1)]:  # matching actions
            assert game.transitions[h, s, a, b, s] == 0.8
            assert game.transitions[h, s, a, b, other] == 0.2
        for a, b in [(0, 1), (1, 0)]:  # opposite actions
            assert game.transitions[h, s, a, b, s] == 0.2
            assert game.transitions[h, s, a, b, other] == 0.8


def test_paper_game_fresh_instances_are_equal():
    assert paper_game() == paper_game()
    assert paper_game() is not paper_game()


# -------------------------------------------------------------- normal-form games


def test_prisoners_dilemma_rescaled_payoffs():
    game = prisoners_dilemma()
    assert (game.horizon, game.num_states, game.num_actions) == (1, 1, (2, 2))
    # (T, R, P, S) = (5, 3, 1, 0) divided by 5
    np.testing.assert_allclose(game.rewards[0, 0, 0], [[0.6, 0.0], [1.0, 0.2]])
    np.testing.assert_allclose(game.rewards[0, 1, 0], [[0.6, 1.0], [0.0, 0.2]])
    row = game.rewards[0, 0, 0]
    assert np.all(row[1] > row[0])  # defection strictly dominates for the row player
    assert _pure_nash(game.rewards[0, :, 0]) == {(1, 1)}


def test_matching_pennies_is_constant_sum():
    game = matching_pennies()
    np.testing.assert_array_equal(game.rewards[0, 0, 0], [[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(game.rewards[0, 0, 0] + game.rewards[0, 1, 0], np.ones((2, 2)))
    assert _pure_nash(game.rewards[0, :, 0]) == set()


def test_battle_of_the_sexes_rescaled_payoffs():
    game = battle_of_the_sexes()
    np.testing.assert_array_equal(game.rewards[0, 0, 0], [[1.0, 0.0], [0.0, 0.5]])
    np.testing.assert_array_equal(game.rewards[0, 1, 0], [[0.5, 0.0], [0.0, 1.0]])
    assert _pure_nash(game.rewards[0, :, 0]) == {(0, 0), (1, 1)}


def test_chicken_rescaled_payoffs():
    game = chicken()
    np.testing.assert_allclose(game.rewards[0, 0, 0], [[10 / 11, 9 / 11], [1.0, 0.0]])
    np.testing.assert_allclose(game.rewards[0, 1, 0], [[10 / 11, 1.0], [9 / 11, 0.0]])
    assert _pure_nash(game.rewards[0, :, 0]) == {(0, 1), (1, 0)}


def test_shapley_game():
    game = shapley()
    assert game.num_actions == (3, 3)
    np.testing.assert_array_equal(game.rewards[0, 0, 0], np.eye(3))
    col = game.rewards[0, 1, 0]
    for a in range(3):
        assert col[a].argmax() == (a + 1) % 3
    assert _pure_nash(game.rewards[0, :, 0]) == set()
    # Uniform play is an equilibrium: each player is indifferent against the other's uniform mix.
    np.testing.assert_allclose(game.rewards[0, 0, 0].mean(axis=1), [1 / 3] * 3)
    np.testing.assert_allclose(col.mean(axis=0), [1 / 3] * 3)


def test_normal_form_game_lifts_openspiel_order():
    rng = np.random.default_rng(3)
    payoffs = rng.random((3, 2, 3, 4))
    game = normal_form_game(payoffs, name="three")
    assert (game.num_players, game.horizon, game.num_states, game.num_actions) == (3, 1, 1, (2, 3, 4))
    np.testing.assert_array_equal(game.rewards[0, :, 0], payoffs)
    assert np.all(game.transitions == 1.0) and game.transitions.shape == (1, 1, 2, 3, 4, 1)
    assert game.name == "three"


def test_normal_form_game_errors_use_payoff_indices():
    payoffs = np.full((2, 2, 3), 0.5)
    payoffs[1, 0, 2] = 1.25
    with pytest.raises(GameValidationError, match=r"payoffs\[1, 0, 2\] = .*1\.25.* is not in \[0, 1\]"):
        normal_form_game(payoffs)
    with pytest.raises(GameValidationError, match=r"payoffs: expected shape \(N, A_0, \.\.\., A_\(N-1\)\).*\(3, 2, 2\)"):
        normal_form_game(np.zeros((3, 2, 2)))
    with pytest.raises(GameValidationError, match=r"payoffs: expected a numeric array"):
        normal_form_game([["a"]])


# ------------------------------------------------------------------ repeated games


def test_repeated_game_state_is_last_joint_action():
    stage = np.random.default_rng(0).random((2, 2, 3))
    game = repeated_game(stage, horizon=4, name="rep")
    assert (game.horizon, game.num_states, game.num_actions) == (4, 7, (2, 3))
    assert game.initial_state == 0
    for h, s in itertools.product(range(4), range(7)):
        for k, (a, b) in enumerate(itertools.product(range(2), range(3))):
            expected = np.zeros(7)
            expected[1 + k] = 1.0
            np.testing.assert_array_equal(game.transitions[h, s, a, b], expected)
            np.testing.assert_array_equal(game.rewards[h, :, s, a, b], stage[:, a, b])


def test_repeated_prisoners_dilemma_bonus():
    game = repeated_prisoners_dilemma()
    assert (game.num_players, game.horizon, game.num_states, game.num_actions) == (2, 3, 5, (2, 2))
    stage = prisoners_dilemma().rewards[0, :, 0]
    for h, s in itertools.product(range(3), range(5)):
        expected = stage.copy()
        if s == 1:  # previous round was (C, C): mutual cooperation pays 0.6 + 0.1
            expected[:, 0, 0] = 0.7
        np.testing.assert_allclose(game.rewards[h, :, s], expected)
    assert game.transitions[0, 0, 1, 0, 3] == 1.0  # (D, C) leads to state 3
    with pytest.raises(GameValidationError, match=r"cooperation_bonus = 0\.5 is outside \[0, 0\.4\]"):
        repeated_prisoners_dilemma(cooperation_bonus=0.5)


def test_repeated_game_errors():
    stage = prisoners_dilemma().rewards[0, :, 0]
    with pytest.raises(GameValidationError, match=r"horizon: expected a positive integer, got 0"):
        repeated_game(stage, 0)
    with pytest.raises(GameValidationError, match=r"state_bonus: expected shape .* = \(2, 5, 2, 2\), got \(2, 2, 2\)"):
        repeated_game(stage, 2, state_bonus=np.zeros((2, 2, 2)))


# -------------------------------------------------------------------- random games


def test_random_game_deterministic_for_a_seed():
    a = random_game(2, 3, 4, [2, 3], seed_or_rng=123)
    b = random_game(2, 3, 4, [2, 3], seed_or_rng=123)
    c = random_game(2, 3, 4, [2, 3], seed_or_rng=124)
    assert a == b
    assert not np.array_equal(a.rewards, c.rewards)
    # An int seed means numpy.random.default_rng(seed).
    d = random_game(2, 3, 4, [2, 3], seed_or_rng=np.random.default_rng(123))
    np.testing.assert_array_equal(a.rewards, d.rewards)
    np.testing.assert_array_equal(a.transitions, d.transitions)
    assert a.name == "random(N=2,H=3,S=4,A=2x3,seed=123)"


def test_random_game_advances_a_generator():
    rng = np.random.default_rng(5)
    first = random_game(1, 1, 2, 2, seed_or_rng=rng)
    second = random_game(1, 1, 2, 2, seed_or_rng=rng)
    assert not np.array_equal(first.rewards, second.rewards)


@settings(max_examples=30, deadline=None)
@given(
    num_players=st.integers(1, 3),
    horizon=st.integers(1, 3),
    num_states=st.integers(1, 4),
    actions=st.lists(st.integers(1, 3), min_size=3, max_size=3),
    seed=st.integers(0, 2**32),
    concentration=st.sampled_from([0.01, 0.5, 1.0, 10.0]),
    law=st.sampled_from(["uniform", "bernoulli"]),
)
def test_random_game_valid(num_players, horizon, num_states, actions, seed, concentration, law):
    actions = actions[:num_players]
    game = random_game(
        num_players,
        horizon,
        num_states,
        actions,
        seed_or_rng=seed,
        transition_concentration=concentration,
        reward_distribution=law,
    )
    assert game.shape_key == (num_players, horizon, num_states, tuple(actions))
    assert np.all((game.rewards >= 0) & (game.rewards <= 1))
    np.testing.assert_allclose(game.transitions.sum(axis=-1), 1.0, atol=1e-12)
    if law == "bernoulli":
        assert set(np.unique(game.rewards)) <= {0.0, 1.0}


def test_random_game_distributions():
    game = random_game(2, 2, 5, 10, seed_or_rng=0)  # 2000 rewards, 1000 transition rows
    assert abs(game.rewards.mean() - 0.5) < 0.03
    assert abs(game.rewards.var() - 1 / 12) < 0.01
    # Dirichlet(1) rows: each coordinate has mean 1/S.
    np.testing.assert_allclose(game.transitions.reshape(-1, 5).mean(axis=0), 0.2, atol=0.02)
    peaked = random_game(1, 1, 5, 200, seed_or_rng=0, transition_concentration=0.01)
    flat = random_game(1, 1, 5, 200, seed_or_rng=0, transition_concentration=1000.0)
    assert peaked.transitions.max(axis=-1).mean() > 0.9
    assert flat.transitions.max(axis=-1).mean() < 0.3


def test_random_game_errors_before_drawing():
    rng = np.random.default_rng(9)
    with pytest.raises(GameValidationError, match=r"rewards: the sizes give 1000000000000 entries"):
        random_game(1, 1, 1, 10**12, seed_or_rng=rng)
    # The refused call drew nothing: the generator is where a fresh one would be.
    assert rng.random() == np.random.default_rng(9).random()
    with pytest.raises(GameValidationError, match=r"num_players: expected a positive integer, got 0"):
        random_game(0, 1, 1, 2, seed_or_rng=0)
    with pytest.raises(GameValidationError, match=r"horizon: expected a positive integer, got True"):
        random_game(1, True, 1, 2, seed_or_rng=0)
    with pytest.raises(GameValidationError, match=r"num_actions: expected 2 entries \(num_players\), got 3"):
        random_game(2, 1, 1, [2, 2, 2], seed_or_rng=0)
    # A single num_actions that is not a positive integer is refused by name (a bool, a fraction
    # or None once ended in "TypeError: ... object is not iterable").
    for bad in (True, 2.5, None, 0):
        with pytest.raises(GameValidationError, match=rf"num_actions: expected a positive integer, got {bad!r}"):
            random_game(2, 1, 1, bad, seed_or_rng=0)
    with pytest.raises(
        GameValidationError, match=r"reward_distribution = 'normal' \(did you mean 'uniform'\?\) is not one of uniform, bernoulli"
    ):
        random_game(1, 1, 1, 2, seed_or_rng=0, reward_distribution="normal")
    with pytest.raises(GameValidationError, match=r"transition_concentration = 0 must be positive"):
        random_game(1, 1, 1, 2, seed_or_rng=0, transition_concentration=0)
    with pytest.raises(GameValidationError, match=r"initial_state = 3 is out of range 0\.\.1"):
        random_game(1, 1, 2, 2, seed_or_rng=0, initial_state=3)
    for bad_seed in (None, True, -1, 1.5):
        with pytest.raises(TypeError, match=r"seed_or_rng: expected a non-negative int seed or a numpy.random.Generator"):
            random_game(1, 1, 1, 2, seed_or_rng=bad_seed)


# -------------------------------------------------------------------- relabelling


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), player=st.integers(0, 1), data=st.data())
def test_relabelling_actions_permutes_arrays(seed, player, data):
    game = random_game(2, 2, 3, [3, 2], seed_or_rng=seed)
    perm = np.array(data.draw(st.permutations(range(game.num_actions[player]))))
    relabelled = _permute_actions(game, player, perm)
    for k in range(len(perm)):
        old = [slice(None)] * 2
        old[player] = perm[k]
        new = [slice(None)] * 2
        new[player] = k
        np.testing.assert_array_equal(relabelled.rewards[(..., *new)], game.rewards[(..., *old)])
        np.testing.assert_array_equal(
            relabelled.transitions[(slice(None), slice(None), *new, slice(None))],
            game.transitions[(slice(None), slice(None), *old, slice(None))],
        )
    # Values under uniform play do not depend on the labels.
    np.testing.assert_allclose(_uniform_policy_values(relabelled), _uniform_policy_values(game), atol=1e-12)
    # Inverting the permutation gives back the game exactly.
    assert _permute_actions(relabelled, player, np.argsort(perm)) == game


def test_relabelling_maps_pure_equilibria():
    game = battle_of_the_sexes()
    swapped = _permute_actions(game, 1, np.array([1, 0]))
    assert _pure_nash(swapped.rewards[0, :, 0]) == {(0, 1), (1, 0)}


def test_relabelling_the_paper_game_swaps_matching():
    # Swapping player 1's labels turns "matching" into "opposite": the stay probability 0.8
    # moves from (a_0, b_0) to (a_0, b_1).
    swapped = _permute_actions(paper_game(), 1, np.array([1, 0]))
    assert swapped.transitions[0, 0, 0, 1, 0] == 0.8
    np.testing.assert_array_equal(swapped.rewards[0, 0, 0], [[0.2, 0.8], [1.0, 0.0]])


# ------------------------------------------------------------------------ registry


@pytest.mark.parametrize("name", sorted(BUILTIN_GAMES))
def test_every_builtin_is_valid_and_named(name, tmp_path):
    game = get_builtin(name)
    assert isinstance(game, MarkovGame)
    assert game.name == name
    assert game.description
    assert load_game(save_game(game, tmp_path / f"{name}.json")) == game


def test_get_builtin_unknown_lists_choices():
    with pytest.raises(
        UnknownGameError, match=r"unknown built-in game 'papr' \(did you mean 'paper'\?\); choices: .*paper.*shapley"
    ):
        get_builtin("papr")
    assert issubclass(UnknownGameError, GameValidationError)
    assert issubclass(UnknownGameError, LookupError)


def test_resolve_game(tmp_path):
    assert resolve_game("chicken") == chicken()
    path = save_game(random_game(2, 1, 2, 2, seed_or_rng=1), tmp_path / "r.npz")
    assert resolve_game(str(path)) == load_game(path)
    assert resolve_game(path) == load_game(path)
    with pytest.raises(
        UnknownGameError, match=r"'nope\.json' is neither a built-in game \(.*paper.*\) nor an existing game file"
    ):
        resolve_game("nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    with pytest.raises(GameFileError, match=r"bad\.json: missing key"):
        resolve_game(str(bad))


# ----------------------------------------------------------------------------- CLI


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="markovgames")
    add_games_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["games", *argv])
    return args.handler(args)


def test_cli_list(capsys):
    assert _cli("list") == 0
    out = capsys.readouterr().out
    for name in BUILTIN_GAMES:
        assert name in out
    assert "3x3" in out  # shapley's action sizes


def test_cli_show_small_game_prints_tables(capsys):
    assert _cli("show", "paper") == 0
    out = capsys.readouterr().out
    assert "H=2" in out and "every step, state s=1" in out
    # The row for joint action (0, 0) in state 0: rewards 0.8, 0.2; stay 0.8, switch 0.2.
    assert any(
        line.split("│")[1:7] and [c.strip() for c in line.split("│")[1:7]] == ["0", "0", "0.8", "0.2", "0.8", "0.2"]
        for line in out.splitlines()
    )


def test_cli_show_large_game_summarises(tmp_path, capsys):
    path = save_game(random_game(2, 3, 10, 7, seed_or_rng=0), tmp_path / "big.npz")
    assert _cli("show", str(path)) == 0
    out = capsys.readouterr().out
    assert "too large for per-state tables" in out
    assert "depend on the step" in out


def test_cli_validate(tmp_path, capsys):
    path = save_game(random_game(3, 2, 2, [2, 3, 1], seed_or_rng=4), tmp_path / "g.json")
    assert _cli("validate", str(path)) == 0
    assert capsys.readouterr().out == f"{path}: valid (N=3, H=2, S=2, A=2x3x1)\n"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["horizon"] = 5
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(GameFileError, match=r"rewards: expected 5 entries \(horizon\), got 2"):
        _cli("validate", str(path))
    with pytest.raises(GameFileError, match=r"more than the limit of 10 bytes"):
        _cli("validate", str(path), "--max-bytes", "10")


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_cli_export(tmp_path, capsys, suffix):
    out = tmp_path / f"paper{suffix}"
    assert _cli("export", "paper", "--out", str(out)) == 0
    assert load_game(out) == paper_game()
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(CliError, match=r"file exists \(use --force to overwrite\)"):
        _cli("export", "paper", "--out", str(out))
    assert _cli("export", "shapley", "--out", str(out), "--force") == 0
    assert load_game(out) == shapley()


def test_cli_export_errors(tmp_path):
    with pytest.raises(CliError, match=r"--out .*g\.csv: expected a \.json or \.npz file name"):
        _cli("export", "paper", "--out", str(tmp_path / "g.csv"))
    with pytest.raises(UnknownGameError, match=r"'nosuch' is neither a built-in game"):
        _cli("export", "nosuch", "--out", str(tmp_path / "g.json"))
    assert not (tmp_path / "g.json").exists()


def test_cli_random_is_seeded(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.npz"
    common = ["--players", "2", "--horizon", "2", "--states", "3", "--actions", "2,3", "--seed", "7"]
    assert _cli("random", *common, "--out", str(a)) == 0
    assert _cli("random", *common, "--out", str(b)) == 0
    assert load_game(a) == load_game(b) == random_game(2, 2, 3, [2, 3], seed_or_rng=7)
    c = tmp_path / "c.json"
    assert (
        _cli("random", "--players", "3", "--horizon", "1", "--states", "1", "--actions", "2", "--seed", "0", "--out", str(c)) == 0
    )
    assert load_game(c).num_actions == (2, 2, 2)


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"--actions": "2,3,4"}, r"--actions: expected 1 or 2 \(--players\) numbers, got 3"),
        ({"--actions": "2,x"}, r"--actions: expected comma-separated positive integers"),
        ({"--actions": "0"}, r"--actions: every number of actions must be at least 1"),
        ({"--states": "0"}, r"--states: must be at least 1, got 0"),
        ({"--seed": "-1"}, r"--seed: must be non-negative, got -1"),
    ],
)
def test_cli_random_errors(tmp_path, changes, pattern):
    options = {
        "--players": "2",
        "--horizon": "1",
        "--states": "2",
        "--actions": "2,2",
        "--seed": "0",
        "--out": str(tmp_path / "g.json"),
    }
    options.update(changes)
    with pytest.raises(CliError, match=pattern):
        _cli("random", *itertools.chain.from_iterable(options.items()))
    assert not (tmp_path / "g.json").exists()


def test_cli_games_requires_a_subcommand(capsys):
    with pytest.raises(SystemExit) as info:
        _cli()
    assert info.value.code == 2
    assert "SUBCOMMAND" in capsys.readouterr().err
