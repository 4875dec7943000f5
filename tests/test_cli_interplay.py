"""``markovgames run`` and ``evaluate`` with the update order, step-size schedules, per-player
learning rates and regret curves: what the run directory records, how it reads back, and the
refusals (exit 2, one line naming the option)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from conftest import interrupting_progress, make_paper_game
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments import RunDirectoryError, load_run_directory, staging_directory
from markovgames.games import get_builtin

SETTINGS = ["--order", "alternating", "--eta-schedule", "sqrt", "--eta", "0.1,0.3", "--regret"]


def _run(tmp_path, *extra, algorithm="hedge+smooth", game="paper", T="60", out="run"):
    argv = ["run", "--game", game, "--algorithm", algorithm, "-T", T, "--out", str(tmp_path / out), *extra]
    return main(argv)


def test_run_records_order_schedule_rates_and_regret_curves(tmp_path, capsys):
    assert _run(tmp_path, *SETTINGS, "--checkpoints", "10,60") == 0
    printed = capsys.readouterr().out
    assert "alternating order" in printed and "eta schedule sqrt" in printed and "eta=0.1,0.3" in printed
    assert "ext. regret" in printed and "swap regret" in printed
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["order"] == "alternating" and metrics["eta_schedule"] == "sqrt"
    assert "eta_schedule_source" not in metrics  # a built-in schedule
    assert metrics["eta"] == [0.1, 0.3] and metrics["eta_value"] == [0.1, 0.3]
    config = metrics["config"]
    assert config["order"] == "alternating" and config["eta_schedule"] == "sqrt" and config["regret"] is True
    direct = run(make_paper_game(), "hedge+smooth", T=60, eta=(0.1, 0.3), order="alternating", step_schedule="sqrt", regret=True)
    for record in metrics["checkpoints"]:
        row = record["T"] - 1
        np.testing.assert_allclose(record["external_regret_per_player"], direct.external_regret[row], atol=1e-12)
        np.testing.assert_allclose(record["swap_regret_per_player"], direct.swap_regret[row], atol=1e-12)
        assert record["external_regret"] == pytest.approx(np.max(direct.external_regret[row]), abs=1e-12)
        assert record["swap_regret"] == pytest.approx(np.max(direct.swap_regret[row]), abs=1e-12)
    final = metrics["regret"]
    assert final["T"] == 60 and final["swap_regret"] == pytest.approx(np.max(direct.swap_regret[-1]), abs=1e-12)
    assert final["swap_regret"] > 0
    with np.load(tmp_path / "run" / "curve.npz") as curve:
        assert set(curve.files) == {"certified_ce_bound", "certified_cce_bound", "external_regret", "swap_regret", "value"}
    stored = load_run_directory(tmp_path / "run")
    assert stored.order == "alternating" and stored.eta_schedule == "sqrt"
    np.testing.assert_array_equal(stored.external_regret, direct.external_regret)
    np.testing.assert_array_equal(stored.swap_regret, direct.swap_regret)
    np.testing.assert_array_equal(stored.value, direct.value)


def test_final_regret_is_printed_when_T_is_not_a_checkpoint(tmp_path, capsys):
    assert _run(tmp_path, "--regret", "--checkpoints", "10", "--no-trajectory") == 0
    assert "after T = 60: average external regret" in capsys.readouterr().out


def test_regret_in_the_games_own_units(tmp_path):
    """Regrets are differences of utilities: in the game's units they scale by the map's scale only."""
    assert _run(tmp_path, "--regret", "--quiet", game="prisoners_dilemma", T="40", algorithm="hedge+smooth-uniform") == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    scale = get_builtin("prisoners_dilemma").units.scale
    for record in [*metrics["checkpoints"], metrics["regret"]]:
        for key in ("external_regret", "swap_regret"):
            assert record[f"{key}_original"] == pytest.approx(record[key] / scale, rel=1e-12)
            np.testing.assert_allclose(record[f"{key}_per_player_original"], np.array(record[f"{key}_per_player"]) / scale)
    assert metrics["regret"]["external_regret"] != 0.0


def test_users_schedule_is_recorded_with_its_digest_and_never_loaded_on_read(tmp_path, capsys):
    source = tmp_path / "schedule.py"
    source.write_text("def f(t):\n    return t ** -0.25\n")
    reference = f"{source}:f"
    assert _run(tmp_path, "--eta-schedule", reference, "--quiet", T="30") == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert metrics["eta_schedule"] == reference
    assert metrics["eta_schedule_source"] == {"reference": reference, "sha256": digest}
    assert metrics["config"]["eta_schedule_sha256"] == digest
    direct = run(make_paper_game(), "hedge+smooth", T=30, step_schedule=lambda_schedule())
    np.testing.assert_allclose(load_run_directory(tmp_path / "run").value, direct.value, atol=1e-14)
    # Reading the run needs no file of the schedule: a name read back is never loaded.
    source.write_text("raise RuntimeError('loaded')\n")
    assert load_run_directory(tmp_path / "run").eta_schedule == reference
    assert main(["evaluate", str(tmp_path / "run"), "--quiet"]) == 0
    report = json.loads((tmp_path / "run" / "evaluation.json").read_text())
    assert report["eta_schedule"] == reference and report["eta_schedule_source"]["sha256"] == digest


def lambda_schedule():
    from markovgames.dynamics import StepSchedule

    return StepSchedule("t^-1/4", lambda t: t**-0.25)


def test_a_run_without_the_new_options_writes_what_it_always_wrote(tmp_path):
    """No order, schedule or regret fields where they are the paper's settings; the directory reads
    back with the defaults, as one written before the options existed."""
    assert _run(tmp_path, "--quiet", T="20") == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    for key in ("order", "eta_schedule", "eta_schedule_source", "regret"):
        assert key not in metrics and key not in metrics["config"]
    assert not any("regret" in key for record in metrics["checkpoints"] for key in record)
    with np.load(tmp_path / "run" / "curve.npz") as curve:
        assert set(curve.files) == {"certified_ce_bound", "certified_cce_bound", "value"}
    stored = load_run_directory(tmp_path / "run")
    assert (stored.order, stored.eta_schedule, stored.external_regret, stored.swap_regret) == (
        "simultaneous",
        "constant",
        None,
        None,
    )
    assert main(["evaluate", str(tmp_path / "run"), "--quiet"]) == 0
    report = json.loads((tmp_path / "run" / "evaluation.json").read_text())
    assert not {"order", "eta_schedule", "external_regret"} & set(report)


def test_evaluate_shows_the_settings_and_the_regrets_at_T_prime(tmp_path, capsys):
    assert _run(tmp_path, *SETTINGS, "--quiet") == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run"), "-T", "30"]) == 0
    printed = capsys.readouterr().out
    assert "alternating order" in printed and "eta schedule sqrt" in printed and "average swap regret" in printed
    report = json.loads((tmp_path / "run" / "evaluation.json").read_text())
    stored = load_run_directory(tmp_path / "run")
    assert report["order"] == "alternating" and report["eta_schedule"] == "sqrt"
    np.testing.assert_array_equal(report["swap_regret_per_player"], stored.swap_regret[29])
    assert report["external_regret"] == float(np.max(stored.external_regret[29]))


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--order", "sideways"], "argument --order: invalid choice: 'sideways'"),
        (["--eta-schedule", "fast"], "--eta-schedule: unknown step-size schedule 'fast'"),
        (["--eta-schedule", "power:2"], "--eta-schedule: step-size schedule 'power:2'"),
        (["--eta-schedule", "nofile.py:f"], "--eta-schedule: 'nofile.py:f'"),
        (["--eta", "0.1,0.2,0.3"], "--eta: 3 rates given, but paper has 2 players"),
        (["--eta", "0.1,theory"], "--eta: 'theory' is one rate for all players"),
        (["--eta", "0.1,-1"], "--eta: every player's rate must be a positive finite number, got '-1'"),
        (["--eta", "0.1,"], "--eta: expected a positive number per player"),
        (
            ["--order", "alternating", "--algorithm", "extragradient+smooth-uniform"],
            "--order alternating: learner 'extragradient'",
        ),
        (["--no-optimism", "--algorithm", "exrm-plus+smooth-uniform"], "--no-optimism: learner 'exrm-plus'"),
    ],
)
def test_bad_settings_are_one_line_exit_2_and_leave_nothing(tmp_path, capsys, extra, needle):
    argv = ["run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--out", str(tmp_path / "out")]
    # A later --algorithm replaces the first (argparse keeps the last); argparse's own errors exit.
    try:
        code = main(argv + extra)
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("markovgames: error:") and needle in err[0], err
    assert not any(p.name in ("out", ".out.partial") for p in tmp_path.iterdir())


def test_resume_refuses_a_state_made_with_other_settings(tmp_path, monkeypatch, capsys):
    """An interrupted run with the new settings resumes only with the same ones: the configuration
    names what differs, and the engine's fingerprint refuses a state of other settings even where the
    configuration was made to agree."""
    from markovgames.cli import _run as cli_run

    base = ["run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "200", "--checkpoint-every", "50"]
    base += ["--out", str(tmp_path / "run"), "--quiet"]
    with monkeypatch.context() as patch:
        patch.setattr(cli_run, "iteration_progress", interrupting_progress(120))
        assert main(base + SETTINGS) == 130
    staging = staging_directory(tmp_path / "run")
    assert (staging / "state.npz").exists()
    capsys.readouterr()
    # Another order: the configuration says so.
    other = ["--order", "simultaneous", "--eta-schedule", "sqrt", "--eta", "0.1,0.3", "--regret"]
    assert main(base + other + ["--resume"]) == 2
    assert "order: 'alternating' there, None now" in capsys.readouterr().err
    # The same configuration file, but a state of other settings: the fingerprint refuses it.
    config = json.loads((staging / "config.json").read_text())
    del config["order"]
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    assert main(base + other + ["--resume"]) == 2
    assert "belongs to a different run" in capsys.readouterr().err
    assert (staging / "state.npz").exists()
    # The right settings (and configuration) resume to the uninterrupted run.
    config["order"] = "alternating"
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    assert main(base + SETTINGS + ["--resume"]) == 0
    direct = run(make_paper_game(), "hedge+smooth", T=200, eta=(0.1, 0.3), order="alternating", step_schedule="sqrt", regret=True)
    stored = load_run_directory(tmp_path / "run")
    np.testing.assert_array_equal(stored.value, direct.value)
    np.testing.assert_array_equal(stored.swap_regret, direct.swap_regret)


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("order", "sideways", "order: expected one of simultaneous, alternating"),
        ("eta", [0.1, -1.0], "eta: expected a positive number, 'theory' or a list of positive numbers"),
        ("regret", {"T": 10**6}, "regret: expected null or an object with the regrets after T = 20 iterations"),
        ("eta_schedule_source", {"sha256": 3}, "eta_schedule_source: expected null or an object"),
    ],
)
def test_a_tampered_metrics_file_is_refused_naming_the_field(tmp_path, field, value, needle):
    assert _run(tmp_path, "--quiet", "--no-trajectory", T="20") == 0
    path = tmp_path / "run" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics[field] = value
    path.write_text(json.dumps(metrics))
    with pytest.raises(RunDirectoryError, match=needle):
        load_run_directory(tmp_path / "run")


def test_a_curve_without_the_regrets_its_metrics_announce_is_refused(tmp_path):
    assert _run(tmp_path, "--quiet", "--no-trajectory", T="20") == 0
    path = tmp_path / "run" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["regret"] = {"T": 20, "external_regret": 0.0}
    path.write_text(json.dumps(metrics))
    with pytest.raises(
        RunDirectoryError, match="expected the arrays value, certified_ce_bound, certified_cce_bound, external_regret"
    ):
        load_run_directory(tmp_path / "run")


def test_algorithms_list_names_the_new_learners_and_the_two_query_ones(capsys):
    assert main(["algorithms", "list"]) == 0
    listing = capsys.readouterr().out
    for name in ("ogda", "extragradient", "exrm-plus", "sprm-plus"):
        assert f"  {name} " in listing, name
    assert (
        "Two utility queries per iteration (extragradient, exrm-plus): always optimistic, simultaneous updates only." in listing
    )
