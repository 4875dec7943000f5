"""The paper's open question: does smooth OFTRL CCE reach a CCE at rate 1/T on every game?

Mao et al. (2024) prove O~(1/T) for smooth OFTRL CE (Algorithm 1) and stage-based OFTRL CCE
(Algorithm 2), and observe it for the smooth OFTRL CCE variant (algorithm ``smooth_cce``) on one
game without a proof. This study runs ``smooth_cce`` on many random games and asks whether
gap x T stays bounded: one sweep, then the tool's own figures (median and interquartile band of
gap and gap x T over the games, and the distribution of the per-game log-log slopes).

    python examples/open_question.py                                  # 48 + 48 games, T = 10^5 (about 40 s on two cores)
    python examples/open_question.py --games 4 -T 2000 --workers 1    # a quick look, in one process
"""

import argparse

from markovgames.experiments import load_results, parse_sweep_config, plot_sweep, run_sweep, summarize_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=48, help="random games (seeds) in the study")
    parser.add_argument("-T", type=int, default=100_000, help="iterations per run")
    parser.add_argument("--out", default="sweeps/open_question", help="the sweep directory")
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: min(2, cpu count); 1 runs in this process)"
    )
    parser.add_argument("--figures", default=None, help="where the figures go (default: OUT/figures)")
    args = parser.parse_args()
    if args.T < 1 or args.games < 1:  # (the sweep's own check would end in a traceback)
        parser.error(f"-T and --games must be at least 1, got {args.T} and {args.games}")

    config = parse_sweep_config(
        {
            "name": "open_question",
            "T": args.T,
            "seeds": args.games,
            "base_seed": 2024,
            "etas": [0.2],  # the paper's rate
            "games": [  # general-sum games, and zero-sum ones (whose equilibria are often mixed)
                {"random": {"players": 2, "horizon": 3, "states": 4, "actions": 3}, "label": "general-sum"},
                {"random": {"players": 2, "horizon": 3, "states": 4, "actions": 3, "zero_sum": True}, "label": "zero-sum"},
            ],
            "algorithms": ["smooth_cce"],
        }
    )
    run_sweep(config, args.out, workers=args.workers)
    df = load_results(args.out)
    # The last two decades start at the first saved checkpoint T' >= T/100 (T/100 itself is one
    # only for some T: the "log" grid keeps 10 points per decade and every 10^k).
    start = min(int(c) for c in df.checkpoint.unique() if c >= args.T / 100)
    window = (start, args.T) if start < args.T else None  # None: T = 1 has a single checkpoint
    plot_sweep(args.out, args.figures, window=window)

    at = df[df.checkpoint.isin([start, args.T])].pivot_table("gap_times_T", ["game", "run_id"], "checkpoint")
    growth = at[args.T] / at[start]  # how much gap x T grew over the last two decades, per game
    for row in summarize_results(args.out, window=window):
        g = growth.loc[row.game]
        print(
            f"{row.game}: {row.runs} games, T = {args.T:,}: median gap x T {row.gap_times_T:.3g}, median slope "
            f"{row.slope:+.2f}; gap x T grew more than 2x from T' = {start:,} to T in {int((g > 2).sum())} of {len(g)} "
            f"games (largest factor {g.max():.3g})"
        )


if __name__ == "__main__":  # sweeps start worker processes, which import this script again
    main()
