"""Text for a terminal: characters that came from a file are shown, never obeyed.

A name, a path or a message read from an input can hold escape sequences (`\\x1b[2J` clears
the screen), carriage returns that overwrite what came before, or bidirectional overrides
that reorder what a person reads. Everything a tool prints for a person passes through
printable(), which writes those characters as Python escapes (`\\x1b`, `\\u202e`).
"""
from __future__ import annotations

import re

# C0 and C1 controls, DEL, bidi marks, embeddings, overrides and isolates, line and
# paragraph separators; the newline apart, so that a report can keep its lines
_OTHERS = ("\x00-\x09\x0b-\x1f\x7f-\x9f"
           "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069")
_ANY = re.compile(f"[\n{_OTHERS}]")
_BUT_NEWLINE = re.compile(f"[{_OTHERS}]")


def _escape(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(s: str, newlines: bool = False) -> str:
    """s with every control character escaped; newlines kept when newlines=True (a report
    of several lines), escaped otherwise (an error is one line)."""
    return (_BUT_NEWLINE if newlines else _ANY).sub(_escape, str(s))
