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


def test_reproduce_writes_everything(tmp_path):
    out = tmp_path / "repro"
    result = reproduce(out, T=200, exact=True, baselines=True)
    names = {p.name for p in out.iterdir()}
    for stem in ("figure1_gap", "figure2_gap_times_T", "figure3_optimism"):
        assert {f"{stem}.png", f"{stem}.pdf"} <= names
    assert {"curves.csv", "curves.parquet", "exact_gaps.csv", "exact_gaps.parquet", "REPORT.md", "summary.json"} <= names
    assert len(result.claims) == 4
    # At T = 200 the last two decades do not reach back to T' = 10: the slope claims are undecided,
    # and the report says why rather than "does not hold".
    assert [c["holds"] for c in result.claims[:3]] == [None, None, None]
    assert isinstance(result.claims[3]["holds"], bool)
    report = (out / "REPORT.md").read_text()
    assert report.count("**undecided**") == 3 and "T = 200 is too short" in report
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


def test_reproduce_leaves_no_file_of_an_earlier_one_and_lists_only_its_own(tmp_path):
    """Rerun into the same directory without exact gaps and baselines: the earlier run's
    ``exact_gaps`` and ``figure3`` (of another T) are gone, and the report lists neither."""
    out = tmp_path / "repro"
    reproduce(out, T=100, exact=True, baselines=True)
    assert {"exact_gaps.csv", "figure3_optimism.png"} <= {p.name for p in out.iterdir()}
    result = reproduce(out, T=120, exact=False, baselines=False)
    names = {p.name for p in out.iterdir()}
    assert not any(n.startswith(("exact_gaps", "figure3")) for n in names), names
    assert names == {p.name for p in result.files}
    files_section = (out / "REPORT.md").read_text().split("## Files")[1]
    assert "figure3" not in files_section and "exact_gaps" not in files_section


def test_reproduce_decides_the_slope_claims_from_T_1000(tmp_path):
    result = reproduce(tmp_path / "r", T=1000, exact=False, baselines=False)
    assert all(isinstance(c["holds"], bool) and not c.get("undecided") for c in result.claims)
    assert "**undecided**" not in (tmp_path / "r" / "REPORT.md").read_text()


def test_reproduce_cli_rejects_bad_T(tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path / "r"), "-T", "0"]) == 2
    assert "-T" in capsys.readouterr().err
