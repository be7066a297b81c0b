"""Tool I/O: '-' is stdio, outputs are written atomically, binary never goes to a terminal."""
from __future__ import annotations

import os
import sys

from ..errors import UsageError
from ..ir.files import atomic_write, read_bytes


def read_input(path: str) -> tuple[bytes, str]:
    """Bytes of an input file or stdin ('-'), with a name for messages."""
    if path == "-":
        if sys.stdin.isatty():
            raise UsageError("no input: give a file, or pipe IR in (e.g. pypto-trace op.py | ...)")
        return sys.stdin.buffer.read(), "<stdin>"
    return read_bytes(path), os.path.basename(path)


def write_output(path: str, data: bytes, binary: bool) -> None:
    """Write to a file atomically or to stdout; refuse binary IR on a terminal."""
    if path == "-":
        if binary and sys.stdout.isatty():
            raise UsageError("refusing to write binary IR to a terminal; use -S for text or "
                             "-o FILE")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    atomic_write(path, data)
