"""``markovgames vlearn``: run V-learning and write its output policy with exact and certified numbers.

``markovgames vlearn GAME --algorithm cce-v|ce-v|stage-v --episodes K [--seed S] [--bonus C]
[--checkpoints 10,100] --out DIR`` runs `markovgames.dynamics.run_vlearning` (docs/vlearning.md)
and writes ``DIR/metrics.json`` (the configuration, the versions, the samples used, and at every
checkpoint ``K'`` the exact value and the certified CE/CCE bounds and gaps of the output policy
after ``K'`` episodes, from `markovgames.evaluation.prefix_curves`), ``DIR/policy.npz`` (the
output policy) and the game (`markovgames.experiments._vlearn_dir`). ``markovgames evaluate DIR``
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
from pathlib import Path

from .._outputs import check_apart, remove_created_parents
from .._text import markup_safe, printable
from ._commands import HELP
from ._defaults import VLEARNING_ALGORITHMS
from ._errors import CliError, check_output_directory
from ._games import add_game_limits, check_game_limits
from ._progress import iteration_progress
from ._run import LARGE_WRITE_BYTES, parse_seed, parse_T

__all__ = ["add_vlearn_parser"]


def add_vlearn_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "vlearn",
        help=HELP["vlearn"],
        description="Run V-learning (the players see only their own rewards and the states visited: "
        "docs/vlearning.md) and write its output policy, with its exact value and certified CE/CCE gaps "
        "after every checkpoint number of episodes; 'markovgames evaluate DIR' computes the exact gaps.",
    )
    p.add_argument(
        "game", metavar="GAME", nargs="?", default=None, help="a built-in game name (see 'games list') or a .json/.npz file"
    )
    p.add_argument("--game", dest="game_option", default=None, metavar="GAME", help="the same as GAME (as 'run' names it)")
    p.add_argument(
        "--algorithm",
        required=True,
        help=f"{', '.join(VLEARNING_ALGORITHMS[:-1])} or {VLEARNING_ALGORITHMS[-1]} (CCE-V, CE-V or stage-based "
        "V-learning; docs/vlearning.md)",
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
        help="the constant c of the optimism bonus (a number >= 0; default 1; 0 switches optimism off)",
    )
    p.add_argument(
        "--checkpoints",
        default=None,
        help="comma-separated numbers of episodes K' to report in metrics.json (default: 1, 10, 100, ... and K)",
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


def _algorithm(name: str) -> str:
    from .._suggest import did_you_mean

    if name not in VLEARNING_ALGORITHMS:
        raise CliError(
            f"--algorithm: unknown V-learning algorithm {name!r}; known: {', '.join(VLEARNING_ALGORITHMS)}"
            + did_you_mean(name, VLEARNING_ALGORITHMS)
            + " (the paper's dynamics run with 'markovgames run')"
        )
    return name


def _bonus(text: str | None) -> float | None:
    """``--bonus``: a finite number >= 0 (None: the library's default)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--bonus: expected a number >= 0, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise CliError(f"--bonus: must be a finite number >= 0, got {text!r}")
    return value


def _checkpoints(text: str | None, episodes: int) -> list[int]:
    """``--checkpoints``: as ``run``'s (`markovgames.experiments.parse_checkpoints`), in episodes."""
    from .._errors import ArgumentError
    from ..experiments import parse_checkpoints

    try:
        return parse_checkpoints(text, episodes)
    except ArgumentError as err:
        message = str(err).replace(f"beyond T = {episodes}", f"beyond the {episodes} episodes (--episodes)")
        raise CliError(f"--{message}" if message.startswith("checkpoints") else message) from None


def _handle(args) -> int:
    # The library is imported here, not with the module: 'markovgames vlearn --help' must not load JAX.
    from .._lock import directory_lock
    from ..dynamics import run_vlearning
    from ..evaluation import prefix_curves
    from ..experiments import (
        check_output_directory_state,
        finalize_output_directory,
        prepare_output_directory,
        staging_directory,
    )
    from ..experiments._vlearn_dir import write_vlearning_directory
    from ..games import BUILTIN_GAMES, resolve_game

    spec = _game_argument(args)
    algorithm = _algorithm(args.algorithm)
    episodes = parse_T(args.episodes, "--episodes")
    seed = 0 if args.seed is None else parse_seed(args.seed)
    bonus = _bonus(args.bonus)
    check_game_limits(args)
    game = resolve_game(spec, max_bytes=args.max_bytes, max_entries=args.max_entries)
    checkpoints = _checkpoints(args.checkpoints, episodes)
    check_output_directory(args.out, replaces=True)
    _check_resources(game, episodes, args)
    # The output directory is replaced as a whole: never one that holds the game file.
    check_apart(args.out, [] if spec in BUILTIN_GAMES else [spec], "--out")
    check_output_directory_state(args.out, args.overwrite)  # before the lock: a refusal leaves nothing
    config = {
        # A file's path as written, normalised.
        "game": spec if spec in BUILTIN_GAMES else os.path.normpath(spec),
        "algorithm": algorithm,
        "episodes": episodes,
        "seed": seed,
        "bonus": bonus,  # None: the library's default (metrics.json's "bonus" says which)
        "checkpoints": checkpoints,
    }
    planned = staging_directory(args.out)
    found = planned.exists()  # an earlier command's, which only prepare_output_directory may replace
    # A run refused or failed under the lock removes the parents of --out that it made.
    with remove_created_parents(args.out), directory_lock(args.out, "out"):
        staging = None
        try:
            staging = prepare_output_directory(args.out, args.overwrite)
            with iteration_progress(episodes, f"{algorithm} on {game.name}", enabled=not args.quiet) as advance:
                if bonus is None:  # the library's default
                    result = run_vlearning(game, algorithm, episodes, seed=seed, progress=advance)
                else:
                    result = run_vlearning(game, algorithm, episodes, seed=seed, bonus=bonus, progress=advance)
            start = time.perf_counter()
            curves = prefix_curves(game, result.policy, checkpoints)
            metrics = write_vlearning_directory(
                staging, game, result, curves, config, evaluation_time_s=time.perf_counter() - start
            )
            del result
            finalize_output_directory(staging, args.out)
        except BaseException as err:
            if staging is None:
                # Refused, or interrupted while the staging directory was being made: remove only one this call made.
                if not found and planned.exists():
                    shutil.rmtree(planned, ignore_errors=True)
                raise
            shutil.rmtree(staging, ignore_errors=True)
            reported = _after_failure(err, staging, episodes)
            if reported is not err:
                raise reported from None
            raise
    if not args.quiet:
        _print_checkpoints(metrics, args.out)
    return 0


def _after_failure(err: BaseException, staging: Path, episodes: int) -> BaseException:
    """The error to report for a run that failed or was interrupted (its staging directory is gone)."""
    if isinstance(err, MemoryError):
        return CliError(f"--episodes: a run of {episodes} episodes needs more memory than is available; choose fewer episodes")
    if isinstance(err, OSError) and not err.filename:
        # A full disk (ENOSPC), a quota or a file size limit while the directory is written.
        return CliError(f"{staging}: cannot write the run: {err.strerror or err}")
    if isinstance(err, KeyboardInterrupt):
        err.add_note("nothing was kept: a V-learning run saves no intermediate state")
    return err


def _check_resources(game, episodes: int, args) -> None:
    """Refuse up front a number of episodes whose record, output policy or its evaluation cannot fit
    in memory (or under the library's limits), or whose files cannot fit on the output's disk,
    rather than failing after the run; announce a large write."""
    from .._resources import format_bytes, physical_memory
    from ..dynamics._vlearning import MAX_RECORD_BYTES
    from ..experiments._rundir import run_directory_bytes
    from ..experiments._vlearn_dir import policy_file_bytes
    from ..policies._visit_chain import MAX_DENSE_ENTRIES

    H, S, N = game.horizon, game.num_states, game.num_players
    # What the run keeps per episode (the library's own limit): states, actions, rewards, the policies played.
    record = episodes * H * (2 * N * 8 + 8 + 8 * sum(game.num_actions))
    if record > MAX_RECORD_BYTES:
        raise CliError(
            f"--episodes: {episodes:,} episodes of {game.name} keep a record of {format_bytes(record)} (states, actions, "
            f"rewards and the policies played), more than the {format_bytes(MAX_RECORD_BYTES)} a V-learning run may keep; "
            "choose fewer episodes"
        )
    # The output policy's evaluation after every checkpoint (prefix_curves, the visit counts).
    entries = max(episodes * S * game.num_joint_actions * S, episodes * H * S)
    if entries > MAX_DENSE_ENTRIES:
        raise CliError(
            f"--episodes: evaluating the output policy of {episodes:,} episodes of {game.name} needs arrays of "
            f"{entries:,} entries (episodes x S x joint actions x S), above the limit of {MAX_DENSE_ENTRIES:,}; "
            "choose fewer episodes"
        )
    needed = record + 4 * 8 * entries
    memory = physical_memory()
    if memory and needed > memory:
        raise CliError(
            f"--episodes: a run of {episodes:,} episodes of {game.name} and its evaluation take about {format_bytes(needed)}, "
            f"more than this machine's {format_bytes(memory)}; choose fewer episodes"
        )
    total = policy_file_bytes(game, episodes) + run_directory_bytes(game, 1, "float64", trajectory=False)["game"]
    ancestor = Path(args.out).absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    free = shutil.disk_usage(ancestor).free
    if total > free:
        raise CliError(
            f"--episodes: a run of {episodes:,} episodes writes up to {format_bytes(total)} (the output policy and the game), "
            f"more than the {format_bytes(free)} free under {ancestor}; choose fewer episodes"
        )
    if total >= LARGE_WRITE_BYTES:
        print(
            f"markovgames: note: this run writes up to {format_bytes(total)} into {printable(str(args.out))} (the output policy)",
            file=sys.stderr,
        )


def _print_checkpoints(metrics: dict, out) -> None:
    from rich.console import Console
    from rich.table import Table

    # Off a terminal rich assumes 80 columns and wraps headers; logs read better unwrapped.
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    settings = f"seed {metrics['seed']}, bonus {metrics['bonus']:g}"
    # The game's name comes from a file: its markup and control characters are shown literally.
    table = Table(title=f"{markup_safe(metrics['algorithm'])} on {markup_safe(metrics['game'])} ({settings})")
    table.add_column("episodes", justify="right")
    table.add_column("samples", justify="right")
    for i in range(len(metrics["checkpoints"][0]["value"])):
        table.add_column(f"V_{i}", justify="right")
    table.add_column("cert. CE gap", justify="right")
    table.add_column("cert. CCE gap", justify="right")
    for c in metrics["checkpoints"]:
        table.add_row(
            f"{c['episodes']:,}",
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
