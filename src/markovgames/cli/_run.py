"""``markovgames run``: run one learning dynamic and write a run directory.

``markovgames run --game NAME|FILE --algorithm ALG -T N --eta 0.2|theory|0.1,0.3 --checkpoints 10,100 --out DIR``
(and ``--order alternating``, ``--eta-schedule sqrt|power:P|path.py:NAME``, ``--regret``,
``--feedback sampled:K|sampled:exact --seed N``)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Literal

from .._outputs import check_apart, remove_created_parents
from .._text import markup_safe, printable
from ._commands import HELP
from ._defaults import DTYPE_NAMES
from ._errors import CliError, check_output_directory
from ._games import add_game_limits, check_game_limits
from ._progress import iteration_progress

__all__ = ["add_run_parser", "parse_eta", "parse_T", "parse_seed", "MAX_T"]

#: The largest ``-T``: the compiled loop counts iterations and stages in 32-bit integers.
MAX_T = 2**31 - 1
#: The largest ``--seed``: what a 64-bit signed integer holds (the results tables store seeds so).
MAX_SEED = 2**63 - 1


def parse_T(text: str, option: str = "-T") -> int:
    """``-T`` (or another count ``option``): a positive integer; ``1e5`` style is accepted when it
    is an exact integer."""
    try:
        value = int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            raise CliError(f"{option}: expected a positive integer, got {text!r}") from None
        if not math.isfinite(f) or f != int(f):
            raise CliError(f"{option}: expected a positive integer, got {text!r}") from None
        value = int(f)
    if value < 1:
        raise CliError(f"{option}: must be at least 1, got {value}")
    if value > MAX_T:
        what = "T" if option == "-T" else "value"
        raise CliError(f"{option}: {text} is more than the largest supported {what} = {MAX_T}")
    return value


def parse_seed(text: str, option: str = "--seed") -> int:
    """``--seed``: a non-negative integer (at most `MAX_SEED`)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise CliError(f"{option}: expected a non-negative integer, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise CliError(f"{option}: expected a non-negative integer of at most {MAX_SEED} (2^63 - 1), got {text}")
    return value


def parse_eta(text: str) -> float | Literal["theory"] | tuple[float, ...]:
    """``--eta``: a positive number, ``theory``, or a comma-separated list of positive numbers (one
    per player: ``0.1,0.3``; the game's number of players is checked once the game is read)."""
    if text == "theory":
        return "theory"
    if "," in text:
        rates = []
        for part in (p.strip() for p in text.split(",")):
            if part == "theory":
                raise CliError(
                    f"--eta: 'theory' is one rate for all players; a list gives each player a positive number, got {text!r}"
                )
            try:
                rate = float(part)
            except ValueError:
                raise CliError(f"--eta: expected a positive number per player (e.g. 0.1,0.3), got {part!r} in {text!r}") from None
            if not math.isfinite(rate) or rate <= 0:
                raise CliError(f"--eta: every player's rate must be a positive finite number, got {part!r} in {text!r}")
            rates.append(rate)
        return tuple(rates)
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--eta: expected a positive number or 'theory', got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise CliError(f"--eta: must be a positive finite number, got {text!r}")
    return value


def add_run_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run",
        help=HELP["run"],
        description="Run a learning dynamic on a game: the paper's smooth_ce (Algorithm 1), stage_cce "
        "(Algorithm 2) or smooth_cce, any LEARNER+UPDATE composition, or your own learner "
        "(see 'markovgames algorithms list').",
    )
    p.add_argument("--game", required=True, help="a built-in game name (see 'games list') or a .json/.npz file")
    p.add_argument(
        "--algorithm",
        required=True,
        help="smooth_ce, stage_cce, smooth_cce, LEARNER+UPDATE (e.g. rm-plus+smooth), or path/file.py:NAME "
        "or package.module:NAME (see 'markovgames algorithms list')",
    )
    p.add_argument("-T", dest="T", required=True, help="number of iterations")
    p.add_argument(
        "--eta",
        default="0.2",
        help="learning rate: a positive number (default 0.2), 'theory', or one per player (e.g. 0.1,0.3)",
    )
    p.add_argument(
        "--order",
        default="simultaneous",
        choices=["simultaneous", "alternating"],
        help="the players' update order: simultaneous (the paper's, default) or alternating (in turn, each against "
        "the others' newest strategies)",
    )
    p.add_argument(
        "--eta-schedule",
        default=None,
        metavar="NAME",
        help="the learning rate's schedule eta_t = eta f(t): constant (default), sqrt (1/sqrt t), power:P (t^-P, "
        "P in [0, 1]) or path/file.py:NAME (your function f of a NumPy array of iterations)",
    )
    p.add_argument(
        "--regret",
        action="store_true",
        help="also record every player's average external and swap regret of the played sequence (the largest over "
        "steps and states) at every prefix (with the stage-based update: within each stage)",
    )
    p.add_argument(
        "--feedback",
        default="full",
        metavar="MODEL",
        help="what the learners see: full (exact utilities and Bellman targets, the paper's; default), sampled:K "
        "(estimates from K samples of a generative model, drawn afresh every iteration) or sampled:exact "
        "(expectations: full's numbers)",
    )
    p.add_argument(
        "--seed",
        default=None,
        metavar="N",
        help="the seed of the random draws of --feedback sampled:K (a non-negative integer; default 0): the same "
        "seed gives the same run; unused where the feedback draws nothing",
    )
    p.add_argument(
        "--checkpoints",
        default=None,
        help="comma-separated prefixes T' to report in metrics.json (default: 1, 10, 100, ... and T)",
    )
    p.add_argument("--out", required=True, help="output run directory")
    p.add_argument("--no-optimism", action="store_true", help="run the non-optimistic baseline (prediction 0)")
    p.add_argument("--no-trajectory", action="store_true", help="do not keep the trajectory (metrics only)")
    p.add_argument(
        "--exact",
        action="store_true",
        help="add exact CE and CCE gaps to every checkpoint where the game is small enough",
    )
    p.add_argument(
        "--last-iterate",
        action="store_true",
        help="also evaluate, at every checkpoint T', the last iterate pi^T' itself: its value and its Nash gap "
        "(exact, inside the compiled loop)",
    )
    p.add_argument(
        "--average-iterate",
        action="store_true",
        help="also evaluate, at every checkpoint T', the uniform average of the iterates pi^1..pi^T' (a product "
        "policy): its value, its Nash gap and, in a constant-sum game, its duality gap (exact; needs the trajectory)",
    )
    p.add_argument("--dtype", default="float64", choices=DTYPE_NAMES, help="floating point precision")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory (or an interrupted run)")
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        metavar="K",
        help="save the run's state every K iterations, so that an interrupted run can be resumed",
    )
    p.add_argument("--resume", action="store_true", help="continue an interrupted run of the same configuration")
    p.add_argument(
        "--trajectory-tolerance",
        type=float,
        default=None,
        metavar="DELTA",
        help="keep only the shortest suffix of the trajectory whose dropped index mass (under the output policy's "
        "kernel) is at most DELTA; metrics.json reports the suffix and the bounds H*DELTA (values) and 2*H*DELTA (gaps)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    add_game_limits(p)
    p.set_defaults(handler=_handle_run)
    return p


def _handle_run(args) -> int:
    # The library is imported here, not with the module: the module builds the parser, and
    # 'markovgames run --help' must not load JAX.
    from .._lock import directory_lock
    from ..dynamics import DiscountedRunResult, check_learner, get_algorithm, max_learning_rate, run
    from ..dynamics._checkpoint import metrics_file
    from ..dynamics._loop import loop_shape
    from ..experiments import (
        CONFIG_FILE,
        STATE_FILE,
        check_output_directory_state,
        finalize_output_directory,
        parse_checkpoints,
        prepare_output_directory,
        staging_directory,
        write_run_directory,
    )
    from ..experiments.rundirs._directory import read_mapped_trajectory
    from ..experiments.rundirs._discounted import write_discounted_run_directory
    from ..games import DiscountedMarkovGame, resolve_any_game

    _check_option_combinations(args)
    try:
        algorithm = get_algorithm(args.algorithm)
    except ValueError as err:
        raise CliError(f"--algorithm: {err}") from None
    T = parse_T(args.T)
    eta = parse_eta(args.eta)
    schedule = _step_schedule(args.eta_schedule)
    feedback = _feedback(args.feedback)
    seed = 0 if args.seed is None else parse_seed(args.seed)
    _check_interplay(algorithm, args)
    checkpoints = parse_checkpoints(args.checkpoints, T)
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise CliError(f"--checkpoint-every: must be at least 1, got {args.checkpoint_every}")
    check_game_limits(args)
    game = resolve_any_game(args.game, max_bytes=args.max_bytes, max_entries=args.max_entries)
    discounted = isinstance(game, DiscountedMarkovGame)
    _check_for_game(args, algorithm, game, eta)
    # A user's learner is checked with this game's shapes before any output is touched.
    check_learner(algorithm.learner, loop_shape(game), args.dtype)
    if isinstance(eta, tuple) and len(eta) != game.num_players:
        raise CliError(
            f"--eta: {len(eta)} rates given, but {game.name} has {game.num_players} players; give one rate per "
            "player (e.g. 0.1,0.3) or one for all"
        )
    # Utilities lie in [0, H] (a discounted game's in [0, 1/(1 - gamma)]).
    scale = game.effective_horizon if isinstance(game, DiscountedMarkovGame) else game.horizon
    largest = max_learning_rate(T, scale, args.dtype)
    top = max(eta) if isinstance(eta, tuple) else eta
    if isinstance(top, float) and top > largest:
        raise CliError(
            f"--eta: {top:g} is too large for -T {T} in {args.dtype}; at most {largest:.3g} (the learners' "
            f"logits eta (T + H) must stay where {args.dtype} resolves them)"
        )
    check_output_directory(args.out, replaces=True)
    _check_resources(game, T, args)
    config = {
        # A file's path as written, normalised ("./g.json" and "g.json" are one game to --resume).
        "game": args.game if _is_builtin(args.game) else os.path.normpath(args.game),
        "algorithm": args.algorithm,
        "T": T,
        "eta": eta,
        "optimistic": not args.no_optimism,
        "checkpoints": checkpoints,
        "dtype": args.dtype,
        "record_trajectory": not args.no_trajectory,
        "checkpoint_every": args.checkpoint_every,
        "trajectory_tolerance": args.trajectory_tolerance,
        "last_iterate": args.last_iterate,
        "average_iterate": args.average_iterate,
    }
    if algorithm.source_sha256 is not None:
        # A user's learner: the content of its file is part of the configuration, so that
        # --resume continues a run only with the code that started it (the command line names
        # the file again; what the run directory names is never loaded).
        config["algorithm_sha256"] = algorithm.source_sha256
    config.update(_settings_config(args, schedule, feedback, seed))
    # Refused here, before the lock is taken, a bad --out leaves nothing behind; the checks are
    # repeated under the lock, which keeps a second writer out of the directory.
    planned = staging_directory(args.out)
    if args.resume and not args.overwrite and not (planned / STATE_FILE).exists() and _finished(args.out, config):
        print(f"{printable(args.out)}: this run is complete (metrics.json holds all {T} iterations); nothing to resume")
        return 0
    out_path = Path(args.out)
    empty = not out_path.is_dir() or out_path.is_symlink() or not any(out_path.iterdir())
    if args.resume and not args.overwrite and not (planned / STATE_FILE).exists() and empty:
        # Not a silent fresh start: the user expects to continue something (a finished run or
        # another directory there is refused below, with what it holds).
        raise CliError(
            f"--resume: {printable(str(args.out))}: there is no saved state to continue (a run saves its state only with "
            "--checkpoint-every K, and keeps it only when it is interrupted); run the command without --resume to start the run"
        )
    # The output directory is replaced as a whole: never one that holds the game or the learner.
    check_apart(args.out, _input_files(args.game, args.algorithm, args.eta_schedule), "--out")
    check_output_directory_state(args.out, args.overwrite, args.resume, config)
    # A run refused or failed under the lock removes the parents of --out that it made.
    with remove_created_parents(args.out):
        lock = contextlib.ExitStack()
        lock.enter_context(directory_lock(args.out, "out"))
        staging = state_file = None
        found = planned.exists()  # an earlier run's, which only prepare_output_directory may replace
        try:
            staging = prepare_output_directory(args.out, args.overwrite, args.resume, config)
            state_file = staging / STATE_FILE if args.checkpoint_every is not None else None
            with iteration_progress(T, f"{args.algorithm} on {game.name}", enabled=not args.quiet) as advance:
                result = run(
                    game,
                    algorithm,
                    T=T,
                    eta=eta,
                    optimistic=not args.no_optimism,
                    record_trajectory=not args.no_trajectory,
                    trajectory_dir=None if args.no_trajectory else staging / "trajectory",
                    dtype=args.dtype,
                    progress=advance,
                    state_file=state_file,
                    state_every=args.checkpoint_every,
                    trajectory_tolerance=args.trajectory_tolerance,
                    last_iterate=checkpoints if args.last_iterate else False,
                    order=args.order,
                    step_schedule=schedule,
                    regret=args.regret,
                    feedback=feedback,
                    seed=seed,
                )
            if isinstance(result, DiscountedRunResult):
                metrics = write_discounted_run_directory(staging, result, checkpoints, config, step_schedule=schedule)
            else:
                # The exact gaps read the trajectory's files again, checked, never through the memory
                # maps the run returns (a file truncated meanwhile is then an error, not SIGBUS).
                extras = _checkpoint_extras(read_mapped_trajectory(result), checkpoints, args)
                metrics = write_run_directory(staging, result, checkpoints, config, extras, step_schedule=schedule)
            # Release the memory maps before the directory is moved; the saved state is not a result.
            del result
            for scratch in (STATE_FILE, metrics_file(Path(STATE_FILE)).name, CONFIG_FILE):
                (staging / scratch).unlink(missing_ok=True)
            finalize_output_directory(staging, args.out)
        except BaseException as err:
            if staging is None:
                # Refused, or interrupted while the staging directory was being made: remove only
                # one this call created.
                if not found and planned.exists() and not (planned / STATE_FILE).exists():
                    shutil.rmtree(planned, ignore_errors=True)
                raise
            reported = _after_failure(err, staging, state_file, T)
            if reported is not err:
                raise reported from None
            raise
        finally:
            lock.close()
    if not args.quiet:
        (_print_discounted_checkpoints if discounted else _print_checkpoints)(metrics, args.out)
    return 0


def _is_builtin(name: str) -> bool:
    from ..games import BUILTIN_GAMES, DISCOUNTED_GAMES

    return name in BUILTIN_GAMES or name in DISCOUNTED_GAMES


def _check_for_game(args, algorithm, game, eta) -> None:
    """Refuse what has no meaning for this kind of game, naming the option: a value update of the
    other kind, and for a discounted game the options about an output policy and 'theory' rates."""
    from ..dynamics._discounted_run import check_update_for_game
    from ..games import DiscountedMarkovGame

    try:
        check_update_for_game(algorithm, game)
    except ValueError as err:
        raise CliError(f"--algorithm: {err}") from None
    if not isinstance(game, DiscountedMarkovGame):
        return
    iterates = "--last-iterate evaluates the last and the weighted average iterates of a discounted run exactly"
    if args.exact:
        raise CliError(f"--exact: {game.name!r} is a discounted game, whose run has no output policy to evaluate; {iterates}")
    if args.average_iterate:
        raise CliError(
            f"--average-iterate: {game.name!r} is a discounted game; {iterates} (the weighted average with the "
            "update's weights; LEARNER+discounted-smooth-uniform averages uniformly)"
        )
    if args.trajectory_tolerance is not None:
        raise CliError(
            f"--trajectory-tolerance: {game.name!r} is a discounted game, whose run has no output policy whose index "
            "mass it would bound; keep the whole trajectory or --no-trajectory"
        )
    if eta == "theory":
        raise CliError(
            f"--eta theory: no paper's learning rate is implemented for {algorithm.value_update.name!r}; give a number"
        )


def _print_discounted_checkpoints(metrics: dict, out) -> None:
    """The table of a discounted game's run: per checkpoint the value estimates and, where
    evaluated, the last and the weighted average iterates' Nash (and duality) gaps."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    settings = _settings_words(metrics) + [f"gamma={metrics['discount']:g}"]
    table = Table(
        title=f"{markup_safe(metrics['algorithm'])} on {markup_safe(metrics['game'])} ({markup_safe(', '.join(settings))})"
    )
    table.add_column("T", justify="right")
    records = metrics["checkpoints"]
    for i in range(len(records[0]["value_estimate"])):
        table.add_column(f"V^T_{i}(rho) est.", justify="right")
    columns = {
        "last_iterate_nash_gap": "last iterate: Nash gap",
        "last_iterate_duality_gap": "last iterate: duality gap",
        "weighted_average_nash_gap": "weighted average: Nash gap",
        "weighted_average_duality_gap": "weighted average: duality gap",
        **_REGRET_COLUMNS,
    }
    keys = [k for k in columns if any(k in c for c in records)]
    for key in keys:
        table.add_column(columns[key], justify="right")
    for c in records:
        table.add_row(
            str(c["T"]),
            *(f"{v:.6f}" for v in c["value_estimate"]),
            *("–" if c.get(k) is None else f"{c[k]:.3e}" for k in keys),
        )
    console.print(table)
    console.print(
        f"wrote {printable(out)}/metrics.json  ({metrics['wall_time_s']:.2f} s, of which compile {metrics['compile_time_s']:.2f} s)",
        soft_wrap=True,
        markup=False,
    )


def _settings_config(args, schedule, feedback, seed: int) -> dict:
    """The configuration's entries of the order, the schedule, the regret curves and the feedback
    model, only where they differ from the paper's settings (and the seed only where the run draws
    samples with it): a run without them keeps the configuration (and --resume) of earlier versions."""
    config: dict = {}
    if args.order != "simultaneous":
        config["order"] = args.order
    if not schedule.is_constant:
        config["eta_schedule"] = schedule.name
        if schedule.source_sha256 is not None:  # a user's schedule: its code, as for a learner's
            config["eta_schedule_sha256"] = schedule.source_sha256
    if args.regret:
        config["regret"] = True
    if feedback.name != "full":
        config["feedback"] = feedback.name
    if feedback.estimates:
        config["seed"] = seed
    return config


def _input_files(game: str, algorithm: str, schedule: str | None = None) -> list[str]:
    """The files a run reads: the game file (not a built-in game's name), a user's learner file
    (``path.py:NAME``, alone or before ``+UPDATE``) and a user's step-size schedule file."""
    files = [] if _is_builtin(game) else [game]
    references = [algorithm.split("+", 1)[0].rsplit(":", 1)[0]]
    references += [] if schedule is None else [schedule.rsplit(":", 1)[0]]
    files += [reference for reference in references if reference.endswith(".py")]
    return files


def _step_schedule(name: str | None):
    """``--eta-schedule``: the schedule (a user's file is loaded here, once; the run gets the object)."""
    from ..dynamics import get_step_schedule

    try:
        return get_step_schedule(name)
    except ValueError as err:
        raise CliError(f"--eta-schedule: {err}") from None


def _feedback(name: str):
    """``--feedback``: the feedback model (`markovgames.dynamics._feedback.parse_feedback`)."""
    from ..dynamics._feedback import parse_feedback

    try:
        return parse_feedback(name)
    except ValueError as err:
        raise CliError(f"--feedback: {err}") from None


def _check_interplay(algorithm, args) -> None:
    """Refuse ``--order alternating`` and ``--no-optimism`` where the algorithm has no such form,
    naming the option (the library refuses them too, naming its arguments)."""
    if algorithm.learner.learner().propose is None:
        return
    two_query = f"learner {algorithm.learner.name!r} makes two utility queries per iteration"
    if args.order == "alternating":
        raise CliError(f"--order alternating: {two_query}; alternating updates are not defined for it")
    if args.no_optimism:
        raise CliError(f"--no-optimism: {two_query}: its prediction is its second query, so it has no non-optimistic form")


def _checkpoint_extras(result, checkpoints: list[int], args) -> dict[int, dict] | None:
    """The fields added to each checkpoint after the run: exact gaps (``--exact``) and the average
    iterate's (``--average-iterate``), from the trajectory read with checked reads."""
    from ..experiments import exact_checkpoint_gaps
    from ..experiments.rundirs._iterates import average_iterate_fields

    extras: dict[int, dict] = {t: {} for t in checkpoints}
    if args.exact:
        for t, fields in exact_checkpoint_gaps(result, checkpoints).items():
            extras[t].update(fields)
    if args.average_iterate:
        for t, fields in average_iterate_fields(result.game, result.policies, checkpoints).items():
            extras[t].update(fields)
    return extras if (args.exact or args.average_iterate) else None


def _check_option_combinations(args) -> None:
    """Refuse options that contradict each other, before any work."""
    if args.exact and args.no_trajectory:
        raise CliError("--exact needs the trajectory; drop --no-trajectory")
    if args.average_iterate and args.no_trajectory:
        raise CliError("--average-iterate needs the trajectory; drop --no-trajectory")
    if args.average_iterate and args.trajectory_tolerance is not None:
        raise CliError("--average-iterate averages every iterate, which needs the whole trajectory; drop --trajectory-tolerance")
    if args.trajectory_tolerance is not None:
        if args.no_trajectory:
            raise CliError("--trajectory-tolerance chooses which part of the trajectory to keep; drop --no-trajectory")
        if args.exact:
            raise CliError("--exact evaluates every checkpoint, which needs the whole trajectory; drop --trajectory-tolerance")
        if not 0.0 <= args.trajectory_tolerance < 1.0:
            raise CliError(f"--trajectory-tolerance: must be in [0, 1), got {args.trajectory_tolerance}")


def _after_failure(err: BaseException, staging: Path, state_file: Path | None, T: int) -> BaseException:
    """Clean up after a run that failed or was interrupted, and return the error to report.

    A saved state lets the run be resumed (after an interruption, a crash, or a --resume refused
    because the game changed): it is kept, and the error says so; without one the staging area is
    garbage and goes. A run too long for the memory, or a disk that fills, is the user's error.
    """
    if isinstance(err, MemoryError):
        # The per-prefix curves (and the trajectory) grow with T: a too long run is a user error.
        err = CliError(f"-T: a run of {T} iterations needs more memory than is available; choose a smaller T")
    elif isinstance(err, OSError) and not err.filename:
        # A full disk (ENOSPC), a quota or a file size limit while the run writes its files.
        err = CliError(f"{staging}: cannot write the run: {err.strerror or err}")
    if state_file is None or not state_file.exists():
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(err, KeyboardInterrupt):
            # Say so: a long run lost without a word looks like a run that can be resumed.
            err.add_note(
                "nothing was kept: the run saved no state (use --checkpoint-every K to make a long run resumable)"
                if state_file is None
                else "nothing was kept: the run was interrupted before its first saved state (--checkpoint-every)"
            )
    elif isinstance(err, KeyboardInterrupt):
        err.add_note(f"the run's state is saved in {staging}: run the same command with --resume to continue it")
    else:
        err.add_note(f"the saved state in {staging} is kept: fix the cause and --resume, or --overwrite to start over")
    return err


def _finished(out, config: dict) -> bool:
    """Whether ``out`` holds a finished run of ``config`` (for ``--resume`` of a run that is done).

    A finished run of another configuration is refused, naming what differs.
    """
    import json

    from .._files import JsonFileError, read_json
    from ..experiments.rundirs._directory import config_difference

    try:
        metrics = read_json(Path(out) / "metrics.json", 64 << 20)
    except JsonFileError:
        return False
    saved = metrics.get("config") if isinstance(metrics, dict) else None
    if not isinstance(saved, dict):
        return False
    differ = config_difference(saved, json.loads(json.dumps(config)))
    if differ:
        raise CliError(
            f"{out}: holds a finished run with a different configuration ({differ}); there is nothing "
            "to resume: use --overwrite to replace it, or another --out"
        )
    return True


#: A run that writes at least this much says so before it starts (1 GB).
LARGE_WRITE_BYTES = 10**9


def _check_resources(game, T: int, args) -> None:
    """Refuse up front a T whose per-prefix curves cannot fit in memory, or whose files cannot fit
    on the output's disk, rather than failing (or being killed) hours later; announce a large write."""
    import numpy as np

    from .._dtypes import DTYPES
    from .._resources import format_bytes, physical_memory
    from ..experiments.rundirs._directory import run_directory_bytes

    itemsize = np.dtype(DTYPES[args.dtype]).itemsize
    # Values and both bounds per prefix (and both regrets with --regret, and the samples drawn
    # under sampled:K: one int64 each), and a copy.
    drawn = args.feedback.startswith("sampled:") and args.feedback != "sampled:exact"
    rows = (1 if hasattr(game, "discount") else 3) + (2 if args.regret else 0)  # a discounted run's: the value estimates
    curves = 2 * T * (rows * game.num_players * itemsize + (8 if drawn else 0))
    memory = physical_memory()
    if memory and curves > memory:
        raise CliError(
            f"-T: keeping the value and the certified bounds of all {T} prefixes takes about "
            f"{format_bytes(curves)}, more than this machine's {format_bytes(memory)}; choose a smaller T"
        )
    parts = run_directory_bytes(game, T, args.dtype, trajectory=not args.no_trajectory, regret=args.regret, samples=drawn)
    total = sum(parts.values())
    # While the run goes, a run that saves its state also keeps the per-prefix metrics so far
    # beside it (about the curve's size), deleted at the end.
    peak = total + (parts["curve.npz"] if args.checkpoint_every is not None else 0)
    if args.trajectory_tolerance is not None:
        peak -= parts["trajectory"]  # how much of it is kept is known only at the end
    ancestor = Path(args.out).absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    free = shutil.disk_usage(ancestor).free
    largest_first = sorted(parts.items(), key=lambda part: -part[1])
    listed = ", ".join(f"{name} {format_bytes(size)}" for name, size in largest_first if size >= total / 20)
    fix = "" if args.no_trajectory else "; --no-trajectory or --trajectory-tolerance DELTA writes less"
    if peak > free:
        raise CliError(
            f"-T: a run of {T} iterations writes about {format_bytes(peak)} ({listed}), more than the "
            f"{format_bytes(free)} free under {ancestor}; choose a smaller T{fix}"
        )
    if total >= LARGE_WRITE_BYTES:
        # Said before the work, on stderr (with --quiet too), so that gigabytes are never a surprise.
        bound = "at most " if args.trajectory_tolerance is not None else ""
        print(
            f"markovgames: note: this run writes {bound}about {format_bytes(total)} into {printable(str(args.out))} "
            f"({listed}){fix}",
            file=sys.stderr,
        )


def _original_units_table(metrics: dict):
    """The checkpoints' values and gaps in the game's own units (its payoffs before the rescaling)."""
    from rich.table import Table

    units = metrics["units"]
    table = Table(title=f"in the game's own units (rewards r01 = {units['scale']:.6g} r + {units['offset']:.6g})")
    table.add_column("T", justify="right")
    first = metrics["checkpoints"][0]
    for i in range(len(first["value_original"])):
        table.add_column(f"V_{i}", justify="right")
    labels = {
        "certified_ce_gap": "cert. CE gap",
        "certified_cce_gap": "cert. CCE gap",
        "exact_ce_gap": "exact CE gap",
        "exact_cce_gap": "exact CCE gap",
        **_REGRET_COLUMNS,
    }
    keys = [k for k in labels if f"{k}_original" in first]
    for key in keys:
        table.add_column(labels[key], justify="right")
    for c in metrics["checkpoints"]:
        cells = ["–" if c.get(f"{k}_original") is None else f"{c[f'{k}_original']:.3e}" for k in keys]
        table.add_row(str(c["T"]), *(f"{v:.6f}" for v in c["value_original"]), *cells)
    return table


#: The regret columns of the printed tables (with --regret): the largest over players.
_REGRET_COLUMNS = {"external_regret": "ext. regret", "swap_regret": "swap regret"}


def _settings_words(metrics: dict) -> list[str]:
    """The run's settings in a table's title: the learning rate always, the others where they
    differ from the defaults."""
    eta = metrics["eta"]
    settings = [f"eta={','.join(f'{e:g}' for e in eta) if isinstance(eta, (list, tuple)) else eta}"]
    settings += [] if metrics.get("optimistic", True) else ["no optimism"]
    settings += [f"{metrics['order']} order"] if metrics.get("order", "simultaneous") != "simultaneous" else []
    settings += [f"eta schedule {metrics['eta_schedule']}"] if metrics.get("eta_schedule", "constant") != "constant" else []
    if metrics.get("feedback", "full") != "full":
        seed = metrics.get("seed")
        settings += [f"feedback {metrics['feedback']}" + ("" if seed is None else f", seed {seed}")]
    settings += [metrics["dtype"]] if metrics.get("dtype", "float64") != "float64" else []
    return settings


def _print_checkpoints(metrics: dict, out) -> None:
    from rich.console import Console
    from rich.table import Table

    # Off a terminal rich assumes 80 columns and wraps headers; logs read better unwrapped.
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    # The game's name comes from a file: its markup and control characters are shown literally.
    # The title says every setting that differs from the defaults (the learning rate always).
    settings = _settings_words(metrics)
    table = Table(
        title=f"{markup_safe(metrics['algorithm'])} on {markup_safe(metrics['game'])} ({markup_safe(', '.join(settings))})"
    )
    table.add_column("T", justify="right")
    num_players = len(metrics["checkpoints"][0]["value"])
    for i in range(num_players):
        table.add_column(f"V_{i}", justify="right")
    table.add_column("cert. CE gap", justify="right")
    table.add_column("cert. CCE gap", justify="right")
    table.add_column("CE gap x T", justify="right")
    table.add_column("CCE gap x T", justify="right")
    has_exact = any("exact_ce_gap" in c for c in metrics["checkpoints"])
    if has_exact:
        table.add_column("exact CE gap", justify="right")
        table.add_column("exact CCE gap", justify="right")
    # The iterates' own measures, where asked for: the Nash gap, and in a constant-sum game the
    # duality gap, of the last iterate and of the uniform average of the iterates.
    iterate_columns = {
        "last_iterate_nash_gap": "last iterate: Nash gap",
        "last_iterate_duality_gap": "last iterate: duality gap",
        "average_iterate_nash_gap": "average iterate: Nash gap",
        "average_iterate_duality_gap": "average iterate: duality gap",
    }
    iterate_keys = [k for k in iterate_columns if any(k in c for c in metrics["checkpoints"])]
    for key in iterate_keys:
        table.add_column(iterate_columns[key], justify="right")
    # With --regret: each checkpoint's largest average regret over players.
    regret_keys = [k for k in _REGRET_COLUMNS if any(k in c for c in metrics["checkpoints"])]
    for key in regret_keys:
        table.add_column(_REGRET_COLUMNS[key], justify="right")
    # Under sampled:K: the samples drawn after T' iterations.
    samples = any("samples_used" in c for c in metrics["checkpoints"])
    if samples:
        table.add_column("samples", justify="right")
    for c in metrics["checkpoints"]:
        exact_cells = []
        if has_exact:
            exact_cells = ["–" if c.get(k) is None else f"{c[k]:.3e}" for k in ("exact_ce_gap", "exact_cce_gap")]
        table.add_row(
            str(c["T"]),
            *(f"{v:.6f}" for v in c["value"]),
            f"{c['certified_ce_gap']:.3e}",
            f"{c['certified_cce_gap']:.3e}",
            f"{c['certified_ce_gap'] * c['T']:.4g}",
            f"{c['certified_cce_gap'] * c['T']:.4g}",
            *exact_cells,
            *("–" if c.get(k) is None else f"{c[k]:.3e}" for k in iterate_keys),
            *("–" if c.get(k) is None else f"{c[k]:.3e}" for k in regret_keys),
            *(["–" if c.get("samples_used") is None else f"{c['samples_used']:,}"] if samples else []),
        )
    console.print(table)
    final = metrics.get("regret")
    if final and metrics["checkpoints"] and metrics["checkpoints"][-1]["T"] != final["T"]:
        # The last iteration is not a checkpoint: its regrets are said here.
        console.print(
            f"after T = {final['T']}: average external regret {final['external_regret']:.3e}, swap regret "
            f"{final['swap_regret']:.3e} (the largest over players, steps and states)",
            markup=False,
            soft_wrap=True,
        )
    drawn = metrics.get("samples_used")
    if drawn is not None and metrics["checkpoints"] and metrics["checkpoints"][-1]["T"] != metrics["T"]:
        # The last iteration is not a checkpoint: the samples drawn in all are said here.
        console.print(f"after T = {metrics['T']}: {drawn:,} samples drawn", markup=False, soft_wrap=True)
    if metrics.get("units"):
        console.print(_original_units_table(metrics))
    # Say why an exact gap is missing (once per reason), rather than only a dash in the table.
    skipped: dict[str, list[str]] = {}
    for c in metrics["checkpoints"]:
        for k in ("exact_ce_gap", "exact_cce_gap"):
            if c.get(k + "_skipped"):
                skipped.setdefault(c[k + "_skipped"].splitlines()[0], []).append(f"T={c['T']} {k[6:-4].upper()}")
    for reason, where in skipped.items():
        console.print(f"exact gap skipped ({', '.join(where)}): {printable(reason)}", markup=False, soft_wrap=True)
    console.print(
        f"wrote {printable(out)}/metrics.json  ({metrics['wall_time_s']:.2f} s, of which compile {metrics['compile_time_s']:.2f} s)",
        soft_wrap=True,
        markup=False,
    )
