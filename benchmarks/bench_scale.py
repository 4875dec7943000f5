r"""Benchmark: how the engine scales (batches, game size, players) and how far it is from machine bounds.

Four sections, each selectable with ``--only SECTION`` (repeatable). All runs are float64, with
the per-prefix metrics computed inside the compiled loop (they always are) and no trajectory
(``record_trajectory=False``); ``checkpoints=[T]`` keeps only the final metrics on the host.
Wall clock is taken around the whole public call (``run`` / ``run_batch``), so per-call setup
(argument checks, the run fingerprint, copies to the device) is included. A timing is the best
of ``--repeats`` identical calls made after a warm-up call of the same shape (which compiles),
except in ``large`` (one timed call, see below).

``batch``
    The paper game, ``B = 1024`` runs with learning rates ``np.linspace(0.05, 0.5, B)`` in one
    ``run_batch`` call: run-iterations/s ``= B T / wall``. In the same run, a single ``run`` of the
    same ``T`` (the middle learning rate; its final metrics are compared with the batch's row), and
    a long single run (``T`` chosen for ~1 s) for the steady single-run rate. Ratio = batch run-it/s
    / single it/s.

``medium``
    A dense ``random_game(3, 5, 20, (4, 4, 4), seed_or_rng=2024)``: single-run it/s, next to
    (a) an arithmetic bound ``peak multiply-adds/s / multiply-adds per iteration`` and (b) a memory
    bound ``copy bandwidth / bytes per iteration``; the ratio bound / achieved says how far the
    engine is from each. The medium game's working set (~2 MB) stays in the caches, which are
    faster than the DRAM copy bandwidth used here, so (b) is not a strict bound for this game: it
    is the rate at which the engine's arrays could be streamed from memory.

``players``
    Dense random games with ``N = 2..6`` players, ``A_i = 2``, ``H = 2``, ``S = 2`` (seed 7):
    single-run it/s per algorithm, and the joint action count ``2^N``.

``large``
    The sparse ``random_game(2, 10, 10**4, (5, 5), seed_or_rng=0, num_successors=8)``. Each
    algorithm runs in a fresh subprocess (``--child``), which builds the game, calls ``run`` with
    ``T = 1`` twice (the second call is timed: the per-call fixed cost), then with the section's
    ``T`` twice (a warm-up, then the timed call). Reported: it/s ``= T / wall``, the marginal it/s of
    iterations ``2..T`` ``= (T - 1) / (wall_T - wall_1)``, a memory floor (bandwidth / bytes one
    iteration must move) and the peak resident memory of the subprocess, beside the size of the
    game's arrays and the subprocess's peak right after its imports. The peak is the child's
    ``VmHWM`` (``/proc/self/status``); its ``ru_maxrss`` and the parent's ``RUSAGE_CHILDREN`` are
    recorded too, but they start from the parent's own peak (Linux carries the pre-``exec``
    high-water mark into the child), so they overstate a small child's memory. stage_cce's timed
    ``T`` includes its stage ends and its first stage, whose ``L_1 = H`` iterations each recompute
    the output-policy recursion (a full pass over the transitions); its floor is given for one
    ordinary iteration and amortised over the whole call.

Machine figures (measured once, before the sections, when ``medium`` or ``large`` is selected)
    peak: best of ``--repeats`` ``n x n`` float64 matrix products (NumPy and ``jax.jit(jnp.dot)``),
    ``n^3`` multiply-adds each (``2 n^3`` flops); the larger of the two rates is used. bandwidth:
    best of ``--repeats`` + 2 ``np.copyto`` of a 256 MiB float64 array into a preallocated (touched)
    one, counting read + write bytes (``2 x 256 MiB``), on one thread.

Counting
    The multiply-adds and bytes of an iteration are counted as the docstring of ``_scale_counts.py`` says.

Usage::

    python benchmarks/bench_scale.py [--only batch|medium|players|large] [--json PATH] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
import traceback
from dataclasses import asdict

import jax
import jax.numpy as jnp
import numpy as np

from markovgames.dynamics import run, run_batch
from markovgames.games import paper_game, random_game

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scale_counts import F64, I32, Dims, smooth_bytes, smooth_fma, stage_bytes, stage_fma  # noqa: E402
from _timing import best_of  # noqa: E402

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")
SECTIONS = ("batch", "medium", "players", "large")
MIB = 2**20

# Iteration counts chosen on the 2-core reference machine so that one timed call takes ~1-3 s
# (`--time-scale` multiplies them). Quick mode uses the tiny QUICK_* values instead.
BATCH_SIZE = 1024
# At least 1,500 iterations: a batch of 1024 paper games is then a long run (the engine's
# SHORT_RUN_WORK), compiled with XLA's default emitters like the measurements before that rule.
BATCH_T = {"smooth_ce": 1500, "stage_cce": 4000, "smooth_cce": 1500}
BATCH_LONG_T = {"smooth_ce": 300_000, "stage_cce": 2_000_000, "smooth_cce": 500_000}
MEDIUM_T = {"smooth_ce": 4000, "stage_cce": 30_000, "smooth_cce": 5000}
PLAYERS = (2, 3, 4, 5, 6)
PLAYERS_T = {  # per N = 2..6: the rate falls with the joint action count 2^N
    "smooth_ce": (300_000, 100_000, 60_000, 40_000, 20_000),
    "stage_cce": (2_000_000, 800_000, 500_000, 400_000, 200_000),
    "smooth_cce": (400_000, 300_000, 120_000, 40_000, 25_000),
}
LARGE_T = {"smooth_ce": 16, "stage_cce": 200, "smooth_cce": 16}

QUICK_BATCH_SIZE = 16
QUICK_BATCH_T = {a: 100 for a in ALGORITHMS}
QUICK_BATCH_LONG_T = {a: 1000 for a in ALGORITHMS}
QUICK_MEDIUM_T = {a: 50 for a in ALGORITHMS}
QUICK_PLAYERS = (2, 3)
QUICK_PLAYERS_T = {a: (200, 200) for a in ALGORITHMS}
QUICK_LARGE_T = {"smooth_ce": 2, "stage_cce": 12, "smooth_cce": 2}

MEDIUM_SPEC = {"num_players": 3, "horizon": 5, "num_states": 20, "num_actions": (4, 4, 4), "seed": 2024}
PLAYERS_SEED = 7
LARGE_SPEC = {"num_players": 2, "horizon": 10, "num_states": 10**4, "num_actions": (5, 5), "seed": 0, "num_successors": 8}
QUICK_LARGE_SPEC = {"num_players": 2, "horizon": 3, "num_states": 500, "num_actions": (3, 3), "seed": 0, "num_successors": 4}

AGREEMENT_TOL = 1e-9


# ----------------------------------------------------------------------------- machine


def cpu_model() -> str:
    """``lscpu``'s model name, else ``/proc/cpuinfo``'s, else ``platform.processor()``."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    import jaxlib

    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "processor": platform.processor(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "jax_backend": jax.default_backend(),
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "load_average_at_start": load,
    }


def measure_peak(n: int, repeats: int) -> dict:
    """Float64 matrix-multiply rate (NumPy and XLA), in multiply-adds per second (``n^3`` per product)."""
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))
    numpy_best = min(_wall(lambda: a @ b) for _ in range(repeats))
    with jax.enable_x64(True):
        dot = jax.jit(jnp.dot)
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        dot(ja, jb).block_until_ready()  # compile
        jax_best = min(_wall(lambda: dot(ja, jb).block_until_ready()) for _ in range(repeats))
    fma = n**3
    rates = {"numpy": fma / numpy_best, "jax": fma / jax_best}
    return {
        "n": n,
        "fma_per_product": fma,
        "numpy_fma_per_s": rates["numpy"],
        "jax_fma_per_s": rates["jax"],
        "peak_fma_per_s": max(rates.values()),
        "peak_flops_per_s": 2 * max(rates.values()),
    }


def measure_bandwidth(nbytes: int, repeats: int) -> dict:
    """``np.copyto`` of ``nbytes`` into a preallocated array: (read + write) bytes per second."""
    src = np.random.default_rng(1).random(nbytes // F64)
    dst = np.zeros_like(src)  # zeros_like touches no pages; the first copy would page-fault,
    dst.fill(1.0)  # so touch them before timing
    best = min(_wall(lambda: np.copyto(dst, src)) for _ in range(repeats))
    return {
        "array_bytes": src.nbytes,
        "bytes_moved_per_copy": 2 * src.nbytes,
        "best_s": best,
        "bandwidth_bytes_per_s": 2 * src.nbytes / best,
    }


def calibrate(args) -> dict:
    print("[calibration] matrix-multiply peak and copy bandwidth ...", file=sys.stderr, flush=True)
    return {
        "peak": measure_peak(512 if args.quick else 2048, args.repeats),
        "bandwidth": measure_bandwidth((32 if args.quick else 256) * MIB, args.repeats + 2),
    }


# ----------------------------------------------------------------------------- timing


def _wall(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def time_single(game, algorithm: str, T: int, repeats: int, eta: float = 0.2) -> dict:
    """Single-run it/s: a compiling warm-up call, then the best of ``repeats`` identical calls."""

    def call():
        return run(game, algorithm, T, eta=eta, record_trajectory=False, checkpoints=[T])

    first = _wall(call)
    wall, cpu, result = best_of(call, repeats)
    return {
        "T": T,
        "first_call_s": first,
        "best_s": wall,
        "best_cpu_s": cpu,
        "it_per_s": T / wall,
        "engine_wall_time_s": result.wall_time_s,
        "result": result,
    }


# ----------------------------------------------------------------------------- sections


def section_batch(args) -> list[dict]:
    game = paper_game()
    size = QUICK_BATCH_SIZE if args.quick else BATCH_SIZE
    etas = np.linspace(0.05, 0.5, size)
    middle = size // 2
    rows = []
    for algorithm in args.algorithms:
        T = _T(args, QUICK_BATCH_T if args.quick else BATCH_T, algorithm)
        long_T = _T(args, QUICK_BATCH_LONG_T if args.quick else BATCH_LONG_T, algorithm)
        print(f"[batch] {algorithm}: B={size}, T={T} ...", file=sys.stderr, flush=True)

        call = functools.partial(run_batch, game, algorithm, T, etas=etas.tolist(), record_trajectory=False, checkpoints=[T])

        first = _wall(call)
        wall, cpu, batch = best_of(call, args.repeats)
        # A single run of the same T is a few ms: take the best of more repetitions.
        single = time_single(game, algorithm, T, max(args.repeats, 20), eta=float(etas[middle]))
        diff = max(
            float(np.max(np.abs(getattr(batch, key)[middle, -1] - getattr(single["result"], key)[-1])))
            for key in ("value", "certified_cce_bound", "certified_ce_bound")
        )
        if not diff <= AGREEMENT_TOL:
            print(f"    WARNING: batch row {middle} and the single run differ by {diff:.3e}", file=sys.stderr)
        long = time_single(game, algorithm, long_T, args.repeats, eta=float(etas[middle]))
        rate = size * T / wall
        rows.append(
            {
                "algorithm": algorithm,
                "batch": size,
                "T": T,
                "etas": "np.linspace(0.05, 0.5, B)",
                "first_call_s": first,
                "best_s": wall,
                "best_cpu_s": cpu,
                "run_it_per_s": rate,
                "single_same_T": _public(single),
                "single_long": _public(long),
                "ratio_batch_over_single": rate / single["it_per_s"],
                "ratio_batch_over_single_long": rate / long["it_per_s"],
                "batch_vs_single_max_abs_diff": diff,
            }
        )
        print(
            f"    {rate:,.0f} run-it/s; single {single['it_per_s']:,.0f} it/s (T={T}), {long['it_per_s']:,.0f} it/s (T={long_T})",
            file=sys.stderr,
            flush=True,
        )
    return rows


def section_medium(args, calibration: dict) -> list[dict]:
    spec = MEDIUM_SPEC
    game = random_game(spec["num_players"], spec["horizon"], spec["num_states"], spec["num_actions"], seed_or_rng=spec["seed"])
    d = Dims.from_game(game)
    peak = calibration["peak"]["peak_fma_per_s"]
    bandwidth = calibration["bandwidth"]["bandwidth_bytes_per_s"]
    rows = []
    for algorithm in args.algorithms:
        T = _T(args, QUICK_MEDIUM_T if args.quick else MEDIUM_T, algorithm)
        print(f"[medium] {algorithm}: T={T} ...", file=sys.stderr, flush=True)
        timing = time_single(game, algorithm, T, args.repeats)
        if algorithm == "stage_cce":
            # The bound of the timed call: ordinary iterations plus its first stage and stage ends.
            fma, nbytes = stage_fma(d, T), stage_bytes(d, T)
            fma_total, bytes_total = fma["amortised"], nbytes["amortised"]
        else:
            fma, nbytes = smooth_fma(d, algorithm), smooth_bytes(d, algorithm)
            fma_total, bytes_total = fma["total"], nbytes["total"]
        achieved = timing["it_per_s"]
        rows.append(
            {
                "algorithm": algorithm,
                "timing": _public(timing),
                "it_per_s": achieved,
                "fma_per_iteration": fma_total,
                "fma_counted": fma,
                "arithmetic_bound_it_per_s": peak / fma_total,
                "arithmetic_ratio_bound_over_achieved": peak / fma_total / achieved,
                "bytes_per_iteration": bytes_total,
                "bytes_counted": nbytes,
                "memory_bound_it_per_s": bandwidth / bytes_total,
                "memory_ratio_bound_over_achieved": bandwidth / bytes_total / achieved,
            }
        )
        print(f"    {achieved:,.0f} it/s", file=sys.stderr, flush=True)
    return rows


def section_players(args) -> list[dict]:
    counts = QUICK_PLAYERS if args.quick else PLAYERS
    table = QUICK_PLAYERS_T if args.quick else PLAYERS_T
    rows = []
    for k, n in enumerate(counts):
        game = random_game(n, 2, 2, 2, seed_or_rng=PLAYERS_SEED)
        row = {
            "N": n,
            "joint_actions": int(game.num_joint_actions),
            "H": 2,
            "S": 2,
            "A_i": 2,
            "seed": PLAYERS_SEED,
            "algorithms": {},
        }
        for algorithm in args.algorithms:
            T = max(1, int(table[algorithm][k] * args.time_scale))
            print(f"[players] N={n} {algorithm}: T={T} ...", file=sys.stderr, flush=True)
            row["algorithms"][algorithm] = _public(time_single(game, algorithm, T, args.repeats))
        rows.append(row)
    return rows


def section_large(args, calibration: dict) -> dict:
    spec = QUICK_LARGE_SPEC if args.quick else LARGE_SPEC
    d = Dims.from_spec(spec)
    bandwidth = calibration["bandwidth"]["bandwidth_bytes_per_s"]
    rows = []
    for algorithm in args.algorithms:
        T = _T(args, QUICK_LARGE_T if args.quick else LARGE_T, algorithm)
        print(f"[large] {algorithm}: T={T}, in a subprocess ...", file=sys.stderr, flush=True)
        child = run_child(algorithm, T, args.quick)
        if algorithm == "stage_cce":
            counted = stage_bytes(d, T)
            per_iteration, amortised = counted["iteration"], counted["amortised"]
        else:
            counted = smooth_bytes(d, algorithm)
            per_iteration = amortised = counted["total"]
        achieved = child["it_per_s"]
        rows.append(
            {
                "algorithm": algorithm,
                "T": T,
                **child,
                "bytes_counted": counted,
                "bytes_per_iteration": per_iteration,
                "floor_it_per_s": bandwidth / per_iteration,
                "ratio_floor_over_achieved": bandwidth / per_iteration / achieved,
                # What the timed call as a whole (first stage and stage ends included) must move.
                "amortised_bytes_per_iteration": amortised,
                "amortised_floor_it_per_s": bandwidth / amortised,
                "amortised_ratio_floor_over_achieved": bandwidth / amortised / achieved,
            }
        )
        print(f"    {achieved:.2f} it/s, peak RSS {child['peak_rss_mib']:.0f} MiB", file=sys.stderr, flush=True)
    return {"spec": spec, "dims": asdict(d), "rows": rows}


def run_child(algorithm: str, T: int, quick: bool) -> dict:
    """Run the ``large`` measurement of one algorithm in a fresh interpreter; its JSON line is the result."""
    command = [sys.executable, os.path.abspath(__file__), "--child", algorithm, "--child-T", str(T)]
    if quick:
        command.append("--quick")
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child {algorithm} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # Linux: KiB; the maximum over all children so far, and at least this process's own peak when
    # the child was spawned (see peak_rss_mib): recorded, but the child's VmHWM is the figure to use.
    result["rusage_children_maxrss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result["parent_peak_rss_mib"] = peak_rss_mib()
    return result


def child_main(algorithm: str, T: int, quick: bool) -> None:
    """The body of ``--child``: build the large game, time ``run``, report peak memory as one JSON line."""
    spec = QUICK_LARGE_SPEC if quick else LARGE_SPEC
    hwm_import, maxrss_import = peak_rss_mib(), _maxrss_mib()
    t0 = time.perf_counter()
    game = random_game(
        spec["num_players"],
        spec["horizon"],
        spec["num_states"],
        spec["num_actions"],
        seed_or_rng=spec["seed"],
        num_successors=spec["num_successors"],
    )
    build_s = time.perf_counter() - t0
    hwm_build = peak_rss_mib()

    def call(steps):
        return run(game, algorithm, steps, eta=0.2, record_trajectory=False, checkpoints=[steps])

    call(1)  # compiles the T = 1 chunk
    wall_1 = _wall(lambda: call(1))
    first_T = _wall(lambda: call(T))  # compiles the T chunk
    t0 = time.perf_counter()
    result = call(T)
    wall_T = time.perf_counter() - t0
    sparse = game.sparse_transitions
    host = {"rewards": game.rewards.nbytes, "successors": sparse.successors.nbytes, "probabilities": sparse.probabilities.nbytes}
    device = {
        "rewards": game.rewards.size * F64,
        "successors": sparse.successors.size * I32,
        "probabilities": sparse.probabilities.size * F64,
    }
    print(
        json.dumps(
            {
                "build_s": build_s,
                "wall_T1_s": wall_1,
                "first_call_s": first_T,
                "wall_s": wall_T,
                "engine_wall_time_s": result.wall_time_s,
                "it_per_s": T / wall_T,
                "marginal_it_per_s": (T - 1) / (wall_T - wall_1) if T > 1 and wall_T > wall_1 else None,
                "game_arrays_host_bytes": host,
                "game_arrays_host_mib": sum(host.values()) / MIB,
                "game_arrays_device_bytes": device,
                "game_arrays_device_mib": sum(device.values()) / MIB,
                "successors_host_dtype": str(sparse.successors.dtype),
                "peak_rss_after_import_mib": hwm_import,
                "peak_rss_after_build_mib": hwm_build,
                "peak_rss_mib": peak_rss_mib(),
                "ru_maxrss_after_import_mib": maxrss_import,
                "ru_maxrss_mib": _maxrss_mib(),
            }
        )
    )


def peak_rss_mib() -> float:
    """This process's peak resident memory: ``VmHWM`` of ``/proc/self/status`` (Linux), else ``ru_maxrss``.

    ``ru_maxrss`` (and the parent's ``RUSAGE_CHILDREN``) of a spawned child is at least the
    parent's own peak: Linux carries the high-water mark of the pre-``exec`` address space (the
    parent's, under fork or vfork) into the child. ``VmHWM`` belongs to the new address space only.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return _maxrss_mib()


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


# ----------------------------------------------------------------------------- helpers and output


def _T(args, table: dict, algorithm: str) -> int:
    return max(1, int(table[algorithm] * args.time_scale))


def _public(timing: dict) -> dict:
    """A timing without the (non-JSON) result object."""
    return {k: v for k, v in timing.items() if k != "result"}


def _rate(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.2f}"


def markdown(results: dict) -> str:
    lines: list[str] = []
    cal = results.get("calibration")
    if cal:
        lines += [
            f"Machine: peak {cal['peak']['peak_flops_per_s'] / 1e9:.1f} GFLOP/s float64 "
            f"({cal['peak']['peak_fma_per_s'] / 1e9:.1f} G multiply-adds/s, {cal['peak']['n']}^3 matmul), "
            f"copy bandwidth {cal['bandwidth']['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s (read + write)",
            "",
        ]
    if results.get("batch"):
        b = results["batch"][0]["batch"]
        lines += [
            f"Paper game, batch of {b} runs (eta = linspace(0.05, 0.5)), float64, metrics on, no trajectory",
            "",
            f"| algorithm | T | batch-{b} run-it/s | single it/s (same T) | batch / single | "
            "single it/s (long T) | batch / single (long) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in results["batch"]:
            lines.append(
                f"| {r['algorithm']} | {r['T']} | {_rate(r['run_it_per_s'])} | "
                f"{_rate(r['single_same_T']['it_per_s'])} | {r['ratio_batch_over_single']:.2f}x | "
                f"{_rate(r['single_long']['it_per_s'])} (T={r['single_long']['T']}) | "
                f"{r['ratio_batch_over_single_long']:.2f}x |"
            )
        lines.append("")
    if results.get("medium"):
        lines += [
            "Medium dense game (N=3, H=5, S=20, A=(4,4,4), seed 2024), single run; "
            "bound / achieved = how far from the bound (stage_cce: amortised over the call)",
            "",
            "| algorithm | T | it/s | multiply-adds / it | arithmetic bound it/s | ratio | "
            "bytes / it | memory bound it/s | ratio |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in results["medium"]:
            lines.append(
                f"| {r['algorithm']} | {r['timing']['T']} | {_rate(r['it_per_s'])} | "
                f"{r['fma_per_iteration']:,.0f} | {_rate(r['arithmetic_bound_it_per_s'])} | "
                f"{r['arithmetic_ratio_bound_over_achieved']:.1f}x | {r['bytes_per_iteration']:,.0f} | "
                f"{_rate(r['memory_bound_it_per_s'])} | {r['memory_ratio_bound_over_achieved']:.1f}x |"
            )
        lines.append("")
    if results.get("players"):
        algs = list(results["players"][0]["algorithms"])
        lines += [
            "Dense random games, A_i=2, H=2, S=2, single run it/s",
            "",
            "| N | joint actions | " + " | ".join(algs) + " |",
            "|---:|---:|" + "---:|" * len(algs),
        ]
        for r in results["players"]:
            lines.append(
                f"| {r['N']} | {r['joint_actions']} | " + " | ".join(_rate(r["algorithms"][a]["it_per_s"]) for a in algs) + " |"
            )
        lines.append("")
    large = results.get("large")
    if large and large.get("rows"):
        s = large["spec"]
        lines += [
            f"Large sparse game (N={s['num_players']}, H={s['horizon']}, S={s['num_states']}, "
            f"A={tuple(s['num_actions'])}, K={s['num_successors']}), one timed call after a warm-up; "
            "floor = copy bandwidth / bytes per iteration",
            "",
            "| algorithm | T | it/s | marginal it/s | bytes / it | floor it/s | floor / achieved | "
            "amortised floor it/s | amortised floor / achieved | peak RSS MiB (after imports) | "
            "game arrays MiB (host / device) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in large["rows"]:
            lines.append(
                f"| {r['algorithm']} | {r['T']} | {_rate(r['it_per_s'])} | {_rate(r['marginal_it_per_s'])} | "
                f"{r['bytes_per_iteration'] / MIB:,.1f} MiB | {_rate(r['floor_it_per_s'])} | "
                f"{r['ratio_floor_over_achieved']:.1f}x | {_rate(r['amortised_floor_it_per_s'])} | "
                f"{r['amortised_ratio_floor_over_achieved']:.1f}x | {r['peak_rss_mib']:,.0f} "
                f"({r['peak_rss_after_import_mib']:,.0f}) | "
                f"{r['game_arrays_host_mib']:,.0f} / {r['game_arrays_device_mib']:,.0f} |"
            )
        lines.append("")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only this section (repeatable)")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions (the best is reported)")
    parser.add_argument("--time-scale", type=float, default=1.0, help="multiply every iteration count by this")
    parser.add_argument("--json", default=None, help="write all numbers to this JSON file")
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one repetition")
    parser.add_argument("--child", choices=ALGORITHMS, help=argparse.SUPPRESS)
    parser.add_argument("--child-T", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 1
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        child_main(args.child, args.child_T, args.quick)
        return 0
    raw = sys.argv[1:] if argv is None else list(argv)
    script = os.path.relpath(sys.argv[0]) if argv is None else "benchmarks/bench_scale.py"
    command = "python " + shlex.join([script, *raw])
    sections = args.only or list(SECTIONS)
    results: dict = {
        "command": command,
        "argv": raw,
        "executable": os.path.basename(sys.executable),  # the name only: no path of the machine
        "machine": machine_info(),
        "config": {
            "sections": sections,
            "algorithms": args.algorithms,
            "repeats": args.repeats,
            "time_scale": args.time_scale,
            "quick": args.quick,
            "dtype": "float64",
            "record_trajectory": False,
            "checkpoints": "[T]",
        },
        "errors": {},
    }
    if {"medium", "large"} & set(sections):
        results["calibration"] = calibrate(args)
    runners = {
        "batch": lambda: section_batch(args),
        "medium": lambda: section_medium(args, results["calibration"]),
        "players": lambda: section_players(args),
        "large": lambda: section_large(args, results["calibration"]),
    }
    for name in sections:
        t0 = time.perf_counter()
        try:
            results[name] = runners[name]()
        except Exception:  # report and go on: the other sections are still worth having
            results["errors"][name] = traceback.format_exc()
            print(f"[{name}] FAILED:\n{results['errors'][name]}", file=sys.stderr, flush=True)
        results.setdefault("section_seconds", {})[name] = time.perf_counter() - t0
    try:
        results["machine"]["load_average_at_end"] = os.getloadavg()
    except OSError:
        pass
    table = markdown(results)
    results["markdown"] = table
    m = results["machine"]
    print(table)
    print(
        f"Machine: {m['cpu']}, {m['cores']} cores; Python {m['python']}, JAX {m['jax']} (jaxlib {m['jaxlib']}), "
        f"NumPy {m['numpy']}; {m['date']}; load {m['load_average_at_start']} -> {m.get('load_average_at_end')}"
    )
    print(f"Command: {command}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2, default=_json_default)
        print(f"Wrote {args.json}")
    return 1 if results["errors"] else 0


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


if __name__ == "__main__":
    sys.exit(main())
