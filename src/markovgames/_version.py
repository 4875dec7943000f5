"""The installed version of markovgames, read without ``importlib.metadata`` where that is safe.

``importlib.metadata`` imports the ``email`` package and more (50-80 ms on two loaded cores),
a good part of what ``markovgames --version`` would take. What it does for an ordinary
installation, a ``markovgames-X.dist-info`` directory on ``sys.path`` (an editable install has
one too), is done here directly: the first such directory in ``sys.path`` order, its
``METADATA`` file's ``Version:`` header; for a ``markovgames.egg-info`` directory (which an
editable install leaves in ``src/``, first on ``sys.path`` where ``PYTHONPATH=src``), its
``PKG-INFO`` file's, as ``importlib.metadata`` reads it. Anything else (no such directory, an
``.egg-info`` file, a ``sys.path`` entry that is a zip archive, a file without the header) is
left to ``importlib.metadata``, so the answer is always the one it gives.
"""

from __future__ import annotations

import os
import sys

__all__ = ["installed_version"]

_NAME = "markovgames"


def installed_version() -> str:
    """``importlib.metadata.version("markovgames")``, or ``"0+unknown"`` in a source tree that was never installed."""
    found = _dist_info_version()
    if found is not None:
        return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_NAME)
    except PackageNotFoundError:
        return "0+unknown"


def _dist_info_version() -> str | None:
    for entry in sys.path:
        root = entry or "."
        if os.path.isfile(root):
            return None  # a zip archive: importlib.metadata reads those
        try:
            children = os.listdir(root)
        except OSError:
            continue
        for child in children:
            low = child.lower()
            # NAME-VERSION.dist-info; importlib.metadata compares names case-insensitively.
            if low.endswith((".dist-info", ".egg-info")) and low.rpartition(".")[0].partition("-")[0] == _NAME:
                path = os.path.join(root, child)
                if low.endswith(".egg-info"):
                    return _metadata_version(os.path.join(path, "PKG-INFO")) if os.path.isdir(path) else None
                return _metadata_version(os.path.join(path, "METADATA"))
    return None


def _metadata_version(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    break  # the end of the headers
                if line.lower().startswith("version:"):
                    return line.split(":", 1)[1].strip()
    except (OSError, UnicodeDecodeError):
        pass
    return None
