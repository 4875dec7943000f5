"""A run's ``metrics.json`` read back as untrusted input: every field of its type and range.

`read_metrics` is the check `markovgames.experiments.load_run_directory` makes of the file before
it uses anything the file names: the fields a reader relies on (the algorithm, ``T``, the dtype,
the files and their digests) and those that only describe the run (reported by ``evaluate``), each
refused with an error that names the file and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..._errors import MarkovGamesError
from ..._files import JsonFileError, read_json
from ..._papers import THEORY_RATES
from ..._schedules import AVERAGINGS
from ...dynamics import DTYPES, ORDERS, VALUE_UPDATES, builtin_algorithm
from ...dynamics._feedback import parse_feedback

__all__ = ["RunDirectoryError", "read_metrics", "CURVE_FILE", "METRICS_FILE", "TRAJECTORY_DIR", "MAX_CHECKPOINTS"]

METRICS_FILE = "metrics.json"
CURVE_FILE = "curve.npz"
TRAJECTORY_DIR = "trajectory"
#: The most checkpoints a run (or each run of a sweep) reports: each is a record in memory and on disk.
MAX_CHECKPOINTS = 10_000
#: ``metrics.json`` (and an interrupted run's ``config.json``) larger than this is refused unread.
_MAX_JSON_BYTES = 64 * 2**20
#: The game files a run directory may name (``metrics.json``'s ``game_file``).
_GAME_FILES = ("game.json", "game.npz")


class RunDirectoryError(MarkovGamesError, ValueError):
    """A run directory cannot be written or read; the message names the path and the problem."""


def _field(metrics: dict, key: str, where: Path, check, expected: str, default: Any = ...):
    """``metrics[key]`` if ``check`` accepts it; else a RunDirectoryError naming the file and field."""
    if key not in metrics:
        if default is not ...:
            return default
        raise RunDirectoryError(f"{where}: missing field {key!r}")
    value = metrics[key]
    if not check(value):
        shown = json.dumps(value)[:40] if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
        raise RunDirectoryError(f"{where}: {key}: expected {expected}, got {shown}")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return bool(np.isfinite(float(value)) and value >= 0)
    except OverflowError:  # an integer beyond float64
        return False


#: ``metrics.json``'s ``kind`` in the run directory of a discounted game (`._discounted`).
_DISCOUNTED_KIND = "discounted-run"


def read_metrics(metrics_path: Path, kind: str | None = None) -> dict[str, Any]:
    """``metrics.json``, with the fields a reader relies on checked (types, ranges, file names);
    ``kind``: the ``kind`` it must have (``None``: a finite-horizon game's run, which has none)."""
    try:
        metrics = read_json(metrics_path, _MAX_JSON_BYTES)  # bounded in size and nesting depth
    except JsonFileError as err:
        raise RunDirectoryError(str(err)) from None
    if not isinstance(metrics, dict):
        raise RunDirectoryError(f"{metrics_path}: expected a JSON object, got {type(metrics).__name__}")
    if metrics.get("kind") == "vlearning":
        # Written by 'markovgames vlearn': an output policy and its checkpoints, no curve or trajectory.
        raise RunDirectoryError(
            f"{metrics_path.parent}: holds a V-learning run ('markovgames vlearn'), not one of 'markovgames run'; "
            "'markovgames evaluate' reads it"
        )
    if metrics.get("kind") != kind:
        if metrics.get("kind") == _DISCOUNTED_KIND:
            raise RunDirectoryError(
                f"{metrics_path.parent}: holds the run of a discounted game, whose results are value estimates and the "
                "iterates' gaps, not an output policy's curves; 'markovgames evaluate' reads it"
            )
        raise RunDirectoryError(f"{metrics_path}: kind: expected {json.dumps(kind)}, got {json.dumps(metrics.get('kind'))[:40]}")
    if kind == _DISCOUNTED_KIND:
        _field(metrics, "discount", metrics_path, lambda v: _is_number(v) and v < 1, "a discount in [0, 1)")
    algorithm = _field(metrics, "algorithm", metrics_path, lambda v: isinstance(v, str), "an algorithm name")
    update = _field(
        metrics,
        "value_update",
        metrics_path,
        lambda v: v is None or v in VALUE_UPDATES,
        f"one of {', '.join(VALUE_UPDATES)}",
        None,
    )
    if update is None:
        # A directory written before "value_update" was recorded: its algorithm is a built-in
        # name. It is looked up in the registry alone: a name read from a file never loads a
        # user's file or imports a module (a run of a user's learner records its value update).
        try:
            builtin_algorithm(algorithm)
        except ValueError as err:
            raise RunDirectoryError(
                f"{metrics_path}: value_update: missing, and algorithm: {err}; a run directory names the value "
                "update of any other algorithm"
            ) from None
    T = _field(metrics, "T", metrics_path, lambda v: _is_int(v) and 1 <= v <= 2**31 - 1, "a positive integer")
    _field(metrics, "dtype", metrics_path, lambda v: v in DTYPES, f"one of {', '.join(DTYPES)}", "float64")
    _field(metrics, "game_file", metrics_path, lambda v: v in _GAME_FILES, f"{' or '.join(_GAME_FILES)}")
    _field(metrics, "trajectory", metrics_path, lambda v: v in (None, TRAJECTORY_DIR), f"{TRAJECTORY_DIR!r} or null", None)
    suffix = _field(
        metrics, "trajectory_suffix", metrics_path, lambda v: v is None or isinstance(v, dict), "an object or null", None
    )
    if suffix is not None:
        where = metrics_path
        _field(suffix, "first_kept", where, lambda v: _is_int(v) and 1 <= v <= T, f"an iteration in 1..T = {T}")
        for key in ("dropped_mass", "value_error_bound", "gap_error_bound"):
            _field(suffix, key, where, _is_number, "a finite non-negative number")
    sums = _field(metrics, "sha256", metrics_path, lambda v: isinstance(v, dict), "an object", {})
    for name, digest in sums.items():
        if name not in _GAME_FILES + (CURVE_FILE,) or not (isinstance(digest, str) and len(digest) == 64):
            raise RunDirectoryError(f"{metrics_path}: sha256: unexpected entry {json.dumps(name)[:40]}")
    _check_descriptive_fields(metrics, metrics_path, T, discounted=kind == _DISCOUNTED_KIND)
    return metrics


def _is_finite(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond float64
        return False


def _is_short_text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 4096


def _is_rate(value: Any) -> bool:
    return _is_number(value) and value > 0


def _is_rates(value: Any) -> bool:
    """One learning rate per player: a short list of positive numbers."""
    return isinstance(value, list) and 1 <= len(value) <= 4096 and all(_is_rate(v) for v in value)


def _is_source(value: Any) -> bool:
    """A user's file as a run records it: null, or ``{"reference": ..., "sha256": ...}``."""
    return value is None or (
        isinstance(value, dict)
        and _is_short_text(value.get("reference"))
        and (value.get("sha256") is None or _is_short_text(value["sha256"]))
    )


def _is_feedback(value: Any) -> bool:
    """A feedback model as a run records it: ``full``, ``sampled:exact`` or ``sampled:K``, by its
    canonical name (``sampled:8``, not ``sampled:08``)."""
    if not _is_short_text(value):
        return False
    try:
        return parse_feedback(value).name == value
    except ValueError:
        return False


def _is_record_value(value: Any) -> bool:
    """What a checkpoint record's field may hold: a finite number, text, null, or a list of finite numbers."""
    if value is None or _is_finite(value) or _is_short_text(value):
        return True
    return isinstance(value, list) and len(value) <= 4096 and all(_is_finite(v) for v in value)


def _check_descriptive_fields(metrics: dict, where: Path, T: int, discounted: bool = False) -> None:
    """The fields of ``metrics.json`` that describe the run (evaluate reports some of them): each
    of its type and range, so that a tampered file is refused here rather than failing later.
    A field that a directory written by an earlier version lacks may be absent (``discounted``:
    a discounted game's run, whose weighted average is named by its value update)."""
    _field(metrics, "game", where, _is_short_text, "a game name", None)
    _field(metrics, "learner", where, lambda v: v is None or _is_short_text(v), "a learner name or null", None)
    _field(metrics, "concept", where, lambda v: v in (None, "ce", "cce"), "'ce', 'cce' or null", None)
    _field(metrics, "algorithm_source", where, _is_source, "null or an object with the reference and its sha256", None)
    _field(metrics, "optimistic", where, lambda v: v is None or isinstance(v, bool), "true or false", None)
    _field(
        metrics,
        "eta",
        where,
        lambda v: _is_short_text(v) or _is_rate(v) or _is_rates(v),
        "a positive number, 'theory' or a list of positive numbers (one per player)",
        None,
    )
    _field(
        metrics,
        "eta_value",
        where,
        lambda v: v is None or _is_rate(v) or _is_rates(v),
        "a positive number, a list of them (one per player) or null",
        None,
    )
    _field(metrics, "eta_theory", where, lambda v: v in THEORY_RATES, f"one of {', '.join(THEORY_RATES)}", None)
    # Written only where they differ from the paper's settings (absent: simultaneous, constant).
    _field(metrics, "order", where, lambda v: v in ORDERS, f"one of {', '.join(ORDERS)}", None)
    _field(metrics, "eta_schedule", where, _is_short_text, "a step-size schedule's name", None)
    _field(metrics, "eta_schedule_source", where, _is_source, "null or an object with the reference and its sha256", None)
    _field(
        metrics,
        "regret",
        where,
        lambda v: (
            v is None
            or (
                isinstance(v, dict)
                and _is_int(v.get("T"))
                and 1 <= v["T"] <= T
                and all(_is_record_value(x) for x in v.values())
                and all(isinstance(k, str) and len(k) <= 64 for k in v)
            )
        ),
        f"null or an object with the regrets after T = {T} iterations",
        None,
    )
    # Written only where the run evaluated the weighted average of its iterates: its weights by
    # their averaging's name, or for a discounted run by its value update's (`._discounted`).
    weights = tuple(u for u in VALUE_UPDATES if VALUE_UPDATES[u].stationary) if discounted else tuple(AVERAGINGS)
    _field(
        metrics,
        "weighted_average",
        where,
        lambda v: (
            v is None
            or (
                isinstance(v, dict)
                and set(v) == {"weights", "every_prefix"}
                and v["weights"] in weights
                and isinstance(v["every_prefix"], bool)
            )
        ),
        f"null or an object with the weights (one of {', '.join(weights)}) and every_prefix (true or false)",
        None,
    )
    # Written only where the learners saw estimates or expectations other than full information's.
    _field(metrics, "feedback", where, _is_feedback, "a feedback model (full, sampled:K or sampled:exact)", None)
    _field(metrics, "seed", where, lambda v: v is None or (_is_int(v) and 0 <= v < 2**63), "a non-negative integer or null", None)
    _field(
        metrics,
        "samples_used",
        where,
        lambda v: v is None or (_is_int(v) and 0 <= v < 2**63),
        "a non-negative integer (the samples drawn) or null",
        None,
    )
    _field(metrics, "identity_residual", where, lambda v: v is None or _is_number(v), "a non-negative number or null", None)
    for key in ("wall_time_s", "compile_time_s"):
        _field(metrics, key, where, lambda v: v is None or _is_number(v), "a non-negative number of seconds", None)
    for key in ("config", "versions"):
        _field(metrics, key, where, lambda v: v is None or isinstance(v, dict), "an object", None)
    _field(metrics, "created", where, lambda v: v is None or _is_short_text(v), "a date", None)
    _field(
        metrics,
        "units",
        where,
        lambda v: (
            v is None
            or (
                isinstance(v, dict)
                and set(v) == {"scale", "offset"}
                and _is_number(v["scale"])
                and v["scale"] > 0
                and _is_finite(v["offset"])
            )
        ),
        "null or an object with a positive scale and a finite offset",
        None,
    )
    records = _field(
        metrics,
        "checkpoints",
        where,
        lambda v: isinstance(v, list) and len(v) <= MAX_CHECKPOINTS and all(isinstance(r, dict) for r in v),
        f"a list of at most {MAX_CHECKPOINTS} checkpoint records",
        [],
    )
    previous = 0
    for k, record in enumerate(records):
        point = record.get("T")
        if not (_is_int(point) and previous < point <= T):
            shown = json.dumps(point)[:40] if _is_record_value(point) else type(point).__name__
            raise RunDirectoryError(
                f"{where}: checkpoints[{k}].T: expected a checkpoint in {previous + 1}..T = {T} (increasing), got {shown}"
            )
        previous = point
        for key, value in record.items():
            if not _is_record_value(value):
                raise RunDirectoryError(
                    f"{where}: checkpoints[{k}].{str(key)[:40]}: expected a finite number, text, null or a list of "
                    f"finite numbers, got {type(value).__name__}"
                )
