"""V-learning directories: what ``markovgames vlearn`` writes, and how ``markovgames evaluate`` reads it back.

Layout of ``DIR``::

    metrics.json          "kind": "vlearning"; the configuration (game, algorithm, feedback bandit:M,
                          episodes, rounds, seed, bonus, and a composition's eta, bandit_rate, ix, ix_schedule, optimism),
                          the versions, the samples used, and per checkpoint K' the exact value and
                          the certified CE/CCE bounds and gaps of the output policy after K'
                          episodes, K'/M rounds (`markovgames.evaluation.prefix_curves`)
    policy.npz            the output policy (`markovgames.policies.VisitChainPolicy.save`)
    game.json | game.npz  the game that was played
    .markovgames          the marker (kind "vlearn"): ``--overwrite`` replaces such a directory

It is written under a temporary name beside ``DIR`` and renamed into place when complete, as a
run directory is (`._rundir`). `load_vlearning_directory` trusts nothing it reads:
``metrics.json`` is bounded in size and its fields are checked (it names no file other than the
game file, one of two names); the game file and ``policy.npz`` must be regular files of bounded
size whose SHA-256 is the one ``metrics.json`` records, and the policy's arrays must declare no
more than the game and the number of episodes imply before any is read. Nothing named in a file
is imported or run: the algorithm is a label (a user's learner file it names is never loaded).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import io
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write_text
from ..._files import JsonFileError, file_sha256, open_regular, read_hashed, read_json
from ..._json import dumps
from ..._npz import ArchiveError, NpzArchive
from ...dynamics import BANDIT_RATES, IX_SCHEDULES, parse_bandit
from ...games import MAX_GAME_ENTRIES, MarkovGame, load_game, save_game
from ...games._io import GameDigestError
from ...policies import VISIT_KERNEL_KINDS, VisitChainPolicy
from ._directory import _JSON_GAME_ENTRIES, original_unit_fields, units_field, versions, write_marker
from ._kinds import wrong_directory
from ._metrics import _MAX_JSON_BYTES, METRICS_FILE, RunDirectoryError

__all__ = [
    "VLEARNING_KIND",
    "VLEARNING_MARKER",
    "POLICY_FILE",
    "StoredVLearning",
    "vlearning_checkpoint_records",
    "write_vlearning_directory",
    "is_vlearning_directory",
    "load_vlearning_directory",
    "policy_file_bytes",
]

#: ``metrics.json``'s ``kind`` in a directory written by ``markovgames vlearn``.
VLEARNING_KIND = "vlearning"
#: The kind its marker file records (the command's name, as for ``run``, ``solve`` and ``certify``).
VLEARNING_MARKER = "vlearn"
#: The output policy's file.
POLICY_FILE = "policy.npz"
#: The game files a V-learning directory may name (``metrics.json``'s ``game_file``).
_GAME_FILES = ("game.json", "game.npz")
#: The most episodes a directory may record (the compiled loop counts in 32-bit integers).
_MAX_EPISODES = 2**31 - 1
#: The longest algorithm name read back (a label: a composition may name a learner's file).
_MAX_NAME = 1000


def policy_file_bytes(game: MarkovGame, episodes: int) -> int:
    """An upper bound on the bytes of ``policy.npz`` (and on the data its arrays hold): the dense form
    of the output policy, one ``float64`` per (episode, step, state, action) and a visit flag or
    state index per (episode, step, state), and 1 MiB for the archive's own bytes and small arrays."""
    per_episode = game.horizon * game.num_states * (8 + 8 * sum(game.num_actions))
    return episodes * per_episode + (1 << 20)


def vlearning_checkpoint_records(curves, horizon: int, per_round: int = 1) -> list[dict[str, Any]]:
    """The per-checkpoint records of ``metrics.json`` from a `PrefixCurves` over rounds of
    ``per_round`` episodes: the number of episodes ``K'`` and of rounds ``K'/M``, the samples they
    used (``K' H``), and the value, the certified bounds and gaps per player."""
    records = []
    for row, rounds in enumerate(curves.episodes):
        value, ce, cce = curves.value[row], curves.certified_ce[row], curves.certified_cce[row]
        k = int(rounds) * int(per_round)
        records.append(
            {
                "episodes": k,
                "rounds": int(rounds),
                "samples_used": k * int(horizon),
                "value": [float(x) for x in value],
                "certified_ce_bound": [float(x) for x in ce],
                "certified_cce_bound": [float(x) for x in cce],
                "certified_ce_gap": float(np.max(ce - value)),
                "certified_cce_gap": float(np.max(cce - value)),
                "certified_ce_gap_per_player": [float(x) for x in ce - value],
                "certified_cce_gap_per_player": [float(x) for x in cce - value],
            }
        )
    return records


def write_vlearning_directory(
    staging: Path, game: MarkovGame, result, curves, config: dict[str, Any], *, evaluation_time_s: float = 0.0
) -> dict[str, Any]:
    """Write ``metrics.json``, ``policy.npz``, the game and the marker into ``staging``; return the metrics.

    ``result``: the `VLearningResult`; ``curves``: `prefix_curves` of its policy at the checkpoints.
    """
    staging = Path(staging)
    kernel_entries = game.sparse_transitions.successors.size * 2 if game.is_sparse else game.transitions.size
    game_file = "game.json" if game.rewards.size + kernel_entries <= _JSON_GAME_ENTRIES else "game.npz"
    policy = result.policy
    try:
        policy.save(staging / POLICY_FILE)
    except OSError as err:
        # A full disk or a quota while the policy is written: the error names no file.
        raise RunDirectoryError(f"{staging / POLICY_FILE}: cannot write: {err.strerror or err}") from None
    save_game(game, staging / game_file)
    metrics = {
        "kind": VLEARNING_KIND,
        "game": game.name,
        "algorithm": result.algorithm,
        # The output policy's index kernel (docs/vlearning.md): smooth for cce-v and ce-v, stage for stage-v.
        "kernel": policy.kind,
        # bandit:M: the learners update once per round of M episodes (V-learning: bandit:1).
        "feedback": result.feedback,
        "episodes": int(result.episodes),
        "rounds": int(result.rounds),
        "horizon": int(game.horizon),
        "seed": None if result.seed is None else int(result.seed),
        "bonus": float(result.bonus),
        # A composition's rate, its implicit exploration's scale gamma_1 and schedule ("decaying":
        # gamma_c = ix / sqrt(c), "constant": gamma_c = ix; null: V-learning's papers' schedules) and optimism.
        "eta": None if result.eta is None else float(result.eta),
        # The rate's schedule ("decaying": eta_c = min(eta, M / sqrt(c)), "constant": eta; null: the papers').
        "bandit_rate": result.bandit_rate,
        "ix": None if result.ix is None else float(result.ix),
        "ix_schedule": result.ix_schedule,
        "optimistic": bool(result.optimistic),
        # One episode is H transitions of the game: the unit of V-learning's rates.
        "samples_used": int(result.samples_used),
        "units": units_field(game.units),
        "checkpoints": [
            {**record, **original_unit_fields(record, game.units, game.horizon)}
            for record in vlearning_checkpoint_records(curves, game.horizon, result.episodes_per_round)
        ],
        "game_file": game_file,
        "policy_file": POLICY_FILE,
        # What evaluate checks the files against: a damaged or replaced file is refused, not used.
        "sha256": {game_file: file_sha256(staging / game_file), POLICY_FILE: file_sha256(staging / POLICY_FILE)},
        "config": config,
        "versions": versions(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "wall_time_s": float(result.wall_time_s),
        "evaluation_time_s": float(evaluation_time_s),
    }
    atomic_write_text(staging / METRICS_FILE, dumps(metrics, str(staging / METRICS_FILE), indent=2) + "\n")
    write_marker(staging, VLEARNING_MARKER)
    return metrics


def is_vlearning_directory(path: str | Path) -> bool:
    """Whether ``path/metrics.json`` is a readable JSON object whose ``kind`` is ``"vlearning"``
    (anything else, readable or not, is left to the reader of run directories to report)."""
    try:
        metrics = read_json(Path(path) / METRICS_FILE, _MAX_JSON_BYTES)
    except JsonFileError:
        return False
    return isinstance(metrics, dict) and metrics.get("kind") == VLEARNING_KIND


@dataclasses.dataclass(frozen=True, eq=False)
class StoredVLearning:
    """A V-learning directory read back (checked by `load_vlearning_directory`)."""

    path: Path
    metrics: dict[str, Any]
    game: MarkovGame
    policy: VisitChainPolicy

    @property
    def algorithm(self) -> str:
        return self.metrics["algorithm"]

    @property
    def episodes(self) -> int:
        return int(self.metrics["episodes"])

    @property
    def seed(self) -> int | None:
        return self.metrics.get("seed")

    @property
    def bonus(self) -> float:
        return float(self.metrics["bonus"])

    @property
    def feedback(self) -> str:
        return self.metrics.get("feedback", "bandit:1")

    @property
    def episodes_per_round(self) -> int:
        """``M`` of ``bandit:M``: the output policy's index counts rounds of ``M`` episodes."""
        return parse_bandit(self.feedback)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite_non_negative(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value)) and value >= 0
    except OverflowError:  # an integer beyond float64
        return False


def _field(metrics: dict, key: str, where: Path, check, expected: str, default: Any = ...) -> Any:
    if key not in metrics:
        if default is not ...:
            return default
        raise RunDirectoryError(f"{where}: missing field {key!r}")
    value = metrics[key]
    if not check(value):
        shown = json.dumps(value)[:40] if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
        raise RunDirectoryError(f"{where}: {key}: expected {expected}, got {shown}")
    return value


def read_vlearning_metrics(metrics_path: Path) -> dict[str, Any]:
    """``metrics.json`` of a V-learning directory, the fields a reader relies on checked."""
    from ...dynamics import VLEARNING_ALGORITHMS

    def _is_bandit(value: Any) -> bool:
        try:
            parse_bandit(value)
        except ValueError:
            return False
        return True

    try:
        metrics = read_json(metrics_path, _MAX_JSON_BYTES)  # bounded in size and nesting depth
    except JsonFileError as err:
        raise RunDirectoryError(str(err)) from None
    if not isinstance(metrics, dict):
        raise RunDirectoryError(f"{metrics_path}: expected a JSON object, got {type(metrics).__name__}")
    _field(metrics, "kind", metrics_path, lambda v: v == VLEARNING_KIND, repr(VLEARNING_KIND))
    _field(
        metrics,
        "algorithm",
        metrics_path,
        lambda v: isinstance(v, str) and 0 < len(v) <= _MAX_NAME and v.isprintable(),
        f"{', '.join(VLEARNING_ALGORITHMS)} or a composition's name (printable, at most {_MAX_NAME} characters)",
    )
    feedback = _field(metrics, "feedback", metrics_path, _is_bandit, "bandit:M, M an integer from 1", "bandit:1")
    episodes = _field(metrics, "episodes", metrics_path, lambda v: _is_int(v) and 1 <= v <= _MAX_EPISODES, "a positive integer")
    per_round = parse_bandit(feedback)
    if episodes % per_round:
        raise RunDirectoryError(f"{metrics_path}: episodes: {episodes} is not a whole number of rounds of {feedback}")
    _field(metrics, "rounds", metrics_path, lambda v: v == episodes // per_round, f"episodes / M = {episodes // per_round}", None)
    for key in ("eta", "ix"):
        _field(
            metrics, key, metrics_path, lambda v: v is None or _is_finite_non_negative(v), "a finite number >= 0 or null", None
        )
    # Older directories have no bandit_rate (their rate was a constant) and no ix_schedule (their ix was).
    _field(
        metrics,
        "bandit_rate",
        metrics_path,
        lambda v: v is None or v in BANDIT_RATES,
        f"{' or '.join(BANDIT_RATES)} or null",
        None,
    )
    _field(
        metrics,
        "ix_schedule",
        metrics_path,
        lambda v: v is None or v in IX_SCHEDULES,
        f"{' or '.join(IX_SCHEDULES)} or null",
        None,
    )
    _field(metrics, "optimistic", metrics_path, lambda v: isinstance(v, bool), "true or false", False)
    _field(metrics, "seed", metrics_path, lambda v: v is None or (_is_int(v) and v >= 0), "a non-negative integer or null", None)
    _field(metrics, "bonus", metrics_path, _is_finite_non_negative, "a finite number >= 0")
    _field(metrics, "game", metrics_path, lambda v: isinstance(v, str), "a game name")
    game_file = _field(metrics, "game_file", metrics_path, lambda v: v in _GAME_FILES, " or ".join(_GAME_FILES))
    _field(metrics, "policy_file", metrics_path, lambda v: v == POLICY_FILE, repr(POLICY_FILE))
    # The output policy's index kernel (absent in a directory of an earlier version).
    _field(metrics, "kernel", metrics_path, lambda v: v in VISIT_KERNEL_KINDS, f"one of {', '.join(VISIT_KERNEL_KINDS)}", None)
    sums = _field(metrics, "sha256", metrics_path, lambda v: isinstance(v, dict), "an object")
    for name, digest in sums.items():
        if name not in (game_file, POLICY_FILE) or not (isinstance(digest, str) and len(digest) == 64):
            raise RunDirectoryError(f"{metrics_path}: sha256: unexpected entry {json.dumps(name)[:40]}")
    for name in (game_file, POLICY_FILE):
        if name not in sums:
            raise RunDirectoryError(f"{metrics_path}: sha256: missing the digest of {name}")
    return metrics


def _digest_error(path: Path, metrics_path: Path) -> RunDirectoryError:
    return RunDirectoryError(
        f"{path}: its SHA-256 differs from the one {metrics_path.name} records: the file was changed or damaged"
    )


def _read_policy(
    path: Path,
    game: MarkovGame,
    episodes: int,
    per_round: int,
    digest: str,
    metrics_path: Path,
    metrics_kernel: str | None = None,
) -> VisitChainPolicy:
    """``policy.npz``: a regular file no larger than the output policy of ``episodes`` episodes of
    ``game`` (``episodes / per_round`` rounds) can be, with the recorded SHA-256, whose arrays declare no more data than that either
    (checked on their headers before any is read); then read by `VisitChainPolicy.load` and checked
    against the game and the number of episodes."""
    limit = policy_file_bytes(game, episodes)
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise RunDirectoryError(
                    f"{path}: {size} bytes, more than the {limit} the output policy of {episodes} episodes of this game "
                    "takes: not this run's policy"
                )
            # Read once: the bytes hashed are the bytes parsed (a file changed after its hash
            # cannot be read in its place).
            data, found = read_hashed(fh, limit)
            if found != digest:
                raise _digest_error(path, metrics_path)
            with NpzArchive(io.BytesIO(data)) as archive:
                declared = 0
                for key in archive.keys:
                    shape, _, dtype = archive.header(key)
                    declared += math.prod(shape) * dtype.itemsize
                if declared > limit:
                    raise RunDirectoryError(
                        f"{path}: its arrays declare {declared} bytes, more than the {limit} the output policy of "
                        f"{episodes} episodes of this game takes: not this run's policy"
                    )
    except OSError as err:
        raise RunDirectoryError(f"{path}: cannot read: {err.strerror or err}") from None
    except ArchiveError as err:
        raise RunDirectoryError(f"{path}: {err}") from None
    try:
        policy = VisitChainPolicy.load(io.BytesIO(data), where=str(path))
    except ValueError as err:  # ArchiveError: already names the file
        raise RunDirectoryError(str(err)) from None
    kernel = metrics_kernel
    if kernel is not None and policy.kind != kernel:
        raise RunDirectoryError(
            f"{path}: kind: {policy.kind!r}, but {metrics_path.name} records the output policy's kernel {kernel!r}: "
            "not this run's policy"
        )
    got = (policy.T, policy.num_players, policy.horizon, policy.num_states, tuple(policy.num_actions))
    want = (episodes // per_round, game.num_players, game.horizon, game.num_states, tuple(game.num_actions))
    if got != want:
        raise RunDirectoryError(
            f"{path}: holds an output policy of (rounds, N, H, S, A) = {got}, but {metrics_path.name} and the game give {want}"
        )
    return policy


def load_vlearning_directory(
    path: str | Path, *, max_bytes: int | None = None, max_entries: int = MAX_GAME_ENTRIES
) -> StoredVLearning:
    """Read a directory written by ``markovgames vlearn`` (`write_vlearning_directory`), every file
    checked before it is used (see the module docstring); ``max_bytes`` and ``max_entries`` bound its
    game file as in `markovgames.games.load_game`.

    Raises
    ------
    RunDirectoryError, GameValidationError
        Naming the file (and the field) at fault.
    """
    path = Path(path)
    metrics_path = path / METRICS_FILE
    if not os.path.lexists(metrics_path):
        raise RunDirectoryError(wrong_directory(path, f"a run directory (with {METRICS_FILE})"))
    metrics = read_vlearning_metrics(metrics_path)
    sums = metrics["sha256"]
    game_path = path / metrics["game_file"]
    # Its size first, then its bytes read once, hashed and parsed (`load_game`'s sha256).
    try:
        game = load_game(game_path, max_bytes=max_bytes, max_entries=max_entries, sha256=sums[metrics["game_file"]])
    except GameDigestError:
        raise _digest_error(game_path, metrics_path) from None
    if game.horizon != metrics.get("horizon", game.horizon):
        raise RunDirectoryError(f"{metrics_path}: horizon: {metrics['horizon']!r}, but {game_path.name} has H = {game.horizon}")
    per_round = parse_bandit(metrics.get("feedback", "bandit:1"))
    policy = _read_policy(
        path / POLICY_FILE, game, metrics["episodes"], per_round, sums[POLICY_FILE], metrics_path, metrics.get("kernel")
    )
    return StoredVLearning(path, metrics, game, policy)
