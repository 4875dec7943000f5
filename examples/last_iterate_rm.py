"""Last iterates of regret-matching algorithms on the 3x3 game of Cai et al. (ICLR 2025).

Cai, Farina, Grand-Clement, Kroer, Lee, Luo and Zheng, "Last-Iterate Convergence Properties of
Regret-Matching Algorithms in Games" (ICLR 2025, arXiv:2311.00676), show numerically that RM+,
alternating RM+ and predictive RM+ (PRM+) do not converge in last iterate on a 3x3 zero-sum matrix
game, and prove that extragradient RM+ (ExRM+) and smooth PRM+ (SPRM+) do (asymptotically, on
every zero-sum matrix game). This study runs the six dynamics on that game, lifted to a one-state
Markov game (``markovgames.bridges.normal_form.lift``), with the textbook uniform averaging
(``LEARNER+smooth-uniform``), evaluates the last iterate ``(x^t, y^t)`` at log-spaced ``t``
inside the compiled loop (``last_iterate``), and draws its duality gap against ``t``.

    python examples/last_iterate_rm.py             # T = 10^5 (about 15 s on two cores)
    python examples/last_iterate_rm.py -T 1000     # a quick look
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from markovgames.bridges.normal_form import bimatrix, lift  # noqa: E402
from markovgames.dynamics import run  # noqa: E402

#: The game of Cai et al., in their convention min_x max_y x^T A y: the row player MINIMISES x^T A y,
#: so its utility matrix is -A and the column player's is A. Its unique equilibrium is interior:
#: x* = (1/12, 1/12, 5/6), y* = (1/3, 5/12, 1/4), value 1/4.
A = np.array([[3.0, 0.0, -3.0], [0.0, 3.0, -4.0], [0.0, 0.0, 1.0]])

#: (label, learner, optimistic, order, whether it takes the step --eta, Cai et al.'s claim). RM+ and
#: PRM+ start from zero regrets, where a step only rescales every regret: they are scale free.
DYNAMICS = [
    ("RM+", "rm-plus", False, "simultaneous", False, "no last-iterate convergence"),
    ("alternating RM+", "rm-plus", False, "alternating", False, "no last-iterate convergence"),
    ("PRM+", "rm-plus", True, "simultaneous", False, "no last-iterate convergence"),
    ("alternating PRM+", "rm-plus", True, "alternating", False, "none stated"),
    ("ExRM+", "exrm-plus", True, "simultaneous", True, "last-iterate convergence"),
    ("SPRM+", "sprm-plus", True, "simultaneous", True, "last-iterate convergence"),
]

#: Gaps below this are rounding (the gap of the exact equilibrium, computed in float64).
ROUNDING = 1e-12
#: A last iterate converges, at the run's length, if its largest gap over the last decade of t is
#: this factor below the largest over the decade before, or both are 0 (at rounding level); the
#: cycling dynamics change it by less than 2x.
DROP = 10.0


def _window_max(t: np.ndarray, gap: np.ndarray, lo: float, hi: float) -> float | None:
    """The largest gap at the prefixes t' with lo <= t' <= hi (None if there are none)."""
    inside = (t >= lo) & (t <= hi)
    return float(gap[inside].max()) if inside.any() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-T", type=int, default=100_000, help="iterations per run")
    parser.add_argument("--eta", type=float, default=0.1, help="ExRM+'s and SPRM+'s step, in the game's own payoff units")
    parser.add_argument("--out", default="sweeps/last_iterate_rm", help="where the curves (curves.csv) and the figure go")
    parser.add_argument("--figure", default=None, help="the figure's file (default: OUT/figures/last_iterate_rm.png)")
    args = parser.parse_args()
    if args.T < 1 or not args.eta > 0:
        parser.error(f"-T must be at least 1 and --eta positive, got {args.T} and {args.eta}")

    lifted = lift(bimatrix(-A, A))  # payoffs in [-4, 4] -> [0, 1]: u01 = u / 8 + 1/2
    scale = lifted.rescaling.scale
    # Log-spaced prefixes (20 per decade, and T): the last iterate is evaluated only there.
    prefixes = np.unique(np.round(np.logspace(0, np.log10(args.T), 20 * max(1, round(np.log10(args.T))) + 1)).astype(int))
    prefixes = [int(p) for p in np.unique(np.append(prefixes, args.T))]
    t = np.asarray(prefixes)

    curves = {}
    for label, learner, optimistic, order, takes_step, _ in DYNAMICS:
        # A regret vector is a difference of payoffs: it shrinks by `scale` in [0, 1] units, so the
        # paper's step eta is eta / scale here (8 eta). RM+ and PRM+ from zero ignore the step.
        eta = args.eta / scale if takes_step else 1.0
        result = run(
            lifted.game,
            f"{learner}+smooth-uniform",
            T=args.T,
            eta=eta,
            optimistic=optimistic,
            order=order,
            checkpoints=prefixes,
            last_iterate=prefixes,
            record_trajectory=False,
        )
        # Duality gap of (x^t, y^t) = the sum over players of best response - value, in the game's units.
        gap01 = np.sum(result.last_iterate_best_response - result.last_iterate_value, axis=-1)
        gap = lifted.original_gaps(gap01)
        curves[label] = np.where(gap < ROUNDING, 0.0, gap)  # rounding-level gaps (and -1e-16) are 0

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header = "t," + ",".join(label for label, *_ in DYNAMICS)
    np.savetxt(out / "curves.csv", np.column_stack([t, *curves.values()]), delimiter=",", header=header, comments="", fmt="%.6g")
    figure = Path(args.figure or out / "figures" / "last_iterate_rm.png")
    figure.parent.mkdir(parents=True, exist_ok=True)

    fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
    colors = ["#1f77b4", "#17becf", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd"]
    for (label, *_, claim), color in zip(DYNAMICS, colors, strict=True):
        style = {"no last-iterate convergence": "--", "none stated": ":"}.get(claim, "-")
        ax.plot(t, np.maximum(curves[label], 1e-16), style, color=color, label=f"{label} ({claim})")
    ax.set(xscale="log", yscale="log", xlabel="t", ylabel="duality gap of the last iterate (x^t, y^t)", ylim=(5e-17, 5))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left", title="dynamics (Cai et al.'s claim)", title_fontsize=7)
    ax.set_title(
        f"Cai et al.'s 3x3 game: ExRM+ and SPRM+ with eta = {args.eta:g} (gaps below 1e-12, rounding, drawn at 1e-16)", fontsize=9
    )
    fig.savefig(figure, dpi=110)

    print(
        f"Cai et al.'s 3x3 game, payoffs in [-4, 4] (in [0, 1] units: u01 = {scale:g} u + {lifted.rescaling.offset:g}); "
        f"ExRM+ and SPRM+ with eta = {args.eta:g} in the game's units ({args.eta / scale:g} in [0, 1] units)"
    )
    for label, *_, claim in DYNAMICS:
        gap = curves[label]
        last = _window_max(t, gap, args.T / 10, args.T)
        before = _window_max(t, gap, args.T / 100, args.T / 10)
        if before is None or last is None:
            verdict = "too short to tell"
        else:
            converging = last <= before / DROP
            verdict = "converging" if converging else "not converging"
            if claim != "none stated":
                verdict += " (as claimed)" if converging == (claim == "last-iterate convergence") else " (not as claimed)"
        shown = "-" if last is None or before is None else f"{last:.3g} (the decade before: {before:.3g})"
        print(
            f"{label}: claim: {claim}; duality gap at T = {args.T:,}: {gap[-1]:.3g}; largest over the last decade {shown}: {verdict}"
        )
    print(f"wrote {figure}")


if __name__ == "__main__":
    main()
