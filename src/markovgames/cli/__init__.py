"""The ``markovgames`` command-line interface."""

from ._main import build_parser, console_main, main

__all__ = ["main", "console_main", "build_parser"]
