"""``markovgames run --feedback bandit:M``: a composition ``LEARNER+UPDATE`` learning from play.

One command for every feedback model: under ``bandit:M`` ``run`` runs the composition through
`markovgames.dynamics.run_vlearning` (docs/vlearning.md) and writes the directory that
``markovgames vlearn`` writes for it (`._vlearn.execute`): ``metrics.json``, ``policy.npz`` and the
game. ``-T`` counts rounds, as in a sweep: the run plays ``T M`` episodes, its learners update ``T``
times, and its ``--checkpoints T'`` are rounds (the output policy's prefixes), written in episodes
(``T' M``) as ``vlearn`` writes them. V-learning's own algorithms (``cce-v``, ``ce-v``, ``stage-v``)
stay ``vlearn``'s. The options that a run on bandit feedback cannot take are refused by name.

The ``run`` command's parser is `._run`'s with this module's handler, which sends the other feedback
models to `._run`'s handler (refusing first what only bandit feedback takes).
"""

from __future__ import annotations

import argparse

from ._errors import CliError
from ._run import add_run_parser as _add_run_parser

__all__ = ["add_run_parser", "is_bandit", "run_on_bandit_feedback", "refuse_bandit_options"]


def add_run_parser(subparsers) -> argparse.ArgumentParser:
    """``run``'s parser (`._run.add_run_parser`), its handler `handle`."""
    p = _add_run_parser(subparsers)
    p.set_defaults(handler=handle)
    return p


def handle(args) -> int:
    """``run``: under ``--feedback bandit:M`` `run_on_bandit_feedback`, else `._run`'s handler."""
    from ._run import _handle_run

    if is_bandit(args.feedback):
        return run_on_bandit_feedback(args)
    refuse_bandit_options(args)
    return _handle_run(args)


#: ``run``'s options that a run on bandit feedback cannot take: (the option as given, whether it
#: was given, why not).
_NOT_ON_BANDIT = (
    ("--order alternating", lambda a: a.order != "simultaneous", "every player's learners update once per round, together"),
    ("--eta-schedule", lambda a: a.eta_schedule is not None, "its learning rate is constant (--eta)"),
    (
        "--regret",
        lambda a: a.regret,
        "the regret curves are those of the played sequence under full or sampled feedback; a run from play records "
        "its output policy's value and certified gaps",
    ),
    (
        "--exact",
        lambda a: a.exact,
        "its output policy is written to policy.npz, whose exact gaps 'markovgames evaluate OUT --exact' computes",
    ),
    ("--last-iterate", lambda a: a.last_iterate, "it keeps no iterates to evaluate, only its output policy"),
    ("--average-iterate", lambda a: a.average_iterate, "it keeps no iterates to evaluate, only its output policy"),
    ("--trajectory-tolerance", lambda a: a.trajectory_tolerance is not None, "it keeps no trajectory, only its output policy"),
    ("--checkpoint-every", lambda a: a.checkpoint_every is not None, "it saves no intermediate state to resume from"),
    ("--resume", lambda a: a.resume, "it saves no intermediate state to resume from"),
)


def is_bandit(feedback: str) -> bool:
    """Whether ``--feedback`` names bandit feedback (``bandit:M``, or a malformed ``bandit...``)."""
    return feedback.partition(":")[0] == "bandit"


def refuse_bandit_options(args) -> None:
    """Refuse, naming the option, what only a run on bandit feedback takes (``--ix``, ``--bonus``)
    when the feedback is another."""
    for option, value, what in (
        ("--ix", args.ix, "the implicit exploration of the loss estimates"),
        ("--bonus", args.bonus, "the optimism bonus of the value estimates"),
    ):
        if value is not None:
            raise CliError(
                f"{option}: {what}, a setting of learning from play: give --feedback bandit:M (the feedback is {args.feedback!r})"
            )


def run_on_bandit_feedback(args) -> int:
    """``run`` under ``--feedback bandit:M``: the options checked, then `._vlearn.execute`."""
    from ..dynamics import get_algorithm
    from ..experiments import parse_checkpoints
    from ._games import check_game_limits
    from ._run import MAX_T, parse_eta, parse_seed, parse_T
    from ._vlearn import BanditRun, _number, _per_round, execute

    per_round = _per_round(args.feedback)
    for option, given, why in _NOT_ON_BANDIT:
        if given(args):
            raise CliError(f"{option}: a run on bandit feedback (--feedback {args.feedback}) cannot take it: {why}")
    if args.dtype != "float64":
        raise CliError(f"--dtype {args.dtype}: a run on bandit feedback (--feedback {args.feedback}) computes in float64")
    try:
        # V-learning's names are answered with 'markovgames vlearn' (get_algorithm says so).
        algorithm = get_algorithm(args.algorithm)
    except ValueError as err:
        raise CliError(f"--algorithm: {err}") from None
    rounds = parse_T(args.T)
    if rounds * per_round > MAX_T:
        raise CliError(
            f"-T: {rounds} rounds of {per_round} episodes (--feedback {args.feedback}) are {rounds * per_round:,} episodes, "
            f"more than the largest supported {MAX_T}; choose a smaller T"
        )
    eta = None
    if args.eta is not None:
        parsed = parse_eta(args.eta)
        if not isinstance(parsed, float):
            raise CliError(
                f"--eta: a run on bandit feedback takes one learning rate for every player (a number > 0), got {args.eta!r}"
            )
        eta = parsed
    checkpoints = parse_checkpoints(args.checkpoints, rounds)
    check_game_limits(args)
    return execute(
        BanditRun(
            game=args.game,
            algorithm_name=args.algorithm,
            algorithm=algorithm,
            episodes=rounds * per_round,
            per_round=per_round,
            seed=0 if args.seed is None else parse_seed(args.seed),
            bonus=_number(args.bonus, "--bonus", positive=False),
            eta=eta,
            ix=_number(args.ix, "--ix", positive=False),
            no_optimism=args.no_optimism,
            # Rounds, written in episodes as 'vlearn' writes them.
            checkpoints=tuple(per_round * k for k in checkpoints),
            out=args.out,
            overwrite=args.overwrite,
            quiet=args.quiet,
            max_bytes=args.max_bytes,
            max_entries=args.max_entries,
            count_option="-T",
        )
    )
