"""``markovgames run``: run one learning dynamic and write a run directory.

``markovgames run --game NAME|FILE --algorithm ALG -T N --eta 0.2|theory|0.1,0.3 --checkpoints 10,100 --out DIR``
(and ``--order alternating``, ``--eta-schedule sqrt|power:P|path.py:NAME``, ``--regret``,
``--feedback sampled:K|sampled:exact --seed N``); under ``--feedback bandit:M`` a composition learns
from play (`._run_bandit`, whose handler sends the other feedback models here: ``-T`` counts rounds
of ``M`` episodes), writing what ``vlearn`` writes.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
from pathlib import Path

from .._outputs import check_apart, remove_created_parents
from .._text import printable
from ._commands import HELP
from ._defaults import BANDIT_RATES, DTYPE_NAMES
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


def parse_eta(text: str) -> float | str | tuple[float, ...]:
    """``--eta``: a positive number, ``theory`` or ``theory:PAPER`` (a theorem's rate, by the paper
    that proves it; ``theory`` is ``theory:mao2024``), or a comma-separated list of positive
    numbers (one per player: ``0.1,0.3``; the game's number of players is checked once the game is
    read)."""
    if text == "theory" or text.startswith("theory:"):
        from .._papers import parse_theory

        try:
            parse_theory(text)
        except ValueError as err:
            raise CliError(f"--eta: {err}") from None
        return text
    if "," in text:
        rates = []
        for part in (p.strip() for p in text.split(",")):
            if part == "theory" or part.startswith("theory:"):
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
    p.add_argument("-T", dest="T", required=True, help="number of iterations (under --feedback bandit:M, rounds of M episodes)")
    p.add_argument(
        "--eta",
        default=None,
        help="learning rate: a positive number (default 0.2), one per player (e.g. 0.1,0.3), or a theorem's rate by "
        "its paper, theory:PAPER ('theory' alone: theory:mao2024, Mao et al.'s Theorems 1 and 2; see 'markovgames "
        "algorithms show NAME')",
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
        "(estimates from K samples of a generative model, drawn afresh every iteration), sampled:exact "
        "(expectations: full's numbers) or bandit:M (learning from play: rounds of M episodes, each player seeing its "
        "own rewards and the states visited; writes what 'markovgames vlearn' writes; docs/vlearning.md)",
    )
    p.add_argument(
        "--bandit-rate",
        default=None,
        choices=BANDIT_RATES,
        help="under --feedback bandit:M: the learning rate at a state's c-th visiting round: 'decaying' (the default: "
        "min(eta, M / sqrt(c))) or 'constant' (eta)",
    )
    p.add_argument(
        "--ix",
        default=None,
        metavar="G",
        help="under --feedback bandit:M: the implicit exploration gamma of the loss estimates: 'decaying' (the default: "
        "gamma = (eta H / 2) / sqrt(c) at a state's c-th visiting round) or a constant number >= 0",
    )
    p.add_argument(
        "--bonus",
        default=None,
        metavar="C",
        help="under --feedback bandit:M: the constant c of the optimism bonus (a number >= 0; default 0)",
    )
    p.add_argument(
        "--seed",
        default=None,
        metavar="N",
        help="the seed of the random draws of --feedback sampled:K and bandit:M (a non-negative integer; default 0): "
        "the same seed gives the same run; unused where the feedback draws nothing",
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
        "--weighted-average",
        nargs="?",
        const="checkpoints",
        choices=("checkpoints", "all"),
        default=None,
        metavar="WHERE",
        help="also evaluate the state-wise weighted average of the iterates with the value update's own weights "
        "(smooth: alpha_T'^t, the average of Zhang et al. 2022 and Yang and Ma 2023; smooth-uniform: 1/T'; "
        "smooth-linear: 2t/(T'(T'+1)); stage: the last complete stage's mean), carried in the compiled loop: its "
        "value, Nash gap and, in a constant-sum game, duality gap, at every checkpoint (WHERE = checkpoints, the "
        "default) or at every prefix into curve.npz too (all: a best-response pass per prefix, per stage for the stage update)",
    )
    p.add_argument(
        "--uniform-average",
        "--average-iterate",
        dest="uniform_average",
        action="store_true",
        help="also evaluate, at every checkpoint T', the uniform average of the iterates pi^1..pi^T' (a product "
        "policy): its value, its Nash gap and, in a constant-sum game, its duality gap (exact, from the trajectory; "
        "--average-iterate is its former name)",
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
    eta = parse_eta("0.2" if args.eta is None else args.eta)
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
    _check_schedule_rates(schedule, eta, algorithm, game, scale, T, args.dtype)
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
        # The uniform average's option, under the name it had when the key was introduced.
        "average_iterate": args.uniform_average,
    }
    if args.weighted_average is not None:
        config["weighted_average"] = args.weighted_average
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
                    weighted_average=_average_prefixes(args.weighted_average, checkpoints),
                    order=args.order,
                    step_schedule=schedule,
                    regret=args.regret,
                    feedback=feedback,
                    seed=seed,
                )
            if isinstance(result, DiscountedRunResult):
                metrics = write_discounted_run_directory(staging, result, checkpoints, config, step_schedule=schedule)
            else:
                # The exact gaps and the uniform average read the trajectory's files again, checked,
                # never through the memory maps the run returns (a file truncated meanwhile is then an
                # error, not SIGBUS); a run that asks for neither reads nothing back.
                needs_trajectory = args.exact or args.uniform_average
                extras = _checkpoint_extras(read_mapped_trajectory(result), checkpoints, args) if needs_trajectory else None
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
        from ._run_tables import print_checkpoints, print_discounted_checkpoints

        (print_discounted_checkpoints if discounted else print_checkpoints)(metrics, args.out)
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
    iterates = (
        "--last-iterate and --weighted-average evaluate the last and the weighted average iterates of a discounted run exactly"
    )
    if args.exact:
        raise CliError(f"--exact: {game.name!r} is a discounted game, whose run has no output policy to evaluate; {iterates}")
    if args.uniform_average:
        raise CliError(
            f"--uniform-average: {game.name!r} is a discounted game; --weighted-average evaluates the weighted average "
            "iterate with its value update's weights (LEARNER+discounted-smooth-uniform weighs the iterates uniformly)"
        )
    if args.trajectory_tolerance is not None:
        raise CliError(
            f"--trajectory-tolerance: {game.name!r} is a discounted game, whose run has no output policy whose index "
            "mass it would bound; keep the whole trajectory or --no-trajectory"
        )
    if isinstance(eta, str):  # theory or theory:PAPER: no paper's rate is implemented for a discounted update
        from ..dynamics._algorithms import resolve_learning_rate

        try:
            resolve_learning_rate(eta, algorithm, game)
        except ValueError as err:
            raise CliError(f"--eta: {err}") from None


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


def _check_schedule_rates(schedule, eta, algorithm, game, horizon: float, T: int, dtype: str) -> None:
    """``--eta-schedule``: every rate ``eta f(t)`` within the limits of ``--eta``, at every ``t``,
    before any output is touched (the run checks it again; a user's function is called twice);
    ``horizon``: the bound on the utilities (``H``, a discounted game's ``1/(1 - gamma)``)."""
    from ..dynamics import max_learning_rate
    from ..dynamics._algorithms import resolve_learning_rate
    from ..dynamics._interplay import bounded_schedule

    scale, _ = resolve_learning_rate(eta, algorithm, game)
    try:
        bounded_schedule(schedule, (scale,), max_learning_rate(T, horizon, dtype), dtype, T + 1)
    except ValueError as err:
        raise CliError(f"--eta-schedule: {err}") from None


def _feedback(name: str):
    """``--feedback``: the feedback model (`markovgames.dynamics._feedback.parse_feedback`)."""
    from .._suggest import did_you_mean
    from ..dynamics._feedback import FEEDBACK_FORMS, parse_feedback

    try:
        return parse_feedback(name)
    except ValueError as err:
        if str(err).startswith("unknown feedback model"):  # 'run' takes bandit:M too (._run_bandit)
            forms = [*FEEDBACK_FORMS, "bandit:M"]
            hint = did_you_mean(name.partition(":")[0], [f.partition(":")[0] for f in forms])
            raise CliError(f"--feedback: unknown feedback model {name!r}{hint}; choose one of: {', '.join(forms)}") from None
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


def _average_prefixes(where: str | None, checkpoints: list[int]):
    """``run``'s ``weighted_average`` for ``--weighted-average WHERE``: the checkpoints, every prefix
    (``all``: ``True``, the run keeping every prefix), or none."""
    if where is None:
        return False
    return True if where == "all" else checkpoints


def _checkpoint_extras(result, checkpoints: list[int], args) -> dict[int, dict] | None:
    """The fields added to each checkpoint after the run: exact gaps (``--exact``) and the uniform
    average's (``--uniform-average``), from the trajectory read with checked reads."""
    from ..experiments import exact_checkpoint_gaps
    from ..experiments.rundirs._iterates import uniform_average_fields

    extras: dict[int, dict] = {t: {} for t in checkpoints}
    if args.exact:
        for t, fields in exact_checkpoint_gaps(result, checkpoints).items():
            extras[t].update(fields)
    if args.uniform_average:
        for t, fields in uniform_average_fields(result.game, result.policies, checkpoints).items():
            extras[t].update(fields)
    return extras


def _check_option_combinations(args) -> None:
    """Refuse options that contradict each other, before any work."""
    if args.exact and args.no_trajectory:
        raise CliError("--exact needs the trajectory; drop --no-trajectory")
    if args.uniform_average and args.no_trajectory:
        raise CliError(
            "--uniform-average needs the trajectory; drop --no-trajectory (--weighted-average needs none: the loop carries it)"
        )
    if args.uniform_average and args.trajectory_tolerance is not None:
        raise CliError("--uniform-average averages every iterate, which needs the whole trajectory; drop --trajectory-tolerance")
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
    # Values and both bounds per prefix (and both regrets with --regret, the weighted average's
    # values with --weighted-average all, and the samples drawn under sampled:K: one int64 each),
    # and a copy.
    drawn = args.feedback.startswith("sampled:") and args.feedback != "sampled:exact"
    every = args.weighted_average == "all"
    # A discounted run's curves: the value estimates (not the value and the two bounds).
    rows = (1 if hasattr(game, "discount") else 3) + (2 if args.regret else 0) + (2 if every else 0)
    curves = 2 * T * (rows * game.num_players * itemsize + (8 if drawn else 0))
    memory = physical_memory()
    if memory and curves > memory:
        raise CliError(
            f"-T: keeping the value and the certified bounds of all {T} prefixes takes about "
            f"{format_bytes(curves)}, more than this machine's {format_bytes(memory)}; choose a smaller T"
        )
    parts = run_directory_bytes(
        game, T, args.dtype, trajectory=not args.no_trajectory, regret=args.regret, samples=drawn, weighted_average=every
    )
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
