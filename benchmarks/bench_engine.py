"""Benchmark: the compiled JAX engine against a plain NumPy loop computing the same quantities.

For each algorithm (smooth_ce, stage_cce, smooth_cce) on the paper's game with eta = 0.2:

* engine iterations/s of ``markovgames.dynamics.run`` with the per-prefix metrics (always on) and
  the trajectory recorded, excluding compilation (the first call compiles; the timed calls are
  identical later calls, best of ``--repeats``);
* the engine's compile overhead (first call's wall time minus the best steady call's);
* the NumPy loop's (``benchmarks/numpy_loop.py``) iterations/s on a smaller ``--numpy-T``, and the
  ratio engine / NumPy (engine and NumPy repetitions are interleaved so that both see the same
  background load; the best of each is kept). The ratio of process CPU times is reported as well:
  on a shared machine it is the less load-sensitive of the two;
* a batch of 64 runs through ``markovgames.dynamics.run_batch`` (``record_trajectory=False``, its
  default), reported as run-iterations/s (runs x iterations / second);
* a medium random game (N=3, H=5, S=20, A=(4,4,4), seeded): engine and NumPy single-run it/s.

Before reporting, it checks that the engine and the NumPy loop agree on the prefix metrics
(value, certified CE and CCE bounds) at the NumPy run's last prefix within 1e-9, so a ratio never
compares different computations.

Usage::

    python benchmarks/bench_engine.py [--T 100000] [--numpy-T 5000] [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
from _timing import best_of  # noqa: E402
from numpy_loop import run_numpy  # noqa: E402

from markovgames import MarkovGame  # noqa: E402
from markovgames.dynamics import run, run_batch  # noqa: E402
from markovgames.games import paper_game  # noqa: E402

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")
METRICS = ("value", "certified_ce_bound", "certified_cce_bound")
AGREEMENT_TOL = 1e-9
ETA = 0.2


def medium_game(seed: int = 2024) -> MarkovGame:
    """A random N=3, H=5, S=20, A=(4,4,4) game: Uniform[0,1] rewards, Dirichlet(1) transition rows."""
    rng = np.random.default_rng(seed)
    horizon, num_players, num_states, acts = 5, 3, 20, (4, 4, 4)
    rewards = rng.random((horizon, num_players, num_states, *acts))
    transitions = rng.dirichlet(np.ones(num_states), size=(horizon, num_states, *acts))
    return MarkovGame(rewards, transitions, 0, name=f"medium-random-{seed}")


def machine_info() -> dict:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    import jaxlib

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "load_average_at_start": load,
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }


def _check_agreement(engine, baseline, numpy_T: int, label: str) -> float:
    """Assert the engine's prefix metrics at ``numpy_T`` equal the NumPy loop's last row (1e-9)."""
    row = numpy_T - 1
    worst = 0.0
    for key in METRICS:
        diff = float(np.max(np.abs(np.asarray(getattr(engine, key))[row] - baseline[key][row])))
        assert diff <= AGREEMENT_TOL, f"{label}: engine and NumPy disagree on {key} at T'={numpy_T}: {diff:.3e}"
        worst = max(worst, diff)
    if engine.policies is not None:
        for i, pol in enumerate(engine.policies):
            diff = float(np.max(np.abs(np.asarray(pol[row]) - baseline["policies"][i][row])))
            assert diff <= AGREEMENT_TOL, f"{label}: engine and NumPy disagree on pi^{numpy_T} of player {i}: {diff:.3e}"
            worst = max(worst, diff)
    return worst


def bench_single(game, algorithm, T, numpy_T, repeats, label):
    """Engine (record trajectory, metrics) vs NumPy loop on one game."""
    if numpy_T > T:
        raise ValueError("--numpy-T must not exceed --T (the agreement check reads the engine's row numpy_T)")

    def call():
        return run(game, algorithm, T=T, eta=ETA, record_trajectory=True)

    t0 = time.perf_counter()
    first = call()  # compiles (every chunk shape of this T)
    first_wall = time.perf_counter() - t0

    def numpy_call():
        return run_numpy(game, algorithm, numpy_T, ETA)

    # Interleave engine and NumPy repetitions so both see the same background load; keep the best.
    engine_wall = engine_cpu = np_wall = np_cpu = float("inf")
    for _ in range(repeats):
        w, c, result = best_of(call, 1)
        engine_wall, engine_cpu = min(engine_wall, w), min(engine_cpu, c)
        w, c, baseline = best_of(numpy_call, 1)
        np_wall, np_cpu = min(np_wall, w), min(np_cpu, c)
    max_diff = _check_agreement(result, baseline, numpy_T, f"{label}/{algorithm}")
    engine_rate = T / engine_wall
    numpy_rate = numpy_T / np_wall
    return {
        "algorithm": algorithm,
        "game": label,
        "T": T,
        "numpy_T": numpy_T,
        "engine_s": engine_wall,
        "engine_cpu_s": engine_cpu,
        "engine_it_per_s": engine_rate,
        "engine_first_call_s": first_wall,
        "compile_s": max(first_wall - engine_wall, 0.0),
        "engine_reported_compile_time_s": first.compile_time_s,
        "numpy_s": np_wall,
        "numpy_cpu_s": np_cpu,
        "numpy_it_per_s": numpy_rate,
        "ratio": engine_rate / numpy_rate,
        "ratio_cpu_time": (T / engine_cpu) / (numpy_T / np_cpu),
        "agreement_max_abs_diff": max_diff,
    }


def bench_batch(game, algorithm, T, batch, repeats, single_reference=None):
    """``run_batch`` of ``batch`` identical runs (eta 0.2): runs x iterations per second."""

    def call():
        return run_batch(game, algorithm, T=T, etas=[ETA] * batch)

    call()  # compile
    best, _, result = best_of(call, repeats)
    if single_reference is not None and single_reference.T >= T:
        for key in METRICS:
            diff = np.max(np.abs(getattr(result, key)[:, T - 1] - getattr(single_reference, key)[T - 1]))
            assert diff <= AGREEMENT_TOL, f"batch/{algorithm}: batch and single run disagree on {key}: {diff:.3e}"
    return {"batch": batch, "batch_T": T, "batch_s": best, "batch_run_it_per_s": batch * T / best}


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def markdown_tables(results: dict) -> str:
    lines = []
    cfg = results["config"]
    b = cfg["batch_size"]
    lines.append(
        f"Paper game (N=2, H=2, S=2, A=(2,2)), eta={ETA}; engine T={cfg['T']}, NumPy T={cfg['numpy_T']}, batch T={cfg['batch_T']}"
    )
    lines.append("")
    lines.append(f"| algorithm | engine it/s | numpy it/s | ratio | compile s | batch-{b} run-it/s | ratio (CPU time) |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for row in results["paper"]:
        lines.append(
            f"| {row['algorithm']} | {_fmt_rate(row['engine_it_per_s'])} | {_fmt_rate(row['numpy_it_per_s'])} | "
            f"{row['ratio']:.1f}x | {row['compile_s']:.2f} | {_fmt_rate(row['batch_run_it_per_s'])} | "
            f"{row['ratio_cpu_time']:.1f}x |"
        )
    if results.get("medium"):
        lines.append("")
        lines.append(
            f"Medium random game (N=3, H=5, S=20, A=(4,4,4), seed {cfg['medium_seed']}), eta={ETA}; "
            f"engine T={cfg['medium_T']}, NumPy T={cfg['medium_numpy_T']}"
        )
        lines.append("")
        lines.append("| algorithm | engine it/s | numpy it/s | ratio | compile s | ratio (CPU time) |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        for row in results["medium"]:
            lines.append(
                f"| {row['algorithm']} | {_fmt_rate(row['engine_it_per_s'])} | {_fmt_rate(row['numpy_it_per_s'])} | "
                f"{row['ratio']:.1f}x | {row['compile_s']:.2f} | {row['ratio_cpu_time']:.1f}x |"
            )
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=100_000, help="engine iterations on the paper game")
    parser.add_argument("--numpy-T", type=int, default=5_000, help="NumPy-loop iterations on the paper game")
    # 25,000 iterations of 64 paper games is a long run (the engine's SHORT_RUN_WORK): the batch
    # compiles with the default emitters, whose loops this measures.
    parser.add_argument("--batch-T", type=int, default=25_000, help="iterations of each run in the batch")
    parser.add_argument("--batch-size", type=int, default=64, help="runs in the run_batch measurement")
    parser.add_argument("--medium-T", type=int, default=2_000, help="engine iterations on the medium game")
    parser.add_argument("--medium-numpy-T", type=int, default=200, help="NumPy iterations on the medium game")
    parser.add_argument("--medium-seed", type=int, default=2024)
    parser.add_argument("--no-medium", action="store_true", help="skip the medium game")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions (best is reported)")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    parser.add_argument("--json", type=Path, default=None, help="also write all numbers to this JSON file")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (small T, one repetition)")
    args = parser.parse_args(argv)
    if args.quick:
        args.T, args.numpy_T, args.batch_T = 2_000, 200, 500
        args.medium_T, args.medium_numpy_T, args.repeats = 100, 10, 1

    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(sys.argv[1:] if argv is None else argv)])
    info = machine_info()
    config = {
        "T": args.T,
        "numpy_T": args.numpy_T,
        "batch_T": args.batch_T,
        "batch_size": args.batch_size,
        "medium_T": args.medium_T,
        "medium_numpy_T": args.medium_numpy_T,
        "medium_seed": args.medium_seed,
        "repeats": args.repeats,
        "eta": ETA,
        "dtype": "float64",
        "quick": args.quick,
    }
    results = {"command": command, "machine": info, "config": config, "paper": [], "medium": []}

    game = paper_game()
    for algorithm in args.algorithms:
        print(f"[paper] {algorithm}: engine T={args.T}, NumPy T={args.numpy_T} ...", file=sys.stderr, flush=True)
        row = bench_single(game, algorithm, args.T, args.numpy_T, args.repeats, "paper")
        single = run(game, algorithm, T=args.batch_T, eta=ETA, record_trajectory=False)
        row.update(bench_batch(game, algorithm, args.batch_T, args.batch_size, args.repeats, single))
        results["paper"].append(row)
        print(
            f"    engine {row['engine_it_per_s']:,.0f} it/s, NumPy {row['numpy_it_per_s']:,.0f} it/s, "
            f"ratio {row['ratio']:.1f}x, compile {row['compile_s']:.2f} s, "
            f"batch {row['batch_run_it_per_s']:,.0f} run-it/s",
            file=sys.stderr,
            flush=True,
        )

    if not args.no_medium:
        medium = medium_game(args.medium_seed)
        for algorithm in args.algorithms:
            print(f"[medium] {algorithm} ...", file=sys.stderr, flush=True)
            row = bench_single(medium, algorithm, args.medium_T, args.medium_numpy_T, args.repeats, "medium")
            results["medium"].append(row)
            print(
                f"    engine {row['engine_it_per_s']:,.0f} it/s, NumPy {row['numpy_it_per_s']:,.0f} it/s, "
                f"ratio {row['ratio']:.1f}x",
                file=sys.stderr,
                flush=True,
            )

    try:
        results["machine"]["load_average_at_end"] = os.getloadavg()
    except OSError:
        pass
    table = markdown_tables(results)
    results["markdown"] = table
    m = info
    print(table)
    print()
    print(
        f"Machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), JAX {m['jax']} "
        f"(jaxlib {m['jaxlib']}, backend {m['jax_backend']}), NumPy {m['numpy']}, Python {m['python']}; {m['date']}"
    )
    load_end = results["machine"].get("load_average_at_end")
    print(f"Load average at start / end: {m['load_average_at_start']} / {load_end}")
    xla_flags = m["xla_flags"]
    print(f"Command: {command if not xla_flags else f'XLA_FLAGS={shlex.quote(xla_flags)} {command}'}")
    print(
        f"Engine and NumPy loop agree on the last-prefix metrics within {AGREEMENT_TOL:g} "
        f"(max |diff| {max(r['agreement_max_abs_diff'] for r in results['paper'] + results['medium']):.1e})."
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"Wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
