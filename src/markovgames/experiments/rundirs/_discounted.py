"""Run directories of discounted games: what ``markovgames run`` writes for one, and how it is read back.

Layout of ``DIR`` (docs/discounted.md, "Learning dynamics")::

    metrics.json          "kind": "discounted-run"; the configuration (game, discount, algorithm, eta,
                          the order k of the step sizes, ...), the versions, and per checkpoint T' the
                          value estimate V^T'(rho) and, where evaluated, the exact values,
                          best-response values, Nash gaps (and duality gaps of two-player constant-sum
                          games) of the last iterate (--last-iterate) and of the weighted average
                          iterate (--weighted-average; "weighted_average": its weights, the value
                          update's, and whether every prefix was evaluated)
    curve.npz             value_estimate (T, N) for every prefix (and the regrets with --regret, the
                          weighted average's values and best-response values with
                          --weighted-average all, the samples drawn under --feedback sampled:K)
    game.json | game.npz  the discounted game that was run
    trajectory/policy_{i}.npy   pi^t for t = 1..T, shape (T, S, A_i), row t-1 (if kept)
    .markovgames          the marker (kind "run")

It is written and replaced as a run directory is (`._directory`); `load_discounted_run_directory`
trusts nothing it reads, as `load_run_directory` does: ``metrics.json``'s fields are checked
(`read_metrics`, and the discount), the game file and the curve must have the SHA-256 it records
(each read once, the bytes hashed being the bytes parsed), and the trajectory files' headers and
sizes must be the run's before any row is read.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write, atomic_write_text
from ..._files import JsonFileError, file_sha256, read_json
from ...dynamics import VALUE_UPDATES, DiscountedRunResult, StepSchedule
from ...dynamics._discounted import as_distributions, step_order
from ...evaluation import average_iterate, discounted_nash_gap
from ...games import MAX_GAME_ENTRIES, DiscountedMarkovGame, load_any_game
from ...games._io import GameDigestError
from ._directory import (
    _JSON_GAME_ENTRIES,
    _schedule_source,
    feedback_fields,
    regret_fields,
    settings_fields,
    units_field,
    versions,
    write_marker,
)
from ._metrics import _MAX_JSON_BYTES, CURVE_FILE, METRICS_FILE, TRAJECTORY_DIR, RunDirectoryError, read_metrics
from ._read import TrajectoryFile, _check_policy, _digest_error, _read_curve, _read_policy, policy_row_tolerance

__all__ = [
    "DISCOUNTED_KIND",
    "StoredDiscountedRun",
    "discounted_checkpoint_records",
    "iterate_fields",
    "write_discounted_run_directory",
    "is_discounted_run_directory",
    "load_discounted_run_directory",
    "evaluate_discounted_iterates",
]

#: ``metrics.json``'s ``kind`` in the run directory of a discounted game.
DISCOUNTED_KIND = "discounted-run"
#: The per-prefix arrays of its ``curve.npz`` (beside the regrets, the weighted average's and the samples drawn).
_CURVES = ("value_estimate",)
#: The discounted value updates (``metrics.json``'s ``value_update``, and the weights of its ``weighted_average``).
DISCOUNTED_UPDATES = tuple(name for name, update in VALUE_UPDATES.items() if update.stationary)


def iterate_fields(prefix: str, game: DiscountedMarkovGame, value, best_response) -> dict[str, Any]:
    """A checkpoint's fields of one iterate (``prefix``: ``last_iterate`` or ``weighted_average``):
    its value and best-response value per player, its Nash gap (and per player) and, in a
    two-player constant-sum game, its duality gap (the sum of the players' best-response gains)."""
    gains = np.asarray(best_response, np.float64) - np.asarray(value, np.float64)
    out: dict[str, Any] = {
        f"{prefix}_value": [float(x) for x in value],
        f"{prefix}_best_response_value": [float(x) for x in best_response],
        f"{prefix}_nash_gap": float(np.max(gains)),
        f"{prefix}_nash_gap_per_player": [float(x) for x in gains],
    }
    if game.num_players == 2 and game.is_constant_sum:
        out[f"{prefix}_duality_gap"] = float(np.sum(gains))
    return out


def _original_units(record: dict[str, Any], game: DiscountedMarkovGame) -> dict[str, Any]:
    """The record's returns (``V01 -> (V01 - offset/(1 - gamma)) / scale``) and gaps (``/ scale``) in
    the game's own units, as ``NAME_original`` fields; nothing for a game in ``[0, 1]``."""
    units = game.units
    if units.is_identity:
        return {}
    out: dict[str, Any] = {}
    for key, value in record.items():
        if value is None or isinstance(value, str) or key.endswith("_original"):
            continue
        if key.endswith(("_value", "value_estimate")):
            converted = game.original_value(value)
        elif key.endswith(("_gap", "_gap_per_player", "_regret", "_regret_per_player")):
            converted = units.original_gap(value)
        else:
            continue
        out[f"{key}_original"] = converted.tolist() if np.ndim(converted) else float(converted)
    return out


def discounted_checkpoint_records(result: DiscountedRunResult, checkpoints: list[int]) -> list[dict[str, Any]]:
    """The per-checkpoint records of ``metrics.json`` (and their values in the game's own units)."""
    game = result.game
    evaluated: dict[int, dict[str, Any]] = {}
    for prefix in ("last_iterate", "weighted_average"):
        prefixes = getattr(result, f"{prefix}_prefixes")
        value, best = getattr(result, f"{prefix}_value"), getattr(result, f"{prefix}_best_response")
        if prefixes is None or value is None or best is None:
            continue
        for k, t in enumerate(prefixes):
            evaluated.setdefault(int(t), {}).update(iterate_fields(prefix, game, value[k], best[k]))
    samples = result.samples_used
    records = []
    for T_prime in checkpoints:
        row = result.row(T_prime)
        record: dict[str, Any] = {
            "T": int(T_prime),
            "value_estimate": [float(x) for x in result.value_estimate[row]],
            **evaluated.get(T_prime, {}),
        }
        if result.external_regret is not None and result.swap_regret is not None:
            record.update(regret_fields(result.external_regret[row], result.swap_regret[row]))
        if samples is not None:
            record["samples_used"] = int(samples[row])
        records.append({**record, **_original_units(record, game)})
    return records


def write_discounted_run_directory(
    staging: Path,
    result: DiscountedRunResult,
    checkpoints: list[int],
    config: dict[str, Any],
    *,
    step_schedule: StepSchedule | None = None,
) -> dict[str, Any]:
    """Write ``metrics.json``, ``curve.npz`` and the game into ``staging`` (the trajectory is already there)."""
    from ...games import save_game

    game, spec = result.game, result.spec
    if spec is None:  # unreachable: run() fills in the algorithm's spec
        raise AssertionError("a DiscountedRunResult without its Algorithm")
    kernel_entries = game.sparse_transitions.successors.size * 2 if game.is_sparse else game.transitions.size
    game_file = "game.json" if game.rewards.size + kernel_entries <= _JSON_GAME_ENTRIES else "game.npz"
    curves: dict[str, Any] = {"value_estimate": result.value_estimate}
    if result.external_regret is not None and result.swap_regret is not None:
        curves.update(external_regret=result.external_regret, swap_regret=result.swap_regret)
    average = discounted_average_record(result)
    if average is not None and average["every_prefix"]:
        curves["weighted_average_value"] = result.weighted_average_value
        curves["weighted_average_best_response"] = result.weighted_average_best_response
    samples = result.samples_used
    if samples is not None:
        curves["samples_used"] = np.asarray(samples, dtype=np.int64)
    buffer = io.BytesIO()
    np.savez(buffer, **curves)
    content = buffer.getvalue()
    try:
        atomic_write(staging / CURVE_FILE, lambda fh: fh.write(content))
    except OSError as err:
        raise RunDirectoryError(f"{staging / CURVE_FILE}: cannot write: {err.strerror or err}") from None
    save_game(game, staging / game_file)
    eta = result.eta
    metrics = {
        "kind": DISCOUNTED_KIND,
        "game": game.name,
        "discount": game.discount,
        "algorithm": result.algorithm,
        "learner": spec.learner.name,
        "value_update": spec.value_update.name,
        "concept": spec.concept,
        "algorithm_source": None if spec.source is None else {"reference": spec.source, "sha256": spec.source_sha256},
        "optimistic": result.optimistic,
        "eta": list(eta) if isinstance(eta, tuple) else eta,
        # The order k of alpha_t = (k+1)/(k+t) (1/(1 - gamma) for discounted-smooth); evaluate recomputes it.
        "step_order": result.step_order,
        "T": result.T,
        "dtype": result.dtype,
        **settings_fields(result.order, result.step_schedule, _schedule_source(step_schedule, result.step_schedule)),
        **feedback_fields(result.feedback, result.seed),
        **({"samples_used": int(samples[result.row(result.T)])} if samples is not None else {}),
        **({"regret": _final_regret(result)} if "external_regret" in curves else {}),
        **({"weighted_average": average} if average is not None else {}),
        "units": units_field(game.units),
        "checkpoints": discounted_checkpoint_records(result, checkpoints),
        "game_file": game_file,
        "sha256": {game_file: file_sha256(staging / game_file), CURVE_FILE: hashlib.sha256(content).hexdigest()},
        "trajectory": TRAJECTORY_DIR if result.policies is not None else None,
        "config": config,
        "versions": versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "wall_time_s": result.wall_time_s,
        "compile_time_s": result.compile_time_s,
    }
    atomic_write_text(staging / METRICS_FILE, json.dumps(metrics, indent=2) + "\n")
    write_marker(staging, "run")
    return metrics


def discounted_average_record(result: DiscountedRunResult) -> dict[str, Any] | None:
    """``metrics.json``'s ``weighted_average`` where the run evaluated the weighted average iterate:
    its weights by the value update that has them (``alpha_T^t`` of its step sizes, whose order
    ``step_order`` records) and whether it was evaluated at every prefix; else ``None``."""
    prefixes = result.weighted_average_prefixes
    if prefixes is None or result.spec is None:
        return None
    return {"weights": result.spec.value_update.name, "every_prefix": len(prefixes) == result.T}


def _final_regret(result: DiscountedRunResult) -> dict[str, Any]:
    if result.external_regret is None or result.swap_regret is None:  # unreachable: asked only when carried
        raise AssertionError("a run without regret curves")
    row = result.row(result.T)
    return {"T": result.T, **regret_fields(result.external_regret[row], result.swap_regret[row])}


def is_discounted_run_directory(path) -> bool:
    """Whether ``path``'s ``metrics.json`` says it holds a discounted game's run (a quick look; the
    directory is checked when it is loaded)."""
    try:
        metrics = read_json(Path(path) / METRICS_FILE, _MAX_JSON_BYTES)
    except (JsonFileError, OSError):
        return False
    return isinstance(metrics, dict) and metrics.get("kind") == DISCOUNTED_KIND


@dataclasses.dataclass(frozen=True, eq=False)
class StoredDiscountedRun:
    """A discounted game's run read back (`load_discounted_run_directory`); the trajectory's files
    were checked (header and size), and are read with checked reads when used (`check_trajectory`)."""

    path: Path
    metrics: dict[str, Any]
    game: DiscountedMarkovGame
    value_estimate: np.ndarray  # (T, N)
    trajectory_files: tuple[TrajectoryFile, ...] | None
    external_regret: np.ndarray | None = None
    swap_regret: np.ndarray | None = None
    samples_used: np.ndarray | None = None
    # (T, N) each, where the run evaluated the weighted average iterate at every prefix.
    weighted_average_value: np.ndarray | None = None
    weighted_average_best_response: np.ndarray | None = None

    @property
    def T(self) -> int:
        return int(self.metrics["T"])

    @property
    def dtype(self) -> str:
        return self.metrics.get("dtype", "float64")

    @property
    def step_order(self) -> float:
        """The ``k`` of the run's step sizes, from its value update and the game's discount (not read from the file)."""
        return step_order(self.metrics["value_update"], self.game.discount)

    def check_trajectory(self, rows: int) -> tuple[np.ndarray, ...]:
        """The first ``rows`` stored policies per player ``(rows, S, A_i)``, read and checked: every
        entry finite and non-negative, every row a probability vector (`policy_row_tolerance`)."""
        if self.trajectory_files is None:
            raise RunDirectoryError(f"{self.path}: the run kept no trajectory (--no-trajectory)")
        out = []
        for i, file in enumerate(self.trajectory_files):
            p = _read_policy(file, rows)
            where = self.path / TRAJECTORY_DIR / f"policy_{i}.npy"
            bad = ~np.isfinite(p) | (p < 0)
            if bad.any():
                t, s, a = (int(k) for k in np.argwhere(bad)[0])
                raise RunDirectoryError(f"{where}: entry [{t}][{s}][{a}] = {float(p[t, s, a])!r} is negative or not finite")
            off = np.abs(p.sum(axis=-1) - 1.0) > policy_row_tolerance(self.dtype, p.shape[-1])
            if off.any():
                t, s = (int(k) for k in np.argwhere(off)[0])
                raise RunDirectoryError(f"{where}: row [{t}][{s}] (iteration {t + 1}, state {s}) does not sum to 1")
            out.append(p)
        return tuple(out)


def load_discounted_run_directory(
    path: str | Path, *, max_bytes: int | None = None, max_entries: int = MAX_GAME_ENTRIES
) -> StoredDiscountedRun:
    """Read a discounted game's run directory (see the module docstring for what is checked)."""
    path = Path(path)
    metrics_path = path / METRICS_FILE
    if not os.path.lexists(metrics_path):
        raise RunDirectoryError(f"{path}: not a run directory (no {METRICS_FILE})")
    metrics = read_metrics(metrics_path, kind=DISCOUNTED_KIND)
    update = metrics.get("value_update")
    if update not in DISCOUNTED_UPDATES:
        raise RunDirectoryError(
            f"{metrics_path}: value_update: expected a discounted value update, got {json.dumps(update)[:40]}"
        )
    average = metrics.get("weighted_average")
    if average is not None and average["weights"] != update:
        raise RunDirectoryError(
            f"{metrics_path}: weighted_average: weights {json.dumps(average['weights'])[:40]}, but the run's value update "
            f"is {update!r}, whose weights the loop carries"
        )
    T, sums = metrics["T"], metrics.get("sha256", {})
    game_path = path / metrics["game_file"]
    # Its size first, then its bytes read once, hashed and parsed: the game is the bytes that were checked.
    try:
        game = load_any_game(game_path, max_bytes=max_bytes, max_entries=max_entries, sha256=sums.get(metrics["game_file"]))
    except GameDigestError:
        raise _digest_error(game_path, metrics_path) from None
    if not isinstance(game, DiscountedMarkovGame):
        raise RunDirectoryError(
            f"{game_path}: holds a finite-horizon game, but {METRICS_FILE} says the run is a discounted game's"
        )
    if metrics.get("discount") != game.discount:
        raise RunDirectoryError(
            f"{metrics_path}: discount: {json.dumps(metrics.get('discount'))[:40]}, but the game file's is {game.discount!r}"
        )
    regret = metrics.get("regret") is not None
    drew = metrics.get("samples_used") is not None
    every = bool((average or {}).get("every_prefix"))
    arrays = _read_curve(
        path / CURVE_FILE, T, game.num_players, sums.get(CURVE_FILE), metrics_path, regret, drew, every, base=_CURVES
    )
    files = None
    if metrics.get("trajectory"):
        dtype = metrics.get("dtype", "float64")
        files = tuple(
            _check_policy(path / TRAJECTORY_DIR / f"policy_{i}.npy", (T, game.num_states, a), dtype)
            for i, a in enumerate(game.num_actions)
        )
    more = arrays[1:]
    external, swap = more[:2] if regret else (None, None)
    average_value, average_best = more[2 * regret : 2 * regret + 2] if every else (None, None)
    samples = more[-1] if drew else None
    return StoredDiscountedRun(path, metrics, game, arrays[0], files, external, swap, samples, average_value, average_best)


def evaluate_discounted_iterates(stored: StoredDiscountedRun, T_prime: int) -> dict[str, Any]:
    """The last iterate ``pi^{T'}`` and the weighted average iterate ``sum_{j <= T'} alpha_{T'}^j pi^j``
    of a stored run, each evaluated exactly (`discounted_nash_gap`, policy iteration): `iterate_fields`.

    The average has the weights the loop carries (the value update's `average_weights`, of the
    order ``k`` its discount gives), applied to the stored iterates (`average_iterate`, in float64)."""
    policies = stored.check_trajectory(T_prime)
    weights = VALUE_UPDATES[stored.metrics["value_update"]].average_weights(T_prime, stored.step_order)
    average = average_iterate(policies, weights)
    out: dict[str, Any] = {}
    for prefix, pols in (("last_iterate", [p[T_prime - 1] for p in policies]), ("weighted_average", average)):
        gap = discounted_nash_gap(stored.game, [as_distributions(x) for x in pols])
        out.update(iterate_fields(prefix, stored.game, gap.value, gap.best_response_value))
    return {**out, **_original_units(out, stored.game)}
