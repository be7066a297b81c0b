"""The op file's lines as comments in the PTO listing and the generated code.

A document may carry the op file's lines its ops are located at (module attribute `lines`,
[file, line, text], recorded at trace time); a comment `file:line: text` goes before the first
instruction of each source line in a program (once per line and program), or `file:line`
when the text is not carried. Everything in it comes from a file, so the renderers escape it
(c_text.c_comment in C, one printable line in the listing): it can never end the comment.
"""
from __future__ import annotations


def source_map(doc) -> dict:
    """(file, line) -> text of the lines a document carries."""
    out = {}
    for entry in (doc.attrs.get("lines") or []):
        if isinstance(entry, list) and len(entry) == 3:
            out[(entry[0], entry[1])] = entry[2]
    return out


def printable(text: str) -> str:
    """One line of printable ASCII: a newline or control character becomes '?'."""
    return "".join(ch if " " <= ch <= "~" else "?" for ch in str(text))


class LineNotes:
    """Says, op by op in program order, which source lines start there (each line once)."""

    def __init__(self, src: dict):
        self.src, self.seen = src, set()

    def notes(self, ops) -> list[str]:
        """The `file:line: text` notes (not escaped) for the lines first met in ops."""
        out = []
        for op in ops:
            loc = getattr(op, "loc", None)
            if loc is None or (loc.file, loc.line) in self.seen:
                continue
            self.seen.add((loc.file, loc.line))
            text = self.src.get((loc.file, loc.line))
            out.append(f"{loc.file}:{loc.line}: {text}" if text else f"{loc.file}:{loc.line}")
        return out
