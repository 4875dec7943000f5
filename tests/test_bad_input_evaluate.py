"""Bad input to ``markovgames evaluate``: damaged, foreign or special run directories (``docs/errors.md``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bad_input import (
    Case,
    _a_file,
    _busy,
    _fifo,
    _in_run,
    _symlink_to_file,
    _users_lock_file,
    check_case,
    finished_run,  # noqa: F401 - the fixture of the cases that need a finished run
)

EVAL_S = "markovgames evaluate"


def _names_a_users_file(run: Path) -> None:
    """A metrics.json without value_update naming a file that would leave a trace if imported."""
    (run.parent / "evil.py").write_text('open("IMPORTED", "w").write("evil.py ran")\nX = 1\n')
    metrics = json.loads((run / "metrics.json").read_text())
    del metrics["value_update"]
    metrics["algorithm"] = "evil.py:X"
    (run / "metrics.json").write_text(json.dumps(metrics))


def _earlier_evaluation(d: Path) -> None:
    (d / "run" / "evaluation.json").write_text('{"T": 20}\n')


def _compressed_curve(run: Path) -> None:
    """The run's curve.npz written again compressed (a directory that records no checksums)."""
    with np.load(run / "curve.npz") as data:
        arrays = {k: np.array(data[k]) for k in data.files}
    np.savez_compressed(run / "curve.npz", **arrays)
    metrics = json.loads((run / "metrics.json").read_text())
    del metrics["sha256"]
    (run / "metrics.json").write_text(json.dumps(metrics))


def _huge_sparse_game_in_run(run: Path) -> None:
    """The run's game.json replaced by a 20 GB file of zeros that takes no room (its SHA-256 recorded
    in metrics.json as before: it must not be hashed before its size is checked)."""
    with open(run / "game.json", "wb") as fh:
        fh.truncate(20 * 2**30)


def _discounted_run(change: Callable[[Path], None] | None = None) -> Callable[[Path], None]:
    """A finished run of a discounted game in ./drun, then ``change`` applied to it."""

    def setup(d: Path) -> None:
        from markovgames.cli import main

        args = ["run", "--game", "matching_pennies_discounted", "--algorithm", "hedge+discounted-smooth", "-T", "5"]
        assert main([*args, "--out", str(d / "drun"), "--quiet"]) == 0
        if change is not None:
            change(d / "drun")

    return setup


def _discount_changed(run: Path) -> None:
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["discount"] = 0.5
    (run / "metrics.json").write_text(json.dumps(metrics))


def _policy(player: int, array) -> Callable[[Path], None]:
    return _in_run(lambda run: np.save(run / "trajectory" / f"policy_{player}.npy", array))


def _metrics(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        metrics = json.loads((run / "metrics.json").read_text())
        edit(metrics)
        (run / "metrics.json").write_text(json.dumps(metrics))

    return _in_run(change)


def _truncate(relative: str, keep: float = 0.5) -> Callable[[Path], None]:
    def change(run: Path) -> None:
        path = run / relative
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    return _in_run(change)


def _foreign_curve(run: Path) -> None:
    np.savez(run / "curve.npz", a=np.zeros(3))
    metrics = json.loads((run / "metrics.json").read_text())
    del metrics["sha256"]  # as a directory written before checksums were recorded
    (run / "metrics.json").write_text(json.dumps(metrics))


#: The finished run of the catalogue (paper game, smooth_ce, T = 20): its trajectory's shape.
RUN_POLICY_SHAPE = (20, 2, 2, 2)
_NAN_POLICY = np.full(RUN_POLICY_SHAPE, 0.5)
_NAN_POLICY[3, 1, 0, 1] = np.nan

CASES: list[Case] = [
    # ---- markovgames evaluate
    Case(
        "evaluate-not-a-run",
        EVAL_S,
        "a directory that is not a run directory",
        lambda d: (d / "somewhere").mkdir(),
        ("evaluate", "somewhere"),
        ("somewhere", "not a run directory", "metrics.json"),
    ),
    Case(
        "evaluate-path-misspelt",
        EVAL_S,
        "a run directory's path misspelt (the nearest existing directory is named)",
        None,
        ("evaluate", "rnu"),
        ("rnu: no such file or directory (did you mean 'run'?)", "expected a run directory (with metrics.json)"),
        needs_run=True,
    ),
    Case(
        "evaluate-a-sweep",
        EVAL_S,
        "a sweep directory for a run directory (the message names the commands that read it)",
        lambda d: ((d / "sw").mkdir(), (d / "sw" / "results.parquet").write_bytes(b"PAR1")),
        ("evaluate", "sw"),
        ("sw: is a sweep directory, which 'markovgames summarize' and 'markovgames plot' read", "not a run directory"),
    ),
    Case("evaluate-T-zero", EVAL_S, "T' < 1", None, ("evaluate", "run", "-T", "0"), ("-T", "got 0"), needs_run=True),
    Case(
        "evaluate-discounted-exact",
        EVAL_S,
        "--exact on a discounted game's run (no output policy; its iterates are evaluated exactly anyway)",
        _discounted_run(),
        ("evaluate", "drun", "--exact"),
        ("--exact", "drun holds the run of a discounted game", "no output policy"),
    ),
    Case(
        "evaluate-discounted-discount-changed",
        EVAL_S,
        "a discounted run's metrics.json whose discount is not its game's",
        _discounted_run(_discount_changed),
        ("evaluate", "drun"),
        ("metrics.json", "discount: 0.5", "the game file's is 0.9"),
    ),
    Case(
        "plot-discounted-run",
        EVAL_S,
        "a discounted game's run given to a command that reads an output policy's curves",
        _discounted_run(),
        ("plot", "drun"),
        ("drun", "holds the run of a discounted game", "'markovgames evaluate' reads it"),
    ),
    Case(
        "evaluate-seed-negative",
        EVAL_S,
        "a negative Monte Carlo seed",
        None,
        ("evaluate", "run", "--monte-carlo", "10", "--seed", "-1"),
        ("--seed", "got -1"),
        needs_run=True,
    ),
    Case(
        "evaluate-concept-without-exact",
        EVAL_S,
        "--concept (which exact gaps) without --exact",
        None,
        ("evaluate", "run", "--concept", "ce"),
        ("--concept", "--exact computes", "drop --concept ce"),
        needs_run=True,
    ),
    Case(
        "evaluate-T-beyond-run",
        EVAL_S,
        "T' beyond the run's T",
        None,
        ("evaluate", "run", "-T", "500"),
        ("-T", "T = 20", "got 500"),
        needs_run=True,
    ),
    Case(
        "evaluate-monte-carlo-too-few",
        EVAL_S,
        "--monte-carlo < 2",
        None,
        ("evaluate", "run", "--monte-carlo", "1"),
        ("--monte-carlo", "got 1"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-unwritable",
        EVAL_S,
        "an output file whose directory is a file",
        _a_file,
        ("evaluate", "run", "--out", "afile/evaluation.json"),
        ("--out afile/evaluation.json", "afile is not an existing directory"),
        needs_run=True,
    ),
    Case(
        "evaluate-earlier-evaluation",
        EVAL_S,
        "an earlier evaluation.json in the run directory",
        _earlier_evaluation,
        ("evaluate", "run"),
        ("run/evaluation.json", "exists", "--overwrite"),
        needs_run=True,
    ),
    Case(
        "evaluate-policy-not-a-distribution",
        EVAL_S,
        "a stored policy row that is not a probability vector (zeros)",
        _policy(0, np.zeros(RUN_POLICY_SHAPE)),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_0.npy", "row [0][0][0] (iteration 1, step 0, state 0)", "sums to 0.0, not 1"),
        needs_run=True,
    ),
    Case(
        "evaluate-policy-nan",
        EVAL_S,
        "a stored policy entry that is NaN",
        _policy(1, _NAN_POLICY),
        ("evaluate", "run", "--monte-carlo", "100"),
        ("run/trajectory/policy_1.npy", "entry [3][1][0][1]", "= nan is not finite"),
        needs_run=True,
    ),
    Case(
        "evaluate-policy-integer",
        EVAL_S,
        "a stored policy of the wrong dtype (integers)",
        _policy(0, np.ones(RUN_POLICY_SHAPE, dtype=np.int64)),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_0.npy", "expected a float64 array", "got dtype int64"),
        needs_run=True,
    ),
    Case(
        "evaluate-trajectory-too-short",
        EVAL_S,
        "a trajectory shorter than the run's T (T' beyond the trajectory)",
        _policy(0, np.full((10, 2, 2, 2), 0.5)),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_0.npy", "shape (20, 2, 2, 2)", "got dtype float64 with shape (10, 2, 2, 2)"),
        needs_run=True,
    ),
    Case(
        "evaluate-trajectory-truncated",
        EVAL_S,
        "a truncated trajectory file",
        _truncate("trajectory/policy_1.npy"),
        ("evaluate", "run", "--exact"),
        ("run/trajectory/policy_1.npy", "truncated"),
        needs_run=True,
    ),
    Case(
        "evaluate-curve-damaged",
        EVAL_S,
        "a curve.npz that is not the one the run wrote (its SHA-256 differs)",
        _truncate("curve.npz"),
        ("evaluate", "run"),
        ("run/curve.npz", "SHA-256 differs from the one metrics.json records"),
        needs_run=True,
    ),
    Case(
        "evaluate-curve-compressed",
        EVAL_S,
        "a curve.npz with compressed members (a run writes them uncompressed: a compressed one may be a bomb)",
        _in_run(_compressed_curve),
        ("evaluate", "run"),
        ("run/curve.npz", "a compressed member", "written uncompressed"),
        needs_run=True,
    ),
    Case(
        "evaluate-game-file-too-large",
        EVAL_S,
        "a game file over the size limit (refused before it is hashed)",
        _in_run(_huge_sparse_game_in_run),
        ("evaluate", "run"),
        ("run/game.json", "file is 21474836480 bytes, more than the limit of 268435456 bytes"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-field-type",
        EVAL_S,
        "a metrics.json field of the wrong type",
        _metrics(lambda m: m.update(optimistic="yes")),
        ("evaluate", "run"),
        ("run/metrics.json", "optimistic", 'expected true or false, got "yes"'),
        needs_run=True,
    ),
    Case(
        "evaluate-curve-foreign",
        EVAL_S,
        "a curve.npz with other arrays (in a directory that records no checksums)",
        _in_run(_foreign_curve),
        ("evaluate", "run"),
        ("run/curve.npz", "expected the arrays value, certified_ce_bound, certified_cce_bound"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-nested-too-deep",
        EVAL_S,
        "a metrics.json nested thousands deep",
        _in_run(lambda run: (run / "metrics.json").write_text("[" * 100000 + "]" * 100000)),
        ("evaluate", "run"),
        ("run/metrics.json", "nested too deep"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-names-a-users-file",
        EVAL_S,
        "a metrics.json without value_update whose algorithm names a file (never loaded)",
        _in_run(_names_a_users_file),
        ("evaluate", "run"),
        ("run/metrics.json", "value_update: missing", "'evil.py:X' is not a built-in algorithm"),
        needs_run=True,
    ),
    Case(
        "evaluate-game-file-outside",
        EVAL_S,
        "a metrics.json whose game_file points outside the run directory",
        _metrics(lambda m: m.update(game_file="../game.json")),
        ("evaluate", "run"),
        ("run/metrics.json", "game_file", "expected game.json or game.npz"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-fifo",
        EVAL_S,
        "a metrics.json that is a FIFO",
        _in_run(lambda run: ((run / "metrics.json").unlink(), os.mkfifo(run / "metrics.json"))),
        ("evaluate", "run"),
        ("run/metrics.json", "not a regular file (a FIFO)"),
        needs_run=True,
    ),
    Case(
        "evaluate-run-busy",
        EVAL_S,
        "a run directory another command is writing to (it holds the lock)",
        _busy("run"),
        ("evaluate", "run"),
        ("run", "another markovgames command is writing to this directory"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-is-an-input",
        EVAL_S,
        "--out naming a file the evaluation reads (never replaced, even with --overwrite)",
        None,
        ("evaluate", "run", "--out", "run/metrics.json", "--overwrite"),
        ("--out run/metrics.json", "is the input", "an output never replaces what the command reads"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-inside-trajectory",
        EVAL_S,
        "--out inside the run's trajectory directory",
        None,
        ("evaluate", "run", "--out", "run/trajectory/policy_0.npy", "--overwrite"),
        ("--out run/trajectory/policy_0.npy", "lies inside the input", "run/trajectory"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-fifo",
        EVAL_S,
        "--out naming a FIFO (never replaced, even with --overwrite)",
        _fifo("ev.json"),
        ("evaluate", "run", "--out", "ev.json", "--overwrite"),
        ("--out ev.json", "is a FIFO, not a regular file", "replaces only regular files"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-symlink",
        EVAL_S,
        "--out naming a symbolic link (its target is never replaced)",
        _symlink_to_file("ev.json"),
        ("evaluate", "run", "--out", "ev.json", "--overwrite"),
        ("--out ev.json", "is a symbolic link", "never writes through one"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-negative-gap",
        EVAL_S,
        "a metrics.json whose certified gap is negative (impossible: a gap is at least 0)",
        _metrics(lambda m: m["checkpoints"][1].update(certified_cce_gap=-0.25)),
        ("evaluate", "run"),
        ("run/metrics.json", "checkpoints[1] (T' = ", ").certified_cce_gap: -0.25 is outside [0, H] (H = 2)"),
        needs_run=True,
    ),
    Case(
        "evaluate-metrics-bound-below-value",
        EVAL_S,
        "a metrics.json whose certified bound is below the value",
        _metrics(lambda m: m["checkpoints"][0].update(certified_ce_bound=[0.0, 0.0])),
        ("evaluate", "run"),
        ("run/metrics.json", "checkpoints[0] (T' = 1).certified_ce_bound: [0.0, 0.0] is below the value"),
        needs_run=True,
    ),
    Case(
        "evaluate-out-lock-name-taken",
        EVAL_S,
        "a user's own file named like the output file's lock (.NAME.lock): kept, never taken or deleted",
        _users_lock_file("ev.json"),
        ("evaluate", "run", "--out", "ev.json"),
        ("--out ev.json", ".ev.json.lock is a file of 21 bytes, not a markovgames lock"),
        needs_run=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys, request):
    check_case(case, tmp_path, monkeypatch, capsys, request)
