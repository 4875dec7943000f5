"""One session of a sweep in its directory: resuming, recording, reporting.

A session checks the run files already there (their runs are skipped: a sweep resumes), writes
each finished batch's run files as soon as the executor reports it, and keeps ``manifest.json``
(configuration, seeds, versions, machine, batches, wall times, retries, every session so far)
and the caller's progress up to date.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write_text
from ..._json import dumps
from ._config import SweepConfig
from ._directory import MANIFEST_FILE, RUNS_DIR
from ._execute import BatchOutput
from ._files import MANIFEST_FORMAT, read_manifest
from ._plan import BatchTask, SweepPlan
from ._results import _run_document, checked_run_file

__all__ = ["SweepProgress"]


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep stands; ``latest`` describes the batch that finished last (or ``None``)."""

    total_runs: int
    done_runs: int
    skipped_runs: int
    total_batches: int
    done_batches: int
    failed_batches: int
    latest: dict[str, Any] | None = None


def _final_gaps(output: BatchOutput, concept: str) -> tuple[str, np.ndarray | None]:
    """The measure a batch's progress line shows, and each run's value of it at the last checkpoint."""
    bound = output.certified_ce_bound if concept == "ce" else output.certified_cce_bound
    if bound is not None and output.value is not None:
        return f"{concept.upper()} gap", np.max(bound[:, -1] - output.value[:, -1], axis=-1)
    for name, iterate in (("last-iterate Nash gap", output.last_iterate), ("weighted-average Nash gap", output.weighted_average)):
        if iterate is not None:  # (B, P, 2, N): the values and best-response values
            return name, np.max(iterate[:, -1, 1] - iterate[:, -1, 0], axis=-1)
    return "value estimate", None


def _machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def _previous_manifest(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The sessions and batches recorded by earlier sessions of a sweep directory (none without a
    manifest); a damaged manifest is refused (`read_manifest`), not replaced."""
    previous = read_manifest(out / MANIFEST_FILE)
    if previous is None:
        return [], []
    return list(previous["sessions"]), list(previous["batches"])


class _SweepSession:
    """One session of a sweep: what is pending, the counts and logs of what the executor reports
    (`on_result`, `on_failure`), and the manifest and progress that report them."""

    def __init__(
        self,
        config: SweepConfig,
        plan: SweepPlan,
        out: Path,
        *,
        overrides: Sequence[str],
        progress: Callable[[SweepProgress], None] | None,
        raw_config: dict[str, Any] | None,
        config_name: str | None,
        start_wall: float,
        started_at: str,
    ) -> None:
        self.config, self.plan, self.out, self.overrides = config, plan, out, overrides
        self.progress, self.raw_config, self.config_name = progress, raw_config, config_name
        self.start_wall, self.started_at = start_wall, started_at
        self.runs_dir = out / RUNS_DIR
        self.by_id = {r.run_id: r for r in plan.runs}
        # Every run file and the manifest are checked before anything is computed or written: a
        # damaged one is refused here, with the directory as it was.
        self.finished = {rid for rid, run in self.by_id.items() if checked_run_file(self.runs_dir / f"{rid}.json", rid, run)}
        self.tasks = plan.batches([rid for rid in plan.run_ids if rid not in self.finished])
        self.done = len(self.finished)  # runs with a run file, this session's included
        self.batches = self.failed_batches = self.computed = self.retries = self.failed_runs = 0
        self.batch_log: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.sessions, self.previous_batches = _previous_manifest(out)
        for b in self.previous_batches:
            b.setdefault("session", len(self.sessions) - 1)
        self.executor_info: dict[str, Any] = {}

    # ------------------------------------------------------------------ what the executor reports
    def on_result(self, task: BatchTask, output: BatchOutput, attempt: int) -> None:
        for b, rid in enumerate(output.run_ids):
            doc = _run_document(self.by_id[rid], output, b, attempt, len(task))
            atomic_write_text(self.runs_dir / f"{rid}.json", dumps(doc, str(self.runs_dir / f"{rid}.json")) + "\n")
        self.done += len(task)
        self.computed += len(task)
        self.batches += 1
        self.batch_log.append(
            {
                "batch_id": task.batch_id,
                "algorithm": task.algorithm,
                "optimistic": task.optimistic,
                "shape": task.shape,
                "T": task.T,
                "size": len(task),
                "status": "finished",
                "attempts": attempt,
                "wall_time_s": output.wall_time_s,
                "compile_time_s": output.compile_time_s,
                "host": output.host,
                "run_ids": list(task.run_ids),
            }
        )
        concept = task.concept
        measure, final_gaps = _final_gaps(output, concept)
        first = self.by_id[task.run_ids[0]]
        self.notify(
            {
                "algorithm": task.algorithm,
                "optimistic": task.optimistic,
                "game": first.game_label,
                "concept": concept,
                "T": int(output.prefixes[-1]),
                # What the batch's runs measure at T: the certified gap of their output policy (a
                # discounted game's runs: their last or weighted average iterate's Nash gap, if evaluated).
                "measure": measure,
                "median_gap": None if final_gaps is None else float(np.median(final_gaps)),
                "runs": len(task),
            }
        )

    def on_failure(self, task: BatchTask, attempt: int, detail: str, final: bool) -> None:
        if not final:
            self.retries += 1
            return
        self.failed_batches += 1
        self.failed_runs += len(task)
        last_line = detail.strip().splitlines()[-1] if detail.strip() else ""
        self.failures.append(
            f"batch {task.batch_id} ({task.algorithm}, {len(task)} runs) failed after {attempt} attempts: {last_line}"
        )
        self.batch_log.append(
            {
                "batch_id": task.batch_id,
                "algorithm": task.algorithm,
                "optimistic": task.optimistic,
                "T": task.T,
                "size": len(task),
                "status": "failed",
                "attempts": attempt,
                "error": detail[-4000:],
                "run_ids": list(task.run_ids),
            }
        )
        self.notify(None)

    # ------------------------------------------------------------------ what it reports to
    def notify(self, latest: dict[str, Any] | None) -> None:
        if self.progress is not None:
            self.progress(
                SweepProgress(
                    total_runs=len(self.plan.runs),
                    done_runs=self.done,
                    skipped_runs=len(self.finished),
                    total_batches=len(self.tasks),
                    done_batches=self.batches,
                    failed_batches=self.failed_batches,
                    latest=latest,
                )
            )

    def write_manifest(self, status: str, finished_at: str | None = None) -> None:
        text = dumps(self.manifest(status, finished_at), str(self.out / "manifest.json"), indent=2) + "\n"
        atomic_write_text(self.out / MANIFEST_FILE, text)

    def manifest(self, status: str, finished_at: str | None) -> dict[str, Any]:
        from ..rundirs._directory import versions

        config, plan = self.config, self.plan
        wall = time.perf_counter() - self.start_wall
        session = {
            "started_at": self.started_at,
            "finished_at": finished_at,
            "status": status,
            "wall_time_s": wall,
            "executor": self.executor_info,
            "runs_computed": self.computed,
            "runs_skipped_as_finished": len(self.finished),
            "batches": len(self.tasks),
            "retries": self.retries,
            "failed_batches": self.failed_batches,
        }
        all_sessions = self.sessions + [session]
        return {
            "format": MANIFEST_FORMAT,
            "name": config.name,
            "status": status,
            "config_file": self.config_name,
            "overrides": list(self.overrides),
            "config": config.model_dump(mode="json"),
            "raw_config": self.raw_config,
            "checkpoints": list(plan.checkpoints),
            "seeds": {
                "base_seed": config.base_seed,
                "count": config.seeds,
                "game_seeds": list(plan.game_seeds),
                "derivation": "numpy.random.SeedSequence(base_seed).spawn(count)[k].generate_state(1, numpy.uint64)[0] >> 1",
            },
            "games": list(plan.games),
            "runs": {
                "total": len(plan.runs),
                "finished": self.done,
                "failed": self.failed_runs,
                "ids": plan.run_ids,
            },
            "batches": self.previous_batches + [dict(b, session=len(self.sessions)) for b in self.batch_log],
            "retries": self.retries,
            "retries_all_sessions": sum(int(s.get("retries", 0)) for s in all_sessions),
            "wall_time_s": wall,
            "wall_time_s_all_sessions": sum(float(s.get("wall_time_s") or 0.0) for s in all_sessions),
            "executor": self.executor_info,
            "versions": versions(),
            "machine": _machine(),
            "started_at": self.started_at,
            "finished_at": finished_at,
            "sessions": all_sessions,
            "failures": self.failures,
        }
