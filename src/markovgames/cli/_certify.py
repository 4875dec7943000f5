"""``markovgames certify``: the value and certified CE/CCE gaps of any policy sequence, every prefix.

``markovgames certify DIR --game NAME|FILE --value-update UPDATE --out OUT`` reads
``DIR/policy_{i}.npy`` (per player ``(T, H, S, A_i)``, row ``t - 1`` is ``pi^t``, made anywhere)
and writes ``OUT/metrics.json`` (the checkpoints, as ``run`` writes them), ``OUT/curve.npz``
(every prefix) and the game.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import re
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from .._files import read_npy
from .._json import dumps
from .._outputs import check_apart, file_kind, remove_created_parents
from .._text import printable
from ._commands import HELP
from ._errors import CliError, check_output_directory
from ._games import add_game_limits, check_game_limits
from ._progress import iteration_progress

if TYPE_CHECKING:
    import numpy as np

__all__ = ["add_certify_parser"]


def add_certify_parser(subparsers):
    p = subparsers.add_parser(
        "certify",
        help=HELP["certify"],
        description="Read DIR/policy_{i}.npy (per player (T, H, S, A_i), row t-1 = pi^t) and compute, for "
        "every prefix T', the value and the certified CE and CCE bounds of the output policy of the "
        "smooth (Algorithm 3, with the paper's, uniform or linear averaging) or stage-based (Algorithm 4) "
        "value update over that sequence (with smooth-uniform: the uniform average of the iterates).",
    )
    p.add_argument("policies", metavar="DIR", help="a directory with policy_0.npy, policy_1.npy, ... (one per player)")
    p.add_argument("--game", required=True, help="a built-in game name or a .json/.npz file")
    p.add_argument(
        "--value-update",
        required=True,
        choices=["smooth", "smooth-uniform", "smooth-linear", "stage"],
        help="whose output policy (the smooth update's averaging: the paper's, uniform or linear)",
    )
    p.add_argument("--out", required=True, help="output directory (metrics.json, curve.npz, the game)")
    p.add_argument("--checkpoints", default=None, help="comma-separated prefixes T' for metrics.json (default: decades and T)")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"], help="floating point precision")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    add_game_limits(p)
    p.set_defaults(handler=_handle)
    return p


def _load_policies(directory: Path, game) -> tuple[np.ndarray, ...]:
    """Each player's ``policy_i.npy``, its header checked against the game before it is read."""
    from ..experiments.rundirs._kinds import directory_kind, wrong_directory

    num_players = game.num_players
    if not directory.is_dir() or (not os.path.lexists(directory / "policy_0.npy") and directory_kind(directory) is not None):
        # Not a trajectory: a missing path (with the nearest one), a file, or another kind of directory.
        message = wrong_directory(directory, "a directory of policy_i.npy files (a trajectory)")
        if (directory / "trajectory" / "policy_0.npy").is_file():
            message += f"; its trajectory is {directory / 'trajectory'}"
        raise CliError(message)
    out: list[np.ndarray] = []
    for i in range(num_players):
        path = directory / f"policy_{i}.npy"
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise CliError(
                f"{path}: missing (the game has {num_players} players: policy_0.npy .. policy_{num_players - 1}.npy)"
            ) from None
        except OSError as err:
            raise CliError(f"{path}: cannot read: {err.strerror or err}") from None
        if not stat.S_ISREG(mode):
            raise CliError(f"{path}: exists but is {file_kind(mode)}, not a regular file; a policy is a .npy file")
        try:
            # Read, never memory-mapped: a file truncated meanwhile is an error, not a SIGBUS.
            out.append(read_npy(path, functools.partial(_accept, path, game=game, i=i, before=out)))
        except OSError as err:
            raise CliError(f"{path}: cannot read: {err.strerror or err}") from None
        except ValueError as err:
            raise CliError(f"{path}: not a readable .npy array ({err})") from None
    extra = directory / f"policy_{num_players}.npy"
    if extra.exists():
        raise CliError(f"{extra}: the game has {num_players} players, but the directory holds more policy files")
    return tuple(out)


def _accept(path: Path, shape: tuple[int, ...], dtype: np.dtype, *, game, i: int, before: list[np.ndarray]) -> None:
    """Refuse, from its header, a policy file that cannot be player ``i``'s (its data unread)."""
    want = (game.horizon, game.num_states, game.num_actions[i])
    if len(shape) != 4 or shape[1:] != want:
        raise CliError(f"{path}: expected shape (T, H, S, A_{i}) = (T, {', '.join(map(str, want))}), got {shape}")
    if dtype.kind != "f":
        raise CliError(f"{path}: expected floating-point probabilities, got dtype {dtype}")
    if before and shape[0] != before[0].shape[0]:
        raise CliError(f"{path}: {shape[0]} iterations, but policy_0.npy has {before[0].shape[0]}")


def _handle(args) -> int:
    # The library and NumPy are imported here: building the parser must not load them (start-up time).
    import numpy as np

    from .._lock import directory_lock
    from ..experiments import check_output_directory_state, parse_checkpoints
    from ..games import BUILTIN_GAMES, resolve_game

    check_game_limits(args)
    game = resolve_game(args.game, max_bytes=args.max_bytes, max_entries=args.max_entries)
    directory = Path(args.policies)
    policies = _load_policies(directory, game)
    T = int(policies[0].shape[0]) if policies[0].ndim == 4 else 0
    checkpoints = parse_checkpoints(args.checkpoints, max(T, 1))
    check_output_directory(args.out, replaces=True)
    # The output directory is replaced as a whole: never one that holds the policies or the game.
    check_apart(args.out, [directory, *([] if args.game in BUILTIN_GAMES else [args.game])], "--out")
    check_output_directory_state(Path(args.out), args.overwrite)  # before the lock: a refusal leaves nothing
    from ..dynamics import certify

    # Computed before the output is touched: a policy refused on the way leaves nothing behind.
    with iteration_progress(max(T, 1), f"certify {directory.name or directory}", enabled=not args.quiet) as advance:
        try:
            curve = certify(game, policies, args.value_update, dtype=args.dtype, progress=advance)
        except ValueError as err:
            # Name the file: the library calls the arrays policies[i].
            message = re.sub(r"^policies\[(\d+)\]", lambda m: str(directory / f"policy_{m.group(1)}.npy"), str(err))
            raise CliError(message if message != str(err) else f"{directory}: {err}") from None
    # Then written under the directory's lock, as every writer does: a run writing there (whose
    # staging directory this would replace) or a second certify is refused.
    with remove_created_parents(args.out), directory_lock(args.out, "out"):
        metrics = _write_certificate(args, game, directory, curve, checkpoints)
    if not args.quiet:
        for record in metrics["checkpoints"]:
            print(
                f"T' = {record['T']:>10}  value {np.round(record['value'], 6).tolist()}  "
                f"certified CE gap {record['certified_ce_gap']:.3e}  certified CCE gap {record['certified_cce_gap']:.3e}"
            )
        print(f"wrote {printable(args.out)}/metrics.json and curve.npz")
    return 0


def _write_certificate(args, game, directory: Path, curve, checkpoints) -> dict:
    """Write ``curve`` into ``args.out`` (whose lock the caller holds); return the metrics written."""
    import numpy as np

    from .._atomic import atomic_write_text
    from ..experiments import checkpoint_records, finalize_output_directory, prepare_output_directory, versions, write_marker
    from ..games import save_game

    staging = prepare_output_directory(Path(args.out), args.overwrite)
    try:
        game_file = "game.json" if game.rewards.size < 200_000 else "game.npz"
        save_game(game, staging / game_file)
        np.savez(
            staging / "curve.npz",
            value=curve.value,
            certified_ce_bound=curve.certified_ce_bound,
            certified_cce_bound=curve.certified_cce_bound,
        )
        metrics = {
            "game": game.name,
            "policies": str(directory),
            "value_update": curve.value_update,
            "T": curve.T,
            "dtype": args.dtype,
            "checkpoints": checkpoint_records(curve, checkpoints),
            "game_file": game_file,
            "versions": versions(),
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "wall_time_s": curve.wall_time_s,
            "compile_time_s": curve.compile_time_s,
        }
        atomic_write_text(staging / "metrics.json", dumps(metrics, str(staging / "metrics.json"), indent=2) + "\n")
        write_marker(staging, "certify")  # what --overwrite of a later certify recognises
        finalize_output_directory(staging, Path(args.out))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return metrics
