"""The commands that README.md, the pages of docs/ and the examples document, as written there.

One extraction for the tests that run them (``test_documented_commands.py``, and
``test_gallery.py`` for the studies): a command documented anywhere below is found, and tested,
without a list to keep up to date.

* every fenced ```` ```bash ```` block of README.md and of docs/ (a line that ends in ``\\`` or
  one that starts with white space continues the line before it; ``a && b`` is two commands);
* the invocations in the docstrings of ``examples/*.py`` (indented lines that start with
  ``python`` or ``markovgames``) and in the comments of ``examples/*.toml``.

Comments (``# ...``) are dropped; leading ``NAME=value`` words are the command's environment.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: Options whose value is something the command writes.
OUTPUT_OPTIONS = ("--out", "--markdown", "--figures", "--figure")

_PATH = re.compile(r"[\w.-]*/[\w./-]*|[\w.-]+\.(?:json|npz|toml|py)")
_BASH = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.S | re.M)
_PYTHON = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Command:
    """One documented command: where it is written, its environment and its words."""

    page: str  #: the file, relative to the repository ("README.md", "docs/tutorial.md", ...)
    line: int  #: the line it starts on (1-based)
    env: tuple[tuple[str, str], ...]
    argv: tuple[str, ...]
    #: The text of the output block that follows the command's bash block (``""`` if none).
    output: str = field(default="", compare=False)
    #: Its place in the bash block: the output block shows the block's first command.
    first_in_block: bool = field(default=True, compare=False)
    #: The comment after it on its line (``""`` if none).
    comment: str = field(default="", compare=False)

    @property
    def source(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def text(self) -> str:
        words = [f"{k}={shlex.quote(v)}" for k, v in self.env] + [shlex.quote(w) for w in self.argv]
        return " ".join(words)

    @property
    def id(self) -> str:
        return f"{self.source} {self.text}"

    def option(self, name: str) -> str | None:
        """The value of option ``name`` (its last one), or None."""
        values = [self.argv[k + 1] for k, word in enumerate(self.argv[:-1]) if word == name]
        return values[-1] if values else None

    @property
    def outputs(self) -> list[str]:
        """What it writes, as its options name it (``--out PATH`` and the like)."""
        return [v for v in (self.option(o) for o in OUTPUT_OPTIONS) if v is not None]

    @property
    def inputs(self) -> list[str]:
        """The paths it reads, as written: words that look like paths (``a/b``, ``x.json``,
        ``file.py:NAME``'s file), except the values of the options that name outputs."""
        paths = []
        for k, word in enumerate(self.argv[1:], start=1):
            if word.startswith("-") or self.argv[k - 1] in OUTPUT_OPTIONS or "=" in word:
                continue
            match = _PATH.fullmatch(word.split(":")[0].split("+")[0])
            if match:
                paths.append(match.group(0).rstrip("/"))
        return paths


def _commands_of_line(page: str, line: int, text: str, **extra) -> list[Command]:
    comment = re.search(r"\s#\s*(.*)$", text)  # (no documented command quotes a " #")
    if comment:
        text = text[: comment.start()]
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    out, current = [], []
    for word in [*words, "&&"]:
        if word != "&&":
            current.append(word)
            continue
        env = []
        while current and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", current[0]):
            name, _, value = current.pop(0).partition("=")
            env.append((name, value))
        if current:
            out.append(Command(page, line, tuple(env), tuple(current), **extra))
        current = []
    if out and comment:  # the comment is the last command's
        out[-1] = replace(out[-1], comment=comment.group(1).strip())
    return out


def _logical_lines(block: str) -> list[tuple[int, str]]:
    """(offset of the first line, text) of each logical line of a shell block."""
    lines: list[tuple[int, str]] = []
    continued = False
    for offset, raw in enumerate(block.splitlines()):
        if not raw.strip():
            continued = False
            continue
        if lines and (continued or raw[:1].isspace()):
            lines[-1] = (lines[-1][0], lines[-1][1] + " " + raw.strip().rstrip("\\"))
        else:
            lines.append((offset, raw.rstrip("\\")))
        continued = raw.rstrip().endswith("\\")
    return lines


def markdown_commands(page: Path) -> list[Command]:
    """The commands of ``page``'s bash blocks, each with the output block that follows its block."""
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(ROOT).as_posix()
    commands = []
    for match in _BASH.finditer(text):
        first_line = text.count("\n", 0, match.start(1)) + 1
        after = re.match(r"\s*```\n(.*?)^```", text[match.end() :], re.S | re.M)
        output = after.group(1) if after else ""
        for k, (offset, line) in enumerate(_logical_lines(match.group(1))):
            commands += _commands_of_line(name, first_line + offset, line, output=output, first_in_block=k == 0)
    return commands


def example_commands(path: Path) -> list[Command]:
    """The invocations in an example's docstring (``.py``) or comments (``.toml``)."""
    name = path.relative_to(ROOT).as_posix()
    commands = []
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix == ".py":
        end = next(k for k, line in enumerate(lines) if k > 0 and line.rstrip().endswith('"""'))
        pattern = re.compile(r"^ {4}((?:python|markovgames) .*)$")
    else:
        end = len(lines)
        pattern = re.compile(r"^#\s+((?:python|markovgames) .*)$")
    for k, line in enumerate(lines[: end + 1]):
        match = pattern.match(line)
        if match:
            commands += _commands_of_line(name, k + 1, match.group(1))
    return commands


def is_study(command: Command) -> bool:
    """``python examples/NAME.py ...``: one of the gallery's studies."""
    return (
        command.argv[:1] == ("python",)
        and len(command.argv) > 1
        and re.fullmatch(r"examples/\w+\.py", command.argv[1]) is not None
    )


def environment(extra=()) -> dict[str, str]:
    """This process's environment for a documented process, and ``extra``: this checkout's package
    first, and the suite's compiled programs (``MARKOVGAMES_CACHE_DIR`` for the command line, and
    JAX's own variables for a script, a library user, whose sweep's workers take the script's)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    cache = os.environ.get("MARKOVGAMES_CACHE_DIR", "off")
    if cache != "off":
        env.update(JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.2")
    env.update(extra)
    return env


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def documented_commands() -> list[Command]:
    """Every documented command, in the order of the pages and then the examples."""
    commands = [c for page in pages() for c in markdown_commands(page)]
    for path in sorted((ROOT / "examples").iterdir()):
        if path.suffix in (".py", ".toml"):
            commands += example_commands(path)
    return commands


def python_blocks(page: str) -> list[str]:
    """The ```` ```python ```` blocks of ``page`` (relative to the repository)."""
    return _PYTHON.findall((ROOT / page).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------
# Documented output
# ---------------------------------------------------------------------------------------
_NUMBER = re.compile(r"[-+]?(?:nan|inf|\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?)")


def _numbers(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in _NUMBER.findall(line)]


def missing_output(printed: str, documented: str, rtol: float | None = None) -> list[str]:
    """The lines of ``documented`` that no line of ``printed`` shows.

    A printed line shows a documented one if the two are the same text around their numbers
    (any numbers: a smaller run prints other ones), and, with ``rtol``, the same numbers within
    that relative tolerance too (the run the documentation shows, run again).
    """
    printed_lines = [line.strip() for line in printed.splitlines()]
    missing = []
    for line in filter(None, (line.strip() for line in documented.splitlines())):
        pattern = re.compile(_NUMBER.pattern.join(re.escape(part) for part in _NUMBER.split(line)))
        shown = [p for p in printed_lines if pattern.fullmatch(p)]
        if rtol is not None:
            shown = [p for p in shown if np.allclose(_numbers(p), _numbers(line), rtol=rtol, atol=0, equal_nan=True)]
        if not shown:
            missing.append(line)
    return missing
