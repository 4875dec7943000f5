"""A user's learner is checked where it runs: its functions when first traced, its strategies in the loop.

* Wrong shapes, dtypes, state structures and exceptions in ``init``/``play``/``observe``/``build``
  are `LearnerError`s naming the learner, the function and what was expected (with the user's
  file and line for an exception), before anything is compiled or written.
* A strategy off the simplex (unnormalised, negative, NaN) stops the run at its first occurrence,
  naming the iteration, player, step, state and run: located by an independent count here.
* From the command line: exit 2, one line, no output directory; a file that raises SystemExit at
  import is an error like any other.
* The built-in learners carry no guard: their compiled loops are those of an unguarded run.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import case, cli_in_process, examples, make_random_game
from markovgames import MarkovGamesError
from markovgames.dynamics import STRATEGY_TOLERANCE, Algorithm, LearnerOutputError, run, run_batch
from markovgames.dynamics._guard import is_guarded
from markovgames.learners import BM_RM_PLUS, BUILTIN_LEARNERS, HEDGE, Learner, LearnerError, LearnerSpec, swap_regret


def _hedge_with(play_hook=None, init_hook=None, observe_hook=None, name="mine"):
    """Hedge, with the user's changes to what its functions return: ``play_hook(x, state, count, axis)``."""

    def build(axis):
        base = HEDGE.build(axis)

        def init(shape, dtype=jnp.float64):
            state = (base.init(shape, dtype), jnp.zeros(shape, dtype))  # a play count per copy
            return init_hook(state) if init_hook else state

        def play(state, prediction, eta, decay):
            inner, count = state
            x, inner = base.play(inner, prediction, eta, decay)
            count = count + 1
            if play_hook:
                return play_hook(x, (inner, count), count, axis)
            return x, (inner, count)

        def observe(state, utility, decay):
            inner, count = state
            new = (base.observe(inner, utility, decay), count)
            return observe_hook(new) if observe_hook else new

        return Learner(init, play, observe)

    return LearnerSpec(name, build)


def test_the_built_in_learners_are_not_guarded_and_a_users_is():
    assert not any(is_guarded(spec) for spec in BUILTIN_LEARNERS.values())
    assert not is_guarded(swap_regret(HEDGE)) and not is_guarded(BM_RM_PLUS)
    mine = _hedge_with()
    assert is_guarded(mine) and is_guarded(swap_regret(mine))


def _off_at(count_at: int, h: int, s: int, run: int | None, how: str):
    """A play hook that spoils the strategy at copy (h, s[, run]) on the learner's ``count_at``-th play,
    for the player with three actions only."""

    def hook(x, state, count, axis):
        if x.shape[axis] != 3:
            return x, state
        index = (h, s, slice(None)) + ((run,) if run is not None else ())
        spoiled = {"scale": x[index] * 0.7, "negative": x[index] * jnp.array([2.0, -1.0, 0.0]), "nan": x[index] * jnp.nan}[how]
        return jnp.where(count == count_at, x.at[index].set(spoiled), x), state

    return hook


#: Each case compiles a loop of its own: by default three of the twelve, each spoiling once, each
#: update and a single run and a batch (the batch with each update) (CONTRIBUTING.md, "Tests");
#: all of them in the full mode.
OFF_THE_SIMPLEX_DEFAULT = {
    ("scale", False, "smooth"),
    ("negative", True, "smooth"),
    ("nan", True, "stage"),
}


@pytest.mark.parametrize(
    "how,reason,batched,update",
    [
        case(
            how,
            reason,
            batched,
            update,
            default=(how, batched, update) in OFF_THE_SIMPLEX_DEFAULT,
            id=f"{how}-{reason}-{batched}-{update}",
        )
        for how, reason in (("scale", "does not sum to 1"), ("negative", "has a negative entry"), ("nan", "is not finite"))
        for batched in (False, True)
        for update in ("smooth", "stage")
    ],
)
def test_the_first_strategy_off_the_simplex_stops_the_run_where_it_is(how, reason, batched, update):
    game = make_random_game(3, 2, 2, 3, (2, 3))
    run_index = 2 if batched else None
    spec = _hedge_with(_off_at(3, 1, 2, run_index, how))
    # The learner's third play: iteration 3 of the smooth update; the stage update restarts its
    # learners at stages of lengths 2, 3, ... (H = 2), so its third play is iteration 2 + 3 = 5.
    iteration = 3 if update == "smooth" else 5
    with pytest.raises(LearnerOutputError) as err:
        if batched:
            run_batch(game, Algorithm(spec, update), T=40, etas=[0.1, 0.2, 0.3, 0.4], chunk_size=8)
        else:
            run(game, Algorithm(spec, update), T=40, eta=0.1, chunk_size=8)
    where = f"at iteration {iteration}, player 1, step 1, state 2" + (", run 2" if batched else "")
    assert f"learner 'mine': play returned a strategy that {reason} {where};" in str(err.value)


def test_a_violation_in_a_later_chunk_is_found_there():
    game = make_random_game(4, 2, 2, 2, (2, 3))
    spec = _hedge_with(_off_at(37, 0, 1, None, "scale"))
    with pytest.raises(LearnerOutputError, match="at iteration 37, player 1, step 0, state 1;"):
        run(game, Algorithm(spec, "smooth"), T=100, eta=0.1, chunk_size=16)


def test_strategies_within_the_tolerance_are_accepted():
    tol = STRATEGY_TOLERANCE["float64"]

    def nudge(x, state, count, axis):
        return x * (1 + tol / 10), state  # sums to 1 + 1e-10

    game = make_random_game(5, 2, 2, 2, (2, 2))
    nudged = run(game, Algorithm(_hedge_with(nudge), "smooth"), T=30, eta=0.1)
    plain = run(game, Algorithm(_hedge_with(), "smooth"), T=30, eta=0.1)
    np.testing.assert_allclose(nudged.value, plain.value, rtol=0, atol=1e-8)


# Each example compiles a loop of its own (about a second): 1 by default (the parametrised test
# above finds each spoiling and each update), 60 in the full mode.
@settings(max_examples=examples(1, 60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["scale", "negative", "nan"]),
    st.integers(1, 12),
    st.integers(0, 1),
    st.integers(0, 1),
    st.sampled_from(["smooth", "stage"]),
)
def test_any_bad_strategy_is_refused(how, count_at, h, s, update):
    # Every spoiled play is found (where in the run depends on the update's restarts).
    game = make_random_game(6, 2, 2, 2, (2, 3))
    with pytest.raises(LearnerOutputError, match=f"player 1, step {h}, state {s};"):
        run(game, Algorithm(_hedge_with(_off_at(count_at, h, s, None, how)), update), T=60, eta=0.1)


BAD_FUNCTIONS = {
    "no action axis": (
        dict(play_hook=lambda x, st, c, axis: (jnp.sum(x, axis), st)),
        "play returned as its strategy a float64 array of shape [2, 2]; expected a float64 array of shape [2, 2, 2]",
    ),
    "integers": (dict(play_hook=lambda x, st, c, axis: (x.astype(jnp.int32), st)), "play returned as its strategy a int32 array"),
    "not a pair": (dict(play_hook=lambda x, st, c, axis: x), "play must return a pair (strategy, state)"),
    "play changes the state": (dict(play_hook=lambda x, st, c, axis: (x, (st, 1.0))), "play returned a state"),
    "observe changes a dtype": (dict(observe_hook=lambda st: (st[0], st[1].astype(jnp.float32))), "observe returned a state"),
    "init raises": (
        dict(init_hook=lambda st: 1 / 0),
        "init raised ZeroDivisionError: division by zero (test_learner_guard.py, line",
    ),
    "play raises": (dict(play_hook=lambda x, st, c, axis: {}["key"]), "play raised KeyError: 'key' (test_learner_guard.py, line"),
}


@pytest.mark.parametrize("case", list(BAD_FUNCTIONS))
def test_a_learner_that_breaks_the_protocol_is_named(case):
    hooks, message = BAD_FUNCTIONS[case]
    game = make_random_game(7, 2, 2, 2, (2, 2))
    with pytest.raises(LearnerError) as err:
        run(game, Algorithm(_hedge_with(**hooks), "smooth"), T=5, eta=0.1)
    assert isinstance(err.value, MarkovGamesError) and isinstance(err.value, ValueError)
    assert str(err.value).startswith("learner 'mine': ") and message in str(err.value)


def test_a_build_that_raises_is_the_users_error():
    spec = LearnerSpec("broken", lambda axis: [][0])
    with pytest.raises(LearnerError, match=r"learner 'broken': build\(axis\) raised IndexError: list index out of range"):
        run(make_random_game(8, 2, 1, 1, (2, 2)), Algorithm(spec, "stage"), T=5, eta=0.1)


USER_FILE = """
import jax.numpy as jnp
from markovgames.learners import HEDGE, Learner, LearnerSpec

def build(axis):
    base = HEDGE.build(axis)

    def play(state, prediction, eta, decay):
        x, state = base.play(state, prediction, eta, decay)
        return {play}, state

    return Learner(base.init, play, base.observe)

LEARNER = LearnerSpec("mine", build)
"""


@pytest.mark.parametrize(
    "play,message",
    [
        ("x * 0.7", "learner 'mine': play returned a strategy that does not sum to 1 at iteration 1, player 0, step 0, state 0;"),
        ("x / (1.0 - 1.0)", "learner 'mine': play returned a strategy that is not finite at iteration 1"),
        ("x[..., 0]", "learner 'mine': play returned as its strategy a float64 array of shape [2, 2]"),
        ("undefined_name", "learner 'mine': play raised NameError: name 'undefined_name' is not defined (mine.py, line 10)"),
    ],
)
def test_the_command_line_exits_2_and_keeps_nothing(tmp_path, monkeypatch, capsys, play, message):
    (tmp_path / "mine.py").write_text(USER_FILE.format(play=play))
    args = ["run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "50", "--out", "out", "--quiet"]
    proc = cli_in_process(args, tmp_path, monkeypatch, capsys)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert "please report" not in proc.stderr
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.partial*"))


def test_a_file_that_exits_at_import_is_an_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "mine.py").write_text("raise SystemExit(3)\n")
    proc = cli_in_process(
        ["run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert proc.returncode == 2 and "loading" in proc.stderr and "SystemExit: 3" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


#: A user's learner file whose FUNCTION raises RAISE (Hedge otherwise; ``propose`` and
#: ``init_at`` are Hedge's own where they are the ones that raise).
EXITING_FILE = """
import sys
import jax.numpy as jnp
from markovgames.learners import HEDGE, Learner, LearnerSpec

class Stop(BaseException):
    pass

def build(axis):
    if "{function}" == "build":
        {statement}
    base = HEDGE.build(axis)

    def init(shape, dtype=jnp.float64):
        if "{function}" == "init":
            {statement}
        return base.init(shape, dtype)

    def play(state, prediction, eta, decay):
        if "{function}" == "play":
            {statement}
        return base.play(state, prediction, eta, decay)

    def observe(state, utility, decay):
        if "{function}" == "observe":
            {statement}
        return base.observe(state, utility, decay)

    def init_at(strategy, dtype):
        {statement}

    return Learner(init, play, observe, init_at=init_at if "{function}" == "init_at" else None)

LEARNER = LearnerSpec("mine", build)
"""

EXITS = {
    "sys.exit(0)": "SystemExit: 0",
    "sys.exit()": "SystemExit",
    "sys.exit('bye')": "SystemExit: bye",
    "raise GeneratorExit": "GeneratorExit",
    "raise Stop('odd')": "Stop: odd",
}


@pytest.mark.parametrize("statement", list(EXITS), ids=list(EXITS))
@pytest.mark.parametrize("function", ["build", "init", "play", "observe"])
def test_an_exit_in_a_users_learner_is_the_users_error(tmp_path, function, statement):
    """``sys.exit()`` (or any BaseException but an interruption) in a user's learner is a
    LearnerError naming the learner, the function and the file and line, in the library."""
    from markovgames.dynamics import get_algorithm

    (tmp_path / "mine.py").write_text(EXITING_FILE.format(function=function, statement=statement))
    algorithm = get_algorithm(f"{tmp_path / 'mine.py'}:LEARNER+smooth")
    with pytest.raises(LearnerError) as err:
        run(make_random_game(7, 2, 2, 2, (2, 2)), algorithm, T=5, eta=0.1)
    text = str(err.value)
    assert f"learner 'mine': {function}" in text and f"raised {EXITS[statement]}" in text and "(mine.py, line " in text, text


def test_an_exit_in_init_at_is_the_users_error(tmp_path):
    from markovgames.dynamics import get_algorithm

    (tmp_path / "mine.py").write_text(EXITING_FILE.format(function="init_at", statement="sys.exit(4)"))
    algorithm = get_algorithm(f"{tmp_path / 'mine.py'}:LEARNER+smooth")
    start = [np.full((2, 2, 2), 0.5), np.full((2, 2, 2), 0.5)]
    with pytest.raises(LearnerError, match=r"learner 'mine': init_at raised SystemExit: 4 \(mine.py, line \d+\)"):
        run(make_random_game(7, 2, 2, 2, (2, 2)), algorithm, T=5, eta=0.1, initial_strategy=start)


def test_an_interruption_in_a_users_learner_stays_an_interruption():
    """Ctrl-C while a user's function runs is an interruption, not the user's error."""

    def play(state, prediction, eta, decay):
        raise KeyboardInterrupt

    base = HEDGE.build(-1)
    spec = LearnerSpec("mine", lambda axis: Learner(base.init, play, base.observe))
    with pytest.raises(KeyboardInterrupt):
        run(make_random_game(7, 2, 1, 1, (2, 2)), Algorithm(spec, "smooth"), T=5, eta=0.1)


@pytest.mark.parametrize("command", ["run", "vlearn"])
@pytest.mark.parametrize("function", ["play", "observe"])
def test_the_command_line_answers_an_exit_in_a_learner_with_one_line(tmp_path, monkeypatch, capsys, command, function):
    """``run`` and ``vlearn``: exit 2 (not the user's exit code), one line naming the learner,
    function, file and line, nothing written."""
    (tmp_path / "mine.py").write_text(EXITING_FILE.format(function=function, statement="sys.exit(0)"))
    if command == "run":
        args = ["run", "--game", "paper", "--algorithm", "mine.py:LEARNER+smooth", "-T", "10", "--out", "out", "--quiet"]
    else:
        args = ["vlearn", "paper", "--algorithm", "mine.py:LEARNER+smooth", "--episodes", "10", "--out", "out", "--quiet"]
    proc = cli_in_process(args, tmp_path, monkeypatch, capsys)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"learner 'mine': {function} raised SystemExit: 0 (mine.py, line " in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.py"]


def test_every_built_in_learner_is_trusted_and_none_is_wrapped():
    """The built-in learners' functions are not wrapped by the guard (their compiled loops are
    those of unguarded code); a user's are."""
    from markovgames.learners._learner import runs_user_code

    for spec in BUILTIN_LEARNERS.values():
        assert not runs_user_code(spec), spec.name
        built = spec.learner()
        assert built.play is spec.build(-1).play or built.play.__qualname__ == spec.build(-1).play.__qualname__
    mine = _hedge_with()
    assert runs_user_code(mine) and runs_user_code(swap_regret(mine))
    assert mine.learner().play.__wrapped__ is not None


#: Each case compiles a loop of its own: by default each spoiling once and each update once (the
#: stage-based update with NaN), all four in the full mode.
@pytest.mark.parametrize(
    ("scale", "reason", "update"),
    [
        case(scale, reason, update, default=(update == "smooth") == (reason != "is not finite"), id=f"{scale}-{reason}-{update}")
        for scale, reason in ((0.7, "does not sum to 1"), (np.nan, "is not finite"))
        for update in ("smooth", "stage")
    ],
)
def test_a_proposal_off_the_simplex_stops_the_run_naming_propose(scale, reason, update):
    """A two-query learner's ``propose`` must return probability vectors too: the first proposal
    off the simplex stops the run naming the function, iteration, player, step and state."""
    from markovgames.learners import EXTRAGRADIENT

    def build(axis):
        base = EXTRAGRADIENT.build(axis)

        def propose(state, eta, decay):
            x = base.propose(state, eta, decay)
            return x * jnp.where(x.size > 0, scale, 1.0)

        return base._replace(propose=propose)

    spec = LearnerSpec("mine", build)
    with pytest.raises(LearnerOutputError) as err:
        run(make_random_game(7, 2, 2, 2, (2, 2)), Algorithm(spec, update), T=5, eta=0.1)
    assert str(err.value).startswith(
        f"learner 'mine': propose returned a strategy that {reason} at iteration 1, player 0, step 0, state 0"
    )


def test_an_entry_point_that_exits_while_it_loads_is_listed_not_obeyed(monkeypatch):
    """An installed package whose entry point calls ``sys.exit()`` when it is loaded breaks only
    itself: it is listed among the registry's errors, and the process goes on."""
    import importlib.metadata
    import types

    from markovgames.dynamics import _algorithms

    class Exiting:
        name, value, dist = "quitter", "quitter.plugin:ALGORITHM", types.SimpleNamespace(name="quitter")

        def load(self):
            raise SystemExit(4)

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [Exiting()])
    try:
        registry = _algorithms.registered(refresh=True)
        assert registry.errors == (("quitter", "quitter", "failed to load quitter.plugin:ALGORITHM: SystemExit: 4"),)
    finally:
        monkeypatch.undo()
        _algorithms.registered(refresh=True)
