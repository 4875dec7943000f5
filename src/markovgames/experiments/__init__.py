"""Experiments: run directories, and (later) reproduction, sweeps, plots and results tables."""

from ._plots import Curve, log_grid, plot_gap_curves
from ._reproduce import PAPER_ALGORITHMS, Reproduction, fit_loglog_slope, reproduce, theorem_bounds
from ._summary import ResultsError, SummaryRow, load_results, summarize_results, summary_markdown
from ._sweep import SweepError, SweepPlan, SweepReport, consolidate_results, plan_sweep, run_sweep
from ._sweep_config import SweepConfig, SweepConfigError, load_sweep_config
from ._sweep_plot import plot_sweep
from ._rundir import (
    RunDirectoryError,
    StoredRun,
    checkpoint_records,
    default_checkpoints,
    finalize_output_directory,
    load_run_directory,
    parse_checkpoints,
    encloses_working_directory,
    prepare_output_directory,
    staging_directory,
    STATE_FILE,
    CONFIG_FILE,
    versions,
    write_run_directory,
)

__all__ = [
    "reproduce",
    "Reproduction",
    "PAPER_ALGORITHMS",
    "fit_loglog_slope",
    "theorem_bounds",
    "Curve",
    "log_grid",
    "plot_gap_curves",
    "RunDirectoryError",
    "StoredRun",
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
    "versions",
    "write_run_directory",
    # sweeps
    "SweepConfig",
    "SweepConfigError",
    "load_sweep_config",
    "SweepPlan",
    "SweepReport",
    "SweepError",
    "plan_sweep",
    "run_sweep",
    "consolidate_results",
    "plot_sweep",
    "ResultsError",
    "SummaryRow",
    "load_results",
    "summarize_results",
    "summary_markdown",
]
