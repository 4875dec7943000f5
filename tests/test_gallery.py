"""The gallery's studies (examples/*.py) run as documented, and the gallery page shows their figures."""

from __future__ import annotations

import csv
import math
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import case
from documented_commands import documented_commands, environment, is_study, markdown_commands, missing_output

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "docs" / "gallery.md"

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


def _run(script: str, *args: str, cwd: Path, code: int = 0) -> str:
    """Runs ``examples/SCRIPT`` with the suite's compilation cache (`environment`): its standard
    output, or with an exit ``code`` other than 0 its standard error."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=600,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc.stdout if code == 0 else proc.stderr


#: The studies that run a sweep: with more than one worker (their default) the sweep starts worker
#: processes, which import the script again, so the study runs in a process of its own.
SWEEPS = {"open_question.py", "horizon.py", "last_iterate.py"}


def _in_process(script: str, args, cwd: Path, monkeypatch, capsys, code: int = 0) -> str:
    """Runs ``examples/SCRIPT`` as ``__main__`` in this process, as `_run` does in one of its own
    (its exit code, its printed lines, its files: no interpreter and JAX to start, and the
    programs compiled here are the suite's)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [script, *args])
    capsys.readouterr()
    exit_code = 0
    try:
        runpy.run_path(str(ROOT / "examples" / script), run_name="__main__")
    except SystemExit as exc:  # argparse's refusals, the study's own errors
        exit_code = exc.code if isinstance(exc.code, int) else 1
    finally:
        if "matplotlib.pyplot" in sys.modules:  # the figures the study left open
            sys.modules["matplotlib.pyplot"].close("all")
    captured = capsys.readouterr()
    assert exit_code == code, captured.out + captured.err
    return captured.out if code == 0 else captured.err


def _run_study(script: str, args, cwd: Path, monkeypatch, capsys, code: int = 0) -> str:
    """`_run`, or `_in_process` unless the study starts worker processes (a sweep without
    ``--workers 1``)."""
    workers = [args[k + 1] for k, word in enumerate(args[:-1]) if word == "--workers"]
    if script in SWEEPS and workers[-1:] != ["1"]:
        return _run(script, *args, cwd=cwd, code=code)
    return _in_process(script, args, cwd, monkeypatch, capsys, code)


#: What each study writes besides its printed lines (under its default --out).
FIGURES = {
    "open_question.py": [
        "sweeps/open_question/figures/gaps_general-sum_window-*.png",
        "sweeps/open_question/figures/slopes_*.png",
    ],
    "horizon.py": ["sweeps/horizon/figures/gap_times_T_vs_horizon.png"],
    "last_iterate.py": ["sweeps/last_iterate/figures/last_iterate.png"],
    "last_iterate_rm.py": ["sweeps/last_iterate_rm/figures/last_iterate_rm.png", "sweeps/last_iterate_rm/curves.csv"],
    "optimistic_hedge.py": ["sweeps/optimistic_hedge/figures/optimistic_hedge.png", "sweeps/optimistic_hedge/curves.csv"],
    "feedback_rates.py": [
        "sweeps/feedback_rates/figures/feedback_rates.png",
        "sweeps/feedback_rates/curves.csv",
        "sweeps/feedback_rates/summary.csv",
    ],
    "discounted_rates.py": ["sweeps/discounted_rates/figures/discounted_rates.png", "sweeps/discounted_rates/curves.csv"],
    "vlearning_rates.py": [
        "sweeps/vlearning_rates/figures/vlearning_rates.png",
        "sweeps/vlearning_rates/curves.csv",
        "sweeps/vlearning_rates/summary.csv",
    ],
}

#: Each study's smallest size besides -T (the sweeps' in this process), and its one line for -T 0.
SMALLEST = {
    "open_question.py": (("--games", "1", "--workers", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "horizon.py": (("--games", "1", "--workers", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "last_iterate.py": (("--games", "1", "--workers", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "last_iterate_rm.py": ((), "-T must be at least 1 and --eta positive, got 0 and 0.1"),
    "optimistic_hedge.py": (("--games", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "discounted_rates.py": (("--games", "1"), "-T and --games must be at least 1, got 0 and 1"),
    "feedback_rates.py": (
        ("--seeds", "1", "--games", "1", "--game-seeds", "1", "--states", "2", "--samples", "1"),
        "-T, --seeds, --games, --game-seeds and --states must be at least 1, got 0, 1, 1, 1 and 2",
    ),
    "vlearning_rates.py": (
        ("--seeds", "1", "--games", "1", "--game-seeds", "1", "--states", "2"),
        "-K, --seeds, --games, --game-seeds and --states must be at least 1, got 0, 1, 1, 1 and 2",
    ),
}

#: The option that sets a study's size, where it is not -T (the study prints "K = ..." for -K).
SIZE_OPTION = {"vlearning_rates.py": "-K"}


def _study_invocations():
    """Every documented invocation of a study (docs/gallery.md, the scripts' docstrings), once.

    A study at its default size (no -T or -K: ``T = 10^5``, a minute or two on two cores) runs in
    the full mode; the quick looks run by default."""
    seen = {}
    for command in documented_commands():
        if is_study(command):
            seen.setdefault(command.argv, command)
    sized = ("-T", *SIZE_OPTION.values())
    return [pytest.param(c, id=c.id, marks=() if any(o in c.argv for o in sized) else pytest.mark.full) for c in seen.values()]


def _shown_output(script: str):
    """The gallery's output block for ``script`` and the invocation that printed it."""
    shown = [c for c in markdown_commands(GALLERY) if c.argv[1:2] == (f"examples/{script}",) and c.output and c.first_in_block]
    assert len(shown) == 1, f"the gallery shows no output (or several) of {script}"
    return shown[0]


# Early: the quick looks of the V-learning and feedback studies take up to a minute each.
@pytest.mark.early
@pytest.mark.parametrize("command", _study_invocations())
def test_study_runs_as_documented(command, tmp_path, monkeypatch, capsys):
    """The invocation as written prints the lines the gallery shows (with other numbers at another
    size; with the gallery's numbers, to 1%, at the size it shows) and writes its figures."""
    script = Path(command.argv[1]).name
    assert script in FIGURES, f"{script}: add what it writes to FIGURES"
    out = _run_study(script, command.argv[2:], tmp_path, monkeypatch, capsys)
    shown = _shown_output(script)
    missing = missing_output(out, shown.output, rtol=1e-2 if command.argv == shown.argv else None)
    assert not missing, f"{command.id}: the gallery shows {missing}, which it did not print:\n{out}"
    for pattern in FIGURES[script]:
        figures = list(tmp_path.glob(pattern))
        assert figures and all(f.stat().st_size > 1000 for f in figures), pattern
    # The quick looks whose outputs have checks of their own: checked on this run's files (the
    # study runs once, not once more for its checks).
    if command.argv[2:] in QUICK_LOOK_CHECKS.get(script, {}):
        QUICK_LOOK_CHECKS[script][command.argv[2:]](tmp_path)


@pytest.mark.parametrize(
    "script, T",
    [
        case(
            script,
            T,
            default=T == 0,
            id=f"{script}-T{T}",
        )
        for script in sorted(FIGURES)
        for T in (0, 1, 150)
    ],
)
def test_study_takes_any_size(script, T, tmp_path, monkeypatch, capsys):
    """Any -T (or -K) works (one checkpoint at T = 1; no 10^k near T/100 at T = 150), and one the
    study refuses is argparse's one line and exit 2, before any work."""
    assert script in SMALLEST, f"{script}: add its smallest size to SMALLEST"
    size, refusal = SMALLEST[script]
    option = SIZE_OPTION.get(script, "-T")
    args = (*size, option, str(T), "--out", "sw")
    if T == 0:
        err = _run_study(script, args, tmp_path, monkeypatch, capsys, code=2)
        assert err.splitlines()[-1] == f"{script}: error: {refusal}"
        assert not (tmp_path / "sw").exists()
        return
    out = _run_study(script, args, tmp_path, monkeypatch, capsys)
    assert f"{option[1:]} = {T:,}" in out and "nan" not in out.replace("slope +nan", ""), out


#: Example scripts that are not studies (the learner of the guide "Write your own learner").
NOT_STUDIES = {"custom_learner.py"}


def test_gallery_page_shows_every_study_and_its_committed_figures():
    text = GALLERY.read_text(encoding="utf-8")
    for script in sorted((ROOT / "examples").glob("*.py")):
        if script.name in NOT_STUDIES:
            continue
        assert f"examples/{script.name}" in text, f"{script.name} is not in the gallery"
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", text)
    assert len(images) >= 4
    for image in images:
        path = ROOT / "docs" / image
        assert path.suffix == ".png" and path.is_file(), image
        assert path.stat().st_size < 300_000, f"{image} is not small"


#: The feedback study's quick look, word for word as documented: its documented run (above) is
#: checked by `_check_feedback_quick_look` too.
FEEDBACK_QUICK_LOOK = ("-T", "1000", "--seeds", "2", "--games", "1", "--game-seeds", "2", "--states", "2", "--samples", "1,64")


def _check_feedback_quick_look(tmp_path: Path) -> None:
    """The facts the feedback study's verdicts rest on, at its quick look's size, in the files
    that its run in ``tmp_path`` wrote.

    Every run's draws are fixed by its seed (docs/feedback.md: the same seed gives the same run),
    so the sampled runs are as deterministic as the full-information ones: the comparisons below
    are between fixed numbers, each with a wide margin at this size (quoted beside it)."""
    out = tmp_path / "sweeps" / "feedback_rates"
    with open(out / "summary.csv", encoding="utf-8") as f:
        rows = {(r["family"], r["algorithm"], r["feedback"]): r for r in csv.DictReader(f)}
    with open(out / "curves.csv", encoding="utf-8") as f:
        curves = list(csv.DictReader(f))
    families, algorithms = ("paper game", "random games"), ("smooth_ce", "smooth_cce", "stage_cce")
    pairs = [(f, a) for f in families for a in algorithms]
    assert set(rows) == {(f, a, fb) for f, a in pairs for fb in ("full", "sampled:1", "sampled:64")}

    # Certified gaps are >= 0 (each certified bound maximises over the deviator's actions what the
    # policy's own actions average to, docs/gaps.md), up to rounding, and finite.
    for c in curves:
        for column in ("mean_gap", "min_gap", "max_gap"):
            assert math.isfinite(float(c[column])) and float(c[column]) >= -1e-12, c
    # Exact gaps lie below the certified ones (docs/gaps.md: always), and an exact CE gap is >= 0
    # (the identity modification is one of the deviations): both up to rounding.
    for (family, algorithm, _), r in rows.items():
        if family == "paper game":
            assert float(r["exact_minus_certified_max"]) <= 1e-12, r
            if algorithm == "smooth_ce":
                assert float(r["exact_min"]) >= -1e-12, r

    # Samples: none under full information; under sampled:K exactly K times sampled:1's after every
    # prefix (K opponent profiles per estimate and K next states per target: docs/feedback.md), and
    # on the paper's game with the smooth updates 16 K per iteration (8 K profiles, 8 K next states).
    samples = {}
    for c in curves:
        samples.setdefault((c["family"], c["algorithm"], c["feedback"]), []).append((int(c["t"]), c["samples"]))
    for (family, algorithm, feedback), points in samples.items():
        if feedback == "full":
            assert all(s == "" for _, s in points)
            continue
        k = int(feedback.split(":")[1])
        one = dict(samples[family, algorithm, "sampled:1"])
        assert all(int(s) == k * int(one[t]) for t, s in points)
        if family == "paper game" and algorithm != "stage_cce":
            assert all(int(s) == 16 * k * t for t, s in points)

    def final(family, algorithm, feedback):
        return float(rows[family, algorithm, feedback]["gap_mean"])

    for family, algorithm in pairs:
        # More samples per estimate, closer to full information at T: sampled:64's estimates have
        # 1/64 of sampled:1's variance. Smallest margin here (the random game's smooth_ce): sampled:1
        # is 0.0022 from full information, sampled:64 0.0001.
        full = final(family, algorithm, "full")
        assert abs(final(family, algorithm, "sampled:64") - full) < abs(final(family, algorithm, "sampled:1") - full)
        # Per sample, sampled:1 is ahead: with sampled:1's samples at T = 1000, sampled:64 has run
        # 15 iterations, whose gaps are still near the start's (about 0.13 to 0.2 here, against at
        # most 0.12 for sampled:1 at T).
        equal = {k: float(rows[family, algorithm, f"sampled:{k}"]["gap_at_equal_samples"]) for k in (1, 64)}
        assert equal[1] < equal[64]
    for algorithm in algorithms:
        # On the paper's game the noise flattens the curve: full information's slope over
        # [T/10, T] is steeper than sampled:1's, by 0.27 to 0.32 here. (Not asserted on the one
        # random game of the quick look, where the two slopes are within 0.02 for smooth_ce.)
        slopes = {fb: float(rows["paper game", algorithm, fb]["slope"]) for fb in ("full", "sampled:1")}
        assert slopes["full"] < slopes["sampled:1"] - 0.1, slopes


#: The V-learning study's quick look, word for word as documented (its documented run is checked by
#: `_check_vlearning_quick_look` too).
VLEARNING_QUICK_LOOK = ("-K", "2000", "--seeds", "2", "--games", "1", "--game-seeds", "2", "--states", "2")


def _episodes_per_round(setting: str) -> int:
    """``M`` of a bandit setting's label, ``bandit:M``, ``bandit:M ix=X`` or ``bandit:M rate=constant``."""
    return int(setting.split()[0].partition(":")[2])


def _check_vlearning_quick_look(tmp_path: Path) -> None:
    """The facts the V-learning study's table rests on, at its quick look's size, in the files that
    its run in ``tmp_path`` wrote: the samples counted on both sides of the comparison, the budget,
    and exact gaps below certified ones. (No rates: 2,000 episodes are too few for them.)"""
    out = tmp_path / "sweeps" / "vlearning_rates"
    with open(out / "summary.csv", encoding="utf-8") as f:
        rows = {(r["family"], r["algorithm"], r["feedback"]): r for r in csv.DictReader(f)}
    with open(out / "curves.csv", encoding="utf-8") as f:
        curves = list(csv.DictReader(f))
    families = ("paper game", "random games")
    settings = [(a, "play") for a in ("cce-v", "ce-v", "stage-v")]
    bandits = ("bandit:1", "bandit:1 rate=constant", "bandit:16", "bandit:16 ix=0.2", "bandit:16 ix=0")
    settings += [(a, fb) for a in ("smooth_cce", "stage_cce") for fb in ("sampled:1", "full", *bandits)]
    assert set(rows) == {(f, a, fb) for f in families for a, fb in settings}
    budget = 2000 * 2  # K H

    # Certified gaps are finite and >= 0 (up to rounding), their quartiles in order.
    for c in curves:
        q = [float(c[k]) for k in ("min_gap", "q25_gap", "median_gap", "q75_gap", "max_gap")]
        assert all(math.isfinite(v) for v in q) and q[0] >= -1e-12 and q == sorted(q), c
        step, samples = int(c["step"]), c["samples"]
        if c["feedback"] == "play":  # H = 2 transitions per episode
            assert int(samples) == 2 * step, c
        elif c["feedback"].startswith("bandit:"):  # a step is a round of M episodes of H = 2 transitions
            assert int(samples) == 2 * _episodes_per_round(c["feedback"]) * step, c
        elif c["feedback"] == "full":  # full information draws nothing
            assert samples == "", c
        elif c["algorithm"] == "smooth_cce":  # N H S profiles and (H - 1) S |A| next states per iteration
            assert int(samples) == 16 * step, c  # both games with S = 2 (--states 2)

    for (family, algorithm, feedback), r in rows.items():
        if feedback == "play":
            assert (int(r["runs"]), int(r["steps"]), int(r["samples"])) == (2, 2000, budget), r
            # A CE gap is at least the CCE gap (every constant deviation is a strategy modification).
            assert float(r["gap_median"]) >= float(r["cce_gap_median"]) - 1e-12, r
        elif feedback.startswith("bandit:"):
            # The same episodes as V-learning, in whole rounds of M: 2000 = 125 rounds of 16.
            M = _episodes_per_round(feedback)
            assert (int(r["runs"]), int(r["steps"]), int(r["samples"])) == (2, 2000 // M, budget), r
            # The implicit exploration used: the default, decaying from eta H / 2 = 0.2, or the
            # constant the label names.
            constant = feedback.partition(" ix=")[2]
            expected = (float(constant), "constant") if constant else (0.2, "decaying")
            assert (float(r["ix"]), r["ix_schedule"]) == expected, r
            # ... and the learning rate's schedule: the default, decaying, or the constant the label names.
            assert r["bandit_rate"] == ("constant" if "rate=constant" in feedback else "decaying"), r
        else:
            # The OFTRL runs stay within V-learning's samples, and one more iteration would not:
            # 250 iterations of smooth_cce (16 draws each, on both games: S = 2); stage_cce draws its
            # next states only at stages' ends, so it runs longer.
            per = 16
            if algorithm == "smooth_cce":
                assert int(r["steps"]) == budget // per, r
            else:
                assert int(r["steps"]) > budget // per, r
            if feedback == "sampled:1":
                assert budget - per < int(r["samples"]) <= budget, r
        if family == "paper game" and (feedback == "play" or feedback.startswith("bandit:")):
            # Exact gaps lie below the certified ones (docs/gaps.md: always), for every seed at
            # K/10 and K; an exact CE gap is >= 0 (the identity modification is one of the deviations).
            assert int(r["exact_within"]) == int(r["exact_count"]) == 4, r
            if algorithm == "ce-v":
                assert float(r["exact_min"]) >= -1e-12, r
        else:
            assert r["exact_count"] == "", r


def _check_vlearning_fails_when_an_exact_gap_exceeds_its_certified_bound(tmp_path: Path) -> None:
    """The study refuses to report an exact gap above its certified bound (impossible unless an
    evaluator is wrong): the setting names it, and the script exits with an error after the table.
    (Run after the quick look, in its process: the runs below are its compiled programs.)"""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _fails_when_an_exact_gap_exceeds_its_certified_bound(monkeypatch)


def _fails_when_an_exact_gap_exceeds_its_certified_bound(monkeypatch) -> None:
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("vlearning_rates", ROOT / "examples" / "vlearning_rates.py")
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    # The quick look's sizes and settings, so that the runs below are its compiled programs.
    quick_look = dict(zip(VLEARNING_QUICK_LOOK[::2], map(int, VLEARNING_QUICK_LOOK[1::2]), strict=True))
    K, seeds = quick_look["-K"], quick_look["--seeds"]
    [(family, members, exact), _] = study.families(games=1, seeds=seeds, game_seeds=1)

    def named(above, setting):  # one entry per seed and exact point (K/10 and K), naming its setting
        found = {(a.split(", seed ")[0], int(a.split(", seed ")[1].split(",")[0])) for a in above}
        return len(above) == 2 * seeds and found == {(f"paper game, {setting}", seed) for seed in range(seeds)}

    _, _, _, above = study.run_vlearning_setting(family, members, exact, "cce-v", "cce", K)
    assert above == []
    monkeypatch.setattr(study, "exact_cce_gap", lambda game, policy: SimpleNamespace(gap=10.0))
    _, _, _, above = study.run_vlearning_setting(family, members, exact, "cce-v", "cce", K)
    assert named(above, "cce-v play"), above
    _, _, _, above = study.run_vlearning_setting(family, members, exact, "smooth_cce", "cce", K, "bandit:16")
    assert named(above, "smooth_cce bandit:16"), above
    row, _, _, above = study.run_vlearning_setting(family, members, exact, "smooth_cce", "cce", K, "bandit:16 ix=0")
    assert named(above, "smooth_cce bandit:16 ix=0"), above
    assert (row["steps"], row["ix"]) == (K // 16, 0.0), row
    assert "exact CCE gap 10.0 above the certified" in above[0]
    with pytest.raises(SystemExit, match="exact gaps above their certified bounds"):
        study.fail_if_above(above)


def _check_vlearning_quick_look_and_its_refusal(tmp_path: Path) -> None:
    _check_vlearning_quick_look(tmp_path)
    _check_vlearning_fails_when_an_exact_gap_exceeds_its_certified_bound(tmp_path)


#: The quick looks whose documented run is checked further, by script and invocation.
QUICK_LOOK_CHECKS = {
    "feedback_rates.py": {FEEDBACK_QUICK_LOOK: _check_feedback_quick_look},
    "vlearning_rates.py": {VLEARNING_QUICK_LOOK: _check_vlearning_quick_look_and_its_refusal},
}


def test_the_quick_looks_checked_further_are_the_documented_ones():
    """`QUICK_LOOK_CHECKS` names documented invocations, word for word: otherwise its checks would
    run on nothing (`test_study_runs_as_documented` runs them on the documented runs)."""
    documented = {(Path(c.argv[1]).name, c.argv[2:]) for c in documented_commands() if is_study(c)}
    for script, checks in QUICK_LOOK_CHECKS.items():
        for args in checks:
            assert (script, args) in documented, f"keep the checks of {script} on its documented quick look"
