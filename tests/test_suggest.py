"""Unknown names get the name they most likely mean: by meaning (other tools' and papers' names,
`markovgames._suggest.SYNONYMS`), then by spelling; otherwise the list of valid names."""

from __future__ import annotations

import argparse
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markovgames._suggest import SYNONYMS, did_you_mean, normalized, suggestion
from markovgames.cli import build_parser, main
from markovgames.cli._defaults import SWEEP_CONFIG_KEYS
from markovgames.cli._main import option_names, unrecognized_message, unrecognized_options


def _commands(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its prog (``markovgames``, ``markovgames run``, ``markovgames games show``, ...)."""
    parser = parser or build_parser()
    found = {parser.prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.update(_commands(sub))
    return found


COMMANDS = _commands()
_SUGGESTED = re.compile(r"\(did you mean (--set \S+=VALUE|\S+)\?\)")


def _typed(name: str) -> str:
    """How a user types the option ``name``: ``-j``, ``--learning-rate``."""
    return f"-{name}" if len(name) == 1 else f"--{name}"


def _unknown(parser: argparse.ArgumentParser, option: str) -> bool:
    """``option`` is neither an option of ``parser`` nor an abbreviation that argparse takes or
    reports as ambiguous itself."""
    long_options = [o for o in parser._option_string_actions if o.startswith("--")]
    if option.startswith("--") and any(o.startswith(option) for o in long_options):
        return False
    return unrecognized_options(parser, [option]) == [option]


def _expected(parser: argparse.ArgumentParser, name: str) -> str | None:
    """The option that the table says ``name`` means for ``parser``: the first of ``ours`` that the
    command has, in the first group that holds ``name`` and one of the command's options."""
    options = {normalized(o): o for o in option_names(parser)}
    for ours, theirs in SYNONYMS:
        if normalized(name) in {normalized(n) for n in (*ours, *theirs)}:
            for target in ours:
                if normalized(target) in options:
                    return options[normalized(target)]
    return None


def _table_cases():
    for prog, parser in COMMANDS.items():
        options = {normalized(o) for o in option_names(parser)}
        for ours, theirs in SYNONYMS:
            if not any(normalized(n) in options for n in ours):
                continue
            for name in theirs:
                typed = _typed(name)
                if _unknown(parser, typed):
                    yield pytest.param(prog, typed, id=f"{prog.removeprefix('markovgames').strip() or 'top'}:{typed}")


@pytest.mark.parametrize(("prog", "typed"), list(_table_cases()))
def test_every_synonym_suggests_the_commands_option(prog, typed):
    parser = COMMANDS[prog]
    expected = _expected(parser, typed)
    assert expected is not None
    assert unrecognized_message(parser, [typed]) == f"unrecognized arguments: {typed} (did you mean {expected}?)"


@pytest.mark.parametrize(
    ("argv", "typed", "expected"),
    [
        (["run"], "--learning-rate", "--eta"),
        (["run"], "--lr", "--eta"),
        (["run"], "--step-size", "--eta"),
        (["run"], "--iterations", "-T"),
        (["run"], "--num-iterations", "-T"),
        (["run"], "--steps", "-T"),
        (["run"], "--rounds", "-T"),
        (["run"], "--horizon", "-T"),
        (["run"], "--output-dir", "--out"),
        (["run"], "--outdir", "--out"),
        (["run"], "-o", "--out"),
        (["run"], "--method", "--algorithm"),
        (["run"], "--env", "--game"),
        (["run"], "--force", "--overwrite"),
        (["run"], "--algoritm", "--algorithm"),  # spelling
        (["run"], "-t", "-T"),
        (["reproduce"], "--learning-rate", "--eta"),
        (["reproduce"], "--iterations", "-T"),
        (["evaluate"], "--random-state", "--seed"),
        (["evaluate"], "--output", "--out"),
        (["evaluate"], "--episodes", "--monte-carlo"),
        (["games", "random"], "--steps", "--horizon"),
        (["games", "random"], "--num-players", "--players"),
        (["games", "random"], "--agents", "--players"),
        (["games", "random"], "--num-states", "--states"),
        (["games", "random"], "--num-actions", "--actions"),
        (["games", "random"], "--random-state", "--seed"),
        (["games", "random"], "--output", "--out"),
        (["games", "random"], "--overwrite", "--force"),
        (["games", "export"], "--overwrite", "--force"),
        (["sweep"], "--jobs", "--workers"),
        (["sweep"], "-j", "--workers"),
        (["sweep"], "--output-dir", "--out"),
        (["summarize"], "--output", "--markdown"),
        (["certify"], "--algorithm", "--value-update"),
        (["solve"], "--equilibrium", "--concept"),
        # a sweep's options also mean its configuration's keys
        (["sweep"], "--learning-rate", "--set etas=VALUE"),
        (["sweep"], "--iterations", "--set T=VALUE"),
        (["sweep"], "--runs", "--set seeds=VALUE"),
        (["sweep"], "--seed", "--set base_seed=VALUE"),
        (["sweep"], "--batch-size", "--set max_batch_size=VALUE"),
        (["sweep"], "--algorithms", "--set algorithms=VALUE"),
        ([], "--versoin", "--version"),
    ],
)
def test_other_tools_names_suggest_ours(argv, typed, expected, capsys):
    parser = COMMANDS[" ".join(["markovgames", *argv])]
    assert _unknown(parser, typed)
    assert f"{typed} (did you mean {expected}?)" in unrecognized_message(parser, [typed])
    # Through the command line too, before the missing required options.
    with pytest.raises(SystemExit) as stop:
        main([*argv, typed, "1"] if argv else [typed])
    assert stop.value.code == 2
    assert f"{typed} (did you mean {expected}?)" in capsys.readouterr().err


def test_an_option_that_means_nothing_lists_the_commands_options():
    parser = COMMANDS["markovgames run"]
    message = unrecognized_message(parser, ["--zzzz", "--lr"])
    assert message.startswith("unrecognized arguments: --zzzz --lr (did you mean --eta?); the options of 'markovgames run': ")
    assert message.endswith(", ".join(option_names(parser)))
    assert "--help" not in option_names(parser) and "--eta" in option_names(parser) and "-T" in option_names(parser)
    assert unrecognized_message(COMMANDS["markovgames games list"], ["--zzzz"]) == (
        "unrecognized arguments: --zzzz; 'markovgames games list' has no options"
    )


@settings(max_examples=300, deadline=None)
@given(
    prog=st.sampled_from(sorted(COMMANDS)),
    option=st.one_of(
        st.from_regex(r"--[a-zA-Z][a-zA-Z0-9_-]{0,20}", fullmatch=True),
        st.from_regex(r"-[a-zA-Z]", fullmatch=True),
        st.sampled_from([_typed(n) for ours, theirs in SYNONYMS for n in (*ours, *theirs)]),
    ),
)
def test_every_unknown_option_gets_a_real_option_or_the_list(prog, option):
    parser = COMMANDS[prog]
    if not _unknown(parser, option):
        return
    message = unrecognized_message(parser, [option])
    found = _SUGGESTED.search(message)
    if found is None:
        options = option_names(parser)
        listed = f"; the options of '{prog}': {', '.join(options)}" if options else f"; '{prog}' has no options"
        assert message == f"unrecognized arguments: {option}{listed}"
        return
    suggested = found.group(1)
    if suggested.startswith("--set "):
        assert "--set" in option_names(parser)
        assert suggested.removeprefix("--set ").removesuffix("=VALUE") in SWEEP_CONFIG_KEYS
    else:
        assert suggested in option_names(parser)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["rnu"], "invalid choice: 'rnu' (did you mean 'run'?) (choose from 'reproduce', 'games', 'run'"),
        (["train"], "invalid choice: 'train' (did you mean 'run'?)"),
        (["eval"], "invalid choice: 'eval' (did you mean 'evaluate'?)"),
        (["summary"], "invalid choice: 'summary' (did you mean 'summarize'?)"),
        (["games", "ls"], "invalid choice: 'ls' (did you mean 'list'?)"),
        (["games", "generate"], "invalid choice: 'generate' (did you mean 'random'?)"),
        (["algorithms", "ls"], "invalid choice: 'ls' (did you mean 'list'?)"),
        (["run", "--dtype", "double"], "invalid choice: 'double' (did you mean 'float64'?) (choose from 'float32', 'float64')"),
        (["solve", "--concept", "coarse"], "invalid choice: 'coarse' (did you mean 'cce'?)"),
        (["plot", "sw", "--x", "learning_rate"], "invalid choice: 'learning_rate' (did you mean 'eta'?)"),
        (["certify", "x", "--value-update", "stag"], "invalid choice: 'stag' (did you mean 'stage'?)"),
        (["games", "random", "--rewards", "binary"], "invalid choice: 'binary' (did you mean 'bernoulli'?)"),
        (["zzzz"], "invalid choice: 'zzzz' (choose from 'reproduce', 'games', 'run'"),
    ],
)
def test_invalid_choices_suggest_the_likeliest(argv, expected, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1, err


def test_an_unknown_game_name_suggests_the_built_in_game(capsys):
    assert main(["games", "show", "paperr"]) == 2
    assert "'paperr' (did you mean 'paper'?) is neither a built-in game" in capsys.readouterr().err
    assert main(["games", "hash", "pd"]) == 2
    assert "'pd' (did you mean 'prisoners_dilemma'?) is neither" in capsys.readouterr().err
    assert main(["games", "show", "nope.json"]) == 2  # a file name: no game suggested
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("smoth_ce", "unknown algorithm 'smoth_ce' (did you mean 'smooth_ce'?)"),
        ("smooth-ce", "unknown algorithm 'smooth-ce' (did you mean 'smooth_ce'?)"),
        ("stage_ce", "unknown algorithm 'stage_ce' (did you mean 'stage_cce'?)"),
        ("hedge", "unknown algorithm 'hedge' (did you mean 'hedge+smooth'?)"),
        ("mwu", "unknown algorithm 'mwu' (did you mean 'hedge+smooth'?)"),
        ("rm+", "unknown algorithm 'rm+' (did you mean 'rm-plus+smooth'?)"),
        ("mwu+smooth", "unknown learner 'mwu' (did you mean 'hedge'?)"),
        ("regret-matching-plus+stage", "unknown learner 'regret-matching-plus' (did you mean 'rm-plus'?)"),
        ("hedgee+stage", "unknown learner 'hedgee' (did you mean 'hedge'?)"),
        ("hedge+smoothed", "unknown value update 'smoothed' (did you mean 'smooth'?)"),
        ("hedge+stagewise", "unknown value update 'stagewise' (did you mean 'stage'?)"),
    ],
)
def test_misspelt_algorithm_names(name, expected):
    from markovgames.dynamics import get_algorithm

    with pytest.raises(ValueError) as info:
        get_algorithm(name)
    assert str(info.value).startswith(expected), str(info.value)


def test_library_lookups_suggest(tmp_path):
    from markovgames.experiments import SweepConfigError, load_sweep_config
    from markovgames.games import GameValidationError, game_from_dict, game_to_dict, get_builtin, paper_game, random_game

    with pytest.raises(ValueError, match=r"unknown built-in game 'ipd' \(did you mean 'repeated_prisoners_dilemma'\?\)"):
        get_builtin("ipd")
    with pytest.raises(GameValidationError, match=r"'binary' \(did you mean 'bernoulli'\?\) is not one of"):
        random_game(2, 1, 1, 2, seed_or_rng=0, reward_distribution="binary")
    data = game_to_dict(paper_game())
    data["desc"] = data.pop("description")
    with pytest.raises(GameValidationError, match=r"unknown key\(s\): 'desc' \(did you mean 'description'\?\) \(allowed:"):
        game_from_dict(data)
    config = tmp_path / "sweep.toml"
    algorithms = 'algorithms = ["smooth_ce"]'
    random = "players = 2, horizon = 1, actions = 2"
    for text, expected in [
        (f'iterations = 10\ngames = ["paper"]\n{algorithms}', "unknown key 'iterations' (did you mean 'T'?)"),
        (f'T = 10\nlearning_rate = [0.1]\ngames = ["paper"]\n{algorithms}', "(did you mean 'etas'?)"),
        (f'T = 10\ngames = ["paperr"]\n{algorithms}', None),
        (f'T = 10\ngames = [{{builtin = "paperr"}}]\n{algorithms}', "unknown built-in game 'paperr' (did you mean 'paper'?)"),
        (f"T = 10\ngames = [{{random = {{{random}, num_states = 1}}}}]\n{algorithms}", "'num_states' (did you mean 'states'?)"),
        (f'T = 10\ngames = [{{random = {{{random}, states = 1, rewards = "uniform"}}}}]\n{algorithms}', "'reward_distribution'"),
        ('T = 10\ngames = ["paper"]\nalgorithms = [{name = "smooth_ce", learning_rate = [0.1]}]', "(did you mean 'etas'?)"),
        ('T = 10\ngames = ["paper"]\nalgorithms = ["mwu+stage"]', "unknown learner 'mwu' (did you mean 'hedge'?)"),
    ]:
        config.write_text(text)
        if expected is None:
            load_sweep_config(config)  # a string that is no built-in game is a file, looked for later
            continue
        with pytest.raises(SweepConfigError) as info:
            load_sweep_config(config)
        assert expected in str(info.value), str(info.value)


def test_suggestion_order_and_edge_cases():
    # the same name up to case, '-' and '_' first; then the table; then spelling
    assert suggestion("--No_Optimism", ["--no-optimism", "--exact"]) == "--no-optimism"
    assert suggestion("--steps", ["-T", "--horizon"]) == "-T"  # the table's first group wins
    assert suggestion("--steps", ["--horizon"]) == "--horizon"
    assert suggestion("", ["--eta"]) is None and suggestion("--eta", []) is None
    assert suggestion("qwertyuiop", ["--eta", "-T"]) is None
    assert did_you_mean("paperr", ["paper"]) == " (did you mean 'paper'?)"
    assert did_you_mean("-t", ["-T"], quote=False) == " (did you mean -T?)"
    assert did_you_mean("qwertyuiop", ["paper"]) == ""
    # every group names something and no name is one of its own group's ours and theirs
    for ours, theirs in SYNONYMS:
        assert ours and theirs
        assert not {normalized(n) for n in ours} & {normalized(n) for n in theirs}, ours
        assert len({normalized(n) for n in theirs}) == len(theirs), ours  # each written once
