"""Benchmark: what the weighted average of the iterates costs the compiled loop.

Each variant is a run of the same composition with one setting changed, interleaved with the
default run in one process (best of ``--repeats`` each, after an untimed compiling call); the ratio is the
variant's time over the default's (above 1: slower), in wall time and in process CPU time:

* ``average``: ``weighted_average`` at the checkpoints ``1, 10, ..., T`` (the command line's
  ``--weighted-average``): the average carried through every iteration (a running recursion of
  the policies, or per stage from the stage's joint sum), and a best-response pass at each checkpoint;
* ``average-every``: ``weighted_average=True`` without checkpoints (``--weighted-average all``):
  a best-response pass at every prefix;
* ``last-every``: ``last_iterate=True`` without checkpoints, the same pass for the last iterate,
  for comparison;
* ``average-kept``: ``average`` with the trajectory kept (the default of ``run`` and of the command
  line), over the default run with the trajectory kept.

On the paper game (N = H = S = 2, A = 2) and the medium game (N = 3, H = 5, S = 20, A = 4),
metrics at every prefix, no trajectory kept except in ``average-kept``; and with
``hedge+discounted-smooth`` (``--discounted-algorithms``) on two discounted games with the same
numbers of players, states and actions, discount 0.9 (``discounted``: ``T`` iterations;
``discounted-medium``: ``--medium-T``), whose iterates are evaluated on the host. ``--games``
picks among the four.

A ratio measured in one process varies from process to process by far more than from repeat to
repeat (on the paper game, whose iteration takes about a microsecond, from 1.05 to 1.6 for the
same program: each process compiles and lays out its programs anew). Each (game, algorithm) is
therefore measured in ``--processes`` fresh processes, and the table gives the median ratio with
its range. Unpinned, a process's threads may run on either core, and its times move with that
(on the paper game, default runs of 155-245 ms in five processes); ``--pin CPU`` runs every
process on that core alone, where the same five gave 155-160 ms. Usage::

    python benchmarks/bench_iterates.py [--T 200000] [--medium-T 2000] [--repeats 5] [--processes 5] [--pin CPU]
        [--games paper medium discounted discounted-medium] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_of  # noqa: E402

from markovgames.dynamics import run  # noqa: E402
from markovgames.games import paper_game, random_discounted_game, random_game  # noqa: E402


def _decades(T: int) -> list[int]:
    """``1, 10, 100, ...`` and ``T``: the command line's default checkpoints."""
    points = [10**k for k in range(len(str(T))) if 10**k < T]
    return [*points, T]


#: Evaluated on the host at every prefix, a discounted game's iterates would cost a policy
#: iteration per iteration: not measured there.
_EVERY = ("average-every", "last-every")


def _variants(T: int, discounted: bool = False) -> dict[str, dict]:
    variants = {
        "default": {},
        "average": {"weighted_average": _decades(T)},
        "average-every": {"weighted_average": True},
        "last-every": {"last_iterate": True},
        "default-kept": {"record_trajectory": True},
        "average-kept": {"weighted_average": _decades(T), "record_trajectory": True},
    }
    return {name: v for name, v in variants.items() if not (discounted and name in _EVERY)}


#: Each variant's ratio: over which run.
_BASE = {"average": "default", "average-every": "default", "last-every": "default", "average-kept": "default-kept"}


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


def _games(args) -> dict:
    return {
        "paper": (paper_game(), args.T),
        "medium": (random_game(3, 5, 20, 4, seed_or_rng=2024), args.medium_T),
        "discounted": (random_discounted_game(2, 2, 2, discount=0.9, seed_or_rng=1), args.T),
        "discounted-medium": (random_discounted_game(3, 20, 4, discount=0.9, seed_or_rng=2024), args.medium_T),
    }


def _one_process(game_name: str, algorithm: str, args) -> dict:
    """The ratios of one (game, algorithm), measured in this process."""
    game, T = _games(args)[game_name]
    calls = {
        name: functools.partial(run, game, algorithm, T=T, eta=0.2, **{"record_trajectory": False, **settings})
        for name, settings in _variants(T, game_name.startswith("discounted")).items()
    }
    wall, cpu = _interleaved(calls, args.repeats)
    row = {"default_it_s": T / wall["default"]}
    for name, base in _BASE.items():
        if name not in calls:
            continue
        row[f"{name}_over_default"] = wall[name] / wall[base]
        row[f"{name}_over_default_cpu"] = cpu[name] / cpu[base]
    return row


def _in_processes(game_name: str, algorithm: str, args) -> dict:
    """``args.processes`` fresh processes' ratios of one (game, algorithm): their medians and ranges."""
    command = [sys.executable, __file__, "--single", game_name, algorithm, "--T", str(args.T)]
    command += ["--medium-T", str(args.medium_T), "--repeats", str(args.repeats)]
    # Pinned to one core, a process's ratio no longer depends on where its threads happen to run.
    pin = None if args.pin is None else (lambda: os.sched_setaffinity(0, {args.pin}))
    rows = [
        json.loads(subprocess.run(command, check=True, capture_output=True, text=True, preexec_fn=pin).stdout.splitlines()[-1])
        for _ in range(args.processes)
    ]
    out = {"game": game_name, "algorithm": algorithm, "T": _games(args)[game_name][1], "processes": rows}
    for key in rows[0]:
        values = [r[key] for r in rows]
        out[key] = statistics.median(values)
        out[key + "_range"] = [min(values), max(values)]
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=200_000)
    parser.add_argument("--medium-T", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--algorithms", nargs="+", default=["smooth_cce", "rm-plus+smooth-linear", "stage_cce"])
    parser.add_argument("--discounted-algorithms", nargs="+", default=["hedge+discounted-smooth"])
    parser.add_argument("--games", nargs="+", choices=["paper", "medium", "discounted", "discounted-medium"], default=None)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--pin", type=int, default=None, metavar="CPU", help="run each process on this core alone")
    parser.add_argument("--single", nargs=2, metavar=("GAME", "ALGORITHM"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.single:
        print(json.dumps(_one_process(*args.single, args)))
        return {}
    rows = []
    for game_name in args.games or list(_games(args)):
        for algorithm in args.discounted_algorithms if game_name.startswith("discounted") else args.algorithms:
            rows.append(_in_processes(game_name, algorithm, args))
            print({k: v for k, v in rows[-1].items() if k != "processes"}, flush=True)
    names = list(_BASE)
    print(f"Median over {args.processes} processes [range]; wall; CPU:")
    print("| game | algorithm | T | default it/s | " + " | ".join(f"{n} / {_BASE[n]}" for n in names) + " |")
    print("|---|---|---:|---:|" + "---:|" * len(names))
    for r in rows:
        cells = []
        for n in names:
            w, c = f"{n}_over_default", f"{n}_over_default_cpu"
            if w not in r:
                cells.append("-")
                continue
            cells.append(f"{r[w]:.2f} [{r[w + '_range'][0]:.2f}-{r[w + '_range'][1]:.2f}]; {r[c]:.2f}")
        print(f"| {r['game']} | {r['algorithm']} | {r['T']} | {r['default_it_s']:,.0f} | " + " | ".join(cells) + " |")
    out = {"repeats": args.repeats, "processes": args.processes, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
