"""``markovgames evaluate``, ``run --exact`` and ``solve`` from the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from markovgames.cli import main
from markovgames.evaluation import exact_cce_gap, exact_ce_gap
from markovgames.games import paper_game
from markovgames.policies import MarkovCorrelatedPolicy


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "stage"
    assert (
        main(
            [
                "run",
                "--game",
                "paper",
                "--algorithm",
                "stage_cce",
                "-T",
                "300",
                "--exact",
                "--checkpoints",
                "1,30,300",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return out


def test_run_exact_adds_exact_gaps_below_certified(run_dir):
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for c in metrics["checkpoints"]:
        assert c["exact_ce_gap"] is not None and c["exact_cce_gap"] is not None
        assert len(c["exact_ce_gap_per_player"]) == 2
        assert -1e-12 <= c["exact_ce_gap"] <= c["certified_ce_gap"] + 1e-10
        assert c["exact_cce_gap"] <= c["certified_cce_gap"] + 1e-10
    first = metrics["checkpoints"][0]  # T' = 1: a single index, so certified == exact
    assert first["exact_cce_gap"] == pytest.approx(first["certified_cce_gap"], abs=1e-12)


def test_evaluate_writes_evaluation_json(run_dir, capsys):
    assert main(["evaluate", str(run_dir), "-T", "30", "--exact", "--monte-carlo", "20000", "--seed", "5"]) == 0
    report = json.loads((run_dir / "evaluation.json").read_text())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    at30 = next(c for c in metrics["checkpoints"] if c["T"] == 30)
    for key in (
        "value",
        "certified_ce_bound",
        "certified_cce_bound",
        "certified_ce_gap",
        "certified_cce_gap",
        "exact_ce_gap",
        "exact_cce_gap",
    ):
        np.testing.assert_allclose(report[key], at30[key], atol=1e-12)
    assert len(report["exact_ce_gap_per_player"]) == len(report["exact_cce_gap_per_player"]) == 2
    mc = report["monte_carlo"]
    z = (np.array(mc["value_mean"]) - np.array(report["value"])) / np.array(mc["value_stderr"])
    assert np.all(np.abs(z) < 4)
    exact_dev = report["value"][mc["ce_deviation_player"]] + report["exact_ce_gap_per_player"][mc["ce_deviation_player"]]
    assert abs(mc["ce_deviation_value_mean"] - exact_dev) < 4 * mc["ce_deviation_value_stderr"]
    shown = capsys.readouterr().out
    assert "exact CE gap" in shown
    # The deviations' Monte Carlo values sit in their player's column, not in "max over players".
    for kind, name in (("ce", "MC value of the best CE modification"), ("cce", "MC value of the best CCE deviation")):
        line = next(line for line in shown.splitlines() if name in line)
        cells = [c.strip() for c in line.strip().strip("│┃|").split("│")]
        player = mc[f"{kind}_deviation_player"]
        assert cells[1 + player].startswith(f"{mc[f'{kind}_deviation_value_mean']:.5f} ±"), cells
        assert cells[-1] == "" and all(c == "" for k, c in enumerate(cells[1:-1]) if k != player), cells
        assert "(player" not in line


def test_evaluate_does_not_overwrite_an_earlier_evaluation(run_dir, tmp_path, capsys):
    target = tmp_path / "evaluation.json"
    assert main(["evaluate", str(run_dir), "-T", "30", "--out", str(target), "--quiet"]) == 0
    first = target.read_text()
    assert main(["evaluate", str(run_dir), "-T", "300", "--out", str(target), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--out {target}: exists (an earlier evaluation); use --overwrite" in err
    assert target.read_text() == first
    assert main(["evaluate", str(run_dir), "-T", "300", "--out", str(target), "--quiet", "--overwrite"]) == 0
    assert json.loads(target.read_text())["T"] == 300


def test_evaluate_errors(run_dir, tmp_path, capsys):
    assert main(["evaluate", str(run_dir), "-T", "301", "--overwrite"]) == 2
    assert "T' in 1..300" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    # Over --max-work: each exact gap is noted as not computed (the certified ones are reported).
    assert main(["evaluate", str(run_dir), "--exact", "--max-work", "10", "--overwrite"]) == 0
    printed = capsys.readouterr().out
    assert "exact CE gap not computed: exact CE gap refused: estimated work" in printed and "max_work=10" in printed
    report = json.loads((run_dir / "evaluation.json").read_text())
    assert report["exact_ce_gap"] is None and report["exact_cce_gap"] is None
    assert "(--max-work)" in report["exact_cce_gap_skipped"] and report["certified_cce_gap"] >= 0


@pytest.mark.parametrize("concept", ["ce", "cce"])
def test_solve_gives_zero_exact_gap(tmp_path, concept):
    out = tmp_path / "sol"
    assert main(["solve", "--game", "paper", "--concept", concept, "--out", str(out), "--quiet"]) == 0
    record = json.loads((out / "solution.json").read_text())
    assert abs(record[f"exact_{concept}_gap"]) < 1e-7
    policy = MarkovCorrelatedPolicy.load(out / "policy.npz")
    gap = (exact_ce_gap if concept == "ce" else exact_cce_gap)(paper_game(), policy).gap
    assert abs(gap) < 1e-7
