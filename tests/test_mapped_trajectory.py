"""A trajectory file truncated under a running command is an error naming it, never SIGBUS.

A run that writes its trajectory to files returns them as memory maps; reading a map whose file
shrank kills the process with SIGBUS (exit 135, its staging directory left behind). `run --exact`
evaluates the trajectory after the loop: it must read the files with checked reads. The child
runs in a subprocess so that a SIGBUS (the failure this guards against) fails the test rather
than the test process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import os, sys
    import markovgames.dynamics as dynamics
    from markovgames.cli import main

    real_run = dynamics.run

    def run_then_truncate(*args, **kwargs):
        result = real_run(*args, **kwargs)
        path = kwargs["trajectory_dir"] / "policy_0.npy"
        os.truncate(path, os.path.getsize(path) // 2)  # another process shrinks the file
        return result

    dynamics.run = run_then_truncate  # the command imports it when it runs
    sys.exit(main(["run", "--game", "paper", "--algorithm", "smooth_ce", "-T", "4000", "--exact",
                   "--checkpoints", "4000", "--out", "o", "--quiet"]))
    """
)


def test_a_trajectory_truncated_before_the_exact_gaps_is_an_error_naming_it(tmp_path):
    env = {**os.environ, "MARKOVGAMES_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)  # not -7 (SIGBUS)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("markovgames: error: ")
    assert "policy_0.npy" in lines[0] and "bytes" in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no staging directory, no lock file
