"""Run directories: what ``markovgames run`` writes, and how to read it back.

Layout of ``DIR``::

    metrics.json          checkpoints (value, certified CE/CCE bounds and gaps), config, versions, timings
    curve.npz             the same per-prefix arrays for every T' = 1..T (value, certified bounds; the
                          regrets with --regret, the samples drawn under --feedback sampled:K)
    game.json | game.npz  the game that was run (so the run can be evaluated without its source)
    trajectory/policy_{i}.npy   pi^t for t = 1..T, shape (T, H, S, A_i), row t-1 (if kept)
    .markovgames          the marker that the directory holds a markovgames run (or solution)

A directory is written under a temporary name next to ``DIR`` and renamed into place only when
complete, so an interrupted or failed run never leaves a directory that looks finished.
``--overwrite`` replaces only a directory that holds the marker, and never through a symbolic link.

[`load_run_directory`][markovgames.experiments.load_run_directory] (`._run_read`) trusts nothing it reads: every file must be a regular file of a
bounded size; ``metrics.json``'s fields must have their types and ranges and name only the files
a run writes; the game file and ``curve.npz`` must match the SHA-256 that ``metrics.json``
records for them; the arrays must have the shapes, dtypes and finite values the run implies; and
[`StoredRun.check_trajectory`][markovgames.experiments.StoredRun.check_trajectory] checks that every policy row used is a probability vector.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import platform
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write, atomic_write_text
from ..._errors import ArgumentError
from ..._files import JsonFileError, encloses_working_directory, file_kind, file_sha256, read_json
from ..._json import dumps
from ..._papers import parse_theory
from ..._schedules import AVERAGINGS
from ..._text import printable
from ...dynamics import (
    DTYPES,
    CertifiedCurve,
    RunResult,
    StepSchedule,
    resolve_learning_rate,
)
from ...games import (
    AffineRescaling,
    DiscountedMarkovGame,
    MarkovGame,
    save_game,
)
from ._iterates import evaluated_fields
from ._metrics import (
    _MAX_JSON_BYTES,
    CURVE_FILE,
    MAX_CHECKPOINTS,
    METRICS_FILE,
    TRAJECTORY_DIR,
    RunDirectoryError,
)
from ._read import StoredRun, TrajectoryFile, load_run_directory, policy_row_tolerance, read_mapped_trajectory

__all__ = [
    "parse_checkpoints",
    "default_checkpoints",
    "versions",
    "checkpoint_records",
    "last_iterate_fields",
    "weighted_average_fields",
    "write_run_directory",
    "StoredRun",
    "TrajectoryFile",
    "load_run_directory",
    "RunDirectoryError",
    "encloses_working_directory",
    "prepare_output_directory",
    "finalize_output_directory",
    "staging_directory",
    "STATE_FILE",
    "CONFIG_FILE",
    "MARKER_FILE",
    "MAX_CHECKPOINTS",
    "write_marker",
    "check_output_directory_state",
    "policy_row_tolerance",
    "run_directory_bytes",
    "read_mapped_trajectory",
    "original_unit_fields",
    "units_field",
    "regret_fields",
    "settings_fields",
    "feedback_fields",
]

#: Games with more entries than this are stored as ``.npz`` rather than ``.json``.
_JSON_GAME_ENTRIES = 200_000
#: The marker of a directory written by ``markovgames run`` or ``solve``: ``--overwrite`` replaces
#: nothing else.
MARKER_FILE = ".markovgames"
MARKER_FORMAT = "markovgames-output/1"
#: The kinds of marked directory that ``overwrite=True`` replaces as a whole (a sweep's and a
#: reproduction's markers say what they hold, and are never replaced by a run).
REPLACEABLE_KINDS = ("run", "solve", "certify", "vlearn")


def run_directory_bytes(
    game: MarkovGame | DiscountedMarkovGame,
    T: int,
    dtype: str,
    trajectory: bool,
    regret: bool = False,
    samples: bool = False,
    weighted_average: bool = False,
) -> dict[str, int]:
    """The bytes a run directory of ``T`` iterations holds, by part, before the run (for the
    command line's warning before a large write and its free-space check).

    ``"trajectory"`` (if kept): ``T`` policies of ``H x S x A_i`` entries per player in ``dtype``,
    the whole trajectory (``--trajectory-tolerance`` keeps a suffix of it, known only at the end);
    ``"curve.npz"``: three ``(T, N)`` float64 arrays (value and both certified bounds per prefix;
    five with ``regret``: the external and swap regret curves; two more with ``weighted_average``,
    the weighted average's values and best-response values at every prefix; with ``samples`` also
    a ``(T,)`` int64 array, the samples drawn per prefix under sampled feedback);
    ``"game"``: the game's arrays. ``metrics.json`` (a few kilobytes per checkpoint) is not counted.
    """
    itemsize = np.dtype(DTYPES[dtype]).itemsize
    # A discounted game's run: one per-prefix curve (the value estimates), stationary policies.
    discounted = isinstance(game, DiscountedMarkovGame)
    curves = (1 if discounted else 3) + (2 if regret else 0) + (2 if weighted_average else 0)
    parts = {"curve.npz": curves * T * game.num_players * 8 + (8 * T if samples else 0)}
    if trajectory:
        layers = 1 if discounted else game.horizon
        parts["trajectory"] = T * layers * game.num_states * sum(game.num_actions) * itemsize
    parts["game"] = int(np.asarray(game.rewards).nbytes) + _transition_bytes(game)
    return parts


def _transition_bytes(game: MarkovGame | DiscountedMarkovGame) -> int:
    if game.is_sparse:
        sparse = game.sparse_transitions
        return int(sparse.successors.nbytes + sparse.probabilities.nbytes)
    return int(np.asarray(game.transitions).nbytes)


def default_checkpoints(T: int) -> list[int]:
    """Decades ``1, 10, 100, ...`` up to ``T``, and ``T`` itself."""
    points = []
    k = 1
    while k < T:
        points.append(k)
        k *= 10
    points.append(T)
    return points


def parse_checkpoints(text: str | None, T: int) -> list[int]:
    """Parse ``"10,100,1000"`` into sorted unique ints in ``1..T``; ``None`` gives
    [`default_checkpoints`][markovgames.experiments.default_checkpoints]."""
    if text is None:
        return default_checkpoints(T)
    items = [p.strip() for p in text.split(",")]
    if not items or any(not p for p in items):
        raise ArgumentError.for_argument("checkpoints", f"expected comma-separated positive integers, got {text!r}")
    if len(items) > MAX_CHECKPOINTS:
        raise ArgumentError.for_argument("checkpoints", f"{len(items)} checkpoints, more than the limit of {MAX_CHECKPOINTS}")
    values = []
    for p in items:
        try:
            v = int(p)
        except ValueError:
            raise ArgumentError.for_argument("checkpoints", f"{p!r} is not an integer (in {text!r})") from None
        if v < 1:
            raise ArgumentError.for_argument("checkpoints", f"{v} is not positive")
        if v > T:
            raise ArgumentError.for_argument("checkpoints", f"{v} is beyond T = {T}")
        values.append(v)
    return sorted(set(values))


def versions() -> dict[str, str]:
    """Versions of markovgames and of what its numbers depend on."""
    import jax
    import jaxlib
    import scipy

    from ..._version import installed_version

    return {
        "markovgames": installed_version(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platform": platform.platform(),
    }


#: A checkpoint record's fields that are returns (values of a policy over the episode), and those
#: that are gaps (differences of returns): `original_unit_fields` converts both.
_RETURN_FIELDS = (
    "value",
    "certified_ce_bound",
    "certified_cce_bound",
    "last_iterate_value",
    "weighted_average_value",
    "uniform_average_value",
    "average_iterate_value",
    "exact_value",
    "ce_deviation_value",
    "cce_best_response_value",
)
_GAP_SUFFIXES = ("_gap", "_gap_per_player")
#: Regrets are averages of differences of utilities: converted as gaps are (by the scale only).
_REGRET_SUFFIXES = ("_regret", "_regret_per_player")


def original_unit_fields(record: dict[str, Any], units: AffineRescaling, horizon: int) -> dict[str, Any]:
    """The record's returns and gaps in the game's original units, as fields ``NAME_original``.

    With ``r01 = scale * r + offset`` a return over ``H`` steps is ``V = (V01 - H offset) / scale``
    and a gap ``gap / scale`` (`markovgames.games.AffineRescaling`), as is a regret (an average of
    differences of utilities). Empty for a game in ``[0, 1]``.
    """
    if units.is_identity:
        return {}
    out: dict[str, Any] = {}
    for key, value in record.items():
        if value is None or isinstance(value, str) or key.endswith("_original"):
            continue
        if key in _RETURN_FIELDS:
            converted = units.original_value(value, horizon)
        elif key.endswith(_GAP_SUFFIXES + _REGRET_SUFFIXES):
            converted = units.original_gap(value)
        else:
            continue
        out[f"{key}_original"] = converted.tolist() if np.ndim(converted) else float(converted)
    return out


def units_field(units: AffineRescaling) -> dict[str, float] | None:
    """``metrics.json``'s ``units``: the map from the game's original payoffs, or None for ``[0, 1]``."""
    return None if units.is_identity else {"scale": units.scale, "offset": units.offset}


def last_iterate_fields(value, best_response, game: MarkovGame | None = None) -> dict[str, Any]:
    """A checkpoint's last-iterate fields: the value of the product policy ``pi^{T'}`` per player,
    its Nash gap (max over players of best response minus value) and the per-player gaps; with a
    constant-sum ``game``, its duality gap (their sum; `._iterates`)."""
    return evaluated_fields("last_iterate", value, best_response, game)


def weighted_average_fields(value, best_response, game: MarkovGame | None = None) -> dict[str, Any]:
    """A checkpoint's fields of the weighted average of the iterates (the value update's weights),
    as `last_iterate_fields` gives the last iterate's: ``weighted_average_value``, ``_nash_gap``,
    ``_nash_gap_per_player`` and, in a constant-sum game, ``_duality_gap``."""
    return evaluated_fields("weighted_average", value, best_response, game)


def regret_fields(external, swap) -> dict[str, Any]:
    """A checkpoint's regret fields: each player's average external and swap regret of the played
    sequence (``*_per_player``, the largest over steps and states) and their maximum over players."""
    return {
        "external_regret": float(np.max(external)),
        "external_regret_per_player": [float(x) for x in external],
        "swap_regret": float(np.max(swap)),
        "swap_regret_per_player": [float(x) for x in swap],
    }


def settings_fields(order: str, step_schedule: str, source: dict[str, Any] | None = None) -> dict[str, Any]:
    """``metrics.json``'s fields of the update order and the step-size schedule: only those that
    differ from the paper's settings (simultaneous, constant), so that a run made with those writes
    what it always wrote; a reader takes a missing field as the default. ``source``: a user's
    schedule file's ``{"reference", "sha256"}`` (recorded, never loaded back)."""
    out: dict[str, Any] = {}
    if order != "simultaneous":
        out["order"] = order
    if step_schedule != "constant":
        out["eta_schedule"] = step_schedule
        if source is not None:
            out["eta_schedule_source"] = source
    return out


def feedback_fields(feedback: str, seed: int | None) -> dict[str, Any]:
    """``metrics.json``'s fields of the feedback model: ``feedback`` and ``seed`` (the seed of the
    run's random draws, null where it drew none: ``sampled:exact``), only where the feedback is not
    full information, so that a run with the paper's feedback writes what it always wrote; a
    reader takes a missing field as ``"full"`` and null."""
    if feedback == "full":
        return {}
    return {"feedback": feedback, "seed": None if seed is None else int(seed)}


def checkpoint_records(result: RunResult | CertifiedCurve, checkpoints: list[int]) -> list[dict[str, Any]]:
    """The per-checkpoint records of ``metrics.json`` (field names as documented); the last-iterate
    fields are added when the run evaluated the last iterate, the regret fields when it carried them,
    ``samples_used`` (the random draws made after ``T'`` iterations) when it drew samples."""
    records = []
    game = getattr(result, "game", None)  # a RunResult (a CertifiedCurve evaluates no iterate)
    last_fields = _evaluated_by_prefix(
        "last_iterate", result.last_iterate_value, result.last_iterate_best_response, result.last_iterate_prefixes, game
    )
    average_fields = _evaluated_by_prefix(
        "weighted_average",
        getattr(result, "weighted_average_value", None),
        getattr(result, "weighted_average_best_response", None),
        getattr(result, "weighted_average_prefixes", None),
        game,
    )
    external, swap = getattr(result, "external_regret", None), getattr(result, "swap_regret", None)
    samples = getattr(result, "samples_used", None)  # a RunResult under sampled:K (a CertifiedCurve draws nothing)
    for T_prime in checkpoints:
        row = result.row(T_prime)
        value = result.value[row]
        ce = result.certified_ce_bound[row]
        cce = result.certified_cce_bound[row]
        records.append(
            {
                "T": int(T_prime),
                "value": [float(x) for x in value],
                "certified_ce_bound": [float(x) for x in ce],
                "certified_cce_bound": [float(x) for x in cce],
                "certified_ce_gap": float(np.max(ce - value)),
                "certified_cce_gap": float(np.max(cce - value)),
                "certified_ce_gap_per_player": [float(x) for x in ce - value],
                "certified_cce_gap_per_player": [float(x) for x in cce - value],
                **last_fields.get(T_prime, {}),
                **average_fields.get(T_prime, {}),
                **({} if external is None or swap is None else regret_fields(external[row], swap[row])),
                **({} if samples is None else {"samples_used": int(samples[row])}),
            }
        )
    return records


def _evaluated_by_prefix(prefix: str, value, best, prefixes, game) -> dict[int, dict[str, Any]]:
    """Per evaluated prefix ``T'`` the checkpoint fields of an evaluated policy (`evaluated_fields`);
    empty where the run did not evaluate it."""
    if value is None or best is None or prefixes is None:
        return {}
    return {int(t): evaluated_fields(prefix, value[k], best[k], game) for k, t in enumerate(prefixes)}


def _default_mode(directory: bool) -> int:
    """Permissions a plain ``open``/``mkdir`` would give under the current umask (mkstemp uses 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if directory else 0o666) & ~umask


STATE_FILE = "state.npz"
CONFIG_FILE = "config.json"


def staging_directory(out: Path) -> Path:
    """Where a run into ``out`` is assembled: ``.<name>.partial`` beside it (a fixed name, so that
    an interrupted run can be found and resumed)."""
    out = Path(out).resolve()  # "." or "runs/.." name their directory only once resolved
    return out.parent / f".{out.name}.partial"


def check_output_directory_state(out: Path, overwrite: bool, resume: bool = False, config: dict | None = None) -> None:
    """Refuse an output directory that [`prepare_output_directory`][markovgames.experiments.prepare_output_directory] would refuse, writing nothing.

    A command checks this before it takes the directory's lock (so that a refusal leaves no
    trace), and [`prepare_output_directory`][markovgames.experiments.prepare_output_directory] checks it again under the lock.
    """
    given = Path(out)
    if given.is_symlink():
        # --overwrite would delete the link's target, and a run would be written beside it.
        raise RunDirectoryError(
            f"{given}: is a symbolic link; a run replaces its whole output directory, so name the directory itself"
        )
    out = given.resolve()
    if encloses_working_directory(out):
        # The run replaces the whole directory when it is done: never the one we stand in.
        raise RunDirectoryError(
            f"{given}: is the current directory or contains it; a run replaces its whole output "
            "directory, so name a new one (e.g. runs/NAME)"
        )
    if out.exists() and not out.is_dir():
        raise RunDirectoryError(f"{out}: exists and is not a directory")
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise RunDirectoryError(f"{out}: directory is not empty (it may hold another run); pass overwrite=True to replace it")
        _check_marker(out)
    staging = staging_directory(out)
    if os.path.lexists(staging):
        if staging.is_symlink() or not staging.is_dir():
            raise RunDirectoryError(
                f"{staging}: exists and is not a directory that a run left; remove it or choose another output directory"
            )
        saved_state = os.path.lexists(staging / STATE_FILE)
        if saved_state and resume:
            _check_resume_files(staging)
            if config is not None:
                try:
                    saved = read_json(staging / CONFIG_FILE, _MAX_JSON_BYTES)
                except JsonFileError as err:
                    raise RunDirectoryError(
                        f"{err}; it is the interrupted run's saved configuration, which a resume compares with "
                        "this one; the saved state is kept: fix the file and resume, or pass overwrite=True to start over"
                    ) from None
                wanted = json.loads(json.dumps(config))
                if saved != wanted:
                    raise RunDirectoryError(
                        f"{staging}: the interrupted run there has a different configuration "
                        f"({config_difference(saved, wanted) or 'unreadable'}); pass overwrite=True to start over"
                    )
        elif saved_state and not overwrite:
            raise RunDirectoryError(
                f"{out}: an interrupted run was found in {staging}; pass resume=True to continue it or overwrite=True to start over"
            )


#: What each file an interrupted run keeps to be resumed is, in messages.
_RESUME_FILES = {
    STATE_FILE: "the interrupted run's saved state",
    "state.metrics": "the interrupted run's saved metrics",
    CONFIG_FILE: "the interrupted run's saved configuration",
}


def _check_resume_files(staging: Path) -> None:
    """Each file a resume reads from ``staging`` (where it exists) is a regular file, not a link, a
    FIFO, a directory or a device: refused naming the file and what it is, before any is read."""
    for name, what in _RESUME_FILES.items():
        path = staging / name
        try:
            mode = os.stat(path, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            kind = file_kind(mode)
            raise RunDirectoryError(
                f"{path}: is {kind}, not a regular file; it should be {what}; the saved state is kept: fix the file and "
                "resume, or pass overwrite=True to start over"
            )


def config_difference(saved: Any, wanted: dict[str, Any]) -> str:
    """What differs between a stored run configuration ``saved`` (read from a file: anything) and
    ``wanted``, key by key (``KEY: X there, Y now; ...``; empty when nothing does).

    A user's learner whose file changed since (``algorithm_sha256``) is said in words: the
    command line names the same file, so the digests alone would not tell the user why.
    """
    saved = saved if isinstance(saved, dict) else {}
    differ = [
        f"{key}: {_shown(saved.get(key))} there, {_shown(wanted.get(key))} now"
        for key in sorted(set(saved) | set(wanted), key=str)
        if saved.get(key) != wanted.get(key)
    ]
    if saved.get("algorithm_sha256") != wanted.get("algorithm_sha256") and saved.get("algorithm") == wanted.get("algorithm"):
        if "algorithm_sha256" not in saved:  # a run made before the digest was recorded
            differ.append("that run did not record its learner file's SHA-256, so its code cannot be checked")
        else:
            differ.append("the learner's file has changed since that run (restore it to continue)")
    return "; ".join(differ)


def _shown(value: Any) -> str:
    """``repr(value)``, cut to 80 characters (a stored value may be anything, of any size)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def marker_kind(directory: Path) -> str | None:
    """The kind that ``directory``'s marker file records (``"run"``, ``"sweep"``, ...), or None
    where there is no readable marker (no file, a link, a special file, other contents)."""
    marker = Path(directory) / MARKER_FILE
    try:
        doc = read_json(marker, 4096) if not marker.is_symlink() else None
    except JsonFileError:
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != MARKER_FORMAT or not isinstance(doc.get("kind"), str):
        return None
    return doc["kind"]


def _check_marker(out: Path) -> None:
    """Refuse to replace a non-empty directory that holds no marker of a markovgames run."""
    kind = marker_kind(out)
    if kind is None:
        raise RunDirectoryError(
            f"{out}: holds no markovgames run (no {MARKER_FILE} marker); overwrite=True replaces only a directory "
            "written by 'markovgames run', 'solve', 'certify' or 'vlearn', so remove it yourself or choose another output directory"
        )
    if kind not in REPLACEABLE_KINDS:
        # A sweep or a reproduction is markovgames's too, but not a directory that a run replaces.
        raise RunDirectoryError(
            f"{out}: holds a markovgames {printable(kind)[:40]} directory, not a run; overwrite=True replaces only a "
            "directory written by 'markovgames run', 'solve', 'certify' or 'vlearn', so choose another output directory"
        )


def write_marker(directory: Path, kind: str) -> None:
    """Mark ``directory`` as written by markovgames (``kind``: ``"run"``, ``"solve"``, ``"certify"``,
    ``"vlearn"``, ``"sweep"`` or ``"reproduce"``)."""
    atomic_write_text(Path(directory) / MARKER_FILE, dumps({"format": MARKER_FORMAT, "kind": kind}, MARKER_FILE) + "\n")


def prepare_output_directory(out: Path, overwrite: bool, resume: bool = False, config: dict | None = None) -> Path:
    """Check ``out`` can be written and return the staging directory beside it.

    With ``resume``, an interrupted run's staging directory whose saved ``config.json`` equals
    ``config`` is returned as it is; a staging directory left by a run that saved no state is
    garbage and is replaced. ``config`` is written into a fresh staging directory. The caller
    holds the directory's lock (`markovgames._lock.directory_lock`).
    """
    check_output_directory_state(out, overwrite, resume, config)
    out = Path(out).resolve()
    parent = out.absolute().parent
    if not parent.exists():
        try:
            parent.mkdir(parents=True)
        except OSError as err:
            raise RunDirectoryError(f"{out}: cannot create parent directory: {err.strerror}") from None
    if not os.access(parent, os.W_OK):
        raise RunDirectoryError(f"{out}: parent directory {parent} is not writable")
    staging = staging_directory(out)
    if staging.exists():
        if resume and (staging / STATE_FILE).exists():
            return staging
        shutil.rmtree(staging)
    staging.mkdir(mode=_default_mode(directory=True))
    if config is not None:
        atomic_write_text(staging / CONFIG_FILE, dumps(config, str(staging / CONFIG_FILE), indent=2) + "\n")
    return staging


def finalize_output_directory(tmp: Path, out: Path) -> None:
    """Move the complete temporary directory into place (replacing ``out`` if allowed earlier)."""
    given = Path(out)
    if given.is_symlink():  # made one since the check: never delete through it
        raise RunDirectoryError(
            f"{given}: is a symbolic link; a run replaces its whole output directory, so name the directory itself"
        )
    out = given.resolve()
    if out.exists():
        if any(out.iterdir()):
            _check_marker(out)
        shutil.rmtree(out)
    os.replace(tmp, out)


def write_run_directory(
    staging: Path,
    result: RunResult,
    checkpoints: list[int],
    config: dict[str, Any],
    checkpoint_extras: dict[int, dict[str, Any]] | None = None,
    *,
    step_schedule: StepSchedule | None = None,
) -> dict[str, Any]:
    """Write ``metrics.json``, ``curve.npz`` and the game into ``staging`` (the trajectory is already there).

    ``checkpoint_extras`` adds fields (e.g. exact gaps) to the record of each checkpoint ``T'``.
    ``step_schedule``: the run's schedule, whose source (a user's file: its reference and SHA-256)
    ``metrics.json`` records beside its name.
    """
    game = result.game
    kernel_entries = game.sparse_transitions.successors.size * 2 if game.is_sparse else game.transitions.size
    game_file = "game.json" if game.rewards.size + kernel_entries <= _JSON_GAME_ENTRIES else "game.npz"
    curve = staging / CURVE_FILE
    # The curve is made in memory (a few bytes per prefix), then written and made durable while
    # a thread computes its digest from the same bytes (both release the interpreter).
    buffer = io.BytesIO()
    # The regret curves only where the run carried them: a run without them writes what it always wrote.
    curves: dict[str, Any] = {}  # (Any: NumPy types savez's keywords as allow_pickle's bool)
    if result.external_regret is not None and result.swap_regret is not None:
        curves = {"external_regret": result.external_regret, "swap_regret": result.swap_regret}
    regret = bool(curves)
    # The samples drawn per prefix only where the run drew any (sampled:K): one int64 per prefix.
    samples = result.samples_used
    if samples is not None:
        curves["samples_used"] = np.asarray(samples, dtype=np.int64)
    # The weighted average's values at every prefix only where the run evaluated it at every one.
    average = weighted_average_record(result)
    if average is not None and average["every_prefix"]:
        curves["weighted_average_value"] = result.weighted_average_value
        curves["weighted_average_best_response"] = result.weighted_average_best_response
    np.savez(
        buffer,
        value=result.value,
        certified_ce_bound=result.certified_ce_bound,
        certified_cce_bound=result.certified_cce_bound,
        **curves,
    )
    # The pool is left (its thread joined) before the buffer is released, also on an error.
    with buffer.getbuffer() as content, ThreadPoolExecutor(1, thread_name_prefix="markovgames-curve") as pool:
        digest = pool.submit(lambda: hashlib.sha256(content).hexdigest())
        try:
            atomic_write(curve, lambda fh: fh.write(content))
        except OSError as err:
            raise RunDirectoryError(f"{curve}: cannot write: {err.strerror or err}") from None
        curve_sha256 = digest.result()
    save_game(result.game, staging / game_file)
    spec = result.spec
    if spec is None:  # unreachable: RunResult.__post_init__ fills in the algorithm's spec
        raise AssertionError("a RunResult without its Algorithm")
    metrics = {
        "game": result.game.name,
        "algorithm": result.algorithm,
        # What the algorithm is made of; "value_update" names the output policy's index kernel
        # (smooth: Algorithm 3, stage: Algorithm 4), which is all that evaluating the run needs.
        "learner": spec.learner.name,
        "value_update": spec.value_update.name,
        "concept": spec.concept,
        "algorithm_source": None if spec.source is None else {"reference": spec.source, "sha256": spec.source_sha256},
        "optimistic": result.optimistic,
        "eta": result.eta,
        # The number behind "theory" for the smooth algorithms (Theorem 1's constant rate); None
        # for stage_cce's, whose rate 1/(N max(1, ln L_tau)^4) changes from stage to stage.
        "eta_value": _eta_value(result),
        # Whose theorem's rate "theory" is (the paper's key, `markovgames._papers`), where it is one.
        **({"eta_theory": theory} if (theory := parse_theory(result.eta)) is not None else {}),
        "T": result.T,
        "dtype": result.dtype,
        **settings_fields(result.order, result.step_schedule, _schedule_source(step_schedule, result.step_schedule)),
        # The feedback model and the seed of its draws, where it is not full information; the
        # samples drawn after the last iteration where it drew any (curve.npz: after every prefix).
        **feedback_fields(result.feedback, result.seed),
        **({"samples_used": int(samples[result.row(result.T)])} if samples is not None else {}),
        # The regrets after the last iteration (the curve.npz holds them for every prefix).
        **({"regret": _final_regret(result, game)} if regret else {}),
        # Which weighted average of the iterates the checkpoints (and curve.npz) evaluate.
        **({"weighted_average": average} if average is not None else {}),
        # The game's own units: the map, and every checkpoint's returns and gaps in them too.
        "units": units_field(game.units),
        "checkpoints": [
            _with_original_units({**record, **(checkpoint_extras or {}).get(record["T"], {})}, game)
            for record in checkpoint_records(result, checkpoints)
        ],
        "identity_residual": result.identity_residual,
        "game_file": game_file,
        # What evaluate checks the files against: a damaged or replaced file is refused, not used.
        "sha256": {game_file: file_sha256(staging / game_file), CURVE_FILE: curve_sha256},
        "trajectory": TRAJECTORY_DIR if result.policies is not None else None,
        "trajectory_suffix": None
        if result.suffix is None
        else {
            "first_kept": result.suffix.first_kept,
            "dropped_mass": result.suffix.dropped_mass,
            "value_error_bound": result.suffix.value_error_bound,
            "gap_error_bound": result.suffix.gap_error_bound,
        },
        "config": config,
        "versions": versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "wall_time_s": result.wall_time_s,
        "compile_time_s": result.compile_time_s,
    }
    atomic_write_text(staging / METRICS_FILE, dumps(metrics, str(staging / METRICS_FILE), indent=2) + "\n")
    write_marker(staging, "run")
    return metrics


def weighted_average_record(result: RunResult) -> dict[str, Any] | None:
    """``metrics.json``'s ``weighted_average`` where the run evaluated the weighted average of its
    iterates: its weights by the name `markovgames.evaluation.average_iterate` knows them
    (``paper``, ``uniform``, ``linear``, ``stage``: the value update's), and whether it was
    evaluated at every prefix (then ``curve.npz`` holds it too); else ``None``."""
    prefixes = result.weighted_average_prefixes
    if prefixes is None or result.spec is None:
        return None
    names = {update: name for name, update in AVERAGINGS.items()}
    return {
        "weights": names[result.spec.value_update.name],
        "every_prefix": len(prefixes) == result.T,
    }


def _schedule_source(schedule: StepSchedule | None, name: str) -> dict[str, Any] | None:
    """A user's schedule's ``{"reference", "sha256"}`` (None for a built-in one)."""
    if schedule is None or schedule.source is None or schedule.name != name:
        return None
    return {"reference": schedule.source, "sha256": schedule.source_sha256}


def _final_regret(result: RunResult, game: MarkovGame) -> dict[str, Any]:
    """``metrics.json``'s ``regret``: the regret fields after all ``T`` iterations (and in the game's units)."""
    if result.external_regret is None or result.swap_regret is None:  # unreachable: asked only when carried
        raise AssertionError("a run without regret curves")
    row = result.row(result.T)
    return _with_original_units({"T": result.T, **regret_fields(result.external_regret[row], result.swap_regret[row])}, game)


def _with_original_units(record: dict[str, Any], game: MarkovGame) -> dict[str, Any]:
    return {**record, **original_unit_fields(record, game.units, game.horizon)}


def _eta_value(result: RunResult) -> float | list[float] | None:
    """The rate the run used: a number, one per player (a list), or ``None`` for per-stage theory rates."""
    if result.spec is None:  # unreachable: RunResult.__post_init__ fills in the algorithm's spec
        raise AssertionError("a RunResult without its Algorithm")
    scale, per_stage = resolve_learning_rate(result.eta, result.spec, result.game)
    if per_stage:
        return None
    return [float(x) for x in scale] if isinstance(scale, tuple) else float(scale)
