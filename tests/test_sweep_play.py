"""Sweeps that learn from play: V-learning's names and compositions on ``bandit:M`` (docs/howto-sweep.md,
"Feedback models"). Every run's numbers are those of `run_vlearning` with the run's draws' seed and of
`prefix_curves` of its output policy (after ``T'`` rounds: ``T' M`` episodes), the exact gaps those of
the policy's prefix; a second run of the sweep computes nothing; what such runs have no form of is
refused naming the key."""

from __future__ import annotations

import json
import re
import textwrap
import tomllib

import numpy as np
import pytest

from markovgames.dynamics import run_vlearning
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, prefix_curves
from markovgames.experiments import load_results, parse_sweep_config, plan_sweep
from markovgames.experiments._sweep import RUNS_DIR, run_sweep
from markovgames.experiments._sweep_config import SweepConfigError
from markovgames.experiments._sweep_plan import derive_feedback_seeds
from markovgames.games import get_builtin

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

T = 40
CHECKPOINTS = [4, 40]
SEEDS = 2
CONFIG = textwrap.dedent(
    f"""
    T = {T}
    checkpoints = {CHECKPOINTS}
    seeds = {SEEDS}
    exact = true
    games = ["paper"]
    algorithms = [
      "ce-v",
      {{name = "hedge+smooth", feedbacks = ["bandit:3"], etas = [0.1, 0.3], optimistic = [true, false]}},
      "smooth_cce",
    ]
    """
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("play")
    config = root / "sweep.toml"
    config.write_text(CONFIG)
    report = run_sweep(config, root / "out", workers=1)
    # ce-v once per seed, hedge+smooth on bandit:3 per rate, optimism and seed, smooth_cce once.
    assert not report.failures and report.total_runs == SEEDS + 2 * 2 * SEEDS + 1
    return root


def _plan(text: str, tmp_path):
    return plan_sweep(parse_sweep_config(tomllib.loads(text)), tmp_path)


def test_runs_from_play_are_the_librarys(sweep):
    df = load_results(sweep / "out")
    game = get_builtin("paper")
    seeds = derive_feedback_seeds(0, SEEDS)
    play = df[df["feedback"] != "full"]
    assert set(play["feedback"]) == {"bandit:1", "bandit:3"}
    assert set(play.loc[play["algorithm"] == "ce-v", "feedback"]) == {"bandit:1"}
    assert sorted(set(play["feedback_seed"].astype(int))) == sorted(seeds)
    checked = 0
    for (algorithm, feedback, eta, optimistic, draw_seed), rows in play.groupby(
        ["algorithm", "feedback", "eta", "optimistic", "feedback_seed"]
    ):
        M = int(feedback.partition(":")[2])
        if algorithm == "ce-v":
            # Its papers' rates and bandits: no rate of its own, no optimism, its CE gap.
            assert eta == "theory" and not optimistic and rows["eta_value"].isna().all()
            assert set(rows["concept"]) == {"ce"}
            direct = run_vlearning(game, "ce-v", T * M, seed=int(draw_seed))
        else:
            direct = run_vlearning(
                game, algorithm, T * M, seed=int(draw_seed), feedback=feedback, eta=float(eta), optimistic=bool(optimistic)
            )
        curves = prefix_curves(game, direct.policy, CHECKPOINTS)
        for _, row in rows.iterrows():
            k = CHECKPOINTS.index(row["checkpoint"])
            # A batch of seeds equals single runs to rounding (docs/vlearning.md).
            np.testing.assert_allclose(row["value"], curves.value[k], rtol=0, atol=1e-12)
            assert row["certified_ce_gap"] == pytest.approx(curves.certified_ce_gap[k], abs=1e-12)
            assert row["certified_cce_gap"] == pytest.approx(curves.certified_cce_gap[k], abs=1e-12)
            # T' rounds of M episodes of H = 2 transitions.
            assert row["samples"] == row["checkpoint"] * M * 2
            prefix = direct.policy.prefix(int(row["checkpoint"]))
            assert row["exact_ce_gap"] == pytest.approx(exact_ce_gap(game, prefix).gap, abs=1e-12)
            assert row["exact_cce_gap"] == pytest.approx(exact_cce_gap(game, prefix).gap, abs=1e-12)
            assert row["exact_cce_gap"] <= row["certified_cce_gap"] + 1e-12
            checked += 1
    assert checked == len(play) == (SEEDS + 4 * SEEDS) * len(CHECKPOINTS)
    # The two rates and the optimism reached the runs: their numbers differ.
    bandit = play[(play["feedback"] == "bandit:3") & (play["checkpoint"] == T)]
    assert bandit.groupby(["eta", "optimistic"])["certified_cce_gap"].median().nunique() == 4


def test_run_files_record_the_model_and_seed_and_a_second_run_computes_nothing(sweep):
    docs = [json.loads(p.read_text()) for p in (sweep / "out" / RUNS_DIR).glob("*.json")]
    play = [d for d in docs if d["spec"].get("feedback", "full").startswith("bandit:")]
    assert len(play) == SEEDS + 4 * SEEDS
    assert all(isinstance(d["spec"]["feedback_seed"], int) for d in play)
    report = run_sweep(sweep / "sweep.toml", sweep / "out", workers=1)
    assert not report.failures and report.computed_runs == 0


@pytest.mark.parametrize(
    "change, needle",
    [
        ('dtype = "float32"', "dtype: ce-v learns from play, which runs in float64 only"),
        ("last_iterate = true", "last_iterate: ce-v learns from play, whose runs report no last iterate"),
        ("regret = true", "algorithms[0]: ce-v learns from play, whose runs record no regret curves"),
        ('orders = ["alternating"]', "algorithms[1]: hedge+smooth on bandit:3 learns from play: its players update"),
        ('eta_schedules = ["sqrt"]', "algorithms[1]: hedge+smooth on bandit:3 learns from play with a constant"),
    ],
)
def test_what_play_has_no_form_of_is_refused(tmp_path, change, needle):
    text = (
        'T = 10\nseeds = 1\ngames = ["paper"]\n'
        + change
        + '\nalgorithms = ["ce-v", {name = "hedge+smooth", feedbacks = ["bandit:3"]}]\n'
    )
    if "orders" in change or "eta_schedules" in change:  # for the composition only
        text = text.replace('"ce-v", ', "")
        needle = needle.replace("algorithms[1]", "algorithms[0]")
    with pytest.raises(SweepConfigError, match=re.escape(needle)):
        _plan(text, tmp_path)


@pytest.mark.parametrize(
    "algorithm, needle",
    [
        ('{name = "cce-v", etas = [0.1]}', "algorithms[0]: etas: cce-v runs from play (bandit:1) with its papers' rates"),
        ('{name = "stage-v", feedbacks = ["bandit:2"]}', "algorithms[0]: feedbacks: stage-v runs from play"),
        (
            '{name = "hedge+smooth", feedbacks = ["bandit:2"], etas = ["theory"]}',
            "algorithms[0]: etas: 'theory' has no meaning on bandit:2",
        ),
        (
            '{name = "extragradient+smooth", feedbacks = ["bandit:2"]}',
            "learner 'extragradient' makes two utility queries per iteration; on bandit:2",
        ),
    ],
)
def test_bad_entries_from_play_are_refused(tmp_path, algorithm, needle):
    with pytest.raises(SweepConfigError, match=re.escape(needle)):
        _plan(f'T = 10\ngames = ["paper"]\nalgorithms = [{algorithm}]\n', tmp_path)


def test_bandit_names_are_canonical_and_checked(tmp_path):
    base = {"T": 10, "games": ["paper"], "algorithms": ["hedge+smooth"]}
    assert parse_sweep_config({**base, "feedbacks": ["bandit:04"]}).feedbacks == ["bandit:4"]
    with pytest.raises(SweepConfigError, match="feedback must be 'bandit:M'"):
        parse_sweep_config({**base, "feedbacks": ["bandit:0"]})
