"""Helpers shared by the benchmark scripts: best-of timing, and a checkout of another revision."""

from __future__ import annotations

import contextlib
import math
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def interleaved_best(calls: dict, repeats: int) -> dict:
    """The best wall time of each of ``calls`` (name -> function), after one untimed compiling call
    of each, over ``repeats`` rounds that call them in turn (so that all see the same load)."""
    for call in calls.values():
        call()  # compile
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):
        for name, call in calls.items():
            wall, _, _ = best_of(call, 1)
            best[name] = min(best[name], wall)
    return best


@contextlib.contextmanager
def revision_tree(revision: str, parent: Path):
    """A checkout of the git ``revision`` in ``parent / "base"`` (``git worktree``), removed afterwards."""
    tree = Path(parent) / "base"
    git = ["git", "-C", str(ROOT), "worktree"]
    subprocess.run([*git, "add", "--detach", str(tree), revision], check=True, capture_output=True)
    try:
        yield tree
    finally:
        subprocess.run([*git, "remove", "--force", str(tree)], check=False, capture_output=True)
