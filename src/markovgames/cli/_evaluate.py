"""``markovgames evaluate RUN_DIR``: value, certified and exact gaps, Monte Carlo, of a saved run.

``markovgames evaluate RUN_DIR [-T T'] [--exact] [--monte-carlo N --seed S]`` prints a table and
writes ``evaluation.json`` (into ``RUN_DIR`` unless ``--out`` says otherwise; an existing file is
replaced only with ``--overwrite``). ``RUN_DIR`` is written by ``markovgames run``, or by
``markovgames vlearn``: then ``-T K'`` evaluates V-learning's output policy after ``K'`` episodes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .._atomic import atomic_write_text
from .._json import dumps
from .._lock import directory_lock
from .._outputs import check_apart, check_replaceable_file
from .._text import markup_safe, printable
from ._commands import HELP
from ._defaults import DEFAULT_MAX_WORK, MAX_GAME_ENTRIES
from ._errors import CliError
from ._games import add_game_limits, check_game_limits
from ._run import parse_T
from ._signals import raise_if_terminated

__all__ = ["add_evaluate_parser", "evaluate_run_directory"]

#: What an evaluation reads in a run directory (`markovgames.experiments.load_run_directory`; a
#: V-learning directory's policy.npz, `markovgames.experiments.rundirs._vlearn`):
#: an ``--out`` may not be, contain or lie inside any of them.
RUN_INPUTS = ("metrics.json", "curve.npz", "game.json", "game.npz", "trajectory", "policy.npz", ".markovgames")


def add_evaluate_parser(subparsers):
    p = subparsers.add_parser(
        "evaluate",
        help=HELP["evaluate"],
        description="Evaluate the output policy (Algorithm 3 or 4) of a run directory after T' iterations, or "
        "V-learning's output policy after K' episodes.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a directory written by 'markovgames run' or 'markovgames vlearn'")
    p.add_argument(
        "-T",
        dest="T",
        default=None,
        help="the prefix T' to evaluate (default: the run's T); of a V-learning run, the number of episodes K' (default: all)",
    )
    p.add_argument("--exact", action="store_true", help="compute the exact CE and CCE gaps (those of --concept)")
    p.add_argument(
        "--concept",
        default=None,
        choices=list(EXACT_CONCEPTS),
        help="with --exact: the exact gaps to compute, ce, cce or both (default both)",
    )
    p.add_argument(
        "--max-work",
        type=float,
        default=DEFAULT_MAX_WORK,
        help="refuse an exact gap above this work estimate (the other is still computed), and stop one whose work passes it",
    )
    p.add_argument("--monte-carlo", default=None, metavar="N", help="also estimate values from N sampled episodes (1e5 allowed)")
    p.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo sampler (default 0)")
    p.add_argument("--out", default=None, help="where to write the JSON (default: RUN_DIR/evaluation.json)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing evaluation file")
    p.add_argument("--quiet", action="store_true", help="no table")
    add_game_limits(p)
    p.set_defaults(handler=_handle)
    return p


def _floats(x) -> list[float]:
    import numpy as np

    return [float(v) for v in np.asarray(x).ravel()]


def evaluate_run_directory(
    run_dir,
    T_prime: int | None = None,
    *,
    exact: bool = False,
    monte_carlo: int | None = None,
    seed: int = 0,
    max_work: float = DEFAULT_MAX_WORK,
    max_bytes: int | None = None,
    max_entries: int = MAX_GAME_ENTRIES,
    concept: str = "both",
) -> dict:
    """The fields of ``evaluation.json`` for a run directory, or a V-learning directory (written by
    ``markovgames vlearn``: ``T_prime`` is then a number of episodes), see the module docstring;
    ``max_bytes`` and ``max_entries`` bound the run's game file as in [`load_game`][markovgames.games.load_game];
    ``concept`` (``ce``, ``cce`` or ``both``) the exact gaps ``exact`` computes."""
    import numpy as np

    from ..experiments import load_run_directory, versions
    from ..experiments.rundirs._directory import (
        feedback_fields,
        original_unit_fields,
        regret_fields,
        settings_fields,
        units_field,
    )
    from ..experiments.rundirs._discounted import is_discounted_run_directory
    from ..experiments.rundirs._vlearn import is_vlearning_directory
    from ..policies import IndexChainPolicy

    if concept not in EXACT_CONCEPTS:
        raise CliError(f"--concept: expected one of {', '.join(EXACT_CONCEPTS)}, got {concept!r}")
    concepts = EXACT_CONCEPTS[concept]
    if is_discounted_run_directory(run_dir):
        if exact or monte_carlo is not None:
            option = "--exact" if exact else "--monte-carlo"
            raise CliError(
                f"{option}: {run_dir} holds the run of a discounted game, which has no output policy to evaluate; its "
                "last and weighted average iterates are evaluated exactly without it"
            )
        return _evaluate_discounted_directory(run_dir, T_prime, max_bytes=max_bytes, max_entries=max_entries)
    if is_vlearning_directory(run_dir):
        return _evaluate_vlearning_directory(
            run_dir,
            T_prime,
            exact=exact,
            concepts=concepts,
            monte_carlo=monte_carlo,
            seed=seed,
            max_work=max_work,
            max_bytes=max_bytes,
            max_entries=max_entries,
        )
    stored = load_run_directory(run_dir, max_bytes=max_bytes, max_entries=max_entries)
    T = stored.T
    T_prime = T if T_prime is None else T_prime
    if not 1 <= T_prime <= T:
        raise CliError(f"-T: the run has T = {T}; choose T' in 1..{T}, got {T_prime}")
    row = T_prime - 1
    value = stored.value[row]
    ce = stored.certified_ce_bound[row]
    cce = stored.certified_cce_bound[row]
    report: dict = {
        "run_dir": str(run_dir),
        "algorithm": stored.algorithm,
        # The update order and the step-size schedule, where they are not the paper's (read from
        # metrics.json: a user's schedule is named, never loaded).
        **settings_fields(stored.order, stored.eta_schedule, stored.metrics.get("eta_schedule_source")),
        # What the learners saw, where it was not full information (and the seed of its draws).
        **feedback_fields(stored.feedback, stored.seed),
        "T": T_prime,
        "value": _floats(value),
        "certified_ce_bound": _floats(ce),
        "certified_cce_bound": _floats(cce),
        "certified_ce_gap": float(np.max(ce - value)),
        "certified_cce_gap": float(np.max(cce - value)),
        "certified_ce_gap_per_player": _floats(ce - value),
        "certified_cce_gap_per_player": _floats(cce - value),
    }
    if stored.external_regret is not None and stored.swap_regret is not None:  # a run with --regret
        report.update(regret_fields(stored.external_regret[row], stored.swap_regret[row]))
    if stored.samples_used is not None:  # a run under sampled:K: the samples drawn after T' iterations
        report["samples_used"] = int(stored.samples_used[row])
    needs_policy = exact or monte_carlo is not None
    policy = None
    if needs_policy:
        if stored.trajectory_files is None:
            raise CliError(f"{run_dir}: the run kept no trajectory (--no-trajectory); exact and Monte Carlo evaluation need it")
        kind = stored.index_kernel
        if stored.first_kept > 1:
            if T_prime != stored.T:
                raise CliError(
                    f"{run_dir}: the run kept only iterations {stored.first_kept}..{stored.T} (--trajectory-tolerance); "
                    f"its output policy can be evaluated at -T {stored.T} only"
                )
            policies = stored.check_trajectory()  # an output policy is evaluated only if it is one
            if policies is None:  # unreachable: trajectory_files was checked above
                raise AssertionError("a trajectory that is gone")
            policy = IndexChainPolicy.from_suffix(kind, policies, stored.first_kept)
            # The rebuilt policy differs from the true output on the dropped index mass only.
            report["trajectory_suffix"] = stored.metrics["trajectory_suffix"]
        else:
            policies = stored.check_trajectory(rows=T_prime)  # the rows the prefix T' uses, read and checked
            if policies is None:  # unreachable: trajectory_files was checked above
                raise AssertionError("a trajectory that is gone")
            policy = IndexChainPolicy(kind, policies).prefix(T_prime)
    report.update(_exact_and_monte_carlo(stored.game, policy, concepts if exact else (), monte_carlo, seed, max_work))
    units = stored.game.units
    if not units.is_identity:  # the game's own units too (the Monte Carlo estimates stay in [0, 1] units)
        report["units"] = units_field(units)
        report.update(original_unit_fields(report, units, stored.game.horizon))
    report["versions"] = versions()
    return report


def _evaluate_discounted_directory(run_dir, T_prime: int | None, *, max_bytes: int | None, max_entries: int) -> dict:
    """`evaluate_run_directory` of a discounted game's run: the value estimate after ``T_prime``
    iterations and, from the stored trajectory, the last and the weighted average iterates
    evaluated exactly (`markovgames.experiments.rundirs._discounted.evaluate_discounted_iterates`)."""
    from ..experiments import versions
    from ..experiments.rundirs._directory import feedback_fields, regret_fields, settings_fields, units_field
    from ..experiments.rundirs._discounted import DISCOUNTED_KIND, evaluate_discounted_iterates, load_discounted_run_directory

    stored = load_discounted_run_directory(run_dir, max_bytes=max_bytes, max_entries=max_entries)
    T = stored.T
    T_prime = T if T_prime is None else T_prime
    if not 1 <= T_prime <= T:
        raise CliError(f"-T: the run has T = {T}; choose T' in 1..{T}, got {T_prime}")
    row = T_prime - 1
    report: dict = {
        "run_dir": str(run_dir),
        "kind": DISCOUNTED_KIND,
        "algorithm": stored.metrics["algorithm"],
        "discount": stored.game.discount,
        **settings_fields(
            stored.metrics.get("order", "simultaneous"),
            stored.metrics.get("eta_schedule", "constant"),
            stored.metrics.get("eta_schedule_source"),
        ),
        **feedback_fields(stored.metrics.get("feedback", "full"), stored.metrics.get("seed")),
        "T": T_prime,
        "value_estimate": _floats(stored.value_estimate[row]),
    }
    if stored.external_regret is not None and stored.swap_regret is not None:
        report.update(regret_fields(stored.external_regret[row], stored.swap_regret[row]))
    if stored.samples_used is not None:
        report["samples_used"] = int(stored.samples_used[row])
    if stored.trajectory_files is not None:
        report.update(evaluate_discounted_iterates(stored, T_prime))
    if not stored.game.units.is_identity:
        report["units"] = units_field(stored.game.units)
    report["versions"] = versions()
    return report


def _evaluate_vlearning_directory(
    run_dir,
    K_prime: int | None,
    *,
    exact: bool,
    concepts: tuple[str, ...],
    monte_carlo: int | None,
    seed: int,
    max_work: float,
    max_bytes: int | None,
    max_entries: int,
) -> dict:
    """`evaluate_run_directory` of a V-learning directory: the output policy after ``K_prime`` episodes
    (default all), its value and certified bounds (`markovgames.evaluation.prefix_curves`), and with
    ``exact`` and ``monte_carlo`` its exact gaps and estimates, as for a run's output policy."""
    from ..evaluation import prefix_curves
    from ..experiments import versions
    from ..experiments.rundirs._directory import original_unit_fields, units_field
    from ..experiments.rundirs._vlearn import VLEARNING_KIND, load_vlearning_directory, vlearning_checkpoint_records

    stored = load_vlearning_directory(run_dir, max_bytes=max_bytes, max_entries=max_entries)
    K, M = stored.episodes, stored.episodes_per_round
    K_prime = K if K_prime is None else K_prime
    if not 1 <= K_prime <= K:
        raise CliError(f"-T: the V-learning run has {K} episodes; choose K' in 1..{K}, got {K_prime}")
    if K_prime % M:
        raise CliError(
            f"-T: the run learned in rounds of {M} episodes ({stored.feedback}); choose K' a multiple of {M}, got {K_prime}"
        )
    policy = stored.policy.prefix(K_prime // M)  # its index counts rounds
    (record,) = vlearning_checkpoint_records(prefix_curves(stored.game, policy, [K_prime // M]), stored.game.horizon, M)
    settings = {
        key: stored.metrics.get(key) for key in ("eta", "bandit_rate", "ix", "ix_schedule") if stored.metrics.get(key) is not None
    }
    if "eta" in settings:  # a composition (V-learning's bandits have their papers' rates and no optimism)
        settings["optimistic"] = bool(stored.metrics.get("optimistic", True))
    report: dict = {
        "run_dir": str(run_dir),
        "kind": VLEARNING_KIND,
        "algorithm": stored.algorithm,
        "feedback": stored.feedback,
        "seed": stored.seed,
        "bonus": stored.bonus,
        **settings,  # a composition's eta and ix (each its scale and schedule) and optimism
        **record,  # episodes (K'), rounds, samples_used (K' H), the value, the certified bounds and gaps
    }
    report.update(_exact_and_monte_carlo(stored.game, policy, concepts if exact else (), monte_carlo, seed, max_work))
    units = stored.game.units
    if not units.is_identity:  # the game's own units too (the Monte Carlo estimates stay in [0, 1] units)
        report["units"] = units_field(units)
        report.update(original_unit_fields(report, units, stored.game.horizon))
    report["versions"] = versions()
    return report


#: ``--concept``: the exact gaps ``--exact`` computes.
EXACT_CONCEPTS = {"both": ("ce", "cce"), "ce": ("ce",), "cce": ("cce",)}


def _exact_and_monte_carlo(game, policy, concepts, monte_carlo: int | None, seed: int, max_work: float) -> dict:
    """The report's exact gaps (``--exact``: those of ``concepts``, a tuple of ``"ce"`` and
    ``"cce"``) and Monte Carlo estimates (``--monte-carlo``) of ``policy``.

    Each exact gap is computed on its own: one over ``max_work`` (refused by its estimate, or
    stopped by its count) is ``null`` with the reason in ``exact_ce_gap_skipped`` or
    ``exact_cce_gap_skipped``, and the other is still reported, as ``run --exact`` does.
    """
    import numpy as np

    from ..evaluation import CCEGapResult, CEGapResult, EvaluationTooLarge, exact_cce_gap, exact_ce_gap, monte_carlo_value

    report: dict = {}
    ce_res: CEGapResult | None = None
    cce_res: CCEGapResult | None = None
    for concept in concepts:
        name = f"exact_{concept}_gap"
        res: CEGapResult | CCEGapResult
        try:
            if concept == "ce":
                res = ce_res = exact_ce_gap(game, policy, max_work=max_work)
                report["ce_deviation_value"] = _floats(ce_res.deviation_value)
            else:
                res = cce_res = exact_cce_gap(game, policy, max_work=max_work)
                report["cce_best_response_value"] = _floats(cce_res.best_response_value)
        except EvaluationTooLarge as err:
            report.update({name: None, f"{name}_per_player": None, f"{name}_skipped": f"{err} (--max-work)"})
            continue
        report.update({name: float(res.gap), f"{name}_per_player": _floats(res.per_player), "exact_value": _floats(res.value)})
    if monte_carlo is not None:
        if monte_carlo < 2:
            raise CliError(f"--monte-carlo: need at least 2 episodes, got {monte_carlo}")
        mc: dict[str, Any] = {"episodes": int(monte_carlo), "seed": int(seed)}
        # Independent streams for the value and the two deviations, and for different seeds
        # (seed, seed + 1, seed + 2 would share streams with the next seeds' estimates).
        value_stream, ce_stream, cce_stream = np.random.SeedSequence(seed).spawn(3)
        batch = _monte_carlo_batch(game)

        def check(done: int) -> None:  # after each batch: a SIGTERM whose exception was swallowed (._signals)
            raise_if_terminated()

        est = monte_carlo_value(game, policy, monte_carlo, value_stream, batch_size=batch, progress=check)
        mc["value_mean"], mc["value_stderr"] = _floats(est.mean), _floats(est.stderr)
        if ce_res is not None:  # the deviations of the exact gaps computed
            i = ce_res.player
            dev = monte_carlo_value(game, policy, monte_carlo, ce_stream, ce_res.modification, batch_size=batch, progress=check)
            mc["ce_deviation_player"] = i
            mc["ce_deviation_value_mean"], mc["ce_deviation_value_stderr"] = float(dev.mean[i]), float(dev.stderr[i])
        if cce_res is not None:
            j = cce_res.player
            dev = monte_carlo_value(game, policy, monte_carlo, cce_stream, cce_res.deviation, batch_size=batch, progress=check)
            mc["cce_deviation_player"] = j
            mc["cce_deviation_value_mean"], mc["cce_deviation_value_stderr"] = float(dev.mean[j]), float(dev.stderr[j])
        report["monte_carlo"] = mc
    return report


#: The memory one batch of sampled episodes may take: the episode count itself then sizes nothing.
MONTE_CARLO_BATCH_BYTES = 64 * 2**20


def _monte_carlo_batch(game) -> int:
    """Episodes per batch: the library's default, fewer where an episode's arrays are large.

    An episode keeps its states, recommended and played actions and rewards (``H (3 N + 1) + 1``
    numbers) and draws each step's actions from ``A_i`` probabilities; twice that, for temporaries.
    """
    from ..evaluation import DEFAULT_BATCH

    per_episode = 16 * (game.horizon * (3 * game.num_players + 1) + 1 + sum(game.num_actions))
    return max(1, min(DEFAULT_BATCH, MONTE_CARLO_BATCH_BYTES // per_episode))


def _handle(args) -> int:
    T_prime = None if args.T is None else parse_T(args.T)
    episodes = None if args.monte_carlo is None else parse_T(args.monte_carlo, "--monte-carlo")
    if args.seed < 0:
        raise CliError(f"--seed: must be a non-negative integer, got {args.seed}")
    check_game_limits(args)
    if not args.max_work > 0:  # also refuses nan
        raise CliError(f"--max-work: must be a positive number, got {args.max_work}")
    if args.concept is not None and not args.exact:
        raise CliError(f"--concept: chooses the exact gaps that --exact computes; add --exact, or drop --concept {args.concept}")
    run_dir = Path(args.run_dir)
    out = Path(args.out) if args.out else run_dir / "evaluation.json"
    # Checked before the (possibly long) evaluation; the write names --out, not its temporary file.
    if args.out and out.is_dir():
        raise CliError(f"--out {out}: is a directory; give the path of the JSON file to write")
    if args.out and not out.parent.is_dir():
        raise CliError(f"--out {out}: {out.parent} is not an existing directory")
    if args.out:
        # Never onto a file the evaluation reads (metrics.json, the game, the curve, the trajectory).
        check_apart(out, [run_dir / name for name in RUN_INPUTS], "--out")
    if os.path.isfile(out) and not os.path.islink(out) and not args.overwrite:
        raise CliError(
            f"{'--out ' if args.out else ''}{out}: exists (an earlier evaluation); use --overwrite to replace it, "
            "or --out to write elsewhere"
        )
    # A link, a FIFO, a device: never replaced, with or without --overwrite.
    check_replaceable_file(out, "--out" if args.out else None, args.overwrite, "--overwrite")
    metrics_before = _identity(run_dir / "metrics.json")
    report = evaluate_run_directory(
        run_dir,
        T_prime,
        exact=args.exact,
        monte_carlo=episodes,
        seed=args.seed,
        max_work=args.max_work,
        max_bytes=args.max_bytes,
        max_entries=args.max_entries,
        concept=args.concept or "both",
    )
    # Into the run directory: under its lock (one writer; 'run --overwrite' replaces it under the
    # same lock), and only if it is still the directory that was evaluated. Waits a little for
    # another evaluation's write; the evaluation itself held no lock.
    into_run = out.absolute().parent.resolve() == run_dir.resolve()
    lock = directory_lock(run_dir, timeout=2.0) if into_run else directory_lock(out, "--out", noun="file")
    with lock:
        if into_run and _identity(run_dir / "metrics.json") != metrics_before:
            raise CliError(f"{run_dir}: the run directory was replaced while it was evaluated; evaluate it again")
        try:
            atomic_write_text(out, dumps(report, str(out), indent=2) + "\n", replace=args.overwrite)
        except OSError as err:
            raise CliError(f"{'--out ' if args.out else ''}{out}: cannot write: {err.strerror or err}") from None
    if not args.quiet:
        (_print_discounted if report.get("kind") == "discounted-run" else _print)(report, out)
    return 0


def _print_discounted(report: dict, out: Path) -> None:
    """The table of a discounted game's run evaluated after ``T'`` iterations."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    table = Table(title=f"{markup_safe(report['algorithm'])} (gamma={report['discount']:g}) after T' = {report['T']}")
    table.add_column("quantity")
    n = len(report["value_estimate"])
    for i in range(n):
        table.add_column(f"player {i}", justify="right")
    table.add_column("max over players", justify="right")

    def row(name, values, overall=None):
        table.add_row(name, *(f"{v:.6g}" for v in values), "" if overall is None else f"{overall:.6g}")

    row("value estimate V^T'(rho)", report["value_estimate"])
    for prefix, name in (("last_iterate", "last iterate"), ("weighted_average", "weighted average iterate")):
        if f"{prefix}_value" in report:
            row(f"{name}: value", report[f"{prefix}_value"])
            row(f"{name}: best-response value", report[f"{prefix}_best_response_value"])
            row(f"{name}: Nash gap", report[f"{prefix}_nash_gap_per_player"], report[f"{prefix}_nash_gap"])
            if f"{prefix}_duality_gap" in report:
                table.add_row(f"{name}: duality gap", *([""] * n), f"{report[f'{prefix}_duality_gap']:.6g}")
    if "external_regret" in report:
        row("average external regret", report["external_regret_per_player"], report["external_regret"])
        row("average swap regret", report["swap_regret_per_player"], report["swap_regret"])
    console.print(table)
    if "last_iterate_value" not in report:
        console.print("the run kept no trajectory: its iterates cannot be evaluated", markup=False)
    console.print(f"wrote {printable(out)}", soft_wrap=True, markup=False)


def _identity(path: Path) -> tuple | None:
    """What tells a file apart from its replacement: device, inode, size and modification time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _print(report: dict, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 132)
    n = len(report["value"])
    variant = [f"{report['order']} order"] if "order" in report else []
    variant += [f"eta schedule {report['eta_schedule']}"] if "eta_schedule" in report else []
    if report.get("kind") == "vlearning":
        variant += _vlearning_words(report)
    elif "feedback" in report:
        variant += [f"feedback {report['feedback']}" + ("" if report.get("seed") is None else f", seed {report['seed']}")]
    shown = f" ({markup_safe(', '.join(variant))})" if variant else ""
    after = (
        f"K' = {report['episodes']:,} episodes ("
        + (f"{report['rounds']:,} rounds, " if report.get("rounds", report["episodes"]) != report["episodes"] else "")
        + f"{report['samples_used']:,} samples)"
        if report.get("kind") == "vlearning"
        else f"T' = {report['T']}"
    )
    table = Table(title=f"{markup_safe(report['algorithm'])}{shown} output policy after {after}")
    table.add_column("quantity")
    for i in range(n):
        table.add_column(f"player {i}", justify="right")
    table.add_column("max over players", justify="right")

    def row(name, values, overall=None):
        table.add_row(name, *(f"{v:.6g}" for v in values), "" if overall is None else f"{overall:.6g}")

    row("value", report["value"])
    row("certified CE bound", report["certified_ce_bound"])
    row("certified CCE bound", report["certified_cce_bound"])
    row("certified CE gap", report["certified_ce_gap_per_player"], report["certified_ce_gap"])
    row("certified CCE gap", report["certified_cce_gap_per_player"], report["certified_cce_gap"])
    skipped = []
    for kind in ("ce", "cce"):
        name = f"exact_{kind}_gap"
        if name in report and report[name] is None:  # over --max-work: a line below the table says why
            table.add_row(f"exact {kind.upper()} gap", *(["not computed"] * n), "")
            skipped.append(f"exact {kind.upper()} gap not computed: {report[name + '_skipped']}")
        elif name in report:
            row(f"exact {kind.upper()} gap", report[name + "_per_player"], report[name])
    if "external_regret" in report:  # of the played sequence, not of the output policy
        row("average external regret", report["external_regret_per_player"], report["external_regret"])
        row("average swap regret", report["swap_regret_per_player"], report["swap_regret"])
    mc = report.get("monte_carlo")
    if mc:
        table.add_row(
            f"Monte Carlo value ({mc['episodes']} episodes)",
            *(f"{m:.5f} ± {s:.1e}" for m, s in zip(mc["value_mean"], mc["value_stderr"], strict=True)),
            "",
        )
        # A deviation's value is its player's: it goes in that player's column, not "max over players".
        for kind, name in (("ce", "MC value of the best CE modification"), ("cce", "MC value of the best CCE deviation")):
            if f"{kind}_deviation_value_mean" in mc:
                cells = [""] * n
                cells[mc[f"{kind}_deviation_player"]] = (
                    f"{mc[f'{kind}_deviation_value_mean']:.5f} ± {mc[f'{kind}_deviation_value_stderr']:.1e}"
                )
                table.add_row(name, *cells, "")
    console.print(table)
    for line in skipped:
        console.print(line, soft_wrap=True, markup=False)
    if "samples_used" in report and report.get("kind") != "vlearning":  # in the title of a V-learning run's
        console.print(f"samples drawn in the first T' = {report['T']} iterations: {report['samples_used']:,}", markup=False)
    if "units" in report:
        console.print(_original_units_line(report), soft_wrap=True, markup=False)
    console.print(f"wrote {printable(out)}", soft_wrap=True, markup=False)  # a path is never wrapped or read as markup


def _vlearning_words(report: dict) -> list[str]:
    """The settings of a V-learning directory's run, as its title shows them (V-learning's bandit:1 unsaid)."""
    words = [] if report.get("feedback", "bandit:1") == "bandit:1" else [str(report["feedback"])]
    words += [f"seed {report['seed']}"]
    if "eta" in report:  # eta_c = min(eta, M / sqrt(c)) (the default: its cap shown), or the constant
        # (so a directory without a schedule, of an earlier version); short: the title fits its table.
        constant = report.get("bandit_rate") != "decaying"
        words.append(f"eta {report['eta']:g}" + (" constant" if constant else ""))
    if "ix" in report:  # gamma_c = ix / sqrt(c), or ix
        words.append(f"ix {report['ix']:g}" + ("/sqrt(c)" if report.get("ix_schedule") == "decaying" else ""))
    words += [f"bonus {report['bonus']:g}"] + (["no optimism"] if report.get("optimistic") is False else [])
    return words


def _original_units_line(report: dict) -> str:
    """The headline numbers in the game's own units (its payoffs before the rescaling into [0, 1])."""
    units = report["units"]
    parts = [f"value {', '.join(f'{v:.6g}' for v in report['value_original'])}"]
    labels = {
        "certified_ce_gap": "certified CE gap",
        "certified_cce_gap": "certified CCE gap",
        "exact_ce_gap": "exact CE gap",
        "exact_cce_gap": "exact CCE gap",
        "external_regret": "average external regret",
        "swap_regret": "average swap regret",
    }
    for key, label in labels.items():
        if f"{key}_original" in report:
            parts.append(f"{label} {report[f'{key}_original']:.6g}")
    return f"in the game's own units (rewards r01 = {units['scale']:.6g} r + {units['offset']:.6g}): " + "; ".join(parts)
