"""Reading a sweep's ``results.parquet`` and summarising it: final gaps, gap x T, log-log slopes.

A *group* is one curve of a figure and one row of the summary table: a game, an algorithm,
optimism, a learning rate, an update order, a step-size schedule and a feedback model; its runs
differ only by the seed (the random game's, or the seed of a sampled feedback's draws). Each statistic
is the median over the group's runs (with the interquartile range where it is drawn).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from ..._atomic import atomic_write_text
from ..._errors import ArgumentError
from ..._files import JsonFileError, parse_json
from ..rundirs._kinds import wrong_directory
from ._table import COLUMN_DEFAULTS, ResultsError, read_results_table

__all__ = [
    "ResultsError",
    "GroupCurves",
    "SummaryRow",
    "load_results",
    "result_rows",
    "results_provenance",
    "PROVENANCE_KEY",
    "group_curves",
    "summarize_results",
    "summary_markdown",
    "slope_mask",
    "run_slope",
    "check_window",
    "window_text",
    "CONCEPTS",
    "METRICS",
    "metric_label",
    "PAPER_ORDER",
    "RESULTS_FILE",
    "fit_loglog_slope",
]

CONCEPTS = ("auto", "ce", "cce")
Concept = Literal["auto", "ce", "cce"]

#: What a curve shows: the certified gap of the output policy (``concept`` picks which), each run's
#: largest average regret over players, steps and states (runs with ``regret = true``), or a product
#: policy's measure: the Nash or duality gap (two-player constant-sum games) of the last iterate
#: (runs with ``last_iterate = true``), of the weighted average of the iterates with the value
#: update's weights (``weighted_average = true``), or of their uniform average (a run directory of
#: ``markovgames run --uniform-average``; sweeps do not compute it). ``duality_gap`` is
#: ``last_iterate_duality_gap``'s older name.
METRICS = (
    "gap",
    "external_regret",
    "swap_regret",
    "duality_gap",
    "last_iterate_duality_gap",
    "last_iterate_nash_gap",
    "weighted_average_duality_gap",
    "weighted_average_nash_gap",
    "uniform_average_duality_gap",
    "uniform_average_nash_gap",
)
#: The results column of each metric but ``gap`` (a run directory's checkpoint field of the same name).
METRIC_COLUMNS = {
    "external_regret": "external_regret",
    "swap_regret": "swap_regret",
    "duality_gap": "last_iterate_duality_gap",
    **{m: m for m in METRICS[4:]},
}
#: Where a metric's column comes from: what a sweep must set to have it.
_CONSTANT_SUM = "on a two-player constant-sum game"
_METRIC_SOURCES = {
    # A discounted game's run has no output policy: no certified gap.
    "gap": "a finite-horizon game's output policy; a discounted game's runs have none: choose a metric of their "
    "iterates, such as last_iterate_nash_gap (last_iterate = true) or weighted_average_nash_gap (weighted_average = true)",
    "external_regret": "regret = true",
    "swap_regret": "regret = true",
    "duality_gap": f"last_iterate = true {_CONSTANT_SUM}",
    "last_iterate_duality_gap": f"last_iterate = true {_CONSTANT_SUM}",
    "last_iterate_nash_gap": "last_iterate = true",
    "weighted_average_duality_gap": f"weighted_average = true {_CONSTANT_SUM}",
    "weighted_average_nash_gap": "weighted_average = true",
    "uniform_average_duality_gap": "nothing: only 'markovgames run --uniform-average' computes the uniform average "
    "(a sweep's weighted_average = true gives the value update's average)",
    "uniform_average_nash_gap": "nothing: only 'markovgames run --uniform-average' computes the uniform average "
    "(a sweep's weighted_average = true gives the value update's average)",
}
#: Each metric's policy and measure, for the axis labels.
_METRIC_WORDS = {
    "duality_gap": ("duality gap", "the last iterate"),
    "last_iterate_duality_gap": ("duality gap", "the last iterate"),
    "last_iterate_nash_gap": ("Nash gap", "the last iterate"),
    "weighted_average_duality_gap": ("duality gap", "the weighted average iterate"),
    "weighted_average_nash_gap": ("Nash gap", "the weighted average iterate"),
    "uniform_average_duality_gap": ("duality gap", "the uniform average iterate"),
    "uniform_average_nash_gap": ("Nash gap", "the uniform average iterate"),
}


def metric_label(metric: str, over_players: bool = True) -> str:
    """A metric's axis label (its per-player curves: ``over_players=False``)."""
    where = "players, steps and states" if over_players else "steps and states"
    if metric in _METRIC_WORDS:
        measure, policy = _METRIC_WORDS[metric]
        return f"{measure} of {policy}"
    return {
        "external_regret": f"average external regret (max over {where})",
        "swap_regret": f"average swap regret (max over {where})",
    }[metric]


#: A sweep's results table, in its directory.
RESULTS_FILE = "results.parquet"

#: The paper's algorithms in the order of its figures (the registry's, `markovgames.dynamics.ALGORITHMS`;
#: a test checks that the two agree): tables and legends list them first. Written out here so that
#: reading results (``markovgames summarize``, ``plot``) does not import the engine and JAX.
PAPER_ORDER = ("smooth_ce", "stage_cce", "smooth_cce")


#: The key of ``results.parquet``'s key-value metadata that holds its provenance (JSON).
PROVENANCE_KEY = b"markovgames"


def _read_results_table(results_dir: str | Path):
    """The checked ``pyarrow.Table`` of ``results_dir/results.parquet`` (or of a ``.parquet`` file):
    its sizes bounded from its footer, and every column's type and values checked (`._results_table`)."""
    path = Path(results_dir)
    if path.is_dir():
        if not os.path.lexists(path / RESULTS_FILE):
            raise ResultsError(wrong_directory(path, SWEEP_DIRECTORY))
        path = path / RESULTS_FILE
    elif not is_results_file(path):
        # A file that is not a Parquet file (a sweep configuration given for its results), or no file at all.
        raise ResultsError(wrong_directory(path, SWEEP_DIRECTORY))
    return path, read_results_table(path)


#: What ``summarize`` and ``plot`` read, as their messages name it.
SWEEP_DIRECTORY = f"a sweep directory (with {RESULTS_FILE})"


def is_results_file(path: Path) -> bool:
    """Whether ``path``, given for a sweep's results, is a results file: named ``.parquet`` (read, and
    its damage reported, as such), or a regular file that begins with Parquet's magic bytes (its
    first four only are read)."""
    if path.suffix == ".parquet":
        return True
    try:
        if not path.is_file():
            return False
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def result_rows(results_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of ``results_dir/results.parquet`` (or of a ``.parquet`` file given directly) as
    dicts (a column that a file written by an earlier version lacks has its default)."""
    return [{**COLUMN_DEFAULTS, **row} for row in _read_results_table(results_dir)[1].to_pylist()]


def results_provenance(results_dir: str | Path) -> dict[str, Any]:
    """The provenance stored in ``results.parquet``'s metadata: versions, the validated
    configuration, the games with their content hashes, the checkpoints (``{}`` for a file
    written before the table carried it)."""
    return _provenance(*_read_results_table(results_dir))


def _provenance(path: Path, table) -> dict[str, Any]:
    raw = (table.schema.metadata or {}).get(PROVENANCE_KEY)
    if raw is None:
        return {}
    try:
        # Bounded in depth: a value nested thousands deep would overflow the parser, or later
        # the copy pandas makes of ``attrs``.
        data = parse_json(raw, f"{path}: provenance metadata")
    except JsonFileError as err:
        raise ResultsError(str(err)) from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: unreadable provenance metadata (not a JSON object)")
    return data


def load_results(results_dir: str | Path):
    """A sweep's results as a ``pandas.DataFrame``: one row per run and checkpoint.

    Parameters
    ----------
    results_dir : str or Path
        A sweep directory, or its ``results.parquet`` (a copy anywhere works: the file describes
        itself).

    Returns
    -------
    pandas.DataFrame
        The columns of ``results.parquet`` (``docs/howto-sweep.md``): the run's configuration
        (game label, kind, seed and content hash, ``N, H, S, A``, algorithm, optimism, learning
        rate, update order, step-size schedule, feedback model and the seed of its draws, ``T``,
        dtype), the checkpoint ``T'``, the samples drawn by then (``samples``) and its
        metrics (the regrets and the last iterate's duality gap where the sweep recorded them; the
        ``*_original`` columns in the game's own units). A file written before the order,
        schedule and regret columns existed reads with their defaults (``simultaneous``,
        ``constant``, no regrets), and one written before the feedback columns with ``feedback =
        "full"`` and no ``feedback_seed`` or ``samples`` (NaN, as under full information, where a
        run draws nothing). ``df.attrs`` holds the
        provenance stored in the file's metadata: ``versions``, ``config`` (the validated
        configuration), ``raw_config``, ``games`` (label, kind, seed, shape and ``sha256`` of
        every game), ``checkpoints`` and ``created``.

    Raises
    ------
    ResultsError
        No results file, an unreadable one, or one without results.
    """
    path, table = _read_results_table(results_dir)
    frame = table.to_pandas()
    # The columns a file written before the update order, schedules and regret curves lacks.
    for column, default in COLUMN_DEFAULTS.items():
        if column not in frame.columns:
            frame[column] = np.nan if default is None else default
    frame.attrs.update(_provenance(path, table))
    return frame


@overload
def check_window(window: None) -> None: ...
@overload
def check_window(window: Sequence[float]) -> tuple[float, float]: ...
def check_window(window) -> tuple[float, float] | None:
    """``None`` or a window ``(low, high)`` of checkpoints with ``1 <= low < high``, as floats."""
    if window is None:
        return None
    try:
        low, high = (float(w) for w in window)
    except (TypeError, ValueError):
        raise ValueError(f"window: expected (low, high), got {window!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and 1 <= low < high):
        raise ValueError(f"window: expected 1 <= low < high, got ({low:g}, {high:g})")
    return low, high


def fit_loglog_slope(T: np.ndarray, gap: np.ndarray) -> float:
    """Least-squares slope of ``log gap`` against ``log T`` (``nan`` if any gap is not positive)."""
    T = np.asarray(T, dtype=np.float64)
    gap = np.asarray(gap, dtype=np.float64)
    if len(T) < 2 or np.any(gap <= 0):
        return float("nan")
    return float(np.polyfit(np.log(T), np.log(gap), 1)[0])


def slope_mask(checkpoints: np.ndarray, T: int, window: tuple[float, float] | None = None) -> np.ndarray:
    """The checkpoints a slope is fitted on: those in ``window = (low, high)`` (inclusive), or by
    default the last two decades (``T' >= T/100``).

    Default only: with fewer than three checkpoints there, those with ``T' >= sqrt(T)``; failing
    that, all.
    """
    checkpoints = np.asarray(checkpoints)
    if window is not None:
        low, high = check_window(window)
        return (checkpoints >= low) & (checkpoints <= high)
    for lower in (T / 100.0, math.sqrt(T), 0.0):
        mask = checkpoints >= lower
        if mask.sum() >= 3 or lower == 0.0:
            return mask
    return np.ones_like(checkpoints, dtype=bool)  # pragma: no cover


def run_slope(checkpoints: np.ndarray, gap: np.ndarray, T: int, window: tuple[float, float] | None = None) -> float:
    """The slope of one run: the least-squares slope of ``log gap`` against ``log T'`` over the
    checkpoints of `slope_mask` where the gap is positive (``nan`` with fewer than two).

    This is the one definition of "slope" of ``summarize`` and ``plot``; a group's slope is the
    median of its runs' slopes (`GroupCurves.slope`).
    """
    checkpoints = np.asarray(checkpoints)
    gap = np.asarray(gap, dtype=np.float64)
    mask = slope_mask(checkpoints, T, window) & np.isfinite(gap) & (gap > 0)
    if mask.sum() < 2:
        return float("nan")
    return fit_loglog_slope(checkpoints[mask], gap[mask])


def _eta_sort_key(eta: str) -> tuple[int, float]:
    try:
        return (0, float(eta))
    except ValueError:
        return (1, 0.0)


@dataclass(frozen=True)
class GroupCurves:
    """The runs of one group as aligned arrays: ``gap[r, k]`` for run ``r`` at ``checkpoints[k]``."""

    game: str
    algorithm: str
    optimistic: bool
    eta: str
    concept: str
    T: int
    checkpoints: np.ndarray
    gap: np.ndarray
    run_ids: tuple[str, ...]
    game_seeds: tuple[int | None, ...]
    order: str = "simultaneous"
    eta_schedule: str = "constant"
    #: What ``gap`` holds (`METRICS`): the certified gap, or a regret or duality gap.
    metric: str = "gap"
    feedback: str = "full"
    #: The samples drawn after each of ``checkpoints`` (the median over the runs: they share the
    #: game's shape, so the same), ``None`` where the runs drew none (full, sampled:exact).
    samples: np.ndarray | None = None

    @property
    def label(self) -> str:
        text = self.algorithm if self.optimistic else f"{self.algorithm}, no optimism"
        return f"{text}, eta={self.eta}{settings_suffix(self.order, self.eta_schedule, self.feedback)}"

    @property
    def median(self) -> np.ndarray:
        return np.median(self.gap, axis=0)

    def quantile(self, q: float) -> np.ndarray:
        return np.quantile(self.gap, q, axis=0)

    def run_slopes(self, window: tuple[float, float] | None = None) -> np.ndarray:
        """Every run's slope ([`run_slope`][markovgames.experiments.run_slope]) over ``window`` (default: the last two decades)."""
        return np.array([run_slope(self.checkpoints, g, self.T, window) for g in self.gap])

    def slope(self, window: tuple[float, float] | None = None) -> float:
        """The group's slope: the median over its runs of [`run_slope`][markovgames.experiments.run_slope] (``nan`` if none is finite).

        The summary table and the figures' legends both show this number.
        """
        slopes = self.run_slopes(window)
        finite = slopes[np.isfinite(slopes)]
        return float(np.median(finite)) if finite.size else float("nan")


def settings_suffix(order: str, eta_schedule: str, feedback: str = "full") -> str:
    """``, alternating, eta schedule sqrt, feedback sampled:4``: the order, schedule and feedback
    model where they are not the defaults."""
    words = [] if order == "simultaneous" else [order]
    words += [] if eta_schedule == "constant" else [f"eta schedule {eta_schedule}"]
    words += [] if feedback == "full" else [f"feedback {feedback}"]
    return "".join(f", {w}" for w in words)


def feedback_label(row: dict[str, Any]) -> str:
    """A result row's feedback model, with a bandit run's bonus and implicit exploration where they
    are not the library's defaults (``bandit:2, bonus 0.5``): what tells its group from the others."""
    feedback = row.get("feedback") or "full"
    if not feedback.startswith("bandit:"):
        return feedback
    words = [feedback]
    bonus, ix = _number(row.get("bonus")), _number(row.get("ix"))
    if bonus is not None and bonus != (1.0 if row.get("eta") == "paper" else 0.0):  # V-learning's default is 1
        words.append(f"bonus {bonus!r}")
    # A composition's default is the decaying eta H / 2 over the square root of the visits; a file
    # from before the schedules (no ix_schedule) ran a constant.
    if ix is not None and row.get("ix_schedule") != "decaying":
        words.append(f"ix {ix!r}")
    return ", ".join(words)


def check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ArgumentError.for_argument("metric", f"expected one of {', '.join(METRICS)}, got {metric!r}")


def row_metric(row: dict[str, Any], metric: str, concept: str) -> float | None:
    """A row's value of ``metric`` (``concept``: ``ce`` or ``cce``, for the gap); None where it has none."""
    if metric == "gap":  # (none on a discounted game's row: it has no output policy)
        return _number(row["certified_ce_gap"] if concept == "ce" else row["certified_cce_gap"])
    value = row.get(METRIC_COLUMNS[metric])
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _number(value: Any) -> float | None:
    """A nullable number read from the results (None, NaN: none)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _seed(value: Any) -> Any:
    """A seed read from the results as it is (an int), or None (None, NaN: none)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def group_curves(rows: list[dict[str, Any]], concept: Concept = "auto", metric: str = "gap") -> list[GroupCurves]:
    """Group result rows into curves, sorted by game, algorithm, optimism (optimistic first), eta,
    order, schedule and feedback model (its runs: by the random game's seed, then the draws').

    ``concept="auto"`` uses each algorithm's own equilibrium (CE for smooth_ce, CCE for the
    others); ``"ce"`` / ``"cce"`` the certified CE / CCE gap for all. ``metric`` (`METRICS`)
    picks what the curves hold: the gap, or a regret or the last iterate's duality gap, from the
    runs that recorded it (a `ResultsError` naming ``metric`` if none did).
    """
    if concept not in CONCEPTS:
        raise ArgumentError.for_argument("concept", f"expected one of {', '.join(CONCEPTS)}, got {concept!r}")
    check_metric(metric)
    by_group: dict[tuple, dict[str, dict[int, float]]] = {}
    drawn: dict[str, dict[int, float]] = {}  # per run, the samples drawn at each checkpoint
    seeds: dict[str, Any] = {}
    for r in rows:
        c = r["concept"] if concept == "auto" else concept
        value = row_metric(r, metric, c)
        if value is None:
            continue
        key = (
            r["game"],
            r["algorithm"],
            bool(r["optimistic"]),
            r["eta"],
            c,
            int(r["T"]),
            r.get("order") or "simultaneous",
            r.get("eta_schedule") or "constant",
            feedback_label(r),
        )
        by_group.setdefault(key, {}).setdefault(r["run_id"], {})[int(r["checkpoint"])] = value
        count = _number(r.get("samples"))
        if count is not None:
            drawn.setdefault(r["run_id"], {})[int(r["checkpoint"])] = count
        seeds[r["run_id"]] = (_seed(r.get("game_seed")), _seed(r.get("feedback_seed")))
    if rows and not by_group:
        source = _METRIC_SOURCES[metric]
        where = f"the certified gap of {source}" if metric == "gap" else f"a sweep records it with {source}"
        raise ResultsError.for_argument("metric", f"no run of these results recorded {metric} ({where})")
    out = []
    order = {name: k for k, name in enumerate(PAPER_ORDER)}
    games = list(dict.fromkeys(r["game"] for r in rows))  # first-seen order: the configuration's
    for key in sorted(
        by_group,
        key=lambda k: (
            games.index(k[0]),
            order.get(k[1], len(order)),
            k[1],
            not k[2],
            _eta_sort_key(k[3]),
            k[4],
            k[5],
            k[6] != "simultaneous",
            k[7] != "constant",
            k[7],
            k[8] != "full",
            k[8],
        ),
    ):
        runs = by_group[key]
        common = sorted(set.intersection(*(set(v) for v in runs.values())))
        ids = tuple(sorted(runs, key=lambda rid: (*((s is None, s or 0) for s in seeds[rid]), rid)))
        gap = np.array([[runs[rid][c] for c in common] for rid in ids], dtype=np.float64)
        samples = None
        if all(rid in drawn and all(c in drawn[rid] for c in common) for rid in ids):
            samples = np.median(np.array([[drawn[rid][c] for c in common] for rid in ids], dtype=np.float64), axis=0)
        out.append(
            GroupCurves(
                game=key[0],
                algorithm=key[1],
                optimistic=key[2],
                eta=key[3],
                concept=key[4],
                T=key[5],
                checkpoints=np.array(common, dtype=np.int64),
                gap=gap,
                run_ids=ids,
                game_seeds=tuple(seeds[rid][0] for rid in ids),
                order=key[6],
                eta_schedule=key[7],
                metric=metric,
                feedback=key[8],
                samples=samples,
            )
        )
    return out


@dataclass(frozen=True)
class SummaryRow:
    """One line of the summary: medians over the group's runs at the final checkpoint ``T``."""

    game: str
    algorithm: str
    optimistic: bool
    eta: str
    concept: str
    runs: int
    T: int
    final_gap: float
    final_gap_q25: float
    final_gap_q75: float
    gap_times_T: float
    slope: float
    order: str = "simultaneous"
    eta_schedule: str = "constant"
    feedback: str = "full"
    #: The samples drawn by the last checkpoint (median over the runs), ``None`` where they drew none.
    samples: float | None = None
    #: What ``final_gap`` and the slope are of (`METRICS`): the certified gap, or another measure.
    metric: str = "gap"


def summarize_results(
    results_dir: str | Path, concept: Concept = "auto", window: tuple[float, float] | None = None, metric: str = "gap"
) -> list[SummaryRow]:
    """One [`SummaryRow`][markovgames.experiments.SummaryRow] per game, algorithm, optimism, learning
    rate, update order, step-size schedule and feedback model (its runs: the seeds).

    ``window = (low, high)``: fit the slopes on the checkpoints in ``[low, high]`` (default: the
    last two decades of each run; see [`run_slope`][markovgames.experiments.run_slope]).
    ``metric`` (`METRICS`): summarise another measure than the certified gap, from the runs that
    recorded it (e.g. ``"weighted_average_duality_gap"``, a sweep with ``weighted_average = true``).
    """
    window = check_window(window)
    rows = result_rows(results_dir)
    out = []
    for g in group_curves(rows, concept, metric):
        final = g.gap[:, -1]
        T_last = int(g.checkpoints[-1])
        out.append(
            SummaryRow(
                game=g.game,
                algorithm=g.algorithm,
                optimistic=g.optimistic,
                eta=g.eta,
                concept=g.concept,
                runs=len(g.run_ids),
                T=T_last,
                final_gap=float(np.median(final)),
                final_gap_q25=float(np.quantile(final, 0.25)),
                final_gap_q75=float(np.quantile(final, 0.75)),
                gap_times_T=float(np.median(final * T_last)),
                slope=g.slope(window),
                order=g.order,
                eta_schedule=g.eta_schedule,
                feedback=g.feedback,
                samples=None if g.samples is None else float(g.samples[-1]),
                metric=metric,
            )
        )
    return out


def _fmt(x: float, spec: str) -> str:
    return "–" if x is None or not math.isfinite(x) else format(x, spec)


SUMMARY_COLUMNS = (
    "game",
    "algorithm",
    "optimistic",
    "eta",
    "gap",
    "runs",
    "T",
    "final gap (median)",
    "final gap IQR",
    "gap × T",
    "log-log slope",
)


#: The columns a summary adds after ``eta`` where some row has another update order or schedule.
SETTINGS_COLUMNS = ("order", "eta schedule")
#: The column a summary adds after those where some row has another feedback model than full
#: information, and the one it adds at its end where some row drew samples.
FEEDBACK_COLUMN = "feedback"
SAMPLES_COLUMN = "samples at T"


def summary_columns(rows: Sequence[SummaryRow]) -> tuple[str, ...]:
    """The summary's columns: `SUMMARY_COLUMNS`, with `SETTINGS_COLUMNS` after ``eta`` where a row
    has an update order or schedule other than the defaults, `FEEDBACK_COLUMN` where a row has
    another feedback model than full information and `SAMPLES_COLUMN` last where a row drew samples
    (a summary without them is as it was)."""
    middle = (SETTINGS_COLUMNS if _has_settings(rows) else ()) + ((FEEDBACK_COLUMN,) if _has_feedback(rows) else ())
    end = (SAMPLES_COLUMN,) if any(r.samples is not None for r in rows) else ()
    return SUMMARY_COLUMNS[:4] + middle + SUMMARY_COLUMNS[4:] + end


def _has_settings(rows: Sequence[SummaryRow]) -> bool:
    return any(r.order != "simultaneous" or r.eta_schedule != "constant" for r in rows)


def _has_feedback(rows: Sequence[SummaryRow]) -> bool:
    return any(r.feedback != "full" for r in rows)


def summary_cells(row: SummaryRow, settings: bool | Sequence[str] = False) -> list[str]:
    """A summary row's cells, for the columns ``settings`` (`summary_columns`; ``True``: those with
    the order and schedule after ``eta``, ``False``: `SUMMARY_COLUMNS`)."""
    if isinstance(settings, bool):
        columns: Sequence[str] = SUMMARY_COLUMNS[:4] + (SETTINGS_COLUMNS if settings else ()) + SUMMARY_COLUMNS[4:]
    else:
        columns = settings
    cells = {
        "game": row.game,
        "algorithm": row.algorithm,
        "optimistic": "yes" if row.optimistic else "no",
        "eta": row.eta,
        "order": row.order,
        "eta schedule": row.eta_schedule,
        FEEDBACK_COLUMN: row.feedback,
        "gap": row.concept.upper() if row.metric == "gap" else row.metric,
        "runs": str(row.runs),
        "T": str(row.T),
        "final gap (median)": _fmt(row.final_gap, ".3e"),
        "final gap IQR": f"{_fmt(row.final_gap_q25, '.2e')} – {_fmt(row.final_gap_q75, '.2e')}",
        "gap × T": _fmt(row.gap_times_T, ".4g"),
        "log-log slope": _fmt(row.slope, "+.2f"),
        SAMPLES_COLUMN: "–" if row.samples is None else f"{row.samples:,.0f}",
    }
    return [cells[name] for name in columns]


def window_text(window: tuple[float, float] | None) -> str:
    """How a slope window reads in tables and legends."""
    if window is None:
        return "the last two decades of checkpoints"
    return f"the checkpoints T' in [{window[0]:g}, {window[1]:g}]"


def summary_markdown(rows: list[SummaryRow], title: str | None = None, window: tuple[float, float] | None = None) -> str:
    """The summary as a Markdown table (medians over seeds; slopes over ``window``, default the last two decades)."""
    lines = []
    if title:
        lines += [f"# {title}", ""]
    columns = summary_columns(rows)
    left = columns.index("gap") + 1  # the labels, left-aligned; the numbers right
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("| " + " | ".join("---" if k < left else "---:" for k in range(len(columns))) + " |")
    for r in rows:
        cells = [c.replace("|", "\\|") for c in summary_cells(r, columns)]
        lines.append("| " + " | ".join(cells) + " |")
    metric = rows[0].metric if rows else "gap"
    measure = "Certified gaps of the output policy" if metric == "gap" else metric_label(metric).capitalize()
    lines += [
        "",
        f"{measure} at the last checkpoint T, median over the runs (the seeds: random games', sampled feedback's draws) "
        "of each row, with the interquartile range; gap × T is the median of gap(T) × T; the slope is the median "
        f"over runs of the least-squares log-log slope of gap versus T' over {window_text(window)} "
        "(-1 is the paper's O(1/T) rate, -0.5 the classic O(1/sqrt(T))).",
        "",
    ]
    return "\n".join(lines)


def write_summary_markdown(
    rows: list[SummaryRow],
    path: str | Path,
    title: str | None = None,
    window: tuple[float, float] | None = None,
    replace: bool = True,
) -> Path:
    """Write the summary table of ``rows`` as Markdown (``replace=False``: never over an existing file)."""
    path = Path(path)
    atomic_write_text(path, summary_markdown(rows, title, window), replace)
    return path
