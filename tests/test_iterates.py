"""The iterates' own measures: the uniform average's Nash and duality gaps, the last iterate's duality gap
(the weighted average's: ``test_weighted_average.py``).

Checked on zero-sum normal-form games against the textbook duality gap of the average strategies,
``max_a (A y)_a - min_b (x^T A)_b``, computed here from the payoff matrix alone.
"""

from __future__ import annotations

import json

import pytest

from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments.rundirs._iterates import uniform_average_fields
from markovgames.games import get_builtin, paper_game, random_game


def test_constant_sum_games_are_recognised():
    assert random_game(2, 2, 3, (2, 3), seed_or_rng=1, zero_sum=True).is_constant_sum
    assert get_builtin("matching_pennies").is_constant_sum
    assert not paper_game().is_constant_sum
    assert not random_game(2, 1, 1, (3, 3), seed_or_rng=1).is_constant_sum


@pytest.mark.parametrize("algorithm", ["hedge+smooth-uniform", "rm-plus+smooth-uniform"])
def test_the_average_iterates_duality_gap_is_the_textbook_one(algorithm):
    game = random_game(2, 1, 1, (3, 4), seed_or_rng=7, zero_sum=True)
    A = game.rewards[0, 0, 0]  # player 0's payoffs; player 1's are 1 - A
    result = run(game, algorithm, T=400, eta=0.3, optimistic=False)
    fields = uniform_average_fields(game, result.policies, [1, 37, 400])
    for T_prime, f in fields.items():
        x = result.policies[0][:T_prime, 0, 0].mean(axis=0)
        y = result.policies[1][:T_prime, 0, 0].mean(axis=0)
        textbook = float((A @ y).max() - (x @ A).min())
        assert f["uniform_average_duality_gap"] == pytest.approx(textbook, abs=1e-12)
        assert f["uniform_average_value"][0] == pytest.approx(float(x @ A @ y), abs=1e-12)
        assert f["uniform_average_nash_gap"] == pytest.approx(max(f["uniform_average_nash_gap_per_player"]), abs=0)


def test_a_general_sum_game_has_no_duality_gap():
    game = paper_game()
    result = run(game, "smooth_cce", T=50, eta=0.2, last_iterate=[10, 50])
    fields = uniform_average_fields(game, result.policies, [10, 50])
    assert "uniform_average_duality_gap" not in fields[50] and fields[50]["uniform_average_nash_gap"] >= 0.0


def test_run_reports_both_iterates_with_their_duality_gaps(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    game = random_game(2, 2, 2, (2, 3), seed_or_rng=3, zero_sum=True)
    from markovgames.games import save_game

    save_game(game, tmp_path / "z.json")
    argv = ["run", "--game", "z.json", "--algorithm", "rm-plus+smooth-uniform", "-T", "300", "--checkpoints", "30,300"]
    assert main([*argv, "--last-iterate", "--uniform-average", "--out", "r"]) == 0
    out = capsys.readouterr().out
    assert out.count("duality") == 2  # a column each for the last and the average iterate (headers wrap)
    records = json.loads((tmp_path / "r" / "metrics.json").read_text())["checkpoints"]
    for c in records:
        assert c["last_iterate_duality_gap"] == pytest.approx(sum(c["last_iterate_nash_gap_per_player"]), abs=1e-12)
        assert c["uniform_average_duality_gap"] >= c["uniform_average_nash_gap"] >= 0.0
    assert main([*argv, "--uniform-average", "--no-trajectory", "--out", "s"]) == 2
    assert "--uniform-average needs the trajectory" in capsys.readouterr().err
