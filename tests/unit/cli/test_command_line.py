"""One command line across the six tools (DESIGN.md section 7, "One command line").

Every tool takes the options that apply to what it is given: with an op file --kernel,
--const and --bind (passed to the tracer), always -o, --target, --version and -h, and -S
where a text form exists. Unknown names get a "did you mean"; what a person reads never
carries a raw control character from a file; internal errors leave a reproducer.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from libpypto.driver import parse_ir
from libpypto.errors import RELEASE

from toolrun import ADD, RUN_FAST, SOFTMAX, TOOLS, env_for, ok, one_error_line

# two kernels; `scaled` has a constant and a STATIC dim, so it needs --kernel, --const and
# --bind to trace the way the test asks for
OPS = '''import libpypto as pypto


@pypto.jit
def plain(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
          y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = x + 1.0


@pypto.jit
def scaled(x: pypto.Tensor[[pypto.STATIC, 256], pypto.DT_FP32],
           y: pypto.Tensor[[pypto.STATIC, 256], pypto.DT_FP32], alpha: float = 1.0):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = x * alpha
'''
OPTS = ["--kernel", "scaled", "--const", "alpha=3.0", "--bind", "x_0=32", "--bind", "y_0=32"]


@pytest.fixture
def ops(tmp_path) -> pathlib.Path:
    f = tmp_path / "ops.py"
    f.write_text(OPS)
    return f


@pytest.mark.parametrize("name", TOOLS)
def test_version(cli, name):
    p = ok(cli(name, "--version"))
    assert p.stdout.decode() == f"pypto-{name} {RELEASE}\n" and p.stderr == b""


@pytest.mark.parametrize("name", TOOLS)
def test_short_help_is_the_help(cli, name):
    short, long = ok(cli(name, "-h")), ok(cli(name, "--help"))
    assert short.stdout == long.stdout and b"Examples:" in short.stdout


@pytest.mark.parametrize("name", TOOLS)
def test_every_tool_has_the_shared_options(cli, name):
    text = ok(cli(name, "--help")).stdout.decode()
    shared = ["--kernel", "--const", "--bind", "--target", "-o", "--version", "-h, --help"]
    shared += ["-S"] if name != "prof" else ["--fmt", "--inputs", "--threads", "--backend"]
    missing = [o for o in shared if o not in text.replace("\n", " ")]
    assert not missing, f"pypto-{name} lacks {missing}"


@pytest.mark.parametrize("name", ["trace", "lower", "sched", "emit"])
def test_op_file_options_reach_the_tracer(cli, ops, name):
    p = ok(cli(name, ops, *OPTS, "--target", "a2", "-S"))
    doc = parse_ir(p.stdout, "<out>")
    assert doc.attrs["kernel"] == "scaled" and doc.attrs["consts"] == {"alpha": 3.0}
    assert doc.attrs["symbols"]["x_0"] == {"dims": [["x", 0]], "kind": "static", "value": 32}
    assert doc.attrs["target"]["name"] == "a2"
    assert doc.producer[-1]["options"]["kernel"] == "scaled"
    assert doc.producer[-1]["options"]["const"] == {"alpha": 3.0}


@pytest.mark.parametrize("name", ["run", "prof"])
def test_run_and_prof_take_the_op_file_options(cli, ops, name):
    p = ok(cli(name, ops, *OPTS, *RUN_FAST, "-o", "-"))
    text = (p.stderr if name == "run" else p.stdout).decode()
    assert "scaled: pass" in text


@pytest.mark.parametrize("name", ["trace", "run"])
def test_a_static_dim_the_shapes_fix_needs_no_bind(cli, ops, name):
    # y_0 is STATIC too, and `y[:] = x * alpha` makes it x_0's size: one --bind is enough
    # (either one: --bind y_0=48 fixes x_0 the same way)
    fast = RUN_FAST if name == "run" else []
    p = ok(cli(name, ops, "--kernel", "scaled", "--bind", "x_0=48", *fast, "-S"))
    if name == "trace":
        sym = parse_ir(p.stdout, "<out>").attrs["symbols"]["y_0"]
        assert sym == {"dims": [["y", 0]], "kind": "static", "value": 48}
    else:
        assert "scaled: pass" in p.stderr.decode() and "y_0=48" in p.stderr.decode()


def test_a_static_dim_nothing_fixes_still_asks_for_its_size(cli, ops):
    msg = one_error_line(cli("trace", ops, "--kernel", "scaled"), "trace", 1)
    assert msg == "x dim 0 is STATIC: give its size (--bind x_0=N)"


def test_several_kernels_need_kernel_in_every_tool(cli, ops):
    for name in ("lower", "sched", "emit", "run", "prof"):
        msg = one_error_line(cli(name, ops, "-o", "-"), name, 2)
        assert "defines several kernels (plain, scaled)" in msg


@pytest.mark.parametrize("flag, value", [("--kernel", "softmax"), ("--const", "eps=1")])
@pytest.mark.parametrize("name", ["lower", "sched", "emit", "run", "prof"])
def test_op_file_options_given_ir_are_refused(cli, files, name, flag, value):
    msg = one_error_line(cli(name, files["tensor"], flag, value, "-o", "-"), name, 2)
    assert msg == f"{flag} applies to an op file (.py), and softmax.tensor is IR"


def test_bind_of_a_symbol_the_kernel_lacks(cli):
    msg = one_error_line(cli("trace", SOFTMAX, "--bind", "x_9=4"), "trace", 2)
    assert msg == ("--bind x_9: the kernel has no symbol 'x_9' (symbols: x_0, y_0); did you "
                   "mean 'x_0'?")


def test_emit_bind_schedules_first(cli, files):
    p = ok(cli("emit", files["tensor"], "--bind", "x_0=16", "-S"))
    sched = next(ln for ln in p.stdout.decode().splitlines() if ln.startswith("schedule "))
    assert "makespan_us=" in sched and "bindings={x_0=16" in sched


# -- pypto-prof ---------------------------------------------------------------------------------

def test_prof_writes_its_report_with_o(cli, files, tmp_path):
    p = ok(cli("prof", files["run"], "-o", tmp_path / "report.txt"))
    assert p.stdout == b""
    assert (tmp_path / "report.txt").read_text().startswith("kernel softmax: pass")


def test_prof_of_an_earlier_level_shows_the_prediction(cli):
    p = ok(cli("prof", SOFTMAX, "--bind", "x_0=64", *RUN_FAST, "--fmt", "plain"))
    out = p.stdout.decode()
    head = out.splitlines()[0]
    assert head.startswith("kernel softmax: pass, numpy backend, 1 thread, wall ")
    assert " ms (predicted " in head and " ms on host, lower bound " in head
    assert "predicted makespan (ms)" in out and "predicted lower bound (ms)" in out


def test_prof_of_a_record_without_a_prediction_says_nothing_of_one(cli, files):
    out = ok(cli("prof", files["run"])).stdout.decode()
    assert "predicted" not in out


# -- what a person reads ------------------------------------------------------------------------

def test_errors_escape_control_characters(cli, tmp_path):
    evil = "a\x1b[2Jb\rc\u202e.ir"
    msg = one_error_line(cli("lower", tmp_path / evil), "lower", 2)
    assert msg.endswith("a\\x1b[2Jb\\x0dc\\u202e.ir: no such file")


def test_run_report_escapes_control_characters():
    from libpypto.cli.run import report
    from libpypto.ir.core import Document, Op
    attrs = {"verdict": "fail", "backend": "c", "threads": 2, "wall_s": 0.001, "walls_s": [0.001],
             "bindings": {}, "outputs": [], "events": [], "tasks": [], "compile": {},
             "notice": "careful\x1b[31m", "environment": {},
             "checks": [{"name": "y\x1b[0m", "ok": False, "mismatches": 3, "max_abs_err": 1.0,
                         "max_rel_err": 1.0, "first": [12, 40], "got": 1.5, "want": 2.5,
                         "tolerance": 1e-4}]}
    doc = Document("run", [Op("run", [], [], attrs, [], None)], {"kernel": "k\u202eevil"}, [])
    text = report(doc)
    assert "\x1b" not in text and "\u202e" not in text
    assert "pypto-run: y\\x1b[0m: 3 mismatches; first at [12, 40]: got 1.5, want 2.5 " \
           "(tolerance 0.0001)\n" in text


# -- internal errors ----------------------------------------------------------------------------

CRASH = ("import sys, libpypto.driver as d\n"
         "def boom(*a, **k): raise KeyError('no such thing')\n"
         "d.{fn} = boom\n"
         "sys.argv = ['pypto-{tool}', *sys.argv[1:]]\n"
         "from pypto_{tool}.main import main\nmain()\n")


def crash(tool: str, fn: str, *args, input: bytes | None = None, cache: pathlib.Path):
    p = subprocess.run([sys.executable, "-c", CRASH.format(tool=tool, fn=fn), *map(str, args)],
                       input=input, capture_output=True, timeout=120,
                       env=env_for(PYPTO_CACHE_DIR=str(cache)))
    assert p.returncode == 70, p.stderr
    err = p.stderr.decode()
    head = f"pypto-{tool}: internal error, please report: KeyError: 'no such thing'; saved the " \
           f"input to "
    assert err.startswith(head) and err.count("\n") == 1, err
    return pathlib.Path(err[len(head):].strip())


def test_internal_error_keeps_stdin(files, tmp_path):
    data = files["exec"].read_bytes()
    saved = crash("sched", "schedule", "--target", "a2", input=data, cache=tmp_path)
    assert (saved / "input-1.ir").read_bytes() == data
    assert (saved / "command.txt").read_text() == "pypto-sched --target a2\n"


def test_internal_error_keeps_the_op_file_and_no_name_from_it(tmp_path):
    weird = tmp_path / "..evil name;rm -rf.py"
    weird.write_text(pathlib.Path(ADD).read_text())
    saved = crash("lower", "lower", weird, cache=tmp_path / "cache")
    assert saved.parent == tmp_path / "cache" / "crash"
    assert sorted(f.name for f in saved.iterdir()) == ["command.txt", "input-1.py",
                                                       "traceback.txt"]
    assert (saved / "input-1.py").read_text() == weird.read_text()


def test_internal_error_without_a_writable_cache(files, tmp_path):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    saved = crash("emit", "emit", files["sched"], cache=blocked)
    assert saved.is_dir() and not str(saved).startswith(str(blocked))


# -- exit codes ---------------------------------------------------------------------------------

def test_exit_codes_are_the_documented_ones(cli, files, tmp_path):
    """0, 1 (the work failed), 2 (bad usage, unreadable input): a sample of each."""
    (tmp_path / "bad.py").write_text("import libpypto as pypto\n\n@pypto.jit\n"
                                     "def k(x: pypto.Tensor[[8, 8], pypto.DT_FP32]):\n"
                                     "    x[:] = pypto.expp(x)\n")
    assert cli("lower", files["tensor"], "-o", os.devnull).returncode == 0
    assert cli("lower", tmp_path / "bad.py").returncode == 1
    assert cli("lower", "--no-such-option").returncode == 2
    assert cli("lower", tmp_path / "missing.ir").returncode == 2
    msg = one_error_line(cli("lower", tmp_path / "bad.py"), "lower", 1)
    assert msg.endswith("module 'libpypto' has no attribute 'expp'; did you mean 'exp'?")


def test_prof_of_a_run_record_refuses_run_options(cli, files):
    msg = one_error_line(cli("prof", files["run"], "--threads", "1", "--bind", "x_0=4"),
                         "prof", 2)
    assert msg == ("--bind, --threads: the input is a run record already; these options "
                   "apply when pypto-prof runs an earlier level")
