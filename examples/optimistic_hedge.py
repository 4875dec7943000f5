"""Regret of optimistic Hedge against Hedge in self-play (Syrgkanis, Agarwal, Luo and Schapire, NeurIPS 2015).

Syrgkanis et al., "Fast Convergence of Regularized Learning in Games" (NeurIPS 2015,
arXiv:1507.00407): when every player of a game uses optimistic Hedge, each player's regret after
``T`` rounds is ``O(T^(1/4))`` (with a rate ``eta ~ T^(-1/4)``) and the sum of the players' regrets is
``O(1)`` (with a small constant rate), against ``O(sqrt(T))`` for Hedge, whose guarantee holds
against any opponents. This study runs both, every player learning (``hedge+smooth-uniform``:
the textbook algorithms on a normal-form game), on random 4-player general-sum games and on random
2-player zero-sum games, with decreasing rates (``eta_t = t^(-1/4)`` and ``t^(-1/2)``) and with one
constant rate, and draws each player's cumulative regret ``t x`` (average external regret, from
``regret=True``) against ``t``: the largest over the players and the sum over them (median and
interquartile range over the games), with log-log slopes over the last two decades.

    python examples/optimistic_hedge.py                       # 8 + 8 games, T = 10^5 (about 35 s on two cores)
    python examples/optimistic_hedge.py --games 2 -T 1000     # a quick look
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from markovgames.dynamics import run_batch  # noqa: E402
from markovgames.games import random_game  # noqa: E402

#: (label, players, actions per player, zero-sum): payoffs i.i.d. uniform on [0, 1] (random_game);
#: the zero-sum games are constant-sum, r_1 = 1 - r_0.
FAMILIES = [("4-player general-sum", 4, 2, False), ("2-player zero-sum", 2, 6, True)]


def settings(players: int):
    """(label, optimistic, eta, schedule, what the paper says of the worst player's regret, of the sum).

    The decreasing rates are anytime forms of the rates ``eta ~ T^(-1/4)`` and ``T^(-1/2)`` tuned to
    the horizon; the constant rate is ``1 / (2 (N - 1))``."""
    constant = 1.0 / (2 * (players - 1))
    return [
        ("optimistic Hedge, eta_t = t^-1/4", True, 1.0, "power:0.25", "O(T^1/4), slope at most 1/4", "no claim"),
        ("Hedge, eta_t = t^-1/2", False, 1.0, "sqrt", "O(T^1/2) against any opponents", "no claim"),
        (f"optimistic Hedge, eta = {constant:.3g}", True, constant, "constant", "no claim", "O(1), slope 0"),
        (f"Hedge, eta = {constant:.3g}", False, constant, "constant", "no claim", "no claim"),
    ]


def slope(t: np.ndarray, y: np.ndarray, lo: float) -> str:
    """The log-log slope of ``y`` over ``t >= lo``, as text ("-" with fewer than 2 positive points)."""
    keep = (t >= lo) & (y > 0)
    if keep.sum() < 2 or np.ptp(np.log(t[keep])) == 0:
        return "-"
    return f"{np.polyfit(np.log(t[keep]), np.log(y[keep]), 1)[0]:+.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="random games (seeds) per family")
    parser.add_argument("-T", type=int, default=100_000, help="iterations per run")
    parser.add_argument("--out", default="sweeps/optimistic_hedge", help="where the curves (curves.csv) and the figure go")
    parser.add_argument("--figure", default=None, help="the figure's file (default: OUT/figures/optimistic_hedge.png)")
    args = parser.parse_args()
    if args.T < 1 or args.games < 1:
        parser.error(f"-T and --games must be at least 1, got {args.T} and {args.games}")

    # Log-spaced prefixes (20 per decade, and T): the regrets are kept only there.
    t = np.unique(np.round(np.logspace(0, np.log10(args.T), 20 * max(1, round(np.log10(args.T))) + 1)).astype(int))
    t = np.unique(np.append(t, args.T))
    window = args.T / 100  # slopes over the last two decades

    rows, lines = [], []
    curves = {}
    for family, players, actions, zero_sum in FAMILIES:
        games = [random_game(players, 1, 1, actions, seed_or_rng=2015 + k, zero_sum=zero_sum) for k in range(args.games)]
        for label, optimistic, eta, schedule, paper_max, paper_sum in settings(players):
            result = run_batch(
                games,
                "hedge+smooth-uniform",
                T=args.T,
                etas=eta,
                optimistic=optimistic,
                step_schedule=schedule,
                regret=True,
                checkpoints=[int(p) for p in t],
            )
            cumulative = result.external_regret * t[None, :, None]  # (games, prefixes, players): t x average regret
            largest, total = cumulative.max(axis=-1), cumulative.sum(axis=-1)
            curves[family, label] = (largest, total)
            med_max, med_sum = np.median(largest, axis=0), np.median(total, axis=0)
            rows += [(family, label, int(p), a, b) for p, a, b in zip(t, med_max, med_sum, strict=True)]
            lines.append(
                f"{family}, {label}: T = {args.T:,}: worst player's regret {med_max[-1]:.3g}, slope "
                f"{slope(t, med_max, window)} (paper: {paper_max}); sum over players {med_sum[-1]:.3g}, slope "
                f"{slope(t, med_sum, window)} (paper: {paper_sum})"
            )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "curves.csv", "w", encoding="utf-8") as f:
        f.write("family,dynamics,t,median_regret_of_the_worst_player,median_sum_of_regrets\n")
        f.writelines(f"{family},{label},{p},{a:.6g},{b:.6g}\n" for family, label, p, a, b in rows)
    figure = Path(args.figure or out / "figures" / "optimistic_hedge.png")
    figure.parent.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True, layout="constrained")
    for r, (family, players, *_) in enumerate(FAMILIES):
        cases = settings(players)
        for c, pair in enumerate((cases[:2], cases[2:])):
            ax = axes[r, c]
            for (label, *_), color in zip(pair, ("#d62728", "#1f77b4"), strict=True):
                for k, (what, style) in enumerate((("worst player", "-"), ("sum over players", "--"))):
                    values = curves[family, label][k]
                    lo, med, hi = (np.quantile(values, q, axis=0) for q in (0.25, 0.5, 0.75))
                    ax.plot(t, np.maximum(med, 1e-2), style, color=color, label=f"{label}: {what}")
                    ax.fill_between(t, np.maximum(lo, 1e-2), np.maximum(hi, 1e-2), color=color, alpha=0.12)
            if c == 0 and args.T >= 100:  # the papers' rates, through the median worst player at T/100
                for power, color in ((0.25, "#d62728"), (0.5, "#1f77b4")):
                    label = pair[0 if power == 0.25 else 1][0]
                    anchor = np.interp(window, t, np.median(curves[family, label][0], axis=0))
                    ax.plot(t[t >= window], anchor * (t[t >= window] / window) ** power, ":", color=color, lw=1)
            ax.set(xscale="log", yscale="log", title=f"{family}: {'decreasing rates' if c == 0 else 'constant rate'}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
    for ax in axes[-1]:
        ax.set_xlabel("t")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"cumulative regret (median, IQR; {args.games} games)")
    fig.suptitle("Optimistic Hedge against Hedge in self-play (dotted: slopes 1/4 and 1/2; values below 0.01 drawn at 0.01)")
    fig.savefig(figure, dpi=80)

    print(
        f"cumulative regret at T: medians over {args.games} games per family; log-log slopes of the medians over "
        f"t in [{int(np.ceil(window)):,}, {args.T:,}]"
    )
    for line in lines:
        print(line)
    print(f"wrote {figure}")


if __name__ == "__main__":
    main()
