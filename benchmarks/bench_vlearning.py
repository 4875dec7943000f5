"""Benchmark: V-learning's compiled episode loop, single runs against a batch of seeds, in one process.

Each algorithm runs ``--episodes`` episodes on the paper game (best of ``--repeats``, after an
untimed compiling call): episodes per second, and the time of ``prefix_curves`` (the exact value
and certified bounds of every prefix). Then ``--batch`` seeds of ``--batch-episodes`` episodes:
one ``run_vlearning_batch`` call against as many ``run_vlearning`` calls in a row, interleaved; the
ratio is the runs in a row over the batch (above 1: the batch is faster).

Usage::

    python benchmarks/bench_vlearning.py [--episodes 100000] [--batch 64] [--batch-episodes 5000]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_best  # noqa: E402

from markovgames.dynamics import VLEARNING_ALGORITHMS, run_vlearning, run_vlearning_batch  # noqa: E402
from markovgames.evaluation import prefix_curves  # noqa: E402
from markovgames.games import paper_game  # noqa: E402


def _in_a_row(game, algorithm, episodes, seeds):
    return [run_vlearning(game, algorithm, episodes, seed=s) for s in seeds]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batch-episodes", type=int, default=5_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    game = paper_game()
    rows = []
    for algorithm in VLEARNING_ALGORITHMS:
        call = functools.partial(run_vlearning, game, algorithm, args.episodes, seed=1)
        best = interleaved_best({"run": call}, args.repeats)["run"]
        result = call()
        start = time.perf_counter()
        prefix_curves(game, result.policy)
        curves = time.perf_counter() - start
        rows.append(
            {
                "algorithm": algorithm,
                "episodes": args.episodes,
                "episodes_per_s": args.episodes / best,
                "us_per_episode": 1e6 * best / args.episodes,
                "prefix_curves_s": curves,
            }
        )
    seeds = list(range(args.batch))
    calls = {
        "batch": functools.partial(run_vlearning_batch, game, "cce-v", args.batch_episodes, seeds),
        "in_a_row": functools.partial(_in_a_row, game, "cce-v", args.batch_episodes, seeds),
    }
    best = interleaved_best(calls, max(1, args.repeats - 1))
    batch = {
        "algorithm": "cce-v",
        "runs": args.batch,
        "episodes": args.batch_episodes,
        "batch_s": best["batch"],
        "in_a_row_s": best["in_a_row"],
        "in_a_row_over_batch": best["in_a_row"] / best["batch"],
    }
    out = {"rows": rows, "batch": batch}
    for row in rows:
        print(
            f"{row['algorithm']:8s} {row['episodes_per_s']:10.0f} episodes/s ({row['us_per_episode']:.1f} us each); "
            f"prefix_curves of {row['episodes']} prefixes {row['prefix_curves_s']:.2f} s"
        )
    print(
        f"batch of {args.batch} seeds x {args.batch_episodes} episodes: {batch['batch_s']:.2f} s in one call, "
        f"{batch['in_a_row_s']:.2f} s in a row: ratio {batch['in_a_row_over_batch']:.2f}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
