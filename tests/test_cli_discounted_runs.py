"""``markovgames run`` on a discounted game writes a run directory that ``evaluate`` reads back
(docs/discounted.md, "Learning dynamics"); the library refuses to read it as a finite-horizon run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments import load_run_directory
from markovgames.experiments.rundirs._discounted import load_discounted_run_directory
from markovgames.games import get_discounted_builtin, random_discounted_game, save_game


def test_run_directory_and_evaluate_agree_with_the_library(tmp_path):
    game = random_discounted_game(2, 3, 2, 0.8, seed_or_rng=4, zero_sum=True)
    path = save_game(game, tmp_path / "g.json")
    out = tmp_path / "run"
    args = ["run", "--game", str(path), "--algorithm", "hedge+discounted-smooth", "-T", "40", "--eta", "0.3"]
    options = ["--last-iterate", "--weighted-average", "--regret", "--quiet"]
    assert main([*args, "--checkpoints", "5,40", *options, "--out", str(out)]) == 0
    want = run(game, "hedge+discounted-smooth", T=40, eta=0.3, last_iterate=[5, 40], weighted_average=[5, 40], regret=True)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["kind"] == "discounted-run" and metrics["discount"] == 0.8
    assert metrics["step_order"] == pytest.approx(5.0)
    assert metrics["weighted_average"] == {"weights": "discounted-smooth", "every_prefix": False}
    for row, record in enumerate(metrics["checkpoints"]):
        t = record["T"]
        assert record["value_estimate"] == pytest.approx(want.value_estimate[t - 1].tolist(), abs=1e-12)
        assert record["weighted_average_nash_gap"] == pytest.approx(want.weighted_average_nash_gap[row], abs=1e-12)
        assert record["last_iterate_duality_gap"] == pytest.approx(want.last_iterate_duality_gap[row], abs=1e-12)
        assert record["swap_regret"] == pytest.approx(float(np.max(want.swap_regret[t - 1])), abs=1e-12)
    stored = load_discounted_run_directory(out)
    np.testing.assert_array_equal(stored.value_estimate, want.value_estimate)
    assert stored.check_trajectory(40)[0].shape == (40, 3, 2)
    # evaluate at a checkpoint gives the recorded numbers; between checkpoints, the library's.
    assert main(["evaluate", str(out), "-T", "40", "--quiet"]) == 0
    report = json.loads((out / "evaluation.json").read_text())
    for key in ("last_iterate_value", "weighted_average_best_response_value", "weighted_average_nash_gap"):
        assert report[key] == pytest.approx(metrics["checkpoints"][-1][key], abs=1e-10)
    between = run(game, "hedge+discounted-smooth", T=40, eta=0.3, last_iterate=[17], weighted_average=[17])
    assert main(["evaluate", str(out), "-T", "17", "--quiet", "--overwrite"]) == 0
    report = json.loads((out / "evaluation.json").read_text())
    assert report["T"] == 17 and report["kind"] == "discounted-run"
    assert report["weighted_average_value"] == pytest.approx(between.weighted_average_value[0].tolist(), abs=1e-10)
    assert report["last_iterate_nash_gap"] == pytest.approx(float(between.last_iterate_nash_gap[0]), abs=1e-10)
    # A reader of finite-horizon runs refuses it by what it is.
    with pytest.raises(ValueError, match="holds the run of a discounted game"):
        load_run_directory(out)
    # --weighted-average all: the weighted average iterate at every prefix, in curve.npz, read back checked.
    every = tmp_path / "every"
    assert main([*args, "--checkpoints", "5,40", "--weighted-average", "all", "--quiet", "--out", str(every)]) == 0
    assert json.loads((every / "metrics.json").read_text())["weighted_average"]["every_prefix"] is True
    stored = load_discounted_run_directory(every)
    all_prefixes = run(game, "hedge+discounted-smooth", T=40, eta=0.3, weighted_average=True)
    np.testing.assert_allclose(stored.weighted_average_value, all_prefixes.weighted_average_value, rtol=0, atol=1e-12)
    np.testing.assert_allclose(stored.weighted_average_best_response[[4, 39]], want.weighted_average_best_response, atol=1e-12)


def test_a_built_in_discounted_game_reports_its_own_units_too(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", "--game", "matching_pennies_discounted", "--algorithm", "ogda+discounted-smooth-uniform", "-T", "12"]
    options = ["--last-iterate", "--weighted-average", "--eta-schedule", "sqrt", "--no-trajectory"]
    assert main([*args, *options, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "duality" in printed and "gamma=0.9" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["eta_schedule"] == "sqrt" and metrics["weighted_average"]["weights"] == "discounted-smooth-uniform"
    record = metrics["checkpoints"][-1]
    assert record["weighted_average_duality_gap_original"] == pytest.approx(record["weighted_average_duality_gap"] * 2)
    game = get_discounted_builtin("matching_pennies_discounted")
    assert record["value_estimate_original"] == pytest.approx(game.original_value(record["value_estimate"]).tolist())
    # Without the trajectory evaluate reports the value estimate alone.
    assert main(["evaluate", str(out)]) == 0
    assert "kept no trajectory" in capsys.readouterr().out
    assert "last_iterate_value" not in json.loads((out / "evaluation.json").read_text())
