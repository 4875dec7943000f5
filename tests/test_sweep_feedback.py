"""Sweeps over feedback models: the grid (a sampled feedback once per seed, with its own draws), the
batches (runs that differ only in their draws' seed share one ``run_batch`` call), the results
columns (``feedback``, ``feedback_seed``, ``samples``) against single runs, summarize and plot
against the samples, the refusals, and results written before these columns."""

from __future__ import annotations

import json
import shutil
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest

from markovgames.cli import main
from markovgames.dynamics import run
from markovgames.experiments import load_results, parse_sweep_config, plan_sweep, summarize_results
from markovgames.experiments.sweeps._plan import derive_feedback_seeds, derive_game_seeds, grid_size
from markovgames.experiments.sweeps._sweep import RESULTS_FILE, RUNS_DIR, run_sweep
from markovgames.games import get_builtin, random_game

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

T = 30
CHECKPOINTS = [10, 30]
SEEDS = 2
# The paper's game and random games of its shape (one batch per feedback model): full information
# once per game, sampled:2 once per seed (the paper's game with the draws of seeds 0 and 1, random
# game k with those of seed k).
CONFIG = textwrap.dedent(
    f"""
    T = {T}
    checkpoints = {CHECKPOINTS}
    seeds = {SEEDS}
    feedbacks = ["full", "sampled:2"]
    games = ["paper", {{random = {{players = 2, horizon = 2, states = 2, actions = 2}}, label = "rg"}}]
    algorithms = ["hedge+smooth"]
    """
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("feedback")
    config = root / "sweep.toml"
    config.write_text(CONFIG)
    report = run_sweep(config, root / "out", workers=1)
    assert not report.failures and report.total_runs == (1 + SEEDS) + (SEEDS + SEEDS)
    return root


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        return stop.code


def _random_game(k: int):
    seed = derive_game_seeds(0, SEEDS)[k]
    return random_game(2, 2, 2, (2, 2), seed_or_rng=seed)


def test_results_columns_and_batched_runs_equal_single_runs(sweep):
    df = load_results(sweep / "out")
    for column in ("feedback", "feedback_seed", "samples"):
        assert column in df.columns, column
    full = df[df["feedback"] == "full"]
    assert full["feedback_seed"].isna().all() and full["samples"].isna().all()
    sampled = df[df["feedback"] == "sampled:2"]
    draw_seeds = derive_feedback_seeds(0, SEEDS)
    assert sorted(set(sampled["feedback_seed"].astype(int))) == sorted(draw_seeds)
    # The sampled runs differ only in their game and draws' seed: one batch, one run_batch call.
    assert sampled["batch_id"].nunique() == 1 and set(sampled["batch_size"]) == {2 * SEEDS}
    for (game, draw_seed), rows in sampled.groupby(["game", "feedback_seed"]):
        k = draw_seeds.index(int(draw_seed))  # the float64 column holds the 53-bit seeds exactly
        assert set(rows["seed_index"]) == {k}
        played = get_builtin("paper") if game == "paper" else _random_game(k)
        direct = run(played, "hedge+smooth", T=T, feedback="sampled:2", seed=int(draw_seed))
        for _, row in rows.iterrows():
            t = row["checkpoint"] - 1
            assert row["certified_cce_gap"] == pytest.approx(direct.certified_cce_gap[t], abs=1e-12)
            np.testing.assert_allclose(row["value"], direct.value[t], atol=1e-12)
            assert row["samples"] == direct.samples_used[t]
    # (Random game k was run with the draws of seed k: the numbers above are those of that pair.)


def test_the_run_files_record_the_feedback_and_its_seed(sweep):
    docs = [json.loads(p.read_text()) for p in (sweep / "out" / RUNS_DIR).glob("*.json")]
    sampled = [d for d in docs if d["spec"].get("feedback") == "sampled:2"]
    assert len(sampled) == 2 * SEEDS
    for doc in sampled:
        assert doc["feedback"] == "sampled:2" and doc["feedback_seed"] == doc["spec"]["feedback_seed"]
        assert all(record["samples_used"] > 0 for record in doc["records"])
    for doc in docs:
        if doc not in sampled:
            assert not {"feedback", "feedback_seed"} & set(doc) and not {"feedback", "feedback_seed"} & set(doc["spec"])
            assert not any("samples_used" in record for record in doc["records"])


def test_the_plan(tmp_path):
    config = parse_sweep_config({**_raw(), "seeds": 3})
    runs, made_of = grid_size(config)
    plan = plan_sweep(config, tmp_path)
    assert runs == len(plan.runs) == (1 + 3) + (3 + 3)
    assert "sampled feedback on the other games once per seed (3)" in made_of and "feedback" in made_of
    batches = plan.batches()
    assert sorted(len(b) for b in batches) == [4, 6]
    sampled = next(b for b in batches if b.feedback == "sampled:2")
    assert sampled.feedback_seeds is not None and len(set(sampled.feedback_seeds)) == 3
    # More seeds keep the runs of fewer: the draws' seed k does not depend on the count.
    fewer = plan_sweep(parse_sweep_config(_raw()), tmp_path)
    assert set(fewer.run_ids) <= set(plan.run_ids)
    # Without the key, the runs of full information keep their ids (nothing of the feedback in their spec).
    plain = plan_sweep(parse_sweep_config({k: v for k, v in _raw().items() if k != "feedbacks"}), tmp_path)
    assert set(plain.run_ids) <= set(fewer.run_ids)
    assert {r.spec.get("feedback", "full") for r in plain.runs} == {"full"}
    # sampled:exact draws nothing: once per game, as full information.
    exact = plan_sweep(parse_sweep_config({**_raw(), "feedbacks": ["sampled:exact"]}), tmp_path)
    assert len(exact.runs) == 1 + SEEDS and all(r.feedback_seed is None for r in exact.runs)
    assert {r.spec["feedback"] for r in exact.runs} == {"sampled:exact"}


def _raw() -> dict:
    return {
        "T": T,
        "checkpoints": CHECKPOINTS,
        "seeds": SEEDS,
        "feedbacks": ["full", "sampled:2"],
        "games": ["paper", {"random": {"players": 2, "horizon": 2, "states": 2, "actions": 2}, "label": "rg"}],
        "algorithms": ["hedge+smooth"],
    }


def test_summarize_groups_by_feedback(sweep, capsys):
    rows = summarize_results(sweep / "out")
    by = {(r.game, r.feedback): r for r in rows}
    assert set(by) == {("paper", "full"), ("paper", "sampled:2"), ("rg", "full"), ("rg", "sampled:2")}
    assert by[("paper", "full")].runs == 1 and by[("paper", "sampled:2")].runs == SEEDS
    assert by[("paper", "full")].samples is None and by[("paper", "sampled:2")].samples > 0
    assert main(["summarize", str(sweep / "out")]) == 0
    out = capsys.readouterr().out
    assert "feedback" in out and "sampled:2" in out and "samples at T" in out


def test_plot_against_the_samples(sweep, tmp_path, capsys):
    figures = tmp_path / "figures"
    assert main(["plot", str(sweep / "out"), "--out", str(figures), "--x-axis", "samples"]) == 0
    written = capsys.readouterr().out
    for stem in ("gaps_paper_vs-samples", "gaps_rg_vs-samples"):
        for suffix in (".png", ".pdf"):
            path = figures / (stem + suffix)
            assert path.stat().st_size > 0 and str(path) in written
    record = json.loads((figures / ".markovgames-figures.json").read_text())
    assert record["figures"]["gaps_paper_vs-samples.png"]["options"]["x_axis"] == "samples"
    # Against the iterations (the default) every run is drawn, as before.
    assert main(["plot", str(sweep / "out"), "--out", str(figures)]) == 0
    assert (figures / "gaps_paper.png").stat().st_size > 0


def test_results_written_before_the_feedback_columns_still_load(sweep, tmp_path, capsys):
    """A results file without the feedback columns (an earlier version's) reads as full information;
    plot against the samples is refused, naming the option."""
    table = pq.read_table(sweep / "out" / RESULTS_FILE)
    full = table.filter(np.asarray(table.column("feedback").to_pylist()) == "full")
    old = full.drop_columns(["feedback", "feedback_seed", "samples"])
    folder = tmp_path / "old"
    folder.mkdir()
    pq.write_table(old, folder / RESULTS_FILE)
    df = load_results(folder)
    assert set(df["feedback"]) == {"full"} and df["feedback_seed"].isna().all() and df["samples"].isna().all()
    assert main(["summarize", str(folder)]) == 0
    assert "feedback" not in capsys.readouterr().out  # the table as it always was
    assert _exit_code(["plot", str(folder), "--x-axis", "samples"]) == 2
    err = capsys.readouterr().err
    assert "--x-axis samples: no run of these results drew samples" in err
    assert not (folder / "figures").exists()


CONFIG_BASE = 'T = 20\ngames = ["paper"]\nalgorithms = ["hedge+smooth"]\n'


@pytest.mark.parametrize(
    "text,needle",
    [
        ('feedbacks = ["bandit"]\n', "sweep.toml: feedbacks[0]: feedback model 'bandit': give the episodes per round"),
        ('feedbacks = ["telepathy"]\n', "feedbacks[0]: unknown feedback model 'telepathy'; choose one of: full, sampled:K"),
        ('feedbacks = ["full", "sampled:0"]\n', "sweep.toml: feedbacks[1]: feedback model 'sampled:0'"),
        ('feedbacks = ["sampled:2", "sampled:02"]\n', "sweep.toml: feedbacks: repeated value"),
        ("feedbacks = []\n", "sweep.toml: feedbacks: expected a feedback model"),
        ("feedbacks = 4\n", "sweep.toml: feedbacks: expected a feedback model (full, sampled:K, sampled:exact, bandit:M), got 4"),
    ],
)
def test_bad_feedbacks_are_one_line_exit_2(tmp_path, capsys, text, needle):
    config = tmp_path / "sweep.toml"
    config.write_text(CONFIG_BASE + text)
    code = _exit_code(["sweep", str(config), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("markovgames: error: ") and needle in err[0], err
    assert not (tmp_path / "out").exists()


def test_an_algorithms_own_feedbacks(tmp_path):
    config = parse_sweep_config(
        {"T": 10, "games": ["paper"], "algorithms": ["smooth_ce", {"name": "hedge+smooth", "feedbacks": ["sampled:3"]}]}
    )
    plan = plan_sweep(config, tmp_path)
    assert {(r.algorithm, r.feedback) for r in plan.runs} == {("smooth_ce", "full"), ("hedge+smooth", "sampled:3")}
    with pytest.raises(ValueError, match=r"algorithms\[0\]\.feedbacks\[0\]: unknown feedback model"):
        parse_sweep_config({"T": 10, "games": ["paper"], "algorithms": [{"name": "smooth_ce", "feedbacks": ["nope"]}]})


def test_a_run_file_whose_draws_seed_disagrees_with_its_spec_is_refused(sweep, tmp_path, capsys):
    copy = tmp_path / "out"
    shutil.copytree(sweep / "out", copy)
    path = next(p for p in (copy / RUNS_DIR).glob("*.json") if "feedback_seed" in json.loads(p.read_text()))
    doc = json.loads(path.read_text())
    doc["feedback_seed"] += 1
    path.write_text(json.dumps(doc))
    assert _exit_code(["sweep", str(sweep / "sweep.toml"), "--out", str(copy)]) == 2
    err = capsys.readouterr().err
    assert path.name in err and "feedback_seed: " in err and "differs from the spec's" in err
