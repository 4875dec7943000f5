"""``markovgames sweep``, ``plot`` and ``summarize``: grids of runs, their figures and tables.

::

    markovgames sweep CONFIG.toml [--set KEY=VALUE ...] [--out DIR] [--executor local|ray]
                      [--address ADDR] [--workers K] [--dry-run] [--quiet]
    markovgames plot RESULTS_DIR|RUN_DIR [--out DIR] [--concept ce|cce|auto] [--metric METRIC] [--window LOW,HIGH]
                     [--x-axis iterations|samples] [--x horizon|states|players|actions|eta|discount [--decades T1,T2,...]]
    markovgames summarize RESULTS_DIR [--markdown FILE] [--concept ce|cce|auto] [--window LOW,HIGH]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from .._outputs import check_apart, check_replaceable_file
from .._text import markup_safe, printable
from ._commands import HELP
from ._defaults import METRICS as METRIC_CHOICES
from ._defaults import SWEEP_CONFIG_KEYS
from ._errors import CliError, check_output_directory
from ._games import add_game_limits, check_game_limits
from ._signals import raise_if_terminated

__all__ = ["add_sweep_parser", "add_plot_parser", "add_summarize_parser"]


def _positive_int(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CliError(f"{option}: expected a positive integer, got {text!r}") from None
    if value < 1:
        raise CliError(f"{option}: expected a positive integer, got {value}")
    return value


# ---------------------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------------------
def add_sweep_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "sweep",
        help=HELP["sweep"],
        description=(
            "Run the grid of a TOML configuration into a sweep directory: runs/<id>.json per finished run, "
            "results.parquet and manifest.json. Started again, it skips finished runs. See docs/howto-sweep.md."
        ),
    )
    p.add_argument("config", metavar="CONFIG.toml", help="the sweep configuration")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a configuration key (dotted, e.g. T=500, etas=[0.1,0.2], games[0].random.states=4); "
        "VALUE is a TOML value; repeatable",
    )
    p.add_argument("--out", default=None, help="the sweep directory (default: the config's 'out', else sweeps/<name>)")
    p.add_argument("--executor", default="local", choices=["local", "ray"], help="worker processes (default) or a Ray cluster")
    p.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray instance)")
    p.add_argument("--workers", default=None, help="local worker processes (default: min(2, cpu count)); 1 runs inline")
    p.add_argument("--dry-run", action="store_true", help="validate and show the plan (runs, batches, pending) without running")
    p.add_argument("--quiet", action="store_true", help="no progress display and no closing line")
    p.add_argument(
        "--max-runs",
        default=None,
        metavar="N",
        help="refuse a grid of more than N runs, checked before it is expanded (default 100000)",
    )
    add_game_limits(p)
    p.config_keys = SWEEP_CONFIG_KEYS  # for suggestions: --learning-rate means --set etas=...
    p.set_defaults(handler=_handle_sweep)
    return p


@contextlib.contextmanager
def _sweep_progress(enabled: bool) -> Iterator[Callable]:
    """A rich display of runs done / total and the latest batch's gap; silent off a terminal.
    Shown or not, the update raises a SIGTERM whose first exception was swallowed (`._signals`)."""
    if not enabled or not sys.stdout.isatty():
        yield lambda p: raise_if_terminated()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(file=sys.stdout)
    with Progress(
        TextColumn("[bold]runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[batches]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[latest]}"),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task("sweep", total=None, batches="", latest="")

        def update(p) -> None:
            raise_if_terminated()
            latest = ""
            if p.latest is not None:
                lt = p.latest
                opt = "" if lt["optimistic"] else " (non-opt.)"
                # The labels come from the configuration: shown literally, never read as markup.
                what = f"{markup_safe(lt['algorithm'])}{opt} on {markup_safe(lt['game'])}"
                measure = lt.get("measure", f"{lt['concept'].upper()} gap")
                if lt["median_gap"] is None:  # a discounted game's runs that evaluated no iterate
                    latest = f"latest: {what}: done at T={lt['T']}"
                else:
                    latest = f"latest: {what}: median {measure} {lt['median_gap']:.3e} at T={lt['T']}"
            batches = f"batches {p.done_batches}/{p.total_batches}" + (f", {p.failed_batches} failed" if p.failed_batches else "")
            if p.skipped_runs:
                batches += f" ({p.skipped_runs} runs already done)"
            bar.update(task, total=p.total_runs, completed=p.done_runs, batches=batches, latest=latest)

        yield update


def _announce_large_sweep(out: Path, plan) -> None:
    """Say before a sweep starts how much it writes, when that passes `LARGE_WRITE_BYTES` (1 GB)."""
    from .._resources import format_bytes
    from ._run import LARGE_WRITE_BYTES

    size = plan.output_bytes()
    if size >= LARGE_WRITE_BYTES:
        checkpoints = sum(len(r.checkpoints) for r in plan.runs)
        print(
            f"markovgames: note: this sweep writes about {format_bytes(size)} into {printable(str(out))} "
            f"({len(plan.runs):,} runs, {checkpoints:,} checkpoint rows); fewer checkpoints write less",
            file=sys.stderr,
        )


def _handle_sweep(args) -> int:
    from ..experiments.sweeps._config import SweepConfigError, load_sweep_config
    from ..experiments.sweeps._files import read_manifest
    from ..experiments.sweeps._results import checked_run_file
    from ..experiments.sweeps._sweep import (
        DEFAULT_MAX_RUNS,
        MANIFEST_FILE,
        RUNS_DIR,
        check_batch_memory,
        default_workers,
        plan_sweep,
        run_sweep,
        sweep_output_dir,
    )

    workers = None if args.workers is None else _positive_int("--workers", args.workers)
    max_runs = DEFAULT_MAX_RUNS if args.max_runs is None else _positive_int("--max-runs", args.max_runs)
    if args.address is not None and args.executor != "ray":
        raise CliError("--address: needs --executor ray")
    check_game_limits(args)
    config_path = Path(args.config)
    config, raw = load_sweep_config(config_path, args.overrides)
    out = Path(args.out) if args.out else sweep_output_dir(config, config_path.parent, config_path.stem)
    check_output_directory(out)
    check_apart(out, [config_path], "--out")  # the sweep directory never holds or replaces its configuration
    if args.dry_run:
        try:
            plan = plan_sweep(
                config, config_path.parent, max_bytes=args.max_bytes, max_entries=args.max_entries, max_runs=max_runs
            )
            check_batch_memory(plan, 1 if args.executor == "ray" else (workers or default_workers()))
        except SweepConfigError as err:  # a game entry's error: name the configuration file too
            raise SweepConfigError(f"{config_path.name}: {err}") from None
        runs_dir = out / RUNS_DIR
        # Checked as the sweep itself would check them: a damaged run file or manifest is refused.
        pending = [r.run_id for r in plan.runs if checked_run_file(runs_dir / f"{r.run_id}.json", r.run_id, r) is None]
        read_manifest(out / MANIFEST_FILE)
        batches = plan.batches(pending)
        games = len({g["sha256"] for g in plan.games})  # an entry listed twice is one game

        def count(n, noun, plural):
            return f"{n} {noun if n == 1 else plural}"

        print(
            f"{printable(config_path.name)}: {count(len(plan.runs), 'run', 'runs')} on {count(games, 'distinct game', 'distinct games')}; "
            f"{len(pending)} pending in {count(len(batches), 'batch', 'batches')} -> {printable(out)}"
        )
        for b in batches:
            shape = b.shape
            # A discounted game's batch: its discount where a finite-horizon one has its horizon.
            length = f"gamma={shape['discount']:g}" if "discount" in shape else f"H={shape['H']}"
            what = printable(b.algorithm) + ("" if b.optimistic else " (non-opt.)")
            # The order, schedule, regret curves and feedback where they are not the defaults.
            what += "" if b.order == "simultaneous" else f", {b.order}"
            what += "" if b.eta_schedule == "constant" else f", eta schedule {printable(b.eta_schedule)}"
            what += ", regret" if b.regret else ""
            what += "" if b.feedback == "full" else f", feedback {b.feedback}"
            what += "".join(f", {key} {value:g}" for key, value in (("bonus", b.bonus), ("ix", b.ix)) if value is not None)
            rounds = " rounds" if b.bandit else ""  # under bandit feedback T counts rounds of M episodes
            print(
                f"  batch {b.batch_id}: {what}, N={shape['N']} {length} S={shape['S']} A={'x'.join(map(str, shape['A']))}, T={b.T}{rounds}, "
                f"{count(len(b), 'run', 'runs')}"
            )
        return 0
    with _sweep_progress(not args.quiet) as update:
        report = run_sweep(
            config,
            args.out,
            base_dir=config_path.parent,
            overrides=args.overrides,
            executor=args.executor,
            address=args.address,
            workers=workers,
            progress=update,
            raw_config=raw,
            config_name=config_path.name,
            max_bytes=args.max_bytes,
            max_entries=args.max_entries,
            max_runs=max_runs,
            on_plan=functools.partial(_announce_large_sweep, out),
        )
    if report.failures:
        print(
            f"markovgames: error: {report.failed_runs} of {report.total_runs} runs failed "
            f"({len(report.failures)} batches, see {printable(report.manifest_path)}); run the sweep again to retry them",
            file=sys.stderr,
        )
        return 1
    if not args.quiet:
        print(
            f"{report.total_runs} runs ({report.computed_runs} computed in {report.batches} batches, "
            f"{report.skipped_runs} already finished) in {report.wall_time_s:.1f} s -> {printable(report.results_path)}"
        )
    return 0


def _results_inputs(results: str) -> list[Path]:
    """What ``plot`` and ``summarize`` read: the sweep's ``results.parquet`` (and its manifest)."""
    from ..experiments.sweeps._summary import RESULTS_FILE

    path = Path(results)
    if path.is_dir():
        return [path / RESULTS_FILE, path / "manifest.json"]
    return [path]


def _check_sweep_results(results: str, or_run: bool = False) -> None:
    """Refuse, before any work, a RESULTS_DIR that is no sweep directory nor a results file (``or_run``:
    nor a run directory, which ``plot`` reads too): a missing path (naming the nearest one), a file
    that is not Parquet (a sweep's configuration), a directory of another kind (naming the command
    that reads it)."""
    from ..experiments.rundirs._kinds import wrong_directory
    from ..experiments.sweeps._summary import RESULTS_FILE, SWEEP_DIRECTORY, is_results_file

    wanted = f"{SWEEP_DIRECTORY} or a run directory (with metrics.json)" if or_run else SWEEP_DIRECTORY
    path = Path(results)
    if not (os.path.lexists(path / RESULTS_FILE) if path.is_dir() else is_results_file(path)):
        raise CliError(wrong_directory(path, wanted))


#: What a run directory holds (``markovgames run``): ``plot RUN_DIR --out`` never writes there.
_RUN_FILES = ("metrics.json", "curve.npz", "game.json", "game.npz", "trajectory", ".markovgames")


def _is_run_directory(results: str) -> bool:
    """Whether ``plot`` was given a run directory (its ``metrics.json``, and no sweep's results)."""
    from ..experiments.sweeps._summary import RESULTS_FILE

    path = Path(results)
    return path.is_dir() and (path / "metrics.json").is_file() and not (path / RESULTS_FILE).exists()


def _parse_window(text: str | None) -> tuple[float, float] | None:
    """``--window LOW,HIGH`` (e.g. ``1e3,1e5``): the checkpoints a slope is fitted on."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise CliError(f"--window: expected LOW,HIGH (two numbers, e.g. 1e3,1e5), got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and 1 <= low < high):
        raise CliError(f"--window: expected 1 <= LOW < HIGH, got {text!r}")
    return low, high


def _parse_decades(text: str | None) -> list[int] | None:
    """``--decades 1e3,1e4``: checkpoints ``T'`` (exact integers)."""
    if text is None:
        return None
    from ._run import parse_T

    return [parse_T(p.strip(), "--decades") for p in text.split(",")]


_METRIC_HELP = (
    "what to draw: the certified gap (default), the average external or swap regret of the played sequence (runs "
    "with --regret, sweeps with regret = true; the largest over steps and states), or the Nash or duality gap "
    "(two-player constant-sum games) of the last iterate (--last-iterate / last_iterate = true; duality_gap is "
    "last_iterate_duality_gap's older name), of the weighted average of the iterates with the value update's "
    "weights (--weighted-average / weighted_average = true) or of their uniform average (a run directory made "
    "with --uniform-average)"
)

_WINDOW_HELP = (
    "fit the log-log slopes on the checkpoints T' in [LOW, HIGH], e.g. 1e3,1e5 (default: the last two decades "
    "of each run); summarize and plot use the same slope"
)


# ---------------------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------------------
def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "plot",
        help=HELP["plot"],
        description="One figure per game of a sweep (or the figure of a run directory): gap and gap x T versus T, "
        "or with --metric the players' average regrets or the last iterate's duality gap; PNG and PDF.",
        epilog="Files are named by their options, so that a plot with other options never replaces another: "
        "gaps_GAME.png with the defaults, gaps_GAME_window-1e3-1e5.png with --window 1e3,1e5, _concept-ce with "
        "--concept ce, _vs-samples with --x-axis samples, gap_times_T_vs_X_decades-1e3-1e4.png with --decades, slopes_LOW-HIGH.png. Plotting again "
        "with the same options refreshes the same files. FIGDIR/.markovgames-figures.json records the figures "
        "markovgames drew there; a file it did not draw is never replaced.",
    )
    p.add_argument(
        "results", metavar="RESULTS_DIR", help="a sweep directory (with results.parquet), or a run directory (with metrics.json)"
    )
    p.add_argument("--out", default=None, help="folder for the figures (default: RESULTS_DIR/figures)")
    p.add_argument(
        "--metric",
        default="gap",
        choices=METRIC_CHOICES,
        help=_METRIC_HELP,
    )
    p.add_argument(
        "--concept",
        default="auto",
        choices=["auto", "ce", "cce"],
        help="which certified gap: each algorithm's own (auto: CE for smooth_ce, CCE otherwise), or CE / CCE for all",
    )
    p.add_argument(
        "--window", default=None, metavar="LOW,HIGH", help=_WINDOW_HELP + "; also draws the distribution of the per-run slopes"
    )
    p.add_argument(
        "--x-axis",
        default="iterations",
        choices=["iterations", "samples"],
        help="what the figures of each game (or of a run directory) are drawn against: the iterations T' (default) "
        'or the samples drawn by then (runs with --feedback sampled:K, sweeps with feedbacks = ["sampled:K"]; the '
        "runs that drew none are left out)",
    )
    p.add_argument(
        "--x",
        default=None,
        choices=["horizon", "states", "players", "actions", "eta", "discount"],
        help="also draw gap x T' at --decades against this grid parameter, pooled over games and seeds "
        "(actions: the largest A_i)",
    )
    p.add_argument(
        "--decades",
        default=None,
        metavar="T1,T2",
        help="the checkpoints T' of the --x figure (default: the last three decades 10^k the runs share)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace figures of the same names drawn from other results (never a file markovgames did not draw)",
    )
    p.set_defaults(handler=_handle_plot)
    return p


def _handle_plot(args) -> int:
    from ..experiments.figures._sweep import plot_sweep

    window = _parse_window(args.window)
    decades = _parse_decades(args.decades)
    if decades is not None and args.x is None:
        raise CliError("--decades: chooses the checkpoints of the --x figure; add --x")
    if args.metric != "gap" and args.concept != "auto":
        raise CliError(f"--concept: chooses which certified gap is drawn; --metric {args.metric} draws no gap, so drop --concept")
    run_dir = _is_run_directory(args.results)
    if not run_dir:
        _check_sweep_results(args.results, or_run=True)
    if run_dir:
        for option, given in (("--x", args.x), ("--window", args.window)):
            if given is not None:
                raise CliError(f"{option}: compares the runs of a sweep; {printable(args.results)} is a run directory")
    if args.out is not None:
        check_output_directory(args.out)  # before the figures, naming --out
        inputs = [Path(args.results) / name for name in _RUN_FILES] if run_dir else _results_inputs(args.results)
        check_apart(args.out, inputs, "--out")
    if run_dir:
        from ..experiments.figures._run import plot_run

        paths = plot_run(args.results, args.out, args.metric, concept=args.concept, overwrite=args.overwrite, x_axis=args.x_axis)
    else:
        paths = plot_sweep(
            args.results,
            args.out,
            args.concept,
            window=window,
            x=args.x,
            decades=decades,
            overwrite=args.overwrite,
            metric=args.metric,
            x_axis=args.x_axis,
        )
    for path in paths:
        print(f"wrote {printable(path)}")
    return 0


# ---------------------------------------------------------------------------------------
# summarize
# ---------------------------------------------------------------------------------------
def add_summarize_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "summarize",
        help=HELP["summarize"],
        description="Summarise a sweep per game, algorithm, optimism and learning rate.",
    )
    p.add_argument("results", metavar="RESULTS_DIR", help="a sweep directory (with results.parquet)")
    p.add_argument("--markdown", default=None, metavar="FILE", help="also write the table as Markdown to FILE")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.add_argument("--concept", default="auto", choices=["auto", "ce", "cce"], help="which certified gap (default: auto)")
    p.add_argument("--window", default=None, metavar="LOW,HIGH", help=_WINDOW_HELP)
    p.add_argument(
        "--metric", default="gap", choices=METRIC_CHOICES, help=_METRIC_HELP.replace("what to draw", "what to summarise")
    )
    p.set_defaults(handler=_handle_summarize)
    return p


def _handle_summarize(args) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..experiments.sweeps._summary import (
        summarize_results,
        summary_cells,
        summary_columns,
        write_summary_markdown,
    )

    if args.markdown is not None:  # checked before the work, naming --markdown
        target = Path(args.markdown)
        if target.is_dir():
            raise CliError(f"--markdown {target}: is a directory; give the path of the Markdown file to write")
        if not target.parent.is_dir():
            raise CliError(f"--markdown {target}: {target.parent} is not an existing directory")
        check_apart(target, _results_inputs(args.results), "--markdown")
        check_replaceable_file(target, "--markdown", args.overwrite, "--overwrite")
    window = _parse_window(args.window)
    if args.metric != "gap" and args.concept != "auto":
        raise CliError(
            f"--concept: chooses which certified gap is summarised; --metric {args.metric} is no gap, so drop --concept"
        )
    _check_sweep_results(args.results)
    rows = summarize_results(args.results, args.concept, window, args.metric)
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160)
    measure = "certified gaps" if args.metric == "gap" else args.metric
    table = Table(title=f"{markup_safe(args.results)}: {measure} at T (median over runs)")
    # With the order, schedule and feedback where a row has others than the defaults.
    columns = summary_columns(rows)
    left = columns.index("gap") + 1
    for k, name in enumerate(columns):
        table.add_column(name, justify="left" if k < left else "right")
    for r in rows:
        # As text, never as markup: a game label read from the file may hold brackets ("[/]x").
        table.add_row(*(Text(cell) for cell in summary_cells(r, columns)))
    console.print(table)
    if args.markdown:
        from .._lock import directory_lock

        with directory_lock(args.markdown, "--markdown", noun="file"):
            path = write_summary_markdown(
                rows, args.markdown, title=f"Sweep summary: {Path(args.results).name}", window=window, replace=args.overwrite
            )
        console.print(f"wrote {printable(path)}", soft_wrap=True, markup=False)
    return 0
