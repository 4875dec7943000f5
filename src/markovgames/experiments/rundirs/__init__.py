"""Run directories: what ``markovgames run`` and ``markovgames vlearn`` write, and reading them back.

A run directory holds ``metrics.json`` (the configuration, the versions, per checkpoint the value
and the certified and exact gaps), ``curve.npz`` (every prefix's value and certified bounds), the
game, and optionally the trajectory and the saved state of an interrupted run. Writing goes
through a staging directory and a lock (one writer, never a half-written directory); reading
checks every file's size, hash and fields before it is used, and never imports or runs anything
the files name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._directory import (
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
    from ._exact import (
        exact_checkpoint_gaps,
    )

#: The module of each public name, imported on first use.
_MODULE_OF = {
    "exact_checkpoint_gaps": "._exact",
    "CONFIG_FILE": "._directory",
    "MARKER_FILE": "._directory",
    "MAX_CHECKPOINTS": "._directory",
    "STATE_FILE": "._directory",
    "RunDirectoryError": "._directory",
    "StoredRun": "._directory",
    "TrajectoryFile": "._directory",
    "check_output_directory_state": "._directory",
    "checkpoint_records": "._directory",
    "default_checkpoints": "._directory",
    "encloses_working_directory": "._directory",
    "finalize_output_directory": "._directory",
    "load_run_directory": "._directory",
    "parse_checkpoints": "._directory",
    "policy_row_tolerance": "._directory",
    "prepare_output_directory": "._directory",
    "staging_directory": "._directory",
    "versions": "._directory",
    "write_marker": "._directory",
    "write_run_directory": "._directory",
}

__all__ = [
    "exact_checkpoint_gaps",
    "CONFIG_FILE",
    "MARKER_FILE",
    "MAX_CHECKPOINTS",
    "STATE_FILE",
    "RunDirectoryError",
    "StoredRun",
    "TrajectoryFile",
    "check_output_directory_state",
    "checkpoint_records",
    "default_checkpoints",
    "encloses_working_directory",
    "finalize_output_directory",
    "load_run_directory",
    "parse_checkpoints",
    "policy_row_tolerance",
    "prepare_output_directory",
    "staging_directory",
    "versions",
    "write_marker",
    "write_run_directory",
]

__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF)
