"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import math
import time


def best_of(fn, repeats: int):
    """Best wall time and best process-CPU time of ``repeats`` calls of ``fn``, and the last result."""
    best_wall = best_cpu = math.inf
    result = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, result
