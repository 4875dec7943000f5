"""The tables ``markovgames run`` prints: a finite-horizon run's checkpoints (values, certified and
exact gaps, the iterates' gaps, regrets, samples; the values in the game's own units), and a
discounted run's (value estimates, the last and the weighted average iterates' gaps)."""

from __future__ import annotations

import sys

from .._text import markup_safe, printable

__all__ = ["print_checkpoints", "print_discounted_checkpoints"]


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


def print_checkpoints(metrics: dict, out) -> None:
    """The table of a finite-horizon run's checkpoints (and what the table cannot show, below it)."""
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
    # duality gap, of the last iterate, of the weighted average of the iterates (the value
    # update's weights) and of their uniform average.
    iterate_columns = {
        "last_iterate_nash_gap": "last iterate: Nash gap",
        "last_iterate_duality_gap": "last iterate: duality gap",
        "weighted_average_nash_gap": "weighted average: Nash gap",
        "weighted_average_duality_gap": "weighted average: duality gap",
        "uniform_average_nash_gap": "uniform average: Nash gap",
        "uniform_average_duality_gap": "uniform average: duality gap",
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


def print_discounted_checkpoints(metrics: dict, out) -> None:
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
