"""``markovgames run``, ``evaluate`` and ``plot`` with a feedback model (``--feedback``) and the seed
of its draws (``--seed``): what the run directory records, how it reads back, that it is the
library's run with the same seed, resuming, and the refusals (exit 2, one line naming the option)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import interrupting_progress, make_paper_game
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments import RunDirectoryError, load_run_directory, staging_directory

T = 30
ALGORITHM = "hedge+smooth"


def _run(out, *extra, T=T, algorithm=ALGORITHM):
    argv = ["run", "--game", "paper", "--algorithm", algorithm, "-T", str(T), "--out", str(out), *extra]
    return main(argv)


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        return stop.code


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run directories of the paper's game: sampled:2 with seeds 3 (twice) and 4, sampled:exact and full."""
    root = tmp_path_factory.mktemp("feedback")
    for name, extra in (
        ("s3", ["--feedback", "sampled:2", "--seed", "3", "--checkpoints", "10,20"]),
        ("s3-again", ["--feedback", "sampled:2", "--seed", "3", "--checkpoints", "10,20", "--quiet"]),
        ("s4", ["--feedback", "sampled:2", "--seed", "4", "--quiet"]),
        ("exact", ["--feedback", "sampled:exact", "--seed", "5", "--quiet"]),
        ("full", ["--quiet"]),
    ):
        assert _run(root / name, *extra) == 0
    return root


def test_run_records_the_feedback_seed_and_samples_and_equals_the_librarys_run(runs, capsys):
    metrics = json.loads((runs / "s3" / "metrics.json").read_text())
    direct = run(make_paper_game(), ALGORITHM, T=T, feedback="sampled:2", seed=3)
    samples = direct.samples_used
    assert samples is not None and samples[-1] > 0
    assert metrics["feedback"] == "sampled:2" and metrics["seed"] == 3
    assert metrics["samples_used"] == int(samples[-1])
    assert metrics["config"]["feedback"] == "sampled:2" and metrics["config"]["seed"] == 3
    assert metrics["identity_residual"] is None  # the lemma it checks holds for exact Q only
    for record in metrics["checkpoints"]:
        assert record["samples_used"] == int(samples[record["T"] - 1])
    with np.load(runs / "s3" / "curve.npz") as curve:
        assert curve["samples_used"].dtype == np.int64
        np.testing.assert_array_equal(curve["samples_used"], samples)
    stored = load_run_directory(runs / "s3")
    assert (stored.feedback, stored.seed) == ("sampled:2", 3)
    np.testing.assert_array_equal(stored.samples_used, samples)
    np.testing.assert_array_equal(stored.value, direct.value)
    np.testing.assert_array_equal(stored.certified_cce_bound, direct.certified_cce_bound)


def test_the_table_says_the_feedback_and_the_samples(tmp_path, capsys):
    assert _run(tmp_path / "r", "--feedback", "sampled:2", "--seed", "3", "--checkpoints", "10,20", T=20) == 0
    printed = capsys.readouterr().out
    assert "feedback sampled:2, seed 3" in printed and "samples" in printed
    assert _run(tmp_path / "r2", "--feedback", "sampled:2", "--seed", "3", "--checkpoints", "10", T=20) == 0
    printed = capsys.readouterr().out  # T is not a checkpoint: the samples drawn in all are said
    total = json.loads((tmp_path / "r2" / "metrics.json").read_text())["samples_used"]
    assert f"after T = 20: {total:,} samples drawn" in printed


def test_the_same_seed_gives_the_same_run_and_another_seed_another(runs):
    first, again, other = (load_run_directory(runs / name) for name in ("s3", "s3-again", "s4"))
    np.testing.assert_array_equal(first.value, again.value)
    np.testing.assert_array_equal(first.certified_ce_bound, again.certified_ce_bound)
    assert not np.array_equal(first.value, other.value)
    np.testing.assert_array_equal(first.samples_used, other.samples_used)  # as many draws, other numbers
    assert other.seed == 4


def test_sampled_exact_is_full_information(runs):
    exact, full = load_run_directory(runs / "exact"), load_run_directory(runs / "full")
    np.testing.assert_array_equal(exact.value, full.value)
    np.testing.assert_array_equal(exact.certified_cce_bound, full.certified_cce_bound)
    metrics = json.loads((runs / "exact" / "metrics.json").read_text())
    assert metrics["feedback"] == "sampled:exact" and metrics["seed"] is None  # it drew nothing
    assert "samples_used" not in metrics and not any("samples_used" in r for r in metrics["checkpoints"])
    assert metrics["config"]["feedback"] == "sampled:exact" and "seed" not in metrics["config"]
    with np.load(runs / "exact" / "curve.npz") as curve:
        assert "samples_used" not in curve.files
    assert (exact.feedback, exact.seed, exact.samples_used) == ("sampled:exact", None, None)


def test_full_information_writes_what_it_always_wrote(runs):
    """No feedback, seed or samples fields under the paper's feedback: the directory reads back as one
    written before they existed (feedback "full", seed null)."""
    metrics = json.loads((runs / "full" / "metrics.json").read_text())
    for key in ("feedback", "seed", "samples_used"):
        assert key not in metrics and key not in metrics["config"]
    stored = load_run_directory(runs / "full")
    assert (stored.feedback, stored.seed, stored.samples_used) == ("full", None, None)


def test_evaluate_shows_the_feedback_and_the_samples_at_T_prime(runs, tmp_path, capsys):
    out = tmp_path / "evaluation.json"
    assert main(["evaluate", str(runs / "s4"), "-T", "10", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "feedback sampled:2, seed 4" in printed and "samples drawn in the first T' = 10 iterations" in printed
    report = json.loads(out.read_text())
    assert report["feedback"] == "sampled:2" and report["seed"] == 4
    assert report["samples_used"] == int(load_run_directory(runs / "s4").samples_used[9])
    assert main(["evaluate", str(runs / "full"), "--out", str(tmp_path / "full.json"), "--quiet"]) == 0
    assert not {"feedback", "seed", "samples_used"} & set(json.loads((tmp_path / "full.json").read_text()))


def test_plot_a_run_against_the_samples(runs, tmp_path, capsys):
    figures = tmp_path / "figures"
    assert main(["plot", str(runs / "s3"), "--x-axis", "samples", "--out", str(figures)]) == 0
    for suffix in (".png", ".pdf"):
        assert (figures / f"gaps_paper_vs-samples{suffix}").stat().st_size > 0
    record = json.loads((figures / ".markovgames-figures.json").read_text())
    assert record["figures"]["gaps_paper_vs-samples.png"]["options"]["x_axis"] == "samples"
    capsys.readouterr()
    # A run that drew nothing has nothing to draw against: the option is named.
    assert _exit_code(["plot", str(runs / "exact"), "--x-axis", "samples", "--out", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "--x-axis samples: " in err and "the run drew no samples (feedback sampled:exact" in err
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--feedback", "bandit"], "--feedback: feedback must be 'bandit:M' with M (episodes per round) an integer"),
        (["--feedback", "sampled:0"], "--feedback: feedback model 'sampled:0': the number of samples must be an integer"),
        (["--feedback", "sampled:"], "--feedback: feedback model 'sampled:': give the number of samples"),
        (["--feedback", "sampled:2.5"], "--feedback: feedback model 'sampled:2.5'"),
        (["--feedback", "sampled:4", "--seed", "-3"], "--seed: expected a non-negative integer"),
        (["--feedback", "sampled:4", "--seed", "x"], "--seed: expected a non-negative integer, got 'x'"),
        (["--seed", str(2**63)], "--seed: expected a non-negative integer of at most 9223372036854775807"),
    ],
)
def test_bad_feedback_and_seed_are_one_line_exit_2_and_leave_nothing(tmp_path, capsys, extra, needle):
    code = _exit_code(["run", "--game", "paper", "--algorithm", ALGORITHM, "-T", "10", "--out", str(tmp_path / "out"), *extra])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("markovgames: error:") and needle in err[0], err
    assert not any(p.name in ("out", ".out.partial") for p in tmp_path.iterdir())


def test_resume_refuses_another_feedback_or_seed(tmp_path, monkeypatch, capsys):
    """An interrupted sampled run resumes only with its feedback and seed (the configuration names
    what differs; the engine's fingerprint refuses a state of another seed even where the
    configuration was made to agree); resumed, it is the uninterrupted run."""
    from markovgames.cli import _run as cli_run

    base = ["run", "--game", "paper", "--algorithm", ALGORITHM, "-T", "100", "--checkpoint-every", "20"]
    base += ["--out", str(tmp_path / "run"), "--quiet"]
    sampled = ["--feedback", "sampled:2", "--seed", "3"]
    with monkeypatch.context() as patch:
        patch.setattr(cli_run, "iteration_progress", interrupting_progress(50))
        assert main(base + sampled) == 130
    staging = staging_directory(tmp_path / "run")
    assert (staging / "state.npz").exists()
    capsys.readouterr()
    assert main(base + ["--feedback", "sampled:2", "--seed", "4", "--resume"]) == 2
    assert "seed: 3 there, 4 now" in capsys.readouterr().err
    assert main(base + ["--feedback", "sampled:3", "--seed", "3", "--resume"]) == 2
    assert "feedback: 'sampled:2' there, 'sampled:3' now" in capsys.readouterr().err
    assert main(base + ["--resume"]) == 2  # full information: neither is in the configuration
    assert "feedback: 'sampled:2' there, None now" in capsys.readouterr().err
    # The same configuration file, but a state of another seed: the fingerprint refuses it.
    config = json.loads((staging / "config.json").read_text())
    config["seed"] = 4
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    assert main(base + ["--feedback", "sampled:2", "--seed", "4", "--resume"]) == 2
    assert "belongs to a different run" in capsys.readouterr().err
    assert (staging / "state.npz").exists()
    config["seed"] = 3
    (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    assert main(base + sampled + ["--resume"]) == 0
    direct = run(make_paper_game(), ALGORITHM, T=100, feedback="sampled:2", seed=3)
    stored = load_run_directory(tmp_path / "run")
    np.testing.assert_array_equal(stored.value, direct.value)
    np.testing.assert_array_equal(stored.samples_used, direct.samples_used)
    # A finished run: --resume with another seed is refused, naming it.
    assert main(base + ["--feedback", "sampled:2", "--seed", "5", "--resume"]) == 2
    assert "holds a finished run with a different configuration (seed: 3 there, 5 now)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("feedback", "sampled:0", "feedback: expected a feedback model"),
        ("feedback", "sampled:02", "feedback: expected a feedback model"),
        ("seed", -1, "seed: expected a non-negative integer or null"),
        ("samples_used", 1.5, "samples_used: expected a non-negative integer"),
    ],
)
def test_a_tampered_metrics_file_is_refused_naming_the_field(runs, tmp_path, field, value, needle):
    import shutil

    shutil.copytree(runs / "s4", tmp_path / "run")
    path = tmp_path / "run" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics[field] = value
    path.write_text(json.dumps(metrics))
    with pytest.raises(RunDirectoryError, match=needle):
        load_run_directory(tmp_path / "run")


def test_a_curve_that_disagrees_with_the_samples_its_metrics_record_is_refused(runs, tmp_path):
    import shutil

    shutil.copytree(runs / "s4", tmp_path / "run")
    path = tmp_path / "run" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["samples_used"] += 1
    path.write_text(json.dumps(metrics))
    with pytest.raises(RunDirectoryError, match="samples_used: .* not the .* that metrics.json records"):
        load_run_directory(tmp_path / "run")
    # A full-information curve read as if it held the samples: the member is missing.
    shutil.copytree(runs / "full", tmp_path / "full")
    path = tmp_path / "full" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["samples_used"] = 10
    path.write_text(json.dumps(metrics))
    with pytest.raises(
        RunDirectoryError, match="expected the arrays value, certified_ce_bound, certified_cce_bound, samples_used"
    ):
        load_run_directory(tmp_path / "full")
