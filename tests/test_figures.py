"""Figures a reader can read, and figure files that never replace one another.

Each figure is inspected as the matplotlib Figure it saves: its legends lie outside every axes
(or are summarised), each series has a colour of its own, and its title says every setting that
differs from the defaults. The sweeps are results tables written here (power laws with a little
noise), so that no test runs the dynamics.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from markovgames._outputs import OutputPathError
from markovgames.cli import main
from markovgames.experiments import Curve, plot_gap_curves, plot_sweep
from markovgames.experiments.figures._files import FIGURE_INDEX

CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100)


def write_results(
    directory: Path,
    groups,
    *,
    games=(("g", 2, 2),),
    seeds: int = 2,
    T: int = 100,
    dtype: str = "float64",
) -> Path:
    """A sweep directory whose results.parquet has, per game ``(label, N, H)``, group
    ``(algorithm, optimistic, eta)`` and seed, a run whose gap falls like a power of T'."""
    rng = np.random.default_rng(0)
    rows = []
    for (game, N, H), (algorithm, optimistic, eta), seed in itertools.product(games, groups, range(seeds)):
        run_id = f"{game}-{algorithm}-{optimistic}-{eta}-{seed}"
        # A gap is at most H (results are checked on read): at most 0.9 x 1.1 H here.
        scale, power = rng.uniform(0.2, 0.9) * H, -1.0 if optimistic else -0.5
        for c in (c for c in CHECKPOINTS if c <= T):
            gap = scale * c**power * rng.uniform(0.9, 1.1)
            rows.append(
                {
                    "run_id": run_id,
                    "game": game,
                    "game_seed": seed,
                    "N": N,
                    "H": H,
                    "S": 2,
                    "A": "x".join(["2"] * N),
                    "algorithm": algorithm,
                    "concept": "ce" if algorithm == "smooth_ce" else "cce",
                    "optimistic": optimistic,
                    "eta": eta,
                    "eta_value": None if eta == "theory" else float(eta),
                    "T": T,
                    "checkpoint": c,
                    "certified_ce_gap": gap,
                    "certified_cce_gap": gap,
                    "dtype": dtype,
                }
            )
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), directory / "results.parquet")
    return directory


PAPER = [("smooth_ce", True, "0.2"), ("stage_cce", True, "0.2"), ("smooth_cce", True, "0.2")]


class Saved(dict):
    """The figures saved, by file stem. Each is written as a small placeholder of a new content
    each time (the names and the record are what matter here; rendering PNG and PDF takes seconds);
    with ``measure``, each is drawn first, so that where its legends and axes lie is known."""

    measure = False
    writes = 0

    def save(self, fig, stem, dpi=150):
        import matplotlib.pyplot as plt

        if self.measure:
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            fig.test_boxes = (
                [legend.get_window_extent(renderer) for legend in _legends(fig)],
                [ax.get_window_extent(renderer) for ax in fig.axes],
            )
        self[Path(stem).name] = fig
        paths = []
        for suffix in (".png", ".pdf"):
            Saved.writes += 1
            path = Path(stem).with_suffix(suffix)
            path.write_text(f"figure {Saved.writes}\n")
            paths.append(path)
        plt.close(fig)
        return paths


@pytest.fixture(autouse=True)
def placeholders(monkeypatch) -> Saved:
    from markovgames.experiments.figures import _curves as _plots
    from markovgames.experiments.figures import _sweep as _sweep_plot

    figures = Saved()
    for module in (_plots, _sweep_plot):
        monkeypatch.setattr(module, "save_figure", figures.save)
    return figures


@pytest.fixture
def saved(placeholders) -> Saved:
    placeholders.measure = True
    return placeholders


def _legends(fig) -> list:
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


def _titles(fig) -> str:
    texts = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    return "\n".join(texts + [ax.get_title() for ax in fig.axes])


def _entries(fig) -> list[str]:
    return [t.get_text() for legend in _legends(fig) for t in legend.get_texts()]


def _series_handles(fig):
    """The legend's handles of series (not the grey guides and keys), with their labels."""
    legend = _legends(fig)[0]
    pairs = zip(legend.legend_handles, [t.get_text() for t in legend.get_texts()], strict=True)
    return [(h, text) for h, text in pairs if not text.startswith(("T' = ", r"$\propto"))]


def assert_legends_outside_the_data(fig) -> None:
    """Every legend (there is one) lies within the figure and outside each of its axes."""
    legends, axes = fig.test_boxes
    assert legends, "no legend"
    for box in legends:
        assert not any(box.overlaps(ax) for ax in axes), (box, axes)
        assert box.x0 >= fig.bbox.x0 - 1 and box.x1 <= fig.bbox.x1 + 1 and box.y0 >= fig.bbox.y0 - 1


# ----------------------------------------------------------------------------------------------
# Legends and colours
# ----------------------------------------------------------------------------------------------
def test_the_across_figure_summarises_its_series(tmp_path, saved):
    """3 algorithms x 2 learning rates x 3 decades were 18 legend entries over the data: now one
    per series (6) and one per decade (3), below the axes."""
    groups = [(a, True, e) for a, _, _ in PAPER for e in ("0.1", "0.2")]
    sw = write_results(tmp_path / "sw", groups, games=(("two", 2, 2), ("three", 3, 2)))
    plot_sweep(sw, x="players", decades=[10, 50, 100])
    fig = saved["gap_times_T_vs_players_decades-1e1-5e1-1e2"]
    entries = _entries(fig)
    assert len(entries) == 9, entries
    assert entries[6:] == ["T' = 100", "T' = 50", "T' = 10"]
    assert "smooth_cce, eta=0.1" in entries
    colours = [mcolors.to_hex(h.get_color()) for h, _ in _series_handles(fig)]
    assert len(colours) == 6 == len(set(colours))
    # The lines of one series share its colour and differ in their line style (the decade).
    (ax,) = fig.axes
    by_colour: dict[str, set] = {}
    for container in ax.containers:
        line = container.lines[0]
        by_colour.setdefault(mcolors.to_hex(line.get_color()), set()).add((line.get_linestyle(), line.get_marker()))
    assert len(by_colour) == 6 and all(len(styles) == 3 for styles in by_colour.values())
    assert_legends_outside_the_data(fig)


def test_a_single_series_across_games_gets_one_colour_per_decade(tmp_path, saved):
    """The horizon study's figure: one algorithm, three decades T', three colours."""
    sw = write_results(tmp_path / "sw", [("smooth_ce", True, "0.2")], games=(("H1", 2, 1), ("H2", 2, 2), ("H3", 2, 3)))
    plot_sweep(sw, x="horizon")
    fig = saved["gap_times_T_vs_horizon"]
    (ax,) = fig.axes
    colours = [mcolors.to_hex(c.lines[0].get_color()) for c in ax.containers]
    assert len(colours) == 2 == len(set(colours))  # the decades 10 and 100 of T = 100
    assert _entries(fig) == ["T' = 10", "T' = 100"]
    assert fig._suptitle.get_text().startswith("smooth_ce: gap × T' against horizon H")
    assert_legends_outside_the_data(fig)


def test_each_series_of_a_game_has_its_own_colour(tmp_path, saved):
    groups = [(a, o, e) for a, _, _ in PAPER for o in (True, False) for e in ("0.1", "0.2", "theory")]
    sw = write_results(tmp_path / "sw", groups)
    plot_sweep(sw)
    fig = saved["gaps_g"]
    handles = _series_handles(fig)
    assert len(handles) == len(groups)
    colours = [mcolors.to_hex(h.get_color()) for h, _ in handles]
    assert len(set(colours)) == len(colours), colours
    styles = {text.split(" [")[0]: h.get_linestyle() for h, text in handles}
    assert styles["smooth_ce, eta=0.1"] == "-" and styles["smooth_ce, no optimism, eta=0.1"] == "--"
    assert_legends_outside_the_data(fig)


def test_a_legend_of_too_many_series_says_how_many_it_leaves_out(tmp_path, saved):
    groups = [(f"alg{k}+smooth", o, e) for k in range(6) for o in (True, False) for e in ("0.05", "0.1", "0.2", "0.4")]
    sw = write_results(tmp_path / "sw", groups, seeds=1)
    plot_sweep(sw)
    fig = saved["gaps_g"]
    entries = _entries(fig)
    assert len(entries) < len(groups) and any(e.startswith("... and ") and e.endswith(" more series") for e in entries)
    hidden = int(next(e for e in entries if e.startswith("... and ")).split()[2])
    assert len(entries) - 1 - 2 + hidden == len(groups)  # the shown series, the two guides, the rest
    assert_legends_outside_the_data(fig)


def test_the_paper_figures_put_their_legend_below_and_shade_the_baselines(tmp_path, saved):
    T = np.arange(1, 101, dtype=float)
    curves = [
        Curve("A [optimistic]", "smooth_ce", T, 1 / T),
        Curve("A [no optimism]", "smooth_ce", T, T**-0.5, linestyle="--"),
        Curve("B", "stage_cce", T, 2 / T, exact_T=np.array([10.0, 100.0]), exact_gap=np.array([0.1, 0.01])),
    ]
    plot_gap_curves(curves, tmp_path / "fig", times_T=False, title="Figure 3", settings="eta=0.1, T = 100")
    fig = saved["fig"]
    assert fig.axes[0].get_title() == "Figure 3\neta=0.1, T = 100"
    colours = {text: mcolors.to_hex(h.get_color()) for h, text in _series_handles(fig)}
    assert colours["A [optimistic] (certified)"] != colours["A [no optimism] (certified)"]
    assert colours["B (certified)"] == colours["B (exact)"]  # one series: its curve and its exact points
    assert_legends_outside_the_data(fig)


# ----------------------------------------------------------------------------------------------
# Titles
# ----------------------------------------------------------------------------------------------
def test_titles_state_the_settings_that_differ_from_the_defaults(tmp_path, saved):
    sw = write_results(tmp_path / "sw", [("smooth_cce", False, "0.1")], dtype="float32")
    plot_sweep(sw, concept="ce", window=(10, 100))
    for name in ("gaps_g_concept-ce_window-1e1-1e2", "slopes_1e1-1e2_concept-ce"):
        title = _titles(saved[name])
        for words in (
            "no optimism",
            "eta=0.1",
            "float32",
            "T = 100",
            "CE gap for every algorithm",
            "slopes over T' in [10, 100]",
        ):
            assert words in title, (name, words, title)
    # The series' labels leave what the title says to the title.
    assert _entries(saved["gaps_g_concept-ce_window-1e1-1e2"])[0].startswith("smooth_cce [2 runs]: slope")


def test_titles_of_a_default_sweep_say_no_settings_but_T(tmp_path, saved):
    sw = write_results(tmp_path / "sw", PAPER)
    plot_sweep(sw)
    title = _titles(saved["gaps_g"])
    assert "T = 100" in title and not any(w in title for w in ("no optimism", "eta=", "float32", "slopes over"))


def test_reproduce_titles_state_T_eta_and_no_exact_gaps():
    from markovgames.experiments._reproduce import _settings
    from markovgames.games import paper_game

    assert _settings(paper_game(), 100_000, 0.2, True) == ("", "")
    assert _settings(paper_game(), 1000, 0.1, False) == ("eta=0.1, T = 1,000, no exact gaps", "eta=0.1, T = 1,000")


# ----------------------------------------------------------------------------------------------
# File names and replacement
# ----------------------------------------------------------------------------------------------
def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name != FIGURE_INDEX}


def test_plots_with_other_options_write_other_files(tmp_path, capsys):
    sw = write_results(tmp_path / "sw", PAPER)
    figs = sw / "figures"
    assert main(["plot", str(sw)]) == 0
    first = (figs / "gaps_g.png").read_bytes()
    assert main(["plot", str(sw), "--window", "10,100"]) == 0
    assert main(["plot", str(sw), "--concept", "cce"]) == 0
    assert (figs / "gaps_g.png").read_bytes() == first  # the first plot's figure is still there
    assert main(["plot", str(sw), "--x", "players", "--decades", "10,1e2"]) == 0
    assert main(["plot", str(sw), "--x", "players"]) == 0
    stems = {"gaps_g", "gaps_g_window-1e1-1e2", "slopes_1e1-1e2", "gaps_g_concept-cce"}
    stems |= {"gap_times_T_vs_players_decades-1e1-1e2", "gap_times_T_vs_players"}
    assert _names(figs) == {stem + suffix for stem in stems for suffix in (".png", ".pdf")}
    out = capsys.readouterr().out
    assert "wrote " + str(figs / "gaps_g_window-1e1-1e2.png") in out


def test_the_same_plot_again_refreshes_its_files(tmp_path):
    sw = write_results(tmp_path / "sw", PAPER)
    plot_sweep(sw, window=(10, 100))
    before = (sw / "figures" / "gaps_g_window-1e1-1e2.png").read_bytes()
    write_results(sw, PAPER, seeds=3)  # the sweep grew
    paths = plot_sweep(sw, window=(10, 100))
    assert {p.name for p in paths} == {
        "gaps_g_window-1e1-1e2.png",
        "gaps_g_window-1e1-1e2.pdf",
        "slopes_1e1-1e2.png",
        "slopes_1e1-1e2.pdf",
    }
    assert (sw / "figures" / "gaps_g_window-1e1-1e2.png").read_bytes() != before


def test_a_file_markovgames_did_not_draw_is_never_replaced(tmp_path, capsys):
    sw = write_results(tmp_path / "sw", PAPER, games=(("g", 2, 2), ("h", 3, 2)))
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "gaps_h.pdf").write_text("my own figure\n")
    for extra in ([], ["--overwrite"]):
        assert main(["plot", str(sw), "--out", str(figs), *extra]) == 2
        err = capsys.readouterr().err
        assert f"--out {figs}: gaps_h.pdf exists and markovgames did not draw it" in err, err
        assert _names(figs) == {"gaps_h.pdf"}  # nothing drawn, not even the other game's figure
    assert (figs / "gaps_h.pdf").read_text() == "my own figure\n"
    # A figure markovgames drew and someone changed since is no longer its own.
    assert main(["plot", str(sw), "--out", str(figs), "--window", "10,100"]) == 0
    (figs / "gaps_g_window-1e1-1e2.png").write_bytes(b"edited")
    with pytest.raises(OutputPathError, match=r"gaps_g_window-1e1-1e2.png exists and markovgames did not draw it"):
        plot_sweep(sw, figs, window=(10, 100), overwrite=True)


def test_a_figure_drawn_from_other_results_is_replaced_only_with_overwrite(tmp_path, capsys):
    one = write_results(tmp_path / "one", PAPER)
    two = write_results(tmp_path / "two", PAPER[:1])
    figs = tmp_path / "figs"
    assert main(["plot", str(one), "--out", str(figs)]) == 0
    before = (figs / "gaps_g.png").read_bytes()
    assert main(["plot", str(two), "--out", str(figs)]) == 2
    err = capsys.readouterr().err
    assert f"--out {figs}: gaps_g.png is a figure drawn from other results ({(one / 'results.parquet').resolve()})" in err
    assert "use --overwrite to replace it" in err
    assert (figs / "gaps_g.png").read_bytes() == before
    assert main(["plot", str(two), "--out", str(figs), "--overwrite"]) == 0
    assert (figs / "gaps_g.png").read_bytes() != before
    # The default folder is named in the message as a path, not as --out.
    assert main(["plot", str(two)]) == 0
    (two / "figures" / "gaps_g.pdf").unlink()
    (two / "figures" / "gaps_g.pdf").symlink_to(figs / "gaps_g.pdf")
    assert main(["plot", str(two)]) == 2
    assert f"{two / 'figures' / 'gaps_g.pdf'}: is a symbolic link" in capsys.readouterr().err
