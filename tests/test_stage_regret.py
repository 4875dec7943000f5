"""Regret curves of the stage-based update, against a literal loop over the stages.

Its learners restart every stage with weight 1 per iteration, so a player's regret at iteration
``t`` is the average regret over the iterations of ``t``'s stage so far, against the utilities the
learner saw in that stage (module docstrings of ``markovgames.dynamics._regret`` and ``._stage``).
On one state with ``H = 1`` the stages have lengths 1, 2, 4, 8, ...; ``Q^1 = 0`` in stage 1 (its
utilities, so its regrets, are 0) and ``Q^tau`` is the payoff tensor from stage 2 on.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import StopRun, beyond_default_in_full, case, make_random_game, stop_after
from markovgames._schedules import stage_schedule
from markovgames.dynamics import _engine, run, run_batch
from test_interplay import payoffs_of, zero_sum
from test_textbook_averaging import _utilities

#: The optimisation level's threshold of the engine (before the `level_two` fixture changes it).
QUICK_RUN_WORK = _engine.QUICK_RUN_WORK

TOL = 1e-12
T = 15  # stages of lengths 1, 2, 4, 8 for H = 1


def literal_stage_regrets(payoffs, played, i: int, utilities=None) -> tuple[np.ndarray, np.ndarray]:
    """Player ``i``'s average external and swap regret within each stage, after each prefix.

    ``utilities`` ``(T, A_i)``: what player ``i`` saw (default: ``[r_i x_{-i}^t]``, 0 in stage 1).
    """
    x = played[i]
    steps = len(x)
    stages = stage_schedule(1, steps)
    if utilities is None:
        utilities = np.array([_utilities(payoffs[i], [p[t] for p in played], i) for t in range(steps)])
    U = np.where((stages.stage[:steps] == 1)[:, None], 0.0, utilities)
    external, swap = [], []
    for t in range(steps):
        first = t - (int(stages.position[t]) - 1)  # the stage's first iteration (0-based)
        xs, us = x[first : t + 1], U[first : t + 1]
        gain = us - np.sum(us * xs, axis=1, keepdims=True)
        external.append(np.max(gain.mean(axis=0)))
        swap.append(sum(np.max((xs[:, a, None] * (us - us[:, a, None])).mean(axis=0)) for a in range(x.shape[1])))
    return np.array(external), np.array(swap)


def test_the_stages_of_a_normal_form_game():
    stages = stage_schedule(1, T)
    assert list(stages.lengths) == [1, 2, 4, 8]
    assert list(stages.position[:T]) == [1, 1, 2, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8]


# Each learner with one optimism setting by default (rm-plus+stage's other one is the alternation
# test's default case), both with both in the full mode.
@pytest.mark.parametrize(
    "learner, optimistic",
    [
        case("hedge", True, default=True),
        case("hedge", False, default=False),
        case("rm-plus", True, default=False),
        case("rm-plus", False, default=True),
    ],
)
def test_stage_regret_curves_on_a_normal_form_game_are_the_literal_ones(learner, optimistic):
    game = make_random_game(47, 2, 1, 1, (3, 2))
    result = run(game, f"{learner}+stage", T=T, regret=True, eta=0.7, optimistic=optimistic)
    played = [p[:, 0, 0] for p in result.policies]
    for i in range(2):
        external, swap = literal_stage_regrets(payoffs_of(game), played, i)
        np.testing.assert_allclose(result.external_regret[:, i], external, rtol=0, atol=TOL)
        np.testing.assert_allclose(result.swap_regret[:, i], swap, rtol=0, atol=TOL)
    # Stage 1 (Q^1 = 0) has no regret; every stage restarts the average.
    assert np.all(result.external_regret[0] == 0.0) and np.all(result.swap_regret[0] == 0.0)
    assert np.max(result.swap_regret) > 0


# Optimistic by default (the non-optimistic rm-plus+stage is the normal-form test's default case).
@pytest.mark.parametrize("optimistic", beyond_default_in_full([True, False], {True}))
def test_stage_regret_curves_under_alternation_use_the_utilities_the_learners_saw(optimistic):
    """Player 0 saw ``[r_0 y^t]``; player 1 saw ``[r_1 x^{t+1}]`` with ``x^{t+1}`` player 0's next
    strategy in the same stage: the played one except at a stage's last iteration (then the
    restarted learner plays another), where only player 0 is checked."""
    game = zero_sum(48)
    result = run(game, "rm-plus+stage", T=T, regret=True, order="alternating", optimistic=optimistic)
    P = payoffs_of(game)
    x, y = (p[:, 0, 0] for p in result.policies)
    external, swap = literal_stage_regrets(P, [x, y], 0)
    np.testing.assert_allclose(result.external_regret[:, 0], external, rtol=0, atol=TOL)
    np.testing.assert_allclose(result.swap_regret[:, 0], swap, rtol=0, atol=TOL)
    stages = stage_schedule(1, T)
    last = stages.position[:T] == stages.lengths[stages.stage[:T] - 1]  # a stage's last iteration
    nxt = np.concatenate([x[1:], x[-1:]])  # x^{t+1} where it is played in the same stage
    U1 = np.array([_utilities(P[1], [nxt[t], y[t]], 1) for t in range(T)])
    external, swap = literal_stage_regrets(P, [x, y], 1, U1)
    np.testing.assert_allclose(result.external_regret[~last, 1], external[~last], rtol=0, atol=TOL)
    np.testing.assert_allclose(result.swap_regret[~last, 1], swap[~last], rtol=0, atol=TOL)
    assert np.count_nonzero(~last) == T - 4


# H = 3 (another stage schedule: lengths 3, 4, 5, ... against 2, 3, 4, ...) in the full mode.
@pytest.mark.parametrize("horizon", [2, pytest.param(3, marks=pytest.mark.full)])
def test_stage_regret_curves_in_a_markov_game(horizon, level_two, monkeypatch):
    """Swap regret is at least external regret; stage 1 (``Q^1 = 0``) has none; a batch gives its
    single runs' curves; the curves leave the rest of the run unchanged."""
    game = make_random_game(50 + horizon, 2, horizon, 3, (2, 3))
    steps = 40
    with_regret = run(game, "bm-hedge+stage", T=steps, regret=True)
    plain = run(game, "bm-hedge+stage", T=steps)
    for field in ("value", "certified_ce_bound", "certified_cce_bound"):
        np.testing.assert_array_equal(getattr(with_regret, field), getattr(plain, field))
    for a, b in zip(with_regret.policies, plain.policies, strict=True):
        np.testing.assert_array_equal(a, b)
    assert plain.external_regret is None
    assert np.all(with_regret.swap_regret >= with_regret.external_regret - TOL)
    assert np.all(with_regret.swap_regret >= -TOL)
    assert np.all(with_regret.external_regret[:horizon] == 0.0) and np.max(with_regret.swap_regret) > 0
    # The batch against its single runs to 1e-13 (the single runs are with_regret's compiled loop);
    # a batch in chunks is test_stage_regret_curves_resume_bit_identical's. Only the comparison of
    # the two programs above is bit for bit: the batch compiles at a short run's level (in half the time).
    monkeypatch.setattr(_engine, "QUICK_RUN_WORK", QUICK_RUN_WORK)
    batch = run_batch([game, game], "bm-hedge+stage", T=steps, etas=[0.2, 0.5], regret=True)
    for k, eta in enumerate([0.2, 0.5]):
        single = run(game, "bm-hedge+stage", T=steps, eta=eta, regret=True)
        np.testing.assert_allclose(batch.run(k).external_regret, single.external_regret, rtol=0, atol=1e-13)
        np.testing.assert_allclose(batch.run(k).swap_regret, single.swap_regret, rtol=0, atol=1e-13)
        np.testing.assert_allclose(batch.run(k).certified_cce_bound, single.certified_cce_bound, rtol=0, atol=1e-13)


def test_kept_prefixes_and_chunks_give_the_same_curves():
    # The chunked run is test_stage_regret_curves_resume_bit_identical's (its compiled loop).
    game = make_random_game(53, 2, 2, 2, (2, 2))
    settings = dict(T=300, regret=True, record_trajectory=False)
    full = run(game, "hedge+stage", **settings)
    kept = [1, 5, 17, 18, 59, 60, 300]
    part = run(game, "hedge+stage", checkpoints=kept, chunk_size=50, **settings)
    rows = np.asarray(kept) - 1
    np.testing.assert_array_equal(part.external_regret, full.external_regret[rows])
    np.testing.assert_array_equal(part.swap_regret, full.swap_regret[rows])
    np.testing.assert_array_equal(part.certified_cce_bound, full.certified_cce_bound[rows])


@pytest.mark.parametrize("checkpoints", [None, [1, 7, 60, 61, 250, 300]])
def test_stage_regret_curves_resume_bit_identical(tmp_path, checkpoints):
    """The state file keeps the regret rows of the finished chunks (the carry's records do not)."""
    game = make_random_game(54, 2, 2, 2, (2, 2))
    # The uninterrupted runs in the same chunks (their compiled loops; that chunks do not change
    # the curves is test_kept_prefixes_and_chunks_give_the_same_curves').
    settings = dict(T=300, regret=True, checkpoints=checkpoints, record_trajectory=False, chunk_size=50)
    full = run(game, "hedge+stage", **settings)
    state = dict(state_file=tmp_path / "state.npz", state_every=50)
    with pytest.raises(StopRun):
        run(game, "hedge+stage", progress=stop_after(120), **settings, **state)
    resumed = run(game, "hedge+stage", **settings, **state)
    for field in ("value", "certified_ce_bound", "certified_cce_bound", "external_regret", "swap_regret"):
        np.testing.assert_array_equal(getattr(resumed, field), getattr(full, field))
    # A batch too.
    batch = dict(T=300, etas=[0.1, 0.3], regret=True, record_trajectory=False, chunk_size=50)
    full_batch = run_batch(game, "hedge+stage", **batch)
    with pytest.raises(StopRun):
        run_batch(game, "hedge+stage", progress=stop_after(100), state_file=tmp_path / "b.npz", state_every=50, **batch)
    resumed_batch = run_batch(game, "hedge+stage", state_file=tmp_path / "b.npz", state_every=50, **batch)
    np.testing.assert_array_equal(resumed_batch.swap_regret, full_batch.swap_regret)
    np.testing.assert_array_equal(resumed_batch.certified_cce_bound, full_batch.certified_cce_bound)
