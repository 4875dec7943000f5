"""``markovgames vlearn``: learn from play (V-learning, or a composition on bandit feedback) and write
the output policy with exact and certified numbers.

``markovgames vlearn GAME --algorithm cce-v|ce-v|stage-v|LEARNER+UPDATE --episodes K
[--feedback bandit:M] [--eta X] [--bandit-rate decaying|constant] [--ix G] [--no-optimism] [--seed S] [--bonus C]
[--checkpoints 10,100] --out DIR`` runs `markovgames.dynamics.run_vlearning` (docs/vlearning.md)
and writes ``DIR/metrics.json`` (the configuration, the versions, the samples used, and at every
checkpoint ``K'`` the exact value and the certified CE/CCE bounds and gaps of the output policy
after ``K'`` episodes, ``K'/M`` rounds, from `markovgames.evaluation.prefix_curves`),
``DIR/policy.npz`` (the output policy) and the game (`markovgames.experiments.rundirs._vlearn`). ``markovgames evaluate DIR``
reads it. The directory is written as ``run`` writes its own: assembled beside ``DIR`` under its
lock, moved into place when complete, and a non-empty ``DIR`` replaced only with ``--overwrite``
and only if markovgames wrote it.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._outputs import check_apart, remove_created_parents
from .._text import markup_safe, printable
from ._commands import HELP
from ._defaults import BANDIT_RATES, VLEARNING_ALGORITHMS
from ._errors import CliError, check_output_directory
from ._games import add_game_limits, check_game_limits
from ._progress import iteration_progress
from ._run import LARGE_WRITE_BYTES, _input_files, parse_seed, parse_T

__all__ = ["add_vlearn_parser", "BanditRun", "execute"]


def add_vlearn_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "vlearn",
        help=HELP["vlearn"],
        description="Learn from play (the players see only their own rewards and the states visited: "
        "docs/vlearning.md): V-learning, or a LEARNER+UPDATE composition on bandit feedback; write the output "
        "policy, with its exact value and certified CE/CCE gaps after every checkpoint number of episodes; "
        "'markovgames evaluate DIR' computes the exact gaps.",
    )
    p.add_argument(
        "game", metavar="GAME", nargs="?", default=None, help="a built-in game name (see 'games list') or a .json/.npz file"
    )
    p.add_argument("--game", dest="game_option", default=None, metavar="GAME", help="the same as GAME (as 'run' names it)")
    p.add_argument(
        "--algorithm",
        required=True,
        help=f"{', '.join(VLEARNING_ALGORITHMS[:-1])} or {VLEARNING_ALGORITHMS[-1]} (CCE-V, CE-V or stage-based "
        "V-learning, with their papers' rates), or a composition LEARNER+UPDATE of a learner of one utility query "
        "(e.g. hedge+smooth, path/file.py:NAME+stage) on bandit feedback (docs/vlearning.md)",
    )
    p.add_argument(
        "--feedback",
        default="bandit:1",
        metavar="MODEL",
        help="bandit:M: rounds of M episodes of the current policies, the learners updated once per round "
        "(default bandit:1; --episodes a multiple of M)",
    )
    p.add_argument(
        "--eta",
        default=None,
        metavar="X",
        help="a composition's learning rate, in the game's units (a number > 0; default 0.2, the paper's)",
    )
    p.add_argument(
        "--bandit-rate",
        default=None,
        choices=BANDIT_RATES,
        help="a composition's learning rate at a state's c-th visiting round: 'decaying' (the default: "
        "min(eta, M / sqrt(c))) or 'constant' (eta)",
    )
    p.add_argument(
        "--ix",
        default=None,
        metavar="G",
        help="a composition's implicit exploration gamma of its loss estimates: 'decaying' (the default: "
        "gamma = (eta H / 2) / sqrt(c) at a state's c-th visiting round) or a constant number >= 0",
    )
    p.add_argument(
        "--no-optimism",
        action="store_true",
        help="a composition's non-optimistic baseline (prediction 0; V-learning's bandits are not optimistic)",
    )
    p.add_argument("--episodes", required=True, metavar="K", help="number of episodes (1e4 style allowed)")
    p.add_argument(
        "--seed",
        default=None,
        metavar="N",
        help="the seed of the run's random draws (a non-negative integer; default 0): the same seed gives the same run",
    )
    p.add_argument(
        "--bonus",
        default=None,
        metavar="C",
        help="the constant c of the optimism bonus (a number >= 0; default 1 for V-learning, 0 for a composition; "
        "0 switches it off)",
    )
    p.add_argument(
        "--checkpoints",
        default=None,
        help="comma-separated numbers of episodes K' to report in metrics.json, multiples of M (default: M, 10 M, "
        "100 M, ... and K)",
    )
    p.add_argument("--out", required=True, help="output directory (metrics.json, policy.npz, the game)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory that markovgames wrote")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    add_game_limits(p)
    p.set_defaults(handler=_handle)
    return p


def _game_argument(args) -> str:
    """GAME, given as the positional argument or as ``--game`` (not both, unless they agree)."""
    given = [g for g in (args.game, args.game_option) if g is not None]
    if not given:
        raise CliError("GAME: missing; name a built-in game (see 'markovgames games list') or a .json/.npz game file")
    if len(given) == 2 and given[0] != given[1]:
        raise CliError(f"GAME: given twice, as {given[0]!r} and as --game {given[1]!r}; give one")
    return given[0]


def _algorithm(name: str):
    """``--algorithm``: a V-learning name (a string), or a composition (the `Algorithm`: a user's
    learner file is read here, once)."""
    from .._suggest import did_you_mean
    from ..dynamics import get_algorithm

    if name in VLEARNING_ALGORITHMS:
        return name
    # A composition's own error says which part is wrong ("mwu+stage" is not "stage-v").
    hint = "" if "+" in name else did_you_mean(name, VLEARNING_ALGORITHMS)
    if hint:
        raise CliError(f"--algorithm: unknown V-learning algorithm {name!r}; known: {', '.join(VLEARNING_ALGORITHMS)}{hint}")
    try:
        return get_algorithm(name)
    except ValueError as err:
        raise CliError(f"--algorithm: {err}; or a V-learning algorithm: {', '.join(VLEARNING_ALGORITHMS)}") from None


def _number(text: str | None, option: str, *, positive: bool) -> float | None:
    """``--bonus``, ``--ix`` (finite, >= 0) and ``--eta`` (finite, > 0); None: the library's default."""
    if text is None:
        return None
    wanted = "> 0" if positive else ">= 0"
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"{option}: expected a number {wanted}, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise CliError(f"{option}: must be a finite number {wanted}, got {text!r}")
    return value


def _ix(text: str | None) -> float | str | None:
    """``--ix``: ``decaying`` (the default schedule) or a constant number >= 0; None: the default."""
    from ..dynamics import DEFAULT_IX

    if text is None or text == DEFAULT_IX:
        return text
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--ix: expected {DEFAULT_IX!r} or a number >= 0, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise CliError(f"--ix: must be {DEFAULT_IX!r} or a finite number >= 0, got {text!r}")
    return value


def _check_rate(eta: float | None, rounds: int, horizon: int) -> None:
    """``--eta``: at most `markovgames.dynamics.max_learning_rate` of the run's rounds, as ``run``'s."""
    from ..dynamics import max_learning_rate

    largest = max_learning_rate(rounds, horizon)
    if eta is not None and eta > largest:
        raise CliError(
            f"--eta: {eta:g} is too large for {rounds:,} rounds in float64; at most {largest:.3g} (the learners' "
            "logits eta (T + H) must stay where float64 resolves them)"
        )


def _per_round(text: str) -> int:
    """``--feedback bandit:M``: ``M``."""
    from ..dynamics import parse_bandit

    if text in ("full",) or text.startswith("sampled"):
        raise CliError(
            f"--feedback: {text!r} is not learning from play; 'markovgames vlearn' runs bandit:M, and full "
            "information and sampled:K run with 'markovgames run --feedback'"
        )
    try:
        return parse_bandit(text)
    except ValueError as err:
        raise CliError(f"--feedback: {err}") from None


def _check_settings(algorithm, per_round: int, episodes: int, args) -> None:
    """The options that only compositions take, and episodes in whole rounds."""
    if isinstance(algorithm, str):  # V-learning: its papers' rates and bandits
        for given, option in ((args.eta, "--eta"), (args.bandit_rate, "--bandit-rate"), (args.ix, "--ix")):
            if given is not None:
                raise CliError(
                    f"{option}: {algorithm} runs with its paper's rates (docs/vlearning.md); {option} is for a "
                    "composition LEARNER+UPDATE"
                )
        if args.no_optimism:
            raise CliError(f"--no-optimism: {algorithm}'s bandits are not optimistic; the option is for a composition")
    if episodes % per_round:
        raise CliError(
            f"--episodes: {episodes:,} is not a whole number of rounds of {per_round} episodes (--feedback "
            f"bandit:{per_round}); choose a multiple of {per_round}"
        )


def _checkpoints(text: str | None, episodes: int, per_round: int) -> list[int]:
    """``--checkpoints``: as ``run``'s (`markovgames.experiments.parse_checkpoints`), in episodes,
    each a whole number of rounds (by default ``M``, ``10 M``, ... and ``K``)."""
    from .._errors import ArgumentError
    from ..experiments import parse_checkpoints

    if text is None:
        return [per_round * k for k in parse_checkpoints(None, episodes // per_round)]
    try:
        checkpoints = parse_checkpoints(text, episodes)
    except ArgumentError as err:
        message = str(err).replace(f"beyond T = {episodes}", f"beyond the {episodes} episodes (--episodes)")
        raise CliError(f"--{message}" if message.startswith("checkpoints") else message) from None
    for k in checkpoints:
        if k % per_round:
            raise CliError(
                f"--checkpoints: {k} is not a whole number of rounds of {per_round} episodes (--feedback "
                f"bandit:{per_round}); the output policy changes once per round"
            )
    return checkpoints


@dataclass(frozen=True)
class BanditRun:
    """A run that learns from play, as ``vlearn`` (and ``run --feedback bandit:M``) gives it: the
    game and the algorithm as written, the settings checked (``None``: the library's default) and
    the checkpoints in episodes. ``count_option`` is the option that gave the number of episodes
    (``--episodes``; ``-T``, in rounds, for ``run``), which the messages about it name."""

    game: str
    algorithm_name: str
    algorithm: Any  # a V-learning name, or the composition's Algorithm
    episodes: int
    per_round: int
    seed: int
    bonus: float | None
    eta: float | None
    ix: float | str | None  # a constant, or "decaying" (the default)
    no_optimism: bool
    checkpoints: tuple[int, ...]
    out: str
    overwrite: bool
    quiet: bool
    max_bytes: int | None
    max_entries: int
    count_option: str = "--episodes"
    bandit_rate: str | None = None  # "decaying" (the default) or "constant"

    @property
    def fewer(self) -> str:
        """The advice for a run too large: in the unit of `count_option`."""
        return "choose fewer episodes" if self.count_option == "--episodes" else "choose a smaller T"


def _handle(args) -> int:
    spec = _game_argument(args)
    algorithm = _algorithm(args.algorithm)
    episodes = parse_T(args.episodes, "--episodes")
    per_round = _per_round(args.feedback)
    seed = 0 if args.seed is None else parse_seed(args.seed)
    bonus = _number(args.bonus, "--bonus", positive=False)
    eta = _number(args.eta, "--eta", positive=True)
    ix = _ix(args.ix)
    _check_settings(algorithm, per_round, episodes, args)
    check_game_limits(args)
    checkpoints = _checkpoints(args.checkpoints, episodes, per_round)
    return execute(
        BanditRun(
            game=spec,
            algorithm_name=args.algorithm,
            algorithm=algorithm,
            episodes=episodes,
            per_round=per_round,
            seed=seed,
            bonus=bonus,
            eta=eta,
            ix=ix,
            bandit_rate=args.bandit_rate,
            no_optimism=args.no_optimism,
            checkpoints=tuple(checkpoints),
            out=args.out,
            overwrite=args.overwrite,
            quiet=args.quiet,
            max_bytes=args.max_bytes,
            max_entries=args.max_entries,
        )
    )


def execute(run: BanditRun) -> int:
    """Run ``run`` (`markovgames.dynamics.run_vlearning`) and write its directory: ``vlearn``'s, and
    ``run``'s under bandit feedback."""
    # The library is imported here, not with the module: 'markovgames vlearn --help' must not load JAX.
    from .._lock import directory_lock
    from ..dynamics import run_vlearning
    from ..dynamics._vlearning import check_vlearning_settings
    from ..evaluation import prefix_curves
    from ..experiments import (
        check_output_directory_state,
        finalize_output_directory,
        prepare_output_directory,
        staging_directory,
    )
    from ..experiments.rundirs._vlearn import write_vlearning_directory
    from ..games import BUILTIN_GAMES, resolve_game

    algorithm, episodes, per_round, checkpoints = run.algorithm, run.episodes, run.per_round, list(run.checkpoints)
    game = resolve_game(run.game, max_bytes=run.max_bytes, max_entries=run.max_entries)
    _check_rate(run.eta, episodes // per_round, game.horizon)  # the limit of run's --eta, before any output
    # Only the settings the user gave: the library's defaults stay its own (metrics.json records them).
    given: dict[str, Any] = {
        key: value
        for key, value in (
            ("bonus", run.bonus),
            ("eta", run.eta),
            ("bandit_rate", run.bandit_rate),
            ("ix", run.ix),
            ("optimistic", False if run.no_optimism else None),
        )
        if value is not None
    }
    check_output_directory(run.out, replaces=True)
    _check_resources(game, run)
    try:  # what the library refuses (a learner of two queries, a user's learner's shapes), before any output
        check_vlearning_settings(game, algorithm, episodes, feedback=f"bandit:{per_round}", **given)
    except ValueError as err:
        raise CliError(f"--algorithm: {err}") from None
    # The output directory is replaced as a whole: never one that holds the game file or the learner.
    check_apart(run.out, _input_files(run.game, run.algorithm_name), "--out")
    check_output_directory_state(Path(run.out), run.overwrite)  # before the lock: a refusal leaves nothing
    config = {
        # A file's path as written, normalised.
        "game": run.game if run.game in BUILTIN_GAMES else os.path.normpath(run.game),
        "algorithm": run.algorithm_name,
        "episodes": episodes,
        "seed": run.seed,
        "bonus": run.bonus,  # None: the library's default (metrics.json's "bonus" says which)
        "checkpoints": checkpoints,
    }
    if not isinstance(algorithm, str):  # a composition: its settings (None: the library's defaults)
        config.update(
            feedback=f"bandit:{per_round}", eta=run.eta, bandit_rate=run.bandit_rate, ix=run.ix, optimistic=not run.no_optimism
        )
        if algorithm.source_sha256 is not None:  # a user's learner: the content of its file
            config["algorithm_sha256"] = algorithm.source_sha256
    elif per_round != 1:
        config["feedback"] = f"bandit:{per_round}"
    planned = staging_directory(Path(run.out))
    found = planned.exists()  # an earlier command's, which only prepare_output_directory may replace
    # A run refused or failed under the lock removes the parents of --out that it made.
    with remove_created_parents(run.out), directory_lock(run.out, "out"):
        staging = None
        try:
            staging = prepare_output_directory(Path(run.out), run.overwrite)
            with iteration_progress(episodes, f"{run.algorithm_name} on {game.name}", enabled=not run.quiet) as advance:
                result = run_vlearning(
                    game, algorithm, episodes, seed=run.seed, feedback=f"bandit:{per_round}", progress=advance, **given
                )
            start = time.perf_counter()
            # The output policy's index counts rounds: K' episodes are K'/M of them.
            curves = prefix_curves(game, result.policy, [k // per_round for k in checkpoints])
            metrics = write_vlearning_directory(
                staging, game, result, curves, config, evaluation_time_s=time.perf_counter() - start
            )
            del result
            finalize_output_directory(staging, Path(run.out))
        except BaseException as err:
            if staging is None:
                # Refused, or interrupted while the staging directory was being made: remove only one this call made.
                if not found and planned.exists():
                    shutil.rmtree(planned, ignore_errors=True)
                raise
            shutil.rmtree(staging, ignore_errors=True)
            reported = _after_failure(err, staging, run)
            if reported is not err:
                raise reported from None
            raise
    if not run.quiet:
        _print_checkpoints(metrics, run.out)
    return 0


def _after_failure(err: BaseException, staging: Path, run: BanditRun) -> BaseException:
    """The error to report for a run that failed or was interrupted (its staging directory is gone)."""
    if isinstance(err, MemoryError):
        return CliError(f"{run.count_option}: a run of {run.episodes} episodes needs more memory than is available; {run.fewer}")
    if isinstance(err, OSError) and not err.filename:
        # A full disk (ENOSPC), a quota or a file size limit while the directory is written.
        return CliError(f"{staging}: cannot write the run: {err.strerror or err}")
    if isinstance(err, KeyboardInterrupt):
        err.add_note("nothing was kept: a V-learning run saves no intermediate state")
    return err


def _check_resources(game, run: BanditRun) -> None:
    """Refuse up front a number of episodes whose record, output policy or its evaluation cannot fit
    in memory (or under the library's limits), or whose files cannot fit on the output's disk,
    rather than failing after the run; announce a large write."""
    from .._resources import format_bytes, physical_memory
    from ..dynamics._vlearning import MAX_RECORD_BYTES
    from ..experiments.rundirs._directory import run_directory_bytes
    from ..experiments.rundirs._vlearn import policy_file_bytes
    from ..policies._visit_chain import MAX_DENSE_ENTRIES

    episodes, per_round, option = run.episodes, run.per_round, run.count_option
    H, S, N = game.horizon, game.num_states, game.num_players
    # What the run keeps per episode (the library's own limit): states, actions, rewards, the policies played.
    record = episodes * H * (2 * N * 8 + 8 + 8 * sum(game.num_actions))
    if record > MAX_RECORD_BYTES:
        raise CliError(
            f"{option}: {episodes:,} episodes of {game.name} keep a record of {format_bytes(record)} (states, actions, "
            f"rewards and the policies played), more than the {format_bytes(MAX_RECORD_BYTES)} a V-learning run may keep; "
            f"{run.fewer}"
        )
    # The output policy's evaluation after every checkpoint (prefix_curves, the visit counts): per round.
    rounds = episodes // per_round
    entries = max(rounds * S * game.num_joint_actions * S, rounds * H * S)
    if entries > MAX_DENSE_ENTRIES:
        raise CliError(
            f"{option}: evaluating the output policy of {episodes:,} episodes of {game.name} needs arrays of "
            f"{entries:,} entries (rounds x S x joint actions x S), above the limit of {MAX_DENSE_ENTRIES:,}; "
            f"{run.fewer}"
        )
    needed = record + 4 * 8 * entries
    memory = physical_memory()
    if memory and needed > memory:
        raise CliError(
            f"{option}: a run of {episodes:,} episodes of {game.name} and its evaluation take about {format_bytes(needed)}, "
            f"more than this machine's {format_bytes(memory)}; {run.fewer}"
        )
    total = policy_file_bytes(game, episodes) + run_directory_bytes(game, 1, "float64", trajectory=False)["game"]
    ancestor = Path(run.out).absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    free = shutil.disk_usage(ancestor).free
    if total > free:
        raise CliError(
            f"{option}: a run of {episodes:,} episodes writes up to {format_bytes(total)} (the output policy and the game), "
            f"more than the {format_bytes(free)} free under {ancestor}; {run.fewer}"
        )
    if total >= LARGE_WRITE_BYTES:
        print(
            f"markovgames: note: this run writes up to {format_bytes(total)} into {printable(str(run.out))} (the output policy)",
            file=sys.stderr,
        )


def _print_checkpoints(metrics: dict, out) -> None:
    from rich.console import Console
    from rich.table import Table

    # Off a terminal rich assumes 80 columns and wraps headers; logs read better unwrapped.
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    from ._evaluate import _vlearning_words

    shown = {
        key: metrics[key]
        for key in ("feedback", "seed", "bonus", "eta", "bandit_rate", "ix", "ix_schedule")
        if metrics.get(key) is not None
    }
    if metrics.get("eta") is not None:  # a composition
        shown["optimistic"] = metrics["optimistic"]
    settings = ", ".join(_vlearning_words(shown))
    # The game's name (from a file) and a composition's (a learner file's path): markup and control
    # characters are shown literally.
    table = Table(title=f"{markup_safe(metrics['algorithm'])} on {markup_safe(metrics['game'])} ({markup_safe(settings)})")
    table.add_column("episodes", justify="right")
    rounds = metrics.get("feedback", "bandit:1") != "bandit:1"
    if rounds:
        table.add_column("rounds", justify="right")
    table.add_column("samples", justify="right")
    for i in range(len(metrics["checkpoints"][0]["value"])):
        table.add_column(f"V_{i}", justify="right")
    table.add_column("cert. CE gap", justify="right")
    table.add_column("cert. CCE gap", justify="right")
    for c in metrics["checkpoints"]:
        table.add_row(
            f"{c['episodes']:,}",
            *([f"{c['rounds']:,}"] if rounds else []),
            f"{c['samples_used']:,}",
            *(f"{v:.6f}" for v in c["value"]),
            f"{c['certified_ce_gap']:.3e}",
            f"{c['certified_cce_gap']:.3e}",
        )
    console.print(table)
    console.print(
        f"wrote {printable(out)}/metrics.json and policy.npz  ({metrics['wall_time_s']:.2f} s to learn, "
        f"{metrics['evaluation_time_s']:.2f} s to evaluate)",
        soft_wrap=True,
        markup=False,
    )
