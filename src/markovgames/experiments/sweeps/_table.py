"""Reading a sweep's ``results.parquet`` as untrusted input: its sizes bounded, every column checked.

``summarize``, ``plot`` and `load_results` read a file that may have been copied, edited or
forged. A Parquet file says how much it holds in its footer, which is small and read first: the
rows, row groups, columns and their uncompressed bytes are checked against the limits below
before any data is read (a 2 MB file can declare 60 million rows of repeated values, which took
15.8 GB to read). Then the schema, before the data: the columns are those of the table a sweep
writes (`RESULT_COLUMNS`), each of its Arrow type (an integer column is not a double one, a
scalar column not a list). Then the values: no nulls where a sweep writes none, counts and sizes
in range, gaps finite, labels plain text, each ``(run_id, checkpoint)`` once, and a run's rows
agreeing on the run's settings. Every refusal is a `ResultsError` naming the file and the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._errors import MarkovGamesError
from ..._files import open_regular

__all__ = [
    "ResultsError",
    "RESULT_COLUMNS",
    "ORIGINAL_COLUMNS",
    "MAX_RESULT_ROWS",
    "MAX_RESULT_BYTES",
    "read_results_table",
]

#: The most rows a results table may have (one per run and checkpoint: the default --max-runs of
#: 100,000 runs at 10 checkpoints each). ``summarize`` and ``plot`` hold every row in memory.
MAX_RESULT_ROWS = 1_000_000
#: The most bytes its columns may take uncompressed, as its footer states them.
MAX_RESULT_BYTES = 1 << 30
#: The most row groups (a sweep writes one per 50,000 rows) and columns (a sweep writes 58).
MAX_ROW_GROUPS = 10_000
MAX_COLUMNS = 256
#: The longest text in a cell (labels, ids, reasons) and the longest list (one entry per player).
MAX_TEXT_CHARS = 4096
MAX_LIST_ENTRIES = 64
#: The largest ``T`` (and checkpoint) of a run: what the compiled loop can count.
_MAX_T = 2**31 - 1

#: The columns a sweep also writes in the game's own units (``NAME_original``, null for a game given
#: in [0, 1]): returns (lists, one per player), then gaps and regrets (differences of returns, which
#: scale by the map's scale only).
_RETURN_COLUMNS = ("value", "last_iterate_value", "weighted_average_value", "value_estimate")
_DIFFERENCE_COLUMNS = (
    "certified_ce_gap",
    "certified_cce_gap",
    "gap",
    "exact_ce_gap",
    "exact_cce_gap",
    "last_iterate_nash_gap",
    "last_iterate_duality_gap",
    "external_regret",
    "swap_regret",
    "weighted_average_nash_gap",
    "weighted_average_duality_gap",
)
ORIGINAL_COLUMNS = tuple(f"{name}_original" for name in _RETURN_COLUMNS + _DIFFERENCE_COLUMNS)
#: ... of which these hold a list (one per player): the returns'.
LIST_ORIGINAL_COLUMNS = tuple(f"{name}_original" for name in _RETURN_COLUMNS)

#: Every column of a sweep's results table: its kind, and whether a sweep may write nulls in it.
#: Kinds: ``text``, ``int``, ``float``, ``bool``, ``floats`` (a list of floats, one per player).
#: A discounted game's run (``discount`` set) has no horizon and no output policy: its rows hold
#: nulls in `FINITE_HORIZON_COLUMNS`, which every other row has, and its value estimates in
#: ``value_estimate``, which the other rows have not (`_check_kinds`).
RESULT_COLUMNS: dict[str, tuple[str, bool]] = {
    "run_id": ("text", False),
    "game": ("text", False),
    "game_kind": ("text", False),
    "game_seed": ("int", True),
    "seed_index": ("int", True),
    "N": ("int", False),
    "H": ("int", True),
    "S": ("int", False),
    "A": ("text", False),
    "algorithm": ("text", False),
    "concept": ("text", False),
    "optimistic": ("bool", False),
    "eta": ("text", False),
    "eta_value": ("float", True),
    "T": ("int", False),
    "checkpoint": ("int", False),
    "value": ("floats", True),
    "certified_ce_bound": ("floats", True),
    "certified_cce_bound": ("floats", True),
    "certified_ce_gap": ("float", True),
    "certified_cce_gap": ("float", True),
    "ce_gap_times_T": ("float", True),
    "cce_gap_times_T": ("float", True),
    "gap": ("float", True),
    "gap_times_T": ("float", True),
    "wall_time_s": ("float", False),
    "batch_id": ("text", False),
    "batch_size": ("int", False),
    "batch_wall_time_s": ("float", False),
    "dtype": ("text", False),
    "game_sha256": ("text", False),
    "exact_ce_gap": ("float", True),
    "exact_cce_gap": ("float", True),
    "exact_skipped": ("text", True),
    "last_iterate_value": ("floats", True),
    "last_iterate_nash_gap": ("float", True),
    # Since the update order, step-size schedules and regret curves (a file written before has none).
    "order": ("text", False),
    "eta_schedule": ("text", False),
    "external_regret": ("float", True),
    "swap_regret": ("float", True),
    "last_iterate_duality_gap": ("float", True),
    # Since the feedback models: the model, the seed of the run's draws and the samples drawn after
    # T' iterations (the last two null where the run drew none).
    "feedback": ("text", False),
    "feedback_seed": ("int", True),
    "samples": ("int", True),
    # Since bandit feedback: the episodes played after T' rounds, the bonus constant and the
    # implicit exploration the run used, its scale and schedule (null for the other runs; null for
    # V-learning too; a file written before the schedules has no ix_schedule: its ix was a constant).
    "episodes": ("int", True),
    "bonus": ("float", True),
    "ix": ("float", True),
    "ix_schedule": ("text", True),
    # Since the decaying rate on bandit feedback: a composition's rate schedule (null for the other
    # runs and for V-learning; a file written before it has none: its rate was a constant).
    "bandit_rate": ("text", True),
    # Since the weighted average of the iterates (null where the sweep did not evaluate it).
    "weighted_average_value": ("floats", True),
    "weighted_average_nash_gap": ("float", True),
    "weighted_average_duality_gap": ("float", True),
    # Since the catalogue by paper: whose theorem's rate a 'theory' learning rate is (null for a number).
    "eta_theory": ("text", True),
    # Since discounted games: the game's discount and the run's value estimate V^T'(rho) (null
    # for a finite-horizon game's run).
    "discount": ("float", True),
    "value_estimate": ("floats", True),
    **{name: ("floats" if name in LIST_ORIGINAL_COLUMNS else "float", True) for name in ORIGINAL_COLUMNS},
}
#: What a column a file written before it existed reads as (`markovgames.experiments.load_results`).
COLUMN_DEFAULTS = {
    "order": "simultaneous",
    "eta_schedule": "constant",
    "external_regret": None,
    "swap_regret": None,
    "feedback": "full",
    "feedback_seed": None,
    "samples": None,
    "episodes": None,
    "bonus": None,
    "ix": None,
    "ix_schedule": None,
    "bandit_rate": None,
    "weighted_average_value": None,
    "weighted_average_nash_gap": None,
    "weighted_average_duality_gap": None,
    "eta_theory": None,
    "discount": None,
    "value_estimate": None,
    **{
        f"{name}_original": None
        for name in ("weighted_average_value", "weighted_average_nash_gap", "weighted_average_duality_gap", "value_estimate")
    },
}

#: The columns every finite-horizon game's row has and a discounted game's row has not (null):
#: the horizon, and the output policy's value, certified bounds and gaps.
FINITE_HORIZON_COLUMNS = (
    "H",
    "value",
    "certified_ce_bound",
    "certified_cce_bound",
    "certified_ce_gap",
    "certified_cce_gap",
    "ce_gap_times_T",
    "cce_gap_times_T",
    "gap",
    "gap_times_T",
)
#: ... and those a discounted game's row never has (the exact gaps of an output policy).
_NO_OUTPUT_POLICY = ("exact_ce_gap", "exact_cce_gap", "exact_skipped")

#: The columns every results file has (a file written by an earlier version may lack the others).
REQUIRED_COLUMNS = (
    "run_id",
    "game",
    "algorithm",
    "optimistic",
    "eta",
    "T",
    "checkpoint",
    "certified_ce_gap",
    "certified_cce_gap",
    "concept",
)

#: Columns that hold a count of at least 1.
_COUNTS = ("N", "H", "S", "T", "checkpoint", "batch_size", "episodes")
#: What a run's rows must agree on (each is a setting of the run, repeated on its every row).
_RUN_SETTINGS = (
    "game",
    "algorithm",
    "optimistic",
    "eta",
    "concept",
    "T",
    "order",
    "eta_schedule",
    "feedback",
    "feedback_seed",
    "bonus",
    "ix",
    "ix_schedule",
    "bandit_rate",
    "discount",
)
#: The kinds' names in messages.
_KIND_NAMES = {
    "text": "a string",
    "int": "an integer",
    "float": "a floating-point",
    "bool": "a boolean",
    "floats": "a list-of-floats",
}


class ResultsError(MarkovGamesError, ValueError):
    """A results directory cannot be read; the message names the path."""


def read_results_table(path: Path):
    """The checked ``pyarrow.Table`` of the results file ``path`` (see the module docstring)."""
    import pyarrow.parquet as pq

    try:
        fh = open_regular(path)  # a FIFO or a device would hang the reader
    except OSError as err:
        raise ResultsError(f"{path}: cannot read results: {err.strerror or err}") from None
    with fh:
        try:
            # The footer only, with pyarrow's own bounds on what it may allocate while decoding it.
            parquet = pq.ParquetFile(fh, thrift_string_size_limit=64 << 20, thrift_container_size_limit=100_000)
            meta = parquet.metadata
            _check_footer(path, meta)
            schema = parquet.schema_arrow
        except ResultsError:
            raise
        except Exception as err:  # ArrowInvalid, OSError and the like: not a Parquet file
            raise ResultsError(f"{path}: cannot read results: {_first_line(err)}") from None
        _check_schema(path, schema)
        try:
            table = parquet.read()
        except Exception as err:  # noqa: BLE001 - pyarrow's errors of a damaged file, whatever their class
            raise ResultsError(f"{path}: cannot read results: {_first_line(err)}") from None
    _check_values(path, table)
    _check_invariants(path, table)
    return table


#: The columns whose numbers obey the invariants of every result (`.._invariants`).
_INVARIANT_COLUMNS = (
    "value",
    "certified_ce_bound",
    "certified_cce_bound",
    "certified_ce_gap",
    "certified_cce_gap",
    "exact_ce_gap",
    "exact_cce_gap",
    "last_iterate_nash_gap",
    "last_iterate_duality_gap",
    "weighted_average_nash_gap",
    "weighted_average_duality_gap",
    "value_estimate",
)


def _check_invariants(path: Path, table) -> None:
    """What every result satisfies (values and bounds in [0, H], gaps in [0, H], exact <= certified,
    ...: `markovgames.experiments._invariants`), refused naming the row, its run and checkpoint,
    and the column."""
    from .._invariants import first_violation

    if "H" not in table.column_names:  # a file of an earlier version without the game's shape
        return
    columns = {name: table.column(name).to_pylist() for name in _INVARIANT_COLUMNS if name in table.column_names}
    dtype = table.column("dtype").to_pylist() if "dtype" in table.column_names else "float64"
    players = table.column("N").to_pylist() if "N" in table.column_names else 64
    horizon = table.column("H").to_pylist()
    discount = table.column("discount").to_pylist() if "discount" in table.column_names else None
    if discount is not None:  # a discounted game's returns lie in [0, 1/(1-gamma)] (`_check_kinds`: H null there)
        horizon = [h if g is None else 1.0 / (1.0 - g) for h, g in zip(horizon, discount, strict=True)]
    found = first_violation(columns, horizon, players, dtype, discounted=discount)
    if found is not None:
        row, name, what = found
        run_id, checkpoint = table.column("run_id")[row].as_py(), table.column("checkpoint")[row].as_py()
        raise ResultsError(f"{path}: row {row} (run {_shown(run_id)}, T' = {checkpoint}), column {name!r}: {what}")


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else type(err).__name__


def _check_footer(path: Path, meta) -> None:
    """Refuse, from the footer alone, a table larger than the limits."""
    if meta.num_rows > MAX_RESULT_ROWS:
        raise ResultsError(f"{path}: {meta.num_rows} rows, more than the {MAX_RESULT_ROWS} a results file may have")
    if meta.num_row_groups > MAX_ROW_GROUPS:
        raise ResultsError(f"{path}: {meta.num_row_groups} row groups, more than the {MAX_ROW_GROUPS} a results file may have")
    if meta.num_columns > MAX_COLUMNS:
        raise ResultsError(f"{path}: {meta.num_columns} columns, more than the {MAX_COLUMNS} a results file may have")
    total = 0
    for k in range(meta.num_row_groups):
        group = meta.row_group(k)
        total += group.total_byte_size
        if group.num_rows < 0 or group.total_byte_size < 0:
            raise ResultsError(f"{path}: row group {k} declares a negative size (damaged)")
    if total > MAX_RESULT_BYTES:
        raise ResultsError(
            f"{path}: its columns take {total} bytes uncompressed, more than the {MAX_RESULT_BYTES} a results file may have"
        )


def _kind_of(arrow_type) -> str | None:
    """The kind (`RESULT_COLUMNS`) of an Arrow type, ``"null"`` for a column of nulls only, or ``None``."""
    import pyarrow as pa

    t = pa.types
    if t.is_null(arrow_type):
        return "null"
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return "text"
    if t.is_integer(arrow_type):
        return "int"
    if t.is_floating(arrow_type):
        return "float"
    if t.is_boolean(arrow_type):
        return "bool"
    if (t.is_list(arrow_type) or t.is_large_list(arrow_type)) and t.is_floating(arrow_type.value_type):
        return "floats"
    return None


def _check_schema(path: Path, schema) -> None:
    """The columns and their types, from the schema alone."""
    names = list(schema.names)
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ResultsError(f"{path}: column {twice[:100]!r} appears twice")
    unknown = [n for n in names if n not in RESULT_COLUMNS]
    if unknown:
        raise ResultsError(f"{path}: unexpected column {unknown[0][:100]!r}: not a sweep results file")
    missing = [n for n in REQUIRED_COLUMNS if n not in names]
    if missing:
        raise ResultsError(f"{path}: not a sweep results file (missing columns: {', '.join(sorted(missing))})")
    for field in schema:
        kind, nullable = RESULT_COLUMNS[field.name]
        found = _kind_of(field.type)
        if found != kind and not (found == "null" and nullable):
            raise ResultsError(f"{path}: column {field.name!r}: expected {_KIND_NAMES[kind]} column, got {field.type}")


def _check_values(path: Path, table) -> None:
    """The values: nulls, ranges, finiteness, text, duplicates, and each run's rows agreeing."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        raise ResultsError(
            f"{path}: holds no results: no run of the sweep has finished (run 'markovgames sweep' again; "
            "its manifest.json lists the failed batches)"
        )
    for name in table.column_names:
        column = table.column(name)
        kind, nullable = RESULT_COLUMNS[name]
        if not nullable and column.null_count:
            raise ResultsError(f"{path}: column {name!r}: {column.null_count} null value(s), where every row has one")
        if column.null_count == len(column):
            continue
        if kind == "int":
            low, high = pc.min_max(column).values()
            floor = 1 if name in _COUNTS else 0
            ceiling = _MAX_T if name in ("T", "checkpoint") else 2**63 - 1
            if low.as_py() < floor or high.as_py() > ceiling:
                bad = low.as_py() if low.as_py() < floor else high.as_py()
                raise ResultsError(f"{path}: column {name!r}: {bad} is outside {floor}..{ceiling}")
        elif kind == "float":
            if pc.all(pc.is_finite(column)).as_py() is False:
                raise ResultsError(f"{path}: column {name!r}: holds a value that is not finite")
            if name == "eta_value" and pc.min(column).as_py() <= 0:
                raise ResultsError(f"{path}: column 'eta_value': holds a learning rate that is not positive")
            if name in ("bonus", "ix") and pc.min(column).as_py() < 0:
                raise ResultsError(f"{path}: column {name!r}: holds a negative value")
            if name == "discount" and not (pc.min(column).as_py() >= 0 and pc.max(column).as_py() < 1):
                raise ResultsError(f"{path}: column 'discount': holds a value outside [0, 1)")
        elif kind == "floats":
            lengths = pc.list_value_length(column)
            if pc.max(lengths).as_py() > MAX_LIST_ENTRIES or pc.min(lengths).as_py() < 1:
                raise ResultsError(f"{path}: column {name!r}: a list of more than {MAX_LIST_ENTRIES} entries, or none")
            values = pc.list_flatten(column)
            if values.null_count or pc.all(pc.is_finite(values)).as_py() is False:
                raise ResultsError(f"{path}: column {name!r}: holds a value that is not finite")
        elif kind == "text":
            _check_text(path, name, column)
    _check_kinds(path, table)
    _check_consistency(path, table)


def _check_kinds(path: Path, table) -> None:
    """Each row is a finite-horizon game's run (``discount`` null: every `FINITE_HORIZON_COLUMNS`
    set, no ``value_estimate``) or a discounted game's (``discount`` set: those null, and its
    ``value_estimate`` set); a file written before discounted games has finite-horizon rows only."""
    import pyarrow.compute as pc

    names = table.column_names
    discounted = pc.is_valid(table.column("discount")) if "discount" in names else None
    finite = pc.invert(discounted) if discounted is not None else None
    for name in FINITE_HORIZON_COLUMNS + ("value_estimate",) + _NO_OUTPUT_POLICY:
        if name not in names:
            continue
        present = pc.is_valid(table.column(name))
        if name == "value_estimate":
            wrong = pc.xor(present, discounted) if discounted is not None else present
        elif name in _NO_OUTPUT_POLICY:
            if discounted is None:
                continue
            wrong = pc.and_(present, discounted)
        else:
            wrong = pc.invert(present) if finite is None else pc.xor(present, finite)
        if pc.any(wrong).as_py():
            row = pc.index(wrong, True).as_py()
            kind = "a discounted game's row (discount set)" if discounted is not None and discounted[row].as_py() else None
            if name == "value_estimate":
                what = (
                    f"is null on {kind}, where a run's value estimate belongs"
                    if kind
                    else "is set on a finite-horizon game's row"
                )
            elif kind:
                has = "no horizon" if name == "H" else "no output policy"
                what = f"is set on {kind}: a discounted game's run has {has}"
            else:
                what = "is null on a finite-horizon game's row, where every such row has one"
            raise ResultsError(f"{path}: row {row}, column {name!r}: {what}")


def _check_text(path: Path, name: str, column) -> None:
    """Text cells: plain (printable, no control characters), not empty, and not too long."""
    import pyarrow.compute as pc

    lengths = pc.utf8_length(column)
    if pc.max(lengths).as_py() > MAX_TEXT_CHARS:
        raise ResultsError(f"{path}: column {name!r}: a text of more than {MAX_TEXT_CHARS} characters")
    if pc.min(lengths).as_py() < 1:
        raise ResultsError(f"{path}: column {name!r}: an empty text")
    if pc.all(pc.utf8_is_printable(column)).as_py() is False:
        raise ResultsError(f"{path}: column {name!r}: a text with a control character (a line break, a tab, ...)")
    allowed = {"concept": ("ce", "cce"), "dtype": ("float32", "float64"), "order": ("simultaneous", "alternating")}.get(name)
    if allowed is not None:
        odd = pc.filter(column, pc.invert(pc.is_in(column, value_set=_array(allowed)))).drop_null()
        if len(odd):
            raise ResultsError(f"{path}: column {name!r}: {_shown(odd[0].as_py())} is not one of {', '.join(allowed)}")
    if name == "feedback":
        odd = pc.filter(
            column, pc.invert(pc.match_substring_regex(column, r"^(full|sampled:exact|(sampled|bandit):[1-9][0-9]{0,6})$"))
        )
        if len(odd):
            raise ResultsError(
                f"{path}: column 'feedback': {_shown(odd[0].as_py())} is not a feedback model "
                "(full, sampled:K, sampled:exact, bandit:M)"
            )
    if name == "A":
        odd = pc.filter(column, pc.invert(pc.match_substring_regex(column, r"^[1-9][0-9]{0,8}(x[1-9][0-9]{0,8}){0,63}$")))
        if len(odd):
            raise ResultsError(f"{path}: column 'A': {_shown(odd[0].as_py())} is not a list of action counts such as 2x3")


def _check_consistency(path: Path, table) -> None:
    """Each ``(run_id, checkpoint)`` once, every checkpoint within its run's ``T``, and a run's rows
    agreeing on its settings."""
    import pyarrow.compute as pc

    beyond = pc.greater(table.column("checkpoint"), table.column("T"))
    if pc.any(beyond).as_py():
        row = pc.index(beyond, True).as_py()
        raise ResultsError(
            f"{path}: column 'checkpoint': {table.column('checkpoint')[row].as_py()} is beyond the run's T = "
            f"{table.column('T')[row].as_py()} (row {row})"
        )
    counts = table.group_by(["run_id", "checkpoint"]).aggregate([([], "count_all")])
    twice = pc.filter(counts, pc.greater(counts.column("count_all"), 1))
    if twice.num_rows:
        raise ResultsError(
            f"{path}: run {_shown(twice.column('run_id')[0].as_py())} has checkpoint "
            f"{twice.column('checkpoint')[0].as_py()} on more than one row"
        )
    settings = [c for c in _RUN_SETTINGS if c in table.column_names]
    spread = table.group_by("run_id").aggregate([(c, "count_distinct") for c in settings])
    for c in settings:
        differs = pc.filter(spread, pc.greater(spread.column(f"{c}_count_distinct"), 1))
        if differs.num_rows:
            raise ResultsError(f"{path}: run {_shown(differs.column('run_id')[0].as_py())}: its rows disagree on column {c!r}")
    # The runs of a curve (a game, algorithm, optimism, learning rate, T, and where recorded the
    # order, schedule and feedback) are compared at the checkpoints they all have: there must be
    # one, as in every sweep (T' = T at least).
    keys = ["game", "algorithm", "optimistic", "eta", "T"] + [
        c for c in ("order", "eta_schedule", "feedback") if c in table.column_names
    ]
    runs = table.group_by(keys).aggregate([("run_id", "count_distinct")])
    shared = (
        table.group_by([*keys, "checkpoint"])
        .aggregate([("run_id", "count_distinct")])
        .group_by(keys)
        .aggregate([("run_id_count_distinct", "max")])
    )
    joined = runs.join(shared, keys)
    short = pc.filter(joined, pc.less(joined.column("run_id_count_distinct_max"), joined.column("run_id_count_distinct")))
    if short.num_rows:
        row = {k: short.column(k)[0].as_py() for k in keys}
        raise ResultsError(
            f"{path}: the runs of game {_shown(row['game'])}, algorithm {_shown(row['algorithm'])}, eta "
            f"{_shown(row['eta'])} and T = {row['T']} share no checkpoint"
        )


def _array(values: tuple[str, ...]) -> Any:
    import pyarrow as pa

    return pa.array(values)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} characters)"
