"""Experiments: run directories, the reproduction, sweeps, figures, and results tables."""

from ._exact import exact_checkpoint_gaps
from ._plots import Curve, log_grid, plot_gap_curves
from ._reproduce import PAPER_ALGORITHMS, Reproduction, fit_loglog_slope, reproduce, theorem_bounds
from ._summary import ResultsError, SummaryRow, load_results, results_provenance, run_slope, summarize_results, summary_markdown
from ._sweep import SweepError, SweepPlan, SweepReport, consolidate_results, game_content_hash, plan_sweep, run_sweep
from ._sweep_config import SweepConfig, SweepConfigError, load_sweep_config, parse_sweep_config
from ._sweep_plot import ACROSS_PARAMETERS, gap_times_T_across, plot_sweep, slope_distributions
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
    "exact_checkpoint_gaps",
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
