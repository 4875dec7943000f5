"""Fuzzing run directories: random truncations and byte flips of each file, then the commands
that read them.

``markovgames evaluate`` on a damaged finished run directory (``metrics.json``, ``curve.npz``, the
game file, ``trajectory/policy_*.npy``) must either exit 0 and report the numbers of the intact
directory (up to what a damage within the checks' tolerances can move them: a policy row may
move by its tolerance, which moves a value by far less than ``ATOL``), or exit 2 with one line
naming a file of the directory. Never a traceback (exit 70, an internal error), never NaN,
never "exact" gaps of damaged data reported as exact.

``markovgames run --resume`` on a damaged interrupted run (its staging directory's
``state.npz``, ``config.json`` and trajectory files) must likewise either finish with the
numbers of an uninterrupted run or refuse with one line; that test is marked as expected to
fail until resume checks the files it reuses.

The damage is drawn by hypothesis (``MARKOVGAMES_FUZZ_EXAMPLES`` examples per directory, 40 by
default, 400 in the full mode): a truncation at a random length, or one to four flipped bytes, half of the time within
the first 256 bytes, where the headers are. The evaluations run in this process under a memory
limit (2 GiB above its current size): a size read from a damaged header that got through the
checks would fail the test as ``MemoryError`` instead of exhausting the machine.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames.cli import main
from markovgames.games import load_game, random_game, save_game

EXAMPLES = int(os.environ.get("MARKOVGAMES_FUZZ_EXAMPLES", examples(40, 400)))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))

#: How far an accepted damaged directory's numbers may lie from the intact one's. A byte flip
#: the checks let through changes a policy entry by at most its row tolerance (1e-9 for a
#: float64 run), which moves values and gaps by at most about H times that.
ATOL = 1e-6

EVALUATE = ["--exact", "--monte-carlo", "300", "--seed", "5", "--quiet"]


# ---------------------------------------------------------------------------------------
# damage, shared by the evaluate and the resume fuzzers
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Damage:
    """A truncation to ``keep`` bytes, or XOR ``masks`` at ``positions`` (modulo the file size)."""

    truncate: bool
    keep: float  # fraction of the file kept by a truncation
    positions: tuple[int, ...]
    masks: tuple[int, ...]

    def apply(self, path: Path) -> None:
        data = bytearray(path.read_bytes())
        if not data:
            return
        if self.truncate:
            del data[int(len(data) * self.keep) :]
        else:
            for position, mask in zip(self.positions, self.masks, strict=True):
                data[position % len(data)] ^= mask
        path.write_bytes(bytes(data))


@st.composite
def damages(draw) -> Damage:
    truncate = draw(st.booleans())
    keep = draw(st.floats(0.0, 0.999))
    count = draw(st.integers(1, 4))
    near_start = draw(st.booleans())
    high = 255 if near_start else 2**31
    positions = tuple(draw(st.lists(st.integers(0, high), min_size=count, max_size=count)))
    masks = tuple(draw(st.lists(st.integers(1, 255), min_size=count, max_size=count)))
    return Damage(truncate, keep, positions, masks)


@contextlib.contextmanager
def _memory_limit(extra: int = 2 * 2**30):
    """Lower this process's address-space limit to its current size plus ``extra`` for the block."""
    with open("/proc/self/status") as fh:
        size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + extra if hard == resource.RLIM_INFINITY else min(hard, size + extra)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _call(argv, capsys) -> tuple[int, str]:
    with _memory_limit():
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    err = capsys.readouterr().err
    if "the traceback is in " in err:  # an internal error (which fails the test): keep /tmp clean
        Path(err.split("the traceback is in ")[1].split(";")[0]).unlink(missing_ok=True)
    return code, err


def _check_refusal(code: int, err: str, directory: Path) -> None:
    """Exit 2 with one line that names a file of ``directory`` (not an internal error, not a bomb)."""
    lines = err.splitlines()
    assert code == 2, f"exit {code}: {err}"
    assert len(lines) == 1 and lines[0].startswith("markovgames: error: ") and "Traceback" not in err, lines
    assert "out of memory" not in lines[0], f"an allocation got past the checks: {lines[0]}"
    assert str(directory) in lines[0], lines[0]


def _numbers(report, prefix: str = "") -> dict[str, float]:
    """Every number of an evaluation report, by its path (versions and paths left out)."""
    out: dict[str, float] = {}
    if isinstance(report, dict):
        for key, value in report.items():
            if key not in ("versions", "run_dir"):
                out.update(_numbers(value, f"{prefix}.{key}"))
    elif isinstance(report, list):
        for k, value in enumerate(report):
            out.update(_numbers(value, f"{prefix}[{k}]"))
    elif isinstance(report, (int, float)) and not isinstance(report, bool):
        out[prefix] = float(report)
    return out


# ---------------------------------------------------------------------------------------
# evaluate
# ---------------------------------------------------------------------------------------
def _npz_game_directory(run: Path) -> None:
    """Store the run's game as game.npz instead of game.json (metrics.json updated to match),
    so that both game file readers are fuzzed."""
    import hashlib

    game = load_game(run / "game.json")
    (run / "game.json").unlink()
    save_game(game, run / "game.npz")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["game_file"] = "game.npz"
    metrics["sha256"] = {
        "game.npz": hashlib.sha256((run / "game.npz").read_bytes()).hexdigest(),
        "curve.npz": metrics["sha256"]["curve.npz"],
    }
    (run / "metrics.json").write_text(json.dumps(metrics, indent=2))


@pytest.fixture(scope="module")
def intact_runs(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """Two finished runs and their intact evaluations: the paper game (smooth_ce, JSON game file)
    and a random 3-player game (stage_cce, float32, game.npz)."""
    root = tmp_path_factory.mktemp("intact")
    save_game(random_game(3, 2, 2, [2, 3, 2], seed_or_rng=11), root / "three.json")
    out = {}
    for name, args in (
        ("paper", ["--game", "paper", "--algorithm", "smooth_ce", "-T", "20"]),
        ("three", ["--game", str(root / "three.json"), "--algorithm", "stage_cce", "-T", "25", "--dtype", "float32"]),
    ):
        run = root / name
        assert main(["run", *args, "--out", str(run), "--quiet"]) == 0
        if name == "three":
            _npz_game_directory(run)
        assert main(["evaluate", str(run), *EVALUATE]) == 0
        report = json.loads((run / "evaluation.json").read_text())
        (run / "evaluation.json").unlink()
        out[name] = (run, report)
    return out


def _files(run: Path) -> list[str]:
    return sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file() and p.name != ".markovgames")


@pytest.mark.parametrize("which", ["paper", "three"])
@FUZZ
@given(data=st.data())
def test_damaged_run_directory_is_evaluated_exactly_or_refused(intact_runs, tmp_path_factory, capsys, which, data):
    intact, reference = intact_runs[which]
    run = tmp_path_factory.mktemp("damaged") / "run"
    shutil.copytree(intact, run)
    target = data.draw(st.sampled_from(_files(run)), label="file")
    damage = data.draw(damages(), label="damage")
    damage.apply(run / target)
    code, err = _call(["evaluate", str(run), *EVALUATE], capsys)
    event(f"{target}: {'accepted' if code == 0 else 'refused'}")  # --hypothesis-show-statistics
    if code != 0:
        _check_refusal(code, err, run)
        assert not (run / "evaluation.json").exists()
        return
    got = _numbers(json.loads((run / "evaluation.json").read_text()))
    want = _numbers(reference)
    assert got.keys() == want.keys()
    for key, value in got.items():
        assert math.isfinite(value), (key, value)
        assert abs(value - want[key]) <= ATOL, f"{target} damaged ({damage}): {key} = {value}, intact {want[key]}"


def test_the_fuzzer_sees_each_kind_of_damage(intact_runs, tmp_path, capsys):
    """The checks the fuzzer relies on, one deterministic member each (so that a weakened check
    fails here even if the random draws miss it)."""
    intact, _ = intact_runs["paper"]
    for target, damage, needle in (
        ("trajectory/policy_0.npy", Damage(True, 0.6, (), ()), "truncated"),
        ("trajectory/policy_1.npy", Damage(False, 0, (300,), (0x40,)), "policy_1.npy"),  # a data byte: off the simplex
        ("curve.npz", Damage(False, 0, (400,), (1,)), "SHA-256 differs"),
        ("game.json", Damage(False, 0, (200,), (1,)), "game.json"),
        ("metrics.json", Damage(True, 0.5, (), ()), "metrics.json"),
    ):
        run = tmp_path / target.replace("/", "_") / "run"
        shutil.copytree(intact, run)
        damage.apply(run / target)
        code, err = _call(["evaluate", str(run), *EVALUATE], capsys)
        _check_refusal(code, err, run)
        assert needle in err, err


# ---------------------------------------------------------------------------------------
# run --resume
# ---------------------------------------------------------------------------------------
RESUME_T = 2000


@contextlib.contextmanager
def _interrupted_at(iteration: int):
    """Make ``markovgames run`` stop (as on Ctrl-C) once ``iteration`` iterations are done."""
    from markovgames.cli import _run as cli_run

    original = cli_run.iteration_progress

    @contextlib.contextmanager
    def interrupted(total, description, enabled):
        def advance(done):
            if done >= iteration:
                raise KeyboardInterrupt

        yield advance

    cli_run.iteration_progress = interrupted
    try:
        yield
    finally:
        cli_run.iteration_progress = original


def _resume_args(out: Path) -> list[str]:
    return [
        "run",
        "--game",
        "paper",
        "--algorithm",
        "stage_cce",
        "-T",
        str(RESUME_T),
        "--checkpoint-every",
        "100",
        "--out",
        str(out),
        "--quiet",
    ]


def test_damaged_interrupted_run_is_resumed_exactly_or_refused(tmp_path, capsys):
    """Each file of an interrupted run's staging directory, truncated or with a byte flipped in
    its header or its data: ``--resume`` finishes with the uninterrupted run's numbers, or
    refuses with one line naming the staging directory's file and keeps the saved state."""
    from markovgames.experiments import load_run_directory, staging_directory

    reference = load_run_directory(_reference_run(tmp_path / "reference"))
    cases = [
        (name, damage)
        for name in ("state.npz", "config.json", "trajectory/policy_0.npy", "trajectory/policy_1.npy")
        # Truncated before the saved iteration (700 of 2000) or after it, a flip in the header, one near the end.
        for damage in (
            Damage(True, 0.2, (), ()),
            Damage(True, 0.5, (), ()),
            Damage(False, 0, (40,), (0x11,)),
            Damage(False, 0, (-9,), (0x40,)),
        )
    ]
    failures = []
    for k, (name, damage) in enumerate(cases):
        out = tmp_path / f"case{k}"
        with _interrupted_at(700):
            assert main(_resume_args(out)) == 130
        capsys.readouterr()
        staging = staging_directory(out)
        damage.apply(staging / name)
        code, err = _call(_resume_args(out) + ["--resume"], capsys)
        try:
            if code != 0:
                _check_refusal(code, err, staging)
                assert (staging / "state.npz").exists(), "the saved state was not kept"
                continue
            stored = load_run_directory(out)
            for field in ("value", "certified_ce_bound", "certified_cce_bound"):
                np.testing.assert_array_equal(getattr(stored, field), getattr(reference, field))
            for got, want in zip(stored.policies, reference.policies, strict=True):
                np.testing.assert_array_equal(got, want)
        except AssertionError as err_:
            first = next((line.strip() for line in str(err_).splitlines() if line.strip()), repr(err_))
            failures.append(f"{name} {damage}: {first}")
    assert not failures, "\n".join(failures)


def _reference_run(out: Path) -> Path:
    assert main(_resume_args(out)) == 0
    return out
