"""The figure of one run directory: its certified gap, or its players' regrets, or a product
policy's Nash or duality gap, against ``T'`` or against the samples drawn by then (``markovgames
plot RUN_DIR [--x-axis samples]``).

The curves come from what the run directory holds: ``curve.npz`` (the certified gap at every
prefix; each player's average external and swap regret where the run carried them, ``--regret``;
the weighted average of the iterates' values, ``--weighted-average all``) or ``metrics.json``'s
checkpoints (the Nash or duality gap of the last iterate, ``--last-iterate``, of the weighted
average, ``--weighted-average``, or of the uniform average, ``--uniform-average``). Nothing the
directory names is loaded: a user's learner or schedule is known by its name only. The figure is written as the sweep's are (`._figure_files`):
its name says its options, and a file markovgames did not draw is never replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..._lock import directory_lock
from ..._outputs import check_apart
from .._grid import log_grid
from ..sweeps._summary import CONCEPTS, ResultsError, check_metric, metric_label
from ._curves import save_figure
from ._files import FigureFiles, option_suffix
from ._style import outside_legend, use_agg
from ._sweep import X_AXES, figure_stem

__all__ = ["plot_run"]

#: What a run directory holds that its figures' folder may not be, contain or lie inside.
_RUN_FILES = ("metrics.json", "curve.npz", "game.json", "game.npz", "trajectory", ".markovgames")


def plot_run(
    run_dir: str | Path,
    out: str | Path | None = None,
    metric: str = "gap",
    *,
    concept: str = "auto",
    overwrite: bool = False,
    x_axis: str = "iterations",
) -> list[Path]:
    """Draw a run directory's figure into ``out`` (default ``run_dir/figures``); return its files.

    ``metric``: ``"gap"`` (the certified gap of the output policy: ``concept`` ``"auto"``, the
    algorithm's own, or ``"ce"`` / ``"cce"``), ``"external_regret"`` or ``"swap_regret"`` (one
    line per player: the average regret of the played sequence, the largest over steps and
    states; a run made with ``--regret``) or a product policy's Nash or duality gap
    (``"weighted_average_duality_gap"`` and the others of `METRICS`; ``"duality_gap"`` is the last
    iterate's, at the checkpoints, or at every prefix where the run directory holds it). Two panels: the measure
    and the measure times ``T'``, log-log. ``x_axis="samples"``: against the samples drawn by
    ``T'`` instead (a run made with ``--feedback sampled:K``), the measure and the measure times
    them. The file is ``gaps_<game>`` with the options' suffix (``_vs-samples``,
    ``_metric-swap_regret``, ``_concept-ce``).

    Raises
    ------
    ResultsError
        The run did not record the metric (naming ``metric`` and how to record it), or drew no
        samples to draw it against (naming ``x_axis``).
    RunDirectoryError
        The run directory cannot be read (`load_run_directory`).
    """
    from ..rundirs._read import load_run_directory

    check_metric(metric)
    if concept not in CONCEPTS:
        raise ResultsError.for_argument("concept", f"expected one of {', '.join(CONCEPTS)}, got {concept!r}")
    if x_axis not in X_AXES:
        raise ResultsError.for_argument("x_axis", f"expected one of {', '.join(X_AXES)}, got {x_axis!r}")
    run_dir = Path(run_dir)
    stored = load_run_directory(run_dir)
    if x_axis == "samples" and stored.samples_used is None:
        raise ResultsError.for_argument(
            "x_axis",
            f"{stored.path}: the run drew no samples (feedback {stored.feedback}; run it with --feedback sampled:K)",
            "samples",
        )
    lines, label = _lines(stored, metric, concept)
    if x_axis == "samples" and stored.samples_used is not None:
        drawn = stored.samples_used
        lines = [(name, drawn[T_prime - 1], values) for name, T_prime, values in lines]
    given = out is not None
    folder = Path(out) if out is not None else run_dir / "figures"
    # The figure never goes where it would replace the run it is drawn from.
    check_apart(folder, [run_dir / name for name in _RUN_FILES], "out")
    game = str(stored.metrics.get("game") or stored.game.name)
    stem = f"gaps_{figure_stem(game)}{option_suffix(concept=concept, metric=metric, x_axis=x_axis)}"
    options: dict[str, Any] = {"figure": "run", "concept": concept, **({} if metric == "gap" else {"metric": metric})}
    options.update({} if x_axis == "iterations" else {"x_axis": x_axis})
    title = f"{game}: {label}"
    settings = _settings(stored.metrics)

    def draw(out_stem: Path) -> list[Path]:
        return _draw(lines, label, title, settings, out_stem, x_axis)

    with directory_lock(folder, "out" if given else None):
        folder.mkdir(parents=True, exist_ok=True)
        files = FigureFiles(folder, str((run_dir / "metrics.json").resolve()), "out" if given else None, overwrite)
        files.check(stem, options)
        return files.write(stem, options, draw)


def _lines(stored, metric: str, concept: str) -> tuple[list[tuple[str, np.ndarray, np.ndarray]], str]:
    """The lines to draw, ``(legend label, T', values)``, and the measure's axis label."""
    T = stored.T
    grid = log_grid(T)  # a dense curve is drawn at about 40 points per decade
    if metric == "gap":
        kind = concept if concept != "auto" else _own_concept(stored.metrics)
        bound = stored.certified_ce_bound if kind == "ce" else stored.certified_cce_bound
        gap = np.max(bound - stored.value, axis=-1)
        label = f"certified {kind.upper()} gap"
        return [(label, grid, gap[grid - 1])], label
    if metric in ("external_regret", "swap_regret"):
        curve = getattr(stored, metric)
        if curve is None:
            raise ResultsError.for_argument("metric", f"{stored.path}: the run recorded no regret curves (run it with --regret)")
        lines = [(f"player {i}", grid, curve[grid - 1, i]) for i in range(curve.shape[1])]
        return lines, metric_label(metric, over_players=False)
    return _iterate_lines(stored, metric, grid)


#: What a run directory's product-policy metric is recorded with, for the message when it is not.
_RECORDED_WITH = {
    "last_iterate": "--last-iterate",
    "weighted_average": "--weighted-average",
    "uniform_average": "--uniform-average",
}


def _iterate_lines(stored, metric: str, grid: np.ndarray) -> tuple[list[tuple[str, np.ndarray, np.ndarray]], str]:
    """The line of a product policy's Nash or duality gap (`METRICS`): the weighted average's at
    every prefix where ``curve.npz`` holds it (``--weighted-average all``), else the checkpoints'
    (a uniform average's under its older field names too, `checkpoint_field`)."""
    from ..rundirs._iterates import checkpoint_field

    field = "last_iterate_duality_gap" if metric == "duality_gap" else metric
    policy = field.rsplit("_", 2)[0]  # last_iterate, weighted_average, uniform_average
    label = metric_label(metric)
    name = policy.replace("_", " ")
    if policy == "weighted_average" and stored.weighted_average_value is not None:
        gaps = stored.weighted_average_best_response - stored.weighted_average_value
        curve = np.sum(gaps, axis=-1) if field.endswith("duality_gap") else np.max(gaps, axis=-1)
        if not field.endswith("duality_gap") or stored.game.is_constant_sum:
            return [(name, grid, curve[grid - 1])], label
    found = [(c["T"], checkpoint_field(c, field)) for c in stored.metrics.get("checkpoints", [])]
    found = [(t, v) for t, v in found if v is not None]
    if not found:
        which = "duality gap" if field.endswith("duality_gap") else "Nash gap"
        where = ", on a two-player constant-sum game" if field.endswith("duality_gap") else ""
        raise ResultsError.for_argument(
            "metric", f"{stored.path}: the run recorded no {which} of its {name} (run it with {_RECORDED_WITH[policy]}{where})"
        )
    T_prime = np.array([t for t, _ in found], dtype=np.int64)
    values = np.array([v for _, v in found], dtype=np.float64)
    return [(name, T_prime, values)], label


def _own_concept(metrics: dict[str, Any]) -> str:
    """The run's own equilibrium concept (``metrics.json``'s ``concept``; a directory written before
    it was recorded names a built-in algorithm, looked up without loading anything)."""
    concept = metrics.get("concept")
    if concept in ("ce", "cce"):
        return concept
    from ...dynamics import builtin_algorithm

    try:
        return builtin_algorithm(metrics["algorithm"]).concept
    except ValueError:
        return "cce"


def _settings(metrics: dict[str, Any]) -> str:
    """The run's algorithm and settings, as the figure's title's second line."""
    eta = metrics.get("eta")
    words = [str(metrics.get("algorithm"))]
    words.append(f"eta={','.join(f'{e:g}' for e in eta) if isinstance(eta, list) else eta}")
    words += [] if metrics.get("optimistic", True) else ["no optimism"]
    words += [f"{metrics['order']} order"] if metrics.get("order", "simultaneous") != "simultaneous" else []
    words += [f"eta schedule {metrics['eta_schedule']}"] if metrics.get("eta_schedule", "constant") != "constant" else []
    if metrics.get("feedback", "full") != "full":
        seed = metrics.get("seed")
        words += [f"feedback {metrics['feedback']}" + ("" if seed is None else f", seed {seed}")]
    words += [metrics["dtype"]] if metrics.get("dtype", "float64") != "float64" else []
    return ", ".join(words).replace("$", r"\$")


def _draw(lines, label: str, title: str, settings: str, out_stem: Path, x_axis: str = "iterations") -> list[Path]:
    plt = use_agg()
    fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(12.0, 4.6), layout="constrained")
    handles, labels = [], []
    positive_anywhere = False
    for name, T_prime, values in lines:
        x = T_prime.astype(float)
        style = "o-" if len(x) <= 20 else "-"
        for axis, factor in ((ax, 1.0), (ax_t, x)):
            y = values * factor
            pos = y > 0
            positive_anywhere |= bool(pos.any())
            (line,) = axis.plot(x[pos], y[pos], style, linewidth=1.6, markersize=4)
        handles.append(line)
        labels.append(name)
    guides: tuple[list, list[str]] = ([], [])
    first_x, first_y = lines[0][1].astype(float), lines[0][2]
    positive = first_y > 0
    variable = "n" if x_axis == "samples" else "T"  # the guides' variable: samples drawn, or iterations
    if positive.sum() >= 2:
        start, end = float(first_x[positive][0]), float(first_x[-1])
        anchor = float(first_y[positive][0])
        xs = np.array([start, end])
        for power, style, text in ((-1.0, "--", rf"$\propto {variable}^{{-1}}$"), (-0.5, ":", rf"$\propto {variable}^{{-1/2}}$")):
            guides[0].extend(ax.plot(xs, anchor * (xs / start) ** power, style, color="0.45", linewidth=1.0))
            guides[1].append(text)
    for axis in (ax, ax_t):
        axis.set_xscale("log")
        axis.set_yscale("log" if positive_anywhere else "linear")
        axis.set_xlabel("samples drawn n" if x_axis == "samples" else "iterations T")
        axis.grid(True, which="major", alpha=0.3)
    ax.set_ylabel(label)
    ax_t.set_ylabel(f"{label.split(' (')[0]} × {variable}")  # without the parenthesis: the left axis says it
    note = "" if positive_anywhere else " (no positive value to draw)"
    fig.suptitle(title.replace("$", r"\$") + note + (f"\n{settings}" if settings else ""), fontsize=10)
    outside_legend(fig, handles, labels, extra=guides)
    return save_figure(fig, out_stem, dpi=130)
