"""Benchmark: a user's learner (``examples/custom_learner.py``) against the built-in it rewrites.

The example writes optimistic Hedge again in user code; composed with the smooth value update it
is ``hedge+smooth``. Both run the same workloads in this process, interleaved (best of
``--repeats`` each), after an untimed compiling call, and the numbers are checked equal first:

* a single run on the paper game (trajectory kept, metrics of every prefix), ``--T`` iterations;
* a batch of 64 runs (``run_batch``), ``--batch-T`` iterations each;
* the same learner with the stage-based update against ``hedge+stage``.

Usage::

    python benchmarks/bench_custom.py [--T 100000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of  # noqa: E402

from markovgames.dynamics import run, run_batch  # noqa: E402
from markovgames.games import paper_game  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_learner.py"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=100_000)
    parser.add_argument("--batch-T", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    game = paper_game()
    pairs = {
        "single, smooth": (f"{EXAMPLE}:ALGORITHM", "hedge+smooth", lambda a: run(game, a, T=args.T, eta=0.2)),
        "batch of 64, smooth": (
            f"{EXAMPLE}:ALGORITHM",
            "hedge+smooth",
            lambda a: run_batch(game, a, T=args.batch_T, etas=[0.2] * 64),
        ),
        "single, stage": (f"{EXAMPLE}:LEARNER+stage", "hedge+stage", lambda a: run(game, a, T=args.T, eta=0.2)),
    }
    rows = []
    for label, (mine, builtin, call) in pairs.items():
        first_mine, first_builtin = call(mine), call(builtin)  # compile
        diff = float(np.max(np.abs(first_mine.value - first_builtin.value)))
        assert diff <= 1e-12, f"{label}: the example and {builtin} differ by {diff:.3e}"
        best = {"mine": [float("inf")] * 2, "builtin": [float("inf")] * 2}
        for _ in range(args.repeats):
            for key, name in (("mine", mine), ("builtin", builtin)):
                wall, cpu, _ = best_of(functools.partial(call, name), 1)
                best[key] = [min(best[key][0], wall), min(best[key][1], cpu)]
        iterations = args.T if "single" in label else args.batch_T * 64
        rows.append(
            {
                "workload": label,
                "example_it_s": iterations / best["mine"][0],
                "builtin_it_s": iterations / best["builtin"][0],
                "slowdown_wall": best["mine"][0] / best["builtin"][0],
                "slowdown_cpu": best["mine"][1] / best["builtin"][1],
                "max_difference": diff,
            }
        )
    print("| workload | example it/s | built-in it/s | example time / built-in time (wall) | (CPU) | max difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['workload']} | {r['example_it_s']:,.0f} | {r['builtin_it_s']:,.0f} | {r['slowdown_wall']:.2f} | "
            f"{r['slowdown_cpu']:.2f} | {r['max_difference']:.1e} |"
        )
    out = {"T": args.T, "batch_T": args.batch_T, "repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
