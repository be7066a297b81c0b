"""libpypto.cli: stdio, atomic writes, the terminal guard, option parsing and the error boundary."""
from __future__ import annotations

import io
import os
import sys

import pytest
import typer

from libpypto import errors
from libpypto.cli import literal, parse_assignments, run_tool
from libpypto.cli.io import read_input, write_output
from libpypto.ir.files import atomic_write
from libpypto.errors import (CompileError, InputError, MismatchError, PyptoError, UsageError,
                             VerifyError)


class FakeStream:
    """A stdin/stdout stand-in with a binary buffer and a chosen isatty()."""

    def __init__(self, tty: bool, data: bytes = b""):
        self.buffer = io.BytesIO(data)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


# -- input -----------------------------------------------------------------------------------

def test_read_input_file_and_stdin(tmp_path, monkeypatch):
    (tmp_path / "a.ir").write_bytes(b"abc")
    assert read_input(str(tmp_path / "a.ir")) == (b"abc", "a.ir")
    monkeypatch.setattr(sys, "stdin", FakeStream(False, b"piped"))
    assert read_input("-") == (b"piped", "<stdin>")


def test_read_input_errors(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="nosuch.ir: no such file") as exc:
        read_input(str(tmp_path / "nosuch.ir"))
    assert exc.value.exit_code == 2
    with pytest.raises(InputError, match="is a directory"):
        read_input(str(tmp_path))
    monkeypatch.setattr(sys, "stdin", FakeStream(True))
    with pytest.raises(UsageError, match="no input: give a file, or pipe IR in"):
        read_input("-")


# -- output ----------------------------------------------------------------------------------

def test_atomic_write_creates_and_replaces(tmp_path):
    f = tmp_path / "out.ir"
    atomic_write(str(f), b"one")
    assert f.read_bytes() == b"one"
    atomic_write(str(f), b"two")
    assert f.read_bytes() == b"two"
    assert os.listdir(tmp_path) == ["out.ir"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path):
    f = tmp_path / "out.ir"
    f.write_bytes(b"precious")
    with pytest.raises(TypeError):
        atomic_write(str(f), "not bytes")             # fails inside the write
    assert f.read_bytes() == b"precious"
    assert os.listdir(tmp_path) == ["out.ir"]
    with pytest.raises(TypeError):
        atomic_write(str(tmp_path / "new.ir"), 12345)
    assert os.listdir(tmp_path) == ["out.ir"]


def test_atomic_write_into_a_missing_directory(tmp_path):
    with pytest.raises(UsageError, match="cannot write .*/missing/x.ir: No such file"):
        atomic_write(str(tmp_path / "missing" / "x.ir"), b"x")


def test_write_output_refuses_binary_on_a_terminal(monkeypatch):
    tty = FakeStream(True)
    monkeypatch.setattr(sys, "stdout", tty)
    with pytest.raises(UsageError) as exc:
        write_output("-", b"\x86binary", binary=True)
    assert str(exc.value) == ("refusing to write binary IR to a terminal; use -S for text or "
                              "-o FILE")
    assert exc.value.exit_code == 2 and tty.buffer.getvalue() == b""
    write_output("-", b"text\n", binary=False)
    assert tty.buffer.getvalue() == b"text\n"


def test_write_output_to_a_pipe_and_a_file(monkeypatch, tmp_path):
    pipe = FakeStream(False)
    monkeypatch.setattr(sys, "stdout", pipe)
    write_output("-", b"\x86binary", binary=True)
    assert pipe.buffer.getvalue() == b"\x86binary"
    write_output(str(tmp_path / "f"), b"\x86binary", binary=True)
    assert (tmp_path / "f").read_bytes() == b"\x86binary"


# -- option values ---------------------------------------------------------------------------

def test_parse_assignments():
    assert parse_assignments(["N=64", " M = 8 "], "--bind") == {"N": 64, "M": 8}
    assert parse_assignments(None, "--bind") == {}
    assert parse_assignments(["x=a=b"], "--input", str) == {"x": "a=b"}
    with pytest.raises(UsageError, match="--bind 'N': expected NAME=VALUE"):
        parse_assignments(["N"], "--bind")
    with pytest.raises(UsageError, match="--bind 'N=x': bad value 'x'"):
        parse_assignments(["N=x"], "--bind")


@pytest.mark.parametrize("text, value", [
    ("1e-6", 1e-6), ("3", 3), ("-2", -2), ("True", True), ("true", True), ("false", False),
    ("'s'", "s"), ("abc", "abc"), ("[1, 2]", [1, 2]),
])
def test_literal(text, value):
    assert literal(text) == value and type(literal(text)) is type(value)


# -- the error boundary ------------------------------------------------------------------------

def app_raising(exc: BaseException) -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.command()
    def cmd() -> None:
        errors.warn("watch out", "op.py:3")
        raise exc
    return app


@pytest.mark.parametrize("exc, code, line", [
    (InputError("x.ir: empty input"), 2, "prog: error: x.ir: empty input"),
    (UsageError("bad"), 2, "prog: error: bad"),
    (CompileError("tile shape", "op.py:7"), 1, "prog: error: op.py:7: tile shape"),
    (VerifyError("invalid"), 1, "prog: error: invalid"),
    (MismatchError("outputs differ"), 1, "prog: error: outputs differ"),
    (PyptoError("work failed"), 1, "prog: error: work failed"),
    (ValueError("oops"), 70, "prog: internal error, please report: ValueError: oops; saved the "
                             "input to {crash}"),
    pytest.param(KeyboardInterrupt(), 130, "prog: interrupted"),
    (BrokenPipeError(), 1, None),
])
def test_run_tool_turns_exceptions_into_one_line(monkeypatch, capsys, exc, code, line):
    monkeypatch.delenv("PYPTO_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["prog"])
    try:
        run_tool(app_raising(exc), "prog")
        status = None                      # returned instead of exiting
    except SystemExit as done:
        status = done.code
    finally:
        errors.set_warning_handler(None)
    assert status == code
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "prog: warning: op.py:3: watch out"
    if line and "{crash}" in line:
        crash = err[1].rsplit(" ", 1)[-1]
        assert os.path.isdir(crash)
        line = line.format(crash=crash)
    assert err[1:] == ([line] if line else [])


def test_run_tool_reraises_under_debug(monkeypatch):
    monkeypatch.setenv("PYPTO_DEBUG", "1")
    monkeypatch.setattr(sys, "argv", ["prog"])
    try:
        with pytest.raises(InputError):
            run_tool(app_raising(InputError("x")), "prog")
        with pytest.raises(ValueError):
            run_tool(app_raising(ValueError("x")), "prog")
    finally:
        errors.set_warning_handler(None)


def test_run_tool_usage_errors_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["prog", "--nope"])
    try:
        with pytest.raises(SystemExit) as done:
            run_tool(app_raising(ValueError()), "prog")
    finally:
        errors.set_warning_handler(None)
    assert done.value.code == 2
    assert capsys.readouterr().err == "prog: error: no such option: --nope\n"


def test_errors_format_and_exit_codes():
    assert str(PyptoError("m")) == "m"
    assert str(PyptoError("m", "f.py:3")) == "f.py:3: m"
    assert [c.exit_code for c in (PyptoError, CompileError, VerifyError, MismatchError,
                                  InputError, UsageError)] == [1, 1, 1, 1, 2, 2]


def test_warn_without_a_handler_is_a_python_warning():
    errors.set_warning_handler(None)
    with pytest.warns(UserWarning, match="op.py:3: careful"):
        errors.warn("careful", "op.py:3")
    seen = []
    errors.set_warning_handler(lambda msg, loc=None: seen.append((msg, loc)))
    try:
        errors.warn("careful", "op.py:3")
    finally:
        errors.set_warning_handler(None)
    assert seen == [("careful", "op.py:3")]
