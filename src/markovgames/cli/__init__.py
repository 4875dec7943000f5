"""The ``markovgames`` command-line interface."""

from ._main import build_parser, main

__all__ = ["main", "build_parser"]
