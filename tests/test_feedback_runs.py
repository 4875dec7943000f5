"""Runs under sampled feedback: reproducible from the seed, whatever the chunks, the batch or an
interruption; the seed and the samples recorded; the exact mode full information's; bad settings
refused."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import StopRun, beyond_default_in_full, make_paper_game, make_random_game, stop_after
from markovgames.dynamics import RunStateError, parse_feedback, run, run_batch

CURVES = ("value", "certified_ce_bound", "certified_cce_bound")
#: The runs' length: each distinct length (and chunk length) is another compiled loop, so the runs
#: here share a few (60 iterations see seven stage ends at H = 2: 2, 5, 9, 15, 24, 37, 56).
T = 60
#: The chunks of the chunked and the interrupted runs: one compiled loop for both.
CHUNK = 20


def _same(a, b) -> None:
    for field in CURVES:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    if a.policies is not None:
        for x, y in zip(a.policies, b.policies, strict=True):
            np.testing.assert_array_equal(x, y)


#: The seed test's algorithms: both value updates and both kinds of learner by default; a learner of
#: two utility queries (its draws per iteration keyed as the others', by the iteration: the samples
#: test counts them by default) in the full mode.
SEED_ALGORITHMS = beyond_default_in_full(["smooth_ce", "stage_cce", "exrm-plus+smooth"], {"smooth_ce", "stage_cce"})


@pytest.mark.parametrize("algorithm", SEED_ALGORITHMS)
def test_a_seed_gives_one_run_whatever_the_chunks_and_an_interruption(tmp_path, algorithm):
    game = make_paper_game()
    settings = dict(feedback="sampled:2", seed=11)
    whole = run(game, algorithm, T=T, **settings)
    _same(run(game, algorithm, T=T, chunk_size=CHUNK, **settings), whole)
    # Saved every CHUNK iterations (chunks of CHUNK); stopped after 40, resumed from the state there.
    kwargs = dict(trajectory_dir=tmp_path / "part", state_file=tmp_path / "state.npz", state_every=CHUNK)
    with pytest.raises(StopRun):
        run(game, algorithm, T=T, progress=stop_after(30), **settings, **kwargs)
    _same(run(game, algorithm, T=T, **settings, **kwargs), whole)
    # Another seed draws otherwise; a state file of another seed is refused.
    other = run(game, algorithm, T=T, feedback="sampled:2", seed=12)
    assert not np.array_equal(other.value, whole.value)
    with pytest.raises((RunStateError, ValueError), match="state"):
        run(game, algorithm, T=T, feedback="sampled:2", seed=12, **kwargs)


def test_run_r_of_a_batch_is_the_run_of_its_seed():
    game = make_paper_game()
    # (The single runs are the program of the sampled:1 run below.)
    batch = run_batch(game, "smooth_cce", T, feedback="sampled:1", seeds=[4, 9, 2])
    assert batch.seeds == (4, 9, 2) and batch.feedback == "sampled:1"
    for r, seed in enumerate((4, 9, 2)):
        single = run(game, "smooth_cce", T, feedback="sampled:1", seed=seed, record_trajectory=False)
        for field in CURVES:
            np.testing.assert_allclose(getattr(batch, field)[r], getattr(single, field), rtol=0, atol=1e-13)
        assert batch.run(r).seed == seed
    default = run_batch(game, "smooth_cce", T, feedback="sampled:1", etas=[0.2, 0.2, 0.2])  # (the batch's program)
    assert default.seeds == (0, 1, 2)


#: Three players here; test_feedback_reference.py checks the exact mode of every learner with every
#: value update on two (a covering subset by default): the paper's two updates by default here.
EXACT_ALGORITHMS = beyond_default_in_full(
    ["smooth_ce", "stage_cce", "rm-plus+smooth-linear", "extragradient+smooth"], {"smooth_ce", "stage_cce"}
)


#: The exact mode's game, length and optimism: those of test_engine_vs_reference.py's three-player
#: game (random2) and its default cases there (their compiled loops).
EXACT_GAME, EXACT_T, EXACT_OPTIMISM = (2, 3, 2, 2, (2, 2, 3)), 14, {"smooth_ce": True, "stage_cce": False}


@pytest.mark.parametrize("algorithm", EXACT_ALGORITHMS)
def test_the_exact_mode_is_full_information_bit_for_bit(algorithm):
    game = make_random_game(*EXACT_GAME)
    optimistic = EXACT_OPTIMISM.get(algorithm, True)
    full = run(game, algorithm, T=EXACT_T, optimistic=optimistic)
    exact = run(game, algorithm, T=EXACT_T, optimistic=optimistic, feedback="sampled:exact", seed=3)
    _same(exact, full)
    assert exact.feedback == "sampled:exact" and exact.seed is None and exact.samples_used is None
    assert exact.identity_residual == full.identity_residual


def test_many_samples_approach_full_information():
    # The estimates' noise falls like 1/sqrt(K): with K = 4096 the run stays close to full information's.
    game = make_paper_game()
    full = run(game, "smooth_cce", T=T, record_trajectory=False)
    gaps = {
        k: np.max(np.abs(run(game, "smooth_cce", T=T, record_trajectory=False, feedback=f"sampled:{k}").value - full.value))
        for k in (1, 4096)
    }
    assert gaps[4096] < 0.02 < gaps[1], gaps
    assert full.samples_used is None  # full information draws nothing


def test_samples_are_counted_per_iteration_and_per_value_update():
    game = make_paper_game()  # N = H = S = 2, two actions each
    # (The runs of the seed test above: one compiled loop each.)
    smooth = run(game, "smooth_ce", T=T, feedback="sampled:2", seed=11)
    # Profiles K N H S = 16, next states K (H - 1) S prod(A) = 16 per iteration.
    np.testing.assert_array_equal(smooth.samples_used, 32 * np.arange(1, T + 1))
    assert smooth.identity_residual is None
    stage = run(game, "stage_cce", T=T, feedback="sampled:2", seed=11)
    ends = np.cumsum([2, 3, 4, 6, 9, 13, 19])  # the stages' ends up to T = 60 (L_1 = H = 2)
    updates = np.searchsorted(ends, np.arange(1, T + 1), side="right")
    np.testing.assert_array_equal(stage.samples_used, 16 * np.arange(1, T + 1) + 16 * updates)
    # A learner of two utility queries draws the profiles twice: 2 K N H S = 32, and 16 next states.
    two_query = run(game, "exrm-plus+smooth", T=T, feedback="sampled:2", seed=11)
    np.testing.assert_array_equal(two_query.samples_used, (32 + 16) * np.arange(1, T + 1))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bandit", "is online play.*run_vlearning"),
        ("sampled", "give the number of samples"),
        ("sampled:0", "from 1 to"),
        ("sampled:-3", "from 1 to"),
        ("sampled:2.5", "from 1 to"),
        ("sampled:99999999", "from 1 to"),
        (3, "a name such as"),
    ],
)
def test_bad_feedback_models_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_feedback(text)
    with pytest.raises(ValueError, match=message):
        run(make_paper_game(), "smooth_ce", T=5, feedback=text)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_bad_seeds_are_refused(seed):
    with pytest.raises(ValueError, match="seed"):
        run(make_paper_game(), "smooth_ce", T=5, feedback="sampled:1", seed=seed)
    with pytest.raises(ValueError, match="seeds"):
        run_batch(make_paper_game(), "smooth_ce", T=5, feedback="sampled:1", seeds=[0, seed])


def test_float32_runs_draw_too():
    game = make_paper_game()
    a = run(game, "smooth_ce", T=T, feedback="sampled:2", seed=1, dtype="float32", record_trajectory=False)
    b = run(game, "smooth_ce", T=T, feedback="sampled:2", seed=1, dtype="float32", record_trajectory=False)
    np.testing.assert_array_equal(a.value, b.value)
    assert np.all(np.isfinite(a.certified_ce_gap)) and np.all(a.certified_ce_gap >= -1e-5)
