"""Text from files and command lines, shown literally on a terminal.

A game's name, a sweep's label, a path or a value read from a file may hold anything a string
can: an escape sequence (``ESC [ 2 J`` clears the screen, others retitle the window or forge a
hyperlink), another control character, a bidirectional override that makes ``evil.txt\\u202e``
read as something else, or a newline that would cut a one-line error message in two. `printable`
replaces each of these by a visible escape (``\\x1b``, ``\\u202e``, ``\\n``), so that what is shown
is what the file holds; `markup_safe` also escapes rich's markup (``[bold]``, ``[/]``), for text
that a rich console or table interprets. Every place where such text reaches the terminal goes
through one of them, the central error printer included.
"""

from __future__ import annotations

import re

__all__ = ["printable", "markup_safe", "abbreviate_digits", "long_integer_in", "MAX_INT_DIGITS"]

#: The most digits of an integer Python converts from text (its ``int_max_str_digits``): a longer
#: one in a file or an option is refused naming where it is, never with Python's own message.
MAX_INT_DIGITS = 4300

#: A run of more digits than a message shows whole.
_LONG_DIGITS = re.compile(r"\d{41,}")
#: An integer literal (TOML's and JSON's, underscores allowed) of more than MAX_INT_DIGITS digits.
_TOO_LONG = re.compile(rf"\d(?:_?\d){{{MAX_INT_DIGITS},}}")

#: C0 controls (newline and tab included: one message is one line), DEL, C1 controls, the
#: bidirectional embeddings, overrides, isolates and marks, and the line and paragraph
#: separators (which some terminals and viewers break lines at).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


#: The escapes a reader knows best, for the commonest controls.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``str(text)`` with every control and bidirectional control character written as an escape.

    Ordinary text, of any script, is unchanged: ``printable("café")`` is ``"café"``, and
    ``printable("a\\x1b[31mb")`` is ``"a\\\\x1b[31mb"`` (the four characters ``\\x1b``).
    """
    return _UNSAFE.sub(_escape, str(text))


def markup_safe(text: object) -> str:
    """`printable` text, with rich's markup escaped as well: for a rich console, table or progress bar."""
    from rich.markup import escape

    return escape(printable(text))


def abbreviate_digits(text: str) -> str:
    """``text`` with every run of more than 40 digits shown by its first 10 and its length
    (``1234567890... (4400 digits)``): a message quotes a number, it does not print it whole."""
    return _LONG_DIGITS.sub(lambda m: f"{m.group()[:10]}... ({len(m.group())} digits)", text)


def long_integer_in(text: str) -> str | None:
    """Where ``text`` (a TOML or JSON document) has an integer of more than `MAX_INT_DIGITS`
    digits, which Python refuses to convert: ``line L, column C: an integer of N digits, more than
    the 4300 a number may have`` (with ``KEY = `` where the line assigns one), or ``None``."""
    match = _TOO_LONG.search(text)
    if match is None:
        return None
    line = text.count("\n", 0, match.start()) + 1
    start = text.rfind("\n", 0, match.start()) + 1
    column = match.start() - start + 1
    assigned = re.match(r"\s*([A-Za-z0-9_.\"' -]+?)\s*[=:]", text[start : match.start()])
    key = f"{assigned.group(1).strip().strip(chr(34) + chr(39))}: " if assigned else ""
    digits = sum(c.isdigit() for c in match.group())
    return f"line {line}, column {column}: {key}an integer of {digits} digits, more than the {MAX_INT_DIGITS} a number may have"
