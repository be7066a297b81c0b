"""Files on disk: reading with one-line errors, writing atomically (the ground floor's I/O).

Every file the library reads or writes goes through here, so a failure reads the same
everywhere (`x.ir: no such file`) and no output is ever left half-written.

Faults while writing: the data goes to a temporary file in the target's directory, renamed
over the target only when complete, so a kill -9 at any moment leaves the old file or the
whole new one (a SIGKILL may leave the temporary file, never a damaged output). SIGINT raises
KeyboardInterrupt and, inside `cleanup_on_signals` (which atomic_write and the compile cache
use), SIGTERM raises `Terminated`: the temporary file is removed on the way out, then the
process dies of the SIGTERM as it would have. No fsync: the guarantee is against killed
processes, not against losing power.
"""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading

from ..errors import InputError, UsageError

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class Terminated(BaseException):
    """SIGTERM arrived inside cleanup_on_signals()."""


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def cleanup_on_signals():
    """Inside this block SIGTERM raises Terminated, so `finally` and `except BaseException`
    blocks remove temporary files as they do on Ctrl-C; leaving it by that exception, the
    process then dies of the SIGTERM.

    Only the outermost block in the main thread acts, and only while SIGTERM has its default
    action: a program that handles SIGTERM itself keeps its own handler."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)          # die of it, as without the guard
        raise                                         # only if the signal is blocked
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM wait until the block ends: for the few steps between making a
    temporary file and knowing its name, where an exception could not remove it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


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


def atomic_write(path: str, data: bytes, mode: int = 0o666) -> None:
    """Write via a temporary file in the same directory, then rename over the target; the
    file gets `mode` less the umask.

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
    with cleanup_on_signals():
        _write_and_rename(path, data, mode)


def _write_and_rename(path: str, data: bytes, mode: int) -> None:
    tmp = None
    try:
        with signals_held():
            try:
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                                           prefix=".pypto-", suffix=".tmp")
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode & ~_umask())
        with signals_held():
            os.replace(tmp, path)
            tmp = None
    except BaseException:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
