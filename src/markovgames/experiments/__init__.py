"""Experiments: run directories, the reproduction, sweeps, figures, and results tables.

Each name is imported from its module on first use, so that a command that needs only run
directories (``markovgames run``, ``evaluate``) does not load the sweeps' configuration models
(pydantic) and tables: about 0.1 s of every such command's start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._exact import exact_checkpoint_gaps
    from ._plots import Curve, log_grid, plot_gap_curves
    from ._reproduce import (
        PAPER_ALGORITHMS,
        Reproduction,
        reproduce,
        theorem_bounds,
    )
    from ._rundir import (
        CONFIG_FILE,
        MARKER_FILE,
        MAX_CHECKPOINTS,
        STATE_FILE,
        RunDirectoryError,
        StoredRun,
        TrajectoryFile,
        check_output_directory_state,
        checkpoint_records,
        default_checkpoints,
        encloses_working_directory,
        finalize_output_directory,
        load_run_directory,
        parse_checkpoints,
        policy_row_tolerance,
        prepare_output_directory,
        staging_directory,
        versions,
        write_marker,
        write_run_directory,
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
    from ._sweep_config import (
        SweepConfig,
        SweepConfigError,
        load_sweep_config,
        parse_sweep_config,
    )
    from ._sweep_plot import (
        ACROSS_PARAMETERS,
        gap_times_T_across,
        plot_sweep,
        slope_distributions,
    )

#: The module of each public name.
_MODULE_OF = {
    "exact_checkpoint_gaps": "_exact",
    "Curve": "_plots",
    "log_grid": "_plots",
    "plot_gap_curves": "_plots",
    "PAPER_ALGORITHMS": "_reproduce",
    "Reproduction": "_reproduce",
    "fit_loglog_slope": "_summary",
    "reproduce": "_reproduce",
    "theorem_bounds": "_reproduce",
    "CONFIG_FILE": "_rundir",
    "MARKER_FILE": "_rundir",
    "MAX_CHECKPOINTS": "_rundir",
    "STATE_FILE": "_rundir",
    "RunDirectoryError": "_rundir",
    "StoredRun": "_rundir",
    "TrajectoryFile": "_rundir",
    "check_output_directory_state": "_rundir",
    "checkpoint_records": "_rundir",
    "default_checkpoints": "_rundir",
    "encloses_working_directory": "_rundir",
    "finalize_output_directory": "_rundir",
    "load_run_directory": "_rundir",
    "parse_checkpoints": "_rundir",
    "policy_row_tolerance": "_rundir",
    "prepare_output_directory": "_rundir",
    "staging_directory": "_rundir",
    "versions": "_rundir",
    "write_marker": "_rundir",
    "write_run_directory": "_rundir",
    "ResultsError": "_summary",
    "SummaryRow": "_summary",
    "load_results": "_summary",
    "results_provenance": "_summary",
    "run_slope": "_summary",
    "summarize_results": "_summary",
    "summary_markdown": "_summary",
    "SweepError": "_sweep",
    "SweepPlan": "_sweep",
    "SweepReport": "_sweep",
    "consolidate_results": "_sweep",
    "game_content_hash": "_sweep",
    "plan_sweep": "_sweep",
    "run_sweep": "_sweep",
    "SweepConfig": "_sweep_config",
    "SweepConfigError": "_sweep_config",
    "load_sweep_config": "_sweep_config",
    "parse_sweep_config": "_sweep_config",
    "ACROSS_PARAMETERS": "_sweep_plot",
    "gap_times_T_across": "_sweep_plot",
    "plot_sweep": "_sweep_plot",
    "slope_distributions": "_sweep_plot",
}

__all__ = [
    "reproduce",
    "Reproduction",
    "PAPER_ALGORITHMS",
    "fit_loglog_slope",
    "theorem_bounds",
    "exact_checkpoint_gaps",
    "Curve",
    "log_grid",
    "plot_gap_curves",
    "RunDirectoryError",
    "StoredRun",
    "TrajectoryFile",
    "checkpoint_records",
    "default_checkpoints",
    "finalize_output_directory",
    "load_run_directory",
    "parse_checkpoints",
    "encloses_working_directory",
    "prepare_output_directory",
    "staging_directory",
    "STATE_FILE",
    "CONFIG_FILE",
    "MARKER_FILE",
    "MAX_CHECKPOINTS",
    "check_output_directory_state",
    "policy_row_tolerance",
    "versions",
    "write_marker",
    "write_run_directory",
    # sweeps
    "SweepConfig",
    "SweepConfigError",
    "load_sweep_config",
    "parse_sweep_config",
    "SweepPlan",
    "SweepReport",
    "SweepError",
    "plan_sweep",
    "run_sweep",
    "consolidate_results",
    "plot_sweep",
    "gap_times_T_across",
    "slope_distributions",
    "ACROSS_PARAMETERS",
    "run_slope",
    "ResultsError",
    "SummaryRow",
    "load_results",
    "results_provenance",
    "game_content_hash",
    "summarize_results",
    "summary_markdown",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup finds it directly
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
