"""A sweep's results: the file of each finished run, and ``results.parquet`` consolidated from them.

A finished batch's runs are each written as one document (`_run_document`); `consolidate_results`
reads every run file back, checked (`checked_run_file`), and writes one row per run and
checkpoint, with the sweep's provenance in the table's metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write
from ..._papers import parse_theory
from ...dynamics import DEFAULT_BANDIT_RATE
from ...games import AffineRescaling, DiscountedMarkovGame, MarkovGame
from ..rundirs._directory import last_iterate_fields, regret_fields, units_field, weighted_average_fields
from ..rundirs._discounted import iterate_fields
from ..rundirs._exact import EXACT_FIELDS
from ._bandit import bandit_parameters
from ._directory import MANIFEST_FILE, RUNS_DIR, _now
from ._discounted import game_shape
from ._execute import BatchOutput
from ._files import RUN_FILE_FORMAT, read_manifest, read_run_file
from ._files import canonical_json as _canonical_json
from ._plan import PlannedRun, SweepPlan
from ._summary import PROVENANCE_KEY, RESULTS_FILE
from ._table import _DIFFERENCE_COLUMNS, _RETURN_COLUMNS, LIST_ORIGINAL_COLUMNS, ORIGINAL_COLUMNS
from ._values import episodes_per_round

__all__ = ["checked_run_file", "consolidate_results"]

RESULTS_FORMAT = "markovgames-results/1"
#: Rows of results.parquet converted and written at a time (consolidation streams the run files).
_ROWS_PER_WRITE = 50_000


def _policy_fields(output: BatchOutput, b: int, k: int) -> dict[str, Any]:
    """A finite-horizon run's output policy at checkpoint ``k``: its value and both certified bounds and gaps."""
    if output.value is None or output.certified_ce_bound is None or output.certified_cce_bound is None:
        raise AssertionError("a finite-horizon batch without its output policy's values")  # unreachable
    value, ce, cce = output.value[b, k], output.certified_ce_bound[b, k], output.certified_cce_bound[b, k]
    return {
        "value": [float(x) for x in value],
        "certified_ce_bound": [float(x) for x in ce],
        "certified_cce_bound": [float(x) for x in cce],
        "certified_ce_gap": float(np.max(ce - value)),
        "certified_cce_gap": float(np.max(cce - value)),
    }


def _discounted_fields(output: BatchOutput, b: int, k: int, game: DiscountedMarkovGame) -> dict[str, Any]:
    """A discounted run at checkpoint ``k``: its value estimate ``V^{T'}(rho)`` and, where evaluated,
    its last and weighted average iterates' values, Nash gaps and (two-player constant-sum) duality
    gaps, as ``markovgames run`` writes them (`iterate_fields`; not the best-response values)."""
    if output.value_estimate is None:
        raise AssertionError("a discounted batch without its value estimates")  # unreachable
    out: dict[str, Any] = {"value_estimate": [float(x) for x in output.value_estimate[b, k]]}
    for prefix, iterate in (("last_iterate", output.last_iterate), ("weighted_average", output.weighted_average)):
        if iterate is not None:
            fields = iterate_fields(prefix, game, iterate[b, k, 0], iterate[b, k, 1])
            out.update({key: v for key, v in fields.items() if key != f"{prefix}_best_response_value"})
    return out


def _run_document(run: PlannedRun, output: BatchOutput, b: int, attempt: int, batch_size: int) -> dict[str, Any]:
    records = []
    per_round = episodes_per_round(run.feedback)
    game = run.game
    for k, T_prime in enumerate(output.prefixes):
        if isinstance(game, DiscountedMarkovGame):
            records.append(
                {
                    "checkpoint": int(T_prime),
                    **_discounted_fields(output, b, k, game),
                    **({} if output.regret is None else regret_fields(output.regret[b, k, 0], output.regret[b, k, 1])),
                    **({} if output.samples_used is None else {"samples_used": int(output.samples_used[k])}),
                }
            )
            continue
        records.append(
            {
                "checkpoint": int(T_prime),
                **_policy_fields(output, b, k),
                **({} if output.exact is None else output.exact[b][int(T_prime)]),
                **(
                    {}
                    if output.last_iterate is None
                    else last_iterate_fields(output.last_iterate[b, k, 0], output.last_iterate[b, k, 1], game)
                ),
                **(
                    {}
                    if output.weighted_average is None
                    else weighted_average_fields(output.weighted_average[b, k, 0], output.weighted_average[b, k, 1], game)
                ),
                **({} if output.regret is None else regret_fields(output.regret[b, k, 0], output.regret[b, k, 1])),
                **({} if output.samples_used is None else {"samples_used": int(output.samples_used[k])}),
                # Under bandit feedback a checkpoint counts rounds of M episodes each.
                **({"episodes": int(T_prime) * per_round} if run.bandit else {}),
            }
        )
    # The settings, and the game's units, only where they are not the defaults: the run file of a
    # run with the paper's settings on a game in [0, 1] is what it always was.
    extra: dict[str, Any] = {}
    if run.order != "simultaneous":
        extra["order"] = run.order
    if run.eta_schedule != "constant":
        extra["eta_schedule"] = run.eta_schedule
    if run.feedback != "full":
        extra["feedback"] = run.feedback
    if run.feedback_seed is not None:
        extra["feedback_seed"] = run.feedback_seed
    if run.bandit and isinstance(game, MarkovGame):  # the bonus and implicit exploration the run used (given, or the defaults)
        bonus, ix, ix_schedule = bandit_parameters(run.algorithm, run.eta, run.bonus, run.ix, game.horizon)
        extra["bonus"] = bonus
        if ix is not None:
            extra["ix"] = ix
            extra["ix_schedule"] = ix_schedule
            extra["bandit_rate"] = run.bandit_rate or DEFAULT_BANDIT_RATE  # a composition's rate schedule
    units = units_field(game.units)
    if units is not None:
        extra["units"] = units
    if isinstance(game, DiscountedMarkovGame):  # its spec's too (the run's id is made of it)
        extra["discount"] = game.discount
    return {
        "format": RUN_FILE_FORMAT,
        "run_id": run.run_id,
        "spec": run.spec,
        "game": run.game_label,
        "game_kind": run.game_kind,
        "game_seed": run.game_seed,
        "seed_index": run.seed_index,
        "shape": game_shape(game),
        "algorithm": run.algorithm,
        "concept": run.concept,
        "optimistic": run.optimistic,
        "eta": run.eta,
        "eta_value": run.eta_value,
        "T": run.T,
        "dtype": run.dtype,
        **extra,
        "batch": {
            "id": output.batch_id,
            "size": batch_size,
            "wall_time_s": output.wall_time_s,
            "compile_time_s": output.compile_time_s,
            "attempt": attempt,
            "host": output.host,
        },
        "wall_time_s": output.wall_time_s / batch_size,
        "finished_at": _now(),
        "records": records,
    }


def checked_run_file(path: Path, run_id: str, run: PlannedRun | None) -> dict[str, Any] | None:
    """The checked run file of ``run_id`` (``None``: none); a damaged one is refused (`read_run_file`)."""
    planned = None
    if run is not None:
        planned = {"spec": json.loads(_canonical_json(run.spec)), "shape": game_shape(run.game)}
    return read_run_file(path, run_id, planned)


def _eta_text(eta: float | str) -> str:
    return eta if isinstance(eta, str) else repr(float(eta))


def _original_columns(row: dict[str, Any], units: dict[str, float] | None, horizon: float) -> dict[str, Any]:
    """The row's values, gaps and regrets in the game's own units (null for a game given in [0, 1]);
    ``horizon``: ``H``, or a discounted game's ``1/(1-gamma)`` (its returns' offset is ``offset/(1-gamma)``)."""
    out: dict[str, Any] = dict.fromkeys(ORIGINAL_COLUMNS)
    if units is None:
        return out
    rescaling = AffineRescaling(units["scale"], units["offset"])
    for name in _RETURN_COLUMNS + _DIFFERENCE_COLUMNS:
        value = row[name]
        if value is None:
            continue
        if name in _RETURN_COLUMNS:
            out[f"{name}_original"] = [float(v) for v in rescaling.original_value(value, horizon)]
        else:
            out[f"{name}_original"] = float(rescaling.original_gap(value))
    return out


def _times(gap: float | None, T_prime: int) -> float | None:
    return None if gap is None else gap * T_prime


def _result_rows(doc: dict[str, Any], run: PlannedRun | None) -> list[dict[str, Any]]:
    concept = doc["concept"]
    shape = doc["shape"]
    discount = doc.get("discount")  # a discounted game's run: no output policy, no horizon
    rows = []
    for rec in doc["records"]:
        Tp = rec["checkpoint"]
        ce, cce = rec.get("certified_ce_gap"), rec.get("certified_cce_gap")
        gap = ce if concept == "ce" else cce
        rows.append(
            {
                "run_id": doc["run_id"],
                "game": run.game_label if run is not None else doc["game"],
                "game_kind": doc["game_kind"],
                "game_seed": doc["game_seed"],
                "seed_index": doc["seed_index"],
                "N": shape["N"],
                "H": shape.get("H"),
                "S": shape["S"],
                "A": "x".join(map(str, shape["A"])),
                "algorithm": doc["algorithm"],
                "concept": concept,
                "optimistic": doc["optimistic"],
                "eta": _eta_text(doc["eta"]),
                "eta_value": doc["eta_value"],
                "T": doc["T"],
                "checkpoint": Tp,
                "value": rec.get("value"),
                "certified_ce_bound": rec.get("certified_ce_bound"),
                "certified_cce_bound": rec.get("certified_cce_bound"),
                "certified_ce_gap": ce,
                "certified_cce_gap": cce,
                "ce_gap_times_T": _times(ce, Tp),
                "cce_gap_times_T": _times(cce, Tp),
                "gap": gap,
                "gap_times_T": _times(gap, Tp),
                "wall_time_s": doc["wall_time_s"],
                "batch_id": doc["batch"]["id"],
                "batch_size": doc["batch"]["size"],
                "batch_wall_time_s": doc["batch"]["wall_time_s"],
                "dtype": doc["dtype"],
                "game_sha256": doc["spec"]["game"]["sha256"],
                "exact_ce_gap": rec.get("exact_ce_gap"),
                "exact_cce_gap": rec.get("exact_cce_gap"),
                "exact_skipped": _skipped(rec),
                "last_iterate_value": rec.get("last_iterate_value"),
                "last_iterate_nash_gap": rec.get("last_iterate_nash_gap"),
                "order": doc.get("order", "simultaneous"),
                "eta_schedule": doc.get("eta_schedule", "constant"),
                "external_regret": rec.get("external_regret"),
                "swap_regret": rec.get("swap_regret"),
                "last_iterate_duality_gap": rec.get("last_iterate_duality_gap"),
                "feedback": doc.get("feedback", "full"),
                "feedback_seed": doc.get("feedback_seed"),
                "samples": rec.get("samples_used"),
                "episodes": rec.get("episodes"),
                "bonus": doc.get("bonus"),
                "ix": doc.get("ix"),
                "ix_schedule": doc.get("ix_schedule"),
                "bandit_rate": doc.get("bandit_rate"),
                "weighted_average_value": rec.get("weighted_average_value"),
                "weighted_average_nash_gap": rec.get("weighted_average_nash_gap"),
                "weighted_average_duality_gap": rec.get("weighted_average_duality_gap"),
                # Whose theorem's rate a 'theory' rate is (the catalogue's key), null for a number.
                "eta_theory": parse_theory(doc["eta"]) if isinstance(doc["eta"], str) else None,
                # Since discounted games: the discount and the value estimate V^T'(rho) of a
                # discounted game's run (null for a finite-horizon game's).
                "discount": discount,
                "value_estimate": rec.get("value_estimate"),
            }
        )
        horizon = shape["H"] if discount is None else 1.0 / (1.0 - discount)
        rows[-1].update(_original_columns(rows[-1], doc.get("units"), horizon))
    return rows


def _skipped(record: dict[str, Any]) -> str | None:
    """Why an asked-for exact gap is missing at a checkpoint (``None``: computed, or not asked for)."""
    reasons = [f"{name}: {record[name + '_skipped']}" for name in EXACT_FIELDS if record.get(name + "_skipped")]
    return "; ".join(reasons) or None


def _results_schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("run_id", pa.string()),
            ("game", pa.string()),
            ("game_kind", pa.string()),
            ("game_seed", pa.int64()),
            ("seed_index", pa.int64()),
            ("N", pa.int64()),
            ("H", pa.int64()),
            ("S", pa.int64()),
            ("A", pa.string()),
            ("algorithm", pa.string()),
            ("concept", pa.string()),
            ("optimistic", pa.bool_()),
            ("eta", pa.string()),
            ("eta_value", pa.float64()),
            ("T", pa.int64()),
            ("checkpoint", pa.int64()),
            ("value", pa.list_(pa.float64())),
            ("certified_ce_bound", pa.list_(pa.float64())),
            ("certified_cce_bound", pa.list_(pa.float64())),
            ("certified_ce_gap", pa.float64()),
            ("certified_cce_gap", pa.float64()),
            ("ce_gap_times_T", pa.float64()),
            ("cce_gap_times_T", pa.float64()),
            ("gap", pa.float64()),
            ("gap_times_T", pa.float64()),
            ("wall_time_s", pa.float64()),
            ("batch_id", pa.string()),
            ("batch_size", pa.int64()),
            ("batch_wall_time_s", pa.float64()),
            ("dtype", pa.string()),
            ("game_sha256", pa.string()),
            ("exact_ce_gap", pa.float64()),
            ("exact_cce_gap", pa.float64()),
            ("exact_skipped", pa.string()),
            ("last_iterate_value", pa.list_(pa.float64())),
            ("last_iterate_nash_gap", pa.float64()),
            ("order", pa.string()),
            ("eta_schedule", pa.string()),
            ("external_regret", pa.float64()),
            ("swap_regret", pa.float64()),
            ("last_iterate_duality_gap", pa.float64()),
            ("feedback", pa.string()),
            ("feedback_seed", pa.int64()),
            ("samples", pa.int64()),
            ("episodes", pa.int64()),
            ("bonus", pa.float64()),
            ("ix", pa.float64()),
            ("ix_schedule", pa.string()),
            ("bandit_rate", pa.string()),
            ("weighted_average_value", pa.list_(pa.float64())),
            ("weighted_average_nash_gap", pa.float64()),
            ("weighted_average_duality_gap", pa.float64()),
            ("eta_theory", pa.string()),
            ("discount", pa.float64()),
            ("value_estimate", pa.list_(pa.float64())),
            *((name, pa.list_(pa.float64()) if name in LIST_ORIGINAL_COLUMNS else pa.float64()) for name in ORIGINAL_COLUMNS),
        ]
    )


def consolidate_results(out: str | Path, plan: SweepPlan | None = None) -> tuple[Path, int]:
    """Write ``out/results.parquet`` from the run files (those of ``plan``, or all); returns (path, runs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    runs_dir = out / RUNS_DIR
    items: list[tuple[Path, str, PlannedRun | None]]
    if plan is not None:
        items = [(runs_dir / f"{r.run_id}.json", r.run_id, r) for r in plan.runs]
    else:
        items = [(p, p.stem, None) for p in sorted(runs_dir.glob("*.json")) if not p.name.startswith(".")]
    schema = _results_schema()
    # Provenance in the file itself, so that a copied table still says where it came from.
    schema = schema.with_metadata({PROVENANCE_KEY: _canonical_json(_provenance(out, plan)).encode("utf-8")})
    count = 0

    def write(fh) -> None:
        # Row groups of a bounded number of rows: the memory does not grow with the sweep.
        nonlocal count
        rows: list[dict[str, Any]] = []
        with pq.ParquetWriter(fh, schema) as writer:
            for path, rid, run in items:
                doc = checked_run_file(path, rid, run)
                if doc is None:
                    continue
                rows.extend(_result_rows(doc, run))
                count += 1
                if len(rows) >= _ROWS_PER_WRITE:
                    writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                    rows = []
            if rows or not count:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))

    path = out / RESULTS_FILE
    atomic_write(path, write)
    return path, count


def _provenance(out: Path, plan: SweepPlan | None) -> dict[str, Any]:
    """What ``results.parquet`` carries in its metadata: versions, the validated configuration,
    the games and their content hashes, the checkpoints (from ``plan``, else from the manifest)."""
    from ..rundirs._directory import versions

    manifest = read_manifest(out / MANIFEST_FILE) or {}
    config: dict[str, Any] | None
    games: list[dict[str, Any]] | None
    checkpoints: list[int] | None
    if plan is not None:
        config, games, checkpoints = plan.config.model_dump(mode="json"), list(plan.games), list(plan.checkpoints)
    else:
        config, games, checkpoints = manifest.get("config"), manifest.get("games"), manifest.get("checkpoints")
    raw = manifest.get("raw_config")
    return {
        "format": RESULTS_FORMAT,
        "versions": versions(),
        "config": config,
        "raw_config": raw,
        "games": games,
        "checkpoints": checkpoints,
        "created": _now(),
    }
