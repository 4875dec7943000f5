"""``markovgames reproduce``: the paper's Section 5 in one command."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from .._text import printable
from ._commands import HELP
from ._errors import CliError, check_output_directory
from ._run import parse_T
from ._signals import raise_if_terminated

__all__ = ["add_reproduce_parser"]


def add_reproduce_parser(subparsers):
    p = subparsers.add_parser(
        "reproduce",
        help=HELP["reproduce"],
        description="Run smooth_ce, stage_cce and smooth_cce (eta=0.2) on the paper's game, and their non-optimistic "
        "baselines; write Figures 1 to 3 (the gaps, gap x T, optimism on and off), data and REPORT.md.",
    )
    p.add_argument("--out", default="reproduction", help="output directory (default: ./reproduction)")
    p.add_argument("-T", dest="T", default="100000", help="iterations per run (default 100000)")
    p.add_argument("--eta", default="0.2", help="constant learning rate (default 0.2, as in the paper)")
    p.add_argument("--no-exact", action="store_true", help="skip the exact gaps (certified gaps only)")
    p.add_argument("--no-baselines", action="store_true", help="skip the non-optimistic baselines")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(handler=_handle)
    return p


def _handle(args) -> int:
    # The library and rich are imported here: building the parser must not load them (start-up time).
    from rich.console import Console

    from .._errors import ArgumentError
    from .._lock import check_not_held, directory_lock
    from ..dynamics import max_learning_rate
    from ..experiments import reproduce, write_marker
    from ..experiments._reproduce import check_reproduction_memory
    from ..games import paper_game

    T = parse_T(args.T)
    try:
        eta = float(args.eta)
    except ValueError:
        raise CliError(f"--eta: expected a positive number, got {args.eta!r}") from None
    if not eta > 0 or eta == float("inf"):
        raise CliError(f"--eta: must be a positive finite number, got {args.eta!r}")
    limit = max_learning_rate(T, paper_game().horizon)
    if eta > limit:
        raise CliError(f"--eta: {eta:g} is too large for -T {T}; at most {limit:.3g}")
    try:  # before anything runs: which limit a T exceeds, and by how much
        check_reproduction_memory(T, exact=not args.no_exact, baselines=not args.no_baselines)
    except ArgumentError as err:
        raise CliError(f"-T{str(err).removeprefix('T')}".replace(" T at most", " -T at most")) from None
    check_output_directory(args.out)
    # While another reproduction writes there, its directory is half made (no marker yet): the
    # answer is then the lock's, not "holds no reproduction".
    check_not_held(args.out, "out")
    _check_foreign(Path(args.out))
    console = Console(file=sys.stderr)
    show = not args.quiet

    def progress(label, done, total):
        raise_if_terminated()  # a SIGTERM whose first exception was swallowed (._signals)
        if show and done == total:
            console.print(f"  {label}: done ({total:,} {'iterations' if 'exact' not in label else 'checkpoints'})")

    if show:
        # soft_wrap: a path is never broken across lines (off a terminal rich wraps at 80 columns).
        console.print(
            f"Reproducing Mao et al. (2024), Section 5: T = {T:,}, eta = {eta} -> {printable(args.out)}/",
            soft_wrap=True,
            markup=False,
        )
    created = not Path(args.out).exists()
    with directory_lock(args.out, "out"):
        _check_foreign(Path(args.out))  # again, under the lock
        try:
            # What a later reproduction into it recognises. A new directory appears with its marker
            # already inside (made under a temporary name beside it, then renamed): a command killed
            # at any moment leaves no directory that a later one would call foreign.
            if created:
                _make_marked(Path(args.out), write_marker)
            else:
                write_marker(Path(args.out), "reproduce")
            result = reproduce(
                args.out, T=T, eta=eta, exact=not args.no_exact, baselines=not args.no_baselines, progress=progress
            )
        except BaseException:
            if created:  # interrupted or failed: a directory this call made holds nothing finished
                shutil.rmtree(args.out, ignore_errors=True)
            raise
    out = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    for claim in result.claims:
        mark = {True: "[green]holds[/green]", False: "[red]does not hold[/red]", None: "[yellow]undecided[/yellow]"}[
            claim["holds"]
        ]
        out.print(f"- {claim['claim']}: {mark} ({claim['evidence']} gaps)")
    out.print(f"Report: {printable(result.out_dir / 'REPORT.md')}", soft_wrap=True, markup=False)
    return 0


def _make_marked(out: Path, write_marker) -> None:
    """Make the new directory ``out`` with its ``reproduce`` marker in one step (a rename)."""
    import os
    import secrets

    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f".{out.name}.{secrets.token_hex(6)}.tmp"
    staging.mkdir()
    try:
        write_marker(staging, "reproduce")
        os.rename(staging, out)  # refused (OSError) where something not empty appeared at out meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


#: A marker being written (`markovgames._atomic`'s temporary name for ``.markovgames``): what a
#: command killed while writing the marker into an existing empty directory leaves there.
_MARKER_BEING_WRITTEN = re.compile(r"\.\.markovgames\.[0-9a-f]{12}\.tmp")


def _check_foreign(out: Path) -> None:
    """Refuse an output directory that holds anything but an earlier reproduction.

    A reproduction replaces its own files in place (``REPORT.md``, the figures, the curves): it
    must not mix them into a run or a sweep, nor replace files of the same names in a directory
    that markovgames did not make (only its marker, kind ``reproduce``, says it did).
    """
    from ..experiments.rundirs._directory import marker_kind

    for foreign in ("metrics.json", "manifest.json"):
        if (out / foreign).exists():
            raise CliError(f"--out {out}: holds another run or sweep ({foreign}); choose another directory")
    if out.is_symlink():
        raise CliError(f"--out {out}: is a symbolic link; name the directory itself")
    entries = [p for p in out.iterdir() if not _MARKER_BEING_WRITTEN.fullmatch(p.name)] if out.is_dir() else []
    if entries and marker_kind(out) != "reproduce":
        raise CliError(
            f"--out {out}: not empty and holds no markovgames reproduction (no .markovgames marker); "
            "choose a new or empty directory"
        )
