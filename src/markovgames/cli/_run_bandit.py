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
    """``run``'s parser (`._run.add_run_parser`), its handler `handle`; it records the options that
    a run on bandit feedback does not take (every option but `_ON_BANDIT`'s, with its default)."""
    p = _add_run_parser(subparsers)
    others = tuple(
        (action.dest, max(action.option_strings, key=len), action.default)
        for action in p._actions
        if action.option_strings and action.dest not in _ON_BANDIT and not isinstance(action, argparse._HelpAction)
    )
    p.set_defaults(handler=handle, not_on_bandit=others)
    return p


def handle(args) -> int:
    """``run``: under ``--feedback bandit:M`` `run_on_bandit_feedback`, else `._run`'s handler."""
    from ._run import _handle_run

    if is_bandit(args.feedback):
        return run_on_bandit_feedback(args)
    refuse_bandit_options(args)
    return _handle_run(args)


#: ``run``'s options that a run on bandit feedback takes (by their ``dest``): every other one,
#: given, is refused by name (`_refuse_the_others`), an option added to ``run`` later included.
_ON_BANDIT = frozenset(
    {"game", "algorithm", "T", "eta", "feedback", "seed", "checkpoints", "out", "no_optimism", "no_trajectory"}
    | {"overwrite", "quiet", "max_bytes", "max_entries", "ix", "bonus", "dtype"}
)

#: Why a run on bandit feedback does not take an option (by its ``dest``); one that is not here
#: is a setting of the compiled loop of full and sampled feedback.
_WHY_NOT = {
    "order": "every player's learners update once per round, together",
    "eta_schedule": "its learning rate's schedule over a state's visits is --bandit-rate's",
    "regret": "the regret curves are those of the played sequence under full or sampled feedback; a run from play "
    "records its output policy's value and certified gaps",
    "exact": "its output policy is written to policy.npz, whose exact gaps 'markovgames evaluate OUT --exact' computes",
    "last_iterate": "it keeps no iterates to evaluate, only its output policy",
    "average_iterate": "it keeps no iterates to evaluate, only its output policy",
    "trajectory_tolerance": "it keeps no trajectory, only its output policy",
    "checkpoint_every": "it saves no intermediate state to resume from",
    "resume": "it saves no intermediate state to resume from",
}


def _refuse_the_others(args) -> None:
    """Refuse the first option given that a run on bandit feedback does not take, naming it."""
    for dest, option, default in getattr(args, "not_on_bandit", ()):
        value = getattr(args, dest, default)
        if value == default:
            continue
        shown = option if isinstance(value, bool) else f"{option} {value}"
        why = _WHY_NOT.get(dest, "it is a setting of the compiled loop of full and sampled feedback")
        raise CliError(f"{shown}: a run on bandit feedback (--feedback {args.feedback}) cannot take it: {why}")


def is_bandit(feedback: str) -> bool:
    """Whether ``--feedback`` names bandit feedback (``bandit:M``, or a malformed ``bandit...``)."""
    return feedback.partition(":")[0] == "bandit"


def refuse_bandit_options(args) -> None:
    """Refuse, naming the option, what only a run on bandit feedback takes (``--ix``, ``--bonus``)
    when the feedback is another."""
    for option, value, what in (
        ("--bandit-rate", args.bandit_rate, "the schedule of the learning rate over a state's visits"),
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
    from ._vlearn import BanditRun, _ix, _number, _per_round, execute

    per_round = _per_round(args.feedback)
    _refuse_the_others(args)
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
            ix=_ix(args.ix),
            bandit_rate=args.bandit_rate,
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
