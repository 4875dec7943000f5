"""Packages whose public names are imported from their modules on first use.

A package that re-exports names from heavy modules (JAX, pandas, pydantic, matplotlib) lists them
here instead of importing them, so that importing the package, or one light module of it, loads
nothing else: ``markovgames run`` does not pay for the sweeps' configuration models, nor
``markovgames --help`` for JAX.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, module_of: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, which imports each name of ``module_of``
    (name -> module relative to ``package``, e.g. ``"._sweep"``) from its module on first use and
    keeps it in the package's namespace, where later lookups find it without this function."""

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
