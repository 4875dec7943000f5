"""Benchmark: what saving a run's state costs (``markovgames run --checkpoint-every K``).

Runs ``markovgames run --game paper --algorithm ALG -T T --no-trajectory --checkpoint-every K``
(every prefix's metrics kept, the default) in fresh processes, for ``K = T`` (one save, at the
end) and for ``--every`` (frequent saves), best of ``--repeats`` rounds; the difference of the two
is the cost of the saves. With ``--base REV`` the same commands of a git revision run in the same
rounds (checked out with ``git worktree``; both versions from their source tree on
``PYTHONPATH``, alternating which goes first), and the ratios base / this are reported.

Usage::

    python benchmarks/bench_checkpoints.py [--algorithm smooth_ce] [-T 1000000] [--every 10000]
        [--repeats 3] [--base REV] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import ROOT, revision_tree  # noqa: E402


def _command(env: dict, cwd: Path, algorithm: str, T: int, every: int) -> float:
    """Wall time of one fresh ``markovgames run`` saving its state every ``every`` iterations."""
    out = cwd / f"run-{time.perf_counter_ns()}"
    cmd = [sys.executable, "-m", "markovgames", "run", "--game", "paper", "--algorithm", algorithm, "-T", str(T)]
    cmd += ["--no-trajectory", "--checkpoint-every", str(every), "--quiet", "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr}")
    shutil.rmtree(out)
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="smooth_ce")
    parser.add_argument("-T", type=int, default=10**6)
    parser.add_argument("--every", type=int, default=10**4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--base", help="a git revision measured in the same rounds")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        # One compilation cache for every call, warmed by the first round's calls.
        env = dict(os.environ, MARKOVGAMES_CACHE_DIR=str(work / "cache"))
        trees = {"this": ROOT}
        if args.base:
            trees["base"] = stack.enter_context(revision_tree(args.base, work))
        envs = {}
        for version, tree in trees.items():
            path = os.pathsep.join([str(tree / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
            envs[version] = dict(env, PYTHONPATH=path)
        for version in trees:  # warm the compilation cache for both chunk lengths
            for every in (args.T, args.every):
                _command(envs[version], work, args.algorithm, args.T, every)
        times: dict[str, dict[str, list[float]]] = {v: {"one save": [], "frequent saves": []} for v in trees}
        for round_ in range(args.repeats):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for version in order:
                times[version]["one save"].append(_command(envs[version], work, args.algorithm, args.T, args.T))
                times[version]["frequent saves"].append(_command(envs[version], work, args.algorithm, args.T, args.every))

    base = None
    if args.base:  # the commit, not a name that moves
        base = subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.base], capture_output=True, text=True).stdout.strip()
    results: dict = {
        "algorithm": args.algorithm,
        "T": args.T,
        "every": args.every,
        "repeats": args.repeats,
        "base_revision": base,
    }
    print(f"markovgames run --game paper --algorithm {args.algorithm} -T {args.T} --no-trajectory, best of {args.repeats}")
    print(f"{'version':8} {'one save (s)':>14} {'every ' + str(args.every) + ' (s)':>18} {'saves cost (s)':>15}")
    for version, measured in times.items():
        one, frequent = min(measured["one save"]), min(measured["frequent saves"])
        results[version] = {"one_save_s": one, "frequent_saves_s": frequent, "saves_cost_s": frequent - one}
        print(f"{version:8} {one:14.3f} {frequent:18.3f} {frequent - one:15.3f}")
    if args.base:
        ratio = results["base"]["frequent_saves_s"] / results["this"]["frequent_saves_s"]
        results["frequent_saves_base_over_this"] = ratio
        print(f"with frequent saves, base / this: {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
