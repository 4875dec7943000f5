"""At what rate does V-learning's output reach an equilibrium, per sample of play?

V-learning (docs/vlearning.md) learns from play: each player sees only its own rewards and the
states it visits, one episode of ``H`` transitions at a time. Its output policy is proved to be an
``eps``-CCE (``cce-v``, Jin, Liu, Wang and Yu 2021; ``stage-v``, Mao and Basar 2022) or an
``eps``-CE (``ce-v``, Song, Mei and Bai 2021) after ``O~(1/eps^2)`` episodes: the gap falls like
``O~(1/sqrt(samples))``, slope -1/2 on log-log axes. This study runs the three algorithms for ``K``
episodes on the paper's game and on a few random games (``N = 2, H = 2, S = 3, A_i = 2``; ``S`` is
``--states``), several
seeds per game (one ``run_vlearning_batch`` call per game and algorithm), and reports the certified
gap of the output policy after every number of episodes (``prefix_curves``: computed with the true
game, an upper bound on the exact gap), median and interquartile range over the runs, against the
episodes and against the samples (``H`` per episode), with log-log slopes over ``[K/10, K]``; on the
paper's game also the exact gap (``exact_cce_gap``, ``exact_ce_gap`` of ``policy.prefix(K')``) at
``K/10`` and ``K`` for every seed, checked to lie below the certified one. For comparison on the
samples axis it runs the paper's ``smooth_cce`` and ``stage_cce`` (``eta = 0.2``) under sampled
feedback (``sampled:1``: a generative model, docs/feedback.md) for as many iterations as stay
within the same number of samples, ``K H``, and under full information for as many iterations;
and the same two dynamics (their learner, value update and ``eta``) fed **bandit feedback** from
the same ``K`` episodes of play (``bandit:1`` and ``bandit:16``: the learners update once per
round of ``M`` episodes, with importance-weighted estimates, docs/vlearning.md), with the default
rate, which decays (``min(eta, M / sqrt(c))`` at a state's ``c``-th visiting round), and the default
implicit exploration, which decays (``ix = (eta H / 2) / sqrt(c)``, EXP3-IX's ``eta_t / 2`` with
rates falling like ``1/sqrt(t)``, Neu 2015); on ``bandit:1`` also with the constant rate ``eta``
(the former default), and on ``bandit:16`` with the constant ``ix = eta H / 2`` (the former default)
and with none (``ix = 0``, unbiased estimates): what decreasing rates and bonuses buy over the
paper's constant rate, and what a constant rate's or implicit exploration's curve stalls on.

    python examples/vlearning_rates.py   # K = 10^5 episodes
    python examples/vlearning_rates.py -K 2000 --seeds 2 --games 1 --game-seeds 2 --states 2   # a quick look
"""

import argparse
import csv
import math
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from markovgames.dynamics import run_batch, run_vlearning_batch, stage_lengths  # noqa: E402
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, prefix_curves  # noqa: E402
from markovgames.experiments import fit_loglog_slope, log_grid  # noqa: E402
from markovgames.games import paper_game, random_game  # noqa: E402

#: V-learning's algorithms and the gap each is proved to close.
VLEARNING = [("cce-v", "cce"), ("ce-v", "ce"), ("stage-v", "cce")]

#: The paper's algorithms run for comparison, each with its CCE gap, under these feedback models.
OFTRL = [("smooth_cce", "cce"), ("stage_cce", "cce")]
FEEDBACKS = ["sampled:1", "full"]
#: ... and on bandit feedback from play, rounds of M episodes (run_vlearning_batch), with the
#: default learning rate (decaying: min(eta, M / sqrt(c))) and implicit exploration (decaying:
#: (eta H / 2) / sqrt(c)) or, where the label says so, a constant rate or a constant ix.
BANDITS = ["bandit:1", "bandit:1 rate=constant", "bandit:16", "bandit:16 ix=0.2", "bandit:16 ix=0"]

#: The paper's learning rate, for the OFTRL runs.
ETA = 0.2

#: A slope within NEAR of -1/2 is "near -1/2" (the tolerance of `markovgames reproduce`); below
#: that band it is faster, above it slower.
NEAR = 0.15

#: Exact gaps may exceed the certified ones by rounding only.
ROUNDING = 1e-12

#: Gaps are drawn no lower than this on the log scales.
FLOOR = 1e-8


def families(games: int, seeds: int, game_seeds: int, states: int = 3):
    """(label, [(game, its seeds)], whether the exact gaps are computed too)."""
    randoms = [
        random_game(num_players=2, horizon=2, num_states=states, num_actions=2, seed_or_rng=7000 + k) for k in range(games)
    ]
    return [
        ("paper game", [(paper_game(), list(range(seeds)))], True),
        ("random games", [(g, list(range(game_seeds))) for g in randoms], False),
    ]


def slope(x: np.ndarray, y: np.ndarray) -> float | None:
    """The log-log slope of ``y`` against ``x`` over the last decade, ``x >= x[-1]/10`` (None with
    fewer than two points there)."""
    x = np.asarray(x, dtype=float)
    keep = x >= x[-1] / 10
    if keep.sum() < 2 or np.ptp(np.log(x[keep])) == 0:
        return None
    fitted = fit_loglog_slope(x[keep], np.asarray(y)[keep])
    return fitted if math.isfinite(fitted) else None


def classify(s: float | None) -> str:
    """'near' (within NEAR of -1/2), 'faster', 'slower', or 'undecided' (no slope)."""
    if s is None:
        return "undecided"
    return "near" if abs(s + 0.5) <= NEAR else "faster" if s < -0.5 else "slower"


def quartiles(gap: np.ndarray) -> np.ndarray:
    """``(3, prefixes)``: the first quartile, the median and the third quartile over the runs."""
    return np.percentile(gap, [25, 50, 75], axis=0)


def draws_used(game, algorithm: str, T: int) -> int:
    """What ``sampled:1`` draws in ``T`` iterations (docs/feedback.md): ``N H S`` opponent profiles
    per iteration and ``(H - 1) S prod(A)`` next states per value update (every iteration for
    ``smooth_cce``, every finished stage for ``stage_cce``)."""
    H, S = game.horizon, game.num_states
    profiles, next_states = game.num_players * H * S, (H - 1) * S * math.prod(game.num_actions)
    updates = T if algorithm == "smooth_cce" else int(np.searchsorted(np.cumsum(stage_lengths(H, T)), T, side="right"))
    return T * profiles + updates * next_states


def iterations_within(game, algorithm: str, budget: int) -> int:
    """The most iterations whose ``sampled:1`` draws stay within ``budget`` (at least one)."""
    lo, hi = 1, max(1, budget)
    while lo < hi:  # the largest T in [1, hi] with draws_used(T) <= budget (or 1)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if draws_used(game, algorithm, mid) <= budget else (lo, mid - 1)
    return lo


def bandit_options(label: str) -> tuple[int, dict]:
    """``M`` and the keyword arguments of ``run_vlearning_batch`` for a setting of `BANDITS`
    (``"bandit:M"``, the default decaying rate and implicit exploration; ``"bandit:M ix=X"``, the
    constant ``X``; ``"bandit:M rate=constant"``, the constant rate ``eta``)."""
    feedback, _, ix = label.partition(" ix=")
    feedback, _, rate = feedback.partition(" rate=")
    options = {"feedback": feedback, "eta": ETA} | ({"ix": float(ix)} if ix else {}) | ({"bandit_rate": rate} if rate else {})
    return int(feedback.partition(":")[2]), options


def run_vlearning_setting(family, members, exact, algorithm, concept, K, feedback="play"):
    """One algorithm on one family from play: a ``run_vlearning_batch`` call per game (V-learning,
    ``feedback = "play"``, or a paper's dynamic on a setting of `BANDITS`: as many whole rounds of
    ``M`` episodes as fit in ``K``). Its row of the table, its curves (per round), its exact points and
    the exact gaps above their certified bounds (if any)."""
    gaps, cce_gaps, exact_gaps, certified_at, above = [], [], [], [], []
    evaluate = exact_ce_gap if concept == "ce" else exact_cce_gap
    H = members[0][0].horizon
    M, options = (1, {}) if feedback == "play" else bandit_options(feedback)
    rounds = max(1, K // M)
    at_exact = sorted({-(-rounds // 10), rounds})  # K/10 rounded up: in the last decade, as the slopes' points
    prefixes = np.unique(np.concatenate([log_grid(rounds, 20), at_exact])).astype(np.int64)
    for game, seeds in members:
        for result in run_vlearning_batch(game, algorithm, rounds * M, seeds, **options):
            assert result.samples_used == rounds * M * H and result.rounds == rounds
            curves = prefix_curves(game, result.policy, prefixes)
            gap = curves.certified_ce_gap if concept == "ce" else curves.certified_cce_gap
            gaps.append(gap)
            cce_gaps.append(curves.certified_cce_gap)
            if exact:
                ex = [evaluate(game, result.policy.prefix(k)).gap for k in at_exact]
                cert = gap[np.searchsorted(prefixes, at_exact)]
                exact_gaps.append(ex)
                certified_at.append(cert)
                above += [
                    f"{family}, {algorithm} {feedback}, seed {result.seed}, round {k:,}: exact {concept.upper()} gap {e!r} "
                    f"above the certified {c!r}"
                    for k, e, c in zip(at_exact, ex, cert, strict=True)
                    if e > c + ROUNDING
                ]
    gaps, cce_gaps = np.array(gaps), np.array(cce_gaps)
    q, samples = quartiles(gaps), prefixes * M * H
    row = {
        "family": family,
        "algorithm": algorithm,
        "concept": concept.upper(),
        "feedback": feedback,
        "runs": len(gaps),
        "steps": int(rounds),
        "samples": int(samples[-1]),
        "gap_q25": float(q[0, -1]),
        "gap_median": float(q[1, -1]),
        "gap_q75": float(q[2, -1]),
        "cce_gap_median": float(np.median(cce_gaps[:, -1])),
        "slope": slope(prefixes, q[1]),
        "slope_in_samples": slope(samples, q[1]),
        "run_slopes_median": _median([slope(prefixes, g) for g in gaps]),
    }
    if feedback != "play":  # the implicit exploration used: its scale and schedule (the result records them)
        row["ix"], row["ix_schedule"], row["bandit_rate"] = result.ix, result.ix_schedule, result.bandit_rate
    points = None
    if exact:
        ex, cert = np.array(exact_gaps), np.array(certified_at)  # (runs, len(at_exact))
        points = (np.asarray(at_exact), np.median(ex, axis=0))
        row.update(
            exact_first_median=float(points[1][0]),
            exact_median=float(points[1][-1]),
            exact_slope=slope(points[0], points[1]) if len(at_exact) > 1 else None,
            exact_min=float(ex.min()),
            exact_within=int(np.sum(ex <= cert + ROUNDING)),
            exact_count=int(ex.size),
            exact_over_certified_max=float(np.max(ex / np.maximum(cert, FLOOR))),
        )
    return row, (prefixes, samples, gaps), points, above


def run_oftrl_setting(family, members, algorithm, concept, feedback, budget):
    """One paper algorithm, one feedback model, one family, in one ``run_batch`` call, for as many
    iterations as ``sampled:1`` draws within ``budget`` samples (full information: as many
    iterations, one run per game, which draws nothing)."""
    game = members[0][0]
    T = iterations_within(game, algorithm, budget)
    full = feedback == "full"
    games = [g for g, seeds in members for _ in ([0] if full else seeds)]
    seeds = None if full else [s for _, ss in members for s in ss]
    t = np.unique(np.concatenate([log_grid(T, 20), [max(1, T // 10), T]])).astype(np.int64)
    result = run_batch(
        games, algorithm, T=T, etas=ETA, feedback=feedback, seeds=seeds, checkpoints=[int(p) for p in t], record_trajectory=False
    )
    gap = result.certified_ce_gap if concept == "ce" else result.certified_cce_gap
    samples = result.samples_used
    if samples is not None:
        planned = draws_used(game, algorithm, T)
        assert int(samples[-1]) == planned, (algorithm, int(samples[-1]), planned)
    q = quartiles(gap)
    row = {
        "family": family,
        "algorithm": algorithm,
        "concept": concept.upper(),
        "feedback": feedback,
        "runs": len(result),
        "steps": T,
        "samples": None if samples is None else int(samples[-1]),
        "gap_q25": float(q[0, -1]),
        "gap_median": float(q[1, -1]),
        "gap_q75": float(q[2, -1]),
        "cce_gap_median": float(np.median(result.certified_cce_gap[:, -1])),
        "slope": slope(t, q[1]),
        "slope_in_samples": None if samples is None else slope(samples, q[1]),
        "run_slopes_median": _median([slope(t, g) for g in gap]),
    }
    return row, (t, samples, gap)


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def write_files(out: Path, rows: list[dict], curves: dict) -> None:
    """``curves.csv`` (per setting and prefix: samples, quartiles and range of the gap over the
    runs) and ``summary.csv`` (the table)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "curves.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["family", "algorithm", "feedback", "step", "samples", "q25_gap", "median_gap", "q75_gap", "min_gap", "max_gap"]
        )
        for (family, algorithm, feedback), (steps, samples, gap) in curves.items():
            q = quartiles(gap)
            for k, p in enumerate(steps):
                stats = (q[0, k], q[1, k], q[2, k], gap[:, k].min(), gap[:, k].max())
                writer.writerow(
                    [family, algorithm, feedback, int(p), "" if samples is None else int(samples[k])]
                    + [repr(float(v)) for v in stats]
                )
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(out / "summary.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, columns, restval="")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)


STYLES = {
    "cce-v": dict(color="tab:blue", ls="-"),
    "ce-v": dict(color="tab:purple", ls="-"),
    "stage-v": dict(color="tab:green", ls="-"),
    "smooth_cce": dict(color="tab:orange", ls="--"),
    "stage_cce": dict(color="tab:red", ls="--"),
}
#: The paper's dynamics on bandit feedback (their own panel): their colours, a line style per setting.
BANDIT_LINES = {
    "bandit:1": ":",
    "bandit:1 rate=constant": (0, (5, 2, 1, 2, 1, 2)),
    "bandit:16": "-.",
    "bandit:16 ix=0.2": (0, (1, 4)),
    "bandit:16 ix=0": "--",
}


def style(algorithm: str, feedback: str) -> dict:
    return {**STYLES[algorithm], "ls": BANDIT_LINES[feedback]} if feedback in BANDIT_LINES else STYLES[algorithm]


def draw(figure: Path, labels: list[str], curves: dict, exact_points: dict, K: int) -> None:
    """Per family: V-learning's certified gap against the episodes (exact gaps as circles), and
    against the samples beside OFTRL's under sampled:1 feedback, and beside OFTRL's on bandit
    feedback from the same episodes (a panel each)."""
    panels = ["V-learning, against episodes", "beside sampled:1 OFTRL, against samples", "beside bandit OFTRL, against samples"]
    fig, axes = plt.subplots(len(labels), len(panels), figsize=(17, 5 * len(labels)), squeeze=False)
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.07, top=0.88, hspace=0.3, wspace=0.15)
    for f, family in enumerate(labels):
        for axis, ax in enumerate(axes[f]):
            settings = [(a, c, "play") for a, c in VLEARNING]
            if axis == 1:
                settings += [(a, c, "sampled:1") for a, c in OFTRL]
            if axis == 2:
                settings += [(a, c, b) for a, c in OFTRL for b in BANDITS]
            for algorithm, concept, feedback in settings:
                steps, samples, gap = curves[family, algorithm, feedback]
                x = steps if axis == 0 else samples
                q = np.maximum(quartiles(gap), FLOOR)
                label = f"{algorithm} ({concept.upper()})" + ("" if feedback == "play" else f", {feedback}")
                ax.plot(x, q[1], lw=1.4, label=label, **style(algorithm, feedback))
                # Lighter bands for the ten bandit settings, which share two colours in their panel.
                alpha = 0.07 if feedback in BANDIT_LINES else 0.15
                ax.fill_between(x, q[0], q[2], color=STYLES[algorithm]["color"], alpha=alpha)
                if axis == 0 and (family, algorithm) in exact_points:
                    px, py = exact_points[family, algorithm]
                    ax.plot(px, np.maximum(py, FLOOR), "o", color=STYLES[algorithm]["color"], mfc="white", ms=6)
            # Slope -1/2 through cce-v's median gap at the start of the last decade.
            steps, samples, gap = curves[family, "cce-v", "play"]
            x = (steps if axis == 0 else samples).astype(float)
            if x[-1] >= 10:
                xs = x[x >= x[-1] / 10]
                anchor = float(np.interp(xs[0], x, np.median(gap, axis=0)))
                ax.plot(xs, 1.5 * anchor * (xs / xs[0]) ** -0.5, "--", color="0.4", lw=1)
            ax.set(xscale="log", yscale="log", xlabel="episodes K'" if axis == 0 else "samples (transitions or draws)")
            ax.set_title(f"{family}: {panels[axis]}", fontsize=10)
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.grid(True, which="major", alpha=0.3)
            if axis == 0:
                ax.set_ylabel("certified gap (median, IQR over runs)")
            ax.legend(fontsize=8, loc="lower left")
    fig.suptitle(
        f"Certified gap of the output policy: V-learning from play (K = {K:,} episodes), OFTRL (eta = {ETA:g}) with "
        "sampled:1 feedback within as many samples, and OFTRL on bandit feedback from the same episodes\n(dotted: "
        "bandit:1, dash-dot: bandit:16, both with the decaying rate and ix; dash-dot-dot: bandit:1 with the constant rate; "
        "sparse dots: bandit:16 with the constant ix = 0.2, dashed: with ix = 0; median and IQR over the runs; "
        "circles: median exact gaps at K/10 and K; grey: slope -1/2)",
        fontsize=10,
    )
    fig.savefig(figure, dpi=60)


def _text(value, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec)


def report(rows: list[dict], labels: list[str], K: int, budget: int) -> None:
    """The table (one row per setting) and a verdict per algorithm, with the numbers."""
    print(
        "| family | algorithm | feedback | runs | episodes or iterations | samples | gap at the end, median [IQR] | "
        "slope in episodes or iterations | slope in samples | exact gap at K/10, K (median) | exact slope |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        exact = f"{r['exact_first_median']:.3g}, {r['exact_median']:.3g}" if "exact_median" in r else "-"
        print(
            f"| {r['family']} | {r['algorithm']} {r['concept']} | {r['feedback']} | {r['runs']} | {r['steps']:,} | "
            f"{_text(r['samples'], ',')} | {r['gap_median']:.3g} [{r['gap_q25']:.3g}, {r['gap_q75']:.3g}] | "
            f"{_text(r['slope'], '+.2f')} | {_text(r['slope_in_samples'], '+.2f')} | {exact} | "
            f"{_text(r.get('exact_slope'), '+.2f')} |"
        )
    by = {(r["family"], r["algorithm"], r["feedback"]): r for r in rows}
    lo, hi = -0.5 - NEAR, -0.5 + NEAR
    settings = [(a, "play") for a, _ in VLEARNING] + [(a, f) for a, _ in OFTRL for f in ["sampled:1", *BANDITS]]
    for algorithm, feedback in settings:
        found = [by[f, algorithm, feedback] for f in labels]
        kinds = [classify(r["slope_in_samples"]) for r in found]
        n = len(kinds)
        name = algorithm if feedback == "play" else f"{algorithm} {feedback}"
        print(
            f"{name} ({found[0]['concept']} gap): slope in samples "
            + " and ".join(f"{_text(r['slope_in_samples'], '+.2f')} on the {f}" for f, r in zip(labels, found, strict=True))
            + f"; near -1/2 (from {lo:g} to {hi:g}) in {kinds.count('near')} of {n}, faster in {kinds.count('faster')} "
            f"of {n}, slower in {kinds.count('slower')} of {n}, undecided in {kinds.count('undecided')} of {n}"
        )
    for f in labels:
        vl = {a: by[f, a, "play"] for a, _ in VLEARNING}
        sampled = {a: by[f, a, "sampled:1"] for a, _ in OFTRL}
        full = {a: by[f, a, "full"] for a, _ in OFTRL}
        bandit = {(a, b): by[f, a, b] for a, _ in OFTRL for b in BANDITS}
        best_vl = min(r["cce_gap_median"] for r in vl.values())
        best_sampled = min(r["gap_median"] for r in sampled.values())
        print(
            f"{f}, median certified gap within {budget:,} samples: "
            + ", ".join(
                f"{a} {r['gap_median']:.3g}" + (f" (CE; its CCE gap {r['cce_gap_median']:.3g})" if r["concept"] == "CE" else "")
                for a, r in vl.items()
            )
            + "; "
            + ", ".join(f"{a} sampled:1 {r['gap_median']:.3g} ({r['steps']:,} iterations)" for a, r in sampled.items())
            + "; full information, as many iterations: "
            + ", ".join(f"{a} {r['gap_median']:.3g}" for a, r in full.items())
            + "; bandit feedback, the same episodes: "
            + ", ".join(f"{a} {b} {r['gap_median']:.3g}" for (a, b), r in bandit.items())
            + "; V-learning's smallest CCE gap over bandit OFTRL's smallest: "
            + f"{best_vl / max(min(r['gap_median'] for r in bandit.values()), 1e-300):.3g}"
            + f"; V-learning's smallest CCE gap over sampled OFTRL's smallest: {best_vl / max(best_sampled, 1e-300):.3g}"
        )
    checked = [r for r in rows if "exact_median" in r]
    print(
        f"exact gaps ({checked[0]['family']}, every seed, at K/10 and K): exact <= certified (to {ROUNDING:g}) in "
        f"{sum(r['exact_within'] for r in checked)} of {sum(r['exact_count'] for r in checked)}, largest exact / "
        f"certified {max(r['exact_over_certified_max'] for r in checked):.3g}, smallest exact "
        f"{min(r['exact_min'] for r in checked):.3g}"
    )


def fail_if_above(above: list[str]) -> None:
    """Exit with an error naming every exact gap above its certified bound (which cannot happen
    unless an evaluator is wrong: the certified bound reveals more to the deviator)."""
    if above:
        sys.exit("error: exact gaps above their certified bounds, which cannot happen:\n" + "\n".join(above))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-K", type=int, default=100_000, help="episodes per V-learning run")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per algorithm on the paper's game")
    parser.add_argument("--games", type=int, default=4, help="random games")
    parser.add_argument("--game-seeds", type=int, default=4, help="seeds per algorithm on each random game")
    parser.add_argument(
        "--states",
        type=int,
        default=3,
        help="states of each random game (with 2, the paper game's shape: the families share compiled programs)",
    )
    parser.add_argument(
        "--out", default="sweeps/vlearning_rates", help="where the curves (curves.csv, summary.csv) and the figure go"
    )
    parser.add_argument("--figure", default=None, help="the figure's file (default: OUT/figures/vlearning_rates.png)")
    args = parser.parse_args()
    if min(args.K, args.seeds, args.games, args.game_seeds, args.states) < 1:
        parser.error(
            f"-K, --seeds, --games, --game-seeds and --states must be at least 1, got {args.K}, {args.seeds}, "
            f"{args.games}, {args.game_seeds} and {args.states}"
        )

    K = args.K
    rows, curves, exact_points, labels, above = [], {}, {}, [], []
    for family, members, exact in families(args.games, args.seeds, args.game_seeds, args.states):
        labels.append(family)
        budget = K * members[0][0].horizon
        for algorithm, concept in VLEARNING:
            row, curve, points, wrong = run_vlearning_setting(family, members, exact, algorithm, concept, K)
            rows.append(row)
            curves[family, algorithm, "play"] = curve
            above += wrong
            if points is not None:
                exact_points[family, algorithm] = points
        for algorithm, concept in OFTRL:
            for feedback in FEEDBACKS:
                row, curve = run_oftrl_setting(family, members, algorithm, concept, feedback, budget)
                rows.append(row)
                curves[family, algorithm, feedback] = curve
            for feedback in BANDITS:
                row, curve, _, wrong = run_vlearning_setting(family, members, exact, algorithm, concept, K, feedback)
                rows.append(row)
                curves[family, algorithm, feedback] = curve
                above += wrong

    out = Path(args.out)
    write_files(out, rows, curves)
    figure = Path(args.figure or out / "figures" / "vlearning_rates.png")
    figure.parent.mkdir(parents=True, exist_ok=True)
    draw(figure, labels, curves, exact_points, K)

    print(
        f"K = {K:,} episodes, H = 2: {budget:,} samples per V-learning run; paper game: {args.seeds} seeds; "
        f"{args.games} random games (N = 2, H = 2, S = {args.states}, A = 2), {args.game_seeds} seeds each; OFTRL (eta = {ETA:g}): "
        f"sampled:1 with the same seeds, full information one run per game, bandit:M with the same seeds and episodes "
        f"(rate decaying, min(eta, M / sqrt(c)), and implicit exploration decaying, (eta H / 2) / sqrt(c) = {ETA:g} / "
        "sqrt(c), at a state's c-th visiting round, unless the row names a constant rate or ix)"
    )
    print(
        "gap: the output policy's certified gap (CE for ce-v, CCE otherwise), median [first, third quartile] over "
        "the runs; slopes: of the median gap, log-log, over the last decade (K' in [K/10, K], and the samples there); "
        "samples: H per episode for V-learning and bandit feedback (as many whole rounds of M episodes as fit in K), "
        "the draws of sampled:1 for OFTRL (as many as fit within K H); steps: episodes (V-learning), rounds "
        "(bandit:M) or iterations"
    )
    report(rows, labels, K, budget)
    print(f"wrote {figure}")
    fail_if_above(above)


if __name__ == "__main__":
    main()
