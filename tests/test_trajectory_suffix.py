"""Keeping a suffix of the trajectory: the dropped index mass, the kept rows, and the error bounds."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from conftest import PAPER_ALGORITHMS, cli_in_process
from markovgames.dynamics import IndexKernel, run, run_batch, trajectory_suffix
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, policy_value
from markovgames.games import random_game
from markovgames.policies import IndexChainPolicy

#: The output policy's index kernel of each of the paper's algorithms.
KIND = {"smooth_ce": "smooth", "smooth_cce": "smooth", "stage_cce": "stage"}


def _brute_force_escape(kind: str, T: int, H: int, first_kept: int) -> float:
    """P(the index chain visits an iteration < first_kept), by enumerating every index path."""
    kernel = IndexKernel(kind, T, H)
    rows = np.stack([kernel.push(np.eye(T)[t]) for t in range(T)])  # rows[t-1] = mu_t
    start = kernel.start_distribution()
    total = 0.0
    for t0 in range(1, T + 1):
        for path in itertools.product(range(1, T + 1), repeat=H):
            p, prev = start[t0 - 1], t0
            for j in path:
                p *= rows[prev - 1, j - 1]
                prev = j
            if p > 0 and min(path) < first_kept:
                total += p
    return total


@pytest.mark.parametrize("algorithm", ["smooth_ce", "stage_cce"])
@pytest.mark.parametrize(("T", "H"), [(6, 2), (7, 3), (9, 1)])
def test_dropped_mass_equals_path_enumeration(algorithm, T, H):
    kind = KIND[algorithm]
    for tol in (0.0, 0.01, 0.2, 0.6):
        suffix = trajectory_suffix(kind, T, H, tol)
        assert suffix.dropped_mass <= tol + 1e-15
        assert suffix.dropped_mass == pytest.approx(_brute_force_escape(kind, T, H, suffix.first_kept), abs=1e-13)
        # Shortest: keeping one iteration fewer would exceed the tolerance.
        if suffix.first_kept < T:
            assert _brute_force_escape(kind, T, H, suffix.first_kept + 1) > tol


def test_bounds_and_tolerance_checks():
    suffix = trajectory_suffix("smooth", 5000, 3, 1e-3)
    assert suffix.value_error_bound == pytest.approx(3 * suffix.dropped_mass)
    assert suffix.gap_error_bound == pytest.approx(6 * suffix.dropped_mass)
    assert trajectory_suffix("smooth", 5000, 3, 0.0).first_kept == 1
    assert trajectory_suffix("smooth", 5000, 3, np.float32(1e-3)) == trajectory_suffix("smooth", 5000, 3, float(np.float32(1e-3)))
    # Tiny tolerances: the dropped mass is summed, never 1 - (kept mass), so it is exact near 0.
    tiny = trajectory_suffix("smooth", 2000, 50, 1e-14)
    assert 0 < tiny.dropped_mass <= 1e-14 and tiny.first_kept > 1
    assert trajectory_suffix("smooth", 100, 30, 1e-18).dropped_mass <= 1e-18
    for bad in (1.5, True, "0.1"):
        with pytest.raises(ValueError, match=r"trajectory tolerance must be a number in \[0, 1\)"):
            trajectory_suffix("smooth", 10, 2, bad)
    with pytest.raises(ValueError, match="needs record_trajectory=True"):
        run(random_game(2, 2, 2, 2, seed_or_rng=0), "smooth_ce", T=10, record_trajectory=False, trajectory_tolerance=0.1)


@pytest.mark.parametrize("algorithm", PAPER_ALGORITHMS)
def test_kept_rows_are_the_full_runs_rows_and_bounds_hold(algorithm, tmp_path):
    game = random_game(2, 3, 2, 2, seed_or_rng=11)
    T = 600  # long enough that the suffix of either kernel starts after some whole chunks
    full = run(game, algorithm, T=T, eta=0.3)
    first = trajectory_suffix(KIND[algorithm], T, game.horizon, 0.05).first_kept
    chunk = (first - 1) // 2 + 3
    # The suffix starts inside a chunk, and some chunks lie wholly before it.
    assert chunk < first - 1 and (first - 1) % chunk != 0
    cut = run(game, algorithm, T=T, eta=0.3, trajectory_tolerance=0.05, chunk_size=chunk, trajectory_dir=tmp_path)
    assert cut.suffix.first_kept == first
    for kept, whole in zip(cut.policies, full.policies, strict=True):
        assert kept.shape[0] == T - first + 1
        np.testing.assert_array_equal(kept, whole[first - 1 :])
    # The metrics never depend on what is kept.
    np.testing.assert_array_equal(cut.value, full.value)
    truncated = IndexChainPolicy.from_run(cut)
    exact = IndexChainPolicy.from_run(full)
    bound = cut.suffix
    assert np.max(np.abs(policy_value(game, truncated) - policy_value(game, exact))) <= bound.value_error_bound
    for gap in (exact_ce_gap, exact_cce_gap):
        assert abs(gap(game, truncated).gap - gap(game, exact).gap) <= bound.gap_error_bound
    with pytest.raises(ValueError, match=f"kept only iterations {first}..{T}"):
        IndexChainPolicy.from_run(cut, T - 1)


def test_batched_suffix():
    game = random_game(2, 2, 2, 2, seed_or_rng=3)
    full = run_batch(game, "smooth_ce", T=900, etas=[0.1, 0.2], record_trajectory=True)
    cut = run_batch(game, "smooth_ce", T=900, etas=[0.1, 0.2], record_trajectory=True, trajectory_tolerance=0.01)
    first = cut.suffix.first_kept
    assert first > 1
    np.testing.assert_array_equal(cut.policies[1], full.policies[1][:, first - 1 :])
    assert cut.run(1).suffix == cut.suffix


def test_cli_run_and_evaluate_with_a_suffix(tmp_path, monkeypatch, capsys):
    # The commands in this process (they need no process of their own).
    out = tmp_path / "run"
    cmd = ["run", "--game", "paper", "--algorithm", "smooth_cce", "-T", "3000"]
    done = cli_in_process([*cmd, "--out", str(out), "--trajectory-tolerance", "0.01", "--quiet"], tmp_path, monkeypatch, capsys)
    assert done.returncode == 0, done.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    suffix = metrics["trajectory_suffix"]
    assert suffix["first_kept"] > 1 and suffix["dropped_mass"] <= 0.01
    assert np.load(out / "trajectory" / "policy_0.npy").shape[0] == 3000 - suffix["first_kept"] + 1
    done = cli_in_process(["evaluate", str(out), "--exact", "--quiet"], tmp_path, monkeypatch, capsys)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "evaluation.json").read_text())
    assert report["trajectory_suffix"] == suffix
    assert abs(report["exact_cce_gap"] - report["certified_cce_gap"]) <= suffix["gap_error_bound"] + 1e-4
    bad = cli_in_process(
        [*cmd, "--out", str(tmp_path / "x"), "--trajectory-tolerance", "0.01", "--exact"], tmp_path, monkeypatch, capsys
    )
    assert bad.returncode == 2 and "drop --trajectory-tolerance" in bad.stderr
    assert not (tmp_path / "x").exists()
