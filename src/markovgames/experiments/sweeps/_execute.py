"""Executing a sweep's batches: one batch (`execute_batch`), and the executors that run them.

A batch runs in a worker process (a pool started with ``spawn``), in a Ray worker, or inline; a
batch that raises or whose worker dies is submitted again, up to ``max_retries`` times, and every
outcome is reported to the caller (``on_result``, ``on_failure``). Workers import what they run
by module path: `execute_batch` and the pool's initializer live here.

Ray is imported only when ``executor="ray"`` is asked for.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...dynamics import (
    Algorithm,
    DiscountedBatchRunResult,
    get_algorithm,
    get_step_schedule,
    run_batch,
    run_vlearning_batch,
)
from ...games import DiscountedMarkovGame, MarkovGame
from ..rundirs._exact import exact_checkpoint_gaps, exact_prefix_gaps
from ._bandit import is_vlearning
from ._config import SweepConfigError
from ._files import SweepError
from ._plan import BatchTask
from ._values import episodes_per_round

__all__ = ["BatchOutput", "execute_batch"]


@dataclass(frozen=True, eq=False)
class BatchOutput:
    """What a worker sends back: the per-checkpoint arrays of every run of the batch (a batch of
    discounted games: ``value_estimate`` in place of the output policy's value and bounds)."""

    batch_id: str
    run_ids: tuple[str, ...]
    prefixes: np.ndarray  # (P,)
    value: np.ndarray | None  # (B, P, N): the output policy's value (None for discounted games)
    certified_ce_bound: np.ndarray | None
    certified_cce_bound: np.ndarray | None
    wall_time_s: float
    compile_time_s: float
    host: str
    pid: int
    exact: tuple[dict[int, dict[str, Any]], ...] | None = None  # per run, exact gaps per checkpoint
    last_iterate: np.ndarray | None = None  # (B, P, 2, N): the last iterate's value and best-response values
    weighted_average: np.ndarray | None = None  # (B, P, 2, N): the same of the weighted average of the iterates
    regret: np.ndarray | None = None  # (B, P, 2, N): each player's average external and swap regret
    samples_used: np.ndarray | None = None  # (P,): the samples each run drew after T' iterations (sampled:K, bandit:M)
    value_estimate: np.ndarray | None = None  # (B, P, N): a discounted run's value estimates V^T'(rho)


# ---------------------------------------------------------------------------------------
# One task
# ---------------------------------------------------------------------------------------
def execute_batch(task: BatchTask) -> BatchOutput:
    """Run one batch (in a worker process, a Ray worker, or inline): one ``run_batch`` call.

    A user's file is compiled from the bytes the driver hashed (``task.reference_source``); a
    module is imported here, and refused if its file's SHA-256 is no longer the one recorded. So is
    a user's step-size schedule (``task.schedule_source``). A batch on bandit feedback runs
    through ``run_vlearning_batch`` (`_execute_bandit`).
    """
    if task.bandit:
        return _execute_bandit(task)
    algorithm = _algorithm(task)
    schedule = get_step_schedule(task.schedule_reference, file_source=task.schedule_source)
    if schedule.source_sha256 != task.schedule_sha256:
        raise SweepError(
            f"{task.schedule_reference}: its code changed after the sweep read it (SHA-256 {task.schedule_sha256} then, "
            f"{schedule.source_sha256} now); run the sweep again to run the new code"
        )
    result = run_batch(
        _games(task),
        algorithm,
        T=task.T,
        etas=list(task.etas),
        optimistic=task.optimistic,
        record_trajectory=task.exact,  # exact gaps need each run's trajectory
        dtype=task.dtype,
        checkpoints=list(task.checkpoints),
        last_iterate=task.last_iterate,
        weighted_average=task.weighted_average,
        order=task.order,
        step_schedule=schedule,
        regret=task.regret,
        feedback=task.feedback,
        # Run r draws with its own seed, as run(..., seed=feedback_seeds[r]) would.
        seeds=None if task.feedback_seeds is None else list(task.feedback_seeds),
    )
    samples = result.samples_used
    exact = None
    if isinstance(result, DiscountedBatchRunResult):  # value estimates, no output policy
        policy: dict[str, np.ndarray | None] = {"value_estimate": np.asarray(result.value_estimate)}
        policy.update(value=None, certified_ce_bound=None, certified_cce_bound=None)
    else:
        policy = {
            "value": np.asarray(result.value),
            "certified_ce_bound": np.asarray(result.certified_ce_bound),
            "certified_cce_bound": np.asarray(result.certified_cce_bound),
        }
        if task.exact:  # (a discounted sweep refuses exact when it is planned)
            exact = tuple(exact_checkpoint_gaps(result.run(b), task.checkpoints) for b in range(len(task)))
    return BatchOutput(
        batch_id=task.batch_id,
        run_ids=task.run_ids,
        prefixes=np.asarray(result.prefixes),
        **policy,
        wall_time_s=float(result.wall_time_s),
        compile_time_s=float(result.compile_time_s),
        host=socket.gethostname(),
        pid=os.getpid(),
        exact=exact,
        last_iterate=None
        if result.last_iterate_value is None or result.last_iterate_best_response is None
        else np.stack([result.last_iterate_value, result.last_iterate_best_response], axis=-2),
        weighted_average=None
        if result.weighted_average_value is None or result.weighted_average_best_response is None
        else np.stack([result.weighted_average_value, result.weighted_average_best_response], axis=-2),
        regret=None
        if result.external_regret is None or result.swap_regret is None
        else np.stack([result.external_regret, result.swap_regret], axis=-2),
        samples_used=None if samples is None else np.asarray(samples, dtype=np.int64),
    )


def _games(task: BatchTask) -> list[MarkovGame] | list[DiscountedMarkovGame]:
    """The batch's games, all of one kind (a plan's games are: `check_one_kind`)."""
    finite = [g for g in task.games if isinstance(g, MarkovGame)]
    discounted = [g for g in task.games if isinstance(g, DiscountedMarkovGame)]
    if finite and discounted:  # unreachable: one plan, one kind
        raise SweepError(f"batch {task.batch_id}: games of both kinds in one batch")
    return finite or discounted


def _algorithm(task: BatchTask) -> Algorithm:
    """The task's composition, from the bytes the driver hashed; refused if its code changed since."""
    algorithm = get_algorithm(task.reference, file_source=task.reference_source)
    if algorithm.source_sha256 != task.algorithm_sha256:
        raise SweepError(
            f"{task.algorithm}: its code changed after the sweep read it (SHA-256 {task.algorithm_sha256} then, "
            f"{algorithm.source_sha256} now); run the sweep again to run the new code"
        )
    return algorithm


def _execute_bandit(task: BatchTask) -> BatchOutput:
    """A batch on bandit feedback: one ``run_vlearning_batch`` call per game and learning rate, over
    the runs' draws' seeds (run ``r`` is ``run_vlearning(game, ..., T M, seed=feedback_seed)``), and
    each run's output policy evaluated at the checkpoints ``T'`` (rounds: ``prefix_curves``, and the
    exact gaps of ``policy.prefix(T')`` where asked). The runs of a batch share the game's shape,
    so the calls of one batch share one compiled program."""
    from ...evaluation import prefix_curves

    vlearning = is_vlearning(task.algorithm)
    algorithm: str | Algorithm = task.algorithm if vlearning else _algorithm(task)
    per_round = episodes_per_round(task.feedback)
    checkpoints = np.asarray(task.checkpoints, dtype=np.int64)
    shape = (len(task), len(checkpoints), task.games[0].num_players)
    value, ce, cce = np.empty(shape), np.empty(shape), np.empty(shape)
    exact: list[dict[int, dict[str, Any]]] = [{} for _ in range(len(task))]
    seeds = task.feedback_seeds
    if seeds is None or len(seeds) != len(task):  # unreachable: a bandit run draws, with its seed
        raise SweepError(f"batch {task.batch_id}: bandit runs need one draws' seed each")
    calls: dict[tuple, list[int]] = defaultdict(list)
    for b, (game, eta) in enumerate(zip(task.games, task.etas, strict=True)):
        calls[(id(game), eta)].append(b)  # one game object per game of the plan, shared by its runs
    wall = 0.0
    for members in calls.values():
        game, eta = task.games[members[0]], task.etas[members[0]]
        if not isinstance(game, MarkovGame):  # unreachable: a discounted sweep refuses bandit feedback when it is planned
            raise SweepError(f"batch {task.batch_id}: bandit feedback needs finite-horizon games")
        start = time.perf_counter()
        results = run_vlearning_batch(
            game,
            algorithm,
            task.T * per_round,
            [seeds[b] for b in members],
            feedback=task.feedback,
            bonus=task.bonus,
            eta=None if vlearning else float(eta),  # type: ignore[arg-type]
            ix=task.ix,
            bandit_rate=task.bandit_rate,
            optimistic=task.optimistic,
        )
        for b, result in zip(members, results, strict=True):
            curves = prefix_curves(game, result.policy, checkpoints)
            value[b], ce[b], cce[b] = curves.value, curves.certified_ce, curves.certified_cce
        wall += time.perf_counter() - start
        if task.exact:  # after the timing, as for the other runs
            for b, result in zip(members, results, strict=True):
                exact[b] = exact_prefix_gaps(game, result.policy, task.checkpoints)
        del results  # the records and policies of this call: the next call's room
    horizon = next(g.horizon for g in task.games if isinstance(g, MarkovGame))
    return BatchOutput(
        batch_id=task.batch_id,
        run_ids=task.run_ids,
        prefixes=checkpoints,
        value=value,
        certified_ce_bound=ce,
        certified_cce_bound=cce,
        wall_time_s=wall,
        compile_time_s=0.0,  # not measured apart: V-learning's compile time is in its wall time
        host=socket.gethostname(),
        pid=os.getpid(),
        exact=tuple(exact) if task.exact else None,
        # A round plays M episodes of H steps each, one sampled transition per step.
        samples_used=checkpoints * per_round * horizon,
    )


# ---------------------------------------------------------------------------------------
# Executors
# ---------------------------------------------------------------------------------------
OnResult = Callable[[BatchTask, BatchOutput, int], None]
OnFailure = Callable[[BatchTask, int, str, bool], None]


def _execute_inline(tasks: list[BatchTask], max_retries: int, on_result: OnResult, on_failure: OnFailure) -> None:
    for task in tasks:
        attempt = 0
        while True:
            attempt += 1
            try:
                output = execute_batch(task)
            except Exception:
                final = attempt > max_retries
                on_failure(task, attempt, traceback.format_exc(limit=5), final)
                if final:
                    break
                continue
            on_result(task, output, attempt)
            break


#: Added to a batch's failure when its worker process died. The usual cause in a script is
#: a missing main guard: workers are started with "spawn", which imports the script again.
_DEAD_WORKER_HINT = (
    "A worker process died. Called from a script, run_sweep must be under "
    '`if __name__ == "__main__":` (worker processes import the script again); otherwise the '
    "worker may have run out of memory (try fewer workers).\n"
)


def _execute_processes(
    tasks: list[BatchTask],
    workers: int,
    max_retries: int,
    on_result: OnResult,
    on_failure: OnFailure,
    execute: Callable[[BatchTask], BatchOutput] = execute_batch,
) -> None:
    """Run the batches in a pool of worker processes; a batch whose worker dies (the pool breaks)
    or that raises is submitted again, up to ``max_retries`` times, in a fresh pool if needed."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    cache = _compilation_cache_settings()

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=min(workers, len(tasks)), mp_context=context, initializer=_use_compilation_cache, initargs=(cache,)
        )

    pool = new_pool()
    attempts: dict[str, int] = defaultdict(int)
    futures: dict[Any, BatchTask] = {}

    def submit(task: BatchTask) -> None:
        nonlocal pool
        attempts[task.batch_id] += 1
        try:
            future = pool.submit(execute, task)
        except (BrokenProcessPool, RuntimeError):
            pool.shutdown(wait=False, cancel_futures=True)
            pool = new_pool()
            future = pool.submit(execute, task)
        futures[future] = task

    try:
        for task in tasks:
            submit(task)
        while futures:
            done, _ = wait(list(futures), return_when=FIRST_COMPLETED)
            for future in done:
                task = futures.pop(future)
                attempt = attempts[task.batch_id]
                try:
                    output = future.result()
                except Exception as err:
                    final = attempt > max_retries
                    detail = "".join(traceback.format_exception(err, limit=5))
                    if isinstance(err, BrokenProcessPool):
                        detail += _DEAD_WORKER_HINT
                    on_failure(task, attempt, detail, final)
                    if not final:
                        submit(task)
                    continue
                on_result(task, output, attempt)
    finally:
        # On an interruption, do not wait for running batches: their results would be lost anyway.
        if futures:
            _stop_workers(pool)
        pool.shutdown(wait=not futures, cancel_futures=True)


#: JAX's persistent compilation cache settings a sweep's worker processes take over from the driver.
_CACHE_SETTINGS = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_compilation_cache_max_size",
)


def _compilation_cache_settings() -> dict[str, Any]:
    """The driver's persistent compilation cache (JAX's configuration), for its worker processes:
    empty when the driver keeps none.

    A worker is a fresh interpreter: it reads JAX's configuration from the environment only, so a
    cache the driver configured in code (``jax.config.update``, as the test suite and scripts do)
    would not reach it, and every worker would compile every loop again.
    """
    import jax

    settings = {name: getattr(jax.config, name) for name in _CACHE_SETTINGS}
    return settings if settings["jax_compilation_cache_dir"] else {}


def _use_compilation_cache(settings: dict[str, Any]) -> None:
    """(In a worker process, at its start.) Use the driver's persistent compilation cache."""
    if settings:
        import jax

        for name, value in settings.items():
            jax.config.update(name, value)


def _stop_workers(pool) -> None:
    """End the worker processes of an interrupted pool at once (SIGTERM reaches only this process;
    left alone, its workers would finish their batches, and the interpreter's exit waits for them)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _check_reachable(address: str | None, timeout: float = 10.0) -> None:
    """Refuse a Ray ``host:port`` (or ``ray://host:port``) nobody answers at, before ``ray.init``
    (which retries an unreachable cluster for minutes and ignores Ctrl-C meanwhile)."""
    import socket

    if address is None or address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # a form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as err:
        raise SweepConfigError.for_argument(
            "address",
            f"no Ray cluster answers there ({err.strerror or err}); start one (ray start --head) or give no "
            "address to run a local one",
            address,
        ) from None


def _require_ray(address: str | None) -> None:
    """Refuse ``executor="ray"`` without Ray, or with an address nobody answers at."""
    try:
        import ray
    except ImportError:
        raise SweepConfigError.for_argument("executor", "Ray is not installed; pip install 'markovgames[ray]'", "ray") from None
    if not ray.is_initialized():
        _check_reachable(address)


def _execute_ray(
    tasks: list[BatchTask],
    address: str | None,
    workers: int | None,
    max_retries: int,
    on_result: OnResult,
    on_failure: OnFailure,
    execute: Callable[[BatchTask], BatchOutput] = execute_batch,
) -> dict[str, Any]:
    try:
        import ray
    except ImportError:
        raise SweepConfigError.for_argument("executor", "Ray is not installed; pip install 'markovgames[ray]'", "ray") from None
    started = False
    if not ray.is_initialized():
        _check_reachable(address)
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None and workers is not None:
            kwargs["num_cpus"] = workers
        ray.init(address=address, **kwargs)
        started = True
    info = {
        "ray_version": ray.__version__,
        "started_local_cluster": started and address is None,
        "cluster_cpus": ray.cluster_resources().get("CPU"),
    }
    # Every retry happens here, not inside Ray (max_retries=0): a task whose worker died comes back
    # as WorkerCrashedError and an exception as RayTaskError, and both are resubmitted and counted
    # in the manifest.
    remote = ray.remote(num_cpus=1, max_retries=0, retry_exceptions=False)(execute)
    attempts: dict[str, int] = defaultdict(int)
    refs: dict[Any, BatchTask] = {}

    def submit(task: BatchTask) -> None:
        attempts[task.batch_id] += 1
        refs[remote.remote(task)] = task

    try:
        for task in tasks:
            submit(task)
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                task = refs.pop(ref)
                attempt = attempts[task.batch_id]
                try:
                    output = ray.get(ref)
                except Exception as err:  # RayTaskError, WorkerCrashedError, ...
                    final = attempt > max_retries
                    on_failure(task, attempt, f"{type(err).__name__}: {err}"[:4000], final)
                    if not final:
                        submit(task)
                    continue
                on_result(task, output, attempt)
    finally:
        for ref in refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        if started:
            ray.shutdown()
    return info
