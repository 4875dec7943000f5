"""``markovgames solve``: an exact Markov CE or CCE by backward induction and linear programming."""

from __future__ import annotations

import shutil
import sys

from .._json import dumps
from .._outputs import check_apart, remove_created_parents
from .._text import markup_safe, printable
from ._commands import HELP
from ._errors import CliError, check_output_directory
from ._games import add_game_limits, check_game_limits

__all__ = ["add_solve_parser"]


def add_solve_parser(subparsers):
    p = subparsers.add_parser(
        "solve",
        help=HELP["solve"],
        description="Backward induction picking at each (h, s) a CE or CCE of the stage game r_h + P_h V_{h+1}.",
    )
    p.add_argument("--game", required=True, help="a built-in game name or a .json/.npz file")
    p.add_argument("--concept", required=True, choices=["ce", "cce"], help="correlated or coarse correlated equilibrium")
    p.add_argument(
        "--objective",
        default="welfare",
        help="welfare (default), max-min, feasibility, or player:<i> (maximise player i's value)",
    )
    p.add_argument("--out", required=True, help="output directory (policy.npz, solution.json, the game)")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory")
    p.add_argument("--quiet", action="store_true")
    add_game_limits(p)
    p.set_defaults(handler=_handle)
    return p


def _handle(args) -> int:
    # The library, NumPy and rich are imported here: building the parser must not load them (start-up time).
    import numpy as np
    from rich.console import Console

    from .._lock import directory_lock
    from ..experiments import check_output_directory_state
    from ..games import BUILTIN_GAMES, resolve_game
    from ..solvers import check_objective

    check_game_limits(args)
    game = resolve_game(args.game, max_bytes=args.max_bytes, max_entries=args.max_entries)
    try:  # checked before any output is prepared; the message names the option
        check_objective(args.objective, game.num_players)
    except ValueError as err:
        raise CliError(f"--{err}") from None
    check_output_directory(args.out, replaces=True)
    check_apart(args.out, [] if args.game in BUILTIN_GAMES else [args.game], "--out")  # never onto the game file
    check_output_directory_state(args.out, args.overwrite)  # before the lock: a refusal leaves nothing
    with remove_created_parents(args.out), directory_lock(args.out, "out"):
        solution, ce, cce = _solve_into(args, game)
    if not args.quiet:
        console = Console(file=sys.stdout)
        console.print(
            f"{args.concept.upper()} ({args.objective}) of {markup_safe(game.name)}: value {np.round(solution.value, 6).tolist()}, "
            f"welfare {solution.welfare:.6f}; exact CE gap {ce.gap:.2e}, exact CCE gap {cce.gap:.2e}"
        )
        console.print(f"wrote {printable(args.out)}/solution.json and policy.npz", soft_wrap=True, markup=False)
    return 0


def _solve_into(args, game):
    """Solve ``game`` and write the solution into ``args.out`` (whose lock the caller holds)."""
    import numpy as np

    from .._atomic import atomic_write_text
    from ..evaluation import exact_cce_gap, exact_ce_gap
    from ..experiments import finalize_output_directory, prepare_output_directory, versions, write_marker
    from ..games import save_game
    from ..solvers import solve_equilibrium

    staging = prepare_output_directory(args.out, args.overwrite)
    try:
        solution = solve_equilibrium(game, args.concept, args.objective)
        ce = exact_ce_gap(game, solution.policy)
        cce = exact_cce_gap(game, solution.policy)
        try:
            solution.policy.save(staging / "policy.npz")
        except OSError as err:
            # A full disk or a quota while the policy is written: the error names no file.
            raise CliError(f"--out {args.out}: cannot write {staging / 'policy.npz'}: {err.strerror or err}") from None
        save_game(game, staging / "game.json" if game.rewards.size < 200_000 else staging / "game.npz")
        record = {
            "game": game.name,
            "concept": args.concept,
            "objective": args.objective,
            "value": [float(v) for v in solution.value],
            "welfare": float(solution.welfare),
            "exact_ce_gap": float(ce.gap),
            "exact_ce_gap_per_player": [float(v) for v in ce.per_player],
            "exact_cce_gap": float(cce.gap),
            "exact_cce_gap_per_player": [float(v) for v in cce.per_player],
            "max_incentive_violation": float(solution.solver_status.max_incentive_violation),
            "values": np.asarray(solution.values).tolist(),
            "versions": versions(),
        }
        atomic_write_text(staging / "solution.json", dumps(record, str(staging / "solution.json"), indent=2) + "\n")
        write_marker(staging, "solve")
        finalize_output_directory(staging, args.out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return solution, ce, cce
