"""The values of a sweep configuration's keys, checked and made canonical (pydantic validators'
helpers: each raises ``ValueError`` with a message that reads after the key's name)."""

from __future__ import annotations

import math
from typing import Any

from ..._papers import parse_theory
from ..._suggest import did_you_mean
from ...dynamics import DEFAULT_IX, ORDERS, get_step_schedule, max_learning_rate
from ...dynamics._feedback import FEEDBACK_FORMS, MAX_SAMPLES, parse_feedback
from ...dynamics._interplay import bounded_schedule
from ...dynamics._vlearning import parse_bandit
from ...games import DiscountedMarkovGame, MarkovGame

#: The feedback models a sweep runs: those of ``run_batch``, and bandit feedback (``bandit:M``).
SWEEP_FEEDBACK_FORMS = (*FEEDBACK_FORMS, "bandit:M")


def _show(value: Any, limit: int = 40) -> str:
    """``repr(value)``, shortened: a message stays one readable line whatever the input."""
    text = repr(value)
    if len(text) > limit:
        text = f"{text[: limit - 10]}... ({len(text)} characters)"
    return text


def _positive_int(value: Any, where: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}{': ' if where else ''}expected a positive integer, got {_show(value)}")
    return value


def _strict_bool(value: Any) -> bool:
    """TOML's ``true``/``false`` only (pydantic would also take 1, "yes", ...)."""
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {_show(value)}")
    return value


def _positive_finite(value: Any) -> bool:
    """A number (not a boolean) > 0 that is a finite float64: TOML integers are unbounded, and
    ``math.isfinite(10**400)`` raises OverflowError, which pydantic would not report."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        as_float = float(value)
    except OverflowError:
        return False
    return math.isfinite(as_float) and as_float > 0


def _bool_list(v: Any) -> Any:
    if v is None:
        return v
    items = v if isinstance(v, list) else [v]
    if not items:
        raise ValueError("expected true, false or a non-empty list of them")
    for k, b in enumerate(items):
        if not isinstance(b, bool):
            raise ValueError(f"{f'[{k}]: ' if isinstance(v, list) else ''}expected true or false, got {_show(b)}")
    if len(set(items)) != len(items):
        raise ValueError(f"repeated value in {items!r}")
    return items


def _distinct_names(v: Any, what: str, check) -> list[str]:
    """A name or a non-empty list of distinct names, each checked (and made canonical) by ``check``."""
    items = v if isinstance(v, list) else [v]
    if not items:
        raise ValueError(f"expected {what} or a non-empty list of them")
    out = []
    for k, name in enumerate(items):
        where = f"[{k}]: " if isinstance(v, list) else ""
        if not isinstance(name, str):
            raise ValueError(f"{where}expected {what}, got {_show(name)}")
        try:
            out.append(check(name))
        except ValueError as err:
            raise ValueError(f"{where}{err}") from None
    if len(set(out)) != len(out):
        raise ValueError(f"repeated value in {items!r}")
    return out


def _order(name: str) -> str:
    if name not in ORDERS:
        raise ValueError(f"unknown order {_show(name)}{did_you_mean(name, ORDERS)}; choose one of: {', '.join(ORDERS)}")
    return name


def _schedule(name: str) -> str:
    """A built-in schedule by its canonical name (``power:0.50`` is ``power:0.5``); a reference to
    a user's file is resolved when the sweep is planned (relative to the configuration's directory)."""
    if ":" in name and not name.startswith("power:"):
        return name
    return get_step_schedule(name).name  # an unknown name is an error listing the choices


def _feedback(name: str) -> str:
    """A feedback model by its canonical name (``sampled:08`` is ``sampled:8``, ``bandit:02`` is
    ``bandit:2``): those of ``run_batch`` and bandit feedback, which a sweep runs through
    ``run_vlearning_batch``."""
    kind, sep, count = name.partition(":")
    if kind == "bandit":
        if not sep or not count:
            raise ValueError(f"feedback model {_show(name)}: give the episodes per round, as 'bandit:1' (V-learning's)")
        if not count.isdigit() or not 1 <= int(count) <= MAX_SAMPLES:
            raise ValueError(f"feedback model {_show(name)}: the episodes per round must be an integer from 1 to {MAX_SAMPLES}")
        return f"bandit:{parse_bandit(name)}"
    if kind not in ("full", "sampled"):
        raise ValueError(f"unknown feedback model {_show(name)}; choose one of: {', '.join(SWEEP_FEEDBACK_FORMS)}")
    return parse_feedback(name).name  # a wrong count is an error that says what to write


def is_bandit(feedback: str) -> bool:
    """Whether a feedback model (a canonical name) is bandit feedback, ``bandit:M``."""
    return feedback.startswith("bandit:")


def draws_anything(feedback: str) -> bool:
    """Whether a feedback model (a canonical name) draws random numbers: ``sampled:K`` and
    ``bandit:M``, not ``full`` or ``sampled:exact``."""
    return (feedback.startswith("sampled:") and feedback != "sampled:exact") or is_bandit(feedback)


def episodes_per_round(feedback: str) -> int:
    """``M`` of ``bandit:M`` (1 for the other models: a round is an iteration)."""
    return int(feedback.partition(":")[2]) if is_bandit(feedback) else 1


def _feedback_list(v: Any) -> list[str]:
    return _distinct_names(v, f"a feedback model ({', '.join(SWEEP_FEEDBACK_FORMS)})", _feedback)


def _non_negative_number(v: Any) -> float | None:
    """``None``, or a number >= 0 that is a finite float64 (a bandit run's ``bonus`` or ``ix``)."""
    if v is None:
        return None
    if v == 0 and not isinstance(v, bool) and isinstance(v, (int, float)):
        return 0.0
    if not _positive_finite(v):
        raise ValueError(f"expected a finite number >= 0, got {_show(v)}")
    return float(v)


def _ix_setting(v: Any) -> float | None:
    """A composition's ``ix``: ``None``, or ``"decaying"`` (the default, read as ``None``: not part
    of a run's id), or a constant number >= 0 (`_non_negative_number`)."""
    if isinstance(v, str) and v == DEFAULT_IX:
        return None
    try:
        return _non_negative_number(v)
    except ValueError:
        raise ValueError(f"expected {DEFAULT_IX!r} or a finite number >= 0, got {_show(v)}") from None


def _order_list(v: Any) -> list[str]:
    return _distinct_names(v, "an update order (simultaneous, alternating)", _order)


def _schedule_list(v: Any) -> list[str]:
    return _distinct_names(v, "a step-size schedule (constant, sqrt, power:P or path.py:NAME)", _schedule)


def _eta_list(v: Any) -> list[float | str]:
    items = v if isinstance(v, list) else [v]
    if not items:
        raise ValueError("expected a positive number, 'theory', or a non-empty list of them")
    out: list[float | str] = []
    for k, e in enumerate(items):
        if isinstance(e, str) and (e == "theory" or e.startswith("theory:")):
            try:
                parse_theory(e)
            except ValueError as err:
                where = f"[{k}]: " if isinstance(v, list) else ""
                raise ValueError(f"{where}{err}") from None
            out.append(e)
            continue
        if not _positive_finite(e):
            where = f"[{k}]: " if isinstance(v, list) else ""
            raise ValueError(f"{where}a learning rate is a positive number or 'theory', got {_show(e)}")
        out.append(float(e))
    if len(set(out)) != len(out):
        raise ValueError(f"repeated learning rate in {items!r}")
    return out


#: A schedule's factors' range over ``t = 1..T+1``, by its identity (its file's content for a
#: user's) and ``T``: computed once however many games and rates a sweep pairs it with.
_FACTOR_RANGES: dict[tuple[str, int], tuple[float, int, float, int]] = {}


def schedule_rates_fault(schedule, scale, eta, game, game_index: int, config) -> str | None:
    """Why a schedule's rates ``eta f(t)`` (``scale``: ``eta`` resolved) leave the limits of a
    constant rate at some ``t`` of the configuration's runs on ``game`` (``games[game_index]``), or
    ``None`` (`markovgames.dynamics._interplay.bounded_schedule`): checked when a sweep is planned, so that
    a bad schedule is the configuration's error, not every batch's."""
    key = (schedule.identity, int(config.T))
    try:
        if key not in _FACTOR_RANGES:
            _FACTOR_RANGES[key] = schedule.factor_range(config.T + 1)
        limit = max_learning_rate(config.T, utility_scale(game), config.dtype)
        bounded_schedule(schedule, (scale,), limit, config.dtype, config.T + 1, _FACTOR_RANGES[key])
    except ValueError as err:
        return f"{err} (with eta {eta} on games[{game_index}])"
    return None


def utility_scale(game: MarkovGame | DiscountedMarkovGame) -> float:
    """The bound on a run's utilities: ``H``, a discounted game's ``1/(1-gamma)`` (its returns' bound)."""
    return game.effective_horizon if isinstance(game, DiscountedMarkovGame) else float(game.horizon)
