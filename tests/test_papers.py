"""The catalogue by paper (`markovgames._papers`): ``docs/papers.md`` is generated from it, it names
only algorithms and papers that exist, ``algorithms show`` prints it, and ``--eta theory:PAPER``
takes a paper whose rate markovgames implements and is recorded by every run.

``python tests/test_papers.py`` writes ``docs/papers.md`` from the catalogue.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from markovgames._papers import (
    ALIASES,
    AVERAGING_WORDS,
    DEFAULT_THEORY,
    OUTPUTS,
    PAPERS,
    RESULTS,
    THEORY_RATES,
    VLEARNING_NAMES,
    catalogue_markdown,
    parse_theory,
    results_for,
)
from markovgames.cli import main
from markovgames.cli._algorithms import catalogue_entries, show_text
from markovgames.dynamics import (
    ALGORITHMS,
    VALUE_UPDATES,
    VLEARNING_ALGORITHMS,
    get_algorithm,
    resolve_learning_rate,
    run,
    theory_eta_stage,
)
from markovgames.experiments import load_results, parse_sweep_config, run_sweep
from markovgames.games import paper_game, random_game
from markovgames.learners import BUILTIN_LEARNERS

DOC = Path(__file__).resolve().parents[1] / "docs" / "papers.md"


def test_docs_papers_md_is_the_catalogue():
    expected = catalogue_markdown(catalogue_entries())
    assert DOC.read_text(encoding="utf-8") == expected, "docs/papers.md is stale: run python tests/test_papers.py"


def test_the_catalogue_names_what_exists():
    assert ALIASES == {name: a.composition for name, a in ALGORITHMS.items()}
    assert tuple(VLEARNING_NAMES) == tuple(VLEARNING_ALGORITHMS)
    assert set(AVERAGING_WORDS) == set(VALUE_UPDATES)
    names = {*ALIASES, *VLEARNING_NAMES} | {f"{learner}+{update}" for learner in BUILTIN_LEARNERS for update in VALUE_UPDATES}
    for result in RESULTS:
        assert result.paper in PAPERS and result.output in OUTPUTS
        for pattern in result.applies:
            if pattern.endswith("+*"):
                assert pattern[:-2] in BUILTIN_LEARNERS, pattern
            else:
                assert pattern in names, pattern
    assert {r.paper for r in RESULTS} == set(PAPERS)  # every paper is there for a statement
    for result in RESULTS:
        assert isinstance(result.verified, bool) and result.read, result
        # What was read names its source: a verified statement its version and sections, an unverified one
        # says what could be read instead.
        assert ("read in" in result.read) if result.verified else ("could be read" in result.read or "read as" in result.read)
    # The papers the catalogue must tie the field's algorithms to.
    assert {p.key for p in PAPERS.values()} >= {"mao2024", "zhang2022", "yang-ma2023", "syrgkanis2015", "wei2021"}


def test_every_built_in_algorithm_has_its_entry():
    entries = catalogue_entries()
    assert len(entries) == len(ALIASES) + len(BUILTIN_LEARNERS) * len(VALUE_UPDATES) + len(VLEARNING_NAMES)
    # The paper's compositions are defined by Mao et al.; hedge+smooth is analysed by the two papers
    # that state their results for the weighted average.
    assert [r.paper for r in results_for("smooth_ce")][0] == "mao2024"
    smooth_cce = {r.paper: r for r in results_for("smooth_cce")}
    assert smooth_cce["zhang2022"].output == smooth_cce["yang-ma2023"].output == "weighted average"
    assert results_for("hedge+smooth") == results_for("smooth_cce")
    assert {r.paper for r in results_for("ce-v")} == {"song-mei-bai2021"}
    # Stage-based V-learning is Mao, Yang, Zhang and Başar's (ICML 2022); Mao and Başar's paper is
    # optimistic V-learning with a mirror-descent subroutine.
    stage_v = {r.paper: r.role for r in results_for("stage-v")}
    assert stage_v == {"mao-yang-zhang-basar2022": "defines", "mao-basar2022": "related"}
    assert all(r.role == "learner" for r in results_for("rm-plus+stage"))


def test_the_discounted_compositions_are_attributed_honestly():
    # The smooth value update's papers state their results for finite horizons: for its discounted
    # analogue they are related, never defining or analysing it, and nothing about it is verified.
    for name in ("hedge+discounted-smooth", "ogda+discounted-smooth", "extragradient+discounted-smooth"):
        found = results_for(name)
        assert found and not any(r.role in ("defines", "analyses") or r.verified for r in found), name
        assert "No paper in the catalogue defines or analyses this composition" in show_text(name)
    smooth = {r.paper: r for r in results_for("hedge+discounted-smooth") if r.role == "related"}
    assert set(smooth) == {"zhang2022", "yang-ma2023"}
    assert all(r.setting.startswith("finite-horizon games") for r in smooth.values())
    # The discounted papers, with other algorithms, are related to the compositions nearest them.
    assert {r.paper for r in results_for("ogda+discounted-smooth")} == {"wei2021"}
    assert "cen-wei-chi2021" in {r.paper for r in results_for("extragradient+discounted-smooth")}
    assert "wei2021" not in {r.paper for r in results_for("ogda+discounted-smooth-linear")}
    assert "no paper's rate is implemented for a discounted update" in show_text("hedge+discounted-smooth-uniform")


def test_algorithms_show(capsys):
    text = show_text("smooth_cce")
    assert "smooth_cce (= hedge+smooth)" in text and "Zhang, Liu, Wang, Xiong, Li and Bai" in text
    assert "Yang and Ma (ICLR 2023)" in text and "used here as a choice" in text
    assert "proved for it" in show_text("stage_cce")
    assert "No paper in the catalogue defines or analyses this composition" in show_text("ogda+smooth-linear")
    assert main(["algorithms", "show", "bm-logbarrier+smooth"]) == 0
    assert "alias: smooth_ce" in capsys.readouterr().out
    assert main(["algorithms", "show", "smooth_cc"]) == 2
    assert "unknown algorithm 'smooth_cc' (did you mean 'smooth_cce'?)" in capsys.readouterr().err


def test_theory_rates_are_verified_statements():
    # A rate markovgames implements comes from a theorem read in the paper's own text: every
    # `theory:KEY` has a verified statement of KEY, and those are exactly Mao et al.'s.
    verified = {r.paper for r in RESULTS if r.verified}
    assert set(THEORY_RATES) <= verified == {"mao2024"}
    for name in ("bm-logbarrier+smooth", "hedge+stage"):
        assert [r.verified for r in results_for(name) if r.role == "defines"] == [True]
    assert not any(r.verified for r in results_for("hedge+smooth") if r.paper in ("zhang2022", "yang-ma2023"))


@pytest.mark.parametrize(
    ("N", "H", "A", "expected"),
    [
        # Theorem 1 of Mao et al. 2024: eta = 1/(256 N H sqrt(H A_max)), written out by hand.
        (2, 2, (2, 2), 1 / 2048),
        (3, 1, (3, 2, 2), 1 / (768 * 3**0.5)),
        (2, 4, (2, 5), 1 / (2048 * 20**0.5)),
    ],
)
def test_theory_mao2024_smooth_is_theorem_1(N, H, A, expected):
    game = random_game(N, H, 2, A, seed_or_rng=0)
    for name in ("smooth_ce", "smooth_cce", "rm-plus+smooth-uniform"):
        eta, per_stage = resolve_learning_rate("theory:mao2024", get_algorithm(name), game)
        assert per_stage is False and eta == pytest.approx(expected, rel=1e-15)


def test_theory_mao2024_stage_is_theorem_2_with_the_documented_constant():
    # Theorem 2's Theta(1/(N log^4 L_tau)), constant 1 and max(1, ln L_tau) (docs/papers.md), by hand.
    lengths = np.array([1, 2, 3, 20, 1000])
    expected = [1 / 3, 1 / 3, 1 / (3 * math.log(3) ** 4), 1 / (3 * math.log(20) ** 4), 1 / (3 * math.log(1000) ** 4)]
    np.testing.assert_allclose(theory_eta_stage(3, lengths), expected, rtol=1e-15)
    game = random_game(3, 2, 2, 2, seed_or_rng=0)
    assert resolve_learning_rate("theory:mao2024", get_algorithm("stage_cce"), game) == (1.0, True)


def test_theory_rates_name_their_paper():
    game, spec = paper_game(), get_algorithm("smooth_ce")
    assert parse_theory("theory") == DEFAULT_THEORY == "mao2024" and parse_theory(0.2) is None
    assert resolve_learning_rate("theory:mao2024", spec, game) == resolve_learning_rate("theory", spec, game)
    assert set(THEORY_RATES) <= set(PAPERS)
    with pytest.raises(ValueError, match="unknown paper 'nobody'"):
        resolve_learning_rate("theory:nobody", spec, game)
    with pytest.raises(ValueError, match="implements no learning rate of Yang and Ma 2023"):
        parse_theory("theory:yang-ma2023")


def test_every_run_records_whose_theory_rate_it_used(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = ["run", "--game", "paper", "--algorithm", "smooth_cce", "-T", "20", "--quiet", "--no-trajectory"]
    assert main([*base, "--eta", "theory:mao2024", "--out", "a"]) == 0
    assert main([*base, "--eta", "theory", "--out", "b"]) == 0
    assert main([*base, "--out", "c"]) == 0
    a, b, c = (json.loads((tmp_path / d / "metrics.json").read_text()) for d in "abc")
    assert a["eta"] == "theory:mao2024" and a["eta_theory"] == b["eta_theory"] == "mao2024" and "eta_theory" not in c
    assert a["eta_value"] == b["eta_value"]
    np.testing.assert_array_equal(a["checkpoints"][-1]["value"], b["checkpoints"][-1]["value"])
    result = run(paper_game(), "smooth_cce", T=20, eta="theory:mao2024", record_trajectory=False)
    assert result.eta == "theory:mao2024"
    assert main([*base, "--eta", "theory:UNKNOWN", "--out", "d"]) == 2
    assert "--eta: learning rate 'theory:UNKNOWN': unknown paper 'UNKNOWN'" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_a_sweep_records_whose_theory_rate_each_run_used(tmp_path):
    config = parse_sweep_config(
        {
            "T": 10,
            "checkpoints": [10],
            "games": ["paper"],
            "algorithms": ["smooth_cce"],
            "etas": ["theory:mao2024", "theory", 0.2],
        }
    )
    run_sweep(config, tmp_path / "sw", workers=1)
    df = load_results(tmp_path / "sw")
    by_eta = dict(zip(df["eta"], df["eta_theory"], strict=True))
    assert by_eta["theory:mao2024"] == by_eta["theory"] == "mao2024" and pd.isna(by_eta["0.2"])
    values = dict(zip(df["eta"], df["eta_value"], strict=True))
    assert (
        values["theory:mao2024"]
        == values["theory"]
        == resolve_learning_rate("theory", get_algorithm("smooth_cce"), paper_game())[0]
    )


if __name__ == "__main__":
    DOC.write_text(catalogue_markdown(catalogue_entries()), encoding="utf-8")
    print(f"wrote {DOC}", file=sys.stderr)
