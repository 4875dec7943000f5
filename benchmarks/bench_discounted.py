"""Benchmark: a discounted game's run against a finite-horizon run of the same size, in the same process.

A discounted game is one stationary layer; the finite-horizon runs it is timed against have the same
states, actions, rewards, kernel and iterations, the same learner (``LEARNER+discounted-smooth``
against ``LEARNER+smooth``), and one step (``H = 1``: the same learners' work per iteration, but no
transition to contract, since nothing follows the last step) or two (``H = 2``: one Bellman
contraction per iteration, as the discounted update's, and twice the learners). The finite-horizon
runs also carry their output policy's value and certified CE/CCE bounds at every prefix; the
discounted one its value estimates. Interleaved, best of ``--repeats`` each, after an untimed
compiling call:

* a single run on a game of the paper's size (2 players, 2 states, 2 actions each);
* a single run on a medium game (3 players, 20 states, 4 actions each);
* a batch of 64 runs of the small game;

and the small single run with the weighted average iterate carried in the loop (``weighted_average``,
the value update's own weights) and both it and the last iterate evaluated at 100 prefixes
(``last_iterate``): exactly, on the host while the next chunk runs, for the discounted run (policy
iteration); inside the compiled loop for the finite-horizon ones (backward induction).

Usage::

    python benchmarks/bench_discounted.py [--T 100000] [--medium-T 2000] [--batch-T 10000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_best  # noqa: E402

from markovgames.dynamics import run, run_batch  # noqa: E402
from markovgames.games import DiscountedMarkovGame, MarkovGame  # noqa: E402


def games(seed: int, num_players: int, num_states: int, actions: tuple[int, ...], discount: float):
    """A random discounted game and the finite-horizon games of one and two steps with the same arrays."""
    rng = np.random.default_rng(seed)
    rewards = rng.random((num_players, num_states, *actions))
    transitions = rng.dirichlet(np.ones(num_states), size=(num_states, *actions))
    return (
        DiscountedMarkovGame(rewards, transitions, discount, initial_state=0, name="discounted"),
        MarkovGame(rewards[None], transitions[None], 0, name="one-step"),
        MarkovGame(np.stack([rewards] * 2), np.stack([transitions] * 2), 0, name="two-step"),
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=100_000)
    parser.add_argument("--medium-T", type=int, default=2_000)
    parser.add_argument("--batch-T", type=int, default=10_000)
    parser.add_argument("--learner", default="hedge")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (T = 20,000, 500, 2,000; 2 repeats): a check, not a measurement"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.T, args.medium_T, args.batch_T, args.repeats = 20_000, 500, 2_000, 2
    small = games(0, 2, 2, (2, 2), 0.9)
    medium = games(1, 3, 20, (4, 4, 4), 0.9)
    disc, fin = f"{args.learner}+discounted-smooth", f"{args.learner}+smooth"
    every = np.linspace(1, args.T, 100).astype(int).tolist()

    def single(g, name, T, **kw):
        return lambda: run(g, name, T=T, eta=0.2, record_trajectory=False, **kw)

    def batch(g, name):
        return lambda: run_batch(g, name, T=args.batch_T, etas=[0.2] * 64)

    workloads = {
        "single, N=2 S=2 A=2": (args.T, *(single(g, n, args.T) for g, n in zip(small, (disc, fin, fin), strict=True))),
        "single, N=3 S=20 A=4": (
            args.medium_T,
            *(single(g, n, args.medium_T) for g, n in zip(medium, (disc, fin, fin), strict=True)),
        ),
        "batch of 64, N=2 S=2 A=2": (64 * args.batch_T, *(batch(g, n) for g, n in zip(small, (disc, fin, fin), strict=True))),
        "single, N=2 S=2 A=2, weighted average, 100 evaluated prefixes": (
            args.T,
            *(
                single(g, n, args.T, last_iterate=every, weighted_average=every)
                for g, n in zip(small, (disc, fin, fin), strict=True)
            ),
        ),
    }
    rows = []
    for label, (iterations, discounted, one, two) in workloads.items():
        best = interleaved_best({"discounted": discounted, "H=1": one, "H=2": two}, args.repeats)
        rows.append(
            {
                "workload": label,
                "discounted_it_s": iterations / best["discounted"],
                "finite_h1_it_s": iterations / best["H=1"],
                "finite_h2_it_s": iterations / best["H=2"],
                "ratio_h1": best["discounted"] / best["H=1"],
                "ratio_h2": best["discounted"] / best["H=2"],
            }
        )
    print(f"| workload ({args.learner}) | discounted it/s | H = 1 it/s | H = 2 it/s | time / H = 1's | time / H = 2's |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['workload']} | {r['discounted_it_s']:,.0f} | {r['finite_h1_it_s']:,.0f} | {r['finite_h2_it_s']:,.0f} | "
            f"{r['ratio_h1']:.2f} | {r['ratio_h2']:.2f} |"
        )
    out = {"T": args.T, "medium_T": args.medium_T, "batch_T": args.batch_T, "repeats": args.repeats, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
