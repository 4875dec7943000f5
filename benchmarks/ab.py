"""A/B benchmark: this tree's engine against another version's, measured in the same run, as ratios.

The other version is a git revision (``--base``, default ``HEAD~1``) checked out into a temporary
directory with ``git worktree``; each round runs every workload once in a fresh process per
version, alternating which version goes first, so both see the same background load. A workload
process imports its version (``PYTHONPATH``), compiles with a first call (its ``compile_time_s``
is the compile time reported), then reports the best of ``--repeats`` timed calls (wall and
process CPU time); the first call's wall time (compiling and one run: what a fresh process
waits for) is reported too. The report is the best over rounds per version and the ratio this tree / base
(above 1: this tree is faster, or compiles faster).

Workloads (eta = 0.2, float64; metrics of every prefix always on), ``KIND:ALG``:

* ``single:ALG``: ``run(paper_game(), ALG, --T)`` with the trajectory kept in memory;
* ``batch:ALG``: ``run_batch(paper_game(), ALG, --batch-T, etas=[0.2] * 64)``;
* ``three:ALG``: ``run`` on ``random_game(3, 3, 4, (2, 3, 2), seed_or_rng=1)`` (three players), ``--T`` / 10;
* ``medium:ALG``: ``run`` on ``random_game(3, 5, 20, (4, 4, 4), seed_or_rng=2024)``, ``--medium-T``;
* ``sparse:ALG``: ``run`` on ``random_game(2, 4, 500, (3, 3), seed_or_rng=0, num_successors=4)``
  (sparse transitions), ``--medium-T``.

Usage::

    python benchmarks/ab.py --base b12ce8f [--rounds 5] [--T 100000] [--json out.json]
    python benchmarks/ab.py --base HEAD --workloads three:stage_cce medium:smooth_ce
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import ROOT, revision_tree  # noqa: E402

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")
KINDS = ("single", "batch", "three", "medium", "sparse")

WORKER = r"""
import json, sys, time
import numpy as np
from markovgames.dynamics import run, run_batch
from markovgames.games import paper_game, random_game

kind, algorithm, T, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
games = {
    "single": paper_game,
    "batch": paper_game,
    "three": lambda: random_game(3, 3, 4, (2, 3, 2), seed_or_rng=1),
    "medium": lambda: random_game(3, 5, 20, (4, 4, 4), seed_or_rng=2024),
    "sparse": lambda: random_game(2, 4, 500, (3, 3), seed_or_rng=0, num_successors=4),
}
game = games[kind]()
if kind == "batch":
    call = lambda: run_batch(game, algorithm, T=T, etas=[0.2] * 64)
else:
    call = lambda: run(game, algorithm, T=T, eta=0.2)
first = time.perf_counter()
result = call()  # compiles
first = time.perf_counter() - first
assert np.all(np.isfinite(result.value))
best_wall = best_cpu = float("inf")
for _ in range(repeats):
    w, c = time.perf_counter(), time.process_time()
    call()
    best_wall, best_cpu = min(best_wall, time.perf_counter() - w), min(best_cpu, time.process_time() - c)
final = np.asarray(result.value)[..., -1, :].tolist()
print(json.dumps({"wall": best_wall, "cpu": best_cpu, "compile": result.compile_time_s, "first": first, "final_value": final}))
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
    parser.add_argument("--medium-T", type=int, default=2_000, help="iterations of a medium or sparse game's run")
    parser.add_argument("--workloads", nargs="+", default=[f"{k}:{a}" for k in KINDS for a in ALGORITHMS])
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    for workload in args.workloads:
        kind, _, algorithm = workload.partition(":")
        if kind not in KINDS or not algorithm:
            parser.error(f"--workloads: {workload!r} is not KIND:ALGORITHM with KIND one of {', '.join(KINDS)}")
    iterations = {
        "single": args.T,
        "batch": args.batch_T,
        "three": max(args.T // 10, 1),
        "medium": args.medium_T,
        "sparse": args.medium_T,
    }
    with tempfile.TemporaryDirectory() as tmp, revision_tree(args.base, Path(tmp)) as base:
        trees = {"this": ROOT / "src", "base": base / "src"}
        best: dict = {
            w: {v: {key: float("inf") for key in ("wall", "cpu", "compile", "first")} for v in trees} for w in args.workloads
        }
        finals: dict = {w: {} for w in args.workloads}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for workload in args.workloads:
                kind, algorithm = workload.split(":")
                T = iterations[kind]
                for version in order:
                    m = _measure(trees[version], kind, algorithm, T, args.repeats)
                    for key in ("wall", "cpu", "compile", "first"):
                        best[workload][version][key] = min(best[workload][version][key], m[key])
                    finals[workload][version] = m["final_value"]
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rows = []
    for workload in args.workloads:
        kind, algorithm = workload.split(":")
        runs = iterations[kind] * (64 if kind == "batch" else 1)
        this, base_ = best[workload]["this"], best[workload]["base"]
        rows.append(
            {
                "workload": workload,
                "this_it_s": runs / this["wall"],
                "base_it_s": runs / base_["wall"],
                "ratio_wall": base_["wall"] / this["wall"],
                "ratio_cpu": base_["cpu"] / this["cpu"],
                "this_compile_s": this["compile"],
                "base_compile_s": base_["compile"],
                "ratio_compile": base_["compile"] / this["compile"],
                "this_first_call_s": this["first"],
                "base_first_call_s": base_["first"],
                "ratio_first_call": base_["first"] / this["first"],
                "same_final_value": finals[workload]["this"] == finals[workload]["base"],
            }
        )
    print(
        f"| workload | this it/s | base ({args.base}) it/s | ratio (wall) | ratio (CPU) "
        "| this compile s | base compile s | ratio (compile) | this first call s | base first call s "
        "| ratio (first call) | same numbers |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['workload']} | {row['this_it_s']:,.0f} | {row['base_it_s']:,.0f} | {row['ratio_wall']:.2f}x | "
            f"{row['ratio_cpu']:.2f}x | {row['this_compile_s']:.2f} | {row['base_compile_s']:.2f} | "
            f"{row['ratio_compile']:.2f}x | {row['this_first_call_s']:.2f} | {row['base_first_call_s']:.2f} | "
            f"{row['ratio_first_call']:.2f}x | {'yes' if row['same_final_value'] else 'no'} |"
        )
    out = {
        "base": args.base,
        "rounds": args.rounds,
        "repeats": args.repeats,
        "iterations": iterations,
        "rows": rows,
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
