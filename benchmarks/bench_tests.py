"""Benchmark: the default test suite's wall time, with an empty compilation cache and a warm one.

The README's test command, ``python -m pytest -q`` (every core, the default mode; here with
``-p no:cacheprovider``, so that a measured tree's ``.pytest_cache`` is neither read nor
written), is run twice per version: first with an empty compilation cache (every program compiled, as on a fresh clone
or in continuous integration), then again with the cache the first run filled. The cache is a
new temporary directory per version (``MARKOVGAMES_CACHE_DIR``), with the size limit the suite
sets for its own directory, so that JAX locks it for the parallel workers
(``JAX_COMPILATION_CACHE_MAX_SIZE``; see ``tests/conftest.py``).

With ``--base REV``, the suite of a git revision (checked out with ``git worktree``, its
``src`` first on ``PYTHONPATH``) is measured in the same run, alternating which version goes
first per round, and the report gives the ratios base / this (above 1: this tree is faster).
The target of this page: the default suite in under 5 minutes on two cores.

Usage::

    python benchmarks/bench_tests.py [--base REV] [--rounds 1] [--empty-only] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import ROOT, revision_tree  # noqa: E402

TARGET_S = 300.0
#: The size limit the suite sets for its own cache directory (tests/conftest.py).
CACHE_LIMIT = str(4 * 2**30)


def _suite(tree: Path, cache: Path) -> dict:
    """One run of the README's test command in ``tree`` with compilation cache ``cache``."""
    env = dict(os.environ, MARKOVGAMES_CACHE_DIR=str(cache), JAX_COMPILATION_CACHE_MAX_SIZE=CACHE_LIMIT)
    env.pop("MARKOVGAMES_FULL_TESTS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode != 0:
        raise RuntimeError(f"the suite in {tree} failed ({last}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    passed = re.search(r"(\d+) passed", last)
    return {"wall_s": wall, "passed": int(passed.group(1)) if passed else None, "summary": last}


def _measure(tree: Path, warm: bool = True) -> dict:
    """The suite with an empty cache, then (with ``warm``) with the cache that run filled."""
    cache = Path(tempfile.mkdtemp(prefix="markovgames-bench-cache-"))
    try:
        cold = _suite(tree, cache)
        return {"cold": cold, "warm": _suite(tree, cache)} if warm else {"cold": cold}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=None, help="also measure this git revision's suite, in the same run")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (the best per version and cache state is kept)")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    parser.add_argument(
        "--empty-only", action="store_true", help="only the runs with an empty cache (what a fresh clone and CI see)"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        trees = {"this": ROOT}
        if args.base is not None:
            trees["base"] = stack.enter_context(revision_tree(args.base, Path(tmp)))
        runs: dict = {version: [] for version in trees}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for version in order:
                runs[version].append(_measure(trees[version], warm=not args.empty_only))
                print(f"round {r + 1}/{args.rounds}: {version} done", file=sys.stderr)
    states = ("cold",) if args.empty_only else ("cold", "warm")
    best = {v: {state: min(m[state]["wall_s"] for m in runs[v]) for state in states} for v in runs}
    print(f"cores: {os.cpu_count()}; target: under {TARGET_S:.0f} s")
    header = "| suite | this: wall s | tests |" + (
        f" base ({args.base}): wall s | tests | ratio base / this |" if "base" in runs else ""
    )
    print(header)
    print("|---|---:|---:|" + ("---:|---:|---:|" if "base" in runs else ""))
    for state in states:
        label = "empty compilation cache" if state == "cold" else "warm compilation cache"
        row = f"| {label} | {best['this'][state]:.0f} | {runs['this'][0][state]['passed']} |"
        if "base" in runs:
            row += f" {best['base'][state]:.0f} | {runs['base'][0][state]['passed']} | {best['base'][state] / best['this'][state]:.2f}x |"
        print(row)
    out = {"base": args.base, "rounds": args.rounds, "cores": os.cpu_count(), "target_s": TARGET_S, "best": best, "runs": runs}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
