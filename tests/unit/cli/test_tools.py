"""The six tools as a user runs them.

DESIGN.md sections 1, 5 and 7: every tool accepts its own level or any earlier one (an op file
included); errors are one line, exit 2 for bad usage or unreadable input and 1 when the work
fails, no traceback unless PYPTO_DEBUG=1; outputs are written atomically; binary IR never goes
to a terminal. Runs use the numpy backend unless the test is marked needs_cc.

What needs a real process (exit status, terminals, signals, tracebacks, pipes between tools,
python -m) runs the installed console scripts as subprocesses (`tool`). The large matrices of
inputs and options call the same entry point, pypto_X.main:main, in this process (`cli`),
with argv, stdin, stdout and stderr replaced: same code path, a hundredth of the start-up cost.
"""
from __future__ import annotations

import json
import os
import pathlib
import pty
import shutil
import stat
import subprocess
import sys

import msgpack
import pytest

import libpypto as pypto
from libpypto.driver import parse_ir
from libpypto.ir import serde
from libpypto.ir.text import parse_doc

from toolrun import (ADD, BIN, EX, READERS, ROOT, RUN_FAST, SOFTMAX, TOOLS, WRITERS,  # noqa: F401
                     env_for, interrupted, level_of, ok, one_error_line, tool, tools)


# -- help ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TOOLS)
def test_help(name):
    p = ok(tool(name, "--help"))
    out = p.stdout.decode()
    assert "Examples:" in out and f"pypto-{name}" in out
    assert p.stderr == b""
    # python -m pypto_X --help from outside the repo: test_packaging.py::test_help_is_light


# -- unreadable input --------------------------------------------------------------------------

def _bad_inputs(tmp: pathlib.Path, good: bytes) -> dict:
    (tmp / "garbage.ir").write_bytes(b"\x00\x01garbage\xff")
    (tmp / "text.ir").write_bytes(b"hello world\n")
    (tmp / "trunc.ir").write_bytes(good[: len(good) // 2])
    (tmp / "empty.ir").write_bytes(b"")
    (tmp / "dir.ir").mkdir()
    return {"garbage": ("garbage.ir", "garbage.ir: not a pypto IR file"),
            "text": ("text.ir", "text.ir: not a pypto IR file"),
            "truncated": ("trunc.ir", "trunc.ir: "),
            "empty": ("empty.ir", "empty.ir: empty input"),
            "missing": ("nosuch.ir", "nosuch.ir: no such file"),
            "directory": ("dir.ir", "dir.ir: is a directory")}


@pytest.mark.parametrize("name", READERS)
def test_unreadable_input(cli, name, files, tmp_path):
    cases = _bad_inputs(tmp_path, files["tensor"].read_bytes())
    out = [] if name == "prof" else ["-o", "out.ir"]      # pypto-prof writes tables only
    for case, (path, want) in cases.items():
        p = cli(name, path, *out, cwd=tmp_path)
        msg = one_error_line(p, name, 2)
        assert msg.startswith(want), (case, msg)
        assert p.stdout == b"", case
    assert not (tmp_path / "out.ir").exists()
    assert not list(tmp_path.glob(".pypto-*")), "stray temporary file"


@pytest.mark.parametrize("name", READERS)
def test_empty_and_garbage_stdin(cli, name):
    assert one_error_line(cli(name, input=b""), name, 2) == "<stdin>: empty input"
    p = cli(name, "-", input=b"\x93\x01\x02\x03")
    assert one_error_line(p, name, 2).startswith("<stdin>: not a pypto IR file")


def test_trace_errors(cli, tmp_path):
    (tmp_path / "syn.py").write_text("import libpypto as pypto\n\ndef k(:\n    pass\n")
    assert one_error_line(cli("trace", "syn.py", cwd=tmp_path), "trace", 1) \
        .startswith("syn.py:3: syntax error")
    (tmp_path / "none.py").write_text("x = 1\n")
    assert one_error_line(cli("trace", "none.py", cwd=tmp_path), "trace", 1) == \
        "none.py defines no @pypto.jit kernel"
    (tmp_path / "boom.py").write_text(
        "import libpypto as pypto\n\n@pypto.jit\n"
        "def k(x: pypto.Tensor[[64, 1024], pypto.DT_FP32],\n"
        "      y: pypto.Tensor[[64, 1024], pypto.DT_FP32]):\n"
        "    pypto.set_vec_tile_shapes(8, 1024)\n    z = 1 // 0\n")
    msg = one_error_line(cli("trace", "boom.py", cwd=tmp_path), "trace", 1)
    assert msg.startswith("boom.py:7: ") and "ZeroDivisionError" in msg
    (tmp_path / "unaligned.py").write_text(
        "import libpypto as pypto\n\n@pypto.jit\n"
        "def k(x: pypto.Tensor[[64, 1024], pypto.DT_FP32],\n"
        "      y: pypto.Tensor[[64, 1024], pypto.DT_FP32]):\n"
        "    pypto.set_vec_tile_shapes(8, 100)\n    y[:] = pypto.exp(x)\n")
    for name in ("trace", "lower"):
        msg = one_error_line(cli(name, "unaligned.py", cwd=tmp_path), name, 1)
        assert msg.startswith("unaligned.py:7: tile shape (8, 100) is not 32-byte aligned")
    assert one_error_line(cli("trace", "nosuch.py", cwd=tmp_path), "trace", 2) == \
        "nosuch.py: no such file"
    assert one_error_line(cli("trace", cwd=tmp_path), "trace", 2)      # missing argument


def test_trace_of_an_ir_file_is_refused(cli, files):
    msg = one_error_line(cli("trace", files["exec"]), "trace", 2)
    assert "softmax.exec" in msg


def test_trace_of_a_directory(cli, tmp_path):
    (tmp_path / "d.py").mkdir()
    msg = one_error_line(cli("trace", "d.py", cwd=tmp_path), "trace", 2)
    assert msg == "d.py: is a directory"


# -- wrong level and versions ----------------------------------------------------------------

PAST = [("lower", "sched", "pypto-emit"), ("lower", "code", "pypto-run"),
        ("lower", "run", "pypto-prof"), ("sched", "code", "pypto-run"),
        ("sched", "run", "pypto-prof"), ("emit", "run", "pypto-prof"),
        ("run", "run", "pypto-prof")]


def test_file_past_what_the_tool_makes(cli, files):
    for name, level, hint in PAST:
        msg = one_error_line(cli(name, "-", input=files[level].read_bytes()), name, 2)
        assert f"got a '{level}' file, past what pypto-{name} makes (try {hint})" in msg


def test_wrong_level_error_names_the_input(cli, files):
    msg = one_error_line(cli("lower", input=files["sched"].read_bytes()), "lower", 2)
    assert msg.startswith("<stdin>: got a 'sched' file")


def with_version(data: bytes, version) -> bytes:
    m = msgpack.unpackb(data, raw=False, strict_map_key=False,
                        ext_hook=lambda c, d: msgpack.ExtType(c, d))
    m["version"] = version
    return msgpack.packb(m, use_bin_type=True)


@pytest.mark.parametrize("name", READERS)
def test_future_major_version_is_refused(cli, files, tmp_path, name):
    f = tmp_path / "future.ir"
    f.write_bytes(with_version(files["tensor"].read_bytes(), [2, 0]))
    msg = one_error_line(cli(name, f), name, 2)
    assert msg == ("future.ir: IR format version 2.0 is not readable by this pypto "
                   "(reads 1.x); use a matching pypto release")


def test_future_major_version_in_text_is_refused(cli, files):
    text = ok(cli("lower", files["tensor"], "-S", "-p", "tensor-to-tile,assign-memory")).stdout
    assert text.startswith(b"pypto-ir 1.1 tile\n")
    p = cli("lower", input=text.replace(b"pypto-ir 1.1", b"pypto-ir 3.1", 1))
    assert "IR format version 3.1 is not readable" in one_error_line(p, "lower", 2)


def test_other_minor_versions_are_read(cli, files):
    # 1.0 is the oldest minor of major 1; older minors proper: test_serde.py (patched VERSION)
    data = files["tensor"].read_bytes()
    for version in ([1, 0], [1, 9]):
        p = ok(cli("lower", input=with_version(data, version)))
        assert level_of(p.stdout) == "exec"


# -- atomic output -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, args", [
    ("trace", ["nosuch.py"]), ("lower", ["garbage.ir"]), ("lower", ["in.ir", "-p", "bogus"]),
    ("sched", ["in.ir", "--target", "nosuch"]), ("emit", ["in.ir", "--backend", "fortran"]),
    ("run", ["in.ir", *RUN_FAST]),           # x_0 is not bound
])
def test_failed_run_leaves_outputs_alone(cli, files, tmp_path, name, args):
    shutil.copy(files["tensor"], tmp_path / "in.ir")
    (tmp_path / "garbage.ir").write_bytes(b"junk")
    (tmp_path / "keep.ir").write_bytes(b"precious")
    p = cli(name, *args, "-o", "keep.ir", cwd=tmp_path)
    assert p.returncode in (1, 2) and "Traceback" not in p.stderr.decode()
    p = cli(name, *args, "-o", "new.ir", cwd=tmp_path)
    assert p.returncode in (1, 2)
    assert (tmp_path / "keep.ir").read_bytes() == b"precious"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["garbage.ir", "in.ir", "keep.ir"]


def test_output_into_a_missing_directory(cli, files):
    msg = one_error_line(cli("lower", files["tensor"], "-o", "/nonexistent/dir/x.ir"), "lower", 2)
    assert msg.startswith("cannot write /nonexistent/dir/x.ir")


def test_successful_output_replaces_and_leaves_no_temp_files(cli, files, tmp_path):
    (tmp_path / "out.ir").write_bytes(b"old")
    ok(cli("lower", files["tensor"], "-o", "out.ir", cwd=tmp_path))
    assert level_of((tmp_path / "out.ir").read_bytes()) == "exec"
    assert [x.name for x in tmp_path.iterdir()] == ["out.ir"]


@pytest.mark.slow
def test_output_file_mode_follows_umask(tmp_path):
    ok(tool("trace", ADD, "-o", tmp_path / "t.ir"))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "t.ir").stat().st_mode) == 0o666 & ~umask


@pytest.mark.slow
def test_output_to_a_special_file_writes_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        p = tool("trace", ADD, "-o", fifo)
        assert p.returncode == 0, p.stderr
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced"
        assert os.read(reader, 1 << 16)[:1] in (b"\x86", b"\x87", b"\xde")
    finally:
        os.close(reader)


def test_exit_codes_of_a_real_process(files, tmp_path):
    (tmp_path / "unaligned.py").write_text(
        "import libpypto as pypto\n\n@pypto.jit\n"
        "def k(x: pypto.Tensor[[64, 1024], pypto.DT_FP32],\n"
        "      y: pypto.Tensor[[64, 1024], pypto.DT_FP32]):\n"
        "    pypto.set_vec_tile_shapes(8, 100)\n    y[:] = pypto.exp(x)\n")
    (tmp_path / "g.ir").write_bytes(b"junk")
    compile_error, bad_input, bad_usage = tools(
        ("lower", ("unaligned.py",), {"cwd": tmp_path}), ("sched", ("g.ir",), {"cwd": tmp_path}),
        ("run", (files["code"], "--threads", "0"), {}))
    assert "not 32-byte aligned" in one_error_line(compile_error, "lower", 1)
    assert one_error_line(bad_input, "sched", 2).startswith("g.ir: not a pypto IR file")
    assert one_error_line(bad_usage, "run", 2) == "--threads must be at least 1"


@pytest.mark.slow
def test_short_pipe():
    data = ok(tool("trace", SOFTMAX)).stdout
    p = ok(tool("run", "--bind", "x_0=16", *RUN_FAST, input=data))
    assert parse_ir(p.stdout, "<stdin>").body[0].attrs["verdict"] == "pass"
    assert p.stderr.decode().startswith("pypto-run: softmax: pass")


# -- debugging ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_debug_shows_a_traceback(tmp_path):
    (tmp_path / "g.ir").write_bytes(b"junk")
    quiet = tool("lower", "g.ir", cwd=tmp_path)
    one_error_line(quiet, "lower", 2)
    loud = tool("lower", "g.ir", cwd=tmp_path, debug=True)
    assert loud.returncode != 0
    err = loud.stderr.decode()
    assert "Traceback (most recent call last)" in err and "InputError" in err


INTERNAL = ("import sys, libpypto.driver as d\n"
            "def boom(*a, **k): raise RuntimeError('boom')\n"
            "d.lower = boom\n"
            "sys.argv = ['pypto-lower', sys.argv[1]]\n"
            "from pypto_lower.main import main\nmain()\n")


def test_internal_errors_are_one_line_unless_debugging(files, tmp_path):
    cmd = [sys.executable, "-c", INTERNAL, str(files["tensor"])]
    p = subprocess.run(cmd, capture_output=True, env=env_for(PYPTO_CACHE_DIR=str(tmp_path)),
                       timeout=60)
    assert p.returncode == 70
    err = p.stderr.decode()
    head = "pypto-lower: internal error, please report: RuntimeError: boom; saved the input to "
    assert err.startswith(head) and err.count("\n") == 1, err
    # the reproducer: the command line, the bytes read, the traceback; no name from the input
    saved = pathlib.Path(err[len(head):].strip())
    assert saved.parent == tmp_path / "crash"
    assert sorted(f.name for f in saved.iterdir()) == ["command.txt", "input-1.ir",
                                                       "traceback.txt"]
    assert (saved / "input-1.ir").read_bytes() == files["tensor"].read_bytes()
    assert (saved / "command.txt").read_text() == f"pypto-lower {files['tensor']}\n"
    assert "RuntimeError: boom" in (saved / "traceback.txt").read_text()
    p = subprocess.run(cmd, capture_output=True, env=env_for(debug=True), timeout=60)
    assert p.returncode != 0
    assert "Traceback (most recent call last)" in p.stderr.decode()
    assert "RuntimeError: boom" in p.stderr.decode()


@pytest.mark.slow
def test_interrupt_exits_130():
    # started and blocked reading stdin after a second
    assert interrupted(BIN / "pypto-lower", 1.0) == (130, "pypto-lower: interrupted\n")


@pytest.mark.slow
@pytest.mark.parametrize("module, after", [("libpypto.cli", 0.0), ("libpypto.cli", 0.1),
                                           ("typer", 0.0)])
def test_interrupt_while_the_tool_is_still_importing_exits_130(module, after):
    """Ctrl-C before the tool is up (its imports take a second on a loaded machine) is the
    same one line and exit 130, never a traceback from inside an import: the signal comes
    as the import after libpypto.cli's ends (main.py has called starting by then), a little
    later, and as the one after typer's ends (run_tool's imports, before its boundary). The
    tool then waits on stdin, so it cannot finish before the signal, whenever it comes."""
    assert interrupted(BIN / "pypto-run", after, past=module) == \
        (130, "pypto-run: interrupted\n")


# -- usage errors ------------------------------------------------------------------------------

USAGE = [
    ("lower", ["--bogus"], "no such option: --bogus"),
    ("lower", ["-p", "tensor2tile"], "unknown pass 'tensor2tile' (known: alloc, "),
    ("lower", ["-p", "fuse{enable=false"], "pipeline: unclosed '{' after 'fuse'"),
    ("lower", ["-p", "fuse{bogus=1}"], "pass 'fuse' has no option 'bogus'"),
    ("lower", ["-p", "fuse,tensor-to-tile"],
     "pass 'fuse' takes a tile-level graph but gets tensor here"),
    ("lower", ["--stop-after", "bogus"], "--stop-after: unknown pass 'bogus'"),
    ("sched", ["--target", "nosuch"], "unknown target 'nosuch' (built in: a2, a3, 950, host"),
    ("sched", ["--bind", "x_0"], "--bind 'x_0': expected NAME=VALUE"),
    ("run", ["--bind", "x_0=abc"], "--bind 'x_0=abc': bad value 'abc'"),
    ("run", ["--bind", "nope=3"], "--bind nope: the kernel has no symbol 'nope'"),
    ("run", ["--backend", "fortran"], "unknown backend 'fortran' (known: c, numpy)"),
    ("run", ["--threads", "0"], "--threads must be at least 1"),
    ("run", [*RUN_FAST], "symbol x_0 (dim 0 of x) has no size"),
    ("emit", ["--backend", "fortran"], "unknown backend 'fortran' (known: c, numpy)"),
]


def test_usage_errors(cli, files):
    for name, args, want in USAGE:
        msg = one_error_line(cli(name, files["tensor"], *args, "-o", "-"), name, 2)
        assert want in msg, (args, msg)


# -- every tool takes every earlier level -------------------------------------------------------

@pytest.mark.parametrize("name, level", [
    ("lower", "exec"), ("sched", "sched"), ("emit", "code"),
])
def test_op_file_directly(cli, name, level, tmp_path):
    out = tmp_path / "out"
    ok(cli(name, SOFTMAX, "-o", out))
    assert level_of(out.read_bytes()) == level


def test_run_and_prof_take_an_op_file(cli, tmp_path):
    p = ok(cli("run", SOFTMAX, "--bind", "x_0=16", *RUN_FAST, "-o", tmp_path / "r"))
    assert "softmax: pass" in p.stderr.decode()
    assert level_of((tmp_path / "r").read_bytes()) == "run"
    p = ok(cli("prof", ADD, "--fmt", "plain"))
    assert "kernel add: pass" in p.stdout.decode()


@pytest.mark.parametrize("level", ["tensor", "exec", "sched", "code"])
def test_run_takes_every_earlier_level(cli, files, level):
    p = ok(cli("run", "--bind", "x_0=16", *RUN_FAST, input=files[level].read_bytes()))
    rec = parse_ir(p.stdout, "<run>")
    assert rec.level == "run" and rec.body[0].attrs["verdict"] == "pass"
    assert "pypto-run: softmax: pass" in p.stderr.decode()


EARLIER = [("sched", "tensor", "sched"), ("sched", "exec", "sched"), ("sched", "sched", "sched"),
           ("emit", "tensor", "code"), ("emit", "exec", "code"), ("emit", "sched", "code"),
           ("emit", "code", "code"), ("lower", "tensor", "exec"), ("lower", "exec", "exec")]


def test_tools_take_earlier_levels(cli, files):
    for name, level, want in EARLIER:
        p = ok(cli(name, input=files[level].read_bytes()))
        assert level_of(p.stdout) == want, (name, level)


@pytest.mark.slow
def test_full_pipe_of_a_static_op():
    data = ok(tool("trace", ADD)).stdout
    for name in ("lower", "sched", "emit"):
        data = ok(tool(name, input=data)).stdout
    data = ok(tool("run", *RUN_FAST, input=data)).stdout
    out = ok(tool("prof", "--fmt", "github", input=data)).stdout.decode()
    assert "kernel add: pass" in out and "|" in out


def test_producer_history(files):
    doc = pypto.read_ir(str(files["code"]))
    assert [p["tool"] for p in doc.producer] == ["pypto-trace", "pypto-lower", "pypto-sched",
                                                 "pypto-emit"]
    assert doc.producer[-1]["options"] == {"backend": "c"}


# -- -o FILE and -S ------------------------------------------------------------------------------

def test_every_output_reads_back(files, tmp_path):
    for level, f in files.items():
        doc = pypto.read_ir(str(f))
        assert doc.level == level
        assert serde.dumps(doc) == f.read_bytes()
    ok(tool("prof", files["run"], "--chrome", tmp_path / "t.json", "--svg", tmp_path / "s.svg"))
    events = json.loads((tmp_path / "t.json").read_text())
    assert events
    svg = (tmp_path / "s.svg").read_text()
    assert svg.lstrip().startswith("<") and "<svg" in svg and svg.rstrip().endswith("</svg>")


@pytest.mark.parametrize("name, src", [
    ("trace", "op"), ("lower", "tensor"), ("sched", "exec"), ("emit", "sched"),
])
def test_text_output_is_the_same_graph(cli, files, name, src):
    args = [SOFTMAX] if src == "op" else [files[src]]
    binary = ok(cli(name, *args)).stdout
    text = ok(cli(name, *args, "-S")).stdout
    assert text.startswith(b"pypto-ir 1.1 ")
    assert serde.dumps(parse_doc(text.decode())) == binary
    # and the text form is accepted as input by the next tool
    if name != "emit":
        assert ok(cli("emit", input=text)).stdout


def test_run_text_record(cli, files):
    p = ok(cli("run", files["code"], "--bind", "x_0=16", *RUN_FAST, "-S"))
    assert p.stdout.startswith(b"pypto-ir 1.1 run\n")
    assert parse_doc(p.stdout.decode()).body[0].attrs["verdict"] == "pass"


def test_emit_listing_and_source(cli, files):
    listing = ok(cli("emit", files["sched"], "--listing")).stdout.decode()
    source = ok(cli("emit", files["sched"], "--source")).stdout.decode()
    code = pypto.read_ir(str(files["code"]))
    attrs = next(op for op in code.body if op.name == "code").attrs
    assert listing == attrs["listing"] and source == attrs["source"]


def test_lower_flags(cli, files):
    p = ok(cli("lower", "--list-passes"))
    out = p.stdout.decode()
    for name in ("alloc", "assign-memory", "cse", "dce", "forward", "fuse", "make-exec",
                 "tensor-to-tile"):
        assert name in out
    assert "enable=true" in out
    p = ok(cli("lower", files["tensor"], "--print-pipeline"))
    from libpypto.passes import DEFAULT_PIPELINE
    assert p.stdout == (DEFAULT_PIPELINE + "\n").encode()
    p = ok(cli("lower", files["tensor"], "--print-after-all", "--time-passes",
                "--verify-each", "--stop-after", "fuse", "-S", PYPTO_FAKE_CLOCK="1"))
    err = p.stderr.decode()
    stop = DEFAULT_PIPELINE.split(",").index("fuse") + 1      # the passes up to fuse
    assert err.count("# ---- IR after ") == stop and "# ---- IR after fuse ---- #" in err
    assert "total" in err
    assert p.stdout.startswith(b"pypto-ir 1.1 block\n")


# -- terminals -------------------------------------------------------------------------------

def run_on_tty(args: list, stdin=subprocess.DEVNULL, stdin_tty: bool = False):
    """Run a tool with stdout (and optionally stdin) on a pseudo-terminal."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([str(a) for a in args], stdout=slave,
                             stdin=slave if stdin_tty else stdin, stderr=subprocess.PIPE,
                             env=env_for())
    finally:
        os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:          # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        out += chunk
    err = p.stderr.read()
    p.stderr.close()
    p.wait(timeout=120)
    os.close(master)
    return p.returncode, out, err.decode()


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "lower" else pytest.mark.slow)
                                  for n in WRITERS])
def test_binary_is_never_written_to_a_terminal(files, name):
    src = SOFTMAX if name == "trace" else files["tensor"]
    code, out, err = run_on_tty([BIN / f"pypto-{name}", src])
    assert code == 2 and out == b""
    assert err == (f"pypto-{name}: error: refusing to write binary IR to a terminal; use -S for "
                   f"text or -o FILE\n")
    if name == "lower":      # text is fine on a terminal
        code, out, err = run_on_tty([BIN / f"pypto-{name}", src, "-S"])
        assert code == 0 and out.startswith(b"pypto-ir 1.1 ")


@pytest.mark.slow
def test_run_on_a_terminal_keeps_no_record(files):
    code, out, err = run_on_tty([BIN / "pypto-run", files["code"], "--bind", "x_0=16", *RUN_FAST])
    assert code == 0 and out == b""
    lines = err.splitlines()
    assert lines[0] == "pypto-run: softmax: pass" or lines[0].startswith("pypto-run: softmax: pass")
    assert lines[-1] == ("pypto-run: run record not kept (stdout is a terminal); keep it with "
                         "-o run.msgpack or a pipe into pypto-prof")
    assert sum("run record" in ln for ln in lines) == 1


def test_no_input_on_a_terminal():
    code, out, err = run_on_tty([BIN / "pypto-lower"], stdin_tty=True)
    assert code == 2
    assert err == ("pypto-lower: error: no input: give a file, or pipe IR in (e.g. pypto-trace "
                   "op.py | ...)\n")


# -- native runs ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.needs_cc
def test_run_native_from_an_op_file(tmp_path):
    p = ok(tool("run", SOFTMAX, "--bind", "x_0=16", "-o", tmp_path / "r.ir"))
    assert "softmax: pass" in p.stderr.decode()
    rec = pypto.read_ir(str(tmp_path / "r.ir"))
    assert rec.body[0].attrs["backend"] == "c" and rec.body[0].attrs["verdict"] == "pass"


def test_run_uses_sizes_bound_at_sched(cli, files):
    sched = ok(cli("sched", files["exec"], "--bind", "x_0=16")).stdout
    ok(cli("run", *RUN_FAST, input=sched))
