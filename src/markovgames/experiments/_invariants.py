r"""What every result markovgames writes satisfies, checked where results are read.

A results file (a sweep's ``results.parquet``, a run's ``metrics.json``) may have been edited,
forged or damaged. Its numbers are checked against what holds for every result of a game with
rewards in ``[0, 1]`` over ``H`` steps, so that an impossible number is refused naming the file,
the row and the column rather than summarised, plotted or printed:

* a value :math:`V_i` of a policy is a return over ``H`` steps: in ``[0, H]``;
* a certified bound (Algorithms 3 and 4's index-revealing bound, docs/gaps.md) is the value of a
  best response against an estimate, a return too: in ``[0, H]``, and at least the value;
* a gap (certified or exact, CE or CCE) is a best-response value less the value: in ``[0, H]``;
* the certified gap bounds the exact one (the certificate's theorem): exact ``<=`` certified, for
  each concept;
* a last iterate's (and the weighted average iterate's) Nash gap is in ``[0, H]`` and its duality
  gap, a sum over the players, in ``[0, N H]``;
* a discounted game's run (a row whose ``discount`` is set) has returns in ``[0, 1/(1-gamma)]``,
  which takes the place of ``H`` above; its value estimate :math:`V^{T'}(\rho)`, a convex
  combination of ``r + gamma P V`` with ``V^0 = 0``, is one too.

Every comparison allows a tolerance for rounding, stated here: ``H * 1e-9`` in float64 and
``H * 1e-3`` in float32 (whose runs round every iteration's sums to 7 digits), so that no result
markovgames wrote is refused. Values not recorded (``null``, NaN) are not compared.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["tolerance", "first_violation"]

#: The tolerance per step of horizon, by the run's precision.
_TOLERANCE = {"float64": 1e-9, "float32": 1e-3}

_GAPS = (
    "certified_ce_gap",
    "certified_cce_gap",
    "exact_ce_gap",
    "exact_cce_gap",
    "last_iterate_nash_gap",
    "weighted_average_nash_gap",
)


def tolerance(horizon, dtype) -> np.ndarray:
    """The rounding allowed in a comparison: ``H * 1e-9`` (float64) or ``H * 1e-3`` (float32)."""
    per_step = np.where(np.asarray(dtype) == "float32", _TOLERANCE["float32"], _TOLERANCE["float64"])
    return np.asarray(horizon, dtype=np.float64) * per_step


def _column(columns: Mapping[str, object], name: str, rows: int) -> np.ndarray | None:
    """``columns[name]`` as a float array of ``rows`` rows (lists padded with NaN), or ``None``."""
    values = columns.get(name)
    if values is None:
        return None
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    cells = list(values)  # type: ignore[call-overload]
    if all(c is None or np.isscalar(c) for c in cells):
        return np.array([np.nan if c is None else c for c in cells], dtype=np.float64)
    width = max((len(c) for c in cells if c is not None), default=0)
    out = np.full((rows, max(width, 1)), np.nan)
    for k, c in enumerate(cells):
        if c is not None:
            out[k, : len(c)] = c
    return out


def _outside(top: str, horizon: float, gamma: float | None, noun: str) -> str:
    """What is wrong with a number outside ``[0, top]`` (``top``: ``H`` or ``N H``; a discounted
    game's row, ``gamma`` set: ``1/(1-gamma)`` or ``N/(1-gamma)``, whose ``horizon`` is ``1/(1-gamma)``)."""
    if gamma is None:
        return f"is outside [0, {top}] (H = {horizon:g}): {noun}"
    bound = "1/(1-gamma)" if top == "H" else "N/(1-gamma)"
    noun = noun.replace("a return over H steps", "a discounted return")
    return f"is outside [0, {bound}] (gamma = {gamma:g}, 1/(1-gamma) = {horizon:g}): {noun}"


def first_violation(columns: Mapping[str, object], horizon, players, dtype, discounted=None) -> tuple[int, str, str] | None:
    """The first row of ``columns`` (name -> one cell per row: a number, a list of numbers per
    player, or ``None``) that breaks an invariant of the module docstring, as ``(row, column,
    what is wrong)``; ``None`` if every row holds. ``horizon``, ``players`` and ``dtype`` are one
    per row (or one for all); ``discounted``: per row the discount of a discounted game's run
    (``None`` for the others, whose ``horizon`` is ``H``; a discounted one's is ``1/(1-gamma)``)."""
    rows = max((len(v) for v in columns.values() if v is not None), default=0)  # type: ignore[arg-type]
    if rows == 0:
        return None
    H = np.broadcast_to(np.asarray(horizon, dtype=np.float64), (rows,))
    N = np.broadcast_to(np.asarray(players, dtype=np.float64), (rows,))
    tol = np.broadcast_to(tolerance(horizon, dtype), (rows,))
    found: list[tuple[int, str, str]] = []

    def check(name: str, bad: np.ndarray, values: np.ndarray, what) -> None:
        if bad.ndim > 1:
            bad = np.asarray(bad.any(axis=tuple(range(1, bad.ndim))))
        if bad.any():
            k = int(np.argmax(bad))
            cell = values[k]
            shown = cell[~np.isnan(cell)].tolist() if np.ndim(cell) else float(cell)
            found.append((k, name, f"{shown!r} {what(k)}"))

    gammas = [None] * rows if discounted is None else list(discounted)

    def within(name: str, values: np.ndarray, high: np.ndarray, noun: str, top: str) -> None:
        h, t = (high[:, None], tol[:, None]) if values.ndim > 1 else (high, tol)
        check(name, (values < -t) | (values > h + t), values, lambda k: _outside(top, float(H[k]), gammas[k], noun))

    value = _column(columns, "value", rows)
    for name, noun in (("value", "a value"), ("value_estimate", "a value estimate")):
        returns = _column(columns, name, rows)
        if returns is not None:
            within(name, returns, H, f"{noun} is a return over H steps", "H")
    for concept in ("ce", "cce"):
        bound = _column(columns, f"certified_{concept}_bound", rows)
        if bound is None:
            continue
        within(f"certified_{concept}_bound", bound, H, "a certified bound is a return over H steps", "H")
        if value is not None and value.shape == bound.shape:
            check(
                f"certified_{concept}_bound",
                bound < value - tol[:, None],
                bound,
                lambda k, c=concept: (
                    f"is below the value {value[k][~np.isnan(value[k])].tolist()!r}: a certified bound is at least the value"
                ),
            )
    for name in _GAPS:
        gap = _column(columns, name, rows)
        if gap is not None:
            within(name, gap, H, "a gap is a best-response value less the value", "H")
    for name in ("last_iterate_duality_gap", "weighted_average_duality_gap"):
        duality = _column(columns, name, rows)
        if duality is not None:
            within(name, duality, N * H, "a duality gap is a sum over the players of gaps", "N H")
    for concept in ("ce", "cce"):
        exact, certified = _column(columns, f"exact_{concept}_gap", rows), _column(columns, f"certified_{concept}_gap", rows)
        if exact is not None and certified is not None:
            check(
                f"exact_{concept}_gap",
                exact > certified + tol,
                exact,
                lambda k, c=certified: f"is above the certified gap {float(c[k])!r}: the certified gap bounds the exact one",
            )
    if not found:
        return None
    row = min(k for k, _, _ in found)
    return next(f for f in found if f[0] == row)
