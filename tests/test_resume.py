"""Interrupted runs resume to results identical to an uninterrupted run (kill -9 included)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import PAPER_ALGORITHMS, StopRun, interrupting_progress, make_paper_game, stop_after
from markovgames.cli import main
from markovgames.dynamics import run, run_batch
from markovgames.experiments import load_run_directory, staging_directory

_interrupted_at_500 = interrupting_progress(500)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_api_resume_is_bit_identical(tmp_path, algorithm):
    game = make_paper_game()
    # The uninterrupted run in the same chunks: their compiled loop (that chunks change no number
    # is test_chunking_and_trajectory_files_do_not_change_results').
    full = run(game, algorithm, T=700, trajectory_dir=tmp_path / "full", chunk_size=100)
    kwargs = dict(trajectory_dir=tmp_path / "part", state_file=tmp_path / "state.npz", state_every=100)
    with pytest.raises(StopRun):
        run(game, algorithm, T=700, progress=stop_after(300), **kwargs)
    resumed = run(game, algorithm, T=700, **kwargs)
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_array_equal(getattr(resumed, field), getattr(full, field))
    for a, b in zip(resumed.policies, full.policies, strict=True):
        np.testing.assert_array_equal(a, b)


def test_batch_resume_and_state_of_another_run_is_refused(tmp_path):
    game = make_paper_game()
    full = run_batch(game, "smooth_cce", T=300, etas=[0.1, 0.3], chunk_size=50)  # (the resumed runs' chunks)
    state = tmp_path / "state.npz"
    with pytest.raises(StopRun):
        run_batch(game, "smooth_cce", T=300, etas=[0.1, 0.3], state_file=state, state_every=50, progress=stop_after(100))
    resumed = run_batch(game, "smooth_cce", T=300, etas=[0.1, 0.3], state_file=state, state_every=50)
    np.testing.assert_array_equal(resumed.value, full.value)
    # Kept prefixes only: the saves append blocks of 2, 2, 0, 0 and 1 rows (of each run).
    kept = dict(checkpoints=[1, 7, 60, 61, 250, 300], etas=[0.1, 0.3], T=300)
    full = run_batch(game, "smooth_cce", chunk_size=50, **kept)
    state = tmp_path / "kept.npz"
    with pytest.raises(StopRun):
        run_batch(game, "smooth_cce", state_file=state, state_every=50, progress=stop_after(300), **kept)
    assert (tmp_path / "kept.metrics").stat().st_size == 2 * 5 * 3 * 2 * 8  # runs x rows x 3 x players x float64
    resumed = run_batch(game, "smooth_cce", state_file=state, state_every=50, **kept)
    np.testing.assert_array_equal(resumed.value, full.value)
    np.testing.assert_array_equal(resumed.certified_ce_bound, full.certified_ce_bound)
    with pytest.raises(ValueError, match="different run"):
        run_batch(game, "smooth_cce", T=300, etas=[0.2, 0.3], state_file=state, state_every=50)


def test_cli_kill_9_and_resume(tmp_path):
    out = tmp_path / "run"
    args = [
        "run",
        "--game",
        "paper",
        "--algorithm",
        "smooth_ce",
        "-T",
        "300000",
        "--checkpoint-every",
        "10000",
        "--checkpoints",
        "1,1000,100000,300000",
        "--out",
        str(out),
        "--quiet",
    ]
    proc = subprocess.Popen([sys.executable, "-m", "markovgames", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state = staging_directory(out) / "state.npz"
    deadline = time.time() + 120
    while not state.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists() and state.exists()
    # A plain rerun refuses to clobber the interrupted run; --resume continues it.
    assert main(args) == 2
    assert main(args + ["--resume"]) == 0
    assert not staging_directory(out).exists()
    stored = load_run_directory(out)
    reference = run(make_paper_game(), "smooth_ce", T=300000, eta=0.2, chunk_size=10000)  # (the command's loop)
    np.testing.assert_array_equal(stored.value, reference.value)
    np.testing.assert_array_equal(stored.certified_ce_bound, reference.certified_ce_bound)
    for a, b in zip(stored.policies, reference.policies, strict=True):
        np.testing.assert_array_equal(a, b)
    metrics = json.loads((out / "metrics.json").read_text())
    assert [c["T"] for c in metrics["checkpoints"]] == [1, 1000, 100000, 300000]


def test_cli_resume_refused_for_a_changed_game_keeps_the_saved_state(tmp_path, monkeypatch, capsys):
    """``--resume`` after the game file changed is refused with exit 2, and the interrupted run's
    saved state stays for a later ``--resume`` (it was once deleted with the refusal)."""
    from markovgames.cli import _run as cli_run
    from markovgames.games import save_game

    game_file = save_game(make_paper_game(), tmp_path / "g.json")
    out = tmp_path / "run"
    args = [
        "run",
        "--game",
        str(game_file),
        "--algorithm",
        "stage_cce",
        "-T",
        "2000",
        "--checkpoint-every",
        "100",
        "--out",
        str(out),
        "--quiet",
    ]
    with monkeypatch.context() as patch:
        patch.setattr(cli_run, "iteration_progress", _interrupted_at_500)
        assert main(args) == 130
    state = staging_directory(out) / "state.npz"
    assert state.exists() and not out.exists()
    changed = json.loads(game_file.read_text())
    changed["rewards"][0][0][0][0][0] = 0.5
    game_file.write_text(json.dumps(changed))
    capsys.readouterr()
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "belongs to a different run" in err and "is kept" in err and "--overwrite" in err
    assert state.exists() and not out.exists()
    assert main(args + ["--overwrite"]) == 0  # starting over replaces it
    assert out.exists() and not staging_directory(out).exists()


def test_cli_sigterm_is_an_interruption(tmp_path):
    """SIGTERM ends a run as Ctrl-C does, with its own exit status 143 (128 + SIGTERM): the saved
    state kept for ``--resume``; a run without saved state leaves no partial directory behind.
    (T = 10^6: long enough, about a second, that the signal arrives before the run ends.)"""
    for checkpointed in (True, False):
        out = tmp_path / f"run{checkpointed}"
        args = [
            "run",
            "--game",
            "paper",
            "--algorithm",
            "smooth_ce",
            "-T",
            "1000000",
            "--out",
            str(out),
            "--quiet",
            "--no-trajectory",
        ] + (["--checkpoint-every", "10000"] if checkpointed else [])
        proc = subprocess.Popen(
            [sys.executable, "-m", "markovgames", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        staging = staging_directory(out)
        wanted = staging / "state.npz" if checkpointed else staging
        deadline = time.time() + 120
        while not wanted.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, "the run finished before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143 and "terminated" in err
        assert not out.exists()
        assert staging.exists() == checkpointed
    resume = [
        "run",
        "--game",
        "paper",
        "--algorithm",
        "smooth_ce",
        "-T",
        "1000000",
        "--out",
        str(tmp_path / "runTrue"),
        "--quiet",
        "--no-trajectory",
        "--checkpoint-every",
        "10000",
        "--resume",
    ]
    assert main(resume) == 0 and (tmp_path / "runTrue" / "metrics.json").exists()


def _interrupted_cli_run(tmp_path, monkeypatch, algorithm="smooth_ce"):
    """A CLI run interrupted at 600 of 2000 iterations, its state saved every 100 (last at 500): the
    arguments and the staging directory."""

    from markovgames.cli import _run as cli_run

    out = tmp_path / "run"
    args = [
        "run",
        "--game",
        "paper",
        "--algorithm",
        algorithm,
        "-T",
        "2000",
        "--checkpoint-every",
        "100",
        "--out",
        str(out),
        "--quiet",
    ]

    with monkeypatch.context() as patch:
        patch.setattr(cli_run, "iteration_progress", interrupting_progress(600))
        assert main(args) == 130
    staging = staging_directory(out)
    assert (staging / "state.npz").exists()
    return args, staging


def _truncate(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[: keep(len(data))])


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def _retype(path):
    np.save(path, np.load(path).astype(np.float32))


def _write_garbage(path):
    path.write_bytes(b"not a zip file at all")


def _foreign_state(path):
    # A well-formed state file with one array of the wrong shape.
    with np.load(path) as data:
        arrays = {k: np.array(data[k]) for k in data.files}
    arrays["leaf_0"] = np.zeros((3, 3))
    np.savez(path, **arrays)


def _metrics_records_without_the_last(path):
    with np.load(path) as data:
        arrays = {k: np.array(data[k]) for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    meta["metrics"] = meta["metrics"][:-1]
    arrays["meta"] = np.asarray(json.dumps(meta))
    np.savez(path, **arrays)


TAMPERING = {
    # family: (file, change, what the message must say)
    "trajectory truncated": ("trajectory/policy_0.npy", lambda p: _truncate(p, lambda n: n - 100), "truncated or padded"),
    "trajectory header only": ("trajectory/policy_1.npy", lambda p: _truncate(p, lambda n: 128), "truncated or padded"),
    "trajectory padded": ("trajectory/policy_0.npy", lambda p: p.write_bytes(p.read_bytes() + b"\0" * 64), "truncated or padded"),
    "trajectory retyped": ("trajectory/policy_1.npy", _retype, "holds float32"),
    "trajectory altered": (
        "trajectory/policy_0.npy",
        lambda p: _flip(p, 128 + 8 * 37),
        "differ from what the interrupted run wrote",
    ),
    "trajectory missing": ("trajectory/policy_1.npy", lambda p: p.unlink(), "missing or not a regular file"),
    "trajectory not npy": ("trajectory/policy_0.npy", lambda p: p.write_bytes(b"\x93NUMPY garbage"), "not a readable .npy file"),
    "metrics truncated": (
        "state.metrics",
        lambda p: _truncate(p, lambda n: n - 8),
        "prefixes 401..500 that the saved state records (truncated)",
    ),
    "metrics altered": ("state.metrics", lambda p: _flip(p, 8 * 6 * 250), "the metrics of prefixes 201..300 differ"),
    "metrics missing": ("state.metrics", lambda p: p.unlink(), "cannot be read (No such file or directory)"),
    "metrics not a file": (
        "state.metrics",
        lambda p: (p.unlink(), os.mkfifo(p)),
        "is a FIFO, not a regular file; it should be the interrupted run's saved metrics",
    ),
    "state with fewer metrics records": (
        "state.npz",
        _metrics_records_without_the_last,
        "metrics records cover 400 rows, but 500 were written by then",
    ),
    "state truncated": ("state.npz", lambda p: _truncate(p, lambda n: n // 2), "not a readable run state"),
    "state garbage": ("state.npz", _write_garbage, "not a readable run state"),
    "state of another shape": ("state.npz", _foreign_state, "state array 0 is"),
}


@pytest.mark.parametrize("family", list(TAMPERING))
def test_resume_checks_every_file_it_reuses(tmp_path, monkeypatch, capsys, family):
    """A tampered, truncated or retyped file of an interrupted run is refused by ``--resume`` with
    exit 2 and one line naming the file; the saved state is kept, nothing is padded or reused."""
    name, change, message = TAMPERING[family]
    args, staging = _interrupted_cli_run(tmp_path, monkeypatch)
    target = staging / name
    change(target)
    before = {p.name: p.read_bytes() for p in staging.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("markovgames: error: ") and len(err.strip().splitlines()) == 1, err
    assert target.name in err and message in err, err
    assert "is kept" in err
    # Nothing was changed by the refusal: the files are as they were, the output does not exist.
    assert {p.name: p.read_bytes() for p in staging.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "run").exists()


def test_resume_after_a_refusal_and_a_repair_still_gives_the_uninterrupted_run(tmp_path, monkeypatch):
    args, staging = _interrupted_cli_run(tmp_path, monkeypatch)
    target = staging / "trajectory" / "policy_0.npy"
    original = target.read_bytes()
    _flip(target, 200)
    assert main(args + ["--resume"]) == 2
    target.write_bytes(original)
    assert main(args + ["--resume"]) == 0
    stored = load_run_directory(tmp_path / "run")
    reference = run(make_paper_game(), "smooth_ce", T=2000, eta=0.2)
    np.testing.assert_array_equal(stored.value, reference.value)
    for a, b in zip(stored.policies, reference.policies, strict=True):
        np.testing.assert_array_equal(a, b)


def test_saves_append_only_the_new_metrics_and_resume_reads_only_the_recorded_ones(tmp_path, monkeypatch):
    """Each save appends the prefixes since the last one to ``state.metrics`` (the state file
    holds their records, not the rows: rewriting every row at every save made frequent saves cost
    time quadratic in T). Bytes beyond the records, as a save interrupted between appending and
    replacing the state file leaves them, are not read, and the resumed run is the uninterrupted one."""
    args, staging = _interrupted_cli_run(tmp_path, monkeypatch)
    with np.load(staging / "state.npz") as data:
        assert "metrics" not in data.files
        meta = json.loads(str(data["meta"]))
    # Interrupted in the chunk after the save at 500.
    assert [record[:2] for record in meta["metrics"]] == [[row, 100] for row in range(0, 500, 100)]
    metrics = staging / "state.metrics"
    assert metrics.stat().st_size == 500 * 3 * 2 * 8  # prefixes x (value, two bounds) x players x float64
    with open(metrics, "ab") as fh:
        fh.write(np.full(100 * 3 * 2, np.nan).tobytes())  # an interrupted save's block
    assert main(args + ["--resume"]) == 0
    stored = load_run_directory(tmp_path / "run")
    reference = run(make_paper_game(), "smooth_ce", T=2000, eta=0.2)
    for name in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_array_equal(getattr(stored, name), getattr(reference, name))
    assert not staging.exists()  # the state and its metrics are not part of the finished run


def test_a_link_in_place_of_the_metrics_file_is_not_written_through(tmp_path):
    """The metrics file is opened without following a link: a link planted where a new run's
    metrics go is refused (naming it), and its target is left as it was, not truncated."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    (tmp_path / "state.metrics").symlink_to(precious)
    with pytest.raises(OSError) as raised:
        run(make_paper_game(), "smooth_ce", T=300, record_trajectory=False, state_file=tmp_path / "state.npz", state_every=100)
    assert raised.value.filename == str(tmp_path / "state.metrics")
    assert precious.read_text() == "keep me"


def test_cli_interrupt_says_how_to_resume_or_how_to_make_it_resumable(tmp_path, monkeypatch, capsys):
    from markovgames.cli import _run as cli_run

    monkeypatch.setattr(cli_run, "iteration_progress", _interrupted_at_500)
    for saved in (True, False):
        out = tmp_path / f"run{saved}"
        args = ["run", "--game", "paper", "--algorithm", "stage_cce", "-T", "2000", "--out", str(out), "--quiet"]
        assert main(args + (["--checkpoint-every", "100"] if saved else [])) == 130
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("markovgames: interrupted")
        if saved:
            assert f"saved in {staging_directory(out)}" in err and "run the same command with --resume" in err
        else:
            # Nothing kept, and how to make a long run resumable.
            assert err == (
                "markovgames: interrupted; nothing was kept: the run saved no state "
                "(use --checkpoint-every K to make a long run resumable)"
            )
            assert not staging_directory(out).exists()


def test_cli_resume_of_a_finished_run_says_it_is_complete(tmp_path, capsys):
    # (The chunks of test_api_resume_is_bit_identical[smooth_ce]: its compiled loop.)
    out = tmp_path / "run"
    args = [
        "run",
        "--game",
        "paper",
        "--algorithm",
        "smooth_ce",
        "-T",
        "300",
        "--checkpoint-every",
        "100",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(args) == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    capsys.readouterr()
    assert main(args + ["--resume"]) == 0
    assert (
        capsys.readouterr().out.strip()
        == f"{out}: this run is complete (metrics.json holds all 300 iterations); nothing to resume"
    )
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    changed = list(args)
    changed[changed.index("-T") + 1] = "400"
    assert main(changed + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds a finished run with a different configuration (T: 300 there, 400 now" in err and "--overwrite" in err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
