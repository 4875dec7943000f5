"""Where a run's trajectory goes: memory, or ``policy_{i}.npy`` files written chunk by chunk
(in a writer thread, while the loop computes the next chunk).

The trajectory is ``pi^t`` for the kept iterations (``first_kept..T``), per player an array
``(kept, H, S, A_i)`` (a batch: ``(B, kept, H, S, A_i)``), row ``t - first_kept``. A file sink
records a SHA-256 digest of every chunk it writes; a saved run state keeps those records, and a
resumed run verifies the files against them (header, size, and every recorded chunk) before it
writes another row: a truncated, padded, retyped or altered file is refused, never reused.
"""

from __future__ import annotations

import hashlib
import math
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .._errors import MarkovGamesError
from .._files import open_regular, read_npy_header

__all__ = ["MemoryTrajectory", "FileTrajectory", "TrajectoryFileError", "policy_file"]


class TrajectoryFileError(MarkovGamesError, ValueError):
    """A trajectory file of an interrupted run does not hold what its saved state recorded."""


def policy_file(directory: Path, player: int) -> Path:
    return Path(directory) / f"policy_{player}.npy"


class MemoryTrajectory:
    """Keeps the trajectory's chunks in memory and joins them at the end."""

    def __init__(self, num_players: int, batched: bool):
        self._chunks: list[list[np.ndarray]] = [[] for _ in range(num_players)]
        self._axis = 1 if batched else 0

    def write(self, row: int, policies) -> None:
        """Rows ``row..`` of the kept trajectory (chunks arrive in order)."""
        for chunks, policy in zip(self._chunks, policies, strict=True):
            chunks.append(policy)

    def records(self) -> list:
        return []

    def result(self) -> tuple[np.ndarray, ...]:
        return tuple(np.concatenate(c, axis=self._axis) for c in self._chunks)


class FileTrajectory:
    """Writes the trajectory into ``directory/policy_{i}.npy``, chunk by chunk, in a writer thread.

    ``shapes`` are the files' full shapes. With ``records`` (a resumed run's saved records) the
    files must exist and hold exactly what the records say (`verify`); they are then
    reopened for writing after the recorded rows. Without, the files are created at their full
    size. ``digests``: record a digest of every chunk (a run that saves its state needs them to
    resume).

    `write` hands a chunk to one writer thread and returns: the thread writes it (``pwrite``,
    which releases the interpreter) and computes its digests while the loop's next chunk runs,
    so that keeping the trajectory adds little to a run's time. Chunks are written in the order
    they arrive. `flush` waits for every chunk handed over and makes the files durable
    (``fsync``), so a saved state never records rows that are not on the disk; an error of the
    thread (a full disk) is raised there, or at the next `write`.
    """

    def __init__(self, directory: Path, shapes, dtype, batched: bool, records: list | None = None, digests: bool = True):
        self.directory = Path(directory)
        self._digests = digests
        self._batched = batched
        self._dtype = np.dtype(dtype)
        self._shapes = [tuple(int(n) for n in s) for s in shapes]
        self._records: list = []
        if records is not None:
            self._offsets = self.verify(records)
            self._records = [list(r) for r in records]
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._offsets = [self._create(policy_file(self.directory, i), shape) for i, shape in enumerate(self._shapes)]
        self._fds: list[int] = []
        try:
            for i in range(len(self._shapes)):
                self._fds.append(os.open(policy_file(self.directory, i), os.O_RDWR | getattr(os, "O_CLOEXEC", 0)))
        except BaseException:
            self._close_files()
            raise
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="markovgames-trajectory")
        self._pending: list[Future] = []
        self._unsynced = 0  # bytes written since the files were last made durable

    def _create(self, path: Path, shape: tuple[int, ...]) -> int:
        """Create ``path``: its ``.npy`` header, and the data's full size (not yet written); returns
        the data's offset."""
        with open(path, "wb") as fh:
            header = {"descr": np.lib.format.dtype_to_descr(self._dtype), "fortran_order": False, "shape": shape}
            np.lib.format.write_array_header_1_0(fh, header)
            offset = fh.tell()
            fh.truncate(offset + math.prod(shape) * self._dtype.itemsize)
        return offset

    def write(self, row: int, policies) -> None:
        """Rows ``row..`` of the kept trajectory (per player an array of this run's dtype): handed
        to the writer thread, which also records the chunk's digests."""
        self._raise_failure()
        # At most two chunks wait behind the one being written: a disk slower than the loop
        # holds the loop back rather than the chunks piling up in memory.
        while len(self._pending) > 2:
            self._pending.pop(0).result()
        policies = [np.ascontiguousarray(policy, dtype=self._dtype) for policy in policies]
        self._pending.append(self._writer.submit(self._write_chunk, row, policies))

    def _write_chunk(self, row: int, policies: list[np.ndarray]) -> None:
        """(In the writer thread.) Write one chunk's rows into every player's file."""
        digests = []
        for fd, offset, shape, policy in zip(self._fds, self._offsets, self._shapes, policies, strict=True):
            count = policy.shape[1 if self._batched else 0]
            row_bytes = math.prod(shape[2 if self._batched else 1 :]) * self._dtype.itemsize
            if self._batched:  # (B, kept, ...): one block of rows per run
                for b in range(policy.shape[0]):
                    _pwrite_all(fd, policy[b], offset + (b * shape[1] + row) * row_bytes)
            else:
                _pwrite_all(fd, policy, offset + row * row_bytes)
            if self._digests:
                digests.append(hashlib.sha256(policy.data).hexdigest())
        if self._digests:
            self._records.append([int(row), int(count), digests])
        # Make the rows durable as they come, while the loop computes, so that the final flush
        # has only the last rows left to wait for.
        self._unsynced += sum(policy.nbytes for policy in policies)
        if self._unsynced >= _SYNC_BYTES:
            for fd in self._fds:
                _sync_data(fd)
            self._unsynced = 0

    def _wait(self) -> None:
        """Wait for every chunk handed over; raise the first error of the writer thread."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def _raise_failure(self) -> None:
        """Raise a finished chunk's error now (a full disk stops the run at its next chunk)."""
        while self._pending and self._pending[0].done():
            self._pending.pop(0).result()

    def records(self) -> list:
        """``[row, count, [sha256 per player]]`` of every chunk written, in order."""
        self._wait()
        return [list(r) for r in self._records]

    def flush(self) -> None:
        """Wait for every chunk handed over, then make the files durable."""
        self._wait()
        for fd in self._fds:
            _sync_data(fd)

    def flush_in_background(self) -> None:
        """Start making the files durable in the writer thread, after the chunks handed over (the
        run's last work then overlaps it; `flush`, `result` and `close` wait for it)."""
        self._raise_failure()
        self._pending.append(self._writer.submit(lambda: [_sync_data(fd) for fd in self._fds]))

    def result(self) -> tuple[np.ndarray, ...]:
        """The files as read-only memory maps (after a flush); the files are closed for writing."""
        self.close()
        return tuple(np.load(policy_file(self.directory, i), mmap_mode="r") for i in range(len(self._shapes)))

    def close(self) -> None:
        """Flush and close the files, and stop the writer thread."""
        try:
            if self._fds:
                self.flush()
        finally:
            self.abandon()

    def abandon(self) -> None:
        """(After a failure or an interruption.) Stop the writer thread once its current chunk is
        written, without raising its errors, and close the files."""
        self._writer.shutdown(wait=True, cancel_futures=True)
        self._pending = []
        self._close_files()

    def _close_files(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)

    def verify(self, records: list) -> list[int]:
        """Check every file against the records of the chunks written before an interruption;
        returns each file's data offset.

        Each file must be a regular ``.npy`` file with exactly this run's dtype and shape, of
        exactly the size they imply (a truncated file would be padded with zeros by a reopening
        for writing), and every recorded chunk must have its recorded digest.
        """
        offsets = []
        for i, shape in enumerate(self._shapes):
            path = policy_file(self.directory, i)
            if not path.is_file():
                raise TrajectoryFileError(f"{path}: missing or not a regular file; the interrupted run cannot continue")
            try:
                with open_regular(path) as fh:
                    found_shape, fortran, found_dtype = read_npy_header(fh)
                    offset = fh.tell()
                    if tuple(found_shape) != shape or fortran or np.dtype(found_dtype) != self._dtype:
                        raise TrajectoryFileError(
                            f"{path}: holds {np.dtype(found_dtype)} {tuple(found_shape)}{' (Fortran order)' if fortran else ''}, "
                            f"but this run writes {self._dtype} {shape}"
                        )
                    expected = offset + int(np.prod(shape)) * self._dtype.itemsize
                    size = os.fstat(fh.fileno()).st_size
                    if size != expected:
                        raise TrajectoryFileError(
                            f"{path}: {size} bytes, but its header implies {expected} (truncated or padded)"
                        )
                    for row, count, digests in records:
                        if len(digests) != len(self._shapes):
                            raise TrajectoryFileError(
                                f"{path}: the saved state records {len(digests)} players' chunks, this run has {len(self._shapes)}"
                            )
                        if self._digest(fh.fileno(), path, shape, offset, row, count) != digests[i]:
                            raise TrajectoryFileError(
                                f"{path}: iterations {row + 1}..{row + count} of the kept trajectory differ from what the "
                                "interrupted run wrote (the file was changed)"
                            )
            except (ValueError, OSError) as err:
                if isinstance(err, TrajectoryFileError):
                    raise
                raise TrajectoryFileError(f"{path}: not a readable .npy file ({err})") from None
            offsets.append(offset)
        return offsets

    def _digest(self, fd: int, path: Path, shape: tuple[int, ...], offset: int, row: int, count: int) -> str:
        """The SHA-256 of rows ``row..row + count`` of the file (each run's block of them, in a
        batch), as the writer computed it, from reads of at most 16 MiB (never a memory map: a
        file truncated meanwhile is an error, not a SIGBUS)."""
        batched = self._batched
        runs, kept = (shape[0], shape[1]) if batched else (1, shape[0])
        row_bytes = math.prod(shape[2 if batched else 1 :]) * self._dtype.itemsize
        digest = hashlib.sha256()
        for b in range(runs):
            start, left = offset + (b * kept + row) * row_bytes, count * row_bytes
            while left:
                data = os.pread(fd, min(left, 16 << 20), start)
                if not data:
                    raise TrajectoryFileError(
                        f"{path}: ends at byte {start}, within the rows the saved state records (truncated)"
                    )
                digest.update(data)
                start, left = start + len(data), left - len(data)
        return digest.hexdigest()


def _pwrite_all(fd: int, array: np.ndarray, offset: int) -> None:
    """Write a C-contiguous array's bytes at ``offset`` (``pwrite`` may write fewer at a time)."""
    view = array.data.cast("B")
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


#: The writer thread makes the files durable whenever this many bytes were written since it last did.
_SYNC_BYTES = 4 << 20

#: Make a file's data durable: ``fdatasync`` where there is one (the size is set when the file
#: is created; a later write changes no metadata that reading the data needs), else ``fsync``.
_sync_data = getattr(os, "fdatasync", os.fsync)
