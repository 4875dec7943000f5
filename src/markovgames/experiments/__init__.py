"""Experiments: run directories, and (later) reproduction, sweeps, plots and results tables."""

from ._rundir import (
    RunDirectoryError,
    StoredRun,
    checkpoint_records,
    default_checkpoints,
    finalize_output_directory,
    load_run_directory,
    parse_checkpoints,
    prepare_output_directory,
    versions,
    write_run_directory,
)

__all__ = [
    "RunDirectoryError",
    "StoredRun",
    "checkpoint_records",
    "default_checkpoints",
    "finalize_output_directory",
    "load_run_directory",
    "parse_checkpoints",
    "prepare_output_directory",
    "versions",
    "write_run_directory",
]
