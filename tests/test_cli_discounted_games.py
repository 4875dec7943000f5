"""The ``games`` commands on discounted games: random, show, validate, hash, export, list."""

from __future__ import annotations

import numpy as np

from markovgames.cli import main
from markovgames.experiments import game_content_hash
from markovgames.games import get_discounted_builtin, load_any_game, random_discounted_game

RANDOM = ["games", "random", "--players", "2", "--states", "3", "--actions", "2,3", "--seed", "5"]


def test_random_writes_the_library_game(tmp_path, capsys):
    out = tmp_path / "d.npz"
    assert main([*RANDOM, "--discount", "0.75", "--zero-sum", "--successors", "2", "--out", str(out)]) == 0
    assert "gamma=0.75" in capsys.readouterr().out
    want = random_discounted_game(2, 3, (2, 3), 0.75, seed_or_rng=5, zero_sum=True, num_successors=2)
    assert load_any_game(out) == want
    assert main(["games", "validate", str(out)]) == 0
    assert "valid (N=2, gamma=0.75, S=3, A=2x3)" in capsys.readouterr().out
    # The hash covers the discount: the same arrays with another discount hash differently.
    other = tmp_path / "e.npz"
    assert main([*RANDOM, "--discount", "0.5", "--zero-sum", "--successors", "2", "--out", str(other)]) == 0
    assert np.array_equal(load_any_game(other).rewards, want.rewards)
    assert game_content_hash(load_any_game(other)) != game_content_hash(want)
    capsys.readouterr()
    assert main(["games", "hash", str(out)]) == 0
    assert capsys.readouterr().out.split()[0] == game_content_hash(want)


def test_show_list_and_export(tmp_path, capsys):
    assert main(["games", "show", "matching_pennies_discounted"]) == 0
    shown = capsys.readouterr().out
    assert "discounted: gamma=0.9 (effective horizon 1/(1-gamma) = 10)" in shown
    assert "state s=0" in shown and "initial state 0" in shown
    assert main(["games", "list"]) == 0
    listed = capsys.readouterr().out
    assert "Built-in discounted games" in listed and "prisoners_dilemma_discounted" in listed
    out = tmp_path / "pd.json"
    assert main(["games", "export", "prisoners_dilemma_discounted", "--out", str(out)]) == 0
    assert load_any_game(out) == get_discounted_builtin("prisoners_dilemma_discounted")
    converted = tmp_path / "pd.npz"
    assert main(["games", "export", str(out), "--out", str(converted)]) == 0
    assert load_any_game(converted) == load_any_game(out)
