"""The machine's memory, and sizes in bytes as people read them (for the up-front size checks)."""

from __future__ import annotations

import os

__all__ = ["physical_memory", "format_bytes"]


def physical_memory() -> int | None:
    """Bytes of physical memory, or ``None`` where the platform does not tell."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def format_bytes(count: int | float) -> str:
    """``count`` bytes in the largest binary unit that keeps it at least 1 (``512 bytes``, ``1.5 MiB``)."""
    if count < 1024:
        return f"{int(count):,} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        count /= 1024
        if count < 1024 or unit == "PiB":
            return f"{count:,.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover
