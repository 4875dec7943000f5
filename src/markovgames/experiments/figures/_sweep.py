"""Figures of a sweep: convergence per game, and studies across games. PNG and PDF (matplotlib, Agg).

* Per game: the certified gap of the output policy versus ``T'`` (log-log, median and
  interquartile band over seeds, ``T^-1`` and ``T^-1/2`` guide lines) and gap x ``T'``; one line
  per algorithm, optimism, learning rate, update order and step-size schedule, whose legend gives
  the group's slope
  (the median of the per-run slopes of [`run_slope`][markovgames.experiments.run_slope], the number ``summarize`` shows).
  ``metric`` draws another measure the same way: each run's largest average external or swap
  regret of the played sequence (``regret = true``), or the last iterate's duality gap
  (``last_iterate = true`` on a two-player constant-sum game). ``x_axis="samples"`` draws them
  against the samples drawn (runs under a sampled feedback, ``feedbacks = ["sampled:K"]``) instead
  of the iterations.
* Across games (``x``): gap x ``T'`` at chosen decades ``T'`` against a grid parameter (horizon,
  states, players, actions, learning rate), median and interquartile range over every run
  (games and seeds) with that value.
* Slopes (``window``): the distribution of the per-run slopes over a window of checkpoints, one
  row per algorithm, optimism and learning rate, pooled over games and seeds.

Every figure has its legend below the axes, a colour per series and a title that states the
settings that differ from the defaults (`._figure_style`); its file name says the options it was
drawn with, and a file that markovgames did not draw is never replaced (`._figure_files`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._lock import directory_lock
from ..._outputs import check_apart
from ..sweeps._summary import (
    CONCEPTS,
    PAPER_ORDER,
    RESULTS_FILE,
    Concept,
    GroupCurves,
    ResultsError,
    check_metric,
    check_window,
    feedback_label,
    group_curves,
    metric_label,
    result_rows,
    row_metric,
    settings_suffix,
    slope_mask,
    window_text,
)
from ._curves import save_figure
from ._files import FigureFiles, option_suffix, short_number
from ._style import outside_legend, series_colors, settings_text, use_agg, variant_text

__all__ = [
    "plot_sweep",
    "figure_stem",
    "ACROSS_PARAMETERS",
    "X_AXES",
    "AcrossSeries",
    "gap_times_T_across",
    "slope_distributions",
]

#: What the per-game figures are drawn against (``--x-axis``): the iterations ``T'``, or the
#: samples drawn by then (runs under a sampled feedback model).
X_AXES = ("iterations", "samples")

#: ``--x`` choices and the results column each one reads (``actions``: the largest ``A_i``).
ACROSS_PARAMETERS = {"horizon": "H", "states": "S", "players": "N", "actions": "A", "eta": "eta_value", "discount": "discount"}

#: The line styles (4) and markers (6) of the decades ``T'`` of the across-games figure, from the
#: last decade (solid) back.
_DECADE_STYLES: list[Any] = ["-", "--", ":", "-."]  # (Any: matplotlib types them as literals)
_DECADE_MARKERS = ["^", "s", "o", "D", "v", "P"]


def figure_stem(game: str) -> str:
    """A file-name stem for a game label: ``random(N=2,H=2,...)`` -> ``random_N2_H2_...``."""
    stem = re.sub(r"[^A-Za-z0-9.+-]+", "_", game.replace("=", "")).strip("_.")
    return stem or "game"


def _plain(text: str) -> str:
    """``text`` (a game label or learning rate read from the results) as matplotlib draws it
    verbatim: a ``$`` would start mathematical notation, and a damaged one fail the figure."""
    return text.replace("$", r"\$")


def _series_name(
    algorithm: str,
    optimistic: bool,
    eta: str | None,
    vary_optimism: bool,
    vary_eta: bool,
    order: str = "simultaneous",
    eta_schedule: str = "constant",
    feedback: str = "full",
) -> str:
    """A series' legend name: the algorithm, and its optimism and learning rate where they vary
    between the figure's series (where they do not, the title says them), and its update order,
    step-size schedule and feedback model where they are not the defaults (the caller passes the
    defaults where the series share them: the title says them then)."""
    words = variant_text(optimistic if vary_optimism else None, eta if vary_eta else None)
    return _plain(", ".join([algorithm, *words]) + settings_suffix(order, eta_schedule, feedback))


def _settings(rows: list[dict[str, Any]], concept: Concept, window=None, metric: str = "gap") -> str:
    """The settings of the figure drawn from ``rows`` that differ from the defaults (its title's second line)."""
    Ts = {int(r["T"]) for r in rows}
    extra = [f"T = {next(iter(Ts)):,}"] if len(Ts) == 1 else []
    if concept != "auto" and metric == "gap":
        extra.append(f"{concept.upper()} gap for every algorithm")
    if window is not None:
        extra.append(f"slopes over T' in [{window[0]:g}, {window[1]:g}]")
    # An update order or step-size schedule that every series shares, where it is not the default.
    orders = {r.get("order") or "simultaneous" for r in rows}
    schedules = {r.get("eta_schedule") or "constant" for r in rows}
    feedbacks = {feedback_label(r) for r in rows}
    if orders != {"simultaneous"} and len(orders) == 1:
        extra.append(f"{next(iter(orders))} order")
    if schedules != {"constant"} and len(schedules) == 1:
        extra.append(f"eta schedule {_plain(next(iter(schedules)))}")
    if feedbacks != {"full"} and len(feedbacks) == 1:
        extra.append(f"feedback {next(iter(feedbacks))}")
    return settings_text(
        optimistic=(bool(r["optimistic"]) for r in rows),
        etas=(_plain(str(r["eta"])) for r in rows),
        dtypes=(r["dtype"] for r in rows if r.get("dtype")),
        extra=extra,
    )


def _title(first: str, settings: str) -> str:
    return first + (f"\n{settings}" if settings else "")


def _concept_label(curves: list[GroupCurves], concept: Concept) -> str:
    if curves and curves[0].metric != "gap":
        return metric_label(curves[0].metric)
    if concept != "auto":
        return f"certified {concept.upper()} gap"
    kinds = sorted({c.concept.upper() for c in curves})
    if len(kinds) == 1:
        return f"certified {kinds[0]} gap"
    return "certified CE/CCE gap"


def _x_values(c: GroupCurves, x_axis: str) -> np.ndarray:
    """A curve's x: its checkpoints ``T'``, or the samples drawn by then."""
    if x_axis == "samples" and c.samples is not None:
        return np.asarray(c.samples, dtype=float)
    return c.checkpoints.astype(float)


def _draw_game(
    game: str, curves: list[GroupCurves], concept: Concept, out_stem: Path, window=None, settings="", x_axis: str = "iterations"
) -> list[Path]:
    plt = use_agg()
    fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(12.0, 4.6), layout="constrained")
    colors = series_colors([(c.algorithm, _variant(c)) for c in curves])
    vary_optimism, vary_eta = len({c.optimistic for c in curves}) > 1, len({c.eta for c in curves}) > 1
    vary_order, vary_schedule = len({c.order for c in curves}) > 1, len({c.eta_schedule for c in curves}) > 1
    vary_feedback = len({c.feedback for c in curves}) > 1
    handles, labels = [], []
    anchor = 0.0
    x_max = max(float(_x_values(c, x_axis)[-1]) for c in curves)
    x_min = min(float(_x_values(c, x_axis)[0]) for c in curves)
    start = float(min(max(10, x_min), x_max))
    for c in curves:
        color = colors[(c.algorithm, _variant(c))]
        style = "-" if c.optimistic else "--"  # and a lighter shade: a colour of its own
        x = _x_values(c, x_axis)
        med, lo, hi = c.median, c.quantile(0.25), c.quantile(0.75)
        slope = c.slope(window)
        n = len(c.run_ids)
        order, schedule = c.order if vary_order else "simultaneous", c.eta_schedule if vary_schedule else "constant"
        feedback = c.feedback if vary_feedback else "full"
        name = _series_name(c.algorithm, c.optimistic, c.eta, vary_optimism, vary_eta, order, schedule, feedback)
        label = f"{name} [{n} run{'s' if n != 1 else ''}]"
        labels.append(f"{label}: slope {slope:+.2f}" if np.isfinite(slope) else label)
        for axis, factor in ((ax, 1.0), (ax_t, x)):
            ym, yl, yh = med * factor, lo * factor, hi * factor
            pos = ym > 0
            (line,) = axis.plot(x[pos], ym[pos], style, color=color, linewidth=1.6)
            band = (yl > 0) & (yh > 0)
            if n > 1 and band.any():
                axis.fill_between(x[band], yl[band], yh[band], color=color, alpha=0.18, linewidth=0)
        handles.append(line)
        positive = med > 0
        if positive.any():
            anchor = max(anchor, float(np.interp(start, x[positive], med[positive])))
        # Mark the ends of the window the slopes were fitted on.
        tail = slope_mask(c.checkpoints, c.T, window) & positive
        if tail.sum() >= 2:
            ax.plot(x[tail][[0, -1]], med[tail][[0, -1]], "|", color=color, markersize=8)
    guides: tuple[list, list[str]] = ([], [])
    variable = "n" if x_axis == "samples" else "T"  # the guides' variable: samples drawn, or iterations
    if anchor > 0 and x_max > start:
        xs = np.array([start, x_max])
        for power, style, text in ((-1.0, "--", rf"$\propto {variable}^{{-1}}$"), (-0.5, ":", rf"$\propto {variable}^{{-1/2}}$")):
            guides[0].extend(ax.plot(xs, anchor * (xs / start) ** power, style, color="0.45", linewidth=1.0))
            guides[1].append(text)
    ylabel = _concept_label(curves, concept)
    # Under bandit feedback an iteration is a round of M episodes (the learners' updates).
    rounds = " (rounds under bandit feedback)" if any(c.feedback.startswith("bandit:") for c in curves) else ""
    # A game whose curves are all 0 (its equilibrium played from the start) has nothing to log-scale.
    drawable = any(bool((c.median > 0).any()) for c in curves)
    for axis in (ax, ax_t):
        axis.set_xscale("log")
        axis.set_yscale("log" if drawable else "linear")
        axis.set_xlabel("samples drawn n" if x_axis == "samples" else "iterations T" + rounds)
        axis.grid(True, which="major", alpha=0.3)
    ax.set_ylabel(ylabel)
    metric = curves[0].metric if curves else "gap"
    ax_t.set_ylabel(f"{ylabel if metric == 'gap' else metric.replace('_', ' ')} × {variable}")
    note = " (CE for smooth_ce, CCE otherwise)" if ylabel == "certified CE/CCE gap" else ""
    note += "" if drawable else " (no positive value to draw)"
    fig.suptitle(_title(f"{_plain(game)}: {ylabel}{note}, median and IQR over runs", settings), fontsize=10)
    against = " against T'" if x_axis == "samples" else ""  # the slopes are fitted on the checkpoints
    outside_legend(fig, handles, labels, extra=guides, title=f"slope{against}: median over runs, {window_text(window)}")
    return save_figure(fig, out_stem, dpi=130)


def _variant(c: GroupCurves) -> tuple:
    """What tells a curve from the others of its algorithm (its colour's shade)."""
    return (c.optimistic, c.eta, c.order, c.eta_schedule, c.feedback)


def plot_sweep(
    results_dir: str | Path,
    out: str | Path | None = None,
    concept: Concept = "auto",
    *,
    window: tuple[float, float] | None = None,
    x: str | None = None,
    decades: Sequence[int] | None = None,
    overwrite: bool = False,
    metric: str = "gap",
    x_axis: str = "iterations",
) -> list[Path]:
    """Draw a sweep's figures into ``out`` (default ``results_dir/figures``); return the files.

    One figure per game (``gaps_<game>``) is always drawn; ``window`` and ``x`` add the studies
    across games. Each file's name says the options it was drawn with (``gaps_<game>_window-1e3-1e5``,
    ``_concept-ce``, ``_decades-...``; nothing for the defaults), so that figures drawn with
    other options lie beside each other. ``out/.markovgames-figures.json`` records the figures
    drawn there; a file that markovgames did not draw is never replaced.

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
    overwrite : replace figures of the same names drawn from other results (or, where two games'
        names collide, with other options); figures drawn from the same results with the same
        options are replaced anyway (drawn again, e.g. after the sweep grew).
    metric : what the figures show: ``"gap"`` (the certified gap, ``concept``), ``"external_regret"``
        or ``"swap_regret"`` (each run's largest average regret over players, steps and states;
        runs with ``regret = true``) or ``"duality_gap"`` (the last iterate's, two-player
        constant-sum games with ``last_iterate = true``); the runs without it are left out
        (``_metric-NAME`` in the files' names).
    x_axis : what the per-game figures are drawn against (`X_AXES`): ``"iterations"`` ``T'``
        (default) or ``"samples"``, the samples drawn by ``T'`` (the runs under a sampled feedback
        model, ``feedbacks = ["sampled:K"]``; the others, which draw none, are left out; the
        slopes in the legends stay those against ``T'``; ``_vs-samples`` in the files' names).
        The figures across games and of the slopes are drawn as they are.

    Raises
    ------
    OutputPathError
        A figure's file exists and markovgames did not draw it (whatever ``overwrite`` says), or
        drew it from other results and ``overwrite`` is not given; nothing is drawn then.
    """
    window = check_window(window)
    check_metric(metric)
    if x_axis not in X_AXES:
        raise ResultsError.for_argument("x_axis", f"expected one of {', '.join(X_AXES)}, got {x_axis!r}")
    results_dir = Path(results_dir)
    rows = result_rows(results_dir)
    curves = group_curves(rows, concept, metric)
    if x_axis == "samples":
        curves = [c for c in curves if c.samples is not None]
        if not curves:
            raise ResultsError.for_argument(
                "x_axis",
                "no run of these results drew samples (full information and sampled:exact draw none; a sweep draws "
                'them with feedbacks = ["sampled:K"])',
                "samples",
            )
    across = gap_times_T_across(rows, x, decades, concept, metric) if x is not None else None  # errors before drawing
    dist = _slopes_to_draw(rows, window, concept, metric) if window is not None else None
    figures = _plan(rows, curves, across, dist, concept, window, x, decades, metric, x_axis)
    given = out is not None
    out = Path(out) if out is not None else (results_dir if results_dir.is_dir() else results_dir.parent) / "figures"
    results_file = results_dir / RESULTS_FILE if results_dir.is_dir() else results_dir
    # The figures never go where they would replace the results they are drawn from.
    check_apart(out, [results_file], "out")
    # One writer at a time, as for every output directory.
    with directory_lock(out, "out" if given else None):
        out.mkdir(parents=True, exist_ok=True)
        files = FigureFiles(out, str(results_file.resolve()), "out" if given else None, overwrite)
        for stem, options, _ in figures:  # every refusal before any figure is drawn
            files.check(stem, options)
        paths: list[Path] = []
        for stem, options, draw in figures:
            paths += files.write(stem, options, draw)
        return paths


_Figure = tuple[str, dict[str, Any], Callable[[Path], list[Path]]]


def _plan(
    rows, curves, across, dist, concept: Concept, window, x, decades, metric: str = "gap", x_axis: str = "iterations"
) -> list[_Figure]:
    """The figures of `plot_sweep`: each one's file stem, its options (as recorded) and how to draw it."""
    by_game: dict[str, list[GroupCurves]] = {}
    for c in curves:
        by_game.setdefault(c.game, []).append(c)
    figures: list[_Figure] = []
    used: set[str] = set()
    suffix = option_suffix(concept=concept, window=window, metric=metric, x_axis=x_axis)
    # The metric is recorded only where it is not the gap: figures drawn before it existed keep their options.
    chosen = {} if metric == "gap" else {"metric": metric}
    # Likewise the x-axis, for the per-game figures (drawn against the samples, from the runs that drew any).
    against = {} if x_axis == "iterations" else {"x_axis": x_axis}
    rows = [r for r in rows if row_metric(r, metric, "ce") is not None]  # the runs that recorded it
    for game, group in by_game.items():
        stem = figure_stem(game)
        base, k = stem, 2
        while stem in used:
            stem, k = f"{base}-{k}", k + 1
        used.add(stem)
        drawn = [r for r in rows if r["game"] == game and (x_axis == "iterations" or r.get("samples") is not None)]
        settings = _settings(drawn, concept, window, metric)
        draw = _bind(_draw_game, game, group, concept, window=window, settings=settings, x_axis=x_axis)
        options = {"figure": "gaps", "game": game, "concept": concept, "window": window, **chosen, **against}
        figures.append((f"gaps_{stem}{suffix}", options, draw))
    if across is not None and x is not None:  # across is computed exactly when x is given
        given = None if decades is None else sorted({int(d) for d in decades})
        stem = f"gap_times_T_vs_{x}{option_suffix(concept=concept, decades=given, metric=metric)}"
        draw = _bind(_draw_across, across, x, concept, settings=_settings(rows, concept, metric=metric))
        figures.append((stem, {"figure": "gap_times_T", "x": x, "concept": concept, "decades": given, **chosen}, draw))
    if dist is not None:
        stem = f"slopes_{short_number(window[0])}-{short_number(window[1])}{option_suffix(concept=concept, metric=metric)}"
        draw = _bind(_draw_slopes, dist, window, concept, settings=_settings(rows, concept, window, metric), metric=metric)
        figures.append((stem, {"figure": "slopes", "concept": concept, "window": window, **chosen}, draw))
    return figures


def _bind(draw: Callable[..., list[Path]], *args, **kwargs) -> Callable[[Path], list[Path]]:
    """``draw(*args, out_stem, **kwargs)`` as a function of ``out_stem``."""
    return lambda out_stem: draw(*args, out_stem=out_stem, **kwargs)


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
    order: str = "simultaneous"
    eta_schedule: str = "constant"
    metric: str = "gap"
    feedback: str = "full"

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
        text = self.algorithm if self.optimistic else f"{self.algorithm}, no optimism"
        return (
            text
            + ("" if self.eta is None else f", eta={self.eta}")
            + settings_suffix(self.order, self.eta_schedule, self.feedback)
        )


def _parameter(row: dict[str, Any], x: str) -> float | None:
    value = row[ACROSS_PARAMETERS[x]]
    if x == "actions":
        return float(max(int(a) for a in str(value).split("x")))
    return None if value is None else float(value)


def _concept_of(row: dict[str, Any], concept: Concept) -> str:
    return row["concept"] if concept == "auto" else concept


def gap_times_T_across(
    rows: list[dict[str, Any]], x: str, decades: Sequence[int] | None = None, concept: Concept = "auto", metric: str = "gap"
) -> list[AcrossSeries]:
    """gap x ``T'`` at each of ``decades`` against the grid parameter ``x``, pooled over games and seeds.

    ``x`` is one of `ACROSS_PARAMETERS` (``actions``: the largest ``A_i`` of the game;
    ``eta``: the constant learning rate, so stage_cce's per-stage ``"theory"`` rate is left out).
    One series per algorithm, optimism, learning rate (unless ``x = "eta"``), update order,
    step-size schedule, feedback model and decade. ``metric`` (`markovgames.experiments._summary.METRICS`) draws
    another measure times ``T'`` than the gap, from the runs that recorded it.

    Raises
    ------
    ResultsError
        An unknown ``x``, a decade that is not a checkpoint of every run, or no run with a value of ``x``.
    """
    if x not in ACROSS_PARAMETERS:
        raise ResultsError.for_argument("x", f"expected one of {', '.join(ACROSS_PARAMETERS)}, got {x!r}")
    if concept not in CONCEPTS:
        raise ResultsError.for_argument("concept", f"expected one of {', '.join(CONCEPTS)}, got {concept!r}")
    check_metric(metric)
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
        gap = row_metric(r, metric, c)
        if gap is None:  # a run that did not record the metric
            continue
        order, schedule = r.get("order") or "simultaneous", r.get("eta_schedule") or "constant"
        feedback = feedback_label(r)
        key = (r["algorithm"], bool(r["optimistic"]), None if x == "eta" else r["eta"], c, T_prime, order, schedule, feedback)
        groups.setdefault(key, {}).setdefault(value, []).append(gap * T_prime)
    if not groups:
        why = (
            "a discounted game has no horizon: --x discount draws against its discount"
            if x == "horizon" and any(r.get("H") is None for r in rows)
            else "stage_cce's 'theory' rate has no single eta"
        )
        raise ResultsError(f"--x {x}: no run has a value of it ({why})")
    order = {name: k for k, name in enumerate(PAPER_ORDER)}
    out = []
    for key in sorted(groups, key=lambda k: (order.get(k[0], 99), k[0], not k[1], str(k[2]), k[3], k[5], k[6], k[7], k[4])):
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
                order=key[5],
                eta_schedule=key[6],
                metric=metric,
                feedback=key[7],
            )
        )
    return out


_AXIS_LABELS = {
    "horizon": "horizon H",
    "states": "states S",
    "players": "players N",
    "actions": "actions (largest A_i)",
    "eta": "learning rate eta",
    "discount": "discount gamma",
}


def _draw_across(series: list[AcrossSeries], x: str, concept: Concept, out_stem: Path, settings: str = "") -> list[Path]:
    """gap x ``T'`` against ``x``. One colour per series (algorithm, optimism, learning rate) and one
    line style and marker per decade ``T'``; a single series gets one colour per decade instead."""
    from matplotlib.lines import Line2D

    plt = use_agg()
    fig, ax = plt.subplots(figsize=(8.0, 4.6), layout="constrained")
    decades = sorted({s.decade for s in series})
    groups = list(dict.fromkeys((s.algorithm, s.optimistic, s.eta, s.order, s.eta_schedule, s.feedback) for s in series))
    vary_optimism, vary_eta = len({g[1] for g in groups}) > 1, len({g[2] for g in groups}) > 1
    vary_order, vary_schedule = len({g[3] for g in groups}) > 1, len({g[4] for g in groups}) > 1
    vary_feedback = len({g[5] for g in groups}) > 1
    by_decade = len(groups) == 1
    if by_decade:
        import matplotlib

        cmap = matplotlib.colormaps["viridis"]
        decade_colors = [cmap(v) for v in np.linspace(0.0, 0.75, len(decades))]
    colors = series_colors([(g[0], g[1:]) for g in groups])
    counts_of: dict[tuple, list[int]] = {}
    for s in series:
        d = decades.index(s.decade)
        rank = len(decades) - 1 - d  # 0: the last decade
        style = "-" if by_decade else _DECADE_STYLES[rank % 4]
        marker = _DECADE_MARKERS[rank % 6]
        group = (s.algorithm, s.optimistic, s.eta, s.order, s.eta_schedule, s.feedback)
        color = decade_colors[d] if by_decade else colors[(group[0], group[1:])]
        med, lo, hi = s.median, s.q25, s.q75
        counts_of.setdefault(group, []).extend(len(v) for v in s.values)
        ax.errorbar(
            s.x,
            med,
            yerr=[med - lo, hi - med],
            fmt=marker,
            linestyle=style,
            color=color,
            capsize=3,
            linewidth=1.4,
            markersize=5,
            label=f"T' = {s.decade:,}",
        )
    everyone = [n for counts in counts_of.values() for n in counts]
    same = min(everyone) == max(everyone)

    def runs(counts: list[int]) -> str:
        return f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"

    ax.set_yscale("log")
    if x == "eta":
        ax.set_xscale("log")
    else:
        ax.set_xticks(sorted({float(v) for s in series for v in s.x}))
    ax.set_xlabel(_AXIS_LABELS[x])
    kinds = sorted({s.concept.upper() for s in series})
    metric = series[0].metric
    ax.set_ylabel(f"certified {'/'.join(kinds)} gap × T'" if metric == "gap" else f"{metric_label(metric)} × T'")
    ax.grid(True, which="major", alpha=0.3)
    pooled = f"median and IQR over {runs(everyone) + ' runs per point' if same else 'runs'} (games and seeds)"
    head = f"{_plain(groups[0][0])}: " if by_decade else ""
    measure = "gap" if metric == "gap" else metric.replace("_", " ")
    fig.suptitle(_title(f"{head}{measure} × T' against {_AXIS_LABELS[x]}, {pooled}", settings), fontsize=10)
    if by_decade:
        handles, labels = ax.get_legend_handles_labels()
        outside_legend(fig, handles, labels)
    else:
        handles = [Line2D([], [], color=colors[(g[0], g[1:])], linewidth=2.0) for g in groups]
        labels = [
            _series_name(
                *g[:3],
                vary_optimism,
                vary_eta,
                g[3] if vary_order else "simultaneous",
                g[4] if vary_schedule else "constant",
                g[5] if vary_feedback else "full",
            )
            + ("" if same else f" [{runs(counts_of[g])} runs per point]")
            for g in groups
        ]
        keys = [
            Line2D([], [], color="0.3", linestyle=_DECADE_STYLES[k % 4], marker=_DECADE_MARKERS[k % 6])
            for k in range(len(decades))
        ]
        extra = (keys, [f"T' = {d:,}" for d in reversed(decades)])
        outside_legend(fig, handles, labels, extra=extra, title="colour: series; line and marker: T'")
    return save_figure(fig, out_stem, dpi=130)


# ---------------------------------------------------------------------------------------
# Slope distributions
# ---------------------------------------------------------------------------------------
def slope_distributions(
    rows: list[dict[str, Any]], window: tuple[float, float], concept: Concept = "auto", metric: str = "gap"
) -> dict[str, np.ndarray]:
    """Per algorithm, optimism, learning rate, order and schedule (its legend label), the slopes of
    all its runs over ``window`` ([`run_slope`][markovgames.experiments.run_slope]), pooled over
    games and seeds (of the gap, or of another ``metric``)."""
    window = check_window(window)
    out: dict[str, list[float]] = {}
    for g in group_curves(rows, concept, metric):
        slopes = g.run_slopes(window)
        out.setdefault(g.label, []).extend(float(v) for v in slopes if np.isfinite(v))
    return {label: np.array(slopes) for label, slopes in out.items()}


def _slopes_to_draw(rows, window, concept: Concept, metric: str = "gap") -> list[tuple[str, str, np.ndarray]]:
    """The rows of the slope figure: each series' label, colour and slopes (those with any)."""
    dist = slope_distributions(rows, window, concept, metric)
    keys = {g.label: (g.algorithm, _variant(g)) for g in group_curves(rows, concept, metric)}
    colors = series_colors(list(keys.values()))
    drawn = [(label, colors[keys[label]], v) for label, v in dist.items() if v.size]
    if not drawn:
        raise ResultsError.for_argument(
            "window", "no run has two checkpoints with a positive gap there", f"{window[0]:g},{window[1]:g}"
        )
    return drawn


def _draw_slopes(
    drawn: list[tuple[str, str, np.ndarray]], window, concept: Concept, out_stem: Path, settings: str = "", metric: str = "gap"
) -> list[Path]:
    plt = use_agg()
    fig, ax = plt.subplots(figsize=(7.2, 1.4 + 0.55 * len(drawn)), layout="constrained")
    rng = np.random.default_rng(0)  # jitter of the points only
    # matplotlib >= 3.10 says orientation=, older versions vert= (deprecated since 3.11).
    horizontal = {"orientation": "horizontal"} if "orientation" in inspect.signature(ax.boxplot).parameters else {"vert": False}
    for k, (_, color, v) in enumerate(drawn):
        ax.boxplot([v], positions=[k], widths=0.5, showfliers=False, **horizontal)
        ax.plot(v, k + rng.uniform(-0.18, 0.18, v.size), "o", markersize=3, alpha=0.6, color=color)
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
    ax.set_yticks(range(len(drawn)), [_plain(label) for label, _, _ in drawn], fontsize=8)
    ax.invert_yaxis()  # the first group on top, as in the summary table
    measure = "the certified gap" if metric == "gap" else metric_label(metric)
    ax.set_xlabel(f"log-log slope of {measure}, T' in [{window[0]:g}, {window[1]:g}] (-1: O(1/T), -0.5: O(1/sqrt T))")
    ax.set_title(_title("per-run slopes, pooled over games and seeds", settings), fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return save_figure(fig, out_stem, dpi=130)
