"""What every figure shares: one colour per series, a legend outside the data, a title with the settings.

* Colours: one hue per algorithm (the paper's blue, red and green for its three), and within an
  algorithm one shade per variant (optimism, learning rate), so that no two series of a figure
  have the same colour; `series_colors` assigns them.
* Legends: `outside_legend` places the legend in the figure's margin below the axes, never
  over the data, in as many columns as fit; a legend of more entries than fit lists the first
  ones and says how many more series there are.
* Titles: `settings_text` writes the settings of a figure that differ from the defaults
  (``no optimism``, ``eta=0.1``, ``float32``, ...), which the title states once rather than every
  legend entry.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

__all__ = [
    "PAPER_COLORS",
    "DEFAULT_ETA",
    "algorithm_colors",
    "series_colors",
    "shade",
    "outside_legend",
    "settings_text",
    "variant_text",
    "use_agg",
]

#: The paper's algorithms' colours, in every figure.
PAPER_COLORS = {"smooth_ce": "#1f77b4", "stage_cce": "#d62728", "smooth_cce": "#2ca02c"}
#: More hues, for other algorithms (tab10's, less the paper's three), then a colour map's.
_EXTRA = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e"]

#: The learning rate of a run that names none (``run --eta``, a sweep's ``etas``, ``reproduce --eta``).
DEFAULT_ETA = 0.2


def use_agg():
    """``matplotlib.pyplot`` on the off-screen Agg backend (figures are only ever written to files)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def algorithm_colors(algorithms: Iterable[str]) -> dict[str, str]:
    """A distinct hue per algorithm: the paper's for its own, then others in order."""
    import matplotlib.colors as mcolors

    names = list(dict.fromkeys(algorithms))
    others = [a for a in names if a not in PAPER_COLORS]
    palette = list(_EXTRA)
    if len(others) > len(palette):  # many algorithms: sample a cyclic colour map for the rest
        import matplotlib

        cmap = matplotlib.colormaps["hsv"]
        extra = len(others) - len(palette)
        palette += [mcolors.to_hex(cmap(k / extra)) for k in range(extra)]
    hues = iter(palette)
    return {a: PAPER_COLORS[a] if a in PAPER_COLORS else next(hues) for a in names}


def shade(color: str, k: int, n: int) -> str:
    """``color`` for the ``k``-th of ``n`` variants: the first darker, the last lighter (as hex)."""
    import matplotlib.colors as mcolors

    if n <= 1:
        return mcolors.to_hex(color)
    rgb = np.array(mcolors.to_rgb(color))
    t = k / (n - 1)  # 0: darker, 1: lighter
    mixed = np.clip(rgb * (1 - 0.6 * t) + 0.6 * t if t > 0 else rgb * 0.75, 0, 1)
    return mcolors.to_hex((float(mixed[0]), float(mixed[1]), float(mixed[2])))


def series_colors(keys: Sequence[tuple[str, Hashable]]) -> dict[tuple[str, Hashable], str]:
    """One colour per ``(algorithm, variant)`` key: the algorithm's hue, shaded by the variant's
    rank among that algorithm's variants (in the order of ``keys``). Distinct keys get distinct
    colours."""
    hues = algorithm_colors(k[0] for k in keys)
    variants: dict[str, list[Hashable]] = {}
    for algorithm, variant in dict.fromkeys(keys):
        variants.setdefault(algorithm, []).append(variant)
    colors = {}
    for algorithm, variant in dict.fromkeys(keys):
        rank, n = variants[algorithm].index(variant), len(variants[algorithm])
        colors[(algorithm, variant)] = shade(hues[algorithm], rank, n)
    return colors


def variant_text(optimistic: bool | None, eta: str | None) -> list[str]:
    """The words that tell a variant of an algorithm (``no optimism``, ``eta=0.1``); None: not said."""
    parts = []
    if optimistic is False:
        parts.append("no optimism")
    if eta is not None:
        parts.append(f"eta={eta}")
    return parts


def settings_text(
    *,
    optimistic: Iterable[bool] = (),
    etas: Iterable[str] = (),
    dtypes: Iterable[str] = (),
    extra: Sequence[str] = (),
) -> str:
    """The settings a whole figure shares that differ from the defaults, comma-separated ("" if none).

    ``optimistic``, ``etas`` and ``dtypes`` are the values of the figure's series: one that all
    series share is stated when it is not the default (optimism on, ``eta = 0.2``, float64); one
    that differs between series is left to the legend. ``extra`` (the figure's own options, such
    as a slope window) is stated as given.
    """
    parts = []
    opt, eta, dtype = set(optimistic), set(etas), set(dtypes)
    if opt == {False}:
        parts.append("no optimism")
    if len(eta) == 1 and not _is_default_eta(next(iter(eta))):
        parts.append(f"eta={next(iter(eta))}")
    parts += sorted(d for d in dtype if d != "float64")
    parts += list(extra)
    return ", ".join(parts)


def _is_default_eta(eta: str) -> bool:
    try:
        return float(eta) == DEFAULT_ETA
    except ValueError:
        return False


def outside_legend(
    fig,
    handles: list,
    labels: list[str],
    *,
    extra: tuple[list, list[str]] = ([], []),
    title: str | None = None,
    fontsize: float = 7,
    max_rows: int = 12,
):
    """The figure's legend, below its axes, never over the data (the figure must use the
    constrained layout).

    ``handles`` and ``labels`` are the series; ``extra`` (guide lines, keys of line styles) follows
    them and is always shown. The entries fill as many columns as the figure's width holds, and
    the figure grows by the legend's height, so that its axes keep their size; series beyond
    ``max_rows`` rows are summarised by a last entry ``... and N more series``.
    """
    from matplotlib.lines import Line2D

    entries = [*labels, *extra[1]]
    widest = max((len(text) for text in entries), default=1)
    column_pt = widest * 0.52 * fontsize + 3.5 * fontsize  # the text, the line's sample and the gap
    ncols = int(max(1, min(len(entries), (fig.get_figwidth() * 72 - 20) // column_pt)))
    room = max_rows * ncols - len(extra[1])
    if len(labels) > room:
        hidden = len(labels) - room + 1
        handles = [*handles[: room - 1], Line2D([], [], linestyle="none", color="none")]
        labels = [*labels[: room - 1], f"... and {hidden} more series"]
    rows = -(-(len(labels) + len(extra[1])) // ncols)
    lines_of_title = 0 if title is None else title.count("\n") + 1
    fig.set_figheight(fig.get_figheight() + (rows + lines_of_title) * 1.45 * fontsize / 72 + 0.15)
    return fig.legend(
        [*handles, *extra[0]],
        [*labels, *extra[1]],
        loc="outside lower center",
        ncols=ncols,
        fontsize=fontsize,
        title=title,
        title_fontsize=fontsize,
        frameon=False,
    )
