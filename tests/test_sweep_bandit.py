"""Sweeps on bandit feedback: V-learning's names (``cce-v``) and compositions under ``bandit:M``.

The grid (V-learning ignores the sweep-wide feedbacks, etas and optimism; a bandit run draws, so it
runs once per seed), the batches (one ``run_vlearning_batch`` call per game and learning rate), the
results against single runs (``run_vlearning`` + ``prefix_curves`` at the checkpoints, ``T'`` in
rounds), the run files and their checks, resuming, ``load_results``' columns, summarize and plot,
and the refusals. One sweep of two programs (``cce-v``, ``hedge+smooth`` on ``bandit:2``) serves the
module: compiling a V-learning program takes seconds."""

from __future__ import annotations

import json
import shutil
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest

from markovgames.cli import main
from markovgames.dynamics import run_vlearning
from markovgames.evaluation import exact_cce_gap, exact_ce_gap, prefix_curves
from markovgames.experiments import load_results, parse_sweep_config, plan_sweep, summarize_results
from markovgames.experiments.sweeps._plan import derive_feedback_seeds, derive_game_seeds, grid_size
from markovgames.experiments.sweeps._summary import feedback_label
from markovgames.experiments.sweeps._sweep import RESULTS_FILE, RUNS_DIR, check_batch_memory, run_sweep
from markovgames.games import get_builtin, random_game

pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

# 120 rounds: cce-v's batches and single runs are the compiled rounds of test_vlearning.py and
# test_vlearning_reference.py (120 episodes on games of the paper's shape).
T = 120
CHECKPOINTS = [10, 60, 120]
SEEDS = 2
M = 2
# The paper's game and random games of its shape: cce-v (bandit:1, whatever the sweep-wide axes
# say) and hedge+smooth under full information and bandit:2; the sweep-wide optimism, "theory"
# rate and sampled feedback are not V-learning's, and it ignores them.
CONFIG = textwrap.dedent(
    f"""
    T = {T}
    checkpoints = {CHECKPOINTS}
    seeds = {SEEDS}
    exact = true
    games = ["paper", {{random = {{players = 2, horizon = 2, states = 2, actions = 2}}, label = "rg"}}]
    algorithms = ["cce-v", {{name = "hedge+smooth", feedbacks = ["full", "bandit:{M}"]}}]
    """
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("bandit")
    config = root / "sweep.toml"
    config.write_text(CONFIG)
    report = run_sweep(config, root / "out", workers=1)
    # cce-v and hedge+smooth on bandit:2: paper once per seed, rg once per seed; full: once per game.
    assert not report.failures and report.total_runs == 2 * (SEEDS + SEEDS) + (1 + SEEDS)
    return root


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        return stop.code


def _game(name: str, k: int):
    if name == "paper":
        return get_builtin("paper")
    return random_game(2, 2, 2, (2, 2), seed_or_rng=derive_game_seeds(0, SEEDS)[k])


def test_results_equal_single_runs(sweep):
    """Each bandit run is run_vlearning(game, ALG, T M, seed=feedback_seed, feedback=...) evaluated
    by prefix_curves (and the exact gaps of policy.prefix(T')) at the checkpoints T' (rounds)."""
    df = load_results(sweep / "out")
    bandit = df[df["feedback"] != "full"]
    assert set(bandit["feedback"]) == {"bandit:1", f"bandit:{M}"}
    assert set(bandit[bandit["algorithm"] == "cce-v"]["feedback"]) == {"bandit:1"}
    draw_seeds = derive_feedback_seeds(0, SEEDS)
    assert sorted(set(bandit["feedback_seed"].astype(int))) == sorted(draw_seeds)
    compared = 0
    for (game, algorithm, feedback, draw_seed), rows in bandit.groupby(["game", "algorithm", "feedback", "feedback_seed"]):
        k = draw_seeds.index(int(draw_seed))
        assert set(rows["seed_index"]) == {k} and sorted(rows["checkpoint"]) == CHECKPOINTS
        per_round = int(feedback.partition(":")[2])
        played = _game(game, k)
        direct = run_vlearning(played, algorithm, T * per_round, seed=int(draw_seed), feedback=feedback)
        curves = prefix_curves(played, direct.policy, CHECKPOINTS)
        for _, row in rows.iterrows():
            j = CHECKPOINTS.index(row["checkpoint"])
            np.testing.assert_allclose(row["value"], curves.value[j], rtol=0, atol=1e-12)
            np.testing.assert_allclose(row["certified_ce_bound"], curves.certified_ce[j], rtol=0, atol=1e-12)
            np.testing.assert_allclose(row["certified_cce_bound"], curves.certified_cce[j], rtol=0, atol=1e-12)
            assert row["certified_cce_gap"] == pytest.approx(curves.certified_cce_gap[j], abs=1e-12)
            assert row["gap"] == row["certified_cce_gap"] and row["gap_times_T"] == pytest.approx(row["gap"] * row["checkpoint"])
            prefix = direct.policy.prefix(int(row["checkpoint"]))
            assert row["exact_cce_gap"] == pytest.approx(exact_cce_gap(played, prefix).gap, abs=1e-12)
            assert row["exact_ce_gap"] == pytest.approx(exact_ce_gap(played, prefix).gap, abs=1e-12)
            assert row["episodes"] == row["checkpoint"] * per_round
            assert row["samples"] == row["checkpoint"] * per_round * played.horizon
            assert row["bonus"] == direct.bonus
            compared += 1
    assert compared == len(bandit) == 2 * 2 * SEEDS * len(CHECKPOINTS)
    # The learning rate and implicit exploration: V-learning's are its papers' (no single number).
    vl = bandit[bandit["algorithm"] == "cce-v"]
    assert set(vl["eta"]) == {"paper"} and vl["eta_value"].isna().all() and vl["ix"].isna().all()
    assert vl["ix_schedule"].isna().all() and vl["bandit_rate"].isna().all()
    assert not vl["optimistic"].any() and set(vl["bonus"]) == {1.0}
    hedge = bandit[bandit["algorithm"] == "hedge+smooth"]
    assert set(hedge["eta"]) == {"0.2"} and set(hedge["ix"]) == {0.2 * 2 / 2} and set(hedge["bonus"]) == {0.0}
    assert set(hedge["ix_schedule"]) == {"decaying"}  # the default: (eta H / 2) / sqrt(c)
    assert set(hedge["bandit_rate"]) == {"decaying"}  # the default: min(eta, M / sqrt(c))
    # The runs of other feedback models have none of these.
    full = df[df["feedback"] == "full"]
    assert full[["episodes", "bonus", "ix", "ix_schedule", "bandit_rate", "feedback_seed", "samples"]].isna().all().all()


def test_batches_and_run_files(sweep):
    docs = [json.loads(p.read_text()) for p in (sweep / "out" / RUNS_DIR).glob("*.json")]
    bandit = [d for d in docs if d.get("feedback", "full").startswith("bandit:")]
    assert len(bandit) == 2 * 2 * SEEDS
    for doc in bandit:
        per_round = int(doc["feedback"].partition(":")[2])
        assert doc["feedback_seed"] == doc["spec"]["feedback_seed"] and "bonus" in doc
        assert not {"bonus", "ix"} & set(doc["spec"])  # the defaults: not part of the run's id
        assert doc.get("ix_schedule") == (None if doc["algorithm"] == "cce-v" else "decaying")
        assert [r["episodes"] for r in doc["records"]] == [c * per_round for c in CHECKPOINTS]
    # One batch per algorithm and feedback, across games and seeds (a run_vlearning_batch call per game).
    by_batch = {}
    for doc in bandit:
        by_batch.setdefault(doc["batch"]["id"], set()).add((doc["algorithm"], doc["feedback"]))
    assert sorted(len(v) for v in by_batch.values()) == [1, 1] and all(d["batch"]["size"] == 2 * SEEDS for d in bandit)
    assert not any("episodes" in r for d in docs if d not in bandit for r in d["records"])


def test_the_plan_and_the_ids(tmp_path):
    raw = {
        "T": T,
        "checkpoints": CHECKPOINTS,
        "seeds": 3,
        "etas": [0.1, "theory"],
        "optimistic": [True, False],
        "feedbacks": ["full", "sampled:2"],
        "games": ["paper", {"random": {"players": 2, "horizon": 2, "states": 2, "actions": 2}}],
        "algorithms": ["smooth_cce", "cce-v"],
    }
    config = parse_sweep_config(raw)
    plan = plan_sweep(config, tmp_path)
    runs, made_of = grid_size(config)
    assert runs == len(plan.runs)
    vl = [r for r in plan.runs if r.algorithm == "cce-v"]
    # V-learning: none of the sweep-wide optimism, rates or feedbacks; once per seed on every game.
    assert len(vl) == 3 + 3 and {(r.feedback, r.optimistic, r.eta, r.eta_value) for r in vl} == {
        ("bandit:1", False, "paper", None)
    }
    assert all(r.spec["feedback"] == "bandit:1" and r.spec["eta"] == "paper" for r in vl)
    # Without the V-learning entry, the other runs keep their ids.
    without = plan_sweep(parse_sweep_config({**raw, "algorithms": ["smooth_cce"]}), tmp_path)
    assert set(without.run_ids) == {r.run_id for r in plan.runs if r.algorithm == "smooth_cce"}
    # A bonus or ix given is part of the id; the default is not.
    given = plan_sweep(parse_sweep_config({**raw, "algorithms": [{"name": "cce-v", "bonus": 0.5}]}), tmp_path)
    assert all(r.spec["bonus"] == 0.5 for r in given.runs) and not set(given.run_ids) & set(plan.run_ids)
    batches = plan.batches([r.run_id for r in vl])
    assert len(batches) == 1 and batches[0].bandit and len(batches[0]) == 6  # one compiled program, per-game calls
    # A composition's ix, and more seeds keeping the runs of fewer.
    hedge = {"name": "hedge+smooth", "feedbacks": ["bandit:4"], "etas": [0.1], "ix": 0.05}
    small = plan_sweep(parse_sweep_config({**raw, "seeds": 1, "algorithms": [hedge]}), tmp_path)
    large = plan_sweep(parse_sweep_config({**raw, "seeds": 2, "algorithms": [hedge]}), tmp_path)
    assert set(small.run_ids) < set(large.run_ids) and {r.spec["ix"] for r in large.runs} == {0.05}
    # ix = "decaying" names the default: the same runs as no ix.
    named = plan_sweep(parse_sweep_config({**raw, "seeds": 1, "algorithms": [{**hedge, "ix": "decaying"}]}), tmp_path)
    plain = plan_sweep(parse_sweep_config({**raw, "seeds": 1, "algorithms": [{**hedge, "ix": None}]}), tmp_path)
    assert named.run_ids == plain.run_ids and not set(named.run_ids) & set(small.run_ids)
    with pytest.raises(Exception, match=r"expected 'decaying' or a finite number >= 0, got 'decay'"):
        parse_sweep_config({**raw, "algorithms": [{**hedge, "ix": "decay"}]})
    # The rate's schedule likewise: "constant" is part of the id, "decaying" names the default.
    constant = plan_sweep(parse_sweep_config({**raw, "seeds": 1, "algorithms": [{**hedge, "bandit_rate": "constant"}]}), tmp_path)
    assert {r.spec["bandit_rate"] for r in constant.runs} == {"constant"} and not set(constant.run_ids) & set(small.run_ids)
    named = plan_sweep(parse_sweep_config({**raw, "seeds": 1, "algorithms": [{**hedge, "bandit_rate": "decaying"}]}), tmp_path)
    assert named.run_ids == small.run_ids
    with pytest.raises(Exception, match=r"expected one of 'decaying', 'constant', got 'sqrt'"):
        parse_sweep_config({**raw, "algorithms": [{**hedge, "bandit_rate": "sqrt"}]})


def test_a_constant_rate_runs_as_the_library_runs_it(tmp_path):
    """``bandit_rate = "constant"`` reaches the run: the batch's numbers are ``run_vlearning``'s
    with ``bandit_rate="constant"`` (min(eta, M / sqrt(c)) < eta from the 101st round on under
    bandit:2: another run than the default's). The module's T, M and seeds: the rate is an
    argument of the compiled round, so the batch and the single runs are the module sweep's
    compiled rounds."""
    from markovgames.experiments.sweeps._execute import execute_batch

    raw = {"T": T, "checkpoints": [T], "seeds": SEEDS, "games": ["paper"]}
    alg = {"name": "hedge+smooth", "feedbacks": [f"bandit:{M}"], "bandit_rate": "constant"}
    plan = plan_sweep(parse_sweep_config({**raw, "algorithms": [alg]}), tmp_path)
    (task,) = plan.batches()
    out = execute_batch(task)
    seed = task.feedback_seeds[0]
    game = get_builtin("paper")
    for rate, equal in (("constant", True), ("decaying", False)):
        direct = run_vlearning(game, "hedge+smooth", T * M, seed=seed, feedback=f"bandit:{M}", bandit_rate=rate)
        value = prefix_curves(game, direct.policy, [T]).value[0]
        assert np.allclose(out.value[0, 0], value, rtol=0, atol=1e-12) == equal, rate


def test_resume_skips_finished_bandit_runs_and_recomputes_a_missing_one(sweep, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(sweep / "out", out)
    report = run_sweep(sweep / "sweep.toml", out, workers=1)
    assert report.computed_runs == 0 and report.skipped_runs == report.total_runs
    path = next(p for p in (out / RUNS_DIR).glob("*.json") if json.loads(p.read_text()).get("feedback") == f"bandit:{M}")
    before = json.loads(path.read_text())
    path.unlink()
    report = run_sweep(sweep / "sweep.toml", out, workers=1)
    assert report.computed_runs == 1 and report.skipped_runs == report.total_runs - 1
    after = json.loads(path.read_text())
    assert after["spec"] == before["spec"]
    for old, new in zip(before["records"], after["records"], strict=True):
        np.testing.assert_allclose(new["value"], old["value"], rtol=0, atol=1e-12)  # another batch: rounding only
        assert new["episodes"] == old["episodes"] and new["samples_used"] == old["samples_used"]


@pytest.mark.parametrize(
    "edit,field",
    [
        (lambda doc: doc.update(bonus=2.0), "bonus: 2.0 is not the run's 1.0"),
        (lambda doc: doc["records"][1].update(episodes=7), "records[1].episodes: 7 is not the run's 60"),
        (lambda doc: doc.pop("bonus"), "bonus: null is not the run's 1.0"),
        (lambda doc: doc.update(eta=0.2), 'eta: 0.2 differs from the spec\'s "paper"'),
        (lambda doc: doc.update(ix_schedule="decaying"), 'ix_schedule: "decaying" is not the run\'s null'),
    ],
)
def test_a_changed_bandit_run_file_is_refused(sweep, tmp_path, capsys, edit, field):
    out = tmp_path / "out"
    shutil.copytree(sweep / "out", out)
    path = next(p for p in (out / RUNS_DIR).glob("*.json") if json.loads(p.read_text())["algorithm"] == "cce-v")
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    assert _exit_code(["sweep", str(sweep / "sweep.toml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert path.name in err and field in err, err


def test_load_results_columns_and_older_files(sweep, tmp_path):
    df = load_results(sweep / "out")
    for column in ("episodes", "bonus", "ix", "ix_schedule"):
        assert column in df.columns, column
    table = pq.read_table(sweep / "out" / RESULTS_FILE)
    full = table.filter(np.asarray(table.column("feedback").to_pylist()) == "full")
    folder = tmp_path / "old"
    folder.mkdir()
    pq.write_table(full.drop_columns(["episodes", "bonus", "ix", "ix_schedule"]), folder / RESULTS_FILE)
    old = load_results(folder)
    assert old[["episodes", "bonus", "ix", "ix_schedule"]].isna().all().all() and len(old) == len(full)


def test_summarize_and_plot_label_the_feedback(sweep, tmp_path, capsys):
    rows = summarize_results(sweep / "out")
    by = {(r.game, r.algorithm, r.feedback): r for r in rows}
    assert by[("paper", "cce-v", "bandit:1")].runs == SEEDS and by[("paper", "cce-v", "bandit:1")].eta == "paper"
    assert by[("paper", "hedge+smooth", f"bandit:{M}")].samples == T * M * 2
    assert by[("paper", "hedge+smooth", "full")].samples is None
    assert main(["summarize", str(sweep / "out")]) == 0
    assert "bandit:1" in capsys.readouterr().out
    # Each plot draws one game's figure: the results of that game alone (a figure takes seconds).
    figures = tmp_path / "figures"
    table = pq.read_table(sweep / "out" / RESULTS_FILE)
    for game, extra in (("paper", []), ("rg", ["--x-axis", "samples"])):
        (tmp_path / game).mkdir()
        pq.write_table(table.filter(np.asarray(table.column("game").to_pylist()) == game), tmp_path / game / RESULTS_FILE)
        assert main(["plot", str(tmp_path / game), "--out", str(figures), *extra]) == 0
    assert (figures / "gaps_paper.png").stat().st_size > 0 and (figures / "gaps_rg_vs-samples.pdf").stat().st_size > 0


def test_the_feedback_label_says_a_bonus_and_ix_that_are_not_the_defaults():
    row = {"feedback": "bandit:2", "eta": "0.2", "eta_value": 0.2, "H": 3, "bonus": 0.0, "ix": 0.2 * 3 / 2}
    assert feedback_label({**row, "ix_schedule": "decaying"}) == "bandit:2"  # the default
    assert feedback_label({**row, "bonus": 0.5, "ix": 0.1, "ix_schedule": "constant"}) == "bandit:2, bonus 0.5, ix 0.1"
    # A constant at the default's first value is not the default; a row from before the schedules
    # (no ix_schedule) ran a constant.
    assert feedback_label({**row, "ix_schedule": "constant"}) == feedback_label(row) == "bandit:2, ix 0.30000000000000004"
    vl = {"feedback": "bandit:1", "eta": "paper", "eta_value": None, "H": 3, "bonus": 1.0, "ix": None}
    assert feedback_label(vl) == "bandit:1" and feedback_label({**vl, "bonus": 2.0}) == "bandit:1, bonus 2.0"
    assert feedback_label({"feedback": "sampled:4"}) == "sampled:4" and feedback_label({}) == "full"


def test_dry_run_lists_bandit_batches_in_rounds(sweep, capsys):
    assert main(["sweep", str(sweep / "sweep.toml"), "--out", str(sweep / "dry"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"cce-v (non-opt.), feedback bandit:1, N=2 H=2 S=2 A=2x2, T={T} rounds, 4 runs" in out
    assert f"hedge+smooth, feedback bandit:{M}, N=2 H=2 S=2 A=2x2, T={T} rounds, 4 runs" in out


BASE = 'T = 20\ngames = ["paper"]\n'


@pytest.mark.parametrize(
    "text,needle",
    [
        (
            'algorithms = [{name = "cce-v", feedbacks = ["bandit:2"]}]\n',
            "sweep.toml: algorithms[0].feedbacks: 'cce-v' is V-learning",
        ),
        ('algorithms = [{name = "ce-v", etas = [0.1]}]\n', "sweep.toml: algorithms[0].etas: 'ce-v' runs with its papers' rates"),
        (
            'algorithms = [{name = "stage-v", optimistic = [true]}]\n',
            "sweep.toml: algorithms[0].optimistic: 'stage-v' has no optimistic",
        ),
        ('algorithms = [{name = "cce-v", ix = 0.1}]\n', "sweep.toml: algorithms[0].ix: 'cce-v' runs with its papers' implicit"),
        (
            'algorithms = [{name = "ce-v", bandit_rate = "constant"}]\n',
            "sweep.toml: algorithms[0].bandit_rate: 'ce-v' runs with its papers' rates",
        ),
        (
            'algorithms = [{name = "hedge+smooth", bandit_rate = "constant"}]\n',
            "sweep.toml: algorithms[0].bandit_rate: applies to bandit feedback only",
        ),
        (
            'algorithms = [{name = "hedge+smooth", bonus = 1}]\n',
            "sweep.toml: algorithms[0].bonus: applies to bandit feedback only",
        ),
        (
            'algorithms = [{name = "cce-v", bonus = -1}]\n',
            "sweep.toml: algorithms[0].bonus: expected a finite number >= 0, got -1",
        ),
        (
            'etas = ["theory"]\nalgorithms = [{name = "hedge+smooth", feedbacks = ["full", "bandit:2"]}]\n',
            "sweep.toml: etas: algorithms[0]: 'theory' is a rate of the paper's full-information theorems",
        ),
        (
            'orders = ["simultaneous", "alternating"]\nalgorithms = ["cce-v"]\n',
            "sweep.toml: orders: algorithms[0]: 'cce-v' under bandit:1",
        ),
        (
            'algorithms = [{name = "hedge+smooth", feedbacks = ["bandit:2"], eta_schedules = ["sqrt"]}]\n',
            "sweep.toml: algorithms[0].eta_schedules: algorithms[0]: 'hedge+smooth' under bandit:2 has no step-size schedule",
        ),
        (
            'regret = true\nalgorithms = ["cce-v"]\n',
            "sweep.toml: regret: algorithms[0]: 'cce-v' under bandit:1 records no regret",
        ),
        (
            'last_iterate = true\nalgorithms = ["cce-v"]\n',
            "sweep.toml: last_iterate: algorithms[0]: 'cce-v' under bandit:1 records no last",
        ),
        (
            'dtype = "float32"\nalgorithms = ["cce-v"]\n',
            "sweep.toml: dtype: algorithms[0]: 'cce-v' under bandit:1 runs in float64 only",
        ),
        (
            'feedbacks = ["bandit"]\nalgorithms = ["hedge+smooth"]\n',
            "sweep.toml: feedbacks[0]: feedback model 'bandit': give the episodes",
        ),
        (
            'feedbacks = ["bandit:0"]\nalgorithms = ["hedge+smooth"]\n',
            "sweep.toml: feedbacks[0]: feedback model 'bandit:0': the episodes",
        ),
        ('algorithms = ["cce_v"]\n', "sweep.toml: algorithms[0]: unknown algorithm 'cce_v' (did you mean 'cce-v'?)"),
        (
            'feedbacks = ["bandit:2"]\nalgorithms = ["extragradient+smooth-uniform"]\n',
            "sweep.toml: feedbacks: algorithms[0]: learner 'extragradient' makes two utility queries per iteration; under bandit:2",
        ),
        (
            'T = 100_000_000\ngames = ["paper"]\nalgorithms = ["cce-v"]\n',
            "sweep.toml: T: algorithms[0] under bandit:1 on games[0]: 100,000,000 episodes",
        ),
    ],
)
def test_bad_bandit_settings_are_one_line_exit_2(tmp_path, capsys, text, needle):
    config = tmp_path / "sweep.toml"
    config.write_text(text if text.startswith("T = ") else BASE + text)
    code = _exit_code(["sweep", str(config), "--out", str(tmp_path / "out"), "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("markovgames: error: ") and needle in err[0], err
    assert not (tmp_path / "out").exists()


def test_bandit_batches_too_large_for_the_memory_are_refused(tmp_path, monkeypatch):
    from markovgames.experiments.sweeps import _config as _sweep_config
    from markovgames.experiments.sweeps import _plan as _sweep_plan

    config = parse_sweep_config({"T": 5000, "seeds": 4, "games": ["paper"], "algorithms": ["cce-v"]})
    plan = plan_sweep(config, tmp_path)
    check_batch_memory(plan, 2)  # a few MiB
    monkeypatch.setattr(_sweep_plan, "physical_memory", lambda: 4 * 2**20)
    with pytest.raises(_sweep_config.SweepConfigError, match=r"^T: a batch of 4 bandit runs of 5000 rounds takes about"):
        check_batch_memory(plan, 2)
