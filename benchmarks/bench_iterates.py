"""Benchmark: what the weighted average of the iterates costs the compiled loop, in one process.

Each variant is a run of the same composition with one setting changed, interleaved with the
default run (best of ``--repeats`` each, after an untimed compiling call); the ratio is the
variant's time over the default's (above 1: slower), in wall time and in process CPU time (less
sensitive to other processes on a shared machine):

* ``average``: ``weighted_average`` at the checkpoints ``1, 10, ..., T`` (the command line's
  ``--weighted-average``): the average carried through every iteration (a running recursion of
  the policies, or a stage's sum), and a best-response pass at each checkpoint;
* ``average-every``: ``weighted_average=True`` without checkpoints (``--weighted-average all``):
  a best-response pass at every prefix;
* ``last-every``: ``last_iterate=True`` without checkpoints, the same pass for the last iterate,
  for comparison.

On the paper game (N = H = S = 2, A = 2) and the medium game (N = 3, H = 5, S = 20, A = 4),
metrics at every prefix, no trajectory kept. Usage::

    python benchmarks/bench_iterates.py [--T 200000] [--medium-T 2000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of  # noqa: E402

from markovgames.dynamics import run  # noqa: E402
from markovgames.games import paper_game, random_game  # noqa: E402


def _decades(T: int) -> list[int]:
    """``1, 10, 100, ...`` and ``T``: the command line's default checkpoints."""
    points = [10**k for k in range(len(str(T))) if 10**k < T]
    return [*points, T]


def _variants(T: int) -> dict[str, dict]:
    return {
        "default": {},
        "average": {"weighted_average": _decades(T)},
        "average-every": {"weighted_average": True},
        "last-every": {"last_iterate": True},
    }


def _interleaved(calls: dict, repeats: int) -> tuple[dict, dict]:
    """The best wall and process-CPU time of each call, after an untimed compiling call of each,
    over ``repeats`` rounds that call them in turn (so that all see the same load)."""
    for call in calls.values():
        call()
    wall = dict.fromkeys(calls, float("inf"))
    cpu = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for name, call in calls.items():
            w, c, _ = best_of(call, 1)
            wall[name], cpu[name] = min(wall[name], w), min(cpu[name], c)
    return wall, cpu


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=200_000)
    parser.add_argument("--medium-T", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--algorithms", nargs="+", default=["smooth_cce", "rm-plus+smooth-linear", "stage_cce"])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    games = {
        "paper": (paper_game(), args.T),
        "medium": (random_game(3, 5, 20, 4, seed_or_rng=2024), args.medium_T),
    }
    rows = []
    for game_name, (game, T) in games.items():
        for algorithm in args.algorithms:
            calls = {
                name: functools.partial(run, game, algorithm, T=T, eta=0.2, record_trajectory=False, **settings)
                for name, settings in _variants(T).items()
            }
            wall, cpu = _interleaved(calls, args.repeats)
            rows.append(
                {
                    "game": game_name,
                    "algorithm": algorithm,
                    "T": T,
                    "default_it_s": T / wall["default"],
                    **{f"{name}_over_default": wall[name] / wall["default"] for name in calls if name != "default"},
                    **{f"{name}_over_default_cpu": cpu[name] / cpu["default"] for name in calls if name != "default"},
                }
            )
            print(rows[-1], flush=True)
    names = [n for n in _variants(1) if n != "default"]
    print("| game | algorithm | T | default it/s | " + " | ".join(f"{n} / default (wall; CPU)" for n in names) + " |")
    print("|---|---|---:|---:|" + "---:|" * len(names))
    for r in rows:
        cells = [f"{r[f'{n}_over_default']:.2f}; {r[f'{n}_over_default_cpu']:.2f}" for n in names]
        print(f"| {r['game']} | {r['algorithm']} | {r['T']} | {r['default_it_s']:,.0f} | " + " | ".join(cells) + " |")
    out = {"repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
