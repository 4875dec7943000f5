"""Benchmark: what uniform and linear averaging cost against the paper's, in one process.

``smooth-uniform`` and ``smooth-linear`` are the smooth value update with another order ``k`` in
``alpha_t = (k+1)/(k+t)`` and ``rho_t`` (a static constant of the compiled loop; ``k = 0`` adds
a select for ``rho_1``). Each learner is run with the three averagings on the paper game,
interleaved (best of ``--repeats`` each, after an untimed compiling call); the ratio is the time
of the averaging over the paper's ``smooth`` (above 1: slower).

Usage::

    python benchmarks/bench_averaging.py [--T 1000000] [--repeats 5] [--json out.json]
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

UPDATES = ("smooth", "smooth-uniform", "smooth-linear")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--learners", nargs="+", default=["bm-logbarrier", "hedge", "rm-plus"])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    game = paper_game()
    rows = []
    for learner in args.learners:
        calls = {u: functools.partial(run, game, f"{learner}+{u}", T=args.T, eta=0.2) for u in UPDATES}
        best = interleaved_best(calls, args.repeats)
        rows.append(
            {
                "learner": learner,
                "smooth_it_s": args.T / best["smooth"],
                **{f"{u}_over_smooth": best[u] / best["smooth"] for u in UPDATES[1:]},
            }
        )
    print("| learner | smooth it/s | smooth-uniform / smooth (time) | smooth-linear / smooth (time) |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['learner']} | {r['smooth_it_s']:,.0f} | {r['smooth-uniform_over_smooth']:.3f} | "
            f"{r['smooth-linear_over_smooth']:.3f} |"
        )
    out = {"T": args.T, "repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
