"""The pieces of the error boundary and of terminal output: did-you-mean, control characters,
the progress spinner (terminal only, erased when done)."""
from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import time

import pytest

from libpypto.cli import progress, suggest
from libpypto.cli.text import printable

from toolrun import BIN, ROOT, env_for


# -- did you mean ---------------------------------------------------------------------------------

@pytest.mark.parametrize("message, hint", [
    ("unknown pass 'tensor2tile' (known: alloc, fuse, tensor-to-tile)", "'tensor-to-tile'"),
    ("--stop-after: unknown pass 'fus' (known: alloc, fuse)", "'fuse'"),
    ("pass 'fuse' has no option 'enabel' (options: enable, max-kernels)", "'enable'"),
    ("unknown target 'a22' (built in: a2, a3, 950, host; or a path to a .toml file)", "'a2'"),
    ("no kernel 'scal' in two.py (kernels: scale, shift)", "'scale'"),
    ("unknown backend 'nump' (known: c, numpy)", "'numpy'"),
    ("unknown table format 'gihub' (known: github, grid, plain)", "'github'"),
    ("--bind x0: the kernel has no symbol 'x0' (symbols: x_0, y_0)", "'x_0'"),
    ("unknown backend 'fortran' (known: c, numpy)", None),
    ("raises.py:9: raises raised KeyError while tracing: 'b'", None),
])
def test_did_you_mean(message, hint):
    assert suggest.suggestion(message) == (f"; did you mean {hint}?" if hint else "")


def test_did_you_mean_an_attribute():
    import libpypto
    try:
        libpypto.expp
    except AttributeError as exc:
        err = RuntimeError("wrapped")
        err.__context__ = exc
        assert suggest.suggestion("k raised AttributeError", err) == "; did you mean 'exp'?"


# -- control characters ----------------------------------------------------------------------------

@pytest.mark.parametrize("raw, shown", [
    ("plain text", "plain text"),
    ("\x1b[2J", "\\x1b[2J"), ("a\rb", "a\\x0db"), ("a\nb", "a\\x0ab"),
    ("\x07\x00\x7f", "\\x07\\x00\\x7f"),
    ("\x9b31m", "\\x9b31m"), ("\u202eevil", "\\u202eevil"), ("\u2066x\u2069", "\\u2066x\\u2069"),
    ("caf\u00e9 \u03bb", "caf\u00e9 \u03bb"),
])
def test_printable(raw, shown):
    assert printable(raw) == shown


def test_printable_keeps_the_lines_of_a_report():
    assert printable("a\nb\x1b\n", newlines=True) == "a\nb\\x1b\n"


# -- progress -------------------------------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def wait_for(cond, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "nothing happened"
        time.sleep(0.01)


def test_progress_shows_on_a_terminal_and_is_erased(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(progress, "TICK", 0.01)
    with progress.progress("pypto-x", "compiling", after=0.0) as p:
        wait_for(lambda: "pypto-x: compiling " in term.getvalue())
        sys.stderr.write("pypto-x: warning: careful\n")      # erases the spinner first
        p.phase("running", after=3600.0)                      # not shown for an hour
    out = term.getvalue()
    assert out.endswith("\r\x1b[Kpypto-x: warning: careful\n") or out.endswith("\r\x1b[K")
    assert "\r\x1b[Kpypto-x: warning: careful\n" in out
    assert "running" not in out
    assert sys.stderr is term


def test_no_progress_when_not_a_terminal(monkeypatch):
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    monkeypatch.setattr(progress, "TICK", 0.01)
    with progress.progress("pypto-x", "compiling", after=0.0):
        time.sleep(0.1)
        assert sys.stderr is pipe
    assert pipe.getvalue() == ""


@pytest.mark.slow
def test_a_long_trace_shows_progress_on_a_terminal_only(tmp_path):
    """An op file that traces for three seconds (then times out): on a terminal a spinner
    appears and is erased before the error; through a pipe the error is all there is."""
    cmd = [str(BIN / "pypto-trace"), str(ROOT / "tests/golden/Inputs/endless.py"), "-o", "-"]
    env = env_for(PYPTO_TRACE_TIMEOUT="3")
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    finally:
        os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=120)
    os.close(master)
    text = out.decode()
    assert p.returncode == 1
    assert "\rpypto-trace: tracing " in text
    last = text.rsplit("\r\x1b[K", 1)[1]
    assert last.startswith("pypto-trace: error: endless.py:") and last.count("\n") == 1
    piped = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    assert piped.returncode == 1 and piped.stderr.decode().count("\n") == 1
    assert piped.stderr.decode().startswith("pypto-trace: error: endless.py:")
