"""Files on disk: reading with one-line errors, writing atomically (the ground floor's I/O).

Every file the library reads or writes goes through here, so a failure reads the same
everywhere (`x.ir: no such file`) and no output is ever left half-written.
"""
from __future__ import annotations

import os
import tempfile

from ..errors import InputError, UsageError


def read_bytes(path: str) -> bytes:
    """The bytes of a file; a missing or unreadable file is an InputError naming it."""
    try:
        with open(path, "rb") as f:
            return f.read()
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
