"""A/B benchmark: this tree's engine against another version's, measured in the same run, as ratios.

The other version is a git revision (``--base``, default ``HEAD~1``) checked out into a temporary
directory with ``git worktree``; each round runs every workload once in a fresh process per
version, alternating which version goes first, so both see the same background load. A workload
process imports its version (``PYTHONPATH``), compiles with an untimed call, then reports the
best of ``--repeats`` timed calls (wall and process CPU time). The report is the best over rounds
per version and the ratio this tree / base (above 1: this tree is faster).

Workloads (the paper's game, eta = 0.2, float64; metrics of every prefix always on):

* ``single:ALG``: ``run(game, ALG, T)`` with the trajectory kept in memory (``--T``);
* ``batch:ALG``: ``run_batch(game, ALG, --batch-T, etas=[0.2] * 64)``.

Usage::

    python benchmarks/ab.py --base b12ce8f [--rounds 5] [--T 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")

WORKER = r"""
import json, sys, time
import numpy as np
from markovgames.dynamics import run, run_batch
from markovgames.games import paper_game

kind, algorithm, T, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
game = paper_game()
if kind == "single":
    call = lambda: run(game, algorithm, T=T, eta=0.2)
else:
    call = lambda: run_batch(game, algorithm, T=T, etas=[0.2] * 64)
result = call()  # compiles
assert np.all(np.isfinite(result.value))
best_wall = best_cpu = float("inf")
for _ in range(repeats):
    w, c = time.perf_counter(), time.process_time()
    call()
    best_wall, best_cpu = min(best_wall, time.perf_counter() - w), min(best_cpu, time.process_time() - c)
print(json.dumps({"wall": best_wall, "cpu": best_cpu, "final_value": np.asarray(result.value)[..., -1, :].tolist()}))
"""


def _measure(src: Path, kind: str, algorithm: str, T: int, repeats: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), MARKOVGAMES_CACHE_DIR="off")
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, kind, algorithm, str(T), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{kind}:{algorithm} with {src} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD~1", help="the git revision to compare against (default HEAD~1)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (the best per version is kept)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per process")
    parser.add_argument("--T", type=int, default=100_000, help="iterations of a single run")
    parser.add_argument("--batch-T", type=int, default=10_000, help="iterations of each run of a batch")
    parser.add_argument(
        "--workloads", nargs="+", default=[f"single:{a}" for a in ALGORITHMS] + [f"batch:{a}" for a in ALGORITHMS]
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True, capture_output=True
        )
        try:
            trees = {"this": ROOT / "src", "base": base / "src"}
            best: dict = {w: {v: {"wall": float("inf"), "cpu": float("inf")} for v in trees} for w in args.workloads}
            finals: dict = {w: {} for w in args.workloads}
            for r in range(args.rounds):
                order = list(trees) if r % 2 == 0 else list(reversed(trees))
                for workload in args.workloads:
                    kind, algorithm = workload.split(":")
                    T = args.T if kind == "single" else args.batch_T
                    for version in order:
                        m = _measure(trees[version], kind, algorithm, T, args.repeats)
                        for key in ("wall", "cpu"):
                            best[workload][version][key] = min(best[workload][version][key], m[key])
                        finals[workload][version] = m["final_value"]
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False, capture_output=True)
    rows = []
    for workload in args.workloads:
        kind, algorithm = workload.split(":")
        iterations = args.T if kind == "single" else args.batch_T * 64
        this, base_ = best[workload]["this"], best[workload]["base"]
        rows.append(
            {
                "workload": workload,
                "this_it_s": iterations / this["wall"],
                "base_it_s": iterations / base_["wall"],
                "ratio_wall": base_["wall"] / this["wall"],
                "ratio_cpu": base_["cpu"] / this["cpu"],
                "same_final_value": finals[workload]["this"] == finals[workload]["base"],
            }
        )
    print(f"| workload | this it/s | base ({args.base}) it/s | ratio (wall) | ratio (CPU) | same numbers |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['workload']} | {row['this_it_s']:,.0f} | {row['base_it_s']:,.0f} | {row['ratio_wall']:.2f}x | "
            f"{row['ratio_cpu']:.2f}x | {'yes' if row['same_final_value'] else 'no'} |"
        )
    out = {"base": args.base, "rounds": args.rounds, "repeats": args.repeats, "T": args.T, "batch_T": args.batch_T, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
