"""Sweeps: a grid of runs, batched, executed in parallel (processes or Ray), resumable.

Layout of a sweep directory ``DIR``::

    manifest.json        configuration, seeds, versions, machine, batches, wall times, retries
    runs/<run_id>.json   one file per finished run: its specification and per-checkpoint metrics
    results.parquet      one row per run and checkpoint (consolidated from runs/)

Every run has an id: the first 16 hex digits of the SHA-256 of a canonical JSON of what
determines its numbers (the game's content, the algorithm, optimism, learning rate, ``T``, the
checkpoints, the dtype). Runs that share (algorithm, optimism, game shape, ``T``, checkpoints,
dtype) execute as one [`run_batch`][markovgames.dynamics.run_batch] call (one task). A finished batch
writes its runs' files atomically as soon as it returns, so an interrupted sweep loses only the
batches that were running; started again, it skips every run whose file exists, after checking
every such file and the manifest field by field (`._sweep_files`): a damaged one is refused
before anything is computed or written.

A user's learner file is read once, by the plan: its bytes are hashed into the runs' ids and
handed to the workers, which compile those bytes rather than the file (which may have changed).

Ray is imported only when ``executor="ray"`` is asked for.

This module runs a sweep (`run_sweep`) and gathers the sweep's API; the pieces it runs are, in
the order of a sweep: `._sweep_plan` (the grid's runs, their ids and batches), `._sweep_dir` (the
directory's layout and checks), `._sweep_session` (resuming, the run files and the manifest as
batches finish), `._sweep_execute` (one batch, and the executors that run them) and
`._sweep_results` (the run files' documents and ``results.parquet``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._lock import directory_lock
from ..._outputs import remove_created_parents
from ..._resources import format_bytes
from ...games import MAX_GAME_ENTRIES
from ..rundirs._directory import MARKER_FILE, write_marker
from ._config import SweepConfig, SweepConfigError, load_sweep_config
from ._directory import _DISK_ERRORS, MANIFEST_FILE, RUNS_DIR, _check_out, _now, _prepare_out, _remove_created
from ._execute import BatchOutput, _execute_inline, _execute_processes, _execute_ray, _require_ray, execute_batch
from ._files import SweepError, SweepFileError, run_id_of
from ._plan import (
    DEFAULT_MAX_RUNS,
    BatchTask,
    PlannedRun,
    SweepPlan,
    check_batch_memory,
    check_grid_size,
    derive_game_seeds,
    game_content_hash,
    grid_size,
    plan_sweep,
)
from ._results import consolidate_results
from ._session import SweepProgress, _SweepSession
from ._summary import RESULTS_FILE

__all__ = [
    "SweepError",
    "SweepFileError",
    "PlannedRun",
    "BatchTask",
    "BatchOutput",
    "SweepPlan",
    "SweepProgress",
    "SweepReport",
    "plan_sweep",
    "grid_size",
    "check_grid_size",
    "check_batch_memory",
    "DEFAULT_MAX_RUNS",
    "sweep_output_dir",
    "execute_batch",
    "run_sweep",
    "consolidate_results",
    "derive_game_seeds",
    "game_content_hash",
    "run_id_of",
    "RESULTS_FILE",
    "MANIFEST_FILE",
    "RUNS_DIR",
]

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class SweepReport:
    out: Path
    total_runs: int
    computed_runs: int
    skipped_runs: int
    failed_runs: int
    batches: int
    retries: int
    wall_time_s: float
    results_path: Path | None
    manifest_path: Path
    failures: tuple[str, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------
def sweep_output_dir(config: SweepConfig, base_dir: str | Path, stem: str) -> Path:
    """The default sweep directory: the configuration's ``out`` (relative to its folder), else ``sweeps/<name>``."""
    if config.out:
        return Path(base_dir) / config.out
    return Path("sweeps") / (config.name or stem)


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def run_sweep(
    config: SweepConfig | str | Path,
    out: str | Path | None = None,
    *,
    overrides: Sequence[str] = (),
    base_dir: str | Path | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
    raw_config: dict[str, Any] | None = None,
    config_name: str | None = None,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    max_runs: int = DEFAULT_MAX_RUNS,
    on_plan: Callable[[SweepPlan], None] | None = None,
) -> SweepReport:
    """Run (or resume) a sweep into ``out``.

    Nothing is written before the configuration, its games and the executor are checked; the
    sweep directory is then written under its lock (``.NAME.lock`` beside it), so that two sweeps
    cannot write into one directory at once.

    Parameters
    ----------
    config : a validated [`SweepConfig`][markovgames.experiments.SweepConfig], or the path of a TOML file (then ``overrides``
        are ``KEY=VALUE`` strings applied to it, and game files are relative to its folder).
    out : the sweep directory (default: the configuration's ``out``, relative to its folder,
        else ``sweeps/<config name>``).
    executor : ``"local"`` (worker processes, ``spawn``; ``workers=1`` runs inline) or ``"ray"``.
    address : Ray cluster address (default: start a local Ray instance, or use the one this
        process is already connected to).
    workers : local worker processes (default ``min(2, cpu_count)``); for a local Ray instance
        that this call starts, its CPU count.
    progress : called after every finished batch with a `SweepProgress`.
    max_bytes, max_entries : bound the grid's games as in [`load_game`][markovgames.games.load_game].
    max_runs : refuse a larger grid (`check_grid_size`), before anything is expanded.
    on_plan : called with the checked plan before anything is written (the command line says
        there how much a large sweep will write, `SweepPlan.output_bytes`).

    Raises
    ------
    SweepConfigError
        Also when the sweep would write more than the free space of ``out``'s disk.
    """
    if executor not in EXECUTORS:
        raise SweepConfigError.for_argument("executor", f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SweepConfigError.for_argument("workers", f"expected a positive integer, got {workers!r}")
    if isinstance(config, (str, Path)):
        path = Path(config)
        config, raw_config = load_sweep_config(path, list(overrides))
        config_name = config_name or path.name
        base_dir = path.parent if base_dir is None else base_dir
        stem = path.stem
    else:
        stem = config.name or "sweep"
    base_dir = Path(base_dir) if base_dir is not None else Path(".")
    out = sweep_output_dir(config, base_dir, stem) if out is None else Path(out)
    start_wall = time.perf_counter()
    started_at = _now()

    try:
        plan = plan_sweep(config, base_dir, max_bytes=max_bytes, max_entries=max_entries, max_runs=max_runs)
    except SweepConfigError as err:
        # Name the configuration file too: the bad entry is one of its games.
        if config_name and not str(err).startswith(config_name):
            raise SweepConfigError(f"{config_name}: {err}") from None
        raise
    try:
        check_batch_memory(plan, 1 if executor == "ray" else (workers or default_workers()))
    except SweepConfigError as err:
        raise SweepConfigError(f"{config_name}: {err}" if config_name else str(err)) from None
    if executor == "ray":
        _require_ray(address)  # before anything is written: a refusal leaves nothing behind
    _check_out(out)
    _check_free_space(plan, out)
    if on_plan is not None:
        on_plan(plan)
    # A sweep refused or failed under the lock removes the parents of ``out`` that it made.
    with remove_created_parents(out), directory_lock(out, "out"):
        return _run_planned(
            config,
            plan,
            out,
            overrides=overrides,
            executor=executor,
            address=address,
            workers=workers,
            progress=progress,
            raw_config=raw_config,
            config_name=config_name,
            start_wall=start_wall,
            started_at=started_at,
        )


def _check_free_space(plan: SweepPlan, out: Path) -> None:
    """Refuse a sweep whose files cannot fit on ``out``'s disk, before it starts. A resumed sweep
    needs room only for the runs whose files are not written yet."""
    ancestor = out.absolute()
    while not ancestor.exists():
        ancestor = ancestor.parent
    try:
        written = {name.removesuffix(".json") for name in os.listdir(out / RUNS_DIR)}
    except OSError:  # no runs yet (or not a directory: the sweep's own checks say so)
        written = set()
    pending = [run_id for run_id in plan.run_ids if run_id not in written]
    needed, free = plan.output_bytes(pending), shutil.disk_usage(ancestor).free
    if needed > free:
        raise SweepConfigError.for_argument(
            "out",
            f"the sweep writes about {format_bytes(needed)} ({len(pending)} runs, their checkpoints' rows), more than the "
            f"{format_bytes(free)} free under {ancestor}; choose fewer runs or checkpoints, or another disk",
            str(out),
        )


def _run_planned(
    config: SweepConfig,
    plan: SweepPlan,
    out: Path,
    *,
    overrides: Sequence[str],
    executor: str,
    address: str | None,
    workers: int | None,
    progress: Callable[[SweepProgress], None] | None,
    raw_config: dict[str, Any] | None,
    config_name: str | None,
    start_wall: float,
    started_at: str,
) -> SweepReport:
    """Run a planned sweep into ``out``, whose lock the caller holds."""
    created = _prepare_out(out)
    try:
        return _run_prepared(
            config,
            plan,
            out,
            overrides=overrides,
            executor=executor,
            address=address,
            workers=workers,
            progress=progress,
            raw_config=raw_config,
            config_name=config_name,
            start_wall=start_wall,
            started_at=started_at,
        )
    except OSError as err:
        if err.errno not in _DISK_ERRORS:
            raise
        raise _remove_created(out, created, err) from None


def _run_prepared(
    config: SweepConfig,
    plan: SweepPlan,
    out: Path,
    *,
    overrides: Sequence[str],
    executor: str,
    address: str | None,
    workers: int | None,
    progress: Callable[[SweepProgress], None] | None,
    raw_config: dict[str, Any] | None,
    config_name: str | None,
    start_wall: float,
    started_at: str,
) -> SweepReport:
    """Run a planned sweep into the prepared directory ``out``."""
    session = _SweepSession(
        config,
        plan,
        out,
        overrides=overrides,
        progress=progress,
        raw_config=raw_config,
        config_name=config_name,
        start_wall=start_wall,
        started_at=started_at,
    )
    # Marked once its earlier files are read and checked: a refused sweep directory stays as it was.
    if MARKER_FILE not in os.listdir(out):
        write_marker(out, "sweep")
    n_workers = workers or default_workers()
    session.executor_info.update({"kind": executor, "workers": n_workers if executor == "local" else workers, "address": address})
    tasks = session.tasks
    session.write_manifest("running")
    session.notify(None)
    try:
        if tasks:
            if executor == "ray":
                info = _execute_ray(tasks, address, workers, config.max_retries, session.on_result, session.on_failure)
                session.executor_info.update(info)
            elif n_workers == 1 or len(tasks) == 1:
                session.executor_info["inline"] = True
                _execute_inline(tasks, config.max_retries, session.on_result, session.on_failure)
            else:
                _execute_processes(tasks, n_workers, config.max_retries, session.on_result, session.on_failure)
    except BaseException:
        # Interrupted: what finished is on disk; say so in the manifest and re-raise.
        with contextlib.suppress(Exception):
            session.write_manifest("interrupted", _now())
        raise
    results_path, _ = consolidate_results(out, plan)
    session.write_manifest("complete" if not session.failures else "incomplete", _now())
    return SweepReport(
        out=out,
        total_runs=len(plan.runs),
        computed_runs=session.computed,
        skipped_runs=len(session.finished),
        failed_runs=session.failed_runs,
        batches=len(tasks),
        retries=session.retries,
        wall_time_s=time.perf_counter() - start_wall,
        results_path=results_path,
        manifest_path=out / MANIFEST_FILE,
        failures=tuple(session.failures),
    )
