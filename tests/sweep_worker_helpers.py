"""Module-level functions for worker processes in the sweep tests (spawned workers import them)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from markovgames.experiments.sweeps._sweep import execute_batch


def die_once_then_run(task):
    """Kill this worker process the first time (marker file absent), run the batch afterwards."""
    marker = Path(os.environ["MARKOVGAMES_TEST_MARKER"])
    if not marker.exists():
        marker.write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    return execute_batch(task)
