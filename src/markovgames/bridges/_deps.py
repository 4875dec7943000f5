"""Lazy imports of optional third-party packages, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from .._errors import MarkovGamesError

__all__ = ["MissingOptionalDependency", "require"]


class MissingOptionalDependency(MarkovGamesError, ImportError):
    """An optional package needed by a bridge is not installed; the message names the pip extra."""


def require(module: str, *, extra: str, package: str | None = None, feature: str | None = None) -> ModuleType:
    """Import ``module`` or raise `MissingOptionalDependency` naming ``extra``.

    Parameters
    ----------
    module : str
        The module to import (e.g. ``"pyspiel"``).
    extra : str
        The ``markovgames`` extra that installs it (e.g. ``"openspiel"``).
    package : str, optional
        The PyPI distribution name, when it differs from ``module`` (e.g. ``"open-spiel"``).
    feature : str, optional
        What needs it, for the message (default ``markovgames.bridges.<extra>``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        what = feature or f"markovgames.bridges.{extra}"
        dist = package or module
        raise MissingOptionalDependency(
            f"{what} needs the optional package {dist!r} (module {module!r}), which cannot be imported "
            f'({err}). Install it with:  pip install "markovgames[{extra}]"'
        ) from err
