"""Figures of a sweep: convergence per game, and studies across games. PNG and PDF (matplotlib, Agg).

* Per game: the certified gap of the output policy versus ``T'`` (log-log, median and
  interquartile band over seeds, ``T^-1`` and ``T^-1/2`` guide lines) and gap x ``T'``; one line
  per algorithm, optimism and learning rate, whose legend gives the group's slope
  (the median of the per-run slopes of [`run_slope`][markovgames.experiments.run_slope], the number ``summarize`` shows).
* Across games (``x``): gap x ``T'`` at chosen decades ``T'`` against a grid parameter (horizon,
  states, players, actions, learning rate), median and interquartile range over every run
  (games and seeds) with that value.
* Slopes (``window``): the distribution of the per-run slopes over a window of checkpoints, one
  row per algorithm, optimism and learning rate, pooled over games and seeds.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._lock import directory_lock
from .._outputs import check_apart
from ._plots import save_figure
from ._summary import (
    CONCEPTS,
    PAPER_ORDER,
    RESULTS_FILE,
    Concept,
    GroupCurves,
    ResultsError,
    check_window,
    group_curves,
    result_rows,
    slope_mask,
    window_text,
)

__all__ = ["plot_sweep", "figure_stem", "ACROSS_PARAMETERS", "AcrossSeries", "gap_times_T_across", "slope_distributions"]

#: ``--x`` choices and the results column each one reads (``actions``: the largest ``A_i``).
ACROSS_PARAMETERS = {"horizon": "H", "states": "S", "players": "N", "actions": "A", "eta": "eta_value"}

_BASE_COLORS = {"smooth_ce": "#1f77b4", "stage_cce": "#d62728", "smooth_cce": "#2ca02c"}
_EXTRA = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
_DASHES = ["-", "--", "-.", ":"]


def figure_stem(game: str) -> str:
    """A file-name stem for a game label: ``random(N=2,H=2,...)`` -> ``random_N2_H2_...``."""
    stem = re.sub(r"[^A-Za-z0-9.+-]+", "_", game.replace("=", "")).strip("_.")
    return stem or "game"


def _plain(text: str) -> str:
    """``text`` (a game label or learning rate read from the results) as matplotlib draws it
    verbatim: a ``$`` would start mathematical notation, and a damaged one fail the figure."""
    return text.replace("$", r"\$")


def _shade(color: str, k: int, n: int) -> tuple[float, float, float]:
    """``color`` darkened/lightened for the ``k``-th of ``n`` learning rates."""
    import matplotlib.colors as mcolors

    rgb = np.array(mcolors.to_rgb(color))
    if n <= 1:
        return tuple(rgb)
    t = k / (n - 1)  # 0: darker, 1: lighter
    mixed = rgb * (1 - 0.55 * t) + 0.55 * t if t > 0 else rgb * 0.8
    return tuple(np.clip(mixed, 0, 1))


def _concept_label(curves: list[GroupCurves], concept: Concept) -> str:
    if concept != "auto":
        return f"certified {concept.upper()} gap"
    kinds = sorted({c.concept.upper() for c in curves})
    if len(kinds) == 1:
        return f"certified {kinds[0]} gap"
    return "certified CE/CCE gap"


def _draw_game(game: str, curves: list[GroupCurves], concept: Concept, out_stem: Path, window=None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(12.0, 4.8), constrained_layout=True)
    algorithms = list(dict.fromkeys(c.algorithm for c in curves))
    colors = {a: _BASE_COLORS.get(a, _EXTRA[k % len(_EXTRA)]) for k, a in enumerate(algorithms)}
    etas_of: dict[str, list[str]] = {}
    for c in curves:
        etas_of.setdefault(c.algorithm, [])
        if c.eta not in etas_of[c.algorithm]:
            etas_of[c.algorithm].append(c.eta)
    anchor = 0.0
    T_max = max(int(c.checkpoints[-1]) for c in curves)
    T_min = min(int(c.checkpoints[0]) for c in curves)
    start = float(min(max(10, T_min), T_max))
    for c in curves:
        k = etas_of[c.algorithm].index(c.eta)
        color = _shade(colors[c.algorithm], k, len(etas_of[c.algorithm]))
        style = "-" if c.optimistic else _DASHES[1 + (k % 3)]
        x = c.checkpoints.astype(float)
        med, lo, hi = c.median, c.quantile(0.25), c.quantile(0.75)
        slope = c.slope(window)
        n = len(c.run_ids)
        label = (
            f"{_plain(c.label)} [{n} run{'s' if n != 1 else ''}]: slope {slope:+.2f}" if np.isfinite(slope) else _plain(c.label)
        )
        for axis, factor in ((ax, 1.0), (ax_t, x)):
            ym, yl, yh = med * factor, lo * factor, hi * factor
            pos = ym > 0
            axis.plot(x[pos], ym[pos], style, color=color, linewidth=1.6, label=label if axis is ax else _plain(c.label))
            band = (yl > 0) & (yh > 0)
            if n > 1 and band.any():
                axis.fill_between(x[band], yl[band], yh[band], color=color, alpha=0.18, linewidth=0)
        positive = med > 0
        if positive.any():
            anchor = max(anchor, float(np.interp(start, x[positive], med[positive])))
        # Mark the ends of the window the slopes were fitted on.
        tail = slope_mask(c.checkpoints, c.T, window) & positive
        if tail.sum() >= 2:
            ax.plot(x[tail][[0, -1]], med[tail][[0, -1]], "|", color=color, markersize=8)
    if anchor > 0 and T_max > start:
        xs = np.array([start, float(T_max)])
        ax.plot(xs, anchor * (xs / start) ** -1.0, "--", color="0.45", linewidth=1.0, label=r"$\propto T^{-1}$")
        ax.plot(xs, anchor * (xs / start) ** -0.5, ":", color="0.45", linewidth=1.0, label=r"$\propto T^{-1/2}$")
    ylabel = _concept_label(curves, concept)
    for axis in (ax, ax_t):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("iterations T")
        axis.grid(True, which="major", alpha=0.3)
    ax.set_ylabel(ylabel)
    ax_t.set_ylabel(f"{ylabel} × T")
    note = " (CE for smooth_ce, CCE otherwise)" if ylabel == "certified CE/CCE gap" else ""
    ax.set_title(f"{_plain(game)}: median and IQR over runs{note}", fontsize=10)
    ax_t.set_title(f"{_plain(game)}: gap × T", fontsize=10)
    ax.legend(fontsize=7, loc="best", title=f"slope: median over runs, {window_text(window)}", title_fontsize=7)
    return save_figure(fig, out_stem, dpi=130)


def plot_sweep(
    results_dir: str | Path,
    out: str | Path | None = None,
    concept: Concept = "auto",
    *,
    window: tuple[float, float] | None = None,
    x: str | None = None,
    decades: Sequence[int] | None = None,
) -> list[Path]:
    """Draw a sweep's figures into ``out`` (default ``results_dir/figures``); return the files.

    One figure per game (``gaps_<game>``) is always drawn; ``window`` and ``x`` add the studies
    across games.

    Parameters
    ----------
    results_dir : a sweep directory (or its ``results.parquet``).
    out : the folder of the figures.
    concept : ``"auto"`` (each algorithm's own gap), ``"ce"`` or ``"cce"``.
    window : ``(low, high)``: fit the slopes on the checkpoints in ``[low, high]`` (default: the
        last two decades), in the legends, and draw the distribution of the per-run slopes
        (``slopes_<low>-<high>``).
    x : one of `ACROSS_PARAMETERS`: also draw gap x ``T'`` at ``decades`` against it
        (``gap_times_T_vs_<x>``).
    decades : the checkpoints ``T'`` of that figure (default: the last three decades ``10^k >= 10``
        that every run has).
    """
    window = check_window(window)
    results_dir = Path(results_dir)
    rows = result_rows(results_dir)
    curves = group_curves(rows, concept)
    across = gap_times_T_across(rows, x, decades, concept) if x is not None else None  # errors before drawing
    out = Path(out) if out is not None else (results_dir if results_dir.is_dir() else results_dir.parent) / "figures"
    # The figures never go where they would replace the results they are drawn from.
    check_apart(out, [results_dir / RESULTS_FILE if results_dir.is_dir() else results_dir], "out")
    # One writer at a time, as for every output directory.
    with directory_lock(out, "out"):
        out.mkdir(parents=True, exist_ok=True)
        return _draw_all(rows, curves, across, out, concept, window, x)


def _draw_all(rows, curves, across, out: Path, concept: Concept, window, x) -> list[Path]:
    """Draw every figure of `plot_sweep` into ``out`` (whose lock the caller holds)."""
    by_game: dict[str, list[GroupCurves]] = {}
    for c in curves:
        by_game.setdefault(c.game, []).append(c)
    paths: list[Path] = []
    used: set[str] = set()
    for game, group in by_game.items():
        stem = figure_stem(game)
        base, k = stem, 2
        while stem in used:
            stem, k = f"{base}-{k}", k + 1
        used.add(stem)
        paths += _draw_game(game, group, concept, out / f"gaps_{stem}", window)
    if across is not None and x is not None:  # across is computed exactly when x is given
        paths += _draw_across(across, x, concept, out / f"gap_times_T_vs_{x}")
    if window is not None:
        dist = slope_distributions(rows, window, concept)
        paths += _draw_slopes(dist, window, concept, out / f"slopes_{_short(window[0])}-{_short(window[1])}")
    return paths


def _short(value: float) -> str:
    """``1000.0`` -> ``1e3``, ``20000.0`` -> ``2e4``, ``2500.0`` -> ``2500`` (file names)."""
    exponent = int(np.floor(np.log10(value)))
    mantissa = value / 10.0**exponent
    return f"{int(mantissa)}e{exponent}" if mantissa == int(mantissa) else f"{value:g}"


# ---------------------------------------------------------------------------------------
# Across games
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AcrossSeries:
    """gap x ``T'`` at one decade against a grid parameter, for one algorithm/optimism(/eta).

    ``values[k]`` are the gap x ``T'`` of every run (games and seeds pooled) whose parameter is
    ``x[k]``; ``median``, ``q25`` and ``q75`` summarise them.
    """

    algorithm: str
    optimistic: bool
    eta: str | None  # None when the parameter is the learning rate itself
    concept: str
    decade: int
    x: np.ndarray
    values: tuple[np.ndarray, ...]

    @property
    def median(self) -> np.ndarray:
        return np.array([np.median(v) for v in self.values])

    @property
    def q25(self) -> np.ndarray:
        return np.array([np.quantile(v, 0.25) for v in self.values])

    @property
    def q75(self) -> np.ndarray:
        return np.array([np.quantile(v, 0.75) for v in self.values])

    @property
    def label(self) -> str:
        text = self.algorithm if self.optimistic else f"{self.algorithm} (non-opt.)"
        return text + ("" if self.eta is None else f", eta={self.eta}")


def _parameter(row: dict[str, Any], x: str) -> float | None:
    value = row[ACROSS_PARAMETERS[x]]
    if x == "actions":
        return float(max(int(a) for a in str(value).split("x")))
    return None if value is None else float(value)


def _concept_of(row: dict[str, Any], concept: Concept) -> str:
    return row["concept"] if concept == "auto" else concept


def gap_times_T_across(
    rows: list[dict[str, Any]], x: str, decades: Sequence[int] | None = None, concept: Concept = "auto"
) -> list[AcrossSeries]:
    """gap x ``T'`` at each of ``decades`` against the grid parameter ``x``, pooled over games and seeds.

    ``x`` is one of `ACROSS_PARAMETERS` (``actions``: the largest ``A_i`` of the game;
    ``eta``: the constant learning rate, so stage_cce's per-stage ``"theory"`` rate is left out).
    One series per algorithm, optimism, learning rate (unless ``x = "eta"``) and decade.

    Raises
    ------
    ResultsError
        An unknown ``x``, a decade that is not a checkpoint of every run, or no run with a value of ``x``.
    """
    if x not in ACROSS_PARAMETERS:
        raise ResultsError.for_argument("x", f"expected one of {', '.join(ACROSS_PARAMETERS)}, got {x!r}")
    if concept not in CONCEPTS:
        raise ResultsError.for_argument("concept", f"expected one of {', '.join(CONCEPTS)}, got {concept!r}")
    per_run: dict[str, set[int]] = {}
    for r in rows:
        per_run.setdefault(r["run_id"], set()).add(int(r["checkpoint"]))
    common = set.intersection(*per_run.values())
    available = sorted(c for c in common if c >= 10 and str(c).rstrip("0") == "1")
    if decades is None:
        decades = available[-3:]
        if not decades:
            raise ResultsError.for_argument("decades", "the runs share no checkpoint 10^k >= 10; name the checkpoints T' to use")
    decades = sorted({int(d) for d in decades})
    for d in decades:
        if d not in common:
            raise ResultsError.for_argument(
                "decades",
                f"T' = {d} is not a checkpoint of every run (decades they share: {', '.join(map(str, available)) or 'none'})",
            )
    groups: dict[tuple, dict[float, list[float]]] = {}
    skipped = 0
    for r in rows:
        T_prime = int(r["checkpoint"])
        if T_prime not in decades:
            continue
        value = _parameter(r, x)
        if value is None:
            skipped += 1
            continue
        c = _concept_of(r, concept)
        gap = float(r["certified_ce_gap"] if c == "ce" else r["certified_cce_gap"])
        key = (r["algorithm"], bool(r["optimistic"]), None if x == "eta" else r["eta"], c, T_prime)
        groups.setdefault(key, {}).setdefault(value, []).append(gap * T_prime)
    if not groups:
        raise ResultsError(f"--x {x}: no run has a value of it (stage_cce's 'theory' rate has no single eta)")
    order = {name: k for k, name in enumerate(PAPER_ORDER)}
    out = []
    for key in sorted(groups, key=lambda k: (order.get(k[0], 99), k[0], not k[1], str(k[2]), k[3], k[4])):
        by_x = groups[key]
        xs = sorted(by_x)
        out.append(
            AcrossSeries(
                algorithm=key[0],
                optimistic=key[1],
                eta=key[2],
                concept=key[3],
                decade=key[4],
                x=np.array(xs),
                values=tuple(np.array(by_x[v]) for v in xs),
            )
        )
    return out


_AXIS_LABELS = {
    "horizon": "horizon H",
    "states": "states S",
    "players": "players N",
    "actions": "actions (largest A_i)",
    "eta": "learning rate eta",
}


def _draw_across(series: list[AcrossSeries], x: str, concept: Concept, out_stem: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.8), constrained_layout=True)
    decades = sorted({s.decade for s in series})
    markers = ["o", "s", "^", "D", "v", "P"]
    algorithms = list(dict.fromkeys(s.algorithm for s in series))
    etas_of: dict[str, list] = {}
    for s in series:
        if s.eta not in etas_of.setdefault(s.algorithm, []):
            etas_of[s.algorithm].append(s.eta)
    for s in series:
        base = _BASE_COLORS.get(s.algorithm, _EXTRA[algorithms.index(s.algorithm) % len(_EXTRA)])
        color = _shade(base, etas_of[s.algorithm].index(s.eta), len(etas_of[s.algorithm]))
        d = decades.index(s.decade)
        med, lo, hi = s.median, s.q25, s.q75
        counts = [len(v) for v in s.values]
        runs = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
        ax.errorbar(
            s.x,
            med,
            yerr=[med - lo, hi - med],
            fmt=markers[d % len(markers)] + ("-" if s.optimistic else "--"),
            color=color,
            capsize=3,
            linewidth=1.4,
            markersize=5,
            alpha=0.45 + 0.55 * (d + 1) / len(decades),
            label=f"{_plain(s.label)}, T'={s.decade:,} [{runs} runs per point]",
        )
    ax.set_yscale("log")
    if x == "eta":
        ax.set_xscale("log")
    else:
        ax.set_xticks(sorted({float(v) for s in series for v in s.x}))
    ax.set_xlabel(_AXIS_LABELS[x])
    kinds = sorted({s.concept.upper() for s in series})
    ax.set_ylabel(f"certified {'/'.join(kinds)} gap × T'")
    ax.set_title(f"gap × T' against {_AXIS_LABELS[x]}: median and IQR over games and seeds", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, out_stem, dpi=130)


# ---------------------------------------------------------------------------------------
# Slope distributions
# ---------------------------------------------------------------------------------------
def slope_distributions(
    rows: list[dict[str, Any]], window: tuple[float, float], concept: Concept = "auto"
) -> dict[str, np.ndarray]:
    """Per algorithm, optimism and learning rate (its legend label), the slopes of all its runs
    over ``window`` ([`run_slope`][markovgames.experiments.run_slope]), pooled over games and seeds."""
    window = check_window(window)
    out: dict[str, list[float]] = {}
    for g in group_curves(rows, concept):
        slopes = g.run_slopes(window)
        out.setdefault(g.label, []).extend(float(v) for v in slopes if np.isfinite(v))
    return {label: np.array(slopes) for label, slopes in out.items()}


def _draw_slopes(dist: dict[str, np.ndarray], window, concept: Concept, out_stem: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    labels = [k for k, v in dist.items() if v.size]
    if not labels:
        raise ResultsError.for_argument(
            "window", "no run has two checkpoints with a positive gap there", f"{window[0]:g},{window[1]:g}"
        )
    fig, ax = plt.subplots(figsize=(7.2, 1.2 + 0.55 * len(labels)), constrained_layout=True)
    rng = np.random.default_rng(0)  # jitter of the points only
    # matplotlib >= 3.10 says orientation=, older versions vert= (deprecated since 3.11).
    horizontal = {"orientation": "horizontal"} if "orientation" in inspect.signature(ax.boxplot).parameters else {"vert": False}
    for k, label in enumerate(labels):
        v = dist[label]
        ax.boxplot([v], positions=[k], widths=0.5, showfliers=False, **horizontal)
        ax.plot(v, k + rng.uniform(-0.18, 0.18, v.size), "o", markersize=3, alpha=0.5, color="#1f77b4")
        ax.annotate(
            f"median {np.median(v):+.2f} ({v.size} runs)",
            (1.0, k),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    for ref, style in ((-1.0, "--"), (-0.5, ":")):
        ax.axvline(ref, linestyle=style, color="0.45", linewidth=1.0)
    ax.set_yticks(range(len(labels)), [_plain(label) for label in labels], fontsize=8)
    ax.invert_yaxis()  # the first group on top, as in the summary table
    ax.set_xlabel(f"log-log slope of the certified gap, T' in [{window[0]:g}, {window[1]:g}] (-1: O(1/T), -0.5: O(1/sqrt T))")
    ax.set_title("per-run slopes, pooled over games and seeds", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return save_figure(fig, out_stem, dpi=130)
