"""Sweeps: a TOML grid of games, algorithms and settings, planned, batched, run (in this process,
in worker processes or on Ray), resumed, and consolidated into ``results.parquet``; and the
analysis of those results (``load_results``, summaries, fitted slopes).

Imports flow one way inside experiments: the sweeps read and write run directories' pieces
(markers, versions, exact gaps), never figures; figures draw what the sweeps wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._config import (
        SweepConfig,
        SweepConfigError,
        load_sweep_config,
        parse_sweep_config,
    )
    from ._summary import (
        ResultsError,
        SummaryRow,
        fit_loglog_slope,
        load_results,
        results_provenance,
        run_slope,
        summarize_results,
        summary_markdown,
    )
    from ._sweep import (
        SweepError,
        SweepPlan,
        SweepReport,
        consolidate_results,
        game_content_hash,
        plan_sweep,
        run_sweep,
    )

#: The module of each public name, imported on first use.
_MODULE_OF = {
    "fit_loglog_slope": "._summary",
    "ResultsError": "._summary",
    "SummaryRow": "._summary",
    "load_results": "._summary",
    "results_provenance": "._summary",
    "run_slope": "._summary",
    "summarize_results": "._summary",
    "summary_markdown": "._summary",
    "SweepError": "._sweep",
    "SweepPlan": "._sweep",
    "SweepReport": "._sweep",
    "consolidate_results": "._sweep",
    "game_content_hash": "._sweep",
    "plan_sweep": "._sweep",
    "run_sweep": "._sweep",
    "SweepConfig": "._config",
    "SweepConfigError": "._config",
    "load_sweep_config": "._config",
    "parse_sweep_config": "._config",
}

__all__ = [
    "fit_loglog_slope",
    "ResultsError",
    "SummaryRow",
    "load_results",
    "results_provenance",
    "run_slope",
    "summarize_results",
    "summary_markdown",
    "SweepError",
    "SweepPlan",
    "SweepReport",
    "consolidate_results",
    "game_content_hash",
    "plan_sweep",
    "run_sweep",
    "SweepConfig",
    "SweepConfigError",
    "load_sweep_config",
    "parse_sweep_config",
]

__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF)
