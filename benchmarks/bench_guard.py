"""Benchmark: what the guard on a user's learner costs in the compiled loop.

A learner that is not built in has every strategy it plays checked inside the loop (finite,
nonnegative, summing to one: ``markovgames.dynamics._guard``). Each built-in composition below is
run twice in this process, interleaved (best of ``--repeats`` each, after an untimed compiling
call): as itself (no guard compiled) and as a user's learner with the very same functions (a
``LearnerSpec`` whose ``build`` calls the built-in's, so the guard is compiled in). The numbers
are checked equal first; the ratio is the guard's cost.

Workloads: the paper game's default run (``smooth_ce``, the trajectory kept, every prefix's
metrics), ``hedge+stage``, a batch of 64 runs of ``smooth_ce``, and ``smooth_ce`` on the medium
game of ``benchmarks/ab.py`` (3 players, 5 steps, 20 states, 4 actions each; ``--medium-T``).

Usage::

    python benchmarks/bench_guard.py [--T 1000000] [--batch-T 10000] [--repeats 5] [--json out.json]
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

from markovgames.dynamics import ALGORITHMS, Algorithm, get_algorithm, run, run_batch  # noqa: E402
from markovgames.dynamics._guard import is_guarded  # noqa: E402
from markovgames.games import paper_game, random_game  # noqa: E402
from markovgames.learners import LearnerSpec  # noqa: E402


def _as_users(name: str) -> Algorithm:
    """``name``'s composition with its learner rewrapped as a user's: same functions, guarded."""
    algorithm = get_algorithm(ALGORITHMS[name].composition if name in ALGORITHMS else name)
    builtin = algorithm.learner
    spec = LearnerSpec(f"{builtin.name}-copy", lambda axis: builtin.build(axis), swap_regret=builtin.swap_regret)
    assert is_guarded(spec) and not is_guarded(builtin)
    return Algorithm(spec, algorithm.value_update)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=1_000_000)
    parser.add_argument("--batch-T", type=int, default=10_000)
    parser.add_argument("--medium-T", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    game = paper_game()
    medium = random_game(3, 5, 20, (4, 4, 4), seed_or_rng=2024)
    workloads = {
        "smooth_ce, single (the default run)": ("smooth_ce", lambda a: run(game, a, T=args.T, eta=0.2)),
        "hedge+stage, single": ("hedge+stage", lambda a: run(game, a, T=args.T, eta=0.2)),
        "smooth_ce, batch of 64": ("smooth_ce", lambda a: run_batch(game, a, T=args.batch_T, etas=[0.2] * 64)),
        "smooth_ce, medium game": ("smooth_ce", lambda a: run(medium, a, T=args.medium_T, eta=0.2)),
    }
    rows = []
    for label, (name, call) in workloads.items():
        guarded = _as_users(name)
        first_guarded, first_builtin = call(guarded), call(name)  # compile both
        diff = float(np.max(np.abs(first_guarded.value - first_builtin.value)))
        assert diff == 0.0, f"{label}: the guarded copy differs from {name} by {diff:.3e}"
        best = {"guarded": [float("inf")] * 2, "builtin": [float("inf")] * 2}
        for _ in range(args.repeats):
            for key, algorithm in (("guarded", guarded), ("builtin", name)):
                wall, cpu, _ = best_of(functools.partial(call, algorithm), 1)
                best[key] = [min(best[key][0], wall), min(best[key][1], cpu)]
        iterations = args.T if "single" in label else args.medium_T if "medium" in label else args.batch_T * 64
        rows.append(
            {
                "workload": label,
                "builtin_it_s": iterations / best["builtin"][0],
                "guarded_it_s": iterations / best["guarded"][0],
                "cost_wall": best["guarded"][0] / best["builtin"][0],
                "cost_cpu": best["guarded"][1] / best["builtin"][1],
            }
        )
    print("| workload | built-in it/s | guarded copy it/s | guarded time / built-in time (wall) | (CPU) |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['workload']} | {r['builtin_it_s']:,.0f} | {r['guarded_it_s']:,.0f} | {r['cost_wall']:.3f} | {r['cost_cpu']:.3f} |"
        )
    out = {"T": args.T, "batch_T": args.batch_T, "repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
