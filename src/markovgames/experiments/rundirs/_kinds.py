"""What a path given in place of a directory holds, for the messages of the commands that read one.

``evaluate`` reads a run directory, ``certify`` a directory of ``policy_i.npy`` files, ``summarize``
a sweep directory and ``plot`` either. Given something else, the message says what was given
instead, from the names of the files it holds (nothing is read or opened): a file (a sweep
configuration, by its ``.toml``, with the command that runs it), a sweep, run or V-learning run
directory or a trajectory (each with the command that reads it); and a path that does not exist
is answered with the existing one it most likely means (`markovgames._suggest.nearest_path`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..._suggest import did_you_mean_path

__all__ = ["directory_kind", "wrong_directory"]

#: What each kind of directory is, and which commands read it.
_KINDS = {
    "sweep": "a sweep directory, which 'markovgames summarize' and 'markovgames plot' read",
    "run": "a run directory, which 'markovgames evaluate' and 'markovgames plot' read",
    "vlearn": "a V-learning run directory, which 'markovgames evaluate' reads",
    "trajectory": "a trajectory (policy_i.npy files), which 'markovgames certify' reads",
}


def directory_kind(path: str | os.PathLike) -> str | None:
    """``"sweep"``, ``"run"``, ``"vlearn"``, ``"trajectory"`` or ``None``, by the names of the files
    that the directory ``path`` holds (``results.parquet``; ``metrics.json``, with ``policy.npz``
    for V-learning; ``policy_0.npy``)."""
    path = Path(path)
    if os.path.lexists(path / "results.parquet"):
        return "sweep"
    if os.path.lexists(path / "metrics.json"):
        return "vlearn" if os.path.lexists(path / "policy.npz") else "run"
    if os.path.lexists(path / "policy_0.npy"):
        return "trajectory"
    return None


def wrong_directory(path: str | os.PathLike, wanted: str) -> str:
    """The message for ``path``, given where ``wanted`` (``"a sweep directory (with results.parquet)"``)
    is expected and it is not one: what it is instead, or the nearest existing directory."""
    path = Path(path)
    if not os.path.lexists(path):
        return f"{path}: no such file or directory{did_you_mean_path(path, Path.is_dir)}; expected {wanted}"
    if not path.is_dir():
        if path.suffix == ".toml" and "sweep" in wanted:
            return (
                f"{path}: is a file (a sweep configuration?), not {wanted}; 'markovgames sweep {path} --out DIR' runs a "
                "configuration and writes the sweep directory DIR"
            )
        return f"{path}: is a file, not {wanted}"
    kind = directory_kind(path)
    if kind is not None:
        return f"{path}: is {_KINDS[kind]}, not {wanted}"
    try:
        with os.scandir(path) as entries:
            empty = next(entries, None) is None
    except OSError:
        empty = False
    return f"{path}: is {'an empty directory' if empty else 'a directory'}, not {wanted}"
