"""How gap x T of smooth OFTRL CE (Algorithm 1) grows with the horizon H.

Theorem 1 bounds the CE gap of ``smooth_ce`` by ``6144 N H^(7/2) A_max^(5/2) log T / T``: gap x T
may grow like ``H^3.5`` (times log T). This study measures how it actually grows: random games of
horizons 1 to 5 (every other size fixed), several seeds each, one sweep, and the tool's figure of
gap x T' at three decades against H (median and interquartile range over the games).

    python examples/horizon.py                                                # H = 1..5, 16 games each, T = 10^5
    python examples/horizon.py --horizons 1,2 --games 2 -T 1000 --workers 1   # a quick look, in one process
"""

import argparse

import numpy as np

from markovgames.experiments import gap_times_T_across, load_results, parse_sweep_config, plot_sweep, run_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", default="1,2,3,4,5", help="comma-separated horizons H")
    parser.add_argument("--games", type=int, default=16, help="random games (seeds) per horizon")
    parser.add_argument("-T", type=int, default=100_000, help="iterations per run")
    parser.add_argument("--out", default="sweeps/horizon", help="the sweep directory")
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: min(2, cpu count); 1 runs in this process)"
    )
    parser.add_argument("--figures", default=None, help="where the figures go (default: OUT/figures)")
    args = parser.parse_args()
    if args.T < 1 or args.games < 1:  # (the sweep's own check would end in a traceback)
        parser.error(f"-T and --games must be at least 1, got {args.T} and {args.games}")
    try:
        horizons = [int(h) for h in args.horizons.split(",")]
    except ValueError:
        horizons = []
    if not horizons or min(horizons) < 1:
        parser.error(f"--horizons: expected positive integers separated by commas, got {args.horizons!r}")

    config = parse_sweep_config(
        {
            "name": "horizon",
            "T": args.T,
            "seeds": args.games,
            "base_seed": 7,
            "etas": [0.2],
            "games": [{"random": {"players": 2, "horizon": h, "states": 2, "actions": 2}} for h in horizons],
            "algorithms": ["smooth_ce"],
        }
    )
    run_sweep(config, args.out, workers=args.workers)
    plot_sweep(args.out, args.figures, x="horizon")  # gap x T' at the last three decades

    rows = load_results(args.out).to_dict("records")
    (last,) = gap_times_T_across(rows, "horizon", [args.T])
    growth = np.polyfit(np.log(last.x), np.log(last.median), 1)[0] if len(last.x) > 1 else float("nan")
    for h, m in zip(last.x, last.median, strict=True):
        print(f"H = {h:g}: median CE gap x T at T = {args.T:,}: {m:.4g}")
    print(f"gap x T grows like H^{growth:.2f} over these horizons (Theorem 1's bound: H^3.5 log T)")


if __name__ == "__main__":  # sweeps start worker processes, which import this script again
    main()
