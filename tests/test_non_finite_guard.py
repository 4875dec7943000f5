"""A run whose values turn non-finite is refused with the first prefix at fault, never returned.

A learner written with the public API can produce anything. Its strategies are checked in the
loop (tests/test_learner_guard.py: NaN play stops the run at its first iteration); behind that
guard, the loop's final check (one sum over every prefix's metrics, then the entries) must catch
NaN for both value updates, whose per-prefix metrics come from different places (recorded per
iteration, or assembled from per-stage records). The tests of that last check take the guard off,
as for a built-in learner, whose loops carry none.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import pytest

import markovgames.dynamics._guard as guard_module
from conftest import make_paper_game
from markovgames.dynamics import Algorithm, LearnerOutputError, run
from markovgames.learners import Learner, LearnerSpec


class _Count(NamedTuple):
    t: object


def _nan_from(start: int):
    """Uniform play until iteration ``start``, NaN strategies from then on."""

    def build(axis: int) -> Learner:
        def init(shape, dtype):
            return _Count(jnp.zeros((), jnp.int32))

        def play(state, prediction, eta, decay):
            t = state.t + 1
            uniform = jnp.ones_like(prediction) / prediction.shape[axis]
            return jnp.where(t >= start, jnp.nan, uniform), _Count(t)

        def observe(state, utility, decay):
            return state

        return Learner(init, play, observe)

    return LearnerSpec(f"nan-from-{start}", build, description="plays NaN from a given iteration")


@pytest.fixture
def unguarded(monkeypatch):
    """Every learner treated as a built-in one: no check in the loop, only the final one."""
    monkeypatch.setattr(guard_module, "is_guarded", lambda spec: False)


# The learner counts its own plays: the stage update restarts it at iterations 1, 3, 6, 10, 16
# (stages of lengths 2, 3, 4, 6, 9 at H = 2), so its seventh play there is iteration 22.
@pytest.mark.parametrize("update,iteration", [("smooth", 7), ("stage", 22)])
def test_the_guard_stops_nan_play_at_its_first_iteration(update, iteration):
    with pytest.raises(LearnerOutputError, match=f"not finite at iteration {iteration}, player 0, step 0, state 0;"):
        run(make_paper_game(), Algorithm(_nan_from(7), update), T=40, eta=0.2, record_trajectory=False)


def test_nan_strategies_are_refused_naming_the_first_bad_prefix(unguarded):
    # Smooth: the output policy after T' plays pi^{T'} with positive probability, so T' = 7.
    with pytest.raises(FloatingPointError, match=r"not finite from T' = 7 on"):
        run(make_paper_game(), Algorithm(_nan_from(7), "smooth"), T=40, eta=0.2, record_trajectory=False)


def test_nan_strategies_are_refused_with_the_stage_update(unguarded):
    # Stage-based: a prefix's output reads whole stages' records, so the first bad prefix is
    # later than 7; the check must fire all the same, on the assembled curve.
    with pytest.raises(FloatingPointError, match=r"not finite from T' = (\d+) on") as info:
        run(make_paper_game(), Algorithm(_nan_from(7), "stage"), T=40, eta=0.2, record_trajectory=False)
    first = int(str(info.value).split("T' = ")[1].split()[0])
    assert 7 <= first <= 40


@pytest.mark.parametrize("update", ["smooth", "stage"])
def test_finite_play_passes_the_check(update):
    result = run(make_paper_game(), Algorithm(_nan_from(10**6), update), T=40, eta=0.2, record_trajectory=False)
    assert jnp.isfinite(result.value).all()
