"""Benchmark: what sampled feedback costs against full information, in one process.

Each composition runs on the paper game with full information and with ``sampled:K`` for each
``K`` of ``--samples``, interleaved (best of ``--repeats`` each, after an untimed compiling call);
the ratio is the sampled run's time over the full-information run's (above 1: slower). A batch of
``--batch`` seeds (one compiled call per group of runs, as ``run_batch`` makes them) is timed the
same way against a batch of as many full-information runs. The samples a run drew are reported
(``RunResult.samples_used``).

Usage::

    python benchmarks/bench_feedback.py [--T 200000] [--samples 1 8] [--batch 1024] [--batch-T 2000]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_best  # noqa: E402

from markovgames.dynamics import run, run_batch  # noqa: E402
from markovgames.games import paper_game  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--algorithms", nargs="+", default=["smooth_ce", "smooth_cce", "rm-plus+smooth", "stage_cce"])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--batch-T", type=int, default=2_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    game = paper_game()
    rows = []
    for algorithm in args.algorithms:
        calls = {"full": functools.partial(run, game, algorithm, T=args.T, record_trajectory=False)}
        for k in args.samples:
            calls[f"sampled:{k}"] = functools.partial(
                run, game, algorithm, T=args.T, record_trajectory=False, feedback=f"sampled:{k}", seed=1
            )
        best = interleaved_best(calls, args.repeats)
        row = {"algorithm": algorithm, "full_it_s": args.T / best["full"]}
        for k in args.samples:
            name = f"sampled:{k}"
            row[f"{name}_over_full"] = best[name] / best["full"]
            row[f"{name}_samples"] = int(calls[name]().samples_used[-1])
        rows.append(row)
    batch = {}
    if args.batch:
        seeds = list(range(args.batch))
        calls = {
            "full": functools.partial(run_batch, game, "smooth_ce", args.batch_T, [0.2] * args.batch),
            "sampled:1": functools.partial(run_batch, game, "smooth_ce", args.batch_T, feedback="sampled:1", seeds=seeds),
        }
        best = interleaved_best(calls, max(2, args.repeats // 2))
        batch = {
            "runs": args.batch,
            "T": args.batch_T,
            "full_s": best["full"],
            "sampled:1_s": best["sampled:1"],
            "sampled:1_over_full": best["sampled:1"] / best["full"],
        }
    names = [f"sampled:{k}" for k in args.samples]
    print("| algorithm | full it/s | " + " | ".join(f"{n} / full (time) | {n} samples" for n in names) + " |")
    print("|---|---:|" + "---:|---:|" * len(names))
    for r in rows:
        cells = [f"{r[f'{n}_over_full']:.2f} | {r[f'{n}_samples']:,}" for n in names]
        print(f"| {r['algorithm']} | {r['full_it_s']:,.0f} | " + " | ".join(cells) + " |")
    if batch:
        print(
            f"\nbatch of {batch['runs']} seeds, T = {batch['T']} (smooth_ce): full {batch['full_s']:.2f} s, "
            f"sampled:1 {batch['sampled:1_s']:.2f} s: {batch['sampled:1_over_full']:.2f}x"
        )
    out = {"T": args.T, "repeats": args.repeats, "rows": rows, "batch": batch}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
