"""Where a run's trajectory goes: memory, or ``policy_{i}.npy`` files written chunk by chunk.

The trajectory is ``pi^t`` for the kept iterations (``first_kept..T``), per player an array
``(kept, H, S, A_i)`` (a batch: ``(B, kept, H, S, A_i)``), row ``t - first_kept``. A file sink
records a SHA-256 digest of every chunk it writes; a saved run state keeps those records, and a
resumed run verifies the files against them (header, size, and every recorded chunk) before it
writes another row: a truncated, padded, retyped or altered file is refused, never reused.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .._errors import MarkovGamesError

__all__ = ["MemoryTrajectory", "FileTrajectory", "TrajectoryFileError", "policy_file"]


class TrajectoryFileError(MarkovGamesError, ValueError):
    """A trajectory file of an interrupted run does not hold what its saved state recorded."""


def policy_file(directory: Path, player: int) -> Path:
    return Path(directory) / f"policy_{player}.npy"


def _rows(policy: np.ndarray, batched: bool, lo: int, hi: int):
    return policy[:, lo:hi] if batched else policy[lo:hi]


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
    """Writes the trajectory into ``directory/policy_{i}.npy`` (memory maps), chunk by chunk.

    ``shapes`` are the files' full shapes. With ``records`` (a resumed run's saved records) the
    files must exist and hold exactly what the records say (`verify`); they are then
    reopened for writing after the recorded rows. Without, the files are created. ``digests``:
    record a digest of every chunk (a run that saves its state needs them to resume).
    """

    def __init__(self, directory: Path, shapes, dtype, batched: bool, records: list | None = None, digests: bool = True):
        self.directory = Path(directory)
        self._digests = digests
        self._batched = batched
        self._dtype = np.dtype(dtype)
        self._shapes = [tuple(int(n) for n in s) for s in shapes]
        self._records: list = []
        if records is not None:
            self.verify(records)
            self._records = [list(r) for r in records]
            mode = "r+"
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            mode = "w+"
        self._maps = [
            np.lib.format.open_memmap(policy_file(self.directory, i), mode=mode, dtype=self._dtype, shape=shape)
            for i, shape in enumerate(self._shapes)
        ]

    def write(self, row: int, policies) -> None:
        """Rows ``row..`` of the kept trajectory, with a digest of each player's chunk."""
        digests = []
        for mm, policy in zip(self._maps, policies, strict=True):
            policy = np.ascontiguousarray(policy, dtype=self._dtype)
            count = policy.shape[1 if self._batched else 0]
            if self._batched:
                mm[:, row : row + count] = policy
            else:
                mm[row : row + count] = policy
            if self._digests:
                digests.append(hashlib.sha256(policy.tobytes()).hexdigest())
        if self._digests:
            self._records.append([int(row), int(count), digests])

    def records(self) -> list:
        """``[row, count, [sha256 per player]]`` of every chunk written, in order."""
        return [list(r) for r in self._records]

    def flush(self) -> None:
        for mm in self._maps:
            mm.flush()

    def result(self) -> tuple[np.ndarray, ...]:
        """The files as read-only memory maps (after a flush)."""
        self.flush()
        return tuple(np.load(policy_file(self.directory, i), mmap_mode="r") for i in range(len(self._maps)))

    def close(self) -> None:
        """Release the memory maps (the directory may then be moved)."""
        self.flush()
        self._maps = []

    def verify(self, records: list) -> None:
        """Check every file against the records of the chunks written before an interruption.

        Each file must be a regular ``.npy`` file with exactly this run's dtype and shape, of
        exactly the size they imply (a truncated file would be padded with zeros by a reopening
        for writing), and every recorded chunk must have its recorded digest.
        """
        for i, shape in enumerate(self._shapes):
            path = policy_file(self.directory, i)
            if not path.is_file():
                raise TrajectoryFileError(f"{path}: missing or not a regular file; the interrupted run cannot continue")
            try:
                with open(path, "rb") as fh:
                    version = np.lib.format.read_magic(fh)
                    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                    if version not in readers:
                        raise ValueError(f"format version {version} is not one this run writes")
                    header = readers[version](fh, max_header_size=10_000)
                    offset = fh.tell()
            except (ValueError, OSError, SyntaxError) as err:
                raise TrajectoryFileError(f"{path}: not a readable .npy file ({err})") from None
            found_shape, fortran, found_dtype = header
            if tuple(found_shape) != shape or fortran or np.dtype(found_dtype) != self._dtype:
                raise TrajectoryFileError(
                    f"{path}: holds {np.dtype(found_dtype)} {tuple(found_shape)}{' (Fortran order)' if fortran else ''}, "
                    f"but this run writes {self._dtype} {shape}"
                )
            expected = offset + int(np.prod(shape)) * self._dtype.itemsize
            size = path.stat().st_size
            if size != expected:
                raise TrajectoryFileError(f"{path}: {size} bytes, but its header implies {expected} (truncated or padded)")
            data = np.load(path, mmap_mode="r")
            for row, count, digests in records:
                if len(digests) != len(self._shapes):
                    raise TrajectoryFileError(
                        f"{path}: the saved state records {len(digests)} players' chunks, this run has {len(self._shapes)}"
                    )
                digest = hashlib.sha256(np.ascontiguousarray(_rows(data, self._batched, row, row + count)).tobytes()).hexdigest()
                if digest != digests[i]:
                    raise TrajectoryFileError(
                        f"{path}: iterations {row + 1}..{row + count} of the kept trajectory differ from what the "
                        "interrupted run wrote (the file was changed)"
                    )
            del data
