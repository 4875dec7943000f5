"""A game's own units: the map from its original payoffs is kept, stored and used for reporting.

A normal-form game lifted by the bridge, or a built-in textbook game, runs on payoffs rescaled
into ``[0, 1]``; its gaps in those units are ``scale`` times the gaps in the game's own units
(8x smaller for a game with payoffs spanning 8). The game keeps the map (``MarkovGame.units``),
its files store it, and runs and evaluations report every return and gap in the original units
too (``NAME_original`` fields), checked here against values computed directly from the original
payoffs and the trajectory (an independent route, never through the map).
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from markovgames.bridges.normal_form import bimatrix, lift
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.games import AffineRescaling, GameFileError, get_builtin, load_game, paper_game, save_game

#: A 3x3 bimatrix game with payoffs in [-6, 2] (span 8: the rescaled gaps are 8x smaller).
ROW = [[2.0, -6.0, 0.5], [-1.0, 1.0, -3.0], [0.0, -2.0, 2.0]]
COL = [[-4.0, 2.0, 1.0], [1.5, -6.0, 0.0], [-2.0, 1.0, -1.0]]


def _weighted_average_cce(payoffs, strategies, weights):
    """The value and CCE gap of the weighted average of the joint strategies, from raw payoffs."""
    p = weights / weights.sum()
    values, gaps = [], []
    for i in range(2):
        deviation, value = np.zeros(payoffs[i].shape[i]), 0.0
        for t in range(len(p)):
            x, y = strategies[0][t], strategies[1][t]
            u = payoffs[i] @ y if i == 0 else x @ payoffs[i]
            deviation += p[t] * u
            value += p[t] * (u @ (x if i == 0 else y))
        values.append(value)
        gaps.append(deviation.max() - value)
    return np.array(values), max(gaps)


def test_a_lifted_game_keeps_its_map_and_runs_report_in_its_units(tmp_path, monkeypatch, capsys):
    lifted = lift(bimatrix(ROW, COL))
    game = lifted.game
    assert game.units == lifted.rescaling and game.units.scale == pytest.approx(1 / 8)
    T = 300
    result = run(game, "hedge+smooth-uniform", T=T, eta=0.5)
    strategies = [result.policies[i][:, 0, 0] for i in range(2)]
    payoffs = [np.array(ROW), np.array(COL)]
    value, gap = _weighted_average_cce(payoffs, strategies, np.ones(T))  # straight from the original payoffs

    path = tmp_path / "lifted.json"
    save_game(game, path)
    monkeypatch.chdir(tmp_path)
    assert (
        main(["run", "--game", "lifted.json", "--algorithm", "hedge+smooth-uniform", "-T", str(T), "--eta", "0.5", "--out", "r"])
        == 0
    )
    out = capsys.readouterr().out
    assert "in the game's own units (rewards r01 = 0.125 r + 0.75)" in out
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["units"] == {"scale": 0.125, "offset": 0.75}
    last = metrics["checkpoints"][-1]
    np.testing.assert_allclose(last["value_original"], value, rtol=0, atol=1e-10)
    assert last["certified_cce_gap_original"] == pytest.approx(gap, abs=1e-10)
    assert last["certified_cce_gap_original"] == pytest.approx(8 * last["certified_cce_gap"], rel=1e-12)

    assert main(["evaluate", "r", "--exact", "--out", "e.json"]) == 0
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["units"] == metrics["units"]
    assert report["exact_cce_gap_original"] == pytest.approx(gap, abs=1e-10)  # H = 1: exact = certified
    assert "in the game's own units" in capsys.readouterr().out


def test_textbook_games_know_their_units():
    # Chicken: payoffs 0/-1/+1/-10 rescaled by (x + 10) / 11.
    units = get_builtin("chicken").units
    assert units.apply(-10.0) == pytest.approx(0.0) and units.apply(1.0) == pytest.approx(1.0)
    assert get_builtin("prisoners_dilemma").units == AffineRescaling(0.2, 0.0)
    assert get_builtin("paper").units.is_identity and get_builtin("shapley").units.is_identity


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_units_survive_files_pickling_and_conversions(tmp_path, suffix):
    game = paper_game().with_units(AffineRescaling(0.25, -0.5))
    save_game(game, tmp_path / f"g{suffix}")
    back = load_game(tmp_path / f"g{suffix}")
    assert back == game and back.units == AffineRescaling(0.25, -0.5)
    assert pickle.loads(pickle.dumps(game)).units == game.units
    assert game.to_sparse().units == game.units and game.to_sparse().to_dense().units == game.units
    assert game != paper_game()  # the units are part of what a game is
    # A game in [0, 1] writes no units (its files are as before).
    save_game(paper_game(), tmp_path / f"p{suffix}")
    if suffix == ".json":
        assert "units" not in json.loads((tmp_path / "p.json").read_text())


@pytest.mark.parametrize(
    "units,message",
    [
        ({"scale": 0, "offset": 0}, "units.scale: expected a positive number"),
        ({"scale": -1.0, "offset": 0}, "units.scale: expected a positive number"),
        ({"scale": "1", "offset": 0}, "units.scale: expected a number"),
        ({"scale": 1.0, "offset": True}, "units.offset: expected a number"),
        ({"scale": 1.0}, 'units: expected {"scale": c, "offset": d}'),
        ({"scale": 1.0, "offset": 0, "unit": "dollars"}, 'units: expected {"scale": c, "offset": d}'),
        ([1.0, 0.0], 'units: expected {"scale": c, "offset": d}'),
    ],
)
def test_bad_units_in_a_game_file_are_refused_naming_the_field(tmp_path, units, message):
    data = json.loads(json.dumps({**_paper_dict(), "units": units}))
    (tmp_path / "g.json").write_text(json.dumps(data))
    with pytest.raises(GameFileError, match=message.replace("(", r"\(").replace("{", r"\{")):
        load_game(tmp_path / "g.json")


def test_bad_units_in_an_npz_file_are_refused(tmp_path):
    arrays = dict(np.load(_saved_npz(tmp_path)))
    arrays["units"] = np.array([1.0, 0.0, 2.0])
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(GameFileError, match=r"units: expected a float array \[scale, offset\] of shape \(2,\)"):
        load_game(tmp_path / "bad.npz")
    arrays["units"] = np.array([np.inf, 0.0])
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(GameFileError, match="units.scale: expected a finite number"):
        load_game(tmp_path / "bad.npz")


def test_tampered_units_in_metrics_json_are_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--game", "chicken", "--algorithm", "smooth_cce", "-T", "20", "--out", "r", "--quiet"]) == 0
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    metrics["units"] = {"scale": -2.0, "offset": 0.0}
    (tmp_path / "r" / "metrics.json").write_text(json.dumps(metrics))
    assert main(["evaluate", "r", "--quiet"]) == 2
    assert "units: expected null or an object with a positive scale and a finite offset" in capsys.readouterr().err


def _paper_dict() -> dict:
    from markovgames.games import game_to_dict

    return game_to_dict(paper_game())


def _saved_npz(tmp_path):
    path = tmp_path / "g.npz"
    save_game(paper_game().with_units(AffineRescaling(0.5, 0.0)), path)
    return path
