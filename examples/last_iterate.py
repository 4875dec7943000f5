"""Last iterate against output policy on zero-sum games.

The paper's guarantees are for the correlated output policies (Algorithms 3 and 4): the certified
CCE gap of the output policy shrinks like 1/T. What about the last iterate pi^T itself, a product
policy, whose Nash gap says how close the dynamics' own play is to a Nash equilibrium? This study
runs the smooth and stage-based OFTRL CCE dynamics, with and without optimism, on random
zero-sum games, evaluates the last iterate inside the compiled loop at every checkpoint
(``last_iterate = true``), and draws both gaps against T (median and interquartile range over the
games).

    python examples/last_iterate.py                                  # 32 games, T = 10^5 (about 25 s on two cores)
    python examples/last_iterate.py --games 2 -T 1000 --workers 1    # a quick look, in one process
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from markovgames.experiments import load_results, parse_sweep_config, run_sweep  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=32, help="random zero-sum games (seeds)")
    parser.add_argument("-T", type=int, default=100_000, help="iterations per run")
    parser.add_argument("--out", default="sweeps/last_iterate", help="the sweep directory")
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: min(2, cpu count); 1 runs in this process)"
    )
    parser.add_argument("--figure", default=None, help="the figure's file (default: OUT/figures/last_iterate.png)")
    args = parser.parse_args()
    if args.T < 1 or args.games < 1:  # (the sweep's own check would end in a traceback)
        parser.error(f"-T and --games must be at least 1, got {args.T} and {args.games}")

    config = parse_sweep_config(
        {
            "name": "last_iterate",
            "T": args.T,
            "seeds": args.games,
            "base_seed": 11,
            "etas": [0.2],
            "optimistic": [True, False],
            "games": [{"random": {"players": 2, "horizon": 2, "states": 3, "actions": 3, "zero_sum": True}}],
            "algorithms": ["smooth_cce", "stage_cce"],
            "last_iterate": True,
        }
    )
    run_sweep(config, args.out, workers=args.workers)
    df = load_results(args.out)
    figure = Path(args.figure or Path(args.out) / "figures" / "last_iterate.png")
    figure.parent.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, layout="constrained")
    for ax, optimistic in zip(axes, (True, False), strict=True):
        for algorithm, color in (("smooth_cce", "#2ca02c"), ("stage_cce", "#d62728")):
            runs = df[(df.algorithm == algorithm) & (df.optimistic == optimistic)]
            for column, style, label in (
                ("certified_cce_gap", "-", "output policy: certified CCE gap"),
                ("last_iterate_nash_gap", "--", "last iterate: Nash gap"),
            ):
                by_t = runs.groupby("checkpoint")[column]
                t = np.asarray(sorted(runs.checkpoint.unique()))
                median, lo, hi = (by_t.quantile(q).reindex(t).to_numpy() for q in (0.5, 0.25, 0.75))
                ax.plot(t, median, style, color=color, label=f"{algorithm} {label}")
                ax.fill_between(t, lo, hi, color=color, alpha=0.12)
        ax.set(xscale="log", yscale="log", xlabel="T", title="optimistic" if optimistic else "without optimism")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(f"gap (median and IQR over {args.games} zero-sum games)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=7, frameon=False)
    fig.suptitle("Last iterate against output policy on random zero-sum games (N=2, H=2, S=3, A=3)")
    fig.savefig(figure, dpi=110)

    final = df[df.checkpoint == args.T]
    for algorithm, optimistic in [(a, o) for a in ("smooth_cce", "stage_cce") for o in (True, False)]:
        rows = final[(final.algorithm == algorithm) & (final.optimistic == optimistic)]
        ratio = rows.last_iterate_nash_gap / rows.certified_cce_gap
        print(
            f"{algorithm}{'' if optimistic else ' (no optimism)'}: T = {args.T:,}: median certified CCE gap of the output "
            f"{rows.certified_cce_gap.median():.3g}, median Nash gap of the last iterate {rows.last_iterate_nash_gap.median():.3g} "
            f"(last iterate / output: median {ratio.median():.3g}, largest {ratio.max():.3g})"
        )
    print(f"wrote {figure}")


if __name__ == "__main__":  # sweeps start worker processes, which import this script again
    main()
