"""Convergence figures (matplotlib, drawn off-screen): gap versus T and gap times T versus T."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._atomic import atomic_write
from ._style import outside_legend, series_colors, use_agg

__all__ = ["Curve", "plot_gap_curves", "save_figure"]


@dataclass(frozen=True)
class Curve:
    """One line of a convergence figure.

    ``T`` and ``gap`` are the certified curve (dense); ``exact_T`` / ``exact_gap`` optional exact
    points drawn as markers, in the curve's colour. ``key`` picks the hue (one per algorithm),
    ``linestyle`` the line (e.g. dashed for a non-optimistic baseline beside its optimistic run);
    curves of one key and different line styles get different shades of its hue.
    """

    label: str
    key: str
    T: np.ndarray
    gap: np.ndarray
    exact_T: np.ndarray | None = None
    exact_gap: np.ndarray | None = None
    linestyle: str = "-"


def save_figure(fig, out_stem: Path, dpi: int = 150) -> list[Path]:
    """Write ``fig`` as ``out_stem``.png and .pdf, atomically (never a truncated figure), and close it."""
    import matplotlib.pyplot as plt

    paths = []
    for suffix in (".png", ".pdf"):
        # Appended, not with_suffix: a stem may hold a dot (a game labelled gamma=0.9 or c=0.5),
        # which with_suffix would take for a suffix and cut (two games' figures in one file).
        path = out_stem.with_name(out_stem.name + suffix)
        atomic_write(path, functools.partial(fig.savefig, format=suffix[1:], dpi=dpi))
        paths.append(path)
    plt.close(fig)
    return paths


def _guide(ax, T_max: float, anchor: float, power: float, style: str):
    xs = np.array([max(10.0, T_max / 1e3), T_max])
    (line,) = ax.plot(xs, anchor * (xs / xs[0]) ** power, style, color="0.45", linewidth=1.0)
    return line


def plot_gap_curves(curves: Sequence[Curve], out_stem: Path, *, times_T: bool, title: str, settings: str = "") -> list[Path]:
    """Draw Figure 1 (``times_T=False``: gap vs T) or Figure 2 (gap x T vs T); write PNG and PDF.

    ``settings`` (the run's settings that differ from the defaults, e.g. ``"eta=0.1, T = 1,000"``)
    is the title's second line; the legend lies below the axes.
    """
    plt = use_agg()
    fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
    T_max = max(float(c.T[-1]) for c in curves)
    colors = series_colors([(c.key, c.linestyle) for c in curves])
    # "(certified)" tells the lines from the exact points; a figure without exact points says it once, in its title.
    mixed = any(c.exact_T is not None and len(c.exact_T) for c in curves)
    handles, labels = [], []
    for c in curves:
        color = colors[(c.key, c.linestyle)]
        y = c.gap * c.T if times_T else c.gap
        positive = y > 0
        handles += ax.plot(c.T[positive], y[positive], c.linestyle, color=color, linewidth=1.6)
        labels.append(f"{c.label} (certified)" if mixed else c.label)
        if c.exact_T is not None and c.exact_gap is not None and len(c.exact_T):
            ye = c.exact_gap * c.exact_T if times_T else c.exact_gap
            pos = ye > 0
            handles += ax.plot(c.exact_T[pos], ye[pos], "o", color=color, markersize=5, markerfacecolor="white")
            labels.append(f"{c.label} (exact)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    guides: tuple[list, list[str]] = ([], [])
    if not times_T:
        start = max(10.0, T_max / 1e3)
        top = max(float(np.interp(start, c.T, c.gap)) for c in curves)
        guides = (
            [_guide(ax, T_max, top, -1.0, "--"), _guide(ax, T_max, top, -0.5, ":")],
            [r"$\propto T^{-1}$", r"$\propto T^{-1/2}$"],
        )
        ax.set_ylabel("gap of the output policy")
    else:
        ax.set_ylabel(r"gap $\times$ T")
    ax.set_xlabel("iterations T")
    ax.set_title(title + (f"\n{settings}" if settings else ""), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    outside_legend(fig, handles, labels, extra=guides)
    return save_figure(fig, out_stem)
