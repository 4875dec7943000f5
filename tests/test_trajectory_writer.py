"""The trajectory files' writer thread: what it writes, its digests, and its failures.

The loop hands each chunk to a writer thread (`FileTrajectory.write`) and goes on; these tests
check that the files hold exactly the rows handed over, in single and batched layouts, that the
recorded digests are those of the rows, and that an error in the thread (a full disk) reaches the
caller instead of being lost.
"""

from __future__ import annotations

import errno
import hashlib
import threading

import numpy as np
import pytest

from conftest import make_paper_game
from markovgames.dynamics import _trajectory, run
from markovgames.dynamics._trajectory import FileTrajectory, TrajectoryFileError


def _chunks(rng, batched: bool, kept: int, sizes, actions=(2, 3)):
    """Random rows for ``kept`` iterations cut into chunks of ``sizes`` (per player ``(.., H=2, S=3, A_i)``)."""
    lead = (4,) if batched else ()
    full = [rng.random((*lead, kept, 2, 3, a)) for a in actions]
    chunks, row = [], 0
    for size in sizes:
        chunks.append((row, [p[:, row : row + size] if batched else p[row : row + size] for p in full]))
        row += size
    assert row == kept
    return full, chunks


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_the_files_hold_every_row_handed_over_and_their_digests(tmp_path, batched):
    rng = np.random.default_rng(5)
    full, chunks = _chunks(rng, batched, 23, [7, 7, 7, 2])
    shapes = [p.shape for p in full]
    sink = FileTrajectory(tmp_path, shapes, np.float64, batched)
    for row, policies in chunks:
        sink.write(row, policies)
    records = sink.records()
    read = sink.result()
    for written, wanted in zip(read, full, strict=True):
        assert written.shape == wanted.shape and written.dtype == np.float64
        np.testing.assert_array_equal(written, wanted)
    # One record per chunk, in order: its rows and the SHA-256 of each player's bytes.
    assert [(r[0], r[1]) for r in records] == [(row, p[0].shape[1 if batched else 0]) for row, p in chunks]
    for (_row, policies), record in zip(chunks, records, strict=True):
        assert record[2] == [hashlib.sha256(np.ascontiguousarray(p).tobytes()).hexdigest() for p in policies]
    # A resumed run accepts exactly these files against these records ...
    FileTrajectory(tmp_path, shapes, np.float64, batched, records=records).close()
    # ... and refuses them once a recorded row has changed.
    path = _trajectory.policy_file(tmp_path, 1)
    data = np.load(path, mmap_mode="r+")
    data[(0, 3) if batched else 3] += 1.0
    data.flush()
    del data
    with pytest.raises(TrajectoryFileError, match="differ from what the interrupted run wrote"):
        FileTrajectory(tmp_path, shapes, np.float64, batched, records=records)


def test_a_write_that_fails_in_the_thread_is_raised_to_the_caller(tmp_path, monkeypatch):
    rng = np.random.default_rng(6)
    full, chunks = _chunks(rng, False, 10, [5, 5])
    calls = []

    def full_disk(fd, array, offset):
        calls.append(threading.current_thread().name)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_trajectory, "_pwrite_all", full_disk)
    sink = FileTrajectory(tmp_path, [p.shape for p in full], np.float64, False)
    sink.write(*chunks[0])
    with pytest.raises(OSError, match="No space left on device"):
        sink.flush()
    assert calls and all(name.startswith("markovgames-trajectory") for name in calls)
    sink.abandon()
    assert not any(t.name.startswith("markovgames-trajectory") and t.is_alive() for t in threading.enumerate())


def test_a_failed_run_stops_the_writer_thread(tmp_path):
    """A run that fails after writing rows leaves no writer thread behind."""

    def stop(done):
        if done >= 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(make_paper_game(), "stage_cce", T=60, eta=0.2, chunk_size=10, trajectory_dir=tmp_path / "t", progress=stop)
    assert not any(t.name.startswith("markovgames-trajectory") and t.is_alive() for t in threading.enumerate())
