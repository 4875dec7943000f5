"""Planning a sweep: the runs of a configuration's grid, their ids, and their batches.

`plan_sweep` expands a validated configuration into its runs (`PlannedRun`), building every game
once; runs that share (algorithm, optimism, game shape, ``T``, checkpoints, dtype, update order,
step-size schedule, regret curves, feedback model) are grouped into batch tasks (`SweepPlan.batches`,
`BatchTask`): runs that differ only in the seed of their draws share one ``run_batch`` call (under
bandit feedback, one ``run_vlearning_batch`` call per game and learning rate). Before anything is expanded, `check_grid_size`
refuses a grid too large for the machine; `check_batch_memory` refuses a ``T`` whose batches
cannot run side by side.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..._resources import format_bytes, physical_memory
from ...dynamics import (
    Algorithm,
    LearningRate,
    StepSchedule,
    absolute_reference,
    check_learner,
    get_algorithm,
    get_step_schedule,
    loaded_file_source,
    resolve_learning_rate,
)
from ...dynamics._loop import loop_shape
from ...games import (
    MAX_GAME_ENTRIES,
    DiscountedMarkovGame,
    MarkovGame,
)
from ._bandit import (
    PAPER_RATE,
    VLEARNING_FEEDBACK,
    bandit_run_bytes,
    check_bandit_size,
    is_vlearning,
)
from ._config import AlgorithmSpec, SweepConfig, SweepConfigError, resolved_checkpoints
from ._discounted import check_discounted_cell, game_shape
from ._files import RUN_FILE_FORMAT, run_id_of
from ._files import canonical_json as _canonical_json
from ._games import build_games
from ._values import draws_anything, episodes_per_round, is_bandit, schedule_rates_fault

__all__ = [
    "PlannedRun",
    "BatchTask",
    "SweepPlan",
    "plan_sweep",
    "grid_size",
    "check_grid_size",
    "check_batch_memory",
    "DEFAULT_MAX_RUNS",
    "derive_game_seeds",
    "derive_feedback_seeds",
    "game_content_hash",
]

#: The most runs a grid may have unless the caller allows more (``--max-runs``): the plan keeps
#: every run (about 2 KiB each) and its game in memory, and the manifest lists them all.
DEFAULT_MAX_RUNS = 100_000
#: Unless ``max_batch_size`` says otherwise, a batch is cut so that its per-checkpoint results
#: (value and both bounds, per run, checkpoint and player) take at most this many bytes.
BATCH_RESULT_BYTES = 256 * 2**20


# ---------------------------------------------------------------------------------------
# Identities
# ---------------------------------------------------------------------------------------
def game_content_hash(game: MarkovGame | DiscountedMarkovGame) -> str:
    """SHA-256 of what determines a game's dynamics: sizes, initial state, rewards, transitions
    (a discounted game: also the discount and the initial distribution)."""
    h = hashlib.sha256()
    if isinstance(game, DiscountedMarkovGame):
        sizes = {"discounted": [game.num_players, game.num_states, list(game.num_actions)], "gamma": game.discount.hex()}
        h.update(_canonical_json(sizes).encode())
        h.update(np.ascontiguousarray(game.initial_distribution, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(game.rewards, dtype="<f8").tobytes())
        h.update(game.transition_bytes())
        return h.hexdigest()
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


def derive_feedback_seeds(base_seed: int, count: int) -> list[int]:
    """The seeds of the runs' random draws under a sampled feedback model, one per sweep seed ``k``:
    the first child of game seed ``k``'s sequence, ``SeedSequence(base_seed).spawn(count)[k].spawn(1)[0]``
    (spawn key ``(k, 0)``), as one 53-bit int: ``int(....generate_state(1, numpy.uint64)[0]) >> 11``.

    A stream of its own (not the game's seed), spawned from ``base_seed`` like the games' (so a
    sweep with another ``base_seed`` draws anew); seed ``k`` does not depend on ``count``, so a
    sweep grown to more seeds keeps its runs. 53 bits: the results' ``feedback_seed`` column, null
    for the runs that draw nothing, reads into a float64 column (pandas), which holds it exactly.
    The run is ``run(..., feedback=..., seed=feedback_seed)`` (``markovgames run --feedback ... --seed FEEDBACK_SEED``).
    """
    return [
        int(np.random.SeedSequence(base_seed, spawn_key=(k, 0)).generate_state(1, dtype=np.uint64)[0]) >> 11 for k in range(count)
    ]


# ---------------------------------------------------------------------------------------
# Plan
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PlannedRun:
    """One run of the grid."""

    run_id: str
    spec: dict[str, Any]
    game: MarkovGame | DiscountedMarkovGame
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
    weighted_average: bool = False
    #: A user's file: the bytes the driver read and hashed, which the workers compile (see `BatchTask`).
    reference_source: bytes | None = None
    #: The SHA-256 of a user's file or module (the spec's ``algorithm_sha256``); None for built-ins.
    algorithm_sha256: str | None = None
    #: The update order, and the step-size schedule as the configuration names it.
    order: str = "simultaneous"
    eta_schedule: str = "constant"
    #: The schedule as a worker resolves it, and a user's file's bytes and SHA-256 (as for the algorithm).
    schedule_reference: str = "constant"
    schedule_source: bytes | None = None
    schedule_sha256: str | None = None
    #: Whether the run carries its players' regret curves.
    regret: bool = False
    #: The feedback model (canonical name), and the seed of the run's draws where it draws any.
    feedback: str = "full"
    feedback_seed: int | None = None
    #: Bandit feedback: the bonus constant and implicit exploration the configuration gives (None:
    #: the library's defaults, `bandit_parameters`).
    bonus: float | None = None
    ix: float | None = None
    bandit_rate: str | None = None

    @property
    def bandit(self) -> bool:
        """Whether the run is on bandit feedback (``run_vlearning_batch``): V-learning, or ``bandit:M``."""
        return is_bandit(self.feedback)

    @property
    def discount(self) -> float | None:
        """The discount of the run's game (``None``: a finite-horizon game)."""
        return self.game.discount if isinstance(self.game, DiscountedMarkovGame) else None

    @property
    def batch_key(self) -> tuple:
        # A batch of the stage-based update shares its per-stage rates: "theory" runs apart.
        stage_theory = self.value_update == "stage" and isinstance(self.eta, str)
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
            self.weighted_average,
            self.order,
            self.schedule_reference,
            self.schedule_sha256,
            self.regret,
            # Not the seed: runs that differ in their draws' seed only run side by side.
            self.feedback,
            self.bonus,
            self.ix,
            self.bandit_rate,
            # One batch has one kernel form, and a discounted batch one discount (its step sizes'
            # order k = 1/(1-gamma) is the batch's): run_batch refuses a mix of either.
            self.game.is_sparse,
            self.discount,
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
    games: tuple[MarkovGame | DiscountedMarkovGame, ...]  # all of one kind (a plan's games are)
    etas: tuple[LearningRate, ...]
    reference: str  # what the worker resolves
    concept: str
    exact: bool = False
    last_iterate: bool = False
    weighted_average: bool = False
    #: A user's file: its content as the driver read and hashed it. The worker compiles these
    #: bytes, not the file (which may have changed since), so that the results stored under the
    #: recorded SHA-256 are those of that code.
    reference_source: bytes | None = None
    #: The SHA-256 the runs' ids record for a user's file or module; the worker refuses to run
    #: other code (a module, which it imports itself, that changed since the driver's import).
    algorithm_sha256: str | None = None
    #: The update order, the step-size schedule (what the worker resolves, with a user's file's
    #: bytes and SHA-256, as for the algorithm) and whether the runs carry their regret curves.
    order: str = "simultaneous"
    schedule_reference: str = "constant"
    schedule_source: bytes | None = None
    schedule_sha256: str | None = None
    regret: bool = False
    #: The schedule as the configuration names it (what the dry run shows).
    eta_schedule: str = "constant"
    #: The feedback model, and per run the seed of its draws (``None`` where the model draws none).
    feedback: str = "full"
    feedback_seeds: tuple[int, ...] | None = None
    #: Bandit feedback: the bonus constant and implicit exploration as configured (None: the defaults).
    bonus: float | None = None
    ix: float | None = None
    bandit_rate: str | None = None

    @property
    def bandit(self) -> bool:
        """Whether the batch runs on bandit feedback: one ``run_vlearning_batch`` call per game and
        learning rate, over the draws' seeds (`markovgames.experiments._sweep_execute`)."""
        return is_bandit(self.feedback)

    def __len__(self) -> int:
        return len(self.run_ids)

    @property
    def shape_key(self):
        return self.games[0].shape_key

    @property
    def discounted(self) -> bool:
        """Whether the batch's games are discounted (a discounted value update's runs)."""
        return isinstance(self.games[0], DiscountedMarkovGame)

    @property
    def shape(self) -> dict[str, Any]:
        """The games' shape as the manifest records it: ``N, H, S, A`` (a discounted game: ``N, S,
        A`` and its ``discount``, which a batch shares)."""
        return game_shape(self.games[0], with_discount=True)


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

    def output_bytes(self, run_ids: Sequence[str] | None = None) -> int:
        """About how many bytes the sweep directory will hold for its runs (or those of ``run_ids``),
        as measured on sweeps of the paper's game: 24 KiB for ``results.parquet``'s (about 66 columns) and the
        manifest's own overhead, 2 KiB per run (its file and manifest entry) and per checkpoint of
        a run ``200 + 105 N`` bytes (its record in the run's file and its row of ``results.parquet``).
        Game files are not counted."""
        wanted = None if run_ids is None else set(run_ids)
        runs = [r for r in self.runs if wanted is None or r.run_id in wanted]
        # A bandit run's records and rows also hold its episodes, bonus and ix (its policy is not written).
        rows = sum(len(r.checkpoints) * (200 + 105 * r.game.num_players + (60 if r.bandit else 0)) for r in runs)
        return 24 * 1024 + 2048 * len(runs) + rows

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
                per_run = (5 if members[0].regret else 3) * len(self.checkpoints) * members[0].game.num_players * 8
                per_run += _bandit_run_memory(members[0])
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
                        weighted_average=first.weighted_average,
                        reference_source=first.reference_source,
                        algorithm_sha256=first.algorithm_sha256,
                        order=first.order,
                        schedule_reference=first.schedule_reference,
                        schedule_source=first.schedule_source,
                        schedule_sha256=first.schedule_sha256,
                        regret=first.regret,
                        eta_schedule=first.eta_schedule,
                        feedback=first.feedback,
                        feedback_seeds=None if first.feedback_seed is None else tuple(cast(int, r.feedback_seed) for r in chunk),
                        bonus=first.bonus,
                        ix=first.ix,
                        bandit_rate=first.bandit_rate,
                    )
                )
        tasks.sort(key=lambda t: -len(t))  # stable: grid order among equal sizes
        return tasks


def _bandit_run_memory(run: PlannedRun) -> int:
    """What a bandit run holds while its batch runs (0 for the others): its record, twice (the
    chunks and their concatenation), and its output policy (`bandit_run_bytes`)."""
    if not run.bandit:
        return 0
    record, policy, _ = bandit_run_bytes(_finite(run), run.T, episodes_per_round(run.feedback))
    return 2 * record + policy


def _finite(run: PlannedRun) -> MarkovGame:
    """A bandit run's game: finite-horizon (a discounted sweep refuses bandit feedback when it is planned)."""
    if not isinstance(run.game, MarkovGame):  # unreachable: `check_discounted_cell`
        raise SweepConfigError(f"games[{run.game_index}]: bandit feedback needs a finite-horizon game")
    return run.game


def grid_size(config: SweepConfig) -> tuple[int, str]:
    """The number of runs a configuration asks for (before identical runs are merged), and how it
    is made up, computed from the configuration alone: nothing is expanded.

    A random game without its own seed is drawn once per seed; under a feedback model that draws
    samples (``sampled:K``, ``bandit:M``; V-learning's ``bandit:1``) every other game (built-in,
    file, fixed seed) is run once per seed too, each time with other draws (a random game's seed
    ``k`` draws with the draws' seed ``k``)."""
    axes = {id(a): algorithm_axes(config, a) for a in config.algorithms}
    settings_of = {key: math.prod(len(axis) for axis in value[:4]) for key, value in axes.items()}
    runs = 0
    repeated: set[str] = set()  # the kinds of feedback that run a fixed game once per seed
    for g in config.games:
        per_seed = g.random is not None and g.random.seed is None
        for a in config.algorithms:
            for feedback in axes[id(a)][4]:
                again = not per_seed and draws_anything(feedback)
                if again and config.seeds > 1:
                    repeated.add(feedback.partition(":")[0])
                runs += settings_of[id(a)] * config.seeds if per_seed or again else settings_of[id(a)]
    games = sum(config.seeds if g.random is not None and g.random.seed is None else 1 for g in config.games)
    per_game = sum(settings_of[id(a)] * len(axes[id(a)][4]) for a in config.algorithms)
    seeded = any(g.random is not None and g.random.seed is None for g in config.games)
    made_of = f"{games} games" + (f", seeds = {config.seeds} per random entry," if seeded else "")
    settings = "setting" if per_game == 1 else "settings"
    varied = any(
        len(a.orders or config.orders) > 1 or len(a.eta_schedules or config.eta_schedules) > 1 for a in config.algorithms
    )
    what = (
        "algorithm, optimism, learning rate, order and step-size schedule" if varied else "algorithm, optimism and learning rate"
    )
    if any(len(a.feedbacks or config.feedbacks) > 1 for a in config.algorithms):
        what = what.replace(" and ", ", ") + " and feedback"
    text = f"{made_of} x {per_game} {settings} of {what}"
    if repeated:
        text += f", {' and '.join(sorted(repeated, reverse=True))} feedback on the other games once per seed ({config.seeds})"
    return runs, text


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
        layers = 1 if spec.horizon is None else spec.horizon  # a discounted game: one stationary layer
        rewards = layers * spec.players * spec.states * joint
        kernel = layers * spec.states * joint * (spec.states if spec.successors is None else spec.successors)
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
    batches = plan.batches()
    concurrent = max(1, min(concurrent, len(batches)))
    # Values and both bounds per prefix (and both regrets where a run carries them), and a copy.
    per_batch = 2 * T * (5 if any(r.regret for r in plan.runs) else 3) * players * itemsize
    _check_bandit_memory(plan, batches, concurrent, memory)
    if per_batch * concurrent > memory:
        at_once = f", and {concurrent} run at once ({format_bytes(per_batch * concurrent)})" if concurrent > 1 else ""
        raise SweepConfigError(
            f"T: a batch of {T} iterations takes about {format_bytes(per_batch)}{at_once}: more than this "
            f"machine's {format_bytes(memory)}; choose a smaller T" + (" or fewer workers" if concurrent > 1 else "")
        )


def _check_bandit_memory(plan: SweepPlan, batches: list[BatchTask], concurrent: int, memory: int) -> None:
    """Refuse bandit batches whose runs' records and output policies (`bandit_run_bytes`: held
    together while a batch runs, with one evaluation's arrays) cannot fit side by side."""
    by_id = {r.run_id: r for r in plan.runs}
    sizes = []
    for task in batches:
        if not task.bandit:
            continue
        runs = [by_id[rid] for rid in task.run_ids]
        evaluation = max(bandit_run_bytes(_finite(r), r.T, episodes_per_round(r.feedback))[2] for r in runs)
        sizes.append((sum(_bandit_run_memory(r) for r in runs) + evaluation, len(runs)))
    if not sizes:
        return
    sizes.sort(reverse=True)
    need = sum(size for size, _ in sizes[:concurrent])
    if need > memory:
        size, count = sizes[0]
        at_once = f", and {concurrent} run at once ({format_bytes(need)})" if concurrent > 1 else ""
        raise SweepConfigError(
            f"T: a batch of {count} bandit run{'s' if count > 1 else ''} of {plan.config.T} rounds takes about "
            f"{format_bytes(size)} (their records and output policies){at_once}: more than this machine's "
            f"{format_bytes(memory)}; choose a smaller T or max_batch_size" + (", or fewer workers" if concurrent > 1 else "")
        )


def _schedule(name: str, where: str, base_dir: Path, resolved: dict[str, StepSchedule]) -> StepSchedule:
    """The step-size schedule ``name`` of the configuration (a user's file from its directory);
    ``where``: its key, which an error names."""
    if name not in resolved:
        try:
            resolved[name] = get_step_schedule(name, base_dir)
        except ValueError as err:
            raise SweepConfigError(f"{where}: {err}") from None
    return resolved[name]


def _check_interplay(alg_index: int, alg, spec: Algorithm, order: str, optimistic: bool, feedback: str = "full") -> None:
    """Refuse a combination of the grid that the algorithm has no form of, naming the key."""
    where = f"algorithms[{alg_index}]"
    if spec.learner.learner().propose is None:
        return
    two_query = f"learner {spec.learner.name!r} makes two utility queries per iteration"
    if is_bandit(feedback):
        key = f"{where}.feedbacks" if alg.feedbacks else "feedbacks"
        raise SweepConfigError(f"{key}: {where}: {two_query}; under {feedback} each round's episodes answer one")
    if order == "alternating":
        key = f"{where}.orders" if alg.orders else "orders"
        raise SweepConfigError(f"{key}: {where}: {two_query}; alternating updates are not defined for it")
    if not optimistic:
        key = f"{where}.optimistic" if alg.optimistic else "optimistic"
        raise SweepConfigError(
            f"{key}: {where}: {two_query}: its prediction is its second query, so it has no non-optimistic form"
        )


def _spec_settings(
    config: SweepConfig,
    order: str,
    schedule_name: str,
    schedule: StepSchedule,
    regret: bool,
    feedback: str,
    draw_seed: int | None,
    bonus: float | None,
    ix: float | None,
    bandit_rate: str | None = None,
) -> dict[str, Any]:
    """The keys of a run's spec beyond the paper's settings, each only where it is set or differs
    from the default: so the ids of the runs of a configuration without them stay the same."""
    spec: dict[str, Any] = {}
    if config.exact:
        spec["exact"] = True
    if config.last_iterate:
        spec["last_iterate"] = True
    if config.weighted_average:
        spec["weighted_average"] = True
    if order != "simultaneous":
        spec["order"] = order
    if not schedule.is_constant:
        spec["eta_schedule"] = schedule_name
        if schedule.source_sha256 is not None:  # a user's schedule: its code is part of the run
            spec["eta_schedule_sha256"] = schedule.source_sha256
    if regret:
        spec["regret"] = True
    if feedback != "full":
        spec["feedback"] = feedback
    if draw_seed is not None:  # the seed of the draws: another seed is another run
        spec["feedback_seed"] = draw_seed
    for key, value in (("bonus", bonus), ("ix", ix), ("bandit_rate", bandit_rate)):
        if value is not None:  # bandit feedback's settings, where given
            spec[key] = value
    return spec


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
    feedback_seeds = derive_feedback_seeds(config.base_seed, config.seeds)
    games = build_games(config, base_dir, game_seeds, max_bytes, max_entries)
    resolved: dict[str, StepSchedule] = {}  # each schedule once (a user's file is loaded once)
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
                "shape": game_shape(game),
                **({"discount": game.discount} if isinstance(game, DiscountedMarkovGame) else {}),
                "sha256": content,
            }
        )
        game_spec: dict[str, Any] = {"kind": kind, "sha256": content}
        if isinstance(game, DiscountedMarkovGame):
            game_spec["discount"] = game.discount  # (its content hash has it too; this says it)
        if kind == "builtin":
            game_spec["name"] = config.games[index].builtin
        elif kind == "random":
            r = config.games[index].random
            game_spec.update(
                players=r.players,
                **({"horizon": r.horizon} if r.discount is None else {}),
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
            vlearning = is_vlearning(alg.name)  # V-learning: run_vlearning's own algorithms, no composition
            try:
                spec_alg = None if vlearning else get_algorithm(reference)
            except ValueError as err:
                raise SweepConfigError(f"algorithms[{alg_index}]: {err}") from None
            # A value update of the other kind of game, and on a discounted game what its runs
            # cannot take (exact gaps, 'theory' rates, bandit feedback), named by key and cell.
            check_discounted_cell(config, alg_index, alg, spec_alg, index, game)
            try:
                # A user's learner, checked with this game's shapes before any worker starts (once
                # per learner, shape and dtype): its broken protocol is the configuration's error,
                # not a failure of every run.
                if spec_alg is not None:
                    check_learner(spec_alg.learner, loop_shape(game), config.dtype)
            except ValueError as err:
                raise SweepConfigError(f"algorithms[{alg_index}]: {err}") from None
            digest = None if spec_alg is None else spec_alg.source_sha256
            # The bytes just hashed (None for a module or a built-in): the workers run them.
            source = None if digest is None else loaded_file_source(digest)
            regret = config.regret if alg.regret is None else alg.regret
            key = f"algorithms[{alg_index}].eta_schedules" if alg.eta_schedules else "eta_schedules"
            optimisms, etas, orders, schedule_names, feedback_models = algorithm_axes(config, alg)
            schedules = [(name, _schedule(name, f"{key}[{j}]", base_dir, resolved)) for j, name in enumerate(schedule_names)]
            # A feedback model that draws samples runs a game once per seed (a random game of the
            # seeds: with its own seed's index), each run with the draws of that seed.
            feedbacks = [
                (feedback, repetition)
                for feedback in feedback_models
                for repetition in ((None,) if not draws_anything(feedback) else (k,) if k is not None else range(config.seeds))
            ]
            for feedback in {f for f in feedback_models if is_bandit(f)}:
                if not isinstance(game, MarkovGame):  # unreachable: refused by check_discounted_cell
                    raise SweepConfigError(f"games[{index}]: bandit feedback needs a finite-horizon game")
                try:  # a record or output policy beyond the library's limits: refused before any batch
                    check_bandit_size(game, config.T, episodes_per_round(feedback))
                except ValueError as err:
                    raise SweepConfigError(f"T: algorithms[{alg_index}] under {feedback} on games[{index}]: {err}") from None
            for optimistic, eta, order, (schedule_name, schedule), (feedback, repetition) in itertools.product(
                optimisms, etas, orders, schedules, feedbacks
            ):
                if spec_alg is not None:
                    _check_interplay(alg_index, alg, spec_alg, order, bool(optimistic), feedback)
                spec = {
                    "format": RUN_FILE_FORMAT,
                    "game": game_spec,
                    "algorithm": alg.name,
                    "optimistic": bool(optimistic),
                    "eta": eta if isinstance(eta, str) else float(eta),
                    "T": config.T,
                    "checkpoints": list(checkpoints),
                    "dtype": config.dtype,
                }
                if digest is not None:
                    # A user's learner: its file's content is part of the run's identity.
                    spec["algorithm_sha256"] = digest
                draw_seed = None if repetition is None else feedback_seeds[repetition]
                bonus, ix, rate = (alg.bonus, alg.ix, alg.bandit_rate) if is_bandit(feedback) else (None, None, None)
                spec.update(_spec_settings(config, order, schedule_name, schedule, regret, feedback, draw_seed, bonus, ix, rate))
                rid = run_id_of(spec)
                if rid in seen:  # the same run listed twice: run it once
                    continue
                seen.add(rid)
                # V-learning's rates are its papers' schedules: no single rate.
                scale, per_stage = (None, True) if spec_alg is None else resolve_learning_rate(eta, spec_alg, game)
                fault = None if spec_alg is None else schedule_rates_fault(schedule, scale, eta, game, index, config)
                if fault is not None:  # before any batch: a bad schedule is one line, not failed batches
                    raise SweepConfigError(f"{key}[{schedule_names.index(schedule_name)}]: {fault}")
                runs.append(
                    PlannedRun(
                        run_id=rid,
                        spec=spec,
                        game=game,
                        game_label=label,
                        game_kind=kind,
                        game_index=index,
                        game_seed=seed,
                        # The sweep seed's index: of a random game's seed, or of the draws' seed of a
                        # fixed game's run under sampled feedback.
                        seed_index=k if repetition is None else repetition,
                        algorithm=alg.name,
                        optimistic=bool(optimistic),
                        eta=eta,
                        eta_value=None if per_stage else float(cast(float, scale)),  # one rate: sweeps set no per-player rates
                        T=config.T,
                        checkpoints=checkpoints,
                        dtype=config.dtype,
                        reference=reference,
                        value_update="vlearning" if spec_alg is None else spec_alg.value_update.name,
                        concept=("ce" if alg.name == "ce-v" else "cce") if spec_alg is None else spec_alg.concept,
                        exact=config.exact,
                        last_iterate=config.last_iterate,
                        weighted_average=config.weighted_average,
                        reference_source=source,
                        algorithm_sha256=digest,
                        order=order,
                        eta_schedule="constant" if schedule.is_constant else schedule_name,
                        # A worker resolves a user's file by its absolute path (it runs the bytes read here).
                        schedule_reference="constant" if schedule.is_constant else absolute_reference(schedule_name, base_dir),
                        schedule_source=None if schedule.source_sha256 is None else loaded_file_source(schedule.source_sha256),
                        schedule_sha256=schedule.source_sha256,
                        regret=regret,
                        feedback=feedback,
                        feedback_seed=draw_seed,
                        bonus=bonus,
                        ix=ix,
                        bandit_rate=rate,
                    )
                )
    return SweepPlan(
        config=config, runs=tuple(runs), checkpoints=checkpoints, game_seeds=tuple(game_seeds), games=tuple(game_rows)
    )


def algorithm_axes(config: SweepConfig, alg: AlgorithmSpec) -> tuple[list[bool], list[Any], list[str], list[str], list[str]]:
    """The optimism, learning rates, orders, schedules and feedback models ``alg`` runs with: its
    table's, else the sweep's; V-learning's are its papers' (no optimism, the papers' rates, ``bandit:1``)."""
    orders = alg.orders or config.orders
    schedules = alg.eta_schedules or config.eta_schedules
    if is_vlearning(alg.name):
        return [False], [PAPER_RATE], orders, schedules, [VLEARNING_FEEDBACK]
    return alg.optimistic or config.optimistic, alg.etas or config.etas, orders, schedules, alg.feedbacks or config.feedbacks
