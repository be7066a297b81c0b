"""Tool I/O: '-' is stdio, outputs are written atomically, binary never goes to a terminal."""
from __future__ import annotations

import os
import sys
import tempfile

from ..errors import InputError, UsageError


def read_input(path: str) -> tuple[bytes, str]:
    """Bytes of an input file or stdin ('-'), with a name for messages."""
    if path == "-":
        if sys.stdin.isatty():
            raise UsageError("no input: give a file, or pipe IR in (e.g. pypto-trace op.py | ...)")
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        with open(path, "rb") as f:
            return f.read(), os.path.basename(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None


def atomic_write(path: str, data: bytes) -> None:
    """Write via a temporary file in the same directory, then rename over the target.

    Special files (/dev/null, a FIFO, a terminal) are written in place: renaming over them
    would replace the device with a plain file."""
    if os.path.exists(path) and not os.path.isfile(path):
        if os.path.isdir(path):
            raise UsageError(f"cannot write {path}: is a directory")
        try:
            with open(path, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        return
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".pypto-", suffix=".tmp")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
