"""A reproducer for an internal error: the input and the command line, kept for a report.

An internal error is a bug in pypto, never in the user's input, so the message asks for a
report and names a folder holding what it takes to reproduce it:

    command.txt     the command line (shell-quoted)
    input-1.py ...  every input the tool read: the op file, or the IR bytes from a file or
                    stdin (stdin cannot be read twice), numbered in the order read
    traceback.txt   the Python traceback

The folder is new under $PYPTO_CACHE_DIR/crash (default ~/.cache/pypto/crash), or under the
system's temporary folder when that cannot be written; no name in it comes from the input.
"""
from __future__ import annotations

import os
import shlex
import sys
import tempfile
import traceback

_read: list[tuple[str, bytes]] = []      # (kind: "op" or "ir", bytes), in the order read


def remember(kind: str, data: bytes) -> None:
    """Keep an input the tool has read, for a reproducer if the tool fails internally."""
    _read.append((kind, data))


def forget() -> None:
    _read.clear()


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("PYPTO_CACHE_DIR") or os.path.join(base, "pypto")


def _new_folder(prog: str) -> str:
    for parent in (os.path.join(cache_dir(), "crash"), None):
        try:
            if parent is not None:
                os.makedirs(parent, exist_ok=True)
            return tempfile.mkdtemp(prefix=f"{prog}-", dir=parent)
        except OSError:
            continue
    raise OSError("no writable folder for a reproducer")


def save_reproducer(prog: str, exc: BaseException, argv: list[str] | None = None) -> str:
    """Write the reproducer of exc; the folder's path."""
    folder = _new_folder(prog)
    argv = list(sys.argv if argv is None else argv)
    with open(os.path.join(folder, "command.txt"), "w") as f:
        f.write(shlex.join([prog, *argv[1:]]) + "\n")
    for i, (kind, data) in enumerate(_read, 1):
        with open(os.path.join(folder, f"input-{i}.{'py' if kind == 'op' else 'ir'}"),
                  "wb") as f:
            f.write(data)
    with open(os.path.join(folder, "traceback.txt"), "w") as f:
        f.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return folder
