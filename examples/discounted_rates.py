"""Two published results in discounted zero-sum Markov games: OFTRL's weighted average and OGDA's last iterate.

Both dynamics run on every state at once with the discounted smooth value update (``Q^t = r +
gamma P V^(t-1)``, ``V^t = (1 - alpha_t) V^(t-1) + alpha_t <pi^t, Q^t>``, ``alpha_t = (k+1)/(k+t)``,
``k = 1/(1 - gamma)``; docs/discounted.md), ``LEARNER+discounted-smooth``:

* **OFTRL with smooth value updates** (optimistic Hedge, ``hedge+discounted-smooth``). Yang and Ma
  (2023) prove that the state-wise weighted average of the iterates, with the update's own weights
  ``alpha_T^t``, reaches an approximate Nash equilibrium at the rate ``O(1/T)`` in two-player
  zero-sum Markov games. Their theorem is stated for finite-horizon games (as Zhang et al.'s
  ``O(T^(-5/6))`` before it); this study measures the discounted analogue, slope -1 expected if the
  rate carries over.
* **OGDA with a slowly learning critic** (``ogda+discounted-smooth``). Wei, Lee, Zhang and Luo (COLT
  2021) prove a finite-time last-iterate convergence guarantee for decentralized OGDA in discounted
  two-player zero-sum Markov games, with the critic ``alpha_t = (H+1)/(H+t)``, ``H = 1/(1-gamma)``:
  the last iterate's duality gap goes to 0 (the rate of their theorem, polynomial in ``1/T``, was not
  read from the paper's text and is not tested here).

The measure is the exact duality gap ``sum_i (V_i^dagger(s_0) - V_i(s_0))`` of the output policy
(the weighted average, and the last iterate), computed by the discounted evaluators from the
game, on random constant-sum games (``r_1 = 1 - r_0``), with log-log slopes of the median over the
last decade. A slope is called near -1 within 0.15 of it (the tolerance of ``markovgames
reproduce``).

    python examples/discounted_rates.py                      # 8 games, T = 10^5 (about a minute on two cores)
    python examples/discounted_rates.py --games 2 -T 1000    # a quick look
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from markovgames.dynamics import run_batch  # noqa: E402
from markovgames.games import random_discounted_game  # noqa: E402

STATES, ACTIONS, ETA = 4, 3, 0.1
TOLERANCE = 0.15
#: Gaps below this are rounding (the evaluators' float64 values of order 1/(1 - gamma) agree to
#: about 1e-14): they are left out of the slopes, and a gap that stays below it has converged.
ROUNDING = 1e-10

#: (label, composition, the output the paper's theorem is about, its claim, how it is judged).
SETTINGS = [
    ("OFTRL (optimistic Hedge)", "hedge+discounted-smooth", "weighted average", "Yang and Ma 2023: O(1/T)", "rate"),
    ("OGDA", "ogda+discounted-smooth", "last iterate", "Wei et al. 2021: last-iterate convergence", "converges"),
]


def slope(t: np.ndarray, y: np.ndarray, lo: float) -> float | None:
    """The log-log slope of ``y`` over ``t >= lo`` (None with fewer than 2 positive points)."""
    keep = (t >= lo) & (y > ROUNDING)
    if keep.sum() < 2 or np.ptp(np.log(t[keep])) == 0:
        return None
    return float(np.polyfit(np.log(t[keep]), np.log(y[keep]), 1)[0])


def verdicts(kind: str, t: np.ndarray, gaps: np.ndarray, window: float) -> str:
    """The paper's claim judged game by game (``gaps``: games x prefixes), as counts.

    ``rate``: each game's slope over the last decade (above rounding) near -1 (within
    `TOLERANCE`), steeper, shallower, or undecided (fewer than two prefixes above rounding and the
    gap not at rounding at ``T``; a gap at rounding counts as steeper). ``converges``: each game's
    gap lower at ``T`` than at the decade's start, or at rounding at ``T``."""
    n = len(gaps)
    if kind == "converges":
        falling = sum(1 for g in gaps if g[-1] <= ROUNDING or g[-1] < np.interp(window, t, g))
        return f"lower at T than at T/10, or at rounding, in {falling} of {n} games"
    counts = {"near": 0, "steeper": 0, "shallower": 0, "undecided": 0}
    for g in gaps:
        s = slope(t, g, window)
        if g[-1] <= ROUNDING:
            counts["steeper"] += 1
        elif s is None:
            counts["undecided"] += 1
        elif abs(s + 1.0) <= TOLERANCE:
            counts["near"] += 1
        else:
            counts["steeper" if s < -1.0 else "shallower"] += 1
    return (
        f"slope near -1 in {counts['near']} of {n} games, steeper in {counts['steeper']}, shallower in "
        f"{counts['shallower']}, undecided in {counts['undecided']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8, help="random discounted zero-sum games (seeds)")
    parser.add_argument("-T", type=int, default=100_000, help="iterations per run")
    parser.add_argument("--discount", type=float, default=0.9, help="the discount gamma (default 0.9)")
    parser.add_argument("--out", default="sweeps/discounted_rates", help="where the curves (curves.csv) and the figure go")
    parser.add_argument("--figure", default=None, help="the figure's file (default: OUT/figures/discounted_rates.png)")
    args = parser.parse_args()
    if args.T < 1 or args.games < 1:
        parser.error(f"-T and --games must be at least 1, got {args.T} and {args.games}")
    if not 0.0 <= args.discount < 1.0:
        parser.error(f"--discount must be in [0, 1), got {args.discount}")

    # Log-spaced prefixes (10 per decade, and T): the iterates are evaluated exactly only there.
    t = np.unique(np.round(np.logspace(0, np.log10(args.T), 10 * max(1, round(np.log10(args.T))) + 1)).astype(int))
    t = np.unique(np.append(t, args.T))
    window = args.T / 10
    games = [
        random_discounted_game(2, STATES, ACTIONS, args.discount, seed_or_rng=2021 + k, zero_sum=True) for k in range(args.games)
    ]
    prefixes = [int(p) for p in t]

    curves, rows, lines = {}, [], []
    for label, composition, output, claim, kind in SETTINGS:
        result = run_batch(
            games,
            composition,
            T=args.T,
            etas=ETA,
            last_iterate=prefixes,
            weighted_average=prefixes,
            record_trajectory=False,
        )
        outputs = {"last iterate": result.last_iterate_duality_gap, "weighted average": result.weighted_average_duality_gap}
        for name, gaps in outputs.items():
            gaps = np.asarray(gaps)  # (games, prefixes)
            curves[label, name] = gaps
            median = np.median(gaps, axis=0)
            rows += [(label, name, p, g) for p, g in zip(prefixes, median, strict=True)]
            s = slope(t, median, window)
            at_rounding = int(np.sum(gaps[:, -1] <= ROUNDING))
            line = (
                f"{label}, {name}: median duality gap at T {median[-1]:.3g}, slope {np.nan if s is None else s:+.2f}; "
                f"at most {ROUNDING:g} (rounding) at T in {at_rounding} of {len(games)} games"
            )
            if name == output:
                line += f" ({claim}: {verdicts(kind, t, gaps, window)})"
            lines.append(line)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "curves.csv", "w", encoding="utf-8") as f:
        f.write("dynamics,output,t,median_duality_gap\n")
        f.writelines(f"{label},{name},{p},{g:.6g}\n" for label, name, p, g in rows)
    figure = Path(args.figure or out / "figures" / "discounted_rates.png")
    figure.parent.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True, layout="constrained")
    for ax, (label, _, output, claim, _) in zip(axes, SETTINGS, strict=True):
        for name, color in (("weighted average", "#1f77b4"), ("last iterate", "#d62728")):
            gaps = curves[label, name]
            lo, med, hi = (np.quantile(gaps, q, axis=0) for q in (0.25, 0.5, 0.75))
            floor = 1e-12
            ax.plot(t, np.maximum(med, floor), color=color, lw=2 if name == output else 1, label=name)
            ax.fill_between(t, np.maximum(lo, floor), np.maximum(hi, floor), color=color, alpha=0.12)
        if args.T >= 10:  # slope -1 through the median of the paper's output at T/10
            anchor = float(np.interp(window, t, np.median(curves[label, output], axis=0)))
            tail = t[t >= window]
            ax.plot(tail, np.maximum(anchor * (tail / window) ** -1.0, 1e-12), ":", color="black", lw=1, label="slope -1")
        ax.set(xscale="log", yscale="log", xlabel="T", title=f"{label}: {claim}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel(f"exact duality gap (median, IQR; {args.games} games)")
    fig.suptitle(f"Discounted zero-sum games (S = {STATES}, A = {ACTIONS}x{ACTIONS}, gamma = {args.discount:g}), eta = {ETA}")
    fig.savefig(figure, dpi=80)

    print(
        f"T = {args.T:,}; {args.games} random discounted zero-sum games (N = 2, S = {STATES}, A = {ACTIONS}x{ACTIONS}, "
        f"gamma = {args.discount:g}), eta = {ETA}; exact duality gaps, medians over the games; "
        f"log-log slopes over t in [{int(np.ceil(window)):,}, {args.T:,}] (gaps above {ROUNDING:g})"
    )
    for line in lines:
        print(line)
    print(f"wrote {figure}")


if __name__ == "__main__":
    main()
