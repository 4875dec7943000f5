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
        ({"scale": 10**400, "offset": 0}, "units.scale: an integer of 401 digits, beyond any float; at most 1e+100"),
        ({"scale": 1, "offset": -(10**400)}, "units.offset: an integer of 401 digits"),
        ({"scale": 5e-324, "offset": 0}, "units.scale: 5e-324 is outside [1e-100, 1e+100]"),
        ({"scale": 1.0, "offset": 1.7e308}, "units.offset: 1.7e+308 is outside [-1e+100, 1e+100]"),
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
    with pytest.raises(GameFileError) as err:
        load_game(tmp_path / "g.json")
    assert message in str(err.value), str(err.value)


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


# ----------------------------------------------------------------------------- bounded units
from hypothesis import given, settings  # noqa: E402 - the property tests of the bound, kept together
from hypothesis import strategies as st  # noqa: E402

from conftest import examples  # noqa: E402
from markovgames._json import dumps  # noqa: E402
from markovgames.games import UNITS_BOUND  # noqa: E402

#: Numbers of every magnitude, the float extremes, and integers beyond any float.
UNIT_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([5e-324, 1.7e308, -1.7e308, 1e-100, 1e100, -1e100, 1e-101, 1e101, 0.0, -0.0]),
    st.integers(min_value=-(10**450), max_value=10**450),
)


def _within(scale, offset) -> bool:
    """The bound, from its definition, in exact arithmetic for integers."""
    from fractions import Fraction

    def exact(x):
        return Fraction(x) if isinstance(x, int) or np.isfinite(x) else None

    s, o, b = exact(scale), exact(offset), Fraction(UNITS_BOUND)
    return s is not None and o is not None and 1 / b <= s <= b and abs(o) <= b


@settings(max_examples=examples(300, 3000), deadline=None)
@given(scale=UNIT_NUMBERS, offset=UNIT_NUMBERS, horizon=st.integers(1, 10**6))
def test_units_are_accepted_exactly_within_the_bound_and_then_every_derived_number_is_finite(scale, offset, horizon):
    """Units are refused (a ValueError naming ``scale`` or ``offset``, never an OverflowError)
    exactly outside ``[1/B, B]`` x ``[-B, B]``; inside, every value and gap in the original units,
    at the ends of their ranges, is finite and is written as standard JSON."""
    try:
        units = AffineRescaling(scale, offset)
    except ValueError as err:
        assert not _within(scale, offset), err
        assert str(err).startswith(("scale: ", "offset: ")), err
        return
    assert _within(scale, offset)
    ends = np.array([0.0, 1.0])
    derived = [
        units.invert(ends),  # original payoffs
        units.original_value(horizon * ends, horizon),  # returns over the horizon
        units.original_gap(horizon * ends),  # gaps
        units.value(units.original_value(horizon * ends, horizon), horizon),  # and back
    ]
    for array in derived:
        assert np.all(np.isfinite(array)), (scale, offset, horizon, array)
    dumps({"units": {"scale": units.scale, "offset": units.offset}, "values": [a.tolist() for a in derived]}, "x.json")


@settings(max_examples=examples(40, 400), deadline=None)
@given(value=st.one_of(st.sampled_from([float("nan"), float("inf"), float("-inf")]), st.just(1.0)), depth=st.integers(0, 3))
def test_a_non_finite_number_is_never_written_as_json(value, depth):
    """`dumps` writes standard JSON or refuses (a RuntimeError: a bug), naming the file and the field."""
    doc: object = value
    for k in range(depth):
        doc = {"a": [0.5, doc]} if k % 2 == 0 else [doc]
    if np.isfinite(value):
        assert json.loads(dumps(doc, "x.json"), parse_constant=lambda c: pytest.fail(c)) == doc
        return
    with pytest.raises(RuntimeError, match=r"^x\.json: .* is (nan|inf|-inf), which standard JSON cannot hold") as err:
        dumps(doc, "x.json")
    assert "nothing was written" in str(err.value)


def test_the_extreme_units_within_the_bound_make_a_run_markovgames_reads_back(tmp_path, monkeypatch, capsys):
    """The corner of the bound (scale 1e-100, offset 1e100: original returns near -2e200, gaps near
    1e99): the run's metrics.json is standard JSON and evaluate reads it back."""
    from markovgames.games import game_to_dict

    data = game_to_dict(paper_game())
    data["units"] = {"scale": 1e-100, "offset": 1e100}
    (tmp_path / "g.json").write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--game", "g.json", "--algorithm", "smooth_ce", "-T", "20", "--out", "r", "--quiet"]) == 0
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert metrics["units"] == {"scale": 1e-100, "offset": 1e100}
    assert main(["evaluate", "r"]) == 0
    assert "in the game's own units" in capsys.readouterr().out
