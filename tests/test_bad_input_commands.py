"""Bad input to ``solve``, ``certify``, ``reproduce``, ``plot`` and ``summarize``, and to any command (``docs/errors.md``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bad_input import (
    LEARNER_FILE,
    Case,
    _a_file,
    _another_run,
    _both,
    _busy,
    _fifo,
    _foreign_directory,
    _users_lock_file,
    _write_bytes,
    _write_game,
    check_case,
    finished_run,  # noqa: F401 - the fixture of the cases that need a finished run
    finished_vlearn,  # noqa: F401 - the fixture of the cases that need a finished V-learning run
)

SOLVE_S = "markovgames solve"
REPRO_S = "markovgames reproduce"
PLOT_S = "markovgames plot and summarize"
CERT_S = "markovgames certify"
VLEARN_S = "markovgames vlearn"
ARGS_S = "Any command"


def _policies(players: int, *, shape=(3, 2, 2, 2), bad_row: bool = False):
    """A directory ``pols`` with ``policy_0.npy`` .. ``policy_{players-1}.npy`` (uniform rows)."""

    def setup(d: Path) -> None:
        (d / "pols").mkdir()
        for i in range(players):
            policy = np.full(shape, 1.0 / shape[-1])
            if bad_row and i == 0:
                policy[1, 0, 1] = 0.0
            np.save(d / "pols" / f"policy_{i}.npy", policy)

    return setup


def _toml_file(name: str):
    """A sweep configuration ``name`` (a short valid one), in the working directory."""
    return lambda d: (d / name).write_text('T = 10\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\n')


def _results(d: Path) -> None:
    """A sweep directory ``sw`` whose results.parquet has one run with checkpoints 1, 10, 100."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "run_id": "r",
            "game": "g",
            "game_seed": None,
            "N": 2,
            "H": 2,
            "S": 2,
            "A": "2x2",
            "algorithm": "smooth_cce",
            "concept": "cce",
            "optimistic": True,
            "eta": "0.2",
            "eta_value": 0.2,
            "T": 100,
            "checkpoint": c,
            "certified_ce_gap": 1.0 / c,
            "certified_cce_gap": 1.0 / c,
        }
        for c in (1, 10, 100)
    ]
    (d / "sw").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), d / "sw" / "results.parquet")


def _results_edited(edit: Callable[[list[dict]], object]):
    """The sweep directory of `_results`, its rows changed by ``edit`` (the types follow the values)."""

    def setup(d: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        _results(d)
        rows = pq.read_table(d / "sw" / "results.parquet").to_pylist()
        edit(rows)
        pq.write_table(pa.Table.from_pylist(rows), d / "sw" / "results.parquet")

    return setup


def _discounted_rows(rows: list[dict]) -> None:
    """`_results`' rows as a discounted game's run's: a discount, value estimates, no horizon and no
    output policy (its certified gaps null); the cases then spoil one thing."""
    for r in rows:
        r.update(discount=0.9, H=None, value_estimate=[1.0, 1.0], certified_ce_gap=None, certified_cce_gap=None)


def _results_too_many_rows(d: Path) -> None:
    """A results.parquet of 1,000,001 copies of one row: a few hundred kB that declare a million rows."""
    import pyarrow.parquet as pq

    _results(d)
    table = pq.read_table(d / "sw" / "results.parquet")
    pq.write_table(table.take(np.zeros(1_000_001, dtype=np.int64)), d / "sw" / "results.parquet")


def _policy_of_another_kernel(d: Path) -> None:
    """The V-learning run's policy.npz rewritten with the index kernel 'stage' (its numbers unchanged,
    metrics.json's digest updated): a policy the run's kernel ('smooth') did not make."""
    import hashlib

    from markovgames.policies import VisitChainPolicy

    policy = VisitChainPolicy.load(d / "policy.npz")
    VisitChainPolicy("stage", policy.visited, policy.policies).save(d / "policy.npz")
    metrics = json.loads((d / "metrics.json").read_text())
    metrics["sha256"]["policy.npz"] = hashlib.sha256((d / "policy.npz").read_bytes()).hexdigest()
    (d / "metrics.json").write_text(json.dumps(metrics))


def _in_vlearn(change: Callable[[Path], object]):
    """Change the finished V-learning run copied to ./vl (cases with ``needs_vlearn``)."""
    return lambda d: change(d / "vl")


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def _edit_metrics(directory: Path, **fields) -> None:
    metrics = json.loads((directory / "metrics.json").read_text())
    metrics.update(fields)
    (directory / "metrics.json").write_text(json.dumps(metrics))


CASES: list[Case] = [
    # ---- markovgames solve
    Case(
        "solve-bad-objective",
        SOLVE_S,
        "an unknown objective",
        None,
        ("solve", "--game", "paper", "--concept", "ce", "--objective", "nope", "--out", "out"),
        ("objective", "'nope'"),
    ),
    Case(
        "solve-out-unwritable",
        SOLVE_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("solve", "--game", "paper", "--concept", "ce", "--out", "afile/out"),
        ("--out afile/out", "afile is not a directory"),
    ),
    Case(
        "solve-overwrite-not-a-run",
        SOLVE_S,
        "--overwrite of a directory that holds no markovgames run (no marker file)",
        _foreign_directory,
        ("solve", "--game", "paper", "--concept", "ce", "--out", "out", "--overwrite"),
        ("out", "holds no markovgames run"),
    ),
    Case(
        "solve-out-holds-another-run",
        SOLVE_S,
        "an output directory that already holds a different run",
        _another_run(),
        ("solve", "--game", "paper", "--concept", "ce", "--out", "out"),
        ("out", "not empty", "--overwrite"),
    ),
    # ---- markovgames reproduce
    Case(
        "certify-policy-missing",
        CERT_S,
        "a policy directory without a player's file",
        _policies(1),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("pols/policy_1.npy: missing", "policy_0.npy .. policy_1.npy"),
    ),
    Case(
        "certify-policy-wrong-shape",
        CERT_S,
        "a policy of the wrong shape for the game",
        _policies(2, shape=(3, 2, 2, 3)),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("pols/policy_0.npy: expected shape (T, H, S, A_0) = (T, 2, 2, 2), got (3, 2, 2, 3)",),
    ),
    Case(
        "certify-policy-not-a-distribution",
        CERT_S,
        "a policy row that is not a probability vector",
        _policies(2, bad_row=True),
        ("certify", "pols", "--game", "paper", "--value-update", "stage", "--out", "cert"),
        ("pols/policy_0.npy[1][0][1] sums to 0.0, not 1",),
    ),
    Case(
        "certify-policy-fifo",
        CERT_S,
        "a policy file that is a FIFO (it exists, but is not a regular file)",
        _both(_policies(1), _fifo("pols/policy_1.npy")),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("pols/policy_1.npy: exists but is a FIFO, not a regular file",),
    ),
    Case(
        "certify-a-run-directory",
        CERT_S,
        "a run directory for the trajectory inside it",
        None,
        ("certify", "run", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("run: is a run directory", "not a directory of policy_i.npy files", "its trajectory is run/trajectory"),
        needs_run=True,
    ),
    Case(
        "certify-path-misspelt",
        CERT_S,
        "a trajectory's path misspelt (the nearest existing directory is named)",
        None,
        ("certify", "run/trajectroy", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("run/trajectroy: no such file or directory (did you mean 'run/trajectory'?)",),
        needs_run=True,
    ),
    Case(
        "certify-out-contains-input",
        CERT_S,
        "--out naming the run whose trajectory is certified (it would delete its own input)",
        None,
        ("certify", "run/trajectory", "--game", "paper", "--value-update", "smooth", "--out", "run", "--overwrite"),
        ("--out run", "contains the input run/trajectory"),
        needs_run=True,
    ),
    Case(
        "certify-out-busy",
        CERT_S,
        "an output directory another command is writing to (a running run's, whose staging directory it would replace)",
        _both(_policies(2), _busy("cert")),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert"),
        ("--out cert", "another markovgames command is writing to this directory"),
    ),
    Case(
        "certify-overwrite-a-sweep",
        CERT_S,
        "--overwrite of a sweep directory (marked, but not a kind that a whole-directory output replaces)",
        _both(
            _policies(2),
            lambda d: (
                (d / "cert").mkdir(),
                (d / "cert" / ".markovgames").write_text('{"format": "markovgames-output/1", "kind": "sweep"}\n'),
            ),
        ),
        ("certify", "pols", "--game", "paper", "--value-update", "smooth", "--out", "cert", "--overwrite"),
        ("cert", "holds a markovgames sweep directory, not a run"),
    ),
    # ---- markovgames vlearn (and evaluate of its directory)
    Case(
        "vlearn-unknown-algorithm",
        VLEARN_S,
        "an algorithm that is not a V-learning algorithm",
        None,
        ("vlearn", "paper", "--algorithm", "cce", "--episodes", "100", "--out", "vl"),
        ("--algorithm", "unknown V-learning algorithm 'cce'", "cce-v, ce-v, stage-v", "did you mean 'cce-v'?"),
    ),
    Case(
        "vlearn-out-lock-name-taken",
        VLEARN_S,
        "a user's own file named like the output's lock (.NAME.lock): kept, never taken or deleted",
        _users_lock_file("vl"),
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "20", "--out", "vl"),
        ("--out vl", ".vl.lock is a file of 21 bytes, not a markovgames lock"),
    ),
    Case(
        "vlearn-learner-exits",
        VLEARN_S,
        "a user's learner whose play calls sys.exit() (the user's error, not the command's exit)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"__import__('sys').exit(3)")),
        ("vlearn", "paper", "--algorithm", "mine.py:LEARNER+smooth", "--episodes", "20", "--out", "vl"),
        ("--algorithm", "learner 'mine': play raised SystemExit: 3 (mine.py, line 8)"),
        subprocess=True,
    ),
    Case(
        "vlearn-eta-too-large",
        VLEARN_S,
        "a learning rate beyond what float64 resolves over the run's rounds (the limit of run's --eta)",
        None,
        ("vlearn", "paper", "--algorithm", "hedge+smooth", "--episodes", "100", "--eta", "1e308", "--out", "vl"),
        ("--eta", "1e+308 is too large for 100 rounds in float64", "at most 3.53e+14"),
    ),
    Case(
        "vlearn-feedback-not-bandit",
        VLEARN_S,
        "a feedback model that is not learning from play",
        None,
        ("vlearn", "paper", "--algorithm", "hedge+smooth", "--feedback", "sampled:4", "--episodes", "100", "--out", "vl"),
        ("--feedback", "'sampled:4' is not learning from play", "markovgames run --feedback"),
    ),
    Case(
        "vlearn-episodes-not-whole-rounds",
        VLEARN_S,
        "a number of episodes that is not a whole number of rounds of bandit:M",
        None,
        ("vlearn", "paper", "--algorithm", "hedge+smooth", "--feedback", "bandit:8", "--episodes", "100", "--out", "vl"),
        ("--episodes", "100 is not a whole number of rounds of 8 episodes", "choose a multiple of 8"),
    ),
    Case(
        "vlearn-eta-for-vlearning",
        VLEARN_S,
        "a learning rate for a V-learning algorithm (its paper's rates are its own)",
        None,
        ("vlearn", "paper", "--algorithm", "ce-v", "--eta", "0.1", "--episodes", "100", "--out", "vl"),
        ("--eta", "ce-v runs with its paper's rates", "for a composition LEARNER+UPDATE"),
    ),
    Case(
        "vlearn-bandit-rate-for-vlearning",
        VLEARN_S,
        "a learning-rate schedule for a V-learning algorithm (its paper's rates are its own)",
        None,
        ("vlearn", "paper", "--algorithm", "cce-v", "--bandit-rate", "constant", "--episodes", "100", "--out", "vl"),
        ("--bandit-rate", "cce-v runs with its paper's rates", "for a composition LEARNER+UPDATE"),
    ),
    Case(
        "vlearn-two-query-learner",
        VLEARN_S,
        "a learner that makes two utility queries per iteration, which play answers once",
        None,
        ("vlearn", "paper", "--algorithm", "extragradient+smooth", "--episodes", "100", "--out", "vl"),
        ("--algorithm", "'extragradient' makes two utility queries", "each round's episodes answer one"),
    ),
    Case(
        "vlearn-learner-not-a-distribution",
        VLEARN_S,
        "a user's learner that plays a vector that is not a probability vector (checked where it runs)",
        _write_bytes("mine.py", LEARNER_FILE.replace(b"PLAYED", b"x * 0.7")),
        ("vlearn", "paper", "--algorithm", "mine.py:LEARNER+smooth", "--episodes", "100", "--out", "vl"),
        ("learner 'mine'", "not a probability vector"),
    ),
    Case(
        "vlearn-episodes-zero",
        VLEARN_S,
        "episodes < 1",
        None,
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "0", "--out", "vl"),
        ("--episodes", "at least 1", "got 0"),
    ),
    Case(
        "vlearn-episodes-too-many",
        VLEARN_S,
        "more episodes than a run's record may keep",
        None,
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "1e9", "--out", "vl"),
        ("--episodes", "1,000,000,000 episodes", "8.0 GiB", "choose fewer episodes"),
    ),
    Case(
        "vlearn-bonus-negative",
        VLEARN_S,
        "a negative bonus",
        None,
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "100", "--bonus", "-1", "--out", "vl"),
        ("--bonus", ">= 0", "'-1'"),
    ),
    Case(
        "vlearn-checkpoint-beyond-episodes",
        VLEARN_S,
        "a checkpoint beyond the number of episodes",
        None,
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "100", "--checkpoints", "10,500", "--out", "vl"),
        ("--checkpoints", "500 is beyond the 100 episodes"),
    ),
    Case(
        "vlearn-game-missing",
        VLEARN_S,
        "no game",
        None,
        ("vlearn", "--algorithm", "cce-v", "--episodes", "100", "--out", "vl"),
        ("GAME: missing",),
    ),
    Case(
        "vlearn-out-unwritable",
        VLEARN_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "100", "--out", "afile/vl"),
        ("--out afile/vl", "afile is not a directory"),
    ),
    Case(
        "vlearn-out-holds-another-run",
        VLEARN_S,
        "an output directory that already holds a run, without --overwrite",
        _another_run("vl"),
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "100", "--out", "vl"),
        ("vl", "not empty", "--overwrite"),
    ),
    Case(
        "vlearn-overwrite-not-a-run",
        VLEARN_S,
        "--overwrite of a directory that holds no markovgames run (no marker file)",
        lambda d: _foreign_directory(d, "vl"),
        ("vlearn", "paper", "--algorithm", "cce-v", "--episodes", "100", "--out", "vl", "--overwrite"),
        ("vl", "holds no markovgames run", "'vlearn'"),
    ),
    Case(
        "vlearn-out-contains-game",
        VLEARN_S,
        "--out naming the directory of the game file it reads (it would delete its own input)",
        _both(lambda d: (d / "games").mkdir(), _write_game("games/g.json")),
        ("vlearn", "games/g.json", "--algorithm", "cce-v", "--episodes", "100", "--out", "games", "--overwrite"),
        ("--out games", "contains the input games/g.json"),
    ),
    Case(
        "evaluate-vlearn-K-beyond-run",
        VLEARN_S,
        "K' beyond the V-learning run's episodes",
        None,
        ("evaluate", "vl", "-T", "500"),
        ("-T", "the V-learning run has 20 episodes", "1..20", "got 500"),
        needs_vlearn=True,
    ),
    Case(
        "evaluate-vlearn-policy-damaged",
        VLEARN_S,
        "a policy.npz that is not the one the run wrote (its SHA-256 differs)",
        _in_vlearn(lambda d: _flip_last_byte(d / "policy.npz")),
        ("evaluate", "vl", "--exact"),
        ("vl/policy.npz", "SHA-256 differs", "metrics.json"),
        needs_vlearn=True,
    ),
    Case(
        "evaluate-vlearn-policy-kind",
        VLEARN_S,
        "a policy.npz whose index kernel is not the one metrics.json records (even with a matching digest)",
        _in_vlearn(_policy_of_another_kernel),
        ("evaluate", "vl"),
        ("vl/policy.npz", "kind: 'stage', but metrics.json records the output policy's kernel 'smooth'"),
        needs_vlearn=True,
    ),
    Case(
        "evaluate-vlearn-metrics-algorithm",
        VLEARN_S,
        "a metrics.json whose algorithm is not a name (a name read back is a label: never loaded)",
        _in_vlearn(lambda d: _edit_metrics(d, algorithm=["evil.py:X"])),
        ("evaluate", "vl"),
        ("vl/metrics.json", "algorithm", "cce-v, ce-v, stage-v or a composition's name", "got list"),
        needs_vlearn=True,
    ),
    Case(
        "evaluate-vlearn-metrics-bandit-rate",
        VLEARN_S,
        "a metrics.json whose learning-rate schedule is not one of its names",
        _in_vlearn(lambda d: _edit_metrics(d, bandit_rate="sqrt")),
        ("evaluate", "vl"),
        ("vl/metrics.json", "bandit_rate", "expected decaying or constant or null", '"sqrt"'),
        needs_vlearn=True,
    ),
    Case(
        "evaluate-vlearn-out-is-the-policy",
        VLEARN_S,
        "--out naming the output policy the evaluation reads",
        None,
        ("evaluate", "vl", "--out", "vl/policy.npz", "--overwrite"),
        ("--out vl/policy.npz", "is the input vl/policy.npz"),
        needs_vlearn=True,
    ),
    Case(
        "plot-vlearn-directory",
        VLEARN_S,
        "a V-learning run given to a command that reads a run of 'markovgames run'",
        None,
        ("plot", "vl"),
        ("vl", "holds a V-learning run", "'markovgames evaluate' reads it"),
        needs_vlearn=True,
    ),
    Case(
        "reproduce-T-memory",
        REPRO_S,
        "a T whose runs need more memory than the machine has",
        None,
        ("reproduce", "-T", "2147483647", "--out", "out"),
        ("-T:", "the reproduction's 6 runs", "for T = 2147483647", "times this machine's", "choose -T at most"),
    ),
    Case("reproduce-T-zero", REPRO_S, "T < 1", None, ("reproduce", "-T", "0", "--out", "out"), ("-T", "got 0")),
    Case(
        "reproduce-eta-zero", REPRO_S, "eta <= 0", None, ("reproduce", "-T", "10", "--eta", "0", "--out", "out"), ("--eta", "'0'")
    ),
    Case(
        "reproduce-out-unwritable",
        REPRO_S,
        "an output directory that cannot be created (its parent is a file)",
        _a_file,
        ("reproduce", "-T", "10", "--out", "afile/out"),
        ("--out afile/out", "afile is not a directory"),
    ),
    Case(
        "reproduce-out-holds-a-run",
        REPRO_S,
        "an output directory that already holds a run",
        _another_run(),
        ("reproduce", "-T", "10", "--out", "out"),
        ("--out out", "metrics.json", "another run"),
    ),
    Case(
        "reproduce-out-being-written",
        REPRO_S,
        "an output directory another reproduction is making (locked, its marker not yet written): the lock answers",
        _both(lambda d: (d / "rep").mkdir(), lambda d: (d / "rep" / "curves.npz").write_bytes(b"half"), _busy("rep")),
        ("reproduce", "-T", "10", "--out", "rep"),
        ("--out rep", "another markovgames command is writing to this directory", ".rep.lock"),
    ),
    Case(
        "reproduce-out-foreign",
        REPRO_S,
        "a non-empty output directory that no reproduction made (its files would be replaced)",
        _foreign_directory,
        ("reproduce", "-T", "10", "--out", "out"),
        ("--out out", "holds no markovgames reproduction"),
    ),
    # ---- markovgames plot and summarize
    Case(
        "plot-a-configuration",
        PLOT_S,
        "a sweep's configuration file for its directory (the message says how to run it)",
        _toml_file("mysweep.toml"),
        ("plot", "mysweep.toml"),
        ("mysweep.toml: is a file (a sweep configuration?)", "not a sweep directory", "markovgames sweep mysweep.toml --out DIR"),
    ),
    Case(
        "plot-path-misspelt",
        PLOT_S,
        "a sweep directory's path misspelt (the nearest existing directory is named)",
        _results,
        ("plot", "sw2"),
        ("sw2: no such file or directory (did you mean 'sw'?)", "a sweep directory (with results.parquet) or a run directory"),
    ),
    Case(
        "summarize-a-run-directory",
        PLOT_S,
        "a run directory for a sweep directory (the message names the commands that read it)",
        None,
        ("summarize", "run"),
        ("run: is a run directory, which 'markovgames evaluate' and 'markovgames plot' read", "not a sweep directory"),
        needs_run=True,
    ),
    Case(
        "plot-window-reversed",
        PLOT_S,
        "a slope window whose ends are reversed",
        _results,
        ("plot", "sw", "--window", "1e5,1e3"),
        ("--window", "1 <= LOW < HIGH", "'1e5,1e3'"),
    ),
    Case(
        "summarize-window-not-numbers",
        PLOT_S,
        "a slope window that is not two numbers",
        _results,
        ("summarize", "sw", "--window", "1e3"),
        ("--window", "LOW,HIGH", "'1e3'"),
    ),
    Case(
        "plot-decades-not-a-checkpoint",
        PLOT_S,
        "a decade that is not a checkpoint of the runs",
        _results,
        ("plot", "sw", "--x", "horizon", "--decades", "50"),
        ("--decades", "T' = 50", "10, 100"),
    ),
    Case(
        "plot-metric-not-recorded",
        PLOT_S,
        "a metric that no run of the sweep recorded (regret curves without regret = true)",
        _results,
        ("plot", "sw", "--metric", "swap_regret"),
        ("--metric", "no run of these results recorded swap_regret", "regret = true"),
    ),
    Case(
        "summarize-metric-not-recorded",
        PLOT_S,
        "a product policy's gap that no run of the sweep recorded (the weighted average without weighted_average = true)",
        _results,
        ("summarize", "sw", "--metric", "weighted_average_duality_gap"),
        ("--metric", "no run of these results recorded weighted_average_duality_gap", "weighted_average = true"),
    ),
    Case(
        "plot-x-axis-samples-not-drawn",
        PLOT_S,
        "figures against the samples drawn, of a sweep whose runs drew none (full information)",
        _results,
        ("plot", "sw", "--x-axis", "samples"),
        ("--x-axis samples", "no run of these results drew samples", "sampled:K"),
    ),
    Case(
        "plot-metric-with-concept",
        PLOT_S,
        "--concept (which certified gap) with a metric that is no gap",
        _results,
        ("plot", "sw", "--metric", "external_regret", "--concept", "ce"),
        ("--concept", "--metric external_regret draws no gap"),
    ),
    Case(
        "plot-decades-without-x",
        PLOT_S,
        "--decades without --x",
        _results,
        ("plot", "sw", "--decades", "10"),
        ("--decades", "add --x"),
    ),
    Case(
        "summarize-markdown-exists",
        PLOT_S,
        "--markdown naming an existing file, without --overwrite",
        _both(_results, lambda d: (d / "table.md").write_text("my notes\n")),
        ("summarize", "sw", "--markdown", "table.md"),
        ("--markdown table.md", "exists; use --overwrite to replace it"),
    ),
    Case(
        "summarize-markdown-fifo",
        PLOT_S,
        "--markdown naming a FIFO (never replaced, even with --overwrite)",
        _both(_results, _fifo("table.md")),
        ("summarize", "sw", "--markdown", "table.md", "--overwrite"),
        ("--markdown table.md", "is a FIFO, not a regular file"),
    ),
    Case(
        "summarize-markdown-is-input",
        PLOT_S,
        "--markdown naming the results it reads",
        _results,
        ("summarize", "sw", "--markdown", "sw/results.parquet", "--overwrite"),
        ("--markdown sw/results.parquet", "is the input"),
    ),
    Case(
        "plot-out-contains-input",
        PLOT_S,
        "--out naming the sweep directory whose results it reads",
        _results,
        ("plot", "sw", "--out", "sw"),
        ("--out sw", "contains the input sw/results.parquet"),
    ),
    Case(
        "summarize-results-wrong-type",
        PLOT_S,
        "a results.parquet column of the wrong type (eta written as a number)",
        _results_edited(lambda rows: [r.update(eta=0.2) for r in rows]),
        ("summarize", "sw"),
        ("sw/results.parquet", "column 'eta'", "expected a string column, got double"),
    ),
    Case(
        "plot-results-null",
        PLOT_S,
        "a null where every row has a value (a checkpoint)",
        _results_edited(lambda rows: rows[1].update(checkpoint=None)),
        ("plot", "sw"),
        ("sw/results.parquet", "column 'checkpoint'", "1 null value(s)"),
    ),
    Case(
        "summarize-results-nested-column",
        PLOT_S,
        "a list where a number belongs",
        _results_edited(lambda rows: [r.update(certified_cce_gap=[0.1, 0.2]) for r in rows]),
        ("summarize", "sw"),
        ("sw/results.parquet", "column 'certified_cce_gap'", "expected a floating-point column, got list<"),
    ),
    Case(
        "summarize-results-negative-gap",
        PLOT_S,
        "a certified gap below 0 (impossible: a gap is a best-response value less the value)",
        _results_edited(lambda rows: rows[1].update(certified_cce_gap=-0.5)),
        ("summarize", "sw"),
        ("sw/results.parquet", "row 1 (run 'r', T' = 10), column 'certified_cce_gap'", "-0.5 is outside [0, H] (H = 2)"),
    ),
    Case(
        "plot-results-exact-above-certified",
        PLOT_S,
        "an exact gap above the certified one (the certificate bounds the exact gap)",
        _results_edited(lambda rows: [r.update(exact_cce_gap=g) for r, g in zip(rows, (0.5, 0.2, 0.0), strict=True)]),
        ("plot", "sw"),
        ("sw/results.parquet", "row 1 (run 'r', T' = 10), column 'exact_cce_gap'", "0.2 is above the certified gap 0.1"),
    ),
    Case(
        "summarize-results-bound-below-value",
        PLOT_S,
        "a certified bound below the value (impossible: the bound is a best response's value)",
        _results_edited(
            lambda rows: [r.update(value=[1.0, 1.0], certified_cce_bound=[1.0 + r["certified_cce_gap"], 0.5]) for r in rows]
        ),
        ("summarize", "sw"),
        ("row 0 (run 'r', T' = 1), column 'certified_cce_bound'", "[2.0, 0.5] is below the value [1.0, 1.0]"),
    ),
    Case(
        "summarize-results-value-huge",
        PLOT_S,
        "a gap of 1e308 (impossible; refused before any arithmetic, so no RuntimeWarning)",
        _results_edited(lambda rows: rows[2].update(certified_ce_gap=1e308)),
        ("summarize", "sw"),
        ("row 2 (run 'r', T' = 100), column 'certified_ce_gap'", "1e+308 is outside [0, H] (H = 2)"),
        subprocess=True,
    ),
    Case(
        "summarize-results-gap-null",
        PLOT_S,
        "a finite-horizon game's row without its certified gap (only a discounted game's run has none)",
        _results_edited(lambda rows: rows[1].update(certified_cce_gap=None)),
        ("summarize", "sw"),
        ("sw/results.parquet", "row 1, column 'certified_cce_gap'", "null on a finite-horizon game's row"),
    ),
    Case(
        "summarize-results-discounted-with-gap",
        PLOT_S,
        "a discounted game's row with a certified gap (its run has no output policy)",
        _results_edited(lambda rows: (_discounted_rows(rows), rows[2].update(certified_cce_gap=0.1))),
        ("summarize", "sw"),
        ("sw/results.parquet", "row 2, column 'certified_cce_gap'", "set on a discounted game's row", "no output policy"),
    ),
    Case(
        "plot-results-discount-one",
        PLOT_S,
        "a discount of 1 in the results (a discount is below 1)",
        _results_edited(lambda rows: (_discounted_rows(rows), rows[0].update(discount=1.0))),
        ("plot", "sw", "--metric", "last_iterate_nash_gap"),
        ("sw/results.parquet", "column 'discount'", "outside [0, 1)"),
    ),
    Case(
        "summarize-results-value-estimate-huge",
        PLOT_S,
        "a discounted run's value estimate above 1/(1-gamma) (impossible: it is a discounted return)",
        _results_edited(lambda rows: (_discounted_rows(rows), rows[1].update(value_estimate=[20.0, 1.0]))),
        ("summarize", "sw", "--metric", "last_iterate_nash_gap"),
        ("row 1 (run 'r', T' = 10), column 'value_estimate'", "is outside [0, 1/(1-gamma)] (gamma = 0.9, 1/(1-gamma) = 10)"),
    ),
    Case(
        "summarize-results-too-many-rows",
        PLOT_S,
        "more rows than a results file may have (refused from its footer, before reading them)",
        _results_too_many_rows,
        ("summarize", "sw"),
        ("sw/results.parquet", "1000001 rows, more than the 1000000"),
    ),
    Case(
        "summarize-results-control-character",
        PLOT_S,
        "a label that is not plain text (a line break)",
        _results_edited(lambda rows: [r.update(game="a\nb") for r in rows]),
        ("summarize", "sw"),
        ("sw/results.parquet", "column 'game'", "control character"),
    ),
    # ---- argparse
    Case(
        "args-newline-in-path",
        ARGS_S,
        "a path with a newline and a terminal escape (shown escaped, on one line)",
        None,
        ("games", "validate", "bad\nname\x1b[2J.json"),
        ("bad\\nname\\x1b[2J.json",),
    ),
    Case(
        "args-missing-option",
        ARGS_S,
        "a required option is missing",
        None,
        ("run", "--game", "paper", "-T", "10", "--out", "out"),
        ("--algorithm", "required"),
    ),
    Case(
        "args-invalid-choice",
        ARGS_S,
        "a value outside an option's choices",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "10", "--dtype", "float16", "--out", "out"),
        ("--dtype", "'float16'"),
    ),
    Case("args-unknown-command", ARGS_S, "an unknown command", None, ("runn",), ("'runn'",)),
    Case(
        "algorithms-show-unknown",
        ARGS_S,
        "an algorithm to show that is not a built-in one",
        None,
        ("algorithms", "show", "smooth_cc"),
        ("algorithms show", "'smooth_cc'", "did you mean 'smooth_cce'?", "V-learning name"),
    ),
    Case(
        "args-misspelt-option",
        ARGS_S,
        "a misspelt option (named first, not reported as a missing one)",
        None,
        ("run", "--game", "paper", "--algoritm", "smooth_ce", "-T", "10", "--out", "out"),
        ("unrecognized arguments: --algoritm", "did you mean --algorithm?"),
        subprocess=True,
    ),
    Case(
        "args-misspelt-short-option",
        ARGS_S,
        "a short option in the wrong case",
        None,
        ("run", "--game", "paper", "--algorithm", "smooth_ce", "-t", "10", "--out", "out"),
        ("unrecognized arguments: -t", "did you mean -T?"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch, capsys, request):
    check_case(case, tmp_path, monkeypatch, capsys, request)
