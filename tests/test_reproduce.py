"""``markovgames reproduce`` on a short horizon: every promised file, consistent numbers, verdicts."""

from __future__ import annotations

import csv
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from markovgames.cli import main
from markovgames.experiments import fit_loglog_slope, reproduce, theorem_bounds
from markovgames.games import paper_game


def test_fit_loglog_slope_recovers_power_laws():
    T = np.arange(10, 1000)
    assert fit_loglog_slope(T, 3.0 / T) == pytest.approx(-1.0, abs=1e-12)
    assert fit_loglog_slope(T, T**-0.5) == pytest.approx(-0.5, abs=1e-12)
    assert np.isnan(fit_loglog_slope(T, -1.0 / T))


def test_theorem_bounds_for_the_paper_game():
    # 6144 * N * H^3.5 * A^2.5 * log T / T with N = H = A = 2 (hand computation).
    b = theorem_bounds(paper_game(), 1000)
    assert b["theorem1_ce_bound"] == pytest.approx(6144 * 2 * 2**3.5 * 2**2.5 * np.log(1000) / 1000)


#: The horizon of the reproductions with exact gaps and baselines: the one at which the report
#: explains the non-optimistic curves' jumps (below), so that their loops compile once.
T_FULL = 5000


@pytest.fixture(scope="module")
def full_reproduction(tmp_path_factory):
    """One reproduction with exact gaps and baselines at ``T_FULL``, shared by the tests that read
    it (the second copies it before writing into it): its directory, its result, and the title
    and legend entries of each figure it saved, by name."""
    from markovgames.experiments.figures import _curves as _plots

    figures = {}
    real_save = _plots.save_figure

    def capture(fig, stem, dpi=150):
        ax = fig.axes[0]
        figures[stem.name] = (ax.get_title(), [t.get_text() for t in fig.legends[0].get_texts()])
        return real_save(fig, stem, dpi)

    out = tmp_path_factory.mktemp("full") / "repro"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_plots, "save_figure", capture)
        result = reproduce(out, T=T_FULL, exact=True, baselines=True)
    return out, result, figures


def test_reproduce_writes_everything(full_reproduction):
    out, result, _ = full_reproduction
    names = {p.name for p in out.iterdir()}
    for stem in ("figure1_gap", "figure2_gap_times_T", "figure3_optimism"):
        assert {f"{stem}.png", f"{stem}.pdf"} <= names
    assert {"curves.csv", "curves.parquet", "exact_gaps.csv", "exact_gaps.parquet", "REPORT.md", "summary.json"} <= names
    assert len(result.claims) == 4
    assert all(isinstance(c["holds"], bool) for c in result.claims)
    with open(out / "curves.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    table = pq.read_table(out / "curves.parquet").to_pylist()
    assert len(rows) == len(table) > 0
    assert {r["algorithm"] for r in table} == {"smooth_ce", "stage_cce", "smooth_cce"}
    # Exact gaps never exceed the certified ones (same T, same algorithm).
    summary = json.loads((out / "summary.json").read_text())
    certified = {(r["algorithm"], r["T"]): r for r in table if r["optimistic"]}
    for alg, rows_ in summary["exact_gaps"].items():
        for row in rows_:
            cert = certified.get((alg, row["T"]))
            if cert is not None:
                assert row["exact_ce_gap"] <= cert["certified_ce_gap"] + 1e-10
                assert row["exact_cce_gap"] <= cert["certified_cce_gap"] + 1e-10
                assert row["exact_ce_gap"] >= -1e-12
    report = (out / "REPORT.md").read_text()
    assert "## Verdicts" in report and ("**holds**" in report or "**does not hold**" in report)
    assert "figure3_optimism" in report and "exact_gaps" in report


def test_reproduce_leaves_no_file_of_an_earlier_one_and_lists_only_its_own(tmp_path, full_reproduction):
    """Rerun into the same directory without exact gaps and baselines: the earlier run's
    ``exact_gaps`` and ``figure3`` (of another T) are gone, and the report lists neither.
    At T = 20 the last two decades do not reach back to T' = 10: the slope claims are undecided,
    and the report says why rather than "does not hold".
    (The two T are other tests' too: their loops compile once in the suite.)"""
    import shutil

    out = tmp_path / "repro"
    shutil.copytree(full_reproduction[0], out)  # a finished reproduction with exact gaps and baselines
    assert {"exact_gaps.csv", "figure3_optimism.png"} <= {p.name for p in out.iterdir()}
    result = reproduce(out, T=20, exact=False, baselines=False)
    names = {p.name for p in out.iterdir()}
    assert not any(n.startswith(("exact_gaps", "figure3")) for n in names), names
    assert names == {p.name for p in result.files}
    report = (out / "REPORT.md").read_text()
    files_section = report.split("## Files")[1]
    assert "figure3" not in files_section and "exact_gaps" not in files_section
    assert len(result.claims) == 4
    assert [c["holds"] for c in result.claims[:3]] == [None, None, None]
    assert isinstance(result.claims[3]["holds"], bool)
    assert report.count("**undecided**") == 3 and "T = 20 is too short" in report


def test_reproduce_decides_the_slope_claims_from_T_1000(tmp_path):
    result = reproduce(tmp_path / "r", T=1000, exact=False, baselines=False)
    assert all(isinstance(c["holds"], bool) and not c.get("undecided") for c in result.claims)
    assert "**undecided**" not in (tmp_path / "r" / "REPORT.md").read_text()


def test_reproduce_cli_rejects_bad_T(tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path / "r"), "-T", "0"]) == 2
    assert "-T" in capsys.readouterr().err


def test_reproduce_explains_the_jumps_of_the_non_optimistic_curves(full_reproduction):
    """The report's numbers on the iterates' cycle, checked against the swing computed here from the
    baseline's own trajectory; Figure 3 has its title prefix and no "(certified)" in every entry.
    (The shared reproduction at ``T_FULL``, with the figures it saved.)"""
    from markovgames.dynamics import run
    from markovgames.experiments._reproduce import SWING_ONSET

    out, result, figures = full_reproduction
    T = T_FULL
    title, legend = figures["figure3_optimism"]
    assert title == "Figure 3: optimism on and off (certified gaps)\nT = 5,000"  # T is not the default 10^5
    assert not any("(certified)" in entry for entry in legend) and "Smooth OFTRL CCE [no optimism]" in legend
    assert figures["figure1_gap"][0].startswith("Figure 1:") and figures["figure2_gap_times_T"][0].startswith("Figure 2:")

    cycle = result.summary["iterate_cycles"]["smooth_cce (no optimism)"]
    assert cycle is not None and 1500 <= cycle["onset_T"] <= 4000  # the jump near 3.5e3
    base = run(paper_game(), "smooth_cce", T=T, eta=0.2, optimistic=False)
    pols = [np.asarray(p) for p in base.policies]

    def swing(T_prime):  # the documented definition, written out here
        lo = int(np.ceil(0.9 * T_prime)) - 1
        return max(float((p[lo:T_prime].max(axis=0) - p[lo:T_prime].min(axis=0)).max()) for p in pols)

    assert swing(cycle["onset_T"]) >= SWING_ONSET > cycle["settled_swing"] == pytest.approx(swing(cycle["settled_T"]))
    # The onset is the first point of the 20-per-decade log grid past the settled point with a swing >= 0.01.
    from markovgames.experiments import log_grid

    between = [int(t) for t in log_grid(T, 20) if cycle["settled_T"] <= t < cycle["onset_T"]]
    assert between and all(swing(t) < SWING_ONSET for t in between)
    gap = base.certified_cce_gap
    assert cycle["dip_T"] == cycle["settled_T"] + int(np.argmin(gap[cycle["settled_T"] - 1 :]))
    assert cycle["largest_gap_times_T_after_dip"] > 5 * cycle["dip_gap_times_T"]  # the jump
    assert result.summary["iterate_cycles"]["smooth_cce"] is None  # with optimism: no cycle
    report = (out / "REPORT.md").read_text()
    section = report.split("## Why the non-optimistic curves jump")[1].split("\n## ")[0]
    assert f"cycle from T' = {cycle['onset_T']:,} on" in section
    assert f"smallest value {cycle['dip_gap']:.4g} at T' = {cycle['dip_T']:,}" in section
    assert "The optimistic prediction damps the cycle." in section


def test_reproduce_output_never_wraps_a_path(tmp_path, capsys):
    out = tmp_path / ("a_rather_long_directory_name_" * 6) / "reproduction"
    assert main(["reproduce", "--out", str(out), "-T", "20", "--no-exact", "--no-baselines"]) == 0
    captured = capsys.readouterr()
    assert f"Report: {out / 'REPORT.md'}" in captured.out.splitlines()
    assert any(line.endswith(f"-> {out}/") for line in captured.err.splitlines())
