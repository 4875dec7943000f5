"""Figures: convergence curves (gap and gap times ``T`` against ``T``), a run directory's
curves, and a sweep's curves and slopes across games, drawn off-screen with matplotlib and written
atomically as PNG and PDF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._curves import (
        Curve,
        plot_gap_curves,
    )
    from ._sweep import (
        ACROSS_PARAMETERS,
        gap_times_T_across,
        plot_sweep,
        slope_distributions,
    )

#: The module of each public name, imported on first use.
_MODULE_OF = {
    "Curve": "._curves",
    "plot_gap_curves": "._curves",
    "ACROSS_PARAMETERS": "._sweep",
    "gap_times_T_across": "._sweep",
    "plot_sweep": "._sweep",
    "slope_distributions": "._sweep",
}

__all__ = [
    "Curve",
    "plot_gap_curves",
    "ACROSS_PARAMETERS",
    "gap_times_T_across",
    "plot_sweep",
    "slope_distributions",
]

__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF)
