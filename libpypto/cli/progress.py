"""Progress of long work: a one-line spinner on stderr, on a terminal only, erased when done.

    with progress("pypto-run", "compiling") as p:     # shown once it has taken a second
        ...
        p.phase("running", RUN_AFTER)                  # shown once it has taken two

Nothing is written when stderr is not a terminal (a pipe, a file, a test), so reports and
errors read the same there. While a spinner runs, sys.stderr is a stream that erases it
before anything else is written (a warning, --print-after-all), so that text starts on a
clean line and the spinner comes back on the next tick.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

COMPILE_AFTER = 1.0      # seconds of compiling (tracing, lowering, ...) before it shows
RUN_AFTER = 2.0          # seconds of running before it shows
TICK = 0.1
FRAMES = "|/-\\"

_active: list["Progress"] = []


class Progress:
    def __init__(self, prog: str, stream):
        self.prog, self.stream = prog, stream
        self.label, self.after, self.since = "", float("inf"), time.monotonic()
        self.shown = False
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def phase(self, label: str, after: float) -> None:
        """Start a phase: shown as `prog: label | 3 s` once it has taken `after` seconds."""
        with self.lock:
            self._erase()
            self.label, self.after, self.since = label, after, time.monotonic()

    def clear(self) -> None:
        with self.lock:
            self._erase()

    def _erase(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def _spin(self) -> None:
        n = 0
        while not self.done.wait(TICK):
            with self.lock:
                took = time.monotonic() - self.since
                if not self.label or took < self.after:
                    continue
                self.stream.write(f"\r{self.prog}: {self.label} {FRAMES[n % len(FRAMES)]} "
                                  f"{took:.0f} s\x1b[K")
                self.stream.flush()
                self.shown = True
                n += 1


class _Clearing:
    """sys.stderr while a spinner runs: erases the spinner before any other write."""

    def __init__(self, p: Progress, stream):
        self._p, self._stream = p, stream

    def write(self, text: str) -> int:
        self._p.clear()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _Quiet:
    """What progress() gives when stderr is not a terminal: nothing to show."""

    def phase(self, label: str, after: float) -> None:
        pass

    def clear(self) -> None:
        pass


@contextmanager
def progress(prog: str, label: str = "", after: float = COMPILE_AFTER):
    """A Progress for `prog` on stderr, starting with phase `label` (none: quiet until the
    first phase())."""
    stream = sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        yield _Quiet()
        return
    p = Progress(prog, stream)
    if label:
        p.phase(label, after)
    _active.append(p)
    sys.stderr = _Clearing(p, stream)
    p.thread.start()
    try:
        yield p
    finally:
        p.done.set()
        p.thread.join()
        p.clear()
        sys.stderr = stream
        _active.remove(p)


def clear() -> None:
    """Erase the spinner (if one shows) before writing other text to stderr."""
    for p in _active:
        p.clear()
