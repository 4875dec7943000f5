"""GPU check and benchmark: correctness against the float64 NumPy loop, float32 error, batch throughput.

Run from the repository root on a machine with a CUDA GPU and JAX installed:

    PYTHONPATH=src python benchmarks/gpu.py [--quick] [--json results.json]

1. Correctness: single runs of the three algorithms on the GPU (float64) against the NumPy loop
   of ``benchmarks/numpy_loop.py`` (float64, CPU): max |difference| of policies and metrics.
2. Float32 on the GPU: max |difference| of the metrics against float64, over a batch of runs.
3. Throughput: ``run_batch`` of B runs of the paper game's size (B learning rates), metrics on
   (kept at the final T only), no trajectory, float64 and float32: run-iterations per second,
   with the same script's figure on the machine's CPU beside it.
4. A large game (N=2, H=10, S=500, A=(5,5), dense): single-run iterations per second.
5. The large sparse game of ``benchmarks/bench_scale.py`` (N=2, H=10, S=10^4, A=(5,5), 8 successors
   per row): single-run iterations per second, metrics on, no trajectory.
6. Where the batch's time goes: float64 run-iterations/s and milliseconds per iteration for batch
   sizes from 1 to 10^6 (a per-iteration time that does not grow with ``B`` is a latency floor:
   kernel launches and loop control, not memory traffic), and a ``jax.profiler`` trace of one
   batch call summarised as kernels per iteration and the kernels that take the most time.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
from numpy_loop import run_numpy  # noqa: E402

from markovgames.dynamics import run, run_batch  # noqa: E402
from markovgames.games import paper_game, random_game  # noqa: E402

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")


def timed(fn):
    fn()  # compile and warm up
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def correctness(T: int) -> list[dict]:
    rows = []
    games = [paper_game(), random_game(3, 2, 3, (2, 3, 2), seed_or_rng=7)]
    for game in games:
        for alg in ALGORITHMS:
            t_len = T if game.name == "paper" else T // 4
            gpu = run(game, alg, T=t_len, eta=0.2)
            ref = run_numpy(game, alg, t_len, 0.2)
            diff_metrics = max(
                float(np.max(np.abs(gpu.value - ref["value"]))),
                float(np.max(np.abs(gpu.certified_ce_bound - ref["certified_ce_bound"]))),
                float(np.max(np.abs(gpu.certified_cce_bound - ref["certified_cce_bound"]))),
            )
            diff_pol = max(float(np.max(np.abs(a - b))) for a, b in zip(gpu.policies, ref["policies"], strict=True))
            rows.append(
                {"game": game.name, "algorithm": alg, "T": t_len, "max_diff_metrics": diff_metrics, "max_diff_policies": diff_pol}
            )
            print(
                f"  {game.name:10s} {alg:11s} T={t_len}: max|GPU f64 - NumPy f64| metrics {diff_metrics:.2e}, policies {diff_pol:.2e}",
                flush=True,
            )
    return rows


def float32_error(B: int, T: int) -> list[dict]:
    rows = []
    game = paper_game()
    etas = list(np.linspace(0.05, 0.5, B))
    for alg in ALGORITHMS:
        a = run_batch(game, alg, T=T, etas=etas, checkpoints=[10, 100, T])
        b = run_batch(game, alg, T=T, etas=etas, checkpoints=[10, 100, T], dtype="float32")
        err = float(np.max(np.abs(a.value - b.value)))
        err_gap = float(np.max(np.abs(a.certified_ce_gap - b.certified_ce_gap)))
        err_cgap = float(np.max(np.abs(a.certified_cce_gap - b.certified_cce_gap)))
        rows.append(
            {"algorithm": alg, "B": B, "T": T, "max_err_value": err, "max_err_ce_gap": err_gap, "max_err_cce_gap": err_cgap}
        )
        print(
            f"  {alg:11s} B={B} T={T}: float32 vs float64 max error value {err:.2e}, CE gap {err_gap:.2e}, CCE gap {err_cgap:.2e}",
            flush=True,
        )
    return rows


def throughput(Bs: list[int], T: int, device_kind: str) -> list[dict]:
    rows = []
    game = paper_game()
    for alg in ALGORITHMS:
        for dtype in ("float64", "float32"):
            for B in Bs:
                etas = list(np.linspace(0.05, 0.5, B))
                _, secs = timed(functools.partial(run_batch, game, alg, T=T, etas=etas, dtype=dtype, checkpoints=[T]))
                rate = B * T / secs
                rows.append(
                    {
                        "device": device_kind,
                        "algorithm": alg,
                        "dtype": dtype,
                        "B": B,
                        "T": T,
                        "seconds": secs,
                        "run_iterations_per_s": rate,
                    }
                )
                print(f"  [{device_kind}] {alg:11s} {dtype} B={B:>7d} T={T}: {rate:.3e} run-it/s ({secs:.2f} s)", flush=True)
    return rows


def large_game(T: int) -> list[dict]:
    rows = []
    game = random_game(2, 10, 500, (5, 5), seed_or_rng=11)
    for alg in ALGORITHMS:
        _, secs = timed(functools.partial(run, game, alg, T=T, eta=0.2, record_trajectory=False, checkpoints=[T]))
        rows.append({"algorithm": alg, "T": T, "iterations_per_s": T / secs})
        print(f"  large game {alg:11s}: {T / secs:,.0f} it/s", flush=True)
    return rows


def large_sparse_game(T: int) -> list[dict]:
    rows = []
    game = random_game(2, 10, 10**4, (5, 5), seed_or_rng=0, num_successors=8)
    for alg in ALGORITHMS:
        t_alg = T if alg != "stage_cce" else 10 * T
        _, secs = timed(functools.partial(run, game, alg, T=t_alg, eta=0.2, record_trajectory=False, checkpoints=[t_alg]))
        rows.append({"algorithm": alg, "T": t_alg, "iterations_per_s": t_alg / secs})
        print(f"  large sparse game {alg:11s}: {t_alg / secs:,.1f} it/s", flush=True)
    return rows


def batch_scaling(Bs: list[int], T: int) -> list[dict]:
    """Float64 run-iterations/s and ms per iteration against the batch size (section 6)."""
    rows = []
    game = paper_game()
    for alg in ("smooth_ce", "stage_cce"):
        for B in Bs:
            etas = list(np.linspace(0.05, 0.5, B))
            _, secs = timed(functools.partial(run_batch, game, alg, T=T, etas=etas, checkpoints=[T]))
            rows.append(
                {
                    "algorithm": alg,
                    "B": B,
                    "T": T,
                    "seconds": secs,
                    "run_iterations_per_s": B * T / secs,
                    "ms_per_iteration": 1e3 * secs / T,
                }
            )
            print(
                f"  {alg:11s} float64 B={B:>8d} T={T}: {B * T / secs:.3e} run-it/s, {1e3 * secs / T:.3f} ms per iteration",
                flush=True,
            )
    return rows


def profile_summary(B: int, T: int, top: int = 12) -> dict:
    """Trace one batch call per algorithm with ``jax.profiler``; count and rank the device kernels.

    The trace's Chrome-format events (``*.trace.json.gz``) are grouped by name; events on the host
    thread of Python calls (names starting with ``$``) are left out. Returns per algorithm the
    events per iteration and the ``top`` names by total time; where the profiler cannot run
    (no CUPTI, say) the reason is recorded instead.
    """
    import collections
    import glob
    import gzip
    import tempfile

    game = paper_game()
    out = {}
    for alg in ALGORITHMS:
        etas = list(np.linspace(0.05, 0.5, B))
        call = functools.partial(run_batch, game, alg, T=T, etas=etas, checkpoints=[T])
        try:
            call()  # compile outside the trace
            with tempfile.TemporaryDirectory() as tmp:
                jax.profiler.start_trace(tmp)
                try:
                    call()
                finally:
                    jax.profiler.stop_trace()
                files = glob.glob(os.path.join(tmp, "plugins", "profile", "*", "*.trace.json.gz"))
                if not files:
                    raise RuntimeError("the profiler wrote no trace.json.gz")
                events = json.load(gzip.open(files[0]))["traceEvents"]
        except Exception as err:  # noqa: BLE001 - the profile is a diagnostic; report why it is missing
            out[alg] = {"error": f"{type(err).__name__}: {err}"}
            print(f"  profile {alg}: unavailable ({type(err).__name__}: {err})", flush=True)
            continue
        pids = {
            e["pid"]: e.get("args", {}).get("name", "") for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
        }
        kernels = [e for e in events if e.get("ph") == "X" and not e["name"].startswith("$")]
        device = [e for e in kernels if "gpu" in pids.get(e["pid"], "").lower() or "device" in pids.get(e["pid"], "").lower()]
        chosen = device or kernels
        total = collections.Counter()
        count = collections.Counter()
        for e in chosen:
            total[e["name"]] += e.get("dur", 0)
            count[e["name"]] += 1
        rows = [{"name": n[:120], "total_ms": t / 1e3, "per_iteration": count[n] / T} for n, t in total.most_common(top)]
        out[alg] = {
            "B": B,
            "T": T,
            "device_events": bool(device),
            "events_per_iteration": len(chosen) / T,
            "busy_ms": sum(total.values()) / 1e3,
            "top": rows,
        }
        print(
            f"  profile {alg} B={B} T={T}: {len(chosen) / T:.1f} {'device' if device else 'host'} events per iteration, "
            f"{sum(total.values()) / 1e3:.1f} ms busy in all",
            flush=True,
        )
        for r in rows:
            print(f"    {r['total_ms']:9.2f} ms  {r['per_iteration']:6.2f}/it  {r['name']}", flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    quick = args.quick
    info = {
        "jax": jax.__version__,
        "devices": [str(d) for d in jax.devices()],
        "backend": jax.default_backend(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(info), flush=True)
    results = {"info": info}
    print("1. correctness (GPU float64 vs NumPy float64)", flush=True)
    results["correctness"] = correctness(300 if quick else 2000)
    print("2. float32 error", flush=True)
    results["float32"] = float32_error(256 if quick else 4096, 300 if quick else 2000)
    print("3. throughput", flush=True)
    T = 200 if quick else 1000
    results["throughput"] = throughput([1024] if quick else [10_000, 100_000], T, jax.default_backend())
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        results["throughput"] += throughput([1024], T, "cpu")
    print("4. large game", flush=True)
    results["large_game"] = large_game(50 if quick else 300)
    print("5. large sparse game", flush=True)
    results["large_sparse_game"] = large_sparse_game(5 if quick else 50)
    print("6. where the batch's time goes", flush=True)
    results["batch_scaling"] = batch_scaling(
        [1, 100, 10_000] if quick else [1, 100, 10_000, 100_000, 1_000_000], 50 if quick else 200
    )
    results["profile"] = profile_summary(1000 if quick else 100_000, 50 if quick else 200)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
