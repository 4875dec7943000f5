"""Where a name or a path is not what a command takes, the message says what it is and where it runs.

* A path that does not exist names the nearest existing one (`markovgames._suggest.nearest_path`).
* A directory of another kind, or a file, says what it is and which command reads it.
* ``run --algorithm`` of V-learning, EXP3 or CFR says what each is, and the commands it names run.
* ``run --feedback bandit:M`` runs the composition and writes exactly what ``vlearn`` writes.
* ``algorithms list`` lists V-learning's algorithms and every feedback model.

The bad-input catalogue (``tests/test_bad_input_*.py``) has a case of each family; these tests
check the rules behind them.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markovgames._suggest import nearest_path
from markovgames.cli import main
from markovgames.dynamics import VLEARNING_ALGORITHMS, run_vlearning
from markovgames.dynamics._feedback import FEEDBACK_FORMS
from markovgames.evaluation import prefix_curves
from markovgames.experiments.rundirs._kinds import directory_kind, wrong_directory
from markovgames.games import paper_game


# ---------------------------------------------------------------------------------------
# The nearest existing path
# ---------------------------------------------------------------------------------------
def _tree(root: Path) -> None:
    for directory in ("runs/ce", "runs/stage", "sweeps/example", "examples"):
        (root / directory).mkdir(parents=True)
    for file in ("examples/sweep.toml", "my_game.json", "g.json", "notes.txt"):
        (root / file).write_text("{}\n")


@pytest.mark.parametrize(
    "given_path, expected",
    [
        ("runs/c", "runs/ce"),
        ("runs/stag", "runs/stage"),
        ("Runs/CE", "runs/ce"),  # case, as for names
        ("exmples/sweep.tml", "examples/sweep.toml"),  # every component from the first missing one
        ("swepes/exampel", "sweeps/example"),
        ("my_gme.json", "my_game.json"),
        ("nope.json", None),  # sharing ".json" with g.json is no likeness
        ("runs/ce/x", None),  # nothing inside runs/ce to name
        ("elsewhere/entirely", None),
        ("runs/ce", None),  # it exists: there is nothing to suggest
    ],
)
def test_nearest_path(tmp_path, monkeypatch, given_path, expected):
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert nearest_path(given_path) == expected
    # An absolute path gets an absolute answer.
    found = nearest_path(tmp_path / given_path)
    assert found == (None if expected is None else str(tmp_path / expected))


def test_nearest_path_keeps_to_what_is_accepted(tmp_path, monkeypatch):
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert nearest_path("my_game") == "my_game.json"
    assert nearest_path("run", Path.is_dir) == "runs"
    assert nearest_path("my_gam.json", Path.is_dir) is None
    assert nearest_path("runs/c", Path.is_file) is None


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="abcdefgh_-.", min_size=1, max_size=12))
def test_a_suggested_path_exists_and_is_never_the_one_given(tmp_path_factory, name):
    root = tmp_path_factory.mktemp("tree")
    _tree(root)
    found = nearest_path(root / "runs" / name)
    if found is not None:
        assert Path(found).exists() and Path(found).parent == root / "runs" and Path(found).name != name


# ---------------------------------------------------------------------------------------
# What a directory is
# ---------------------------------------------------------------------------------------
def test_what_a_path_given_for_a_directory_is(tmp_path):
    (tmp_path / "sw").mkdir()
    (tmp_path / "sw" / "results.parquet").write_bytes(b"PAR1")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.json").write_text("{}")
    (tmp_path / "vl").mkdir()
    (tmp_path / "vl" / "metrics.json").write_text("{}")
    (tmp_path / "vl" / "policy.npz").write_bytes(b"")
    (tmp_path / "pols").mkdir()
    (tmp_path / "pols" / "policy_0.npy").write_bytes(b"")
    (tmp_path / "empty").mkdir()
    (tmp_path / "sweep.toml").write_text("T = 1\n")
    kinds = {name: directory_kind(tmp_path / name) for name in ("sw", "run", "vl", "pols", "empty")}
    assert kinds == {"sw": "sweep", "run": "run", "vl": "vlearn", "pols": "trajectory", "empty": None}
    wanted = "a sweep directory (with results.parquet)"
    assert wrong_directory(tmp_path / "run", wanted).endswith(
        "is a run directory, which 'markovgames evaluate' and 'markovgames plot' read, not a sweep directory (with results.parquet)"
    )
    assert "is an empty directory, not a sweep" in wrong_directory(tmp_path / "empty", wanted)
    assert f"'markovgames sweep {tmp_path / 'sweep.toml'} --out DIR'" in wrong_directory(tmp_path / "sweep.toml", wanted)
    # A configuration is only a sweep's business: given for a run directory, it is a file.
    assert wrong_directory(tmp_path / "sweep.toml", "a run directory").endswith("is a file, not a run directory")
    assert "(did you mean " in wrong_directory(tmp_path / "rnu", wanted)


# ---------------------------------------------------------------------------------------
# Algorithms that run elsewhere
# ---------------------------------------------------------------------------------------
def _error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("markovgames: error: "), err
    return err


@pytest.mark.parametrize("name", [*VLEARNING_ALGORITHMS, "CCE_V", "stage_v"])
def test_run_points_every_vlearning_name_to_vlearn(name, tmp_path, capsys):
    err = _error(["run", "--game", "paper", "--algorithm", name, "-T", "10", "--out", str(tmp_path / "o")], capsys)
    canonical = next(v for v in VLEARNING_ALGORITHMS if v.replace("-", "") == name.lower().replace("_", "").replace("-", ""))
    assert f"'markovgames vlearn GAME --algorithm {canonical}'" in err
    assert not (tmp_path / "o").exists()


def test_the_commands_that_the_pointers_name_run(tmp_path, monkeypatch, capsys):
    """EXP3's and V-learning's messages name commands; each, with GAME and ROUNDS filled in, runs."""
    monkeypatch.chdir(tmp_path)
    for name in ("exp3", "cce-v"):
        err = _error(["run", "--game", "paper", "--algorithm", name, "-T", "10", "--out", "o"], capsys)
        command = err.split("'markovgames ", 1)[1].split("'", 1)[0]
        argv = shlex.split(command.replace("GAME", "paper").replace("ROUNDS", "8").replace("DIR", f"by-{name}"))
        if argv[0] == "vlearn":
            argv += ["--episodes", "8", "--out", f"by-{name}"]
        assert main([*argv, "--quiet"]) == 0, argv
        assert (tmp_path / f"by-{name}" / "policy.npz").is_file()


def test_cfr_is_answered_with_regret_matching(tmp_path, capsys):
    err = _error(["run", "--game", "paper", "--algorithm", "cfr", "-T", "10", "--out", str(tmp_path / "o")], capsys)
    assert "markovgames has no CFR" in err and "rm-plus+smooth" in err
    # What it names runs.
    assert (
        main(["run", "--game", "paper", "--algorithm", "rm-plus+smooth", "-T", "5", "--quiet", "--out", str(tmp_path / "rm")])
        == 0
    )


# ---------------------------------------------------------------------------------------
# run --feedback bandit:M
# ---------------------------------------------------------------------------------------
def _metrics(path: Path) -> dict:
    metrics = json.loads((path / "metrics.json").read_text())
    for key in ("created", "wall_time_s", "evaluation_time_s"):
        metrics.pop(key, None)
    return metrics


def test_run_on_bandit_feedback_writes_what_vlearn_writes(tmp_path, monkeypatch, capsys):
    """``run -T R --feedback bandit:M`` is ``vlearn --episodes R M``: T counts rounds, the
    checkpoints are rounds, written in episodes; the same metrics.json, policy and game."""
    monkeypatch.chdir(tmp_path)
    common = ["--algorithm", "hedge+smooth", "--feedback", "bandit:4", "--seed", "2", "--eta", "0.3", "--ix", "0.05"]
    assert main(["run", "--game", "paper", *common, "-T", "30", "--checkpoints", "1,5,30", "--out", "by-run"]) == 0
    by_run = capsys.readouterr().out
    assert main(["vlearn", "paper", *common, "--episodes", "120", "--checkpoints", "4,20,120", "--out", "by-vlearn"]) == 0
    by_vlearn = capsys.readouterr().out
    assert _metrics(tmp_path / "by-run") == _metrics(tmp_path / "by-vlearn")
    for name in ("policy.npz", "game.json"):
        assert (tmp_path / "by-run" / name).read_bytes() == (tmp_path / "by-vlearn" / name).read_bytes()
    table = [line for line in by_run.splitlines() if not line.startswith("wrote")]
    assert table == [line for line in by_vlearn.splitlines() if not line.startswith("wrote")]
    metrics = _metrics(tmp_path / "by-run")
    assert [c["episodes"] for c in metrics["checkpoints"]] == [4, 20, 120]
    assert [c["rounds"] for c in metrics["checkpoints"]] == [1, 5, 30]
    # The library's own run of the same settings: the same output policy, whose value is the last checkpoint's.
    game = paper_game()
    direct = run_vlearning(game, "hedge+smooth", 120, seed=2, feedback="bandit:4", eta=0.3, ix=0.05)
    curves = prefix_curves(game, direct.policy, [30])
    np.testing.assert_allclose(metrics["checkpoints"][-1]["value"], curves.value[0], rtol=0, atol=1e-12)
    # evaluate reads it as it reads vlearn's.
    assert main(["evaluate", "by-run", "--exact", "--quiet"]) == 0
    # --ix decaying (the default schedule, by name): recorded with its scale eta H / 2.
    decaying = [*common[:-1], "decaying", "-T", "30", "--checkpoints", "1,5,30", "--quiet", "--out", "decaying"]
    assert main(["run", "--game", "paper", *decaying]) == 0
    assert (_metrics(tmp_path / "decaying")["ix"], _metrics(tmp_path / "decaying")["ix_schedule"]) == (0.3, "decaying")


@pytest.mark.parametrize(
    "extra, option",
    [
        (["--order", "alternating"], "--order alternating"),
        (["--eta-schedule", "sqrt"], "--eta-schedule"),
        (["--regret"], "--regret"),
        (["--exact"], "--exact"),
        (["--last-iterate"], "--last-iterate"),
        (["--uniform-average"], "--uniform-average"),
        (["--average-iterate"], "--uniform-average"),  # the former name: the message names the option's name
        (["--weighted-average"], "--weighted-average"),
        (["--eta", "theory:mao2024"], "--eta"),
        (["--trajectory-tolerance", "0.1"], "--trajectory-tolerance"),
        (["--checkpoint-every", "5"], "--checkpoint-every"),
        (["--resume"], "--resume"),
        (["--dtype", "float32"], "--dtype float32"),
        (["--eta", "theory"], "--eta"),
        (["--eta", "0.1,0.2"], "--eta"),
    ],
)
def test_what_a_run_on_bandit_feedback_cannot_take_is_refused_by_name(extra, option, tmp_path, capsys):
    argv = ["run", "--game", "paper", "--algorithm", "hedge+smooth", "--feedback", "bandit:2", "-T", "4"]
    err = _error([*argv, *extra, "--out", str(tmp_path / "o")], capsys)
    assert err.startswith(f"markovgames: error: {option}") and "bandit" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("option", ["--ix", "--bonus"])
def test_settings_of_play_need_bandit_feedback(option, tmp_path, capsys):
    argv = ["run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "4", option, "0.1", "--out", str(tmp_path / "o")]
    assert "give --feedback bandit:M" in _error(argv, capsys)


# ---------------------------------------------------------------------------------------
# algorithms list
# ---------------------------------------------------------------------------------------
def test_algorithms_list_names_vlearning_and_every_feedback_model(capsys):
    assert main(["algorithms", "list"]) == 0
    listing = capsys.readouterr().out
    for name in VLEARNING_ALGORITHMS:
        assert f"\n  {name} " in listing, name
    for form in (*FEEDBACK_FORMS, "bandit:M"):
        assert f"\n  {form} " in listing, form
    assert "markovgames vlearn GAME --algorithm NAME" in listing


def test_a_misspelt_sweep_configuration_names_the_nearest_file(tmp_path):
    from markovgames.experiments.sweeps._config import SweepConfigError, load_sweep_config

    (tmp_path / "mysweep.toml").write_text('T = 10\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\n')
    with pytest.raises(SweepConfigError, match=r"mysweep.tml: no such configuration file \(did you mean '.*mysweep.toml'\?\)$"):
        load_sweep_config(tmp_path / "mysweep.tml")
    with pytest.raises(SweepConfigError, match=r"other.toml: no such configuration file$"):
        load_sweep_config(tmp_path / "other.toml")


def test_every_other_option_of_run_is_refused_on_bandit_feedback(tmp_path, capsys):
    """Every option of ``run`` that a run on bandit feedback does not take (all but `_ON_BANDIT`'s,
    an option added later included) is refused by name when given, before any work."""
    import argparse

    from markovgames.cli import build_parser
    from markovgames.cli._run_bandit import _ON_BANDIT

    sub = next(a for a in build_parser(["run"])._actions if isinstance(a, argparse._SubParsersAction))
    others = [a for a in sub.choices["run"]._actions if a.option_strings and a.dest not in _ON_BANDIT and a.dest != "help"]
    assert {a.dest for a in others} >= {"order", "exact", "regret", "resume", "checkpoint_every", "last_iterate"}
    for action in others:
        option = max(action.option_strings, key=len)
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreConstAction)) or action.nargs == "?":
            given = [option]
        elif action.choices:
            given = [option, next(str(c) for c in action.choices if c != action.default)]
        else:
            given = [option, "1"]
        argv = ["run", "--game", "paper", "--algorithm", "hedge+smooth", "--feedback", "bandit:2", "-T", "4", *given]
        err = _error([*argv, "--out", str(tmp_path / "o")], capsys)
        assert err.startswith(f"markovgames: error: {option}") and "cannot take it" in err, (given, err)
