"""``markovgames vlearn`` and ``evaluate`` of its directory: the files, their numbers against the
library's (`run_vlearning`, `prefix_curves`, the exact gaps), one-line errors with exit code 2,
and the rules of ``--overwrite``. The catalogue of bad input has its cases too
(``tests/test_bad_input_commands.py``, section "markovgames vlearn" of docs/errors.md)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from markovgames.cli import main
from markovgames.dynamics import run_vlearning
from markovgames.evaluation import estimate_work, exact_cce_gap, exact_ce_gap, policy_value, prefix_curves
from markovgames.games import paper_game, save_game
from markovgames.policies import VisitChainPolicy

#: cce-v on the paper's game for 120 episodes: the compiled round of test_vlearning.py and
#: test_vlearning_reference.py.
EPISODES = 120


@pytest.fixture(scope="module")
def vlearn_dir(tmp_path_factory) -> Path:
    """``markovgames vlearn paper --algorithm cce-v --episodes 120 --seed 3`` (default checkpoints)."""
    out = tmp_path_factory.mktemp("vlearn") / "vl"
    argv = ["vlearn", "paper", "--algorithm", "cce-v", "--episodes", str(EPISODES), "--seed", "3", "--out", str(out)]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def library_run():
    return run_vlearning(paper_game(), "cce-v", EPISODES, seed=3)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("markovgames: error: "), err
    assert "Traceback" not in err[0]
    return err[0]


def test_vlearn_writes_metrics_policy_and_game(vlearn_dir, library_run, capsys):
    assert sorted(p.name for p in vlearn_dir.iterdir()) == [".markovgames", "game.json", "metrics.json", "policy.npz"]
    assert not list(vlearn_dir.parent.glob(".vl*")), "a staging directory or lock file was left"
    metrics = json.loads((vlearn_dir / "metrics.json").read_text())
    assert metrics["kind"] == "vlearning" and metrics["game"] == "paper" and metrics["algorithm"] == "cce-v"
    assert metrics["episodes"] == EPISODES and metrics["seed"] == 3 and metrics["bonus"] == 1.0
    assert metrics["samples_used"] == EPISODES * 2 == library_run.samples_used
    assert metrics["config"] == {
        "game": "paper",
        "algorithm": "cce-v",
        "episodes": EPISODES,
        "seed": 3,
        "bonus": None,  # the library's default, which "bonus" records
        "checkpoints": [1, 10, 100, EPISODES],
    }
    assert {"markovgames", "numpy", "jax", "python"} <= set(metrics["versions"])
    # The numbers are the library's: prefix_curves of the same run's output policy.
    game = paper_game()
    curves = prefix_curves(game, library_run.policy, [1, 10, 100, EPISODES])
    assert [c["episodes"] for c in metrics["checkpoints"]] == [1, 10, 100, EPISODES]
    for row, c in enumerate(metrics["checkpoints"]):
        assert c["samples_used"] == 2 * c["episodes"]
        np.testing.assert_allclose(c["value"], curves.value[row], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c["certified_ce_bound"], curves.certified_ce[row], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c["certified_cce_bound"], curves.certified_cce[row], rtol=0, atol=1e-12)
        assert c["certified_ce_gap"] == pytest.approx(curves.certified_ce_gap[row], abs=1e-12)
        assert c["certified_cce_gap"] == pytest.approx(curves.certified_cce_gap[row], abs=1e-12)
        np.testing.assert_allclose(
            c["certified_cce_gap_per_player"], curves.certified_cce[row] - curves.value[row], rtol=0, atol=1e-12
        )
    # The saved output policy is the run's.
    saved = VisitChainPolicy.load(vlearn_dir / "policy.npz")
    assert saved.T == EPISODES and saved.kind == library_run.policy.kind
    np.testing.assert_allclose(policy_value(game, saved), policy_value(game, library_run.policy), rtol=0, atol=1e-12)


def test_evaluate_agrees_with_the_librarys_exact_gaps(vlearn_dir, library_run, tmp_path, capsys):
    game = paper_game()
    for K_prime in (EPISODES, 37):
        out = tmp_path / f"ev{K_prime}.json"
        argv = ["evaluate", str(vlearn_dir), "--exact", "--out", str(out), "--quiet"]
        assert main(argv + ([] if K_prime == EPISODES else ["-T", str(K_prime)])) == 0
        report = json.loads(out.read_text())
        policy = library_run.policy.prefix(K_prime)
        ce, cce = exact_ce_gap(game, policy), exact_cce_gap(game, policy)
        assert report["kind"] == "vlearning" and report["episodes"] == K_prime and report["samples_used"] == 2 * K_prime
        assert report["exact_ce_gap"] == pytest.approx(ce.gap, abs=1e-12)
        assert report["exact_cce_gap"] == pytest.approx(cce.gap, abs=1e-12)
        np.testing.assert_allclose(report["exact_ce_gap_per_player"], ce.per_player, rtol=0, atol=1e-12)
        np.testing.assert_allclose(report["exact_value"], policy_value(game, policy), rtol=0, atol=1e-12)
        curves = prefix_curves(game, library_run.policy, [K_prime])
        np.testing.assert_allclose(report["value"], curves.value[0], rtol=0, atol=1e-12)
        assert report["certified_ce_gap"] == pytest.approx(curves.certified_ce_gap[0], abs=1e-12)
        # The certified bounds bound the exact gaps.
        assert report["exact_ce_gap"] <= report["certified_ce_gap"] + 1e-12
        assert report["exact_cce_gap"] <= report["certified_cce_gap"] + 1e-12
    assert not (vlearn_dir / "evaluation.json").exists()
    # Into the directory, with Monte Carlo and the table.
    work = tmp_path / "vl"
    shutil.copytree(vlearn_dir, work)
    assert main(["evaluate", str(work), "--monte-carlo", "400", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert f"output policy after K' = {EPISODES} episodes ({2 * EPISODES} samples)" in printed and "Monte Carlo value" in printed
    report = json.loads((work / "evaluation.json").read_text())
    assert report["monte_carlo"]["episodes"] == 400 and "exact_ce_gap" not in report


def test_evaluate_reports_the_exact_gaps_that_fit_and_the_concept_chosen(vlearn_dir, library_run, tmp_path, capsys):
    """--max-work between the two estimates: the larger one's gap is refused with its reason, the
    other is still computed (as `run --exact` does); --concept computes one of them; --concept needs --exact."""
    game, policy = paper_game(), library_run.policy
    est = estimate_work(game, policy)
    works = {"ce": est.ce_work, "cce": est.cce_work}
    refused = max(works, key=works.__getitem__)
    kept = "cce" if refused == "ce" else "ce"
    assert works[kept] < works[refused]
    out = tmp_path / "partial.json"
    limit = (works["ce"] + works["cce"]) / 2
    assert main(["evaluate", str(vlearn_dir), "--exact", "--max-work", repr(limit), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    name, other = f"exact_{refused}_gap", f"exact_{kept}_gap"
    assert report[name] is None and report[name + "_per_player"] is None
    assert report[name + "_skipped"].startswith(f"exact {refused.upper()} gap refused: estimated work")
    computed = (exact_ce_gap if kept == "ce" else exact_cce_gap)(game, policy)
    assert report[other] == pytest.approx(computed.gap, abs=1e-12) and other + "_skipped" not in report
    assert (
        "not computed" in printed and f"exact {refused.upper()} gap not computed: exact {refused.upper()} gap refused" in printed
    )
    # One concept only.
    for concept, present, absent in (("ce", "exact_ce_gap", "exact_cce_gap"), ("cce", "exact_cce_gap", "exact_ce_gap")):
        out = tmp_path / f"{concept}.json"
        assert main(["evaluate", str(vlearn_dir), "--exact", "--concept", concept, "--quiet", "--out", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report[present] is not None and absent not in report
    assert main(["evaluate", str(vlearn_dir), "--concept", "ce", "--out", str(tmp_path / "no.json")]) == 2
    assert "--concept: chooses the exact gaps that --exact computes" in _one_error_line(capsys)
    assert not (tmp_path / "no.json").exists()


def test_a_game_file_bonus_and_checkpoints(tmp_path, capsys):
    game_file = tmp_path / "g.json"
    save_game(paper_game(), game_file)
    out = tmp_path / "runs" / "stage"
    argv = ["vlearn", "--game", str(game_file), "--algorithm", "stage-v", "--episodes", str(EPISODES), "--bonus", "0"]
    assert main([*argv, "--seed", "5", "--checkpoints", f"{EPISODES},5", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "stage-v on paper (seed 5, bonus 0)" in printed and "wrote" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["config"]["game"] == str(game_file) and metrics["bonus"] == 0.0 and metrics["kernel"] == "stage"
    direct = run_vlearning(paper_game(), "stage-v", EPISODES, seed=5, bonus=0.0)
    curves = prefix_curves(paper_game(), direct.policy, [5, EPISODES])
    assert [c["episodes"] for c in metrics["checkpoints"]] == [5, EPISODES]
    for row, c in enumerate(metrics["checkpoints"]):
        np.testing.assert_allclose(c["value"], curves.value[row], rtol=0, atol=1e-12)
        assert c["certified_cce_gap"] == pytest.approx(curves.certified_cce_gap[row], abs=1e-12)


def _evaluate_title(run_dir, capsys) -> str:
    """What ``markovgames evaluate RUN_DIR`` prints (its title names the run's settings)."""
    assert main(["evaluate", str(run_dir), "--out", str(run_dir.parent / f"{run_dir.name}-report.json")]) == 0
    return capsys.readouterr().out


def test_a_composition_on_bandit_feedback_in_rounds(tmp_path, capsys):
    # hedge+smooth on bandit:4 with every setting given: the numbers are the library's, per round.
    out = tmp_path / "comp"
    settings = ["--eta", "0.3", "--bandit-rate", "constant", "--ix", "0.05", "--bonus", "0.02", "--no-optimism"]
    argv = ["vlearn", "paper", "--algorithm", "hedge+smooth", "--feedback", "bandit:4", "--episodes", "120"]
    assert main([*argv, *settings, "--seed", "2", "--checkpoints", "8,40,120", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    title = "hedge+smooth on paper (bandit:4, seed 2, eta 0.3 constant, ix 0.05, bonus 0.02, no optimism)"
    assert title in " ".join(printed.split())  # (the title wraps at its table's width)
    assert "rounds" in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["feedback"], metrics["episodes"], metrics["rounds"], metrics["samples_used"]) == ("bandit:4", 120, 30, 240)
    assert (metrics["eta"], metrics["ix"], metrics["bonus"], metrics["optimistic"]) == (0.3, 0.05, 0.02, False)
    assert metrics["ix_schedule"] == "constant"  # a number given is a constant
    assert metrics["bandit_rate"] == metrics["config"]["bandit_rate"] == "constant"
    assert metrics["config"]["feedback"] == "bandit:4" and metrics["config"]["optimistic"] is False
    game = paper_game()
    direct = run_vlearning(
        game,
        "hedge+smooth",
        120,
        seed=2,
        feedback="bandit:4",
        eta=0.3,
        bandit_rate="constant",
        ix=0.05,
        bonus=0.02,
        optimistic=False,
    )
    curves = prefix_curves(game, direct.policy, [2, 10, 30])  # rounds
    assert [(c["episodes"], c["rounds"], c["samples_used"]) for c in metrics["checkpoints"]] == [
        (8, 2, 16),
        (40, 10, 80),
        (120, 30, 240),
    ]
    for row, c in enumerate(metrics["checkpoints"]):
        np.testing.assert_allclose(c["value"], curves.value[row], rtol=0, atol=1e-12)
        assert c["certified_ce_gap"] == pytest.approx(curves.certified_ce_gap[row], abs=1e-12)
        assert c["certified_cce_gap"] == pytest.approx(curves.certified_cce_gap[row], abs=1e-12)
    # evaluate: K' episodes are K'/M rounds; the exact gaps are those of that prefix.
    report_file = tmp_path / "ev.json"
    assert main(["evaluate", str(out), "-T", "40", "--exact", "--quiet", "--out", str(report_file)]) == 0
    report = json.loads(report_file.read_text())
    prefix = direct.policy.prefix(10)
    assert (report["episodes"], report["rounds"], report["feedback"], report["eta"], report["optimistic"]) == (
        40,
        10,
        "bandit:4",
        0.3,
        False,
    )
    assert report["exact_ce_gap"] == pytest.approx(exact_ce_gap(game, prefix).gap, abs=1e-12)
    assert report["exact_cce_gap"] == pytest.approx(exact_cce_gap(game, prefix).gap, abs=1e-12)
    assert report["exact_cce_gap"] <= report["certified_cce_gap"] + 1e-12
    # A K' inside a round is refused: the output policy changes once per round.
    assert main(["evaluate", str(out), "-T", "42", "--quiet", "--out", str(tmp_path / "x.json")]) == 2
    assert "choose K' a multiple of 4, got 42" in _one_error_line(capsys)
    # The paper's names are compositions too: smooth_cce on bandit feedback, default checkpoints M, 10 M, ...
    alias = tmp_path / "alias"
    assert (
        main(
            ["vlearn", "paper", "--algorithm", "smooth_cce", "--feedback", "bandit:2", "--episodes", "40", "--quiet"]
            + ["--out", str(alias)]
        )
        == 0
    )
    metrics = json.loads((alias / "metrics.json").read_text())
    assert [c["episodes"] for c in metrics["checkpoints"]] == [2, 20, 40]
    assert metrics["algorithm"] == "smooth_cce" and metrics["eta"] == 0.2 and metrics["optimistic"]
    # The default implicit exploration: decaying from eta H / 2 = 0.2, recorded with its schedule;
    # --ix decaying says the same, --ix 0.2 is the constant.
    assert (metrics["ix"], metrics["ix_schedule"]) == (0.2, "decaying")
    # ... and the default rate: min(eta, M / sqrt(c)), recorded by name; the title shows its cap.
    assert metrics["bandit_rate"] == "decaying" and metrics["config"]["bandit_rate"] is None
    title = _evaluate_title(alias, capsys)
    assert "eta 0.2, ix 0.2/sqrt(c)" in title and "constant" not in title
    capsys.readouterr()
    for option, schedule in (("decaying", "decaying"), ("0.2", "constant")):
        named = tmp_path / f"ix-{option}"
        argv = ["vlearn", "paper", "--algorithm", "smooth_cce", "--feedback", "bandit:2", "--episodes", "40"]
        assert main([*argv, "--ix", option, "--out", str(named)]) == 0
        printed = capsys.readouterr().out
        again = json.loads((named / "metrics.json").read_text())
        assert (again["ix"], again["ix_schedule"]) == (0.2, schedule)
        assert ("ix 0.2/sqrt(c)" in printed) == (schedule == "decaying") and "ix 0.2" in printed
        same = [c["certified_cce_gap"] for c in again["checkpoints"]] == [c["certified_cce_gap"] for c in metrics["checkpoints"]]
        assert same == (schedule == "decaying")


def test_a_users_learner_file_is_recorded_and_kept_apart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lib").mkdir()
    source = b"from markovgames.learners import HEDGE\n\nLEARNER = HEDGE\n"
    (tmp_path / "lib" / "mine.py").write_bytes(source)
    argv = ["vlearn", "paper", "--algorithm", "lib/mine.py:LEARNER+stage", "--feedback", "bandit:2", "--episodes", "20"]
    assert main([*argv, "--quiet", "--out", "run"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["config"]["algorithm_sha256"] == hashlib.sha256(source).hexdigest()
    assert metrics["algorithm"] == "hedge+stage" and metrics["kernel"] == "stage"
    # The same numbers as the built-in learner it names.
    direct = run_vlearning(paper_game(), "hedge+stage", 20, seed=0, feedback="bandit:2")
    saved = VisitChainPolicy.load(tmp_path / "run" / "policy.npz")
    np.testing.assert_allclose(policy_value(paper_game(), saved), policy_value(paper_game(), direct.policy), rtol=0, atol=1e-12)
    # An output directory that holds the learner is never replaced.
    assert main([*argv, "--quiet", "--out", "lib", "--overwrite"]) == 2
    assert "contains the input lib/mine.py" in _one_error_line(capsys)
    assert (tmp_path / "lib" / "mine.py").read_bytes() == source


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"--algorithm": "nonsense"}, "--algorithm: unknown algorithm 'nonsense'"),
        ({"--algorithm": "hedge+nonsense"}, "--algorithm: unknown value update 'nonsense'"),
        ({"--algorithm": "mwu+stage"}, "--algorithm: unknown learner 'mwu' (did you mean 'hedge'?)"),
        ({"--feedback": "full"}, "--feedback: 'full' is not learning from play"),
        ({"--feedback": "bandit:0"}, "--feedback: feedback must be 'bandit:M'"),
        ({"--feedback": "bandit:3"}, "--episodes: 200 is not a whole number of rounds of 3 episodes"),
        ({"--eta": "0.1"}, "--eta: cce-v runs with its paper's rates"),
        ({"--ix": "0.1"}, "--ix: cce-v runs with its paper's rates"),
        ({"--algorithm": "hedge+smooth", "--eta": "0"}, "--eta: must be a finite number > 0, got '0'"),
        ({"--algorithm": "hedge+smooth", "--ix": "-1"}, "--ix: must be 'decaying' or a finite number >= 0, got '-1'"),
        ({"--algorithm": "hedge+smooth", "--ix": "decay"}, "--ix: expected 'decaying' or a number >= 0, got 'decay'"),
        ({"--algorithm": "hedge+smooth", "--feedback": "bandit:4", "--checkpoints": "10"}, "--checkpoints: 10 is not a whole"),
        ({"--algorithm": "ce_v"}, "did you mean 'ce-v'?"),
        ({"--episodes": "0"}, "--episodes: must be at least 1, got 0"),
        ({"--episodes": "ten"}, "--episodes: expected a positive integer, got 'ten'"),
        ({"--episodes": "2.5"}, "--episodes: expected a positive integer"),
        ({"--bonus": "-0.5"}, "--bonus: must be a finite number >= 0, got '-0.5'"),
        ({"--bonus": "inf"}, "--bonus: must be a finite number >= 0"),
        ({"--bonus": "lots"}, "--bonus: expected a number >= 0, got 'lots'"),
        ({"--seed": "-1"}, "--seed: expected a non-negative integer"),
        ({"--checkpoints": "0"}, "--checkpoints: 0 is not positive"),
        ({"--checkpoints": "300"}, "--checkpoints: 300 is beyond the 200 episodes"),
        ({"GAME": "no_such_game"}, "'no_such_game' is neither a built-in game"),
        ({"GAME": None}, "GAME: missing"),
        ({"--game": "chicken"}, "GAME: given twice, as 'paper' and as --game 'chicken'"),
        ({"--out": "afile/vl"}, "--out afile/vl: cannot create the directory: afile is not a directory"),
        ({"--max-entries": "0"}, "--max-entries: must be positive"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, monkeypatch, capsys, change, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("a file\n")
    options = {"GAME": "paper", "--algorithm": "cce-v", "--episodes": "200", "--out": "vl", **change}
    argv = ["vlearn"] + ([] if options["GAME"] is None else [options["GAME"]])
    for key, value in options.items():
        if key != "GAME":
            argv += [key, value]
    assert main(argv) == 2
    assert needle in _one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_overwrite_replaces_only_what_markovgames_wrote(vlearn_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(vlearn_dir, tmp_path / "vl")
    argv = ["vlearn", "paper", "--algorithm", "cce-v", "--episodes", str(EPISODES), "--seed", "4", "--out", "vl", "--quiet"]
    before = (tmp_path / "vl" / "policy.npz").read_bytes()
    # A finished run is not replaced without --overwrite ...
    assert main(argv) == 2
    assert "vl: directory is not empty" in _one_error_line(capsys) and (tmp_path / "vl" / "policy.npz").read_bytes() == before
    # ... and is with it (a V-learning directory is markovgames's: its marker says "vlearn").
    assert main([*argv, "--overwrite"]) == 0
    assert json.loads((tmp_path / "vl" / "metrics.json").read_text())["seed"] == 4
    assert (tmp_path / "vl" / "policy.npz").read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vl"]  # no staging directory, no lock file
    # 'run --overwrite' may replace it too, as a directory markovgames wrote.
    assert main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "5", "--out", "vl", "--overwrite", "--quiet"]) == 0
    assert (tmp_path / "vl" / "curve.npz").exists() and not (tmp_path / "vl" / "policy.npz").exists()
    # A directory markovgames did not write, or a sweep, is never replaced.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine\n")
    assert main([*argv[:-2], "mine", "--overwrite"]) == 2
    assert "holds no markovgames run" in _one_error_line(capsys) and (tmp_path / "mine" / "notes.txt").exists()
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / ".markovgames").write_text('{"format": "markovgames-output/1", "kind": "sweep"}\n')
    assert main([*argv[:-2], "sweep", "--overwrite"]) == 2
    assert "holds a markovgames sweep directory, not a run" in _one_error_line(capsys)
    # Nor the directory that holds the game file it reads.
    (tmp_path / "games").mkdir()
    save_game(paper_game(), tmp_path / "games" / "g.json")
    argv = ["vlearn", "games/g.json", "--algorithm", "cce-v", "--episodes", "10", "--out", "games", "--overwrite"]
    assert main(argv) == 2
    assert "--out games: contains the input games/g.json" in _one_error_line(capsys)
    assert (tmp_path / "games" / "g.json").exists()


def test_evaluate_trusts_nothing_in_the_directory(vlearn_dir, tmp_path, capsys):
    """A damaged policy, a metrics.json that names another file or algorithm, a policy of another
    size: each refused naming the file and the field, before anything is computed."""

    def copy() -> Path:
        target = tmp_path / f"vl{len(list(tmp_path.iterdir()))}"
        shutil.copytree(vlearn_dir, target)
        return target

    def edit(path: Path, **fields) -> None:
        metrics = json.loads((path / "metrics.json").read_text())
        metrics.update(fields)
        (path / "metrics.json").write_text(json.dumps(metrics))

    cases = []
    d = copy()
    data = bytearray((d / "policy.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (d / "policy.npz").write_bytes(bytes(data))
    cases.append((d, "policy.npz: its SHA-256 differs from the one metrics.json records"))
    d = copy()
    edit(d, game_file="../game.json")
    cases.append((d, 'metrics.json: game_file: expected game.json or game.npz, got "../game.json"'))
    d = copy()
    edit(d, policy_file="elsewhere.npz")
    cases.append((d, "metrics.json: policy_file: expected 'policy.npz'"))
    d = copy()
    edit(d, episodes=150, rounds=150)  # a policy of 120 episodes, not of the 150 recorded
    cases.append((d, "policy.npz: holds an output policy of (rounds, N, H, S, A) = (120, 2, 2, 2, (2, 2))"))
    d = copy()
    edit(d, episodes=150)  # the rounds no longer agree
    cases.append((d, "metrics.json: rounds: expected episodes / M = 150, got 120"))
    d = copy()
    edit(d, feedback="bandit:7")  # 120 episodes are no whole number of rounds of 7
    cases.append((d, "metrics.json: episodes: 120 is not a whole number of rounds of bandit:7"))
    d = copy()
    edit(d, feedback="bandit:2", rounds=60)  # a policy of 120 rounds, not of the 60 that bandit:2 gives
    cases.append((d, "policy.npz: holds an output policy of (rounds, N, H, S, A) = (120, 2, 2, 2, (2, 2)), but"))
    d = copy()
    edit(d, feedback="sampled:2")
    cases.append((d, "metrics.json: feedback: expected bandit:M"))
    d = copy()
    edit(d, algorithm="a\x1b[2Jname")  # a control sequence: refused, never printed
    cases.append((d, "metrics.json: algorithm: expected cce-v, ce-v, stage-v or a composition's name"))
    d = copy()
    edit(d, eta=float("nan"))
    cases.append((d, "metrics.json: eta: expected a finite number >= 0 or null"))
    # Another policy.npz, its digest recorded (as a forger would): larger than the run's policy
    # can be, or an archive of a few kB whose arrays declare 40 MB (refused before they are inflated).
    d = copy()
    np.savez(d / "policy.npz", big=np.zeros(2**18))
    edit(d, sha256={"game.json": _digest(d / "game.json"), "policy.npz": _digest(d / "policy.npz")})
    # 120 episodes x H S (8 + 8 (A_0 + A_1)) = 120 x 160 bytes, and 1 MiB for the archive.
    cases.append((d, "bytes, more than the 1067776 the output policy of 120 episodes of this game takes"))
    d = copy()
    np.savez_compressed(d / "policy.npz", bomb=np.zeros(5 * 2**20))
    edit(d, sha256={"game.json": _digest(d / "game.json"), "policy.npz": _digest(d / "policy.npz")})
    cases.append((d, "policy.npz: its arrays declare 41943040 bytes, more than the 1067776"))
    d = copy()
    edit(d, bonus=-1)
    cases.append((d, "metrics.json: bonus: expected a finite number >= 0, got -1"))
    d = copy()
    (d / "policy.npz").unlink()
    cases.append((d, "policy.npz: cannot read"))
    for directory, needle in cases:
        assert main(["evaluate", str(directory), "--exact"]) == 2
        assert needle in _one_error_line(capsys), directory
        assert not (directory / "evaluation.json").exists()


def test_help_and_commands_list(capsys):
    with pytest.raises(SystemExit):
        main(["vlearn", "--help"])
    text = capsys.readouterr().out
    options = ("--algorithm", "--episodes", "--feedback", "--eta", "--ix", "--no-optimism", "--seed", "--bonus", "--checkpoints")
    for option in (*options, "--out", "--overwrite", "--quiet"):
        assert option in text
    assert "cce-v, ce-v or stage-v" in text
