"""Convergence figures of a sweep: one figure per game, median and interquartile band over seeds.

Each figure has two panels: the certified gap of the output policy versus ``T'`` (log-log, with
``T^-1`` and ``T^-1/2`` guide lines) and gap x ``T'``. One line per algorithm, optimism and
learning rate; the legend gives the fitted log-log slope of the median over the last two
decades of checkpoints. Written as PNG and PDF (matplotlib, Agg).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ._plots import save_figure
from ._summary import Concept, GroupCurves, group_curves, load_results, tail_mask

__all__ = ["plot_sweep", "figure_stem"]

_BASE_COLORS = {"smooth_ce": "#1f77b4", "stage_cce": "#d62728", "smooth_cce": "#2ca02c"}
_EXTRA = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
_DASHES = ["-", "--", "-.", ":"]


def figure_stem(game: str) -> str:
    """A file-name stem for a game label: ``random(N=2,H=2,...)`` -> ``random_N2_H2_...``."""
    stem = re.sub(r"[^A-Za-z0-9.+-]+", "_", game.replace("=", "")).strip("_.")
    return stem or "game"


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


def _draw_game(game: str, curves: list[GroupCurves], concept: Concept, out_stem: Path) -> list[Path]:
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
        slope = c.median_slope
        n = len(c.run_ids)
        label = f"{c.label} [{n} run{'s' if n != 1 else ''}]: slope {slope:+.2f}" if np.isfinite(slope) else f"{c.label}"
        for axis, factor in ((ax, 1.0), (ax_t, x)):
            ym, yl, yh = med * factor, lo * factor, hi * factor
            pos = ym > 0
            axis.plot(x[pos], ym[pos], style, color=color, linewidth=1.6, label=label if axis is ax else c.label)
            band = (yl > 0) & (yh > 0)
            if n > 1 and band.any():
                axis.fill_between(x[band], yl[band], yh[band], color=color, alpha=0.18, linewidth=0)
        positive = med > 0
        if positive.any():
            anchor = max(anchor, float(np.interp(start, x[positive], med[positive])))
        # Mark the points the slope was fitted on.
        tail = tail_mask(c.checkpoints, c.T) & positive
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
    ax.set_title(f"{game}: median and IQR over runs{note}", fontsize=10)
    ax_t.set_title(f"{game}: gap × T", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    return save_figure(fig, out_stem, dpi=130)


def plot_sweep(results_dir: str | Path, out: str | Path | None = None, concept: Concept = "auto") -> list[Path]:
    """Draw one figure per game of a sweep into ``out`` (default ``results_dir/figures``); return the files."""
    results_dir = Path(results_dir)
    rows = load_results(results_dir)
    curves = group_curves(rows, concept)
    out = Path(out) if out is not None else (results_dir if results_dir.is_dir() else results_dir.parent) / "figures"
    out.mkdir(parents=True, exist_ok=True)
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
        paths += _draw_game(game, group, concept, out / f"gaps_{stem}")
    return paths
