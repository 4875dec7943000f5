"""A progress bar for long runs: rich on a terminal, silent otherwise."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from ._signals import raise_if_terminated

__all__ = ["iteration_progress"]


@contextlib.contextmanager
def iteration_progress(total: int, description: str, *, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(done)`` that moves a bar to ``done`` of ``total`` iterations.

    The bar is drawn on stderr only when it is a terminal, so logs and pipes stay clean. Drawn
    or not, ``advance`` raises a SIGTERM whose first exception was swallowed (`._signals`).
    """
    if not enabled or not sys.stderr.isatty():
        yield lambda done: raise_if_terminated()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from .._text import markup_safe

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    ) as bar:
        # The description names a game, which a file may name with markup or control characters.
        task = bar.add_task(markup_safe(description), total=total, rate="")

        def advance(done: int) -> None:
            raise_if_terminated()
            elapsed = bar.tasks[task].elapsed or 0.0
            rate = f"{done / elapsed:,.0f} it/s" if elapsed > 0 else ""
            bar.update(task, completed=done, rate=rate)

        yield advance
