"""Run directories: what ``markovgames run`` writes, and how to read it back.

Layout of ``DIR``::

    metrics.json          checkpoints (value, certified CE/CCE bounds and gaps), config, versions, timings
    curve.npz             the same per-prefix arrays for every T' = 1..T (value, certified bounds)
    game.json | game.npz  the game that was run (so the run can be evaluated without its source)
    trajectory/policy_{i}.npy   pi^t for t = 1..T, shape (T, H, S, A_i), row t-1 (if kept)

A directory is written under a temporary name next to ``DIR`` and renamed into place only when
complete, so an interrupted or failed run never leaves a directory that looks finished.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import atomic_write_text
from ..dynamics import RunResult, get_algorithm, get_value_update, resolve_learning_rate
from ..games import MAX_GAME_ENTRIES, MarkovGame, load_game, save_game

__all__ = [
    "parse_checkpoints",
    "default_checkpoints",
    "versions",
    "checkpoint_records",
    "last_iterate_fields",
    "write_run_directory",
    "StoredRun",
    "load_run_directory",
    "RunDirectoryError",
    "encloses_working_directory",
    "prepare_output_directory",
    "finalize_output_directory",
    "staging_directory",
    "STATE_FILE",
    "CONFIG_FILE",
]

METRICS_FILE = "metrics.json"
CURVE_FILE = "curve.npz"
TRAJECTORY_DIR = "trajectory"
#: Games with more entries than this are stored as ``.npz`` rather than ``.json``.
_JSON_GAME_ENTRIES = 200_000


class RunDirectoryError(ValueError):
    """A run directory cannot be written or read; the message names the path and the problem."""


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
    """Parse ``"10,100,1000"`` into sorted unique ints in ``1..T``; ``None`` gives :func:`default_checkpoints`."""
    if text is None:
        return default_checkpoints(T)
    items = [p.strip() for p in text.split(",")]
    if not items or any(not p for p in items):
        raise ValueError(f"--checkpoints: expected comma-separated positive integers, got {text!r}")
    values = []
    for p in items:
        try:
            v = int(p)
        except ValueError:
            raise ValueError(f"--checkpoints: {p!r} is not an integer (in {text!r})") from None
        if v < 1:
            raise ValueError(f"--checkpoints: {v} is not positive")
        if v > T:
            raise ValueError(f"--checkpoints: {v} is beyond T = {T}")
        values.append(v)
    return sorted(set(values))


def versions() -> dict[str, str]:
    """Versions of markovgames and of what its numbers depend on."""
    import jax
    import jaxlib
    import scipy

    from .. import __version__

    return {
        "markovgames": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platform": platform.platform(),
    }


def last_iterate_fields(value, best_response) -> dict[str, Any]:
    """A checkpoint's last-iterate fields: the value of the product policy ``pi^{T'}`` per player,
    its Nash gap (max over players of best response minus value) and the per-player gaps."""
    gaps = np.asarray(best_response) - np.asarray(value)
    return {
        "last_iterate_value": [float(x) for x in value],
        "last_iterate_nash_gap": float(np.max(gaps)),
        "last_iterate_nash_gap_per_player": [float(x) for x in gaps],
    }


def checkpoint_records(result: RunResult, checkpoints: list[int]) -> list[dict[str, Any]]:
    """The per-checkpoint records of ``metrics.json`` (field names as documented); the last-iterate
    fields are added when the run evaluated the last iterate."""
    records = []
    last = getattr(result, "last_iterate_value", None)
    last_rows = {} if last is None else {int(t): k for k, t in enumerate(result.last_iterate_prefixes)}
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
                **(
                    last_iterate_fields(last[last_rows[T_prime]], result.last_iterate_best_response[last_rows[T_prime]])
                    if T_prime in last_rows
                    else {}
                ),
            }
        )
    return records


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


def encloses_working_directory(path) -> bool:
    """Whether ``path`` is the working directory or one that contains it (a run must not replace it)."""
    here, path = Path.cwd().resolve(), Path(path).resolve()
    return path == here or path in here.parents


def prepare_output_directory(out: Path, overwrite: bool, resume: bool = False, config: dict | None = None) -> Path:
    """Check ``out`` can be written and return the staging directory beside it.

    With ``resume``, an interrupted run's staging directory whose saved ``config.json`` equals
    ``config`` is returned as it is; a staging directory left by a run that saved no state is
    garbage and is replaced. ``config`` is written into a fresh staging directory.
    """
    given, out = Path(out), Path(out).resolve()
    if encloses_working_directory(out):
        # The run replaces the whole directory when it is done: never the one we stand in.
        raise RunDirectoryError(
            f"{given}: is the current directory or contains it; a run replaces its whole output "
            "directory, so name a new one (e.g. runs/NAME)"
        )
    if out.exists() and not out.is_dir():
        raise RunDirectoryError(f"{out}: exists and is not a directory")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise RunDirectoryError(f"{out}: directory is not empty (it may hold another run); use --overwrite to replace it")
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
        saved_state = (staging / STATE_FILE).exists()
        if saved_state and resume:
            try:
                saved = json.loads((staging / CONFIG_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                saved = None
            wanted = json.loads(json.dumps(config))
            if config is not None and saved != wanted:
                saved = saved if isinstance(saved, dict) else {}
                differ = [
                    f"{key}: {saved.get(key)!r} there, {wanted.get(key)!r} now"
                    for key in sorted(set(saved) | set(wanted))
                    if saved.get(key) != wanted.get(key)
                ]
                raise RunDirectoryError(
                    f"{staging}: the interrupted run there has a different configuration "
                    f"({'; '.join(differ) or 'unreadable'}); use --overwrite to start over"
                )
            return staging
        if saved_state and not overwrite:
            raise RunDirectoryError(
                f"{out}: an interrupted run was found in {staging}; use --resume to continue it or --overwrite to start over"
            )
        shutil.rmtree(staging)
    staging.mkdir(mode=_default_mode(directory=True))
    if config is not None:
        atomic_write_text(staging / CONFIG_FILE, json.dumps(config, indent=2) + "\n")
    return staging


def finalize_output_directory(tmp: Path, out: Path) -> None:
    """Move the complete temporary directory into place (replacing ``out`` if allowed earlier)."""
    out = Path(out).resolve()
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)


def write_run_directory(
    staging: Path,
    result: RunResult,
    checkpoints: list[int],
    config: dict[str, Any],
    checkpoint_extras: dict[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write ``metrics.json``, ``curve.npz`` and the game into ``staging`` (the trajectory is already there).

    ``checkpoint_extras`` adds fields (e.g. exact gaps) to the record of each checkpoint ``T'``.
    """
    game = result.game
    kernel_entries = game.sparse_transitions.successors.size * 2 if game.is_sparse else game.transitions.size
    game_file = "game.json" if game.rewards.size + kernel_entries <= _JSON_GAME_ENTRIES else "game.npz"
    save_game(result.game, staging / game_file)
    np.savez(
        staging / CURVE_FILE,
        value=result.value,
        certified_ce_bound=result.certified_ce_bound,
        certified_cce_bound=result.certified_cce_bound,
    )
    spec = result.spec
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
        "T": result.T,
        "dtype": result.dtype,
        "checkpoints": [
            {**record, **(checkpoint_extras or {}).get(record["T"], {})}
            for record in checkpoint_records(result, checkpoints)
        ],
        "identity_residual": result.identity_residual,
        "game_file": game_file,
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
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": result.wall_time_s,
        "compile_time_s": result.compile_time_s,
    }
    atomic_write_text(staging / METRICS_FILE, json.dumps(metrics, indent=2) + "\n")
    return metrics


def _eta_value(result: RunResult) -> float | None:
    scale, per_stage = resolve_learning_rate(result.eta, result.spec, result.game)
    return None if per_stage else float(scale)


@dataclass(frozen=True, eq=False)
class StoredRun:
    """A run read back from its directory."""

    path: Path
    metrics: dict[str, Any]
    game: MarkovGame
    value: np.ndarray
    certified_ce_bound: np.ndarray
    certified_cce_bound: np.ndarray
    policies: tuple[np.ndarray, ...] | None

    @property
    def first_kept(self) -> int:
        """The first iteration of the stored trajectory (1 unless the run kept a suffix)."""
        suffix = self.metrics.get("trajectory_suffix")
        return 1 if not suffix else int(suffix["first_kept"])

    @property
    def algorithm(self) -> str:
        return self.metrics["algorithm"]

    @property
    def index_kernel(self) -> str:
        """The output policy's index kernel: ``"smooth"`` (Algorithm 3) or ``"stage"`` (Algorithm 4)."""
        try:
            # A directory written before "value_update" was recorded names a built-in algorithm.
            update = self.metrics.get("value_update") or get_algorithm(self.metrics["algorithm"]).value_update
            return get_value_update(update).index_kernel
        except ValueError as err:
            raise RunDirectoryError(f"{self.path / METRICS_FILE}: {err}") from None

    @property
    def T(self) -> int:
        return int(self.metrics["T"])


def load_run_directory(path: str | Path, *, max_bytes: int | None = None, max_entries: int = MAX_GAME_ENTRIES) -> StoredRun:
    """Read a run directory written by :func:`write_run_directory` (memory-mapped trajectory).

    ``max_bytes`` and ``max_entries`` bound its game file as in :func:`~markovgames.games.load_game`.
    """
    path = Path(path)
    metrics_path = path / METRICS_FILE
    if not metrics_path.is_file():
        raise RunDirectoryError(f"{path}: not a run directory (no {METRICS_FILE})")
    try:
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunDirectoryError(f"{metrics_path}: unreadable: {err}") from None
    for key in ("algorithm", "T", "game_file"):
        if key not in metrics:
            raise RunDirectoryError(f"{metrics_path}: missing field {key!r}")
    game = load_game(path / metrics["game_file"], max_bytes=max_bytes, max_entries=max_entries)
    with np.load(path / CURVE_FILE, allow_pickle=False) as curve:
        value = np.array(curve["value"])
        ce = np.array(curve["certified_ce_bound"])
        cce = np.array(curve["certified_cce_bound"])
    policies = None
    if metrics.get("trajectory"):
        traj = path / metrics["trajectory"]
        policies = tuple(
            np.load(traj / f"policy_{i}.npy", mmap_mode="r", allow_pickle=False) for i in range(game.num_players)
        )
    return StoredRun(path, metrics, game, value, ce, cce, policies)
