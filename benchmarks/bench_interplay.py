"""Benchmark: what step-size schedules, alternation and regret curves cost, in one process.

Each variant is a run of the same composition on the paper game with one setting changed from
the paper's (constant rate, simultaneous updates, no regret curves), interleaved with the
default run (best of ``--repeats`` each, after an untimed compiling call); the ratio is the
variant's time over the default's (above 1: slower).

* ``sqrt``: ``step_schedule="sqrt"`` (the factors come with each chunk: one multiply per player);
* ``per-player``: one rate per player;
* ``alternating``: ``order="alternating"`` (each player but the last plays its next strategy
  within the iteration: ``N - 1`` more plays);
* ``regret``: ``regret=True`` (the external and swap regret averages per step and state).

Usage::

    python benchmarks/bench_interplay.py [--T 300000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_best  # noqa: E402

from markovgames.dynamics import run  # noqa: E402
from markovgames.games import paper_game  # noqa: E402

VARIANTS = {
    "default": {},
    "sqrt": {"step_schedule": "sqrt"},
    "per-player": {"eta": (0.2, 0.1)},
    "alternating": {"order": "alternating"},
    "regret": {"regret": True},
}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--algorithms", nargs="+", default=["smooth_ce", "smooth_cce", "rm-plus+smooth-uniform", "stage_cce"])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    game = paper_game()
    rows = []
    for algorithm in args.algorithms:
        calls = {}
        for name, settings in VARIANTS.items():
            kwargs = {"eta": 0.2, **settings}
            calls[name] = functools.partial(run, game, algorithm, T=args.T, record_trajectory=False, **kwargs)
        best = interleaved_best(calls, args.repeats)
        rows.append(
            {
                "algorithm": algorithm,
                "default_it_s": args.T / best["default"],
                **{f"{name}_over_default": best[name] / best["default"] for name in calls if name != "default"},
            }
        )
    names = [n for n in VARIANTS if n != "default"]
    print("| algorithm | default it/s | " + " | ".join(f"{n} / default (time)" for n in names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for r in rows:
        cells = [f"{r[f'{n}_over_default']:.3f}" if f"{n}_over_default" in r else "n/a" for n in names]
        print(f"| {r['algorithm']} | {r['default_it_s']:,.0f} | " + " | ".join(cells) + " |")
    out = {"T": args.T, "repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
