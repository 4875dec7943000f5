"""Experiments: the reproduction of the paper's Section 5, run directories, sweeps and their results,
and figures, in three rooms that import one way:

* `rundirs`: what ``markovgames run`` and ``vlearn`` write, and reading it back;
* `sweeps`: grids of runs, batched, resumed, consolidated into ``results.parquet``, and their
  analysis (``load_results``, summaries, slopes); they use run directories' pieces;
* `figures`: convergence curves of runs and sweeps; they read both.

The reproduction (``reproduce``) sits on all three. Each name below is imported from its module
on first use, so that a command that needs only run directories (``markovgames run``,
``evaluate``) does not load the sweeps' configuration models (pydantic) and tables: about 0.1 s of
every such command's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._grid import (
        log_grid,
    )
    from ._reproduce import (
        PAPER_ALGORITHMS,
        Reproduction,
        reproduce,
        theorem_bounds,
    )
    from .figures import (
        ACROSS_PARAMETERS,
        Curve,
        gap_times_T_across,
        plot_gap_curves,
        plot_sweep,
        slope_distributions,
    )
    from .rundirs import (
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
        exact_checkpoint_gaps,
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
    from .sweeps import (
        ResultsError,
        SummaryRow,
        SweepConfig,
        SweepConfigError,
        SweepError,
        SweepPlan,
        SweepReport,
        consolidate_results,
        fit_loglog_slope,
        game_content_hash,
        load_results,
        load_sweep_config,
        parse_sweep_config,
        plan_sweep,
        results_provenance,
        run_slope,
        run_sweep,
        summarize_results,
        summary_markdown,
    )

#: The module of each public name (a room's own facade for the rooms' names).
_MODULE_OF = {
    "PAPER_ALGORITHMS": "._reproduce",
    "Reproduction": "._reproduce",
    "reproduce": "._reproduce",
    "theorem_bounds": "._reproduce",
    "log_grid": "._grid",
    "exact_checkpoint_gaps": ".rundirs",
    "CONFIG_FILE": ".rundirs",
    "MARKER_FILE": ".rundirs",
    "MAX_CHECKPOINTS": ".rundirs",
    "STATE_FILE": ".rundirs",
    "RunDirectoryError": ".rundirs",
    "StoredRun": ".rundirs",
    "TrajectoryFile": ".rundirs",
    "check_output_directory_state": ".rundirs",
    "checkpoint_records": ".rundirs",
    "default_checkpoints": ".rundirs",
    "encloses_working_directory": ".rundirs",
    "finalize_output_directory": ".rundirs",
    "load_run_directory": ".rundirs",
    "parse_checkpoints": ".rundirs",
    "policy_row_tolerance": ".rundirs",
    "prepare_output_directory": ".rundirs",
    "staging_directory": ".rundirs",
    "versions": ".rundirs",
    "write_marker": ".rundirs",
    "write_run_directory": ".rundirs",
    "fit_loglog_slope": ".sweeps",
    "ResultsError": ".sweeps",
    "SummaryRow": ".sweeps",
    "load_results": ".sweeps",
    "results_provenance": ".sweeps",
    "run_slope": ".sweeps",
    "summarize_results": ".sweeps",
    "summary_markdown": ".sweeps",
    "SweepError": ".sweeps",
    "SweepPlan": ".sweeps",
    "SweepReport": ".sweeps",
    "consolidate_results": ".sweeps",
    "game_content_hash": ".sweeps",
    "plan_sweep": ".sweeps",
    "run_sweep": ".sweeps",
    "SweepConfig": ".sweeps",
    "SweepConfigError": ".sweeps",
    "load_sweep_config": ".sweeps",
    "parse_sweep_config": ".sweeps",
    "Curve": ".figures",
    "plot_gap_curves": ".figures",
    "ACROSS_PARAMETERS": ".figures",
    "gap_times_T_across": ".figures",
    "plot_sweep": ".figures",
    "slope_distributions": ".figures",
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

__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF)
