"""The ``games`` subcommand: list, show, validate, hash, export and generate Markov games.

``markovgames games list``
    The built-in games with their sizes ``N, H, S, A`` and a one-line description; then the
    built-in discounted games with ``N, gamma, S, A``.
``markovgames games show NAME|FILE``
    Sizes and a summary; for small games the reward vector ``r_h(s, a)`` and the next-state
    distribution ``P_h(. | s, a)`` of every joint action ``a``, per step ``h`` and state ``s``.
``markovgames games validate FILE``
    Reads the file with every check of [`markovgames.games.load_game`][markovgames.games.load_game].
``markovgames games hash NAME|FILE``
    Prints the game's content hash, the ``sha256`` of sweep manifests and results
    ([`markovgames.experiments.game_content_hash`][markovgames.experiments.game_content_hash]).
``markovgames games export NAME --out FILE``
    Writes a built-in game (or converts a game file) to ``.json`` or ``.npz``.
``markovgames games random --players N --horizon H --states S --actions 2,3 --seed K --out FILE``
    Writes [`markovgames.games.random_game`][markovgames.games.random_game] (rewards i.i.d. Uniform[0, 1], transition rows
    i.i.d. Dirichlet(c * ones(S))); ``--zero-sum`` makes a two-player constant-sum game,
    ``r_1 = 1 - r_0``. ``--discount G`` in place of ``--horizon H`` writes a discounted game
    ([`markovgames.games.random_discounted_game`][markovgames.games.random_discounted_game]).

``show``, ``validate``, ``hash`` and ``export`` take finite-horizon and discounted games alike.

Handlers have the signature ``(args) -> int`` and raise `CliError` or
[`GameValidationError`][markovgames.games.GameValidationError] on user errors; the entry point turns them into
a one-line message and exit code 2.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from .._lock import directory_lock
from .._outputs import check_apart, check_replaceable_file
from .._text import markup_safe, printable
from ._commands import HELP
from ._defaults import DEFAULT_MAX_FILE_BYTES, GAME_FILE_SUFFIXES, MAX_GAME_ENTRIES, REWARD_DISTRIBUTIONS
from ._errors import CliError

if TYPE_CHECKING:
    from rich.console import Console

    from ..games import DiscountedMarkovGame, MarkovGame

# The games (NumPy) and rich are imported by the handlers that use them: the parsers are built
# for every command, and 'markovgames --help' and '--version' must start at once.

__all__ = ["add_games_parser", "add_game_limits", "check_game_limits"]

# `games show` prints per-(h, s) tables only below these sizes unless --full is given;
# beyond them a table per state is too long to read and a summary says more.
_SHOW_MAX_JOINT_ACTIONS = 36
_SHOW_MAX_TABLES = 12
_SHOW_MAX_STATES_COLUMNS = 8


def add_games_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``games`` and its subcommands on ``subparsers``.

    Parameters
    ----------
    subparsers
        The object returned by ``ArgumentParser.add_subparsers()``.

    Returns
    -------
    argparse.ArgumentParser
        The ``games`` parser.
    """
    games = subparsers.add_parser(
        "games",
        help=HELP["games"],
        description="List, show, validate, export and generate Markov games.",
    )
    sub = games.add_subparsers(dest="games_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("list", help="list the built-in games", description="List the built-in games.")
    p.set_defaults(handler=cmd_list)

    p = sub.add_parser(
        "show",
        help="show a game's sizes, rewards and transitions",
        description="Show a built-in game or a game file: sizes, and for small games the rewards and "
        "next-state distribution of every joint action, per step and state.",
    )
    p.add_argument("game", metavar="NAME|FILE", help="a built-in game name or a .json/.npz game file")
    p.add_argument("--full", action="store_true", help="print the tables even for large games")
    p.add_argument("--precision", type=int, default=4, metavar="DIGITS", help="significant digits (default 4)")
    add_game_limits(p)
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser(
        "validate",
        help="check a game file",
        description="Read a .json or .npz game file with every check; print a one-line verdict.",
    )
    p.add_argument("file", metavar="FILE")
    add_game_limits(p)
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser(
        "hash",
        help="print a game's content hash (the sha256 of sweep manifests and results)",
        description="Print the SHA-256 content hash of a built-in game or a game file: the 'sha256' that sweep "
        "manifests, run files and results.parquet use for the game. It covers the sizes, the initial state, the "
        "rewards and the transitions (not the name or the description); see docs/howto-sweep.md.",
    )
    p.add_argument("game", metavar="NAME|FILE", help="a built-in game name or a .json/.npz game file")
    add_game_limits(p)
    p.set_defaults(handler=cmd_hash)

    p = sub.add_parser(
        "export",
        help="write a built-in game (or convert a game file) to .json or .npz",
        description="Write a built-in game, or a game file converted, to FILE (.json or .npz by suffix).",
    )
    p.add_argument("game", metavar="NAME", help="a built-in game name (or a game file to convert)")
    p.add_argument("--out", required=True, metavar="FILE", help="output file, .json or .npz")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    add_game_limits(p)
    p.set_defaults(handler=cmd_export)

    p = sub.add_parser(
        "random",
        help="write a random game",
        description="Write a random game: rewards i.i.d. Uniform[0,1] (or Bernoulli(1/2)), each transition "
        "row i.i.d. Dirichlet(c * ones(S)); with --successors K a sparse game whose rows have K distinct "
        "uniformly drawn successor states with Dirichlet(c * ones(K)) probabilities; with --zero-sum a two-player "
        "constant-sum game, player 1's rewards being 1 minus player 0's. The same seed gives the same game.",
    )
    p.add_argument("--players", type=int, required=True, metavar="N")
    p.add_argument("--horizon", type=int, default=None, metavar="H", help="a finite-horizon game of H steps")
    p.add_argument(
        "--discount",
        default=None,
        metavar="G",
        help="instead of --horizon: a discounted infinite-horizon game with discount G in [0, 1)",
    )
    p.add_argument("--states", type=int, required=True, metavar="S")
    p.add_argument(
        "--actions", required=True, metavar="A", help="actions per player, comma-separated (e.g. 2,3), or one number for all"
    )
    p.add_argument("--seed", type=int, required=True, metavar="K", help="non-negative integer seed")
    p.add_argument("--out", required=True, metavar="FILE", help="output file, .json or .npz")
    p.add_argument("--concentration", type=float, default=1.0, metavar="C", help="Dirichlet concentration c > 0 (default 1)")
    p.add_argument("--rewards", choices=REWARD_DISTRIBUTIONS, default="uniform", help="reward law (default uniform)")
    p.add_argument("--initial-state", type=int, default=0, metavar="S0", help="initial state (default 0)")
    p.add_argument(
        "--successors", type=int, default=None, metavar="K", help="write a sparse game with K successor states per row"
    )
    p.add_argument(
        "--zero-sum",
        action="store_true",
        help="a two-player constant-sum game: player 1's rewards are 1 minus player 0's (needs --players 2)",
    )
    p.add_argument("--name", default=None, help="game name (default: sizes and seed)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument(
        "--max-entries", type=int, default=MAX_GAME_ENTRIES, metavar="N", help="refuse larger games (default %(default)s)"
    )
    p.set_defaults(handler=cmd_random)
    return games


def add_game_limits(p: argparse.ArgumentParser) -> None:
    """The ``--max-bytes`` and ``--max-entries`` options of a command that reads a game file."""
    p.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        metavar="N",
        help=f"refuse game files larger than N bytes (default: {DEFAULT_MAX_FILE_BYTES} for JSON; "
        ".npz files are bounded by --max-entries)",
    )
    p.add_argument(
        "--max-entries",
        type=int,
        default=MAX_GAME_ENTRIES,
        metavar="N",
        help="refuse games whose rewards or transitions have more than N entries (default %(default)s)",
    )


def _console() -> Console:
    from rich.console import Console

    # Created per call so that it writes to the sys.stdout of the moment (tests capture it).
    return Console(highlight=False)


def _sizes(game: MarkovGame | DiscountedMarkovGame) -> str:
    from ..games import DiscountedMarkovGame

    length = f"gamma={game.discount:g}" if isinstance(game, DiscountedMarkovGame) else f"H={game.horizon}"
    return f"N={game.num_players}, {length}, S={game.num_states}, A={'x'.join(str(a) for a in game.num_actions)}"


def _check_out(path_text: str, force: bool, inputs: tuple[str, ...] = ()) -> Path:
    """The game file to write: a new name, or with ``--force`` a regular file that is not an input."""
    path = Path(path_text)
    if path.suffix.lower() not in GAME_FILE_SUFFIXES:
        raise CliError(f"--out {path_text}: expected a {' or '.join(GAME_FILE_SUFFIXES)} file name")
    check_apart(path, inputs, "--out")  # a conversion never replaces the file it reads
    if path.is_file() and not path.is_symlink() and not force:
        raise CliError(f"--out {path_text}: file exists (use --force to overwrite)")
    check_replaceable_file(path, "--out", force, "--force")  # never a link, a FIFO or a device
    if not path.parent.is_dir():
        raise CliError(f"--out {path_text}: directory {path.parent} does not exist")
    return path


def _write(game: MarkovGame | DiscountedMarkovGame, out: Path, force: bool) -> None:
    """Write the game file under its lock (one writer per name), replacing a file only with ``--force``."""
    from ..games import save_game

    with directory_lock(out, "--out", noun="file"):
        save_game(game, out, replace=force)


def check_game_limits(args: argparse.Namespace) -> None:
    """Refuse a non-positive ``--max-bytes`` or ``--max-entries``."""
    for option in ("max_bytes", "max_entries"):
        value = getattr(args, option, None)
        if value is not None and value < 1:
            raise CliError(f"--{option.replace('_', '-')}: must be positive, got {value}")


# ------------------------------------------------------------------------------- handlers
def cmd_list(args: argparse.Namespace) -> int:
    """``games list``: a table of the built-in games."""
    from rich.table import Table

    from ..games import BUILTIN_GAMES, get_builtin

    table = Table(title="Built-in games", title_justify="left")
    for column in ("name", "N", "H", "S", "A"):
        table.add_column(column, justify="left" if column == "name" else "right", no_wrap=True)
    table.add_column("description")
    for name in BUILTIN_GAMES:
        game = get_builtin(name)
        table.add_row(
            name,
            str(game.num_players),
            str(game.horizon),
            str(game.num_states),
            "x".join(str(a) for a in game.num_actions),
            game.description,
        )
    _console().print(table)
    _list_discounted()
    return 0


def _list_discounted() -> None:
    """The second table of ``games list``: the built-in discounted games."""
    from rich.table import Table

    from ..games import DISCOUNTED_GAMES, get_discounted_builtin

    table = Table(title="Built-in discounted games", title_justify="left")
    for column in ("name", "N", "gamma", "S", "A"):
        table.add_column(column, justify="left" if column == "name" else "right", no_wrap=True)
    table.add_column("description")
    for name in DISCOUNTED_GAMES:
        game = get_discounted_builtin(name)
        table.add_row(
            name,
            str(game.num_players),
            f"{game.discount:g}",
            str(game.num_states),
            "x".join(str(a) for a in game.num_actions),
            game.description,
        )
    _console().print(table)


def cmd_validate(args: argparse.Namespace) -> int:
    """``games validate FILE``: load with every check and print a one-line verdict."""
    from ..games import load_any_game

    check_game_limits(args)
    game = load_any_game(args.file, max_bytes=args.max_bytes, max_entries=args.max_entries)
    print(f"{printable(args.file)}: valid ({_sizes(game)})")
    return 0


def cmd_hash(args: argparse.Namespace) -> int:
    """``games hash NAME|FILE``: print the content hash that sweeps record for the game."""
    from ..experiments import game_content_hash
    from ..games import resolve_any_game

    check_game_limits(args)
    game = resolve_any_game(args.game, max_bytes=args.max_bytes, max_entries=args.max_entries)
    print(f"{game_content_hash(game)}  {printable(args.game)}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``games export NAME --out FILE``: write a built-in game (or convert a file)."""
    from ..games import BUILTIN_GAMES, DISCOUNTED_GAMES, resolve_any_game

    check_game_limits(args)
    builtin = args.game in BUILTIN_GAMES or args.game in DISCOUNTED_GAMES
    out = _check_out(args.out, args.force, () if builtin else (args.game,))
    game = resolve_any_game(args.game, max_bytes=args.max_bytes, max_entries=args.max_entries)
    _write(game, out, args.force)
    print(f"wrote {printable(out)} ({printable(game.name)}: {_sizes(game)})")
    return 0


def _parse_actions(text: str, players: int) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise CliError(f"--actions: expected comma-separated positive integers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise CliError(f"--actions: every number of actions must be at least 1, got {text!r}")
    if len(values) == 1:
        return values * players
    if len(values) != players:
        raise CliError(f"--actions: expected 1 or {players} (--players) numbers, got {len(values)} in {text!r}")
    return values


def cmd_random(args: argparse.Namespace) -> int:
    """``games random ...``: write a seeded random game (discounted with ``--discount``)."""
    discount = _check_length(args)
    for option in ("players", "horizon", "states"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise CliError(f"--{option}: must be at least 1, got {value}")
    if args.seed < 0:
        raise CliError(f"--seed: must be non-negative, got {args.seed}")
    if not args.concentration > 0:
        raise CliError(f"--concentration: must be positive, got {args.concentration}")
    if args.successors is not None and not 1 <= args.successors <= args.states:
        raise CliError(f"--successors: must be in 1..--states = {args.states}, got {args.successors}")
    if not 0 <= args.initial_state < args.states:
        raise CliError(f"--initial-state: must be in 0..{args.states - 1} (--states {args.states}), got {args.initial_state}")
    if args.zero_sum and args.players != 2:
        raise CliError(f"--zero-sum: a zero-sum game has two players, got --players {args.players}")
    check_game_limits(args)
    actions = _parse_actions(args.actions, args.players)
    out = _check_out(args.out, args.force)
    # Over --max-entries: the entry point's message names the option.
    game = _random_game(args, actions) if discount is None else _random_discounted_game(args, actions, discount)
    _write(game, out, args.force)
    print(f"wrote {printable(out)} ({printable(game.name)}: {_sizes(game)})")
    return 0


def _check_length(args: argparse.Namespace) -> float | None:
    """Exactly one of ``--horizon H`` and ``--discount G``; the discount checked (a number in ``[0, 1)``)."""
    from ..games import GameValidationError, check_discount

    if (args.horizon is None) == (args.discount is None):
        raise CliError(
            "--horizon/--discount: give exactly one, --horizon H (a finite-horizon game) or --discount G "
            "(a discounted game), got " + ("both" if args.horizon is not None else "neither")
        )
    if args.discount is None:
        return None
    try:
        number = float(args.discount)
    except ValueError:
        raise CliError(f"--discount: expected a number in [0, 1), got {args.discount!r}") from None
    try:
        return check_discount(number, "--discount")
    except GameValidationError as err:
        raise CliError(str(err)) from None


def _random_discounted_game(args: argparse.Namespace, actions, discount: float):
    from ..games import random_discounted_game

    return random_discounted_game(
        args.players,
        args.states,
        actions,
        discount,
        seed_or_rng=args.seed,
        reward_distribution=args.rewards,
        transition_concentration=args.concentration,
        initial_state=args.initial_state,
        name=args.name,
        max_entries=args.max_entries,
        num_successors=args.successors,
        zero_sum=args.zero_sum,
    )


def _random_game(args: argparse.Namespace, actions):
    from ..games import random_game

    return random_game(
        args.players,
        args.horizon,
        args.states,
        actions,
        seed_or_rng=args.seed,
        reward_distribution=args.rewards,
        transition_concentration=args.concentration,
        initial_state=args.initial_state,
        name=args.name,
        max_entries=args.max_entries,
        num_successors=args.successors,
        zero_sum=args.zero_sum,
    )


def cmd_show(args: argparse.Namespace) -> int:
    """``games show NAME|FILE``: sizes, a summary, and for small games per-(h, s) tables."""
    import numpy as np
    from rich.table import Table

    from ..games import DiscountedMarkovGame, resolve_any_game

    check_game_limits(args)
    if args.precision < 1:
        raise CliError(f"--precision: must be at least 1, got {args.precision}")
    game = resolve_any_game(args.game, max_bytes=args.max_bytes, max_entries=args.max_entries)
    if isinstance(game, DiscountedMarkovGame):
        from ._games_show import show_discounted

        show_discounted(_console(), game, args.precision, args.full)
        return 0
    console = _console()
    digits = args.precision

    def num(x: float) -> str:
        return f"{x:.{digits}g}"

    # Names and descriptions come from files: markup and control characters are shown literally.
    title = f"[bold]{markup_safe(game.name)}[/bold]" + (f": {markup_safe(game.description)}" if game.description else "")
    console.print(title, markup=True)
    console.print(
        f"{game.num_players} players, horizon H={game.horizon}, {game.num_states} states, "
        f"actions A={'x'.join(str(a) for a in game.num_actions)} ({game.num_joint_actions} joint), "
        f"initial state {game.initial_state}",
        markup=False,
    )

    # Time-homogeneity: one set of tables serves every step when nothing depends on h.
    rewards_homogeneous = bool(np.all(game.rewards == game.rewards[:1]))
    if game.is_sparse:
        # Large sparse games have no dense array to compare; the canonical form is unique per kernel.
        canon = game.sparse_transitions.canonical()
        transitions_homogeneous = bool(
            np.all(canon.successors == canon.successors[:1]) and np.all(canon.probabilities == canon.probabilities[:1])
        )
        probs = game.sparse_transitions.probabilities
    else:
        transitions_homogeneous = bool(np.all(game.transitions == game.transitions[:1]))
        probs = game.transitions
    homogeneous = rewards_homogeneous and transitions_homogeneous

    r = game.rewards
    reward_lines = [
        f"  player {i}: min {num(r[:, i].min())}, mean {num(r[:, i].mean())}, max {num(r[:, i].max())}"
        for i in range(game.num_players)
    ]
    console.print("rewards: " + ("the same at every step" if rewards_homogeneous else "depend on the step"), markup=False)
    for line in reward_lines:
        console.print(line, markup=False)

    p = probs
    support = (p > 0).sum(axis=-1)
    num_rows = support.size
    deterministic = int((support == 1).sum())
    console.print(
        "transitions: "
        + ("the same at every step" if transitions_homogeneous else "depend on the step")
        + f"; {deterministic} of {num_rows} rows deterministic; "
        f"successor states per row: mean {num(support.mean())}, max {int(support.max())}; "
        f"smallest positive probability {num(p[p > 0].min())}"
        + (f"; stored sparse, {game.sparse_transitions.num_successors} entries per row" if game.is_sparse else ""),
        markup=False,
    )

    steps = [0] if homogeneous else list(range(game.horizon))
    small = (
        game.num_joint_actions <= _SHOW_MAX_JOINT_ACTIONS
        and len(steps) * game.num_states <= _SHOW_MAX_TABLES
        and game.num_states <= _SHOW_MAX_STATES_COLUMNS
    )
    if not (small or args.full):
        console.print("(game too large for per-state tables; use --full to print them)", markup=False)
        return 0

    joint_actions = list(itertools.product(*(range(a) for a in game.num_actions)))
    for h in steps:
        for s in range(game.num_states):
            step_label = "every step" if homogeneous else f"step h={h}"
            table = Table(title=f"{step_label}, state s={s}", title_justify="left")
            for i in range(game.num_players):
                table.add_column(f"a_{i}", justify="right")
            for i in range(game.num_players):
                table.add_column(f"r_{i}", justify="right")
            if game.num_states <= _SHOW_MAX_STATES_COLUMNS:
                for s_next in range(game.num_states):
                    table.add_column(f"P(s'={s_next})", justify="right")
            else:
                table.add_column("P(s' | s, a) (nonzero)")
            for a in joint_actions:
                row = [str(k) for k in a]
                row += [num(r[(h, i, s, *a)]) for i in range(game.num_players)]
                dist = p[(h, s, *a)]
                if game.num_states <= _SHOW_MAX_STATES_COLUMNS:
                    row += [num(x) for x in dist]
                else:
                    row.append(", ".join(f"{k}: {num(x)}" for k, x in enumerate(dist) if x > 0))
                table.add_row(*row)
            console.print(table)
    return 0
