"""Bad input to ``markovgames run``: its section of the catalogue (``docs/errors.md``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bad_input import (
    LEARNER_FILE,
    Case,
    _a_file,
    _another_run,
    _busy,
    _foreign_directory,
    _in_run,
    _users_lock_file,
    _write_bytes,
    _write_game,
    check_case,
    finished_run,  # noqa: F401 - the fixture of the cases that need a finished run
)
from markovgames.cli import main

RUN_S = "markovgames run"

#: A user's algorithm file (the paper's smooth_ce under another name).
MINE = "from markovgames.dynamics import ALGORITHMS\n\nALGORITHM = ALGORITHMS['smooth_ce']\n"


def _learner_changed(run: Path) -> None:
    """The finished run as if made with ``mine.py:ALGORITHM`` when the file held other code."""
    (run.parent / "mine.py").write_text(MINE)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["config"].update(algorithm="mine.py:ALGORITHM", algorithm_sha256="0" * 64)
    (run / "metrics.json").write_text(json.dumps(metrics))


def _interrupted_run(d: Path) -> None:
    staging = d / ".out.partial"
    staging.mkdir()
    (staging / "state.npz").write_bytes(b"")
    (staging / "config.json").write_text('{"algorithm": "stage_cce", "T": 1000}\n')


def _finished_run(d: Path) -> None:
    (d / "out").mkdir()
    config = {
        "game": "paper",
        "algorithm": "smooth_ce",
        "T": 1000,
        "eta": 0.2,
        "optimistic": True,
        "checkpoints": [1, 10, 100, 1000],
        "dtype": "float64",
        "record_trajectory": True,
        "checkpoint_every": None,
        "trajectory_tolerance": None,
    }
    (d / "out" / "metrics.json").write_text(json.dumps({"algorithm": "smooth_ce", "T": 1000, "config": config}))


def _sparse_file(name: str, size: int):
    """A file of ``size`` bytes that takes no room (a hole): as large as a bomb, as cheap as nothing."""

    def setup(d: Path) -> None:
        with open(d / name, "wb") as fh:
            fh.truncate(size)

    return setup


def _symlink_to_directory(d: Path) -> None:
    (d / "real").mkdir()
    (d / "out").symlink_to("real")


CASES: list[Case] = [
    # ---- markovgames run
    Case(
        "run-T-zero",
        RUN_S,
        "T < 1",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "0", "--out", "out"),
        ("-T", "at least 1", "got 0"),
    ),
    Case(
        "run-T-not-integer",
        RUN_S,
        "T not an integer",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "1.5", "--out", "out"),
        ("-T", "positive integer", "'1.5'"),
    ),
    Case(
        "run-T-too-large",
        RUN_S,
        "T beyond what the compiled loop can count",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "1e30", "--out", "out"),
        ("-T", "1e30", "largest supported T"),
    ),
    Case(
        "run-eta-zero",
        RUN_S,
        "eta <= 0",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--eta", "0", "--out", "out"),
        ("--eta", "positive", "'0'"),
    ),
    Case(
        "run-eta-not-a-number",
        RUN_S,
        "eta neither a number nor 'theory'",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--eta", "fast", "--out", "out"),
        ("--eta", "'fast'"),
    ),
    Case(
        "run-eta-theory-unknown",
        RUN_S,
        "a theorem's rate of a paper the catalogue does not know",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--eta", "theory:UNKNOWN", "--out", "out"),
        ("--eta", "'theory:UNKNOWN'", "unknown paper 'UNKNOWN'", "theory:mao2024"),
    ),
    Case(
        "run-eta-theory-not-implemented",
        RUN_S,
        "a theorem's rate of a catalogued paper whose learning rate markovgames does not implement",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta", "theory:yang-ma2023", "--out", "out"),
        ("--eta", "'theory:yang-ma2023'", "Yang and Ma 2023", "theory:mao2024"),
    ),
    Case(
        "run-uniform-average-no-trajectory",
        RUN_S,
        "the uniform average of the iterates without the trajectory it is computed from",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "smooth_ce",
            "-T",
            "10",
            "--uniform-average",
            "--no-trajectory",
            "--out",
            "out",
        ),
        ("--uniform-average", "--no-trajectory", "--weighted-average"),
    ),
    Case(
        "run-weighted-average-where",
        RUN_S,
        "where to evaluate the weighted average, neither checkpoints nor all",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--weighted-average", "sometimes", "--out", "out"),
        ("--weighted-average", "'sometimes'", "'checkpoints', 'all'"),
    ),
    Case(
        "run-eta-too-large",
        RUN_S,
        "a learning rate whose logits eta (T + H) float64 cannot resolve",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "1000", "--eta", "1e18", "--out", "out"),
        ("--eta", "1e+18", "at most 3.6e+13"),
    ),
    Case(
        "run-out-current-directory",
        RUN_S,
        "--out naming the working directory, which a run would replace",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", ".", "--overwrite"),
        ("--out .:", "is the current directory or contains it"),
    ),
    Case(
        "run-unknown-algorithm",
        RUN_S,
        "an unknown algorithm",
        None,
        ("run", "--game", "paper", "--algorithm", "nope", "-T", "10", "--out", "out"),
        ("--algorithm", "'nope'", "smooth_ce"),
    ),
    Case(
        "run-unknown-learner",
        RUN_S,
        "an unknown learner in LEARNER+UPDATE",
        None,
        ("run", "--game", "paper", "--algorithm", "rm_plus+smooth", "-T", "10", "--out", "out"),
        ("--algorithm", "unknown learner 'rm_plus'", "did you mean 'rm-plus'?", "choose one of: hedge, logbarrier, rm-plus"),
    ),
    Case(
        "run-unknown-value-update",
        RUN_S,
        "an unknown value update in LEARNER+UPDATE",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+fast", "-T", "10", "--out", "out"),
        ("--algorithm", "unknown value update 'fast'", "choose one of: smooth, smooth-uniform, smooth-linear, stage"),
    ),
    # ---- a value update of the other kind of game, and what has no meaning for a discounted game
    Case(
        "run-stage-on-discounted",
        RUN_S,
        "the stage-based update on a discounted game (no paper defines it there)",
        None,
        ("run", "--game", "matching_pennies_discounted", "--algorithm", "hedge+stage", "-T", "10", "--out", "out"),
        (
            "--algorithm",
            "'stage' value update is defined for finite-horizon games only",
            "'matching_pennies_discounted' is a discounted game",
            "use hedge+discounted-smooth",
        ),
    ),
    Case(
        "run-finite-update-on-discounted",
        RUN_S,
        "a finite-horizon value update on a discounted game",
        None,
        ("run", "--game", "matching_pennies_discounted", "--algorithm", "smooth_cce", "-T", "10", "--out", "out"),
        ("--algorithm", "'smooth' value update", "'matching_pennies_discounted' is a discounted game", "hedge+discounted-smooth"),
    ),
    Case(
        "run-discounted-update-on-finite",
        RUN_S,
        "a discounted value update on a finite-horizon game",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+discounted-smooth", "-T", "10", "--out", "out"),
        ("--algorithm", "'discounted-smooth' value update is defined for discounted games", "'paper' is a finite-horizon game"),
    ),
    *[
        Case(
            f"run-discounted-{key}",
            RUN_S,
            what,
            None,
            ("run", "--game", "matching_pennies_discounted", "--algorithm", "hedge+discounted-smooth", "-T", "10", *extra)
            + ("--out", "out"),
            expect,
        )
        for key, what, extra, expect in (
            (
                "exact",
                "--exact on a discounted game (no output policy)",
                ("--exact",),
                ("--exact", "discounted game", "--last-iterate and --weighted-average"),
            ),
            (
                "uniform-average",
                "--uniform-average on a discounted game (--weighted-average evaluates its weighted average iterate)",
                ("--uniform-average",),
                ("--uniform-average", "discounted game", "--weighted-average", "discounted-smooth-uniform"),
            ),
            (
                "trajectory-tolerance",
                "--trajectory-tolerance on a discounted game",
                ("--trajectory-tolerance", "0.1"),
                ("--trajectory-tolerance", "discounted game", "no output policy"),
            ),
            (
                "eta-theory",
                "--eta theory with a discounted update (the implemented rates are for finite-horizon games)",
                ("--eta", "theory"),
                ("--eta: learning rate 'theory:mao2024'", "proved for finite-horizon games", "'discounted-smooth'"),
            ),
        )
    ],
    Case(
        "run-algorithm-file-missing",
        RUN_S,
        "a reference to a file that does not exist",
        None,
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "no such file mine.py"),
    ),
    Case(
        "run-algorithm-file-fails",
        RUN_S,
        "a file that raises while it loads",
        _write_bytes("mine.py", b"import sys\nraise RuntimeError('boom')\n"),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "loading mine.py failed: line 2: RuntimeError: boom"),
    ),
    Case(
        "run-algorithm-file-exits",
        RUN_S,
        "a file that calls sys.exit while it loads",
        _write_bytes("mine.py", b"raise SystemExit(3)\n"),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "loading mine.py failed: line 1: SystemExit: 3"),
    ),
    Case(
        "run-learner-not-a-distribution",
        RUN_S,
        "a user's learner that plays unnormalised weights (checked at every iteration)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x * 0.7")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        ("learner 'mine': play returned a strategy that does not sum to 1 at iteration 1, player 0, step 0, state 0",),
    ),
    Case(
        "run-learner-wrong-shape",
        RUN_S,
        "a user's learner whose strategy lost its action axis (checked when the loop starts)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x[..., 0]")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        (
            "learner 'mine': play returned as its strategy a float64 array of shape [2, 2]",
            "expected a float64 array of shape [2, 2, 2]",
        ),
    ),
    Case(
        "run-learner-raises",
        RUN_S,
        "a user's learner whose code raises (the user's error, with the file and line)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"undefined_name")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        ("learner 'mine': play raised NameError: name 'undefined_name' is not defined (mine.py, line 8)",),
    ),
    Case(
        "run-resume-nothing-saved",
        RUN_S,
        "--resume where no run saved its state (refused, not started afresh)",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--resume", "--out", "out"),
        ("--resume: out: there is no saved state to continue", "run the command without --resume"),
    ),
    Case(
        "run-algorithm-file-too-large",
        RUN_S,
        "a learner's file over the size limit (refused unread)",
        _sparse_file("mine.py", 3 * 2**30),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "10", "--out", "out"),
        ("--algorithm", "mine.py is more than 16777216 bytes (16 MiB), the limit of a learner's source file"),
    ),
    Case(
        "run-algorithm-not-an-algorithm",
        RUN_S,
        "a reference to something that is not an Algorithm",
        _write_bytes("mine.py", b"RATE = 0.5\n"),
        ("run", "--game", "paper", "--algorithm", "mine.py:RATE", "-T", "10", "--out", "out"),
        ("--algorithm", "a float is not a markovgames.dynamics.Algorithm"),
    ),
    Case(
        "run-algorithm-learner-without-update",
        RUN_S,
        "a reference to a learner without its value update",
        _write_bytes(
            "mine.py",
            b"from markovgames.learners import LearnerSpec, optimistic_hedge\nLEARNER = LearnerSpec('mine', optimistic_hedge)\n",
        ),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER", "-T", "10", "--out", "out"),
        ("--algorithm", "'mine' is a learner; add the value update: mine.py:LEARNER+smooth or mine.py:LEARNER+stage"),
    ),
    Case(
        "run-order-unknown",
        RUN_S,
        "an update order that does not exist",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--order", "sideways", "--out", "out"),
        ("--order", "invalid choice: 'sideways'", "'alternating'"),
    ),
    Case(
        "run-eta-schedule-unknown",
        RUN_S,
        "a step-size schedule that does not exist",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta-schedule", "fast", "--out", "out"),
        ("--eta-schedule", "unknown step-size schedule 'fast'", "sqrt", "power:P"),
    ),
    Case(
        "run-eta-schedule-power-range",
        RUN_S,
        "a power schedule whose exponent is outside [0, 1]",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta-schedule", "power:2", "--out", "out"),
        ("--eta-schedule", "'power:2'", "[0, 1]"),
    ),
    Case(
        "run-eta-schedule-exits",
        RUN_S,
        "a step-size schedule that calls sys.exit() (the user's error, not the command's exit)",
        _write_bytes("rates.py", b"import sys\n\n\ndef f(t):\n    sys.exit(0)\n"),
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta-schedule", "rates.py:f", "--out", "out"),
        ("--eta-schedule", "'rates.py:f'", "factor(t) raised SystemExit: 0 (rates.py, line 5)"),
        subprocess=True,
    ),
    Case(
        "run-eta-schedule-above-rate-limit",
        RUN_S,
        "a step-size schedule whose rate eta f(t) leaves the limits of --eta at some t",
        _write_bytes("rates.py", b"import numpy as np\n\n\ndef f(t):\n    return np.where(t > 5, 1.7e308, 1.0)\n"),
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta-schedule", "rates.py:f", "--out", "out"),
        ("--eta-schedule", "'rates.py:f'", "eta f(t) at t = 6 is 0.2 x 1.7e+308", "above 3e+15"),
    ),
    Case(
        "run-eta-schedule-writes-its-argument",
        RUN_S,
        "a step-size schedule that writes into its argument (it gets a read-only copy)",
        _write_bytes("rates.py", b"import numpy as np\n\n\ndef f(t):\n    t *= 0\n    return np.ones_like(t)\n"),
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta-schedule", "rates.py:f", "--out", "out"),
        ("--eta-schedule", "factor(t) raised ValueError: output array is read-only (rates.py, line 5)"),
    ),
    Case(
        "run-learner-exits",
        RUN_S,
        "a user's learner whose play calls sys.exit() (the user's error, not the command's exit)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"__import__('sys').exit(3)")),
        ("run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"),
        ("learner 'mine': play raised SystemExit: 3 (mine.py, line 8)",),
        subprocess=True,
    ),
    Case(
        "run-option-too-many-digits",
        RUN_S,
        "an option's integer of 4,400 digits (named, and quoted by its first digits and length)",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "7" * 4400, "--out", "out"),
        ("-T", "expected a positive integer, got '7777777777... (4400 digits)'"),
    ),
    Case(
        "run-resume-config-fifo",
        RUN_S,
        "--resume of an interrupted run whose saved config.json is a FIFO (named, never read)",
        lambda d: (
            (d / ".out.partial").mkdir(),
            (d / ".out.partial" / "state.npz").write_bytes(b""),
            os.mkfifo(d / ".out.partial" / "config.json"),
        ),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--resume"),
        (".out.partial/config.json: is a FIFO, not a regular file", "the interrupted run's saved configuration"),
    ),
    Case(
        "run-resume-state-directory",
        RUN_S,
        "--resume of an interrupted run whose saved state is a directory",
        lambda d: (d / ".out.partial" / "state.npz").mkdir(parents=True),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--resume"),
        (".out.partial/state.npz: is a directory, not a regular file", "the interrupted run's saved state"),
    ),
    Case(
        "run-eta-per-player-count",
        RUN_S,
        "learning rates per player, more of them than the game has players",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--eta", "0.1,0.2,0.3", "--out", "out"),
        ("--eta", "3 rates given", "2 players"),
    ),
    Case(
        "run-alternating-two-query-learner",
        RUN_S,
        "alternating updates of a learner that makes two utility queries per iteration",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "extragradient+smooth-uniform",
            "-T",
            "10",
            "--order",
            "alternating",
            "--out",
            "out",
        ),
        ("--order alternating", "'extragradient'", "two utility queries"),
    ),
    Case(
        "run-feedback-unknown",
        RUN_S,
        "a feedback model that does not exist",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--feedback", "telepathy", "--out", "out"),
        ("--feedback", "unknown feedback model 'telepathy'", "sampled:K", "sampled:exact", "bandit:M"),
    ),
    Case(
        "run-feedback-bandit-option",
        RUN_S,
        "an option that a run on bandit feedback cannot take (it writes an output policy, whose exact gaps evaluate computes)",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "hedge+smooth",
            "-T",
            "10",
            "--feedback",
            "bandit:4",
            "--exact",
            "--out",
            "out",
        ),
        ("--exact", "a run on bandit feedback (--feedback bandit:4) cannot take it", "markovgames evaluate OUT --exact"),
    ),
    Case(
        "run-bandit-option-without-bandit",
        RUN_S,
        "a setting of learning from play (--ix) without bandit feedback",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--ix", "0.1", "--out", "out"),
        ("--ix", "give --feedback bandit:M", "'full'"),
    ),
    Case(
        "run-bandit-rate-unknown",
        RUN_S,
        "a learning-rate schedule over a state's visits that does not exist (--bandit-rate)",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "hedge+smooth",
            "-T",
            "10",
            "--feedback",
            "bandit:1",
            "--bandit-rate",
            "sqrt",
            "--out",
            "out",
        ),
        ("--bandit-rate", "invalid choice: 'sqrt'", "'decaying', 'constant'"),
    ),
    Case(
        "run-algorithm-vlearning",
        RUN_S,
        "a V-learning algorithm, which learns from play (vlearn runs it)",
        None,
        ("run", "--game", "paper", "--algorithm", "cce-v", "-T", "10", "--out", "out"),
        ("--algorithm", "'cce-v' is V-learning", "'markovgames vlearn GAME --algorithm cce-v'"),
    ),
    Case(
        "run-algorithm-exp3",
        RUN_S,
        "EXP3, which is Hedge on bandit feedback",
        None,
        ("run", "--game", "paper", "--algorithm", "exp3", "-T", "10", "--out", "out"),
        ("--algorithm", "'exp3' is Hedge on bandit feedback", "--algorithm hedge+smooth --no-optimism --feedback bandit:1"),
    ),
    Case(
        "run-algorithm-cfr",
        RUN_S,
        "CFR, which markovgames does not have (its regret matching+ at every state is rm-plus+UPDATE)",
        None,
        ("run", "--game", "paper", "--algorithm", "cfr", "-T", "10", "--out", "out"),
        ("--algorithm", "'cfr': markovgames has no CFR", "rm-plus+smooth"),
    ),
    Case(
        "run-game-file-misspelt",
        RUN_S,
        "a game file's path misspelt (the nearest existing game file is named)",
        _write_game("my_game.json"),
        ("run", "--game", "my_gme.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("'my_gme.json' (did you mean 'my_game.json'?)", "nor an existing game file"),
    ),
    Case(
        "run-feedback-samples",
        RUN_S,
        "a sampled feedback model without a positive number of samples",
        None,
        ("run", "--game", "paper", "--algorithm", "hedge+smooth", "-T", "10", "--feedback", "sampled:0", "--out", "out"),
        ("--feedback", "'sampled:0'", "an integer from 1 to"),
    ),
    Case(
        "run-seed-negative",
        RUN_S,
        "a seed of the draws that is not a non-negative integer",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "hedge+smooth",
            "-T",
            "10",
            "--feedback",
            "sampled:4",
            "--seed",
            "-3",
            "--out",
            "out",
        ),
        ("--seed", "non-negative integer", "got -3"),
    ),
    Case(
        "run-checkpoints-beyond-T",
        RUN_S,
        "a checkpoint beyond T",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoints", "5,50", "--out", "out"),
        ("--checkpoints", "50", "beyond T = 10"),
    ),
    Case(
        "run-checkpoints-not-integer",
        RUN_S,
        "a checkpoint that is not an integer",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoints", "5,x", "--out", "out"),
        ("--checkpoints", "'x'"),
    ),
    Case(
        "run-checkpoint-every-zero",
        RUN_S,
        "--checkpoint-every < 1",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoint-every", "0", "--out", "out"),
        ("--checkpoint-every", "got 0"),
    ),
    Case(
        "run-trajectory-tolerance-range",
        RUN_S,
        "--trajectory-tolerance outside [0, 1)",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--trajectory-tolerance", "1.5", "--out", "out"),
        ("--trajectory-tolerance", "[0, 1)", "got 1.5"),
    ),
    Case(
        "run-trajectory-tolerance-with-exact",
        RUN_S,
        "--trajectory-tolerance with --exact (which needs the whole trajectory)",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "smooth_ce",
            "-T",
            "10",
            "--trajectory-tolerance",
            "0.01",
            "--exact",
            "--out",
            "out",
        ),
        ("--exact", "drop --trajectory-tolerance"),
    ),
    Case(
        "run-out-unwritable",
        RUN_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "afile/out"),
        ("--out afile/out", "afile is not a directory"),
    ),
    Case(
        "run-out-is-a-file",
        RUN_S,
        "an output path that is a file",
        _a_file,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "afile"),
        ("--out afile", "not a directory"),
    ),
    Case(
        "run-out-holds-another-run",
        RUN_S,
        "an output directory that already holds a different run",
        _another_run(),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("out", "not empty", "--overwrite"),
    ),
    Case(
        "run-overwrite-not-a-run",
        RUN_S,
        "--overwrite of a directory that holds no markovgames run (no marker file)",
        _foreign_directory,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--overwrite"),
        ("out", "holds no markovgames run", ".markovgames", "--overwrite replaces only"),
    ),
    Case(
        "run-out-symlink",
        RUN_S,
        "an output directory that is a symbolic link (never followed)",
        _symlink_to_directory,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--overwrite"),
        ("out", "is a symbolic link"),
    ),
    Case(
        "run-out-contains-game",
        RUN_S,
        "--out naming the directory that holds the game file (a run replaces its whole output directory)",
        lambda d: (
            (d / "out").mkdir(),
            _write_game("out/game.json")(d),
            (d / "out" / ".markovgames").write_text('{"format": "markovgames-output/1", "kind": "run"}\n'),
        ),
        ("run", "--game", "out/game.json", "--algorithm", "smooth_ce", "-T", "10", "--out", "out", "--overwrite", "--quiet"),
        ("--out out", "contains the input out/game.json"),
    ),
    Case(
        "run-out-busy",
        RUN_S,
        "an output directory another command is writing to (it holds the lock)",
        _busy("out"),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("--out out", "another markovgames command is writing to this directory", ".out.lock"),
    ),
    Case(
        "run-out-lock-name-taken",
        RUN_S,
        "a user's own file named like the output's lock (.NAME.lock): kept, never taken or deleted",
        _users_lock_file("out"),
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--out", "out"),
        ("--out out", ".out.lock is a file of 21 bytes, not a markovgames lock"),
        subprocess=True,
    ),
    Case(
        "run-checkpoints-too-many",
        RUN_S,
        "more checkpoints than a run reports (10000)",
        None,
        (
            "run",
            "--game",
            "paper",
            "--algorithm",
            "smooth_ce",
            "-T",
            "20000",
            "--checkpoints",
            ",".join(map(str, range(1, 10002))),
            "--out",
            "out",
        ),
        ("--checkpoints", "10001 checkpoints", "limit of 10000"),
    ),
    Case(
        "run-resume-different-config",
        RUN_S,
        "--resume of an interrupted run with another configuration",
        _interrupted_run,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--checkpoint-every", "5", "--resume", "--out", "out"),
        (".out.partial", "different configuration"),
    ),
    Case(
        "run-resume-finished-different-config",
        RUN_S,
        "--resume of a finished run with another configuration",
        _finished_run,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--resume", "--out", "out"),
        ("out", "finished run with a different configuration", "T: 1000 there, 10 now", "nothing to resume"),
    ),
    Case(
        "run-resume-learner-changed",
        RUN_S,
        "--resume of a run of a user's learner whose file has changed since",
        _in_run(_learner_changed),
        ("run", "--game", "paper", "--algorithm", "mine.py:ALGORITHM", "-T", "20", "--resume", "--out", "run"),
        ("run: holds a finished run with a different configuration", "algorithm_sha256", "the learner's file has changed"),
        needs_run=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys, request):
    check_case(case, tmp_path, monkeypatch, capsys, request)


def test_running_out_of_memory_is_a_user_error(tmp_path, monkeypatch, capsys):
    """A run too long for the machine's memory: one line naming -T, and no staging directory left."""
    import markovgames.dynamics as dynamics

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(dynamics, "run", no_memory)  # the command imports it when it runs
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "100", "--out", "out", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("markovgames: error: -T: a run of 100 iterations needs more memory")
    # Nothing stays: no output, no staging directory, no lock file.
    assert list(tmp_path.iterdir()) == []
