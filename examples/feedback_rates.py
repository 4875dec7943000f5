"""How much of the fast rate survives sampled feedback?

Mao et al. (L4DC 2024) prove that the output policies of smooth OFTRL CE (Algorithm 1) and of
stage-based OFTRL CCE (Algorithm 2) reach an equilibrium at rate ``O~(1/T)``, and observe it for the
smooth OFTRL CCE variant, under full information: every learner sees its exact utilities and the
value update its exact Bellman targets. Under a generative model (``feedback="sampled:K"``: ``K``
sampled opponent profiles per utility estimate, ``K`` sampled next states per Bellman target;
docs/feedback.md) the learners follow noisy utilities, and one expects the gap to fall like
``T^(-1/2)`` or to level off. This study runs ``smooth_ce`` (CE gap), ``smooth_cce`` and
``stage_cce`` (CCE gap), ``eta = 0.2``, on the paper's game and on a few random games
(``N = 2, H = 2, S = 3, A_i = 2``; ``S`` is ``--states``), under full information and under ``sampled:K`` for several ``K``,
several seeds per game (one ``run_batch`` call per setting), and reports the certified gap of the
output policy (computed exactly with the true game, whatever the learners saw) against the
iterations ``T'`` and against the samples drawn, with log-log slopes over ``T' in [T/10, T]``, and
the exact gap at ``T/10`` and ``T`` on the paper's game.

    python examples/feedback_rates.py   # T = 10^4 (2.5 to 4.5 minutes on two cores)
    python examples/feedback_rates.py -T 1000 --seeds 2 --games 1 --game-seeds 2 --states 2 --samples 1,64  # a quick look
"""

import argparse
import csv
import math
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from markovgames.dynamics import run_batch  # noqa: E402
from markovgames.evaluation import exact_cce_gap, exact_ce_gap  # noqa: E402
from markovgames.experiments import fit_loglog_slope, log_grid  # noqa: E402
from markovgames.games import paper_game, random_game  # noqa: E402
from markovgames.policies import IndexChainPolicy  # noqa: E402

#: (algorithm, the gap the paper reports for it), as `markovgames reproduce` has them.
ALGORITHMS = [("smooth_ce", "ce"), ("smooth_cce", "cce"), ("stage_cce", "cce")]

#: The paper's learning rate, for every run.
ETA = 0.2

#: A slope over [T/10, T] at most FAST is the fast rate (1/T, or faster, within the 0.15 that
#: `markovgames reproduce` allows); at least SLOW it is T^(-1/2) or flatter (within 0.15 too).
FAST, SLOW = -0.85, -0.65

#: Gaps are drawn no lower than this on the log scales (and divided by no less).
FLOOR = 1e-8


def families(games: int, seeds: int, game_seeds: int, states: int = 3):
    """(label, games, each run's seed, whether the exact gaps are computed too): the paper's game
    with the seeds ``0..seeds-1``; each random game with the seeds ``0..game_seeds-1``."""
    randoms = [
        random_game(num_players=2, horizon=2, num_states=states, num_actions=2, seed_or_rng=7000 + k) for k in range(games)
    ]
    return [
        ("paper game", [paper_game()] * seeds, list(range(seeds)), True),
        ("random games", [g for g in randoms for _ in range(game_seeds)], list(range(game_seeds)) * games, False),
    ]


def slope(x: np.ndarray, y: np.ndarray, lo: float) -> float | None:
    """The log-log slope of ``y`` against ``x`` over ``x >= lo`` (None with fewer than two points)."""
    keep = x >= lo
    if keep.sum() < 2 or np.ptp(np.log(x[keep])) == 0:
        return None
    fitted = fit_loglog_slope(x[keep], y[keep])
    return fitted if math.isfinite(fitted) else None


def classify(s: float | None) -> str:
    """'fast' (slope <= FAST), 'slow' (slope >= SLOW), 'between', or 'undecided' (no slope)."""
    if s is None:
        return "undecided"
    return "fast" if s <= FAST else "slow" if s >= SLOW else "between"


def exact_gaps(result, concept: str, checkpoints: list[int]) -> np.ndarray:
    """The exact CE or CCE gap of every run's output policy at ``checkpoints``: ``(runs, checkpoints)``."""
    evaluate = exact_ce_gap if concept == "ce" else exact_cce_gap
    out = np.empty((len(result), len(checkpoints)))
    for r in range(len(result)):
        one = result.run(r)
        for c, T_prime in enumerate(checkpoints):
            out[r, c] = evaluate(one.game, IndexChainPolicy.from_run(one, T_prime)).gap
    return out


def run_setting(family, games, seeds, exact, algorithm, concept, feedback, t, at_exact):
    """One setting, one ``run_batch`` call: its row of the table, its curves and its exact points."""
    full = feedback == "full"
    if full:  # full information draws nothing: one run per game (every seed would give the same run)
        games = [g for k, g in enumerate(games) if all(g is not h for h in games[:k])]
    result = run_batch(
        games,
        algorithm,
        T=int(t[-1]),
        etas=ETA,
        feedback=feedback,
        seeds=None if full else seeds,
        checkpoints=[int(p) for p in t],
        record_trajectory=exact or full,
    )
    gap = result.certified_ce_gap if concept == "ce" else result.certified_cce_gap  # (runs, prefixes)
    mean, samples, lo = gap.mean(axis=0), result.samples_used, t[-1] / 10
    row = {
        "family": family,
        "algorithm": algorithm,
        "concept": concept.upper(),
        "feedback": feedback,
        "runs": len(result),
        "gap_mean": float(mean[-1]),
        "gap_min": float(gap[:, -1].min()),
        "gap_max": float(gap[:, -1].max()),
        "slope": slope(t.astype(float), mean, lo),
        "samples": None if samples is None else int(samples[-1]),
        "slope_in_samples": None if samples is None else slope(samples.astype(float), mean, samples[-1] / 10),
    }
    if full:  # the last iterate's largest probability, per run, player, step and state
        row["largest_probability"] = np.concatenate([p[:, -1].max(axis=-1).ravel() for p in result.policies]).tolist()
    points = None
    if exact:
        ex = exact_gaps(result, concept, at_exact)
        certified = gap[:, np.searchsorted(t, at_exact)]
        points = (np.asarray(at_exact), ex.mean(axis=0))
        row.update(
            exact_gap_mean=float(points[1][-1]),
            exact_slope=slope(points[0].astype(float), points[1], lo),
            exact_min=float(ex.min()),
            exact_minus_certified_max=float(np.max(ex - certified)),
            exact_within=int(np.sum(ex <= certified + 1e-12)),
            exact_count=int(ex.size),
            exact_over_certified_max=float(np.max(ex / np.maximum(certified, FLOOR))),
        )
    return row, (gap, samples), points


def at_budget(rows: list[dict], curves: dict, t: np.ndarray) -> None:
    """Each sampled row's mean gap after as many samples as the smallest K draws in T iterations
    (``gap_at_equal_samples``; the last prefix whose samples do not exceed that)."""
    first = {}
    for row in rows:
        gap, samples = curves[row["family"], row["algorithm"], row["feedback"]]
        if samples is None:
            continue
        budget = first.setdefault((row["family"], row["algorithm"]), samples[-1])
        inside = np.flatnonzero(samples <= budget)
        row["gap_at_equal_samples"] = float(gap[:, inside[-1]].mean()) if inside.size else None


def write_files(out: Path, rows: list[dict], curves: dict, t: np.ndarray) -> None:
    """``curves.csv`` (per setting and prefix: samples, mean and range of the gap) and ``summary.csv`` (the table)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "curves.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["family", "algorithm", "feedback", "t", "samples", "mean_gap", "min_gap", "max_gap"])
        for (family, algorithm, feedback), (gap, samples) in curves.items():
            for k, p in enumerate(t):
                stats = (gap[:, k].mean(), gap[:, k].min(), gap[:, k].max())
                writer.writerow(
                    [family, algorithm, feedback, int(p), "" if samples is None else int(samples[k])]
                    + [repr(float(v)) for v in stats]
                )
    columns = list(dict.fromkeys(k for row in rows for k, v in row.items() if not isinstance(v, list)))
    with open(out / "summary.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, columns, restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)


def draw(figure: Path, labels: list[str], feedbacks: list[str], curves: dict, exact_points: dict, t: np.ndarray) -> None:
    """Per family two rows of panels, one per algorithm: the gap against T' (every feedback model,
    exact gaps as circles) and against the samples drawn (the sampled models)."""
    T = int(t[-1])
    colors = dict(zip(feedbacks, ["black", *plt.cm.viridis(np.linspace(0.0, 0.85, len(feedbacks) - 1))], strict=True))
    # Fixed margins: a layout engine would double the drawing time.
    fig, axes = plt.subplots(2 * len(labels), len(ALGORITHMS), figsize=(13, 13))
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.04, top=0.95, hspace=0.32, wspace=0.16)
    for f, family in enumerate(labels):
        for a, (algorithm, concept) in enumerate(ALGORITHMS):
            for axis, ax in enumerate(axes[2 * f : 2 * f + 2, a]):
                for feedback in feedbacks:
                    gap, samples = curves[family, algorithm, feedback]
                    x = t if axis == 0 else samples
                    if x is None:
                        continue  # full information draws no samples
                    mean, low, high = (np.maximum(v, FLOOR) for v in (gap.mean(0), gap.min(0), gap.max(0)))
                    ax.plot(x, mean, color=colors[feedback], lw=1.5 if feedback == "full" else 1.1, label=feedback)
                    ax.fill_between(x, low, high, color=colors[feedback], alpha=0.12)
                    if axis == 0 and (family, algorithm, feedback) in exact_points:
                        px, py = exact_points[family, algorithm, feedback]
                        ax.plot(px, np.maximum(py, FLOOR), "o", color=colors[feedback], mfc="white", ms=5)
                if axis == 0 and T >= 10:  # slopes -1 and -1/2 through full information's mean gap at T/10
                    xs = t[t >= T / 10].astype(float)
                    anchor = float(np.interp(xs[0], t, curves[family, algorithm, "full"][0].mean(0)))
                    for power, style in ((-1.0, ":"), (-0.5, "--")):
                        ax.plot(xs, anchor * (xs / xs[0]) ** power, style, color="0.4", lw=1)
                ax.set(xscale="log", yscale="log", xlabel="iterations T'" if axis == 0 else "samples drawn")
                ax.set_title(f"{family}: {algorithm} ({concept.upper()} gap)", fontsize=9)
                ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # (short ranges label minor ticks)
                ax.grid(True, which="major", alpha=0.3)
                if a == 0:
                    ax.set_ylabel("certified gap (mean, range over runs)")
                if f == 0 and a == 0:
                    ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"Output policy's certified gap under full and sampled feedback, eta = {ETA:g}, T = {T:,} (circles: exact gaps "
        "at T/10 and T; grey: slopes -1 (dotted) and -1/2 (dashed))",
        fontsize=10,
    )
    fig.savefig(figure, dpi=60)


def _text(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def _tally(found: list[str], holds: str, fails: str) -> str:
    n = len(found)
    return (
        f"holds in {found.count(holds)} of {n}, partly ({FAST:g} < slope < {SLOW:g}) in {found.count('between')} of {n}, "
        f"does not hold in {found.count(fails)} of {n}, undecided in {found.count('undecided')} of {n}"
    )


def _span(values) -> str:
    values = [v for v in values if v is not None]
    return f"from {min(values):+.2f} to {max(values):+.2f}" if values else "none fitted"


def report(rows: list[dict], ks: list[int], labels: list[str]) -> None:
    """The table (one row per setting) and a verdict per claim, with the numbers."""
    print(
        "| family | algorithm | feedback | gap at T | slope in T' | samples at T | slope in samples | "
        "gap at equal samples | exact gap at T | exact slope |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['family']} | {row['algorithm']} {row['concept']} | {row['feedback']} | {row['gap_mean']:.3g} "
            f"[{row['gap_min']:.3g}, {row['gap_max']:.3g}] | {_text(row['slope'], '+.2f')} | {_text(row['samples'], ',')} | "
            f"{_text(row['slope_in_samples'], '+.2f')} | {_text(row.get('gap_at_equal_samples'))} | "
            f"{_text(row.get('exact_gap_mean'))} | {_text(row.get('exact_slope'), '+.2f')} |"
        )
    by = {(r["family"], r["algorithm"], r["feedback"]): r for r in rows}
    pairs = [(f, a) for f in labels for a, _ in ALGORITHMS]
    full = [by[f, a, "full"] for f, a in pairs]
    print(
        f"claim 1, the paper's O~(1/T) under full information (slope <= {FAST:g}): "
        f"{_tally([classify(r['slope']) for r in full], 'fast', 'slow')} (family, algorithm) pairs; "
        f"slopes {_span(r['slope'] for r in full)}"
    )
    for k in ks:
        sampled = [by[f, a, f"sampled:{k}"] for f, a in pairs]
        print(
            f"claim 2, under sampled:{k} the gap falls like T^-1/2 or levels off (slope >= {SLOW:g}): "
            f"{_tally([classify(r['slope']) for r in sampled], 'slow', 'fast')} pairs; slopes {_span(r['slope'] for r in sampled)}"
        )
    finals = {(f, a): [by[f, a, f"sampled:{k}"]["gap_mean"] for k in ks] for f, a in pairs}
    falling = sum(all(y < x for x, y in zip(g, g[1:], strict=False)) for g in finals.values())
    closer = sum(
        abs(g[-1] - by[p + ("full",)]["gap_mean"]) < abs(g[0] - by[p + ("full",)]["gap_mean"]) for p, g in finals.items()
    )

    def ratios(j: int) -> str:
        r = [g[j] / max(by[p + ("full",)]["gap_mean"], 1e-300) for p, g in finals.items()]
        return f"sampled:{ks[j]} {min(r):.3g} to {max(r):.3g}"

    print(
        f"claim 3, more samples per estimate bring the gap at T back toward full information's: it falls with every "
        f"larger K in {falling} of {len(pairs)} pairs, and sampled:{ks[-1]}'s is closer to full information's than "
        f"sampled:{ks[0]}'s in {closer} of {len(pairs)}; gap at T over full information's: {ratios(0)}, {ratios(-1)}"
    )

    def best(p) -> int:
        gaps = {k: by[p + (f"sampled:{k}",)].get("gap_at_equal_samples") for k in ks}
        return min(ks, key=lambda k: math.inf if gaps[k] is None else gaps[k])

    print(
        f"per sample: after as many samples as sampled:{ks[0]} draws in T iterations, sampled:{ks[0]} has the "
        f"smallest gap in {sum(best(p) == ks[0] for p in pairs)} of {len(pairs)} pairs"
    )
    checked = [r for r in rows if "exact_gap_mean" in r]
    print(
        f"exact gaps ({checked[0]['family']}, every run, at T/10 and T): exact <= certified (to 1e-12) in "
        f"{sum(r['exact_within'] for r in checked)} of {sum(r['exact_count'] for r in checked)}, largest exact / certified "
        f"{max(r['exact_over_certified_max'] for r in checked):.3g}, smallest exact {min(r['exact_min'] for r in checked):.3g}"
    )
    purity = {f: np.concatenate([by[f, a, "full"]["largest_probability"] for a in ("smooth_ce", "smooth_cce")]) for f in labels}
    print(
        "how mixed the play is: under full information the last iterate's largest action probability (per run, "
        "smooth algorithm, player, step and state) has median "
        + " and ".join(f"{np.median(p):.3g} on the {f} (smallest {p.min():.3g})" for f, p in purity.items())
        + "; a sampled utility has variance 0 where the other players' strategies are pure"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-T", type=int, default=10_000, help="iterations per run")
    parser.add_argument("--seeds", type=int, default=8, help="seeds of the sampled runs on the paper's game")
    parser.add_argument("--games", type=int, default=4, help="random games")
    parser.add_argument("--game-seeds", type=int, default=4, help="seeds of the sampled runs on each random game")
    parser.add_argument("--samples", default="1,4,16,64", help="the K of the sampled:K models, separated by commas")
    parser.add_argument(
        "--states",
        type=int,
        default=3,
        help="states of each random game (with 2, the paper game's shape: the families share compiled programs)",
    )
    parser.add_argument(
        "--out", default="sweeps/feedback_rates", help="where the curves (curves.csv, summary.csv) and the figure go"
    )
    parser.add_argument("--figure", default=None, help="the figure's file (default: OUT/figures/feedback_rates.png)")
    args = parser.parse_args()
    if min(args.T, args.seeds, args.games, args.game_seeds, args.states) < 1:
        parser.error(
            f"-T, --seeds, --games, --game-seeds and --states must be at least 1, got {args.T}, {args.seeds}, "
            f"{args.games}, {args.game_seeds} and {args.states}"
        )
    try:
        ks = sorted({int(k) for k in args.samples.split(",")})
    except ValueError:
        ks = []
    if not ks or ks[0] < 1:
        parser.error(f"--samples: expected positive integers separated by commas, got {args.samples!r}")

    T = args.T
    at_exact = sorted({max(1, T // 10), T})
    # Log-spaced prefixes (20 per decade, every 10^k, and T), T/10, and T k_min / K: the prefix of
    # sampled:K with as many samples as sampled:k_min's T (exactly so under the smooth updates).
    t = np.unique(np.concatenate([log_grid(T, 20), at_exact, [max(1, T * ks[0] // k) for k in ks]])).astype(np.int64)
    feedbacks = ["full"] + [f"sampled:{k}" for k in ks]

    rows, curves, exact_points, labels = [], {}, {}, []
    for family, games, seeds, exact in families(args.games, args.seeds, args.game_seeds, args.states):
        labels.append(family)
        for algorithm, concept in ALGORITHMS:
            for feedback in feedbacks:
                row, curve, points = run_setting(family, games, seeds, exact, algorithm, concept, feedback, t, at_exact)
                rows.append(row)
                curves[family, algorithm, feedback] = curve
                if points is not None:
                    exact_points[family, algorithm, feedback] = points
    at_budget(rows, curves, t)

    out = Path(args.out)
    write_files(out, rows, curves, t)
    figure = Path(args.figure or out / "figures" / "feedback_rates.png")
    figure.parent.mkdir(parents=True, exist_ok=True)
    draw(figure, labels, feedbacks, curves, exact_points, t)

    print(
        f"T = {T:,}, eta = {ETA:g}; paper game: {args.seeds} seeds per sampled model; {args.games} random games "
        f"(N = 2, H = 2, S = {args.states}, A = 2), {args.game_seeds} seeds each; full information: one run per game"
    )
    print(
        f"gap at T: mean [min, max] over the runs of the output policy's certified gap; slopes: of the mean gap, log-log, "
        f"over T' in [T/10, T] (and over the samples drawn there); gap at equal samples: the mean gap after as many "
        f"samples as sampled:{ks[0]} draws in T iterations; exact: the mean exact gap at T, and its slope from T/10 to T"
    )
    report(rows, ks, labels)
    print(f"wrote {figure}")


if __name__ == "__main__":
    main()
