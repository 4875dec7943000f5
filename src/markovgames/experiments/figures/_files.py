"""The names of a sweep's figures, and the record that says which of them markovgames drew.

Names. A figure's file name says the options it was drawn with, so that a plot with other
options writes other files beside it rather than over it. The default options add nothing:

- ``_concept-ce`` / ``_concept-cce``: ``concept`` other than ``"auto"``;
- ``_window-1e3-1e5``: a slope ``window`` (``[1e3, 1e5]``), in the per-game figures, whose
  legends give the slopes over it (the slope distribution's name, ``slopes_1e3-1e5``, has it already);
- ``_decades-1e3-1e4``: the ``decades`` of the across-games figure, where they are given;
- ``_metric-external_regret`` (``swap_regret``, ``duality_gap``): a ``metric`` other than the gap;
- ``_vs-samples``: a per-game figure (or a run's) drawn against the samples drawn, not the iterations.

So ``gaps_paper.png`` (default options), ``gaps_paper_window-1e3-1e5.png`` (``--window 1e3,1e5``)
and ``gaps_paper_concept-ce_window-1e3-1e5.png`` can lie side by side.

Record. The folder's ``.markovgames-figures.json`` lists every figure markovgames wrote there:
its SHA-256, the results it was drawn from and its options. A plot replaces an existing file
of the same name only if the record lists it with those very bytes (markovgames drew it and no
one changed it since), and, without ``overwrite``, only if it was drawn from the same results
with the same options (drawing a sweep's figures again after the sweep grew refreshes them). A
file markovgames did not draw, or one changed since, is never replaced, whatever ``overwrite``
says; nor is a symbolic link, a directory or any other special file.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._atomic import atomic_write_text
from ..._files import JsonFileError, file_sha256, read_json
from ..._json import dumps
from ..._outputs import OutputPathError, check_replaceable_file

__all__ = ["FIGURE_INDEX", "FigureFiles", "FIGURE_SUFFIXES", "option_suffix", "short_number"]

#: The record of the figures markovgames drew in a folder.
FIGURE_INDEX = ".markovgames-figures.json"
#: Each figure is written in these formats.
FIGURE_SUFFIXES = (".png", ".pdf")
_FORMAT = 1
_MAX_INDEX_BYTES = 16 << 20


def short_number(value: float) -> str:
    """``1000.0`` -> ``1e3``, ``20000.0`` -> ``2e4``, ``2500.0`` -> ``2500`` (file names)."""
    exponent = int(np.floor(np.log10(value)))
    mantissa = value / 10.0**exponent
    return f"{int(mantissa)}e{exponent}" if mantissa == int(mantissa) else f"{value:g}"


def option_suffix(
    *,
    concept: str = "auto",
    window: Sequence[float] | None = None,
    decades: Sequence[int] | None = None,
    metric: str = "gap",
    x_axis: str = "iterations",
) -> str:
    """The part of a figure's file name that says its options (see the module docstring); "" for the defaults."""
    parts = []
    if x_axis != "iterations":
        parts.append(f"vs-{x_axis}")
    if metric != "gap":
        parts.append(f"metric-{metric}")
    if concept != "auto":
        parts.append(f"concept-{concept}")
    if window is not None:
        parts.append(f"window-{short_number(window[0])}-{short_number(window[1])}")
    if decades is not None:
        parts.append("decades-" + "-".join(short_number(d) for d in decades))
    return "".join(f"_{p}" for p in parts)


class FigureFiles:
    """The figures of one folder: which names may be written, and the record of those written.

    Parameters
    ----------
    folder : the figures' folder (it exists; the caller holds its lock).
    source : the results the figures are drawn from (a resolved path), as the record keeps it.
    argument : the argument that named ``folder`` (``"out"``), which messages begin with; None
        where the folder is a default one.
    overwrite : replace figures drawn from other results or with other options.
    """

    def __init__(self, folder: Path, source: str, argument: str | None, overwrite: bool) -> None:
        self.folder, self.source, self.argument, self.overwrite = Path(folder), source, argument, overwrite
        self.index = self.folder / FIGURE_INDEX
        self.entries = self._read()

    def _refuse(self, path: Path, detail: str) -> OutputPathError:
        """``FOLDER/NAME: detail``, or ``argument FOLDER: NAME detail`` where an argument named the folder."""
        if self.argument is None:
            return OutputPathError(f"{path}: {detail}")
        return OutputPathError.for_argument(self.argument, f"{path.name} {detail}", str(self.folder))

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            mode = os.lstat(self.index).st_mode
        except FileNotFoundError:
            return {}
        if not stat.S_ISREG(mode):
            raise self._refuse(
                self.index, "is not a regular file; it is where markovgames records its figures, so choose another folder"
            )
        try:
            doc = read_json(self.index, _MAX_INDEX_BYTES)
        except JsonFileError:
            return {}  # unreadable: no figure counts as markovgames', so none is replaced
        figures = doc.get("figures") if isinstance(doc, dict) and doc.get("format") == _FORMAT else None
        if not isinstance(figures, dict):
            return {}
        return {k: v for k, v in figures.items() if isinstance(k, str) and isinstance(v, dict)}

    def _save(self) -> None:
        doc = {"format": _FORMAT, "figures": dict(sorted(self.entries.items()))}
        atomic_write_text(self.index, dumps(doc, str(self.index), indent=1) + "\n")

    def check(self, stem: str, options: dict[str, Any]) -> None:
        """Refuse (`OutputPathError`, writing nothing) a figure ``stem`` whose files may not be replaced."""
        options = _as_json(options)
        for suffix in FIGURE_SUFFIXES:
            path = self.folder / (stem + suffix)
            try:
                os.lstat(path)
            except FileNotFoundError:
                continue
            check_replaceable_file(path, self.argument, True, "overwrite=True")  # links and special files
            entry = self.entries.get(path.name)
            digest = None if entry is None else entry.get("sha256", "")
            if entry is None or (digest is not None and digest != file_sha256(path)):
                raise self._refuse(
                    path,
                    "exists and markovgames did not draw it (or it changed since); markovgames never replaces "
                    "such a file, so move it away or choose another folder for the figures",
                )
            if (entry.get("results"), entry.get("options")) != (self.source, options) and not self.overwrite:
                what = "other results" if entry.get("results") != self.source else "other options"
                raise self._refuse(
                    path,
                    f"is a figure drawn from {what} ({_described(entry)}); pass overwrite=True to replace it, "
                    "or choose another folder for the figures",
                )

    def write(self, stem: str, options: dict[str, Any], draw: Callable[[Path], list[Path]]) -> list[Path]:
        """Draw the figure ``stem`` with ``draw(folder / stem)`` and record its files.

        The record lists the files before they are written (without a SHA-256), so that files
        left by an interrupted plot are still known as markovgames' own.
        """
        options = _as_json(options)
        for name in (stem + suffix for suffix in FIGURE_SUFFIXES):
            self.entries[name] = {"sha256": None, "results": self.source, "options": options}
        self._save()
        paths = draw(self.folder / stem)
        for path in paths:
            self.entries[path.name] = {"sha256": file_sha256(path), "results": self.source, "options": options}
        self._save()
        return paths


def _as_json(options: dict[str, Any]) -> Any:
    """``options`` as the record keeps them (tuples as lists, numbers as JSON writes them)."""
    return json.loads(json.dumps(options))


def _described(entry: dict[str, Any]) -> str:
    """The results and options of a recorded figure, as a message shows them."""
    recorded = entry.get("options")
    options: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    shown = [f"{k}={options[k]}" for k in ("metric", "concept", "window", "x", "decades") if options.get(k) not in (None, "auto")]
    return ", ".join([str(entry.get("results")), *shown])
