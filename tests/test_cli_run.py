"""``markovgames run``: the run directory, metrics.json, and one-line errors with exit code 2."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import fresh_python, make_paper_game
from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments import load_run_directory
from markovgames.games import save_game


def test_run_writes_metrics_curve_game_and_trajectory(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        ["run", "--game", "paper", "--algorithm", "stage_cce", "-T", "120", "--checkpoints", "1,10,100,120", "--out", str(out)]
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("game", "algorithm", "eta", "T", "checkpoints", "config", "versions", "wall_time_s"):
        assert key in metrics
    assert metrics["game"] == "paper" and metrics["algorithm"] == "stage_cce" and metrics["T"] == 120
    assert [c["T"] for c in metrics["checkpoints"]] == [1, 10, 100, 120]
    direct = run(make_paper_game(), "stage_cce", T=120, eta=0.2)
    for c in metrics["checkpoints"]:
        row = c["T"] - 1
        np.testing.assert_allclose(c["value"], direct.value[row], atol=1e-12)
        np.testing.assert_allclose(c["certified_cce_bound"], direct.certified_cce_bound[row], atol=1e-12)
        assert c["certified_ce_gap"] == pytest.approx(direct.certified_ce_gap[row], abs=1e-12)
        assert c["certified_cce_gap"] == pytest.approx(direct.certified_cce_gap[row], abs=1e-12)
    stored = load_run_directory(out)
    assert stored.policies[0].shape == (120, 2, 2, 2)
    np.testing.assert_array_equal(stored.policies[1], direct.policies[1])
    np.testing.assert_array_equal(stored.value, direct.value)
    assert "cert. CE gap" in capsys.readouterr().out


def test_only_what_needs_the_trajectory_reads_it_back(tmp_path, monkeypatch):
    # The default run writes its trajectory and reads none of it back (at T = 2e6 on the paper
    # game, reading it back was half the command's time); --exact reads it, checked.
    from markovgames.experiments.rundirs import _directory

    reads = []
    real = _directory.read_mapped_trajectory
    monkeypatch.setattr(_directory, "read_mapped_trajectory", lambda result: reads.append(result.T) or real(result))
    base = ["run", "--game", "paper", "--algorithm", "stage_cce", "-T", "120", "--checkpoints", "1,10,100,120", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "plain")]) == 0
    assert reads == [] and (tmp_path / "plain" / "trajectory" / "policy_0.npy").is_file()
    assert main([*base, "--exact", "--out", str(tmp_path / "exact")]) == 0
    assert reads == [120]


def test_run_from_game_file_and_theory_rate(tmp_path):
    game_file = tmp_path / "g.json"
    save_game(make_paper_game(), game_file)
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--game",
                str(game_file),
                "--algorithm",
                "smooth_ce",
                "-T",
                "1e2",
                "--eta",
                "theory",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["eta"] == "theory" and metrics["T"] == 100
    assert [c["T"] for c in metrics["checkpoints"]] == [1, 10, 100]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--algorithm", "nope"], "unknown algorithm 'nope'; choose one of: smooth_ce, stage_cce, smooth_cce"),
        (["-T", "0"], "-T: must be at least 1"),
        (["-T", "ten"], "-T: expected a positive integer"),
        (["--eta", "-0.5"], "--eta: must be a positive"),
        (["--eta", "fast"], "--eta: expected a positive number or 'theory'"),
        (["--checkpoints", "5,,7"], "--checkpoints"),
        (["--checkpoints", "500"], "beyond T = 100"),
        (["--game", "no_such_game"], "no_such_game"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, args, needle):
    base = {"--game": "paper", "--algorithm": "smooth_ce", "-T": "100"}
    for k, v in zip(args[::2], args[1::2], strict=True):
        base[k] = v
    argv = ["run", "--out", str(tmp_path / "out")]
    for k, v in base.items():
        argv += [k, v]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("markovgames: error:") and needle in err[0]
    assert not (tmp_path / "out").exists()
    assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_invalid_game_file_names_file_field_and_index(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    data = json.loads(json.dumps(__import__("markovgames").games.game_to_dict(make_paper_game())))
    data["rewards"][1][0][1][0][1] = 1.5
    bad.write_text(json.dumps(data))
    assert main(["run", "--game", str(bad), "--algorithm", "smooth_ce", "-T", "5", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "rewards[1][0][1][0][1]" in err and "1.5" in err
    assert not (tmp_path / "o").exists()


def test_existing_output_directory_is_refused_unless_overwrite(tmp_path, capsys):
    """A non-empty directory is replaced only with --overwrite, and only if it holds a run (its
    marker file): --overwrite never deletes a directory markovgames did not write."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "something").write_text("another run")
    argv = ["run", "--game", "paper", "--algorithm", "smooth_cce", "-T", "10", "--out", str(out), "--quiet"]
    assert main(argv) == 2
    assert "not empty" in capsys.readouterr().err
    assert (out / "something").exists()
    assert main(argv + ["--overwrite"]) == 2
    assert "holds no markovgames run" in capsys.readouterr().err
    assert (out / "something").exists()
    (out / "something").unlink()
    assert main(argv) == 0
    (out / "evaluation.json").write_text("{}")  # a file beside the run's own is replaced with it
    assert main(argv + ["--overwrite"]) == 0
    assert not (out / "evaluation.json").exists() and (out / "metrics.json").exists()


@pytest.mark.parametrize("command", [["run", "--algorithm", "smooth_cce", "-T", "10"], ["solve", "--concept", "ce"]])
@pytest.mark.parametrize("out", [".", "..", "sub/.."])
def test_output_directory_containing_the_working_directory_is_refused(tmp_path, monkeypatch, capsys, command, out):
    """A run replaces its whole output directory: ``--out .`` (or an ancestor of the working
    directory), even with ``--overwrite``, is refused before any work and deletes nothing (it
    once emptied the working directory and then failed)."""
    here = tmp_path / "here"
    (here / "sub").mkdir(parents=True)
    (here / "precious.txt").write_text("keep me")
    monkeypatch.chdir(here)
    argv = [command[0], "--game", "paper", *command[1:], "--out", out, "--overwrite", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--out {out}: is the current directory or contains it" in err and err.count("\n") == 1
    assert (here / "precious.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]  # no staging directory either


def test_learning_rate_beyond_what_the_dtype_resolves_is_refused(tmp_path, capsys):
    """A learning rate whose logits ``eta (T + H)`` the dtype cannot resolve is refused up front,
    naming ``--eta`` and the largest rate allowed (once such a run printed NaN and exited 0)."""
    from markovgames.dynamics import max_learning_rate

    limit = max_learning_rate(1000, 2, "float64")
    for eta, dtype in ((1e18, "float64"), (2 * max_learning_rate(1000, 2, "float32"), "float32")):
        argv = [
            "run",
            "--game",
            "paper",
            "--algorithm",
            "stage_cce",
            "-T",
            "1000",
            "--eta",
            str(eta),
            "--dtype",
            dtype,
            "--out",
            str(tmp_path / "o"),
            "--quiet",
        ]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("markovgames: error: --eta:") and "at most" in err
    assert not (tmp_path / "o").exists()
    assert f"{limit:.3g}" in str(pytest.raises(ValueError, run, make_paper_game(), "stage_cce", 1000, 1e18).value)


def test_runs_too_large_for_memory_or_disk_are_refused_up_front(tmp_path, monkeypatch, capsys):
    """The per-prefix curves must fit in memory and the trajectory on the output's disk: checked
    before the run (a T of 2e9 once ran until it ran out of memory)."""
    import collections
    import os

    from markovgames.cli import _run as cli_run

    page = 4096
    monkeypatch.setattr(os, "sysconf", lambda name: page if name == "SC_PAGE_SIZE" else 2**30 // page)  # 1 GiB
    argv = ["run", "--game", "paper", "--algorithm", "stage_cce", "--out", str(tmp_path / "o"), "--quiet"]
    assert main(argv + ["-T", "1e8", "--no-trajectory"]) == 2  # 2 x 1e8 x 3 x 2 x 8 bytes = 9.6 GB
    assert "-T: keeping the value and the certified bounds of all 100000000 prefixes" in capsys.readouterr().err
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(cli_run.shutil, "disk_usage", lambda path: usage(2**20, 0, 2**20))  # 1 MiB free
    assert main(argv + ["-T", "1e5"]) == 2  # trajectory: 1e5 x H S (A_0 + A_1) x 8 bytes = 12.8 MB
    assert (
        "-T: a run of 100000 iterations writes about 16.8 MiB (trajectory 12.2 MiB, curve.npz 4.6 MiB)" in capsys.readouterr().err
    )
    assert not (tmp_path / "o").exists()
    assert main(argv + ["-T", "1000"]) == 0  # small runs pass both checks


def test_console_script_exit_code_and_no_traceback(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "markovgames",
            "run",
            "--game",
            "paper",
            "--algorithm",
            "x",
            "-T",
            "5",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_size_limit_options_on_every_command_that_reads_a_game(tmp_path, capsys, monkeypatch):
    """``--max-entries`` / ``--max-bytes`` exist on run, solve, evaluate and sweep, and a refusal names them."""
    monkeypatch.chdir(tmp_path)
    save_game(make_paper_game(), "g.json")  # 32 reward entries, 64 transition entries
    assert main(["run", "--game", "g.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "r", "--quiet"]) == 0
    (tmp_path / "sweep.toml").write_text('T = 10\ngames = [{file = "g.json"}]\nalgorithms = ["smooth_cce"]\n')
    commands = {
        "run": ["run", "--game", "g.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "r2", "--quiet"],
        "solve": ["solve", "--game", "g.json", "--concept", "ce", "--out", "lp", "--quiet"],
        "evaluate": ["evaluate", "r", "--quiet"],
        "sweep": ["sweep", "sweep.toml", "--out", "sw", "--dry-run"],
    }
    for name, args in commands.items():
        capsys.readouterr()
        assert main([*args, "--max-entries", "10"]) == 2, name
        err = capsys.readouterr().err
        assert err.startswith("markovgames: error:") and "(raise the limit with --max-entries)" in err, (name, err)
        assert main([*args, "--max-bytes", "100"]) == 2, name
        err = capsys.readouterr().err
        assert "more than the limit of 100 bytes (raise the limit with --max-bytes)" in err, (name, err)
        assert main([*args, "--max-entries", "0"]) == 2, name
        assert "--max-entries: must be positive" in capsys.readouterr().err, name
    assert not any((tmp_path / d).exists() for d in ("r2", "lp", "sw"))  # refused before any output
    # Generous limits are accepted.
    assert main([*commands["evaluate"], "--max-entries", "1000", "--max-bytes", "1000000"]) == 0


def test_unknown_option_points_to_the_subcommands_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["games", "show", "paper", "--bogus"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "markovgames: error: unrecognized arguments: --bogus; the options of 'markovgames games show': "
        "--full, --precision, --max-bytes, --max-entries (see 'markovgames games show --help')"
    )
    with pytest.raises(SystemExit):
        main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "5", "--out", "x", "--nope"])
    assert "(see 'markovgames run --help')" in capsys.readouterr().err


def test_solve_refuses_a_bad_objective_naming_the_option(tmp_path, capsys):
    out = tmp_path / "lp"
    assert main(["solve", "--game", "paper", "--concept", "ce", "--objective", "nope", "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("markovgames: error: --objective: expected 'welfare'")
    assert main(["solve", "--game", "paper", "--concept", "ce", "--objective", "player:7", "--out", str(out)]) == 2
    assert "--objective 'player:7': player 7 is out of range 0..1" in capsys.readouterr().err
    assert not out.exists()


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    """``markovgames sweep ... --dry-run | head -1``: no 'Broken pipe' error, the exit code of SIGPIPE."""
    config = tmp_path / "sweep.toml"
    config.write_text('T = 10\ngames = ["paper"]\nalgorithms = ["smooth_cce", "stage_cce", "smooth_ce"]\n')
    code = "import sys; from markovgames.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "sweep", str(config), "--out", str(tmp_path / "sw"), "--dry-run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader goes away before the command writes
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141 and err == ""


LIGHT_COMMANDS = [["--version"], ["games", "list"], ["run", "--help"], ["sweep", "--help"]]


@functools.cache
def _heavy_modules_after_each_light_command() -> list[list[str]]:
    """The heavy modules loaded after each of `LIGHT_COMMANDS`, run one after the other in one
    fresh interpreter (one start, not one per command: what one loads stays loaded, so a command
    that loads one fails its own case and every later one)."""
    code = (
        "import sys, contextlib, io, json\n"
        "from markovgames.cli import main\n"
        "loaded = []\n"
        f"for argv in {LIGHT_COMMANDS!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            main(argv)\n"
        "        except SystemExit:\n"
        "            pass\n"
        "    heavy = ('jax', 'scipy', 'markovgames.dynamics', 'markovgames.experiments')\n"
        "    loaded.append([m for m in heavy if m in sys.modules])\n"
        "print(json.dumps(loaded))\n"
    )
    return json.loads(fresh_python(code))


@pytest.mark.parametrize("argv", LIGHT_COMMANDS)
def test_the_parser_and_light_commands_load_neither_jax_nor_scipy(argv):
    """Start-up time: building the parsers, and the commands that compute nothing, must not import
    JAX or SciPy (a second or more each); tests/test_cli_startup.py checks --version and --help
    more closely, and benchmarks/bench_cli.py measures the time."""
    assert _heavy_modules_after_each_light_command()[LIGHT_COMMANDS.index(argv)] == []


def test_experiments_load_each_module_on_first_use():
    """Every public name of markovgames.experiments resolves, and what `run` and `evaluate` use
    (run directories, exact gaps) does not load the sweeps' configuration models (pydantic) or
    the sweep modules: about 0.1 s of every such command's start."""
    import markovgames.experiments as experiments

    for name in experiments.__all__:
        assert getattr(experiments, name) is not None, name
    assert set(experiments.__all__) <= set(dir(experiments))
    code = (
        "import sys\n"
        "from markovgames.experiments import exact_checkpoint_gaps, load_run_directory, write_run_directory\n"
        "print([m for m in ('pydantic', 'markovgames.experiments.sweeps._sweep', 'markovgames.experiments.sweeps._config')"
        " if m in sys.modules])\n"
    )
    assert fresh_python(code) == "[]"


def test_a_run_without_optimism_says_so_in_its_table_title(tmp_path, capsys):
    args = ["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--no-trajectory"]
    assert main([*args, "--out", str(tmp_path / "a"), "--no-optimism", "--dtype", "float32"]) == 0
    assert "smooth_ce on paper (eta=0.2, no optimism, float32)" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "b"), "--eta", "0.1"]) == 0
    assert "smooth_ce on paper (eta=0.1)" in capsys.readouterr().out
