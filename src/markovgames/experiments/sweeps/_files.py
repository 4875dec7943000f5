"""A sweep directory's bookkeeping files, read back: ``runs/<run_id>.json`` and ``manifest.json``.

A sweep trusts nothing it reads from its directory. When a sweep is resumed (or its results
consolidated), every run file and the manifest are checked field by field before anything is
computed or written: the keys a writer of this version writes and no others, each with its type
and range, and a run file's fields consistent with its specification, whose hash is the run's id
(so a run file says what it is the result of, and cannot be moved or edited into another run's
place). A file that fails is refused with one line naming the file and the field
(`SweepFileError`, exit code 2 on the command line), and the directory is left as it was: the
manifest is not rewritten, no run is computed. A damaged file is not silently replaced either;
the message says how to start that part afresh (delete the file).

Every JSON file is read with a bound on its size and on its nesting depth (`markovgames._files.read_json`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..._errors import MarkovGamesError
from ..._files import JsonFileError, read_json
from ..._papers import parse_theory
from ...dynamics import BANDIT_RATES, DEFAULT_BANDIT_RATE, IX_SCHEDULES
from ._bandit import PAPER_RATE, bandit_parameters, is_vlearning

__all__ = [
    "SweepError",
    "SweepDirectoryError",
    "SweepFileError",
    "MANIFEST_FORMAT",
    "RUN_FILE_FORMAT",
    "canonical_json",
    "run_id_of",
    "read_run_file",
    "read_manifest",
]

MANIFEST_FORMAT = "markovgames-sweep/1"
RUN_FILE_FORMAT = 1
#: A run file or manifest larger than this is not one a sweep wrote (it is not read).
MAX_JSON_BYTES = 256 * 2**20
#: The largest T a run can have (what the compiled loop counts), as in the configuration.
_MAX_T = 2**31 - 1
_DTYPES = ("float64", "float32")
_GAME_KINDS = ("builtin", "file", "random")
_STATUSES = ("running", "interrupted", "complete", "incomplete")
_ORDERS = ("simultaneous", "alternating")
#: A feedback model's canonical name (`markovgames.dynamics._feedback.Feedback.name`, or bandit
#: feedback's ``bandit:M``): K and M from 1 on, no leading zeros.
_FEEDBACK = re.compile(r"full|sampled:exact|(sampled|bandit):[1-9][0-9]{0,6}")


class SweepError(MarkovGamesError, RuntimeError):
    """A sweep cannot run (output directory, executor) or some of its batches failed."""


class SweepDirectoryError(SweepError, ValueError):
    """The output directory cannot hold this sweep (a user error)."""


class SweepFileError(SweepDirectoryError):
    """A run file or the manifest of a sweep directory is not one this version wrote; the message
    names the file and the field."""


def canonical_json(data: Any) -> str:
    """The JSON text that identities are hashed from: sorted keys, no spaces, no NaN."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)


def run_id_of(spec: dict[str, Any]) -> str:
    """The run id: the first 16 hex digits of the SHA-256 of the canonical JSON of ``spec``."""
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------
# Checks of one value
# ---------------------------------------------------------------------------------------
def _is_int(value: Any, low: int = 0, high: int | None = None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)


def _is_number(value: Any, low: float | None = None) -> bool:
    """A finite JSON number (an integer too, up to 2^53 in size), at least ``low`` if given.

    A larger integer is refused here: the results table stores these fields as float64, and its
    writer refuses every integer beyond 2^53 (where float64 stops holding all of them), so it
    would fail later, naming no file."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float64
        return False
    if isinstance(value, int) and abs(value) > 2**53:
        return False
    return math.isfinite(number) and (low is None or number >= low)


def _numbers(length: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and len(v) == length and all(_is_number(x) for x in v)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _shown(value: Any) -> str:
    """What a field holds, briefly: a scalar as JSON (cut to 40 characters), else its type."""
    if isinstance(value, (str, int, float, bool, type(None))):
        try:
            text = json.dumps(value)
        except ValueError:  # an integer of thousands of digits, which Python will not write out
            return "an integer of thousands of digits"
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)} entries"
    return type(value).__name__


class _Reader:
    """Checks the fields of one file's JSON object, naming the file and the field in its errors."""

    def __init__(self, path: Path, hint: str) -> None:
        self.path, self.hint = path, hint

    def fail(self, field: str, problem: str) -> SweepFileError:
        where = f"{field}: " if field else ""
        return SweepFileError(f"{self.path}: {where}{problem}; {self.hint}")

    def obj(self, value: Any, field: str, required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict:
        """``value`` must be an object with every key of ``required``, others from ``optional``;
        each key's check (a ``(check, expected)`` pair, or a function of the value and its field
        name that checks it itself) is applied."""
        optional = optional or {}
        if not isinstance(value, dict):
            raise self.fail(field, f"expected an object, got {_shown(value)}")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.fail(field, f"missing key(s): {', '.join(map(repr, missing))}")
        unknown = sorted(str(k) for k in value if k not in required and k not in optional)
        if unknown:
            shown = ", ".join(repr(k if len(k) <= 40 else k[:37] + "...") for k in unknown[:5])
            raise self.fail(field, f"unknown key(s): {shown}")
        for key, rule in (*required.items(), *optional.items()):
            if key not in value:
                continue
            name = f"{field}.{key}" if field else key
            if callable(rule):
                rule(value[key], name)
            else:
                check, expected = rule
                if not check(value[key]):
                    raise self.fail(name, f"expected {expected}, got {_shown(value[key])}")
        return value

    def items(self, value: Any, field: str, each: Callable[[Any, str], object]) -> None:
        """``value`` must be a list, each entry checked by ``each`` (with its field name ``field[k]``)."""
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {_shown(value)}")
        for k, entry in enumerate(value):
            each(entry, f"{field}[{k}]")


def _read_object(path: Path, reader: _Reader) -> Any:
    try:
        return read_json(path, MAX_JSON_BYTES)
    except JsonFileError as err:
        raise SweepFileError(f"{err}; {reader.hint}") from None


# ---------------------------------------------------------------------------------------
# runs/<run_id>.json
# ---------------------------------------------------------------------------------------
def read_run_file(path: str | Path, run_id: str, planned: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The checked content of the run file ``path`` of the run ``run_id`` (``None``: no such file).

    ``planned`` is what the sweep plans for the run (``{"spec": ..., "shape": ...}``, the spec
    whose hash is ``run_id``); without it (consolidating a directory whose configuration is not
    at hand) the file is checked on its own: its spec must still hash to its id.

    Raises
    ------
    SweepFileError
        Not a regular file, unreadable, or a field of the wrong type, range or value; the message
        names the file and the field.
    """
    path = Path(path)
    if not os.path.lexists(path):
        return None
    reader = _Reader(path, "delete the file to run that run again")
    doc = _read_object(path, reader)
    doc = reader.obj(
        doc,
        "",
        {
            "format": (lambda v: v == RUN_FILE_FORMAT and _is_int(v), f"{RUN_FILE_FORMAT} (a run file of this version)"),
            "run_id": (lambda v: v == run_id, f"{json.dumps(run_id)} (the file's name)"),
            "spec": (lambda v: isinstance(v, dict), "an object"),
            "game": (_is_text, "a game label"),
            "game_kind": (lambda v: v in _GAME_KINDS, f"one of {', '.join(_GAME_KINDS)}"),
            "game_seed": (_optional(_is_int), "a non-negative integer or null"),
            "seed_index": (_optional(_is_int), "a non-negative integer or null"),
            # (A discounted game's run has no horizon: its shape is N, S, A, beside its discount.)
            "shape": lambda v, f: _check_shape(reader, v, f, "discount" in doc if isinstance(doc, dict) else False),
            "algorithm": (_is_text, "an algorithm name"),
            "concept": (lambda v: v in ("ce", "cce"), "'ce' or 'cce'"),
            "optimistic": (lambda v: isinstance(v, bool), "true or false"),
            "eta": (
                lambda v: v == PAPER_RATE or _is_theory(v) or _is_number(v) and v > 0,
                "a positive number, 'theory[:PAPER]' or 'paper'",
            ),
            "eta_value": (_optional(lambda v: _is_number(v) and v > 0), "a positive number or null"),
            "T": (lambda v: _is_int(v, 1, _MAX_T), f"an integer in 1..{_MAX_T}"),
            "dtype": (lambda v: v in _DTYPES, f"one of {', '.join(_DTYPES)}"),
            "batch": lambda v, f: _check_batch(reader, v, f),
            "wall_time_s": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "finished_at": (_is_text, "a time"),
            "records": (lambda v: isinstance(v, list), "a list"),
        },
        {
            # Written where they differ from the defaults (simultaneous, constant, a game in [0, 1]).
            "order": (lambda v: v in _ORDERS, f"one of {', '.join(_ORDERS)}"),
            "eta_schedule": (lambda v: _is_text(v) and 0 < len(v) <= 4096, "a step-size schedule's name"),
            "units": lambda v, f: _check_units(reader, v, f),
            # Written where the feedback is not full information, and the seed where the run drew samples.
            "feedback": (
                lambda v: _is_text(v) and _FEEDBACK.fullmatch(v) is not None,
                "a feedback model (sampled:K, sampled:exact or bandit:M)",
            ),
            "feedback_seed": (lambda v: _is_int(v, 0, 2**63 - 1), "a non-negative integer (the draws' seed)"),
            # Written under bandit feedback: the bonus constant and implicit exploration the run used.
            "bonus": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "ix": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "ix_schedule": (lambda v: v in IX_SCHEDULES, f"one of {', '.join(IX_SCHEDULES)}"),
            "bandit_rate": (lambda v: v in BANDIT_RATES, f"one of {', '.join(BANDIT_RATES)}"),
            # Written for a discounted game's run: its game's discount (its spec's game's too).
            "discount": (lambda v: _is_number(v) and 0 <= v < 1, "a number in [0, 1)"),
        },
    )
    spec = doc["spec"]
    try:
        spec_id = run_id_of(spec)
    except (TypeError, ValueError):  # NaN or a value JSON cannot write canonically
        spec_id = None
    if spec_id != run_id:
        raise reader.fail("spec", f"its hash is {spec_id}, not the run id {run_id}: not the specification of this run")
    if planned is not None and spec != planned["spec"]:  # unreachable but for a collision of the id's hash
        raise reader.fail("spec", "differs from the run this sweep plans under this id")
    # The spec is what the run id is made of: the fields repeated beside it must agree with it.
    game = spec.get("game")
    if not isinstance(game, dict) or game.get("kind") != doc["game_kind"]:
        raise reader.fail("spec.game", f"expected an object whose kind is game_kind ({doc['game_kind']})")
    digest = game.get("sha256")
    if not (isinstance(digest, str) and len(digest) == 64):
        raise reader.fail("spec.game.sha256", f"expected a SHA-256 (64 hex digits), got {_shown(digest)}")
    for key in ("algorithm", "optimistic", "eta", "T", "dtype"):
        if spec.get(key) != doc[key]:
            raise reader.fail(key, f"{_shown(doc[key])} differs from the spec's {_shown(spec.get(key))}")
    for key, default in (("order", "simultaneous"), ("eta_schedule", "constant"), ("feedback", "full"), ("feedback_seed", None)):
        if spec.get(key, default) != doc.get(key, default):
            raise reader.fail(key, f"{_shown(doc.get(key, default))} differs from the spec's {_shown(spec.get(key, default))}")
    if planned is not None and doc["shape"] != planned["shape"]:
        raise reader.fail("shape", f"{doc['shape']} is not the shape of the run's game, {planned['shape']}")
    discounted = _check_discount(reader, doc, game)
    per_round = _check_bandit_fields(reader, doc, spec)
    checkpoints = spec.get("checkpoints")
    num_players = doc["shape"]["N"]
    players = (_numbers(num_players), f"a list of {num_players} finite numbers (N)")
    record_fields: dict[str, Any] = {"checkpoint": (lambda v: _is_int(v, 1, doc["T"]), f"an iteration in 1..T = {doc['T']}")}
    optional_fields: dict[str, Any] = {}
    if discounted:  # a discounted game's run: its value estimates, and no output policy
        record_fields["value_estimate"] = players
    else:
        record_fields.update(
            {
                "value": players,
                "certified_ce_bound": players,
                "certified_cce_bound": players,
                "certified_ce_gap": (_is_number, "a finite number"),
                "certified_cce_gap": (_is_number, "a finite number"),
            }
        )
        optional_fields.update(
            {
                "exact_ce_gap": (_optional(_is_number), "a finite number or null"),
                "exact_cce_gap": (_optional(_is_number), "a finite number or null"),
                "exact_ce_gap_per_player": (
                    _optional(_numbers(num_players)),
                    f"a list of {num_players} finite numbers (N) or null",
                ),
                "exact_cce_gap_per_player": (
                    _optional(_numbers(num_players)),
                    f"a list of {num_players} finite numbers (N) or null",
                ),
                "exact_ce_gap_skipped": (_optional(_is_text), "a reason or null"),
                "exact_cce_gap_skipped": (_optional(_is_text), "a reason or null"),
            }
        )
    optional_fields |= {
        "last_iterate_value": (_numbers(num_players), f"a list of {num_players} finite numbers (N)"),
        "last_iterate_nash_gap": (_is_number, "a finite number"),
        "last_iterate_nash_gap_per_player": (_numbers(num_players), f"a list of {num_players} finite numbers (N)"),
        "last_iterate_duality_gap": (_is_number, "a finite number"),
        "weighted_average_value": (_numbers(num_players), f"a list of {num_players} finite numbers (N)"),
        "weighted_average_nash_gap": (_is_number, "a finite number"),
        "weighted_average_nash_gap_per_player": (_numbers(num_players), f"a list of {num_players} finite numbers (N)"),
        "weighted_average_duality_gap": (_is_number, "a finite number"),
        "external_regret": (_is_number, "a finite number"),
        "swap_regret": (_is_number, "a finite number"),
        "external_regret_per_player": (_numbers(num_players), f"a list of {num_players} finite numbers (N)"),
        "swap_regret_per_player": (_numbers(num_players), f"a list of {num_players} finite numbers (N)"),
        "samples_used": (lambda v: _is_int(v, 0, 2**63 - 1), "a non-negative integer (the samples drawn)"),
        "episodes": (lambda v: _is_int(v, 1, 2**63 - 1), "a positive integer (the episodes played)"),
    }
    reader.items(doc["records"], "records", lambda r, f: reader.obj(r, f, record_fields, optional_fields))
    found = [r["checkpoint"] for r in doc["records"]]
    if found != checkpoints:
        shown = found if len(found) <= 10 else f"{len(found)} checkpoints"
        raise reader.fail("records", f"checkpoints {shown}, not those of the spec")
    for k, record in enumerate(doc["records"]):
        # A bandit run's checkpoint T' is T' rounds of M episodes, each of H sampled transitions.
        episodes = None if per_round is None else record["checkpoint"] * per_round
        if record.get("episodes") != episodes:
            raise reader.fail(f"records[{k}].episodes", f"{_shown(record.get('episodes'))} is not the run's {_shown(episodes)}")
        if episodes is not None and record.get("samples_used") != episodes * doc["shape"]["H"]:
            raise reader.fail(f"records[{k}].samples_used", f"{_shown(record.get('samples_used'))} is not episodes x H")
    return doc


def _check_bandit_fields(reader: _Reader, doc: dict[str, Any], spec: dict[str, Any]) -> int | None:
    """A bandit run's settings (its ``bonus`` and ``ix``: those of its spec, else the library's
    defaults), none on another run; returns its ``M`` (``None``: not a bandit run)."""
    feedback = doc.get("feedback", "full")
    if not feedback.startswith("bandit:"):
        for key in ("bonus", "ix", "ix_schedule", "bandit_rate"):
            if key in doc or key in spec:
                raise reader.fail(key, f"set on a run of feedback {feedback}: bonus, ix and bandit_rate are bandit feedback's")
        if doc["eta"] == PAPER_RATE or is_vlearning(doc["algorithm"]):
            raise reader.fail("eta", "V-learning's 'paper' rates and algorithms run on bandit feedback only")
        return None
    if is_vlearning(doc["algorithm"]) != (doc["eta"] == PAPER_RATE):
        raise reader.fail("eta", f"{_shown(doc['eta'])}: 'paper' is V-learning's, and V-learning's only")
    if spec.get("bonus") is not None and not _is_number(spec["bonus"], 0.0) or not _is_number(spec.get("ix", 0.0), 0.0):
        raise reader.fail("spec", "its bonus or ix is not a non-negative number")
    bonus, ix, schedule = bandit_parameters(doc["algorithm"], doc["eta"], spec.get("bonus"), spec.get("ix"), doc["shape"]["H"])
    if spec.get("bandit_rate") is not None and spec["bandit_rate"] not in BANDIT_RATES:
        raise reader.fail("spec", "its bandit_rate is not one of " + ", ".join(BANDIT_RATES))
    rate = None if ix is None else spec.get("bandit_rate") or DEFAULT_BANDIT_RATE  # None: V-learning's papers' rates
    for key, expected in (("bonus", bonus), ("ix", ix), ("ix_schedule", schedule), ("bandit_rate", rate)):
        if doc.get(key) != expected:
            # (A file from before the decaying default has no ix_schedule: its ix was a constant.)
            raise reader.fail(key, f"{_shown(doc.get(key))} is not the run's {_shown(expected)} (its spec's, or the default)")
    return int(feedback.partition(":")[2])


def _check_units(reader: _Reader, value: Any, field: str) -> None:
    """A game's own units: ``{"scale": > 0, "offset": finite}`` (its payoffs' map into [0, 1])."""
    reader.obj(
        value,
        field,
        {
            "scale": (lambda v: _is_number(v) and v > 0, "a positive finite number"),
            "offset": (_is_number, "a finite number"),
        },
    )


def _is_theory(value: Any) -> bool:
    """A theorem's learning rate as a configuration names it: ``theory`` or ``theory:PAPER`` of a
    paper whose rate markovgames implements."""
    try:
        return parse_theory(value) is not None
    except ValueError:
        return False


def _check_discount(reader: _Reader, doc: dict[str, Any], game: dict[str, Any]) -> bool:
    """Whether the run is a discounted game's: its ``discount`` (and its spec's game's, the same), or
    neither; a discounted game's run has no bandit feedback (episodes of ``H`` steps)."""
    discount = doc.get("discount")
    if discount != game.get("discount"):
        raise reader.fail("discount", f"{_shown(discount)} differs from the spec's game's {_shown(game.get('discount'))}")
    if discount is None:
        return False
    if doc.get("feedback", "full").startswith("bandit:"):
        raise reader.fail(
            "feedback", f"{_shown(doc['feedback'])} on a discounted game's run: bandit feedback plays episodes of H steps"
        )
    return True


def _check_shape(reader: _Reader, value: Any, field: str, discounted: bool = False) -> None:
    size = (lambda v: _is_int(v, 1), "a positive integer")
    shape = {"N": size, "S": size, "A": (lambda v: isinstance(v, list), "a list")}
    reader.obj(value, field, shape if discounted else {**shape, "H": size})
    n = value["N"]
    if not (len(value["A"]) == n and all(_is_int(a, 1) for a in value["A"])):
        raise reader.fail(f"{field}.A", f"expected {n} positive integers (N), got {_shown(value['A'])}")


def _check_batch(reader: _Reader, value: Any, field: str) -> None:
    reader.obj(
        value,
        field,
        {
            "id": (_is_text, "a batch id"),
            "size": (lambda v: _is_int(v, 1), "a positive integer"),
            "wall_time_s": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "compile_time_s": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "attempt": (lambda v: _is_int(v, 1), "a positive integer"),
            "host": (_is_text, "a host name"),
        },
    )


# ---------------------------------------------------------------------------------------
# manifest.json
# ---------------------------------------------------------------------------------------
def read_manifest(path: str | Path) -> dict[str, Any] | None:
    """The checked content of a sweep's ``manifest.json`` (``None``: no such file).

    Every key a manifest of this version holds is checked (type, range), and the sessions and
    batches that a resumed sweep carries over entry by entry.

    Raises
    ------
    SweepFileError
        Naming the file and the field.
    """
    path = Path(path)
    if not os.path.lexists(path):
        return None
    reader = _Reader(path, "delete it to start the manifest afresh (the finished runs in runs/ are kept)")
    doc = _read_object(path, reader)
    count = (lambda v: _is_int(v), "a non-negative integer")
    seconds = (lambda v: _is_number(v, 0.0), "a non-negative number")
    optional_time = (_optional(_is_text), "a time or null")
    texts = (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings")
    objects = (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects")
    an_object = (lambda v: isinstance(v, dict), "an object")
    reader.obj(
        doc,
        "",
        {
            "format": (lambda v: v == MANIFEST_FORMAT, f"{json.dumps(MANIFEST_FORMAT)} (a manifest of this version)"),
            "status": (lambda v: v in _STATUSES, f"one of {', '.join(_STATUSES)}"),
            "sessions": lambda v, f: reader.items(v, f, lambda s, g: _check_session(reader, s, g)),
            "batches": lambda v, f: reader.items(v, f, lambda b, g: _check_batch_entry(reader, b, g)),
        },
        {
            "name": (_optional(_is_text), "a name or null"),
            "config_file": (_optional(_is_text), "a file name or null"),
            "overrides": texts,
            "config": an_object,
            "raw_config": (_optional(lambda v: isinstance(v, dict)), "an object or null"),
            "checkpoints": (lambda v: isinstance(v, list) and all(_is_int(c, 1, _MAX_T) for c in v), "a list of iterations"),
            "seeds": an_object,
            "games": objects,
            "runs": lambda v, f: reader.obj(v, f, {"total": count, "finished": count, "failed": count, "ids": texts}),
            "retries": count,
            "retries_all_sessions": count,
            "wall_time_s": seconds,
            "wall_time_s_all_sessions": seconds,
            "executor": an_object,
            "versions": an_object,
            "machine": an_object,
            "started_at": (_is_text, "a time"),
            "finished_at": optional_time,
            "failures": texts,
        },
    )
    return doc


def _check_session(reader: _Reader, value: Any, field: str) -> None:
    count = (lambda v: _is_int(v), "a non-negative integer")
    reader.obj(
        value,
        field,
        {
            "status": (lambda v: v in _STATUSES, f"one of {', '.join(_STATUSES)}"),
            "wall_time_s": (_optional(lambda v: _is_number(v, 0.0)), "a non-negative number"),
            "retries": count,
        },
        {
            "started_at": (_is_text, "a time"),
            "finished_at": (_optional(_is_text), "a time or null"),
            "executor": (lambda v: isinstance(v, dict), "an object"),
            "runs_computed": count,
            "runs_skipped_as_finished": count,
            "batches": count,
            "failed_batches": count,
        },
    )


def _check_batch_entry(reader: _Reader, value: Any, field: str) -> None:
    count = (lambda v: _is_int(v), "a non-negative integer")
    reader.obj(
        value,
        field,
        {
            "batch_id": (_is_text, "a batch id"),
            "status": (lambda v: v in ("finished", "failed"), "'finished' or 'failed'"),
            "run_ids": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of run ids"),
        },
        {
            "algorithm": (_is_text, "an algorithm name"),
            "optimistic": (lambda v: isinstance(v, bool), "true or false"),
            "shape": (lambda v: isinstance(v, dict), "an object"),
            "T": (lambda v: _is_int(v, 1, _MAX_T), f"an integer in 1..{_MAX_T}"),
            "size": count,
            "attempts": count,
            "wall_time_s": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "compile_time_s": (lambda v: _is_number(v, 0.0), "a non-negative number"),
            "host": (_is_text, "a host name"),
            "error": (_is_text, "a message"),
            "session": count,
        },
    )
