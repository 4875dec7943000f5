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
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import math
import os
import platform
import socket
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import atomic_write, atomic_write_text
from .._files import JsonFileError, read_json
from .._lock import directory_lock
from .._outputs import remove_created_parents
from .._resources import format_bytes, physical_memory
from ..dynamics import (
    LearningRate,
    absolute_reference,
    check_learner,
    get_algorithm,
    loaded_file_source,
    resolve_learning_rate,
    run_batch,
)
from ..games import MAX_GAME_ENTRIES, MarkovGame, get_builtin, load_game, random_game
from ._exact import EXACT_FIELDS, exact_checkpoint_gaps
from ._rundir import MARKER_FILE, last_iterate_fields, marker_kind, write_marker
from ._summary import PROVENANCE_KEY, RESULTS_FILE
from ._sweep_config import (
    SweepConfig,
    SweepConfigError,
    load_sweep_config,
    resolved_checkpoints,
)
from ._sweep_files import (
    MANIFEST_FORMAT,
    MAX_JSON_BYTES,
    RUN_FILE_FORMAT,
    SweepDirectoryError,
    SweepError,
    SweepFileError,
    read_manifest,
    read_run_file,
    run_id_of,
)
from ._sweep_files import canonical_json as _canonical_json

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

MANIFEST_FILE = "manifest.json"
RUNS_DIR = "runs"
RESULTS_FORMAT = "markovgames-results/1"
EXECUTORS = ("local", "ray")
#: The most runs a grid may have unless the caller allows more (``--max-runs``): the plan keeps
#: every run (about 2 KiB each) and its game in memory, and the manifest lists them all.
DEFAULT_MAX_RUNS = 100_000
#: Unless ``max_batch_size`` says otherwise, a batch is cut so that its per-checkpoint results
#: (value and both bounds, per run, checkpoint and player) take at most this many bytes.
BATCH_RESULT_BYTES = 256 * 2**20
#: Rows of results.parquet converted and written at a time (consolidation streams the run files).
_ROWS_PER_WRITE = 50_000


# ---------------------------------------------------------------------------------------
# Identities
# ---------------------------------------------------------------------------------------
def game_content_hash(game: MarkovGame) -> str:
    """SHA-256 of what determines a game's dynamics: sizes, initial state, rewards, transitions."""
    h = hashlib.sha256()
    h.update(_canonical_json({"shape": [*game.shape_key[:3], list(game.shape_key[3])], "s1": game.initial_state}).encode())
    h.update(np.ascontiguousarray(game.rewards, dtype="<f8").tobytes())
    h.update(game.transition_bytes())
    return h.hexdigest()


def derive_game_seeds(base_seed: int, count: int) -> list[int]:
    """The integer seeds of the random games: ``SeedSequence(base_seed).spawn(count)``, one 63-bit int each.

    Seed ``k`` is ``int(children[k].generate_state(1, numpy.uint64)[0]) >> 1``; the game is
    ``random_game(..., seed_or_rng=seed)`` (or ``markovgames games random --seed SEED``).
    """
    children = np.random.SeedSequence(base_seed).spawn(count)
    return [int(c.generate_state(1, dtype=np.uint64)[0]) >> 1 for c in children]


# ---------------------------------------------------------------------------------------
# Plan
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PlannedRun:
    """One run of the grid."""

    run_id: str
    spec: dict[str, Any]
    game: MarkovGame
    game_label: str
    game_kind: str
    game_index: int
    game_seed: int | None
    seed_index: int | None
    algorithm: str  # as the configuration names it
    optimistic: bool
    eta: LearningRate
    eta_value: float | None
    T: int
    checkpoints: tuple[int, ...]
    dtype: str
    reference: str  # what a worker resolves (a user's file with its absolute path)
    value_update: str
    concept: str
    exact: bool = False
    last_iterate: bool = False
    #: A user's file: the bytes the driver read and hashed, which the workers compile (see `BatchTask`).
    reference_source: bytes | None = None
    #: The SHA-256 of a user's file or module (the spec's ``algorithm_sha256``); None for built-ins.
    algorithm_sha256: str | None = None

    @property
    def batch_key(self) -> tuple:
        # A batch of the stage-based update shares its per-stage rates: "theory" runs apart.
        stage_theory = self.value_update == "stage" and self.eta == "theory"
        return (
            self.algorithm,
            self.optimistic,
            self.game.shape_key,
            self.T,
            self.checkpoints,
            self.dtype,
            stage_theory,
            self.exact,
            self.last_iterate,
        )


@dataclass(frozen=True, eq=False)
class BatchTask:
    """One task: the runs of one batch, with their games (picklable; sent to a worker)."""

    batch_id: str
    algorithm: str  # as the configuration names it
    optimistic: bool
    T: int
    checkpoints: tuple[int, ...]
    dtype: str
    run_ids: tuple[str, ...]
    games: tuple[MarkovGame, ...]
    etas: tuple[LearningRate, ...]
    reference: str  # what the worker resolves
    concept: str
    exact: bool = False
    last_iterate: bool = False
    #: A user's file: its content as the driver read and hashed it. The worker compiles these
    #: bytes, not the file (which may have changed since), so that the results stored under the
    #: recorded SHA-256 are those of that code.
    reference_source: bytes | None = None
    #: The SHA-256 the runs' ids record for a user's file or module; the worker refuses to run
    #: other code (a module, which it imports itself, that changed since the driver's import).
    algorithm_sha256: str | None = None

    def __len__(self) -> int:
        return len(self.run_ids)

    @property
    def shape_key(self):
        return self.games[0].shape_key


@dataclass(frozen=True, eq=False)
class BatchOutput:
    """What a worker sends back: the per-checkpoint arrays of every run of the batch."""

    batch_id: str
    run_ids: tuple[str, ...]
    prefixes: np.ndarray  # (P,)
    value: np.ndarray  # (B, P, N)
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    wall_time_s: float
    compile_time_s: float
    host: str
    pid: int
    exact: tuple[dict[int, dict[str, Any]], ...] | None = None  # per run, exact gaps per checkpoint
    last_iterate: np.ndarray | None = None  # (B, P, 2, N): the last iterate's value and best-response values


@dataclass(frozen=True, eq=False)
class SweepPlan:
    """The runs of a configuration, in grid order."""

    config: SweepConfig
    runs: tuple[PlannedRun, ...]
    checkpoints: tuple[int, ...]
    game_seeds: tuple[int, ...]
    games: tuple[dict[str, Any], ...]

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    def batches(self, run_ids: Sequence[str] | None = None) -> list[BatchTask]:
        """Group runs (all, or those in ``run_ids``) into batch tasks, largest first."""
        wanted = None if run_ids is None else set(run_ids)
        groups: dict[tuple, list[PlannedRun]] = defaultdict(list)
        for r in self.runs:
            if wanted is None or r.run_id in wanted:
                groups[r.batch_key].append(r)
        tasks = []
        for members in groups.values():
            limit = self.config.max_batch_size
            if limit is None:
                per_run = 3 * len(self.checkpoints) * members[0].game.num_players * 8
                limit = max(1, BATCH_RESULT_BYTES // per_run)
            chunks = [members[k : k + limit] for k in range(0, len(members), limit)]
            for chunk in chunks:
                first = chunk[0]
                ids = tuple(r.run_id for r in chunk)
                tasks.append(
                    BatchTask(
                        batch_id=hashlib.sha256(",".join(ids).encode()).hexdigest()[:12],
                        algorithm=first.algorithm,
                        optimistic=first.optimistic,
                        T=first.T,
                        checkpoints=first.checkpoints,
                        dtype=first.dtype,
                        run_ids=ids,
                        games=tuple(r.game for r in chunk),
                        etas=tuple(r.eta for r in chunk),
                        reference=first.reference,
                        concept=first.concept,
                        exact=first.exact,
                        last_iterate=first.last_iterate,
                        reference_source=first.reference_source,
                        algorithm_sha256=first.algorithm_sha256,
                    )
                )
        tasks.sort(key=lambda t: -len(t))  # stable: grid order among equal sizes
        return tasks


def _random_label(spec, seed: int | None) -> str:
    acts = "x".join(map(str, spec.action_tuple))
    text = f"random(N={spec.players},H={spec.horizon},S={spec.states},A={acts}"
    if spec.reward_distribution != "uniform":
        text += f",{spec.reward_distribution}"
    if spec.transition_concentration != 1.0:
        text += f",c={spec.transition_concentration:g}"
    if spec.initial_state != 0:
        text += f",s1={spec.initial_state}"
    if spec.successors is not None:
        text += f",K={spec.successors}"
    if spec.zero_sum:
        text += ",zero-sum"
    if seed is not None:
        text += f",seed={seed}"
    return text + ")"


def _build_games(config: SweepConfig, base_dir: Path, game_seeds: list[int], max_bytes: int | None, max_entries: int):
    """``[(entry index, label, kind, seed, seed index, game)]`` for every game of the grid."""
    built: list[tuple[int, str, str, int | None, int | None, MarkovGame]] = []
    for index, entry in enumerate(config.games):
        where = f"games[{index}]"
        if entry.builtin is not None:
            game = get_builtin(entry.builtin)
            built.append((index, entry.label or entry.builtin, "builtin", None, None, game))
        elif entry.file is not None:
            path = Path(entry.file)
            if not path.is_absolute():
                path = base_dir / path
            if not path.exists():
                raise SweepConfigError(f"{where}: {entry.file!r} is neither a built-in game nor an existing game file")
            try:
                game = load_game(path, max_bytes=max_bytes, max_entries=max_entries)
            except Exception as err:  # GameFileError and friends: name the entry
                raise SweepConfigError(f"{where}: {err}") from None
            built.append((index, entry.label or entry.file, "file", None, None, game))
        else:
            spec = entry.random
            if spec is None:  # unreachable: GameSpec is validated to give exactly one of the three
                raise SweepConfigError(f"{where}: give exactly one of builtin, file, random")
            seeds = [(spec.seed, None)] if spec.seed is not None else [(s, k) for k, s in enumerate(game_seeds)]
            for seed, k in seeds:
                try:
                    game = random_game(
                        spec.players,
                        spec.horizon,
                        spec.states,
                        spec.action_tuple,
                        seed_or_rng=seed,
                        reward_distribution=spec.reward_distribution,
                        transition_concentration=spec.transition_concentration,
                        initial_state=spec.initial_state,
                        num_successors=spec.successors,
                        max_entries=max_entries,
                        zero_sum=spec.zero_sum,
                    )
                except Exception as err:
                    raise SweepConfigError(f"{where}.random: {err}") from None
                label = entry.label or _random_label(spec, spec.seed)
                built.append((index, label, "random", seed, k, game))
    # Different entries must not share a label (results are grouped by it).
    owner: dict[str, int] = {}
    out = []
    for index, label, kind, game_seed, k, game in built:
        if owner.setdefault(label, index) != index:
            label = f"{label}#{index}"
        out.append((index, label, kind, game_seed, k, game))
    return out


def grid_size(config: SweepConfig) -> tuple[int, str]:
    """The number of runs a configuration asks for (before identical runs are merged), and how it
    is made up, computed from the configuration alone: nothing is expanded."""
    games = sum(config.seeds if g.random is not None and g.random.seed is None else 1 for g in config.games)
    per_game = sum(len(a.optimistic or config.optimistic) * len(a.etas or config.etas) for a in config.algorithms)
    seeded = any(g.random is not None and g.random.seed is None for g in config.games)
    made_of = f"{games} games" + (f", seeds = {config.seeds} per random entry," if seeded else "")
    settings = "setting" if per_game == 1 else "settings"
    return games * per_game, f"{made_of} x {per_game} {settings} of algorithm, optimism and learning rate"


def check_grid_size(config: SweepConfig, max_runs: int = DEFAULT_MAX_RUNS, max_entries: int = MAX_GAME_ENTRIES) -> None:
    """Refuse, before anything is expanded or allocated, a grid of more than ``max_runs`` runs, and
    random games that could not all be held in memory together.

    Raises
    ------
    SweepConfigError
        Naming the counts (the caller prefixes the configuration file).
    """
    runs, made_of = grid_size(config)
    if runs > max_runs:
        raise SweepConfigError(f"the grid has {runs} runs ({made_of}), more than max_runs = {max_runs} (raise max_runs to allow)")
    if config.seeds > max_runs:  # the manifest lists every seed, used or not
        raise SweepConfigError(f"seeds: {config.seeds} is more than max_runs = {max_runs} (raise max_runs to allow)")
    total, entries = 0, []
    for index, entry in enumerate(config.games):
        spec = entry.random
        if spec is None:
            continue
        joint = math.prod(spec.action_tuple)
        rewards = spec.horizon * spec.players * spec.states * joint
        kernel = spec.horizon * spec.states * joint * (spec.states if spec.successors is None else spec.successors)
        if max(rewards, kernel) > max_entries:
            continue  # each such game is refused when it is built, with its sizes named
        kernel *= 1 if spec.successors is None else 2  # successors and probabilities
        count = config.seeds if spec.seed is None else 1
        total += 8 * count * (rewards + kernel)
        entries.append(f"games[{index}]")
    memory = physical_memory()
    if memory and total > memory:
        raise SweepConfigError(
            f"{', '.join(entries)}: the grid's random games take {format_bytes(total)} together (all are kept while "
            f"the sweep runs), more than this machine's {format_bytes(memory)}; use fewer seeds or smaller games"
        )


def check_batch_memory(plan: SweepPlan, concurrent: int) -> None:
    """Refuse a ``T`` whose batches cannot run side by side in this machine's memory.

    A batch's memory grows with ``T`` (the engine keeps per-iteration arrays, such as the smooth
    algorithms' weights); it is estimated as ``markovgames run`` estimates a run of ``T``
    iterations (values and both certified bounds per prefix, and a copy: ``2 T 3 N`` numbers),
    which is above what a batch takes, for ``concurrent`` batches at once (the local workers).
    """
    memory = physical_memory()
    if not memory or not plan.runs:
        return
    T = plan.config.T
    itemsize = np.dtype(plan.config.dtype).itemsize
    players = max(r.game.num_players for r in plan.runs)
    concurrent = max(1, min(concurrent, len(plan.batches())))
    per_batch = 2 * T * 3 * players * itemsize
    if per_batch * concurrent > memory:
        at_once = f", and {concurrent} run at once ({format_bytes(per_batch * concurrent)})" if concurrent > 1 else ""
        raise SweepConfigError(
            f"T: a batch of {T} iterations takes about {format_bytes(per_batch)}{at_once}: more than this "
            f"machine's {format_bytes(memory)}; choose a smaller T" + (" or fewer workers" if concurrent > 1 else "")
        )


def plan_sweep(
    config: SweepConfig,
    base_dir: str | Path = ".",
    *,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> SweepPlan:
    """Expand a configuration into its runs (games are built here; files relative to ``base_dir``;
    ``max_bytes`` and ``max_entries`` bound the games as in [`load_game`][markovgames.games.load_game],
    ``max_runs`` the grid as in `check_grid_size`, which runs first)."""
    check_grid_size(config, max_runs, max_entries)
    base_dir = Path(base_dir)
    checkpoints = tuple(resolved_checkpoints(config))
    game_seeds = derive_game_seeds(config.base_seed, config.seeds)
    games = _build_games(config, base_dir, game_seeds, max_bytes, max_entries)
    runs: list[PlannedRun] = []
    seen: set[str] = set()
    hashes: dict[int, str] = {}
    game_rows = []
    for index, label, kind, seed, k, game in games:
        content = hashes.setdefault(id(game), game_content_hash(game))
        game_rows.append(
            {
                "label": label,
                "kind": kind,
                "entry": index,
                "seed": seed,
                "seed_index": k,
                "shape": {"N": game.num_players, "H": game.horizon, "S": game.num_states, "A": list(game.num_actions)},
                "sha256": content,
            }
        )
        game_spec: dict[str, Any] = {"kind": kind, "sha256": content}
        if kind == "builtin":
            game_spec["name"] = config.games[index].builtin
        elif kind == "random":
            r = config.games[index].random
            game_spec.update(
                players=r.players,
                horizon=r.horizon,
                states=r.states,
                actions=list(r.action_tuple),
                seed=seed,
                reward_distribution=r.reward_distribution,
                transition_concentration=r.transition_concentration,
                initial_state=r.initial_state,
            )
            if r.zero_sum:  # only when set, so that the ids of earlier sweeps' runs stay the same
                game_spec["zero_sum"] = True
        for alg_index, alg in enumerate(config.algorithms):
            # A user's file is taken from the configuration's directory; workers get its absolute path.
            reference = absolute_reference(alg.name, base_dir)
            try:
                spec_alg = get_algorithm(reference)
                # A user's learner, checked with this game's shapes before any worker starts (once
                # per learner, shape and dtype): its broken protocol is the configuration's error,
                # not a failure of every run.
                check_learner(spec_alg.learner, game.shape_key, config.dtype)
            except ValueError as err:
                raise SweepConfigError(f"algorithms[{alg_index}]: {err}") from None
            digest = spec_alg.source_sha256
            # The bytes just hashed (None for a module or a built-in): the workers run them.
            source = None if digest is None else loaded_file_source(digest)
            for optimistic in alg.optimistic or config.optimistic:
                for eta in alg.etas or config.etas:
                    spec = {
                        "format": RUN_FILE_FORMAT,
                        "game": game_spec,
                        "algorithm": alg.name,
                        "optimistic": bool(optimistic),
                        "eta": eta if eta == "theory" else float(eta),
                        "T": config.T,
                        "checkpoints": list(checkpoints),
                        "dtype": config.dtype,
                    }
                    if spec_alg.source_sha256 is not None:
                        # A user's learner: its file's content is part of the run's identity.
                        spec["algorithm_sha256"] = spec_alg.source_sha256
                    if config.exact:  # only when asked, so that the ids of earlier sweeps' runs stay the same
                        spec["exact"] = True
                    if config.last_iterate:  # likewise
                        spec["last_iterate"] = True
                    rid = run_id_of(spec)
                    if rid in seen:  # the same run listed twice: run it once
                        continue
                    seen.add(rid)
                    scale, per_stage = resolve_learning_rate(eta, spec_alg, game)
                    runs.append(
                        PlannedRun(
                            run_id=rid,
                            spec=spec,
                            game=game,
                            game_label=label,
                            game_kind=kind,
                            game_index=index,
                            game_seed=seed,
                            seed_index=k,
                            algorithm=alg.name,
                            optimistic=bool(optimistic),
                            eta=eta,
                            eta_value=None if per_stage else float(scale),
                            T=config.T,
                            checkpoints=checkpoints,
                            dtype=config.dtype,
                            reference=reference,
                            value_update=spec_alg.value_update.name,
                            concept=spec_alg.concept,
                            exact=config.exact,
                            last_iterate=config.last_iterate,
                            reference_source=source,
                            algorithm_sha256=digest,
                        )
                    )
    return SweepPlan(
        config=config, runs=tuple(runs), checkpoints=checkpoints, game_seeds=tuple(game_seeds), games=tuple(game_rows)
    )


# ---------------------------------------------------------------------------------------
# One task
# ---------------------------------------------------------------------------------------
def execute_batch(task: BatchTask) -> BatchOutput:
    """Run one batch (in a worker process, a Ray worker, or inline): one ``run_batch`` call.

    A user's file is compiled from the bytes the driver hashed (``task.reference_source``); a
    module is imported here, and refused if its file's SHA-256 is no longer the one recorded.
    """
    algorithm = get_algorithm(task.reference, file_source=task.reference_source)
    if algorithm.source_sha256 != task.algorithm_sha256:
        raise SweepError(
            f"{task.algorithm}: its code changed after the sweep read it (SHA-256 {task.algorithm_sha256} then, "
            f"{algorithm.source_sha256} now); run the sweep again to run the new code"
        )
    result = run_batch(
        list(task.games),
        algorithm,
        T=task.T,
        etas=list(task.etas),
        optimistic=task.optimistic,
        record_trajectory=task.exact,  # exact gaps need each run's trajectory
        dtype=task.dtype,
        checkpoints=list(task.checkpoints),
        last_iterate=task.last_iterate,
    )
    exact = None
    if task.exact:
        exact = tuple(exact_checkpoint_gaps(result.run(b), task.checkpoints) for b in range(len(task)))
    return BatchOutput(
        batch_id=task.batch_id,
        run_ids=task.run_ids,
        prefixes=np.asarray(result.prefixes),
        value=np.asarray(result.value),
        certified_ce_bound=np.asarray(result.certified_ce_bound),
        certified_cce_bound=np.asarray(result.certified_cce_bound),
        wall_time_s=float(result.wall_time_s),
        compile_time_s=float(result.compile_time_s),
        host=socket.gethostname(),
        pid=os.getpid(),
        exact=exact,
        last_iterate=None
        if result.last_iterate_value is None or result.last_iterate_best_response is None
        else np.stack([result.last_iterate_value, result.last_iterate_best_response], axis=-2),
    )


# ---------------------------------------------------------------------------------------
# Progress and report
# ---------------------------------------------------------------------------------------
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
# Files
# ---------------------------------------------------------------------------------------
def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }


def _run_document(run: PlannedRun, output: BatchOutput, b: int, attempt: int, batch_size: int) -> dict[str, Any]:
    records = []
    for k, T_prime in enumerate(output.prefixes):
        value = output.value[b, k]
        ce = output.certified_ce_bound[b, k]
        cce = output.certified_cce_bound[b, k]
        records.append(
            {
                "checkpoint": int(T_prime),
                "value": [float(x) for x in value],
                "certified_ce_bound": [float(x) for x in ce],
                "certified_cce_bound": [float(x) for x in cce],
                "certified_ce_gap": float(np.max(ce - value)),
                "certified_cce_gap": float(np.max(cce - value)),
                **({} if output.exact is None else output.exact[b][int(T_prime)]),
                **({} if output.last_iterate is None else last_iterate_fields(*output.last_iterate[b, k])),
            }
        )
    return {
        "format": RUN_FILE_FORMAT,
        "run_id": run.run_id,
        "spec": run.spec,
        "game": run.game_label,
        "game_kind": run.game_kind,
        "game_seed": run.game_seed,
        "seed_index": run.seed_index,
        "shape": {"N": run.game.num_players, "H": run.game.horizon, "S": run.game.num_states, "A": list(run.game.num_actions)},
        "algorithm": run.algorithm,
        "concept": run.concept,
        "optimistic": run.optimistic,
        "eta": run.eta,
        "eta_value": run.eta_value,
        "T": run.T,
        "dtype": run.dtype,
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
        game = run.game
        shape = {"N": game.num_players, "H": game.horizon, "S": game.num_states, "A": list(game.num_actions)}
        planned = {"spec": json.loads(_canonical_json(run.spec)), "shape": shape}
    return read_run_file(path, run_id, planned)


def _eta_text(eta: float | str) -> str:
    return eta if isinstance(eta, str) else repr(float(eta))


def _result_rows(doc: dict[str, Any], run: PlannedRun | None) -> list[dict[str, Any]]:
    concept = doc["concept"]
    shape = doc["shape"]
    rows = []
    for rec in doc["records"]:
        Tp = rec["checkpoint"]
        ce, cce = rec["certified_ce_gap"], rec["certified_cce_gap"]
        gap = ce if concept == "ce" else cce
        rows.append(
            {
                "run_id": doc["run_id"],
                "game": run.game_label if run is not None else doc["game"],
                "game_kind": doc["game_kind"],
                "game_seed": doc["game_seed"],
                "seed_index": doc["seed_index"],
                "N": shape["N"],
                "H": shape["H"],
                "S": shape["S"],
                "A": "x".join(map(str, shape["A"])),
                "algorithm": doc["algorithm"],
                "concept": concept,
                "optimistic": doc["optimistic"],
                "eta": _eta_text(doc["eta"]),
                "eta_value": doc["eta_value"],
                "T": doc["T"],
                "checkpoint": Tp,
                "value": rec["value"],
                "certified_ce_bound": rec["certified_ce_bound"],
                "certified_cce_bound": rec["certified_cce_bound"],
                "certified_ce_gap": ce,
                "certified_cce_gap": cce,
                "ce_gap_times_T": ce * Tp,
                "cce_gap_times_T": cce * Tp,
                "gap": gap,
                "gap_times_T": gap * Tp,
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
            }
        )
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
    from ._rundir import versions

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


def is_sweep_directory(out: Path) -> bool:
    """Whether ``out`` holds a sweep: its marker file says so (``.markovgames``, kind ``sweep``), or,
    for a directory written before sweeps were marked, its ``manifest.json`` is a sweep's manifest.

    Nothing else counts: a folder with a ``runs/`` subfolder, or another program's
    ``manifest.json``, is not a sweep, and a sweep never writes into it.
    """
    if marker_kind(out) == "sweep":
        return True
    manifest = out / MANIFEST_FILE
    if manifest.is_symlink():
        return False
    if not manifest.is_file():
        return False
    try:
        doc = read_json(manifest, MAX_JSON_BYTES)
    except JsonFileError:
        # A manifest.json that cannot be read (damaged, nested too deep): refused as a sweep's
        # manifest, naming the file, rather than passed over as another program's.
        read_manifest(manifest)
        return False
    except OSError:
        return False
    return isinstance(doc, dict) and doc.get("format") == MANIFEST_FORMAT


def _check_out(out: Path) -> None:
    """Refuse a sweep directory that is not a directory or holds something else (writes nothing)."""
    if out.is_symlink():
        raise SweepDirectoryError.for_argument(
            "out", "is a symbolic link; a sweep writes only into a directory named as itself, so name it", str(out)
        )
    if out.exists() and not out.is_dir():
        raise SweepDirectoryError.for_argument("out", "exists and is not a directory", str(out))
    if out.is_dir() and any(out.iterdir()) and not is_sweep_directory(out):
        raise SweepDirectoryError.for_argument(
            "out",
            f"not empty and not a sweep directory (no sweep's {MARKER_FILE} marker or {MANIFEST_FILE}); choose another directory",
            str(out),
        )


def _prepare_out(out: Path) -> list[Path]:
    """Make the sweep directory ready under its lock; return what this call created (deepest last)."""
    _check_out(out)  # again, under the lock
    created = [p for p in (*reversed(Path(os.path.abspath(out)).parents), out, out / RUNS_DIR) if not os.path.lexists(p)]
    (out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    # Temporary files of writes that an interruption cut short.
    for stale in (out / RUNS_DIR).glob(".*.tmp"):
        try:
            stale.unlink()
        except OSError:
            pass
    return created


#: Write errors that mean the disk (or the quota) is full or failing: the sweep cannot go on.
_DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _remove_created(out: Path, created: list[Path], err: OSError) -> SweepDirectoryError:
    """After a write failed for lack of space: remove the sweep directory, or its ``runs/``, if
    this call created it, and return the error that says so, naming the file."""
    import shutil

    where = err.filename or out
    removed = ""
    target = out if out in created else out / RUNS_DIR if out / RUNS_DIR in created else None
    if target is not None:
        shutil.rmtree(target, ignore_errors=True)
        removed = f"; removed {target}, which this sweep created"
    return SweepDirectoryError.for_argument(
        "out",
        f"cannot write {where}: {err.strerror or err}{removed}; free some space and run the sweep again",
        str(out),
    )


def _previous_manifest(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The sessions and batches recorded by earlier sessions of a sweep directory (none without a
    manifest); a damaged manifest is refused (`read_manifest`), not replaced."""
    previous = read_manifest(out / MANIFEST_FILE)
    if previous is None:
        return [], []
    return list(previous["sessions"]), list(previous["batches"])


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
            atomic_write_text(self.runs_dir / f"{rid}.json", json.dumps(doc, allow_nan=False) + "\n")
        self.done += len(task)
        self.computed += len(task)
        self.batches += 1
        self.batch_log.append(
            {
                "batch_id": task.batch_id,
                "algorithm": task.algorithm,
                "optimistic": task.optimistic,
                "shape": {"N": task.shape_key[0], "H": task.shape_key[1], "S": task.shape_key[2], "A": list(task.shape_key[3])},
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
        final_gaps = np.max(
            (output.certified_ce_bound if concept == "ce" else output.certified_cce_bound)[:, -1] - output.value[:, -1], axis=-1
        )
        first = self.by_id[task.run_ids[0]]
        self.notify(
            {
                "algorithm": task.algorithm,
                "optimistic": task.optimistic,
                "game": first.game_label,
                "concept": concept,
                "T": int(output.prefixes[-1]),
                "median_gap": float(np.median(final_gaps)),
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
        text = json.dumps(self.manifest(status, finished_at), indent=2, allow_nan=False) + "\n"
        atomic_write_text(self.out / MANIFEST_FILE, text)

    def manifest(self, status: str, finished_at: str | None) -> dict[str, Any]:
        from ._rundir import versions

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
