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

__all__ = ["printable", "markup_safe"]

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
