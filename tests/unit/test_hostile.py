"""IR files are data: no string, name or expression in a file reaches generated source or
Python unchecked, a code-level file's C runs only if it is what the emitter makes of the
file's programs, and the numpy backend executes no text at all.

Each attack leaves a marker file behind if it gets to run; every test checks the marker is
absent, besides the error it expects.
"""
from __future__ import annotations

import copy
import os
import pathlib
import subprocess
import sys

import pytest

import libpypto as pypto
from libpypto.driver import parse_ir
from libpypto.errors import InputError, PyptoError
from libpypto.ir import expr as E
from libpypto.ir import serde
from libpypto.ir.text import print_doc

BIN = pathlib.Path(sys.executable).parent


def marker_payload(marker: pathlib.Path) -> str:
    return f"import os; open({str(marker)!r}, 'w').close()"


def tool(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYPTO_DEBUG", None)
    return subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def code_op(doc):
    return next(op for op in doc.body if op.name == "code")


@pytest.fixture
def marker(tmp_path):
    m = tmp_path / "pwned"
    yield m
    assert not m.exists(), "an injected payload ran"


# -- names pasted into generated source --------------------------------------------------------

@pytest.mark.parametrize("form", ["msgpack", "text"])
@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.needs_cc)])
def test_kernel_name_with_code_is_refused(ex, tmp_path, marker, form, backend):
    doc = ex.doc("add", "tensor")
    payload = marker_payload(marker)
    doc.attrs["kernel"] = f"x\n{payload}\n#" if backend == "numpy" else \
        f'x */ __attribute__((constructor)) static void f(void) {{ system("touch {marker}"); }} /*'
    f = tmp_path / "evil.ir"
    f.write_bytes(serde.dumps(doc) if form == "msgpack" else print_doc(doc).encode())
    p = tool("pypto-run", str(f), "--backend", backend, "-o", os.devnull)
    assert p.returncode == 2, p.stderr
    assert "module kernel must be a name" in p.stderr and "Traceback" not in p.stderr


def test_value_names_are_names(ex):
    doc = ex.doc("add", "tensor")
    param = next(op for op in doc.body if op.name == "param")
    param.results[0].name = "x; system(\"rm -rf /\")"
    with pytest.raises(InputError, match="param result 0 is named"):
        parse_ir(serde.dumps(doc), "evil.ir")


def _rename_program(doc, new: str):
    prog = next(op for op in doc.body if op.name == "program")
    old = prog.attrs["name"]
    prog.attrs["name"] = new
    for op in doc.walk():
        if op.name == "task" and op.attrs["program"] == old:
            op.attrs["program"] = new
    return prog


@pytest.mark.needs_cc
@pytest.mark.parametrize("name", ["main", "pypto_run", "memset", "B"])
def test_program_names_never_reach_the_c(ex, name):
    """A program named like a C function of the runtime, libc or the kernel's own arguments
    still compiles and runs right: the C names programs by position."""
    doc = ex.doc("softmax", "sched")
    _rename_program(doc, name)
    rec = pypto.run(parse_ir(serde.dumps(doc), "x.ir"), bind=ex.bind("softmax"))
    assert rec.body[0].attrs["verdict"] == "pass"


@pytest.mark.needs_cc
@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_symbol_names_never_reach_the_source(ex, backend):
    """Scalars and loop variables named like the C function's own parameters (T, S, B) or
    its temporaries keep their meaning: the renderers use names of their own."""
    doc = ex.doc("matmul", "sched")
    prog = next(op for op in doc.body if op.name == "program")
    ren = {s: new for s, new in zip(prog.attrs["scalars"], ["T", "S", "B"])}
    loops = [op for op in prog.walk() if op.name == "for"]
    ren.update({lp.attrs["var"]: new for lp, new in zip(loops, ["t0", "i1", "k1"])})
    assert loops and prog.attrs["scalars"]
    env = {k: E.sym(v) for k, v in ren.items()}
    for op in prog.walk():
        op.attrs = E.substitute_attrs(op.attrs, env)
        if op.name == "for":
            op.attrs["var"] = ren[op.attrs["var"]]
    prog.attrs["scalars"] = [ren.get(s, s) for s in prog.attrs["scalars"]]
    for op in prog.regions[0]:
        if op.name == "arg":
            t = op.result.type
            op.result.type = type(t)(t.dtype, tuple(E.substitute(d, env) for d in t.shape))
    doc = parse_ir(serde.dumps(doc), "x.ir")
    rec = pypto.run(doc, backend=backend, bind=ex.bind("matmul"))
    assert rec.body[0].attrs["verdict"] == "pass"


@pytest.mark.parametrize("edit, want", [
    (lambda p: p.regions[0][-1].attrs.update(offsets=[E.sym("B"), 0]), "not bound there"),
    (lambda p: p.regions[0][-1].attrs.update(offsets=[E.sym("x_0"), 0]), "not bound there"),
    (lambda p: p.regions[0][-1].attrs.update(offsets=[E.add(E.sym("g0"), 2 ** 70), 0]),
     "out of range"),
    (lambda p: p.attrs.update(scalars=["s0; int x"]), "must be a name"),
])
def test_program_expressions_name_only_what_the_program_binds(ex, edit, want):
    """Inside a program, expressions see its grid variables, its scalars and its loops;
    nothing else (not the document's own symbols), and only ints that fit."""
    doc = ex.doc("softmax", "exec")
    prog = next(op for op in doc.body if op.name == "program")
    assert prog.regions[0][-1].name == "tstore"
    edit(prog)
    with pytest.raises(InputError, match=want):
        parse_ir(serde.dumps(doc), "evil.ir")


def test_a_loop_may_not_rebind_a_name(ex):
    doc = ex.doc("matmul", "exec")
    loop = next(op for op in doc.walk() if op.name == "for")
    loop.attrs["var"] = "g0"
    with pytest.raises(InputError, match="variable 'g0' is already bound here"):
        parse_ir(serde.dumps(doc), "evil.ir")


# -- source carried by code-level files --------------------------------------------------------

@pytest.mark.needs_cc
def test_c_source_that_is_not_the_emitters_is_refused(ex, tmp_path, marker):
    doc = ex.doc("add", "code")
    src = code_op(doc).attrs["source"]
    code_op(doc).attrs["source"] = src + (
        f'\n__attribute__((constructor)) static void evil(void) {{ '
        f'FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    f = tmp_path / "evil.code"
    f.write_bytes(serde.dumps(doc))
    with pytest.raises(InputError, match="differs from what pypto-emit makes"):
        pypto.run(parse_ir(f.read_bytes(), "evil.code"))
    p = tool("pypto-run", str(f), "-o", os.devnull)
    assert p.returncode == 2 and "--trust-code" in p.stderr, p.stderr


@pytest.mark.needs_cc
def test_trust_code_runs_hand_edited_c(ex, tmp_path):
    """--trust-code is the one way to run C that is not the emitter's (a hand-tuned kernel)."""
    doc = ex.doc("add", "code")
    code_op(doc).attrs["source"] += "\n/* tuned by hand */\n"
    f = tmp_path / "tuned.code"
    f.write_bytes(serde.dumps(doc))
    p = tool("pypto-run", str(f), "-o", os.devnull)
    assert p.returncode == 2 and "--trust-code" in p.stderr, p.stderr
    p = tool("pypto-run", str(f), "--trust-code", "-o", os.devnull)
    assert p.returncode == 0 and ": pass" in p.stderr, p.stderr


def test_numpy_source_is_never_executed(ex, marker):
    """The numpy backend walks the programs; its source is a listing that nothing runs."""
    doc = ex.doc("add", "sched")
    doc = pypto.emit(doc, "numpy")
    code_op(doc).attrs["source"] = marker_payload(marker) + "\n" + code_op(doc).attrs["source"]
    rec = pypto.run(parse_ir(serde.dumps(doc), "x.code"), seed=1)
    assert rec.body[0].attrs["verdict"] == "pass"


# -- paths -------------------------------------------------------------------------------------

def test_a_target_in_a_file_is_a_record_never_a_path(ex):
    doc = ex.doc("softmax", "exec")
    rec = copy.deepcopy(doc.attrs["target"])
    rec["name"] = "/no/such/dir/target.toml"
    doc.attrs["target"] = rec
    s = pypto.schedule(parse_ir(serde.dumps(doc), "x.ir"))
    sched = next(op for op in s.body if op.name == "schedule")
    assert sched.attrs["target"] == "/no/such/dir/target.toml"     # a name, nothing opened
    doc.attrs["target"] = {"name": "/dev/zero"}
    with pytest.raises(PyptoError, match="module target needs clock_ghz, cores"):
        parse_ir(serde.dumps(doc), "x.ir")


@pytest.mark.parametrize("edit, want", [
    (lambda p: p.update(buffers={"ub": "1; evil"}), "pro"),
    (lambda p: p.update(scalars=[["n", "f32); system(\"x\""]]), "pro"),
    (lambda p: p.update(scalars=[["n x", "i32"]]), "pro"),
    (lambda p: p.pop("mixed"), "pro"),
])
def test_a_pro_kernels_launch_facts_are_checked(edit, want):
    """The Pro runner and its C renderer read the module's `pro` record: it has a grammar."""
    doc = pypto.trace(str(pathlib.Path(__file__).resolve().parents[2] / "examples/pro/vadd.py"))
    edit(doc.attrs["pro"])
    with pytest.raises(InputError, match=want):
        parse_ir(serde.dumps(doc), "evil.ir")
