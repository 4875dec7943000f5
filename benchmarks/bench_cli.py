"""Benchmark: what users run. The command line's start-up, ``markovgames run`` with its defaults,
and the cost of every prefix's metrics against checkpoints only.

* **start-up**: wall time of ``markovgames --version``, ``--help``, ``run --help``,
  ``games list`` and ``summarize`` of a small sweep's results (the best and the median of
  ``--repeats`` fresh processes; with ``--base``, the revision's too, alternating, and the ratios
  base / this of the medians). ``--startup-only`` measures only these.
* **default run**: ``markovgames run --game paper --algorithm ALG -T T --out DIR --quiet`` with
  its defaults (trajectory kept on disk, ``metrics.json`` and ``curve.npz`` with every prefix), at
  ``T = 10^4`` and ``T = 2 x 10^5``; the *marginal* rate is ``(2e5 - 1e4) / (time(2e5) - time(1e4))``,
  which removes start-up and compilation (the compile cache is warmed first; best of ``--repeats``
  rounds, each running both sizes, so that they see the same background load; also the median
  over the rounds of each round's difference, which one lucky call moves less).
* **every prefix against checkpoints only** (library, one process): ``run(game, ALG, T,
  record_trajectory=False)`` (every prefix's metrics) against the same with ``checkpoints=[T]``,
  interleaved, best of ``--repeats`` each, after compiling calls: the ratio of the two times.
* with ``--in-process``, the default run also through ``markovgames.cli.main`` in this process
  (the same command without the process's start-up and exit).
* with ``--base REV``, the default run of a git revision too (checked out with ``git worktree``,
  its ``src`` first on ``PYTHONPATH``, as this tree's then is), in the same rounds, alternating
  which version goes first: the ratio this / base of the marginal rates.

The targets (marginal it/s of the default run) hold for every composition: at least 0.5M for a
swap-regret learner with the smooth update (``smooth_ce`` = ``bm-logbarrier+smooth``), 1M for an
external-regret learner with it (``smooth_cce`` = ``hedge+smooth``) and 1.5M with the stage-based
update (``stage_cce`` = ``hedge+stage``); every prefix's metrics at most 1.5x the checkpoint-only
time. ``--all-compositions`` measures every built-in ``LEARNER+UPDATE`` against them.

Usage::

    python benchmarks/bench_cli.py [--repeats 5] [--all-compositions] [--in-process] [--base REV] [--json out.json]
    python benchmarks/bench_cli.py --startup-only --base REV [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import ROOT, revision_tree  # noqa: E402

ALGORITHMS = ("smooth_ce", "stage_cce", "smooth_cce")


def target_it_s(algorithm: str) -> float:
    """The default run's marginal-rate target of an algorithm (see the module docstring)."""
    # The paper's names first: a version before compositions (PYTHONPATH=OLD/src) can be measured too.
    paper = {"smooth_ce": 0.5e6, "smooth_cce": 1.0e6, "stage_cce": 1.5e6}
    if algorithm in paper:
        return paper[algorithm]
    from markovgames.dynamics import get_algorithm

    spec = get_algorithm(algorithm)
    if spec.value_update.name == "stage":
        return 1.5e6
    return 0.5e6 if spec.learner.swap_regret else 1.0e6


def all_compositions() -> list[str]:
    from markovgames.dynamics import VALUE_UPDATES
    from markovgames.learners import BUILTIN_LEARNERS

    return [f"{learner}+{update}" for update in VALUE_UPDATES for learner in BUILTIN_LEARNERS]


def _wall(cmd, env, cwd) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr}")
    return elapsed


def startup(repeats: int, envs: dict, cwd) -> tuple[dict, dict]:
    """Best and median wall time of ``repeats`` fresh processes of each light command, per version
    (the versions alternate within each round): ``--version``, ``--help``, ``run --help``, ``games
    list``, and ``summarize`` of a small sweep's results (made first, by each version for itself:
    a release need not read the columns a later version writes)."""
    cli = [sys.executable, "-m", "markovgames"]
    config = Path(cwd) / "startup.toml"
    config.write_text('T = 20\ngames = ["paper"]\nalgorithms = ["smooth_ce"]\ncheckpoints = [10, 20]\n')
    results = {version: Path(cwd) / f"startup-sweep-{version}" for version in envs}
    for version, out in results.items():
        _wall(cli + ["sweep", str(config), "--out", str(out), "--workers", "1", "--quiet"], envs[version], cwd)
    commands = (
        ("--version", ["--version"]),
        ("--help", ["--help"]),
        ("run --help", ["run", "--help"]),
        ("games list", ["games", "list"]),
        ("summarize", ["summarize", "{results}"]),
    )
    times: dict = {version: {label: [] for label, _ in commands} for version in envs}
    for i in range(repeats):
        order = list(envs) if i % 2 == 0 else list(envs)[::-1]
        for label, args in commands:
            for version in order:
                argv = [str(results[version]) if a == "{results}" else a for a in args]
                times[version][label].append(_wall(cli + argv, envs[version], cwd))
    best = {version: {label: min(ts) for label, ts in by_label.items()} for version, by_label in times.items()}
    median = {version: {label: statistics.median(ts) for label, ts in by_label.items()} for version, by_label in times.items()}
    return best, median


def _marginal(once, repeats: int, small: int, large: int, versions=("this",)) -> dict:
    """``once(version, T, tag)`` (a timed command) for both sizes and every version: one call of
    each first (it fills the compile cache), then ``repeats`` rounds of small then large, each size
    for every version (alternating which goes first), so that all see the same background load;
    per version the best of each size and the marginal rate between them."""
    for version in versions:
        for T in (small, large):
            once(version, T, "warm")
    times = {version: {small: [], large: []} for version in versions}
    for i in range(repeats):
        order = versions if i % 2 == 0 else versions[::-1]
        for T in (small, large):
            for version in order:
                times[version][T].append(once(version, T, str(i)))
    out = {}
    for version, sizes in times.items():
        best = {T: min(ts) for T, ts in sizes.items()}
        # Also the median over rounds of each round's difference: less moved by one lucky call.
        paired = statistics.median(b - a for a, b in zip(sizes[small], sizes[large], strict=True))
        out[version] = {
            "time_small_s": best[small],
            "time_large_s": best[large],
            "marginal_it_s": (large - small) / (best[large] - best[small]),
            "marginal_median_it_s": (large - small) / paired,
        }
    return out


def default_run(algorithm: str, repeats: int, envs: dict, cwd, small: int, large: int) -> dict:
    """The default command at both sizes in fresh processes, per version (``envs``: version ->
    environment; `_marginal`). Every call writes a new directory (no ``--overwrite``: removing
    the previous run's files would be timed with the large runs)."""

    def once(version: str, T: int, tag: str) -> float:
        cmd = [sys.executable, "-m", "markovgames", "run", "--game", "paper", "--algorithm", algorithm, "-T", str(T)]
        elapsed = _wall([*cmd, "--out", f"runs/{version}-{T}-{tag}", "--quiet"], envs[version], cwd)
        shutil.rmtree(Path(cwd) / "runs", ignore_errors=True)
        return elapsed

    return _marginal(once, repeats, small, large, tuple(envs))


def default_run_in_process(algorithm: str, repeats: int, cwd, small: int, large: int) -> dict:
    """The same command through ``markovgames.cli.main`` in this process (no start-up, no exit;
    `_marginal`), the run directory written fresh each time."""
    from markovgames.cli import main as cli_main

    def once(version: str, T: int, tag: str) -> float:
        out = Path(cwd) / "runs" / f"{algorithm}-{T}-{tag}"
        args = ["run", "--game", "paper", "--algorithm", algorithm, "-T", str(T), "--out", str(out), "--quiet"]
        start = time.perf_counter()
        if cli_main(args) != 0:
            raise RuntimeError(f"markovgames {' '.join(args)} failed")
        return time.perf_counter() - start

    try:
        return _marginal(once, repeats, small, large)["this"]
    finally:
        shutil.rmtree(Path(cwd) / "runs", ignore_errors=True)


def prefix_cost(algorithm: str, T: int, repeats: int) -> dict:
    from markovgames.dynamics import run
    from markovgames.games import paper_game

    game = paper_game()
    every = lambda: run(game, algorithm, T=T, eta=0.2, record_trajectory=False)  # noqa: E731
    checkpoint = lambda: run(game, algorithm, T=T, eta=0.2, record_trajectory=False, checkpoints=[T])  # noqa: E731
    every(), checkpoint()  # compile
    best = {"every": float("inf"), "checkpoint": float("inf")}
    for _ in range(repeats):
        for key, call in (("every", every), ("checkpoint", checkpoint)):
            start = time.perf_counter()
            call()
            best[key] = min(best[key], time.perf_counter() - start)
    return {
        "every_prefix_it_s": T / best["every"],
        "checkpoint_only_it_s": T / best["checkpoint"],
        "cost_ratio": best["every"] / best["checkpoint"],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small-T", type=int, default=10_000)
    parser.add_argument("--large-T", type=int, default=200_000)
    parser.add_argument("--library-T", type=int, default=1_000_000, help="iterations of the every-prefix comparison")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS))
    parser.add_argument("--all-compositions", action="store_true", help="every built-in LEARNER+UPDATE instead")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="also measure the default run through markovgames.cli.main in this process (no start-up or exit)",
    )
    parser.add_argument("--base", default=None, help="also measure the default run of this git revision")
    parser.add_argument("--startup-only", action="store_true", help="measure only the start-up of the light commands")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.all_compositions:
        args.algorithms = all_compositions()
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        env = dict(os.environ, MARKOVGAMES_CACHE_DIR=str(Path(tmp) / "cache"))
        envs = {"this": env}
        if args.base is not None:
            base = stack.enter_context(revision_tree(args.base, Path(tmp)))
            # Both versions from a source tree on PYTHONPATH: an editable install's import hook
            # alone added about 30 ms to every start of this tree's command.
            for version, tree in (("this", ROOT), ("base", base)):
                path = os.pathsep.join([str(tree / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
                envs[version] = dict(env, PYTHONPATH=path)
            results["base"] = args.base
        started, medians = startup(args.repeats, envs, tmp)
        results["startup_s"] = started["this"]
        results["startup_median_s"] = medians["this"]
        if args.base is not None:
            results["startup_s_base"] = started["base"]
            results["startup_median_s_base"] = medians["base"]
        if args.startup_only:
            _print_startup(results, args.base)
            if args.json:
                args.json.write_text(json.dumps(results, indent=2) + "\n")
            return results
        measured = {a: default_run(a, args.repeats, envs, tmp, args.small_T, args.large_T) for a in args.algorithms}
        results["default_run"] = {a: m["this"] for a, m in measured.items()}
        if args.base is not None:
            results["default_run_base"] = {a: m["base"] for a, m in measured.items()}
        if args.in_process:
            results["default_run_in_process"] = {
                a: default_run_in_process(a, args.repeats, tmp, args.small_T, args.large_T) for a in args.algorithms
            }
    results["every_prefix"] = {a: prefix_cost(a, args.library_T, args.repeats) for a in args.algorithms}
    _print_startup(results, args.base)
    print(
        f"\n| markovgames run (defaults) | T = {args.small_T:.0e} s | T = {args.large_T:.0e} s | marginal it/s "
        "| median of the rounds' | target |\n|---|---:|---:|---:|---:|---:|"
    )
    for a, r in results["default_run"].items():
        target = target_it_s(a)
        met = "met" if r["marginal_it_s"] >= target else "not met"
        print(
            f"| {a} | {r['time_small_s']:.2f} | {r['time_large_s']:.2f} | {r['marginal_it_s']:,.0f} | "
            f"{r['marginal_median_it_s']:,.0f} | {target:,.0f} ({met}) |"
        )
    if args.base is not None:
        print(
            f"\n| default run, marginal it/s | this | base ({args.base}) | this / base | medians: this / base |"
            "\n|---|---:|---:|---:|---:|"
        )
        for a, r in results["default_run"].items():
            b = results["default_run_base"][a]
            print(
                f"| {a} | {r['marginal_it_s']:,.0f} | {b['marginal_it_s']:,.0f} | {r['marginal_it_s'] / b['marginal_it_s']:.2f}x | "
                f"{r['marginal_median_it_s'] / b['marginal_median_it_s']:.2f}x |"
            )
    for a, r in results.get("default_run_in_process", {}).items():
        target = target_it_s(a)
        met = "met" if r["marginal_it_s"] >= target else "not met"
        print(
            f"| {a} (in one process) | {r['time_small_s']:.3f} | {r['time_large_s']:.3f} | {r['marginal_it_s']:,.0f} | "
            f"{target:,.0f} ({met}) |"
        )
    print(f"\n| library, T = {args.library_T:.0e} | every prefix it/s | checkpoint only it/s | cost |\n|---|---:|---:|---:|")
    for a, r in results["every_prefix"].items():
        met = "met" if r["cost_ratio"] <= 1.5 else "not met"
        print(f"| {a} | {r['every_prefix_it_s']:,.0f} | {r['checkpoint_only_it_s']:,.0f} | {r['cost_ratio']:.2f}x ({met}) |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return results


def _print_startup(results: dict, base: str | None) -> None:
    """The start-up table: median (best) seconds per version, and base / this of the medians."""
    this, median = results["startup_s"], results["startup_median_s"]
    if base is not None:
        base_best, base_median = results["startup_s_base"], results["startup_median_s_base"]
        print(f"| start-up | this: median (best) s | base ({base}): median (best) s | base / this |\n|---|---:|---:|---:|")
        for label in this:
            print(
                f"| markovgames {label} | {median[label]:.3f} ({this[label]:.3f}) | {base_median[label]:.3f} "
                f"({base_best[label]:.3f}) | {base_median[label] / median[label]:.2f}x |"
            )
    else:
        print("| start-up | median (best) s |\n|---|---:|")
        for label in this:
            print(f"| markovgames {label} | {median[label]:.3f} ({this[label]:.3f}) |")


if __name__ == "__main__":
    main()
