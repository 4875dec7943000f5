"""Sweep configurations: validation errors name the key, --set overrides, seeds, run ids, batching.

Nothing here runs the dynamics.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markovgames.experiments.sweeps._config import (
    SweepConfigError,
    apply_overrides,
    load_sweep_config,
    parse_override,
    parse_sweep_config,
    resolved_checkpoints,
)
from markovgames.experiments.sweeps._sweep import derive_game_seeds, game_content_hash, plan_sweep
from markovgames.games import paper_game, random_game, save_game

BASE = textwrap.dedent(
    """
    name = "t"
    T = 100
    etas = [0.1, 0.2]
    seeds = 3
    base_seed = 11
    games = [
      "paper",
      {random = {players = 2, horizon = 2, states = 3, actions = [2, 2]}},
      {random = {players = 3, horizon = 1, states = 2, actions = 2}, label = "three"},
    ]
    algorithms = ["smooth_ce", "stage_cce", {name = "smooth_cce", optimistic = [true, false]}]
    """
)


def write(tmp_path, text, name="sweep.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def load(tmp_path, text=BASE, overrides=()):
    return load_sweep_config(write(tmp_path, text), list(overrides))[0]


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "replace,message",
    [
        (
            ('"stage_cce"', '"foo"'),
            "sweep.toml: algorithms[1]: unknown algorithm 'foo'; choose one of: smooth_ce, stage_cce, smooth_cce",
        ),
        (('name = "smooth_cce"', 'name = "nope"'), "sweep.toml: algorithms[2].name: unknown algorithm 'nope'"),
        (
            ("optimistic = [true, false]", "optimism = [true]"),
            "sweep.toml: algorithms[2]: unknown key 'optimism' (did you mean 'optimistic'?); allowed keys: name, optimistic, etas",
        ),
        (("T = 100", "T = 0"), "sweep.toml: T: expected a positive integer, got 0"),
        (("T = 100", 'T = "ten"'), "sweep.toml: T: expected a positive integer, got 'ten'"),
        (("T = 100", "T = 100\ncolour = 1"), "sweep.toml: unknown key 'colour'; allowed keys: name, games, algorithms"),
        (
            ("etas = [0.1, 0.2]", "etas = [0.1, -2]"),
            "sweep.toml: etas[1]: a learning rate is a positive number or 'theory', got -2",
        ),
        (("etas = [0.1, 0.2]", 'etas = [0.1, "fast"]'), "sweep.toml: etas[1]: a learning rate is a positive number or 'theory'"),
        (("etas = [0.1, 0.2]", "etas = [0.1, 0.1]"), "sweep.toml: etas: repeated learning rate"),
        (
            ("etas = [0.1, 0.2]", "etas = [0.1, 1e300]"),
            "sweep.toml: etas[1]: learning rate 1e+300 is too large for T = 100 in float64 (at most 3.6e+14",
        ),
        (
            ("optimistic = [true, false]}", "optimistic = [true, false], etas = [1e15]}"),
            "sweep.toml: algorithms[2].etas[0]: learning rate 1e+15 is too large",
        ),
        (("seeds = 3", "seeds = -1"), "sweep.toml: seeds: expected a positive integer, got -1"),
        (("T = 100", "T = 100\ncheckpoints = [10, 500]"), "sweep.toml: checkpoints: 500 is beyond T = 100"),
        (("T = 100", 'T = 100\ncheckpoints = "every"'), "sweep.toml: checkpoints: expected 'log', 'decades' or a list"),
        (("T = 100", 'T = 100\ndtype = "float16"'), "sweep.toml: dtype: input should be 'float64' or 'float32'"),
        (("states = 3", "states = 0"), "sweep.toml: games[1].random.states: expected a positive integer, got 0"),
        (("actions = [2, 2]", "actions = [2, 2, 2]"), "sweep.toml: games[1].random: actions has 3 entries but players = 2"),
        (("actions = [2, 2]", "actions = [2, 0]"), "sweep.toml: games[1].random.actions[1]: expected a positive integer, got 0"),
        (
            ("actions = [2, 2]}", "actions = [2, 2], colour = 1}"),
            "sweep.toml: games[1].random: unknown key 'colour'; allowed keys: players",
        ),
        (("players = 2, ", ""), "sweep.toml: games[1].random.players: required key is missing"),
        (
            ("actions = [2, 2]}", "actions = [2, 2], successors = 4}"),
            "sweep.toml: games[1].random: successors = 4 exceeds states = 3",
        ),
        (
            ("actions = [2, 2]}", "actions = [2, 2], successors = 0}"),
            "sweep.toml: games[1].random.successors: expected a positive integer, got 0",
        ),
        (('"paper",', '{builtin = "nope"},'), "sweep.toml: games[0].builtin: unknown built-in game 'nope'; choose one of:"),
        (
            ('"paper",', '{builtin = "paper", file = "g.json"},'),
            "sweep.toml: games[0]: give exactly one of builtin, file, random",
        ),
        (('"paper",', "3,"), "sweep.toml: games[0]: expected a built-in game name, a file name, or a table"),
        (
            ('algorithms = ["smooth_ce", "stage_cce", {name = "smooth_cce", optimistic = [true, false]}]', "algorithms = []"),
            "sweep.toml: algorithms: must not be empty",
        ),
    ],
)
def test_validation_errors_name_the_key(tmp_path, replace, message):
    old, new = replace
    assert old in BASE
    with pytest.raises(SweepConfigError) as info:
        load(tmp_path, BASE.replace(old, new, 1))
    text = str(info.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_missing_keys_and_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(SweepConfigError) as info:
        load(tmp_path, 'name = "x"\n')
    # Every problem, one line each naming its key, in the order of the schema.
    assert info.value.problems == tuple(str(info.value).splitlines())
    assert str(info.value).splitlines() == [
        "sweep.toml: games: required key is missing",
        "sweep.toml: algorithms: required key is missing",
        "sweep.toml: T: required key is missing",
    ]
    with pytest.raises(SweepConfigError, match=r"^sweep.toml: invalid TOML"):
        load(tmp_path, "T = = 3\n")
    with pytest.raises(SweepConfigError, match="no such configuration file"):
        load_sweep_config(tmp_path / "absent.toml")


def test_valid_config_and_defaults(tmp_path):
    config = load(tmp_path)
    assert config.T == 100 and config.seeds == 3 and config.etas == [0.1, 0.2] and config.optimistic == [True]
    assert [a.name for a in config.algorithms] == ["smooth_ce", "stage_cce", "smooth_cce"]
    assert config.algorithms[2].optimistic == [True, False]
    assert config.games[0].builtin == "paper" and config.games[2].label == "three"
    assert config.checkpoints == "log" and config.max_retries == 1 and config.dtype == "float64"
    cps = resolved_checkpoints(config)
    assert cps[0] == 1 and cps[-1] == 100 and cps == sorted(set(cps))
    decades = parse_sweep_config({**_raw(tmp_path), "checkpoints": "decades"})
    assert resolved_checkpoints(decades) == [1, 10, 100]
    explicit = parse_sweep_config({**_raw(tmp_path), "checkpoints": [50, 5]})
    assert resolved_checkpoints(explicit) == [5, 50, 100]  # T is always kept
    theory = parse_sweep_config({**_raw(tmp_path), "etas": "theory", "optimistic": False})
    assert theory.etas == ["theory"] and theory.optimistic == [False]


@settings(max_examples=200, deadline=None)
@given(T=st.integers(1, 10**9), per_decade=st.sampled_from([1, 3, 10, 40]))
def test_log_checkpoints_hold_every_decade(T, per_decade):
    """The "log" grid contains every 10^k <= T (and T), whatever the rounding of its other points."""
    from markovgames.experiments import log_grid

    grid = set(int(x) for x in log_grid(T, per_decade))
    decades = [10**k for k in range(10) if 10**k <= T]
    assert set(decades) <= grid and T in grid and min(grid) >= 1 and max(grid) == T


def test_sweep_log_checkpoints_hold_every_decade(tmp_path):
    # T = 12345 and 3e4: the log-spaced points alone miss 10 000 (the reported "checkpoint == 10000 matched nothing").
    for T in (12345, 30000, 100000):
        config = parse_sweep_config({**_raw(tmp_path), "T": T})
        cps = resolved_checkpoints(config)
        assert {1, 10, 100, 1000, 10000} <= set(cps) and cps[-1] == T


def _raw(tmp_path):
    return load_sweep_config(write(tmp_path, BASE))[1]


# ---------------------------------------------------------------------------------------
# --set overrides
# ---------------------------------------------------------------------------------------
def test_overrides_dotted_keys_toml_values(tmp_path):
    config = load(
        tmp_path,
        overrides=[
            "T=500",
            'etas=[0.05, "theory"]',
            "games[1].random.states=4",
            "games.2.label=renamed",
            "games[0].label=the-paper",
            "algorithms=['smooth_ce']",
            "checkpoints=decades",  # a bare word is a string
            "optimistic=[true,false]",
            "max_batch_size=7",
        ],
    )
    assert config.T == 500 and config.etas == [0.05, "theory"]
    assert config.games[1].random.states == 4 and config.games[2].label == "renamed"
    assert config.games[0].builtin == "paper" and config.games[0].label == "the-paper"
    assert [a.name for a in config.algorithms] == ["smooth_ce"]
    assert config.checkpoints == "decades" and config.optimistic == [True, False] and config.max_batch_size == 7


def test_override_values_are_validated_and_bad_overrides_are_named(tmp_path):
    with pytest.raises(SweepConfigError, match=r"^sweep.toml: T: expected a positive integer, got -5$"):
        load(tmp_path, overrides=["T=-5"])
    with pytest.raises(SweepConfigError, match=r"^sweep.toml: games\[1\].random: unknown key 'sates'"):
        load(tmp_path, overrides=["games[1].random.sates=4"])
    with pytest.raises(SweepConfigError, match=r"^sweep.toml: unknown key 'Tee'"):
        load(tmp_path, overrides=["Tee=4"])
    with pytest.raises(SweepConfigError, match=r"^override 'T': expected KEY=VALUE$"):
        load(tmp_path, overrides=["T"])
    with pytest.raises(SweepConfigError, match=r"^override '=3': empty key$"):
        load(tmp_path, overrides=["=3"])
    with pytest.raises(SweepConfigError, match=r"^override games\[9\].label: games\[9\] is out of range \(3 entries\)$"):
        load(tmp_path, overrides=["games[9].label=x"])
    with pytest.raises(SweepConfigError, match=r"^override etas: '\[0.1,' is not a TOML value"):
        load(tmp_path, overrides=["etas=[0.1,"])
    with pytest.raises(SweepConfigError, match=r"^override T.x: T is not a table$"):
        load(tmp_path, overrides=["T.x=1"])
    # The library names its argument; the command line turns it into the option (--set).
    with pytest.raises(SweepConfigError) as info:
        load(tmp_path, overrides=["T"])
    assert (info.value.argument, info.value.shown) == ("override", "'T'")


def test_parse_override_forms():
    assert parse_override("a.b[2].c=1") == (["a", "b", 2, "c"], 1)
    assert parse_override("a.2=true") == (["a", 2], True)
    assert parse_override('name="x y"') == (["name"], "x y")
    assert parse_override("name=plain") == (["name"], "plain")
    raw = {"games": ["paper"]}
    assert apply_overrides(raw, ["games[0].label=p"]) == {"games": [{"builtin": "paper", "label": "p"}]}
    assert raw == {"games": ["paper"]}  # the input is not modified


# ---------------------------------------------------------------------------------------
# Seeds, run ids, batches
# ---------------------------------------------------------------------------------------
def test_seeds_spawned_from_base_seed_are_reproducible_and_prefix_stable(tmp_path):
    seeds = derive_game_seeds(11, 3)
    children = np.random.SeedSequence(11).spawn(3)
    assert seeds == [int(c.generate_state(1, dtype=np.uint64)[0]) >> 1 for c in children]
    assert derive_game_seeds(11, 5)[:3] == seeds  # more seeds keep the first ones (a sweep can grow)
    assert len(set(seeds)) == 3 and all(0 <= s < 2**63 for s in seeds)
    plan = plan_sweep(load(tmp_path), tmp_path)
    assert plan.game_seeds == tuple(seeds)
    random_runs = [r for r in plan.runs if r.game_kind == "random" and r.game_index == 1]
    assert sorted({r.game_seed for r in random_runs}) == sorted(seeds)
    for r in random_runs:
        again = random_game(2, 2, 3, (2, 2), seed_or_rng=r.game_seed)
        assert game_content_hash(again) == game_content_hash(r.game)
        assert r.seed_index == seeds.index(r.game_seed)


def test_run_ids_are_stable_and_depend_only_on_what_determines_the_numbers(tmp_path):
    plan = plan_sweep(load(tmp_path), tmp_path)
    # paper: 1 game; two random generators x 3 seeds: 6 games. 4 algorithm variants x 2 etas.
    assert len(plan.runs) == 7 * 4 * 2
    ids = plan.run_ids
    assert len(set(ids)) == len(ids) and all(len(i) == 16 for i in ids)
    assert plan_sweep(load(tmp_path), tmp_path).run_ids == ids
    relabelled = plan_sweep(load(tmp_path, overrides=["games[2].label=other", "name=renamed"]), tmp_path)
    assert relabelled.run_ids == ids
    longer = plan_sweep(load(tmp_path, overrides=["T=200"]), tmp_path)
    assert not set(longer.run_ids) & set(ids)
    fewer = plan_sweep(load(tmp_path, overrides=["etas=[0.2]"]), tmp_path)
    assert set(fewer.run_ids) < set(ids)


def test_grouping_into_batches(tmp_path):
    config = load(
        tmp_path,
        overrides=[
            'algorithms=["smooth_ce", {name="stage_cce", etas=[0.2, "theory"]}, {name="smooth_cce", optimistic=[true, false]}]'
        ],
    )
    plan = plan_sweep(config, tmp_path)
    batches = plan.batches()
    assert sorted(r for b in batches for r in b.run_ids) == sorted(plan.run_ids)
    by_id = {r.run_id: r for r in plan.runs}
    keys = set()
    for b in batches:
        members = [by_id[r] for r in b.run_ids]
        key = {(m.algorithm, m.optimistic, m.game.shape_key, m.T, m.checkpoints, m.dtype) for m in members}
        assert len(key) == 1
        stage_kinds = {m.eta == "theory" for m in members if m.algorithm == "stage_cce"}
        assert len(stage_kinds) <= 1  # stage_cce cannot mix 'theory' and constant rates in one run_batch
        assert list(b.etas) == [m.eta for m in members] and list(b.games) == [m.game for m in members]
        keys.add((*key.pop(), bool(stage_kinds and stage_kinds.pop())))
    assert len(keys) == len(batches)  # one batch per key: everything that can share a call does
    # 3 shapes (paper 2x2 / random N=2 S=3 2x2 / N=3); smooth_ce, smooth_cce x2 optimism, stage_cce x2 rate kinds.
    assert len(batches) == 3 * 5
    sizes = {(b.algorithm, b.optimistic, b.shape_key[0], b.shape_key[2]): len(b) for b in batches if b.algorithm != "stage_cce"}
    assert sizes[("smooth_ce", True, 2, 3)] == 3 * 2  # 3 seeds x 2 etas in one vmapped call
    assert sizes[("smooth_ce", True, 2, 2)] == 2  # the paper game (its shape differs from random S=3)
    assert [len(b) for b in batches] == sorted((len(b) for b in batches), reverse=True)
    capped = plan_sweep(load(tmp_path, overrides=["max_batch_size=4"]), tmp_path).batches()
    assert max(len(b) for b in capped) == 4


def test_game_files_are_relative_to_the_config(tmp_path, monkeypatch):
    sub = tmp_path / "cfg"
    sub.mkdir()
    save_game(paper_game(), sub / "g.json")
    text = 'T = 10\ngames = ["g.json", {file = "g.json", label = "again"}]\nalgorithms = ["smooth_ce"]\n'
    path = write(sub, text)
    monkeypatch.chdir(tmp_path)
    config, _ = load_sweep_config(path)
    plan = plan_sweep(config, sub)
    assert [r.game_label for r in plan.runs] == ["g.json"]  # the second entry is the same run
    assert plan.runs[0].game_kind == "file"
    assert game_content_hash(plan.runs[0].game) == game_content_hash(paper_game())
    bad = parse_sweep_config({"T": 10, "games": ["nope.json"], "algorithms": ["smooth_ce"]})
    with pytest.raises(SweepConfigError, match=r"^games\[0\]: 'nope.json' is neither a built-in game nor an existing game file$"):
        plan_sweep(bad, sub)
    misspelt = parse_sweep_config({"T": 10, "games": ["paperr"], "algorithms": ["smooth_ce"]})
    with pytest.raises(
        SweepConfigError, match=r"'paperr' is neither a built-in game nor an existing game file \(did you mean 'paper'\?\)$"
    ):
        plan_sweep(misspelt, sub)
