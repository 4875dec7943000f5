"""How a run is cut: chunks of iterations (compiled calls in sequence) and groups of runs (calls side by side)."""

from __future__ import annotations

import jax
import numpy as np

__all__ = ["chunk_plan", "run_groups", "CHUNK_OUTPUT_BYTES", "DEFAULT_CHUNK", "GROUP_BYTES"]

#: Upper bound on the bytes one chunk's outputs (metrics and trajectory) occupy on the device.
CHUNK_OUTPUT_BYTES = 256 * 2**20
#: The most iterations of a chunk. The host's work on the last chunk's outputs (its trajectory
#: rows, its prefixes' metrics) follows the loop instead of overlapping it, so shorter chunks end
#: a run sooner; each chunk also costs a call. Measured with the default command's outputs on the
#: paper game, T = 2e5 (benchmarks/README.md): chunks of 25,000 against 50,000 made a stage-based
#: run 7% faster and the smooth ones 0.99-1.01x; chunks of 12,500 the smooth ones 3-4% slower.
DEFAULT_CHUNK = 32768

#: On the CPU a batch runs as groups of runs, each a separate compiled call dispatched
#: asynchronously: the calls run concurrently on the cores, and a group's arrays stay in the
#: caches. Measured on the paper game (benchmarks/README.md): one call of 1024 runs, groups of
#: 256 and groups of 128 were within 20% of each other; these budgets give 256-run groups there.
GROUP_BYTES = {"smooth": 512 * 2**10, "stage": 1024 * 2**10}


def chunk_plan(T: int, per_iteration_bytes: int, chunk_size: int | None, max_chunk: int | None = None) -> list[int]:
    """Chunk lengths summing to ``T``; equal lengths where a divisor allows (one compilation).
    ``max_chunk``: a cap on the automatic length (a chunk's random draws, `._feedback.chunk_draws`)."""
    if chunk_size is not None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        limit = int(chunk_size)
    else:
        limit = max(16, min(DEFAULT_CHUNK, CHUNK_OUTPUT_BYTES // max(per_iteration_bytes, 1), max_chunk or DEFAULT_CHUNK))
    if T <= limit:
        return [T]
    # Prefer an exact divisor not much smaller than the limit: every chunk then has one shape. Never
    # 1 below a limit above 1: every T has it, and a call per iteration costs more than a second shape.
    for size in range(limit, max(limit // 4, 2) - 1, -1):
        if T % size == 0:
            return [size] * (T // size)
    full, rest = divmod(T, limit)
    return [limit] * full + ([rest] if rest else [])


def run_groups(batch: int, per_run_bytes: int, kind: str, group_size: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of the runs of each compiled call (one range off the CPU).

    ``kind`` is the value update's name (its loop state's size per run sets the group).
    """
    if group_size is None:
        if jax.default_backend() != "cpu":
            return [(0, batch)]  # accelerators want one wide call
        fit = max(1, GROUP_BYTES.get(kind, GROUP_BYTES["smooth"]) // max(per_run_bytes, 1))
        group_size = 1 << (fit.bit_length() - 1)  # a power of two: few distinct shapes to compile
    elif isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    group_size = min(int(group_size), batch)
    return [(lo, min(lo + group_size, batch)) for lo in range(0, batch, group_size)]
