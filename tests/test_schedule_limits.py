"""A step-size schedule's rates ``eta f(t)`` are held to the limits of a constant ``--eta`` at every
``t``, its function gets a read-only copy of the iterations, and what it raises is the user's.

The property tests generate schedules (piecewise constant factors over the iterations, of any
magnitude, NaN and infinities included, and rates of any magnitude) and check the library's
verdict against a plain loop over ``t`` written from the definition: a run of ``T`` iterations on an
``H``-step game in ``dtype`` accepts ``eta_i f(t)`` for ``t = 1..T+1`` exactly when every factor
is a positive finite number, ``max_i eta_i f(t) <= max_learning_rate(T, H, dtype)`` and
``min_i eta_i f(t)`` is not 0 in ``dtype``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from markovgames.dynamics import StepSchedule, max_learning_rate, run
from markovgames.dynamics._interplay import bounded_schedule
from test_interplay import zero_sum

#: Factors of every magnitude, and the values a careless function returns.
FACTORS = st.one_of(
    st.floats(min_value=1e-320, max_value=1e308, allow_nan=False, allow_infinity=False).filter(lambda f: f > 0),
    st.sampled_from([float("nan"), float("inf"), 0.0, -1.0, 5e-324, 1.7e308, 1e15, 1e16]),
)
RATES = st.floats(min_value=1e-300, max_value=1e20, allow_nan=False, allow_infinity=False).filter(lambda f: f > 0)


def piecewise(breaks: list[int], values: list[float]):
    """``f(t) = values[k]`` for ``breaks[k-1] < t <= breaks[k]`` (the last value beyond)."""
    edges = np.asarray(sorted(breaks), dtype=np.float64)

    def f(t: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)[np.searchsorted(edges, t, side="left").clip(0, len(values) - 1)]

    return f


def literal_verdict(f, rates: list[float], T: int, H: int, dtype: str) -> bool:
    """Whether every rate of the run is within the limits, t by t, from the definition."""
    limit = 8.0 / float(np.finfo(dtype).eps) / (T + H)
    assert math.isclose(limit, max_learning_rate(T, H, dtype), rel_tol=1e-15)
    for t in range(1, T + 2):
        factor = float(f(np.array([float(t)]))[0])
        if not (math.isfinite(factor) and factor > 0):
            return False
        if any(not (r * factor <= limit) for r in rates):
            return False
        if any(np.asarray(r * factor, dtype=dtype) == 0 for r in rates):
            return False
    return True


@settings(max_examples=examples(60, 600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    T=st.integers(1, 300),
    H=st.integers(1, 6),
    dtype=st.sampled_from(["float64", "float32"]),
    breaks=st.lists(st.integers(1, 320), min_size=0, max_size=4),
    values=st.lists(FACTORS, min_size=1, max_size=5),
    rates=st.lists(RATES, min_size=1, max_size=3),
)
def test_a_schedule_is_accepted_exactly_when_every_rate_is_within_the_limits(T, H, dtype, breaks, values, rates):
    f = piecewise(breaks, values)
    schedule = StepSchedule("mine", f, source="mine.py:f")
    expected = literal_verdict(f, rates, T, H, dtype)
    try:
        bounded = bounded_schedule(schedule, (tuple(rates),), max_learning_rate(T, H, dtype), dtype, T + 1)
    except ValueError as err:
        assert not expected, f"refused a schedule within the limits: {err}"
        assert str(err).startswith("step-size schedule 'mine': ") and "at t = " in str(err)
        return
    assert expected, "accepted a schedule whose rates leave the limits"
    # The bounds travel with the schedule: every factor computed later is held to them.
    t = np.arange(1, T + 2, dtype=np.float64)
    np.testing.assert_array_equal(bounded.factors(t), f(t).astype(np.float64))


@settings(max_examples=examples(40, 400), deadline=None)
@given(
    start=st.integers(1, 10**6),
    size=st.integers(1, 300),
    breaks=st.lists(st.integers(1, 10**6), max_size=3),
    values=st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=4),
)
def test_a_schedule_gets_a_read_only_copy_and_never_the_loops_array(start, size, breaks, values):
    """Whatever the function does with its argument (it tries to zero it, then makes the copy
    writeable and zeroes it), the caller's iterations are unchanged and the factors are the
    function's of the original ``t``."""
    f = piecewise(breaks, values)
    seen: list[np.ndarray] = []

    def hostile(t: np.ndarray) -> np.ndarray:
        seen.append(t)
        assert not t.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            t *= 0
        out = f(t)
        t.flags.writeable = True  # its own copy: it may, and the caller must not see it
        t[...] = 0
        return out

    t = np.arange(start, start + size, dtype=np.float64)
    before = t.copy()
    factors = StepSchedule("hostile", hostile).factors(t)
    np.testing.assert_array_equal(t, before)
    np.testing.assert_array_equal(factors, f(before))
    assert seen and seen[0] is not t and not np.shares_memory(seen[0], t)


@pytest.mark.parametrize("update", ["smooth-uniform", "stage"])
def test_a_schedule_that_writes_into_its_argument_cannot_change_the_run(update):
    """The audit's ``t *= 0`` (caught here so the run goes on), then an in-place write on the
    copy: the run is the run of the same schedule written without them."""

    def sqrt(t):
        return 1.0 / np.sqrt(t)

    def writer(t):
        try:
            t *= 0
        except ValueError:
            pass
        out = 1.0 / np.sqrt(t)
        t.flags.writeable = True
        t[...] = 0
        return out

    game = zero_sum(46)
    plain = run(game, f"hedge+{update}", T=50, eta=0.8, step_schedule=StepSchedule("s", sqrt))
    hostile = run(game, f"hedge+{update}", T=50, eta=0.8, step_schedule=StepSchedule("s", writer))
    for a, b in zip(plain.policies, hostile.policies, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("sys.exit(0)", "factor(t) raised SystemExit: 0 (rates.py, line 6)"),
        ("sys.exit()", "factor(t) raised SystemExit (rates.py, line 6)"),
        ("raise GeneratorExit", "factor(t) raised GeneratorExit (rates.py, line 6)"),
        ("t *= 0", "factor(t) raised ValueError: output array is read-only (rates.py, line 6)"),
        ("return np.full_like(t, 2e15)", "eta f(t) at t = 1 is 0.4 x 2e+15 = 8e+14, above 7.06e+14"),
        ("return np.full_like(t, 1.7e308)", "eta f(t) at t = 1 is 0.4 x 1.7e+308 = 6.8e+307, above 7.06e+14"),
        ("return np.where(t == 51, 1e300, 1.0)", "eta f(t) at t = 51 is 0.4 x 1e+300 = 4e+299"),
        ("return np.full_like(t, 5e-324)", "eta f(t) at t = 1 is 0.4 x 4.94e-324, which is 0 in float64"),
    ],
)
def test_a_run_refuses_a_schedule_before_it_starts(tmp_path, body, message):
    """``run`` checks the rates at every ``t`` before the loop (the limit for T = 50 on a one-step
    game: 8 / eps / 51 = 7.06e14, and t runs to T + 1)."""
    from markovgames.dynamics import get_step_schedule

    (tmp_path / "rates.py").write_text(f"import sys\nimport numpy as np\n\n\ndef f(t):\n    {body}\n")
    schedule = get_step_schedule(f"{tmp_path / 'rates.py'}:f")
    with pytest.raises(ValueError, match="step-size schedule") as err:
        run(zero_sum(45), "hedge+smooth-uniform", T=50, eta=0.4, step_schedule=schedule)
    assert message in str(err.value), str(err.value)


def test_a_schedules_interruption_stays_an_interruption():
    def f(t):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        StepSchedule("f", f).factors(np.arange(1.0, 4.0))


def test_a_users_traced_twin_is_not_used(tmp_path):
    """A user's StepSchedule with its own JAX ``traced`` function: the run uses the checked NumPy
    factors (the traced one would run unchecked in the compiled loop)."""
    from markovgames.dynamics import get_step_schedule

    (tmp_path / "rates.py").write_text(
        "import numpy as np\nfrom markovgames.dynamics import StepSchedule\n\n"
        "S = StepSchedule('s', lambda t: 1.0 / np.sqrt(t), traced=lambda t: 1e300 + 0 * t)\n"
    )
    assert get_step_schedule(f"{tmp_path / 'rates.py'}:S").traced is None
