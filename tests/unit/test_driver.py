"""libpypto.driver and the package API: reading IR, tracing, bringing documents forward."""
from __future__ import annotations

import pathlib

import pytest

import libpypto as pypto
from libpypto.driver import dump_ir, parse_ir
from libpypto.errors import CompileError, InputError, UsageError, VerifyError
from libpypto.ir import serde
from libpypto.ir.core import LEVELS
from libpypto.ir.text import print_doc

TWO_KERNELS = '''import libpypto as pypto

@pypto.jit
def first(x: pypto.Tensor[[64, 256], pypto.DT_FP32], y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    y[:] = pypto.exp(x)

@pypto.jit
def second(x: pypto.Tensor[[64, 256], pypto.DT_FP32], y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    y[:] = x + x
'''


# -- reading ---------------------------------------------------------------------------------

def test_parse_ir_accepts_msgpack_and_text(ex):
    docs = ex.docs("softmax")
    for level, doc in docs.items():
        b = serde.dumps(doc)
        assert serde.dumps(parse_ir(b, "x")) == b
        assert serde.dumps(parse_ir(print_doc(doc).encode(), "x")) == b
        commented = "# a comment\n\n" + print_doc(doc)
        assert serde.dumps(parse_ir(commented.encode(), "x")) == b


@pytest.mark.parametrize("data, message", [
    (b"", "f.ir: empty input"),
    (b"\xff\xfe\x00binary", "f.ir: not a pypto IR file (binary data that is not msgpack)"),
    (b"hello\n", "f.ir: not a pypto IR file (expected msgpack, the text form 'pypto-ir ...' or "
                 "an op file ending in .py)"),
    (b"# just a comment\n", "f.ir: not a pypto IR file"),
    (b"pypto-ir 1.1 tensor\n%a = exp %b\n", "f.ir: line 2: use of undefined value %b"),
    (b"pypto-ir 2.0 tensor\n", "f.ir: IR format version 2.0 is not readable"),
    (b"\x80", "f.ir: not a pypto IR file (no 'pypto-ir' header)"),
])
def test_parse_ir_errors(data, message):
    with pytest.raises(InputError) as exc:
        parse_ir(data, "f.ir")
    assert str(exc.value).startswith(message)
    assert exc.value.exit_code == 2


def test_read_ir(ex, tmp_path):
    f = tmp_path / "s.ir"
    f.write_bytes(ex.bytes("softmax")["exec"])
    assert pypto.read_ir(str(f)).level == "exec"
    assert pypto.read_ir(ex.path("softmax")).level == "tensor"
    with pytest.raises(InputError, match="nosuch.ir: no such file"):
        pypto.read_ir(str(tmp_path / "nosuch.ir"))
    with pytest.raises(InputError, match="nosuch.py: no such file"):
        pypto.read_ir(str(tmp_path / "nosuch.py"))


def test_write_ir_and_dump_ir(ex, tmp_path):
    doc = ex.doc("softmax", "tile")
    pypto.write_ir(doc, str(tmp_path / "t.ir"))
    pypto.write_ir(doc, str(tmp_path / "t.txt"), text=True)
    assert (tmp_path / "t.ir").read_bytes() == serde.dumps(doc)
    assert (tmp_path / "t.txt").read_text() == print_doc(doc)
    bad = ex.doc("softmax", "tensor")
    next(op for op in bad.body if op.name == "exp").name = "frob"
    with pytest.raises(VerifyError, match="invalid tensor-level graph before writing: unknown "
                                          "tensor-level op 'frob'"):
        dump_ir(bad)


# -- tracing -----------------------------------------------------------------------------------

def test_trace_picks_a_kernel(tmp_path):
    f = tmp_path / "two.py"
    f.write_text(TWO_KERNELS)
    with pytest.raises(UsageError, match=r"two.py defines several kernels \(first, second\); "
                                         r"pick one with .*--kernel NAME"):
        pypto.trace(str(f))
    assert pypto.trace(str(f), kernel="second").attrs["kernel"] == "second"
    with pytest.raises(UsageError, match=r"no kernel 'third' in two.py \(kernels: first, "
                                         r"second\)"):
        pypto.trace(str(f), kernel="third")


def test_trace_constants(ex):
    default = pypto.trace(ex.path("rmsnorm"))
    assert default.attrs["consts"] == {"eps": 1e-06}
    changed = pypto.trace(ex.path("rmsnorm"), consts={"eps": 1e-5})
    assert changed.attrs["consts"] == {"eps": 1e-5}
    assert serde.dumps(changed) != serde.dumps(default)


def test_trace_records_the_file_name_only(ex, example):
    doc = pypto.trace(ex.path(example))
    assert doc.level == "tensor" and doc.attrs["file"] == f"{example}.py"
    assert doc.attrs["kernel"] == example
    assert str(pathlib.Path(ex.path(example)).parent) not in print_doc(doc)


def test_trace_errors_carry_the_op_file_line(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("import libpypto as pypto\n\nraise RuntimeError('at import')\n")
    with pytest.raises(CompileError) as exc:
        pypto.trace(str(f))
    assert str(exc.value) == "bad.py:3: op file raised RuntimeError: at import"


# -- bringing forward --------------------------------------------------------------------------

def test_each_call_brings_earlier_levels_forward(ex):
    docs = ex.docs("softmax")
    bind = ex.bind("softmax")
    for level in LEVELS[:LEVELS.index("exec") + 1]:
        assert pypto.lower(docs[level]).level == "exec"
    for level in LEVELS[:LEVELS.index("sched") + 1]:
        s = pypto.schedule(docs[level], "a2", bind)
        assert s.level == "sched"
        assert sum(op.name == "schedule" for op in s.body) == 1
    for level in LEVELS[:LEVELS.index("code") + 1]:
        c = pypto.emit(docs[level])
        assert c.level == "code" and sum(op.name == "code" for op in c.body) == 1


def test_rescheduling_and_reemitting_replace_the_old_result(ex):
    docs = ex.docs("softmax")
    again = pypto.schedule(docs["sched"], "a2", ex.bind("softmax"))
    assert serde.dumps(again) == ex.bytes("softmax")["sched"]
    numpy_code = pypto.emit(docs["code"], "numpy")
    codes = [op for op in numpy_code.body if op.name == "code"]
    assert len(codes) == 1 and codes[0].attrs["backend"] == "numpy"


@pytest.mark.parametrize("fn, level, message", [
    (pypto.lower, "sched", "got a 'sched' file, past what pypto-lower makes (try pypto-emit)"),
    (pypto.schedule, "code", "got a 'code' file, past what pypto-sched makes (try pypto-run)"),
])
def test_levels_past_the_call_are_refused(ex, fn, level, message):
    with pytest.raises(InputError) as exc:
        fn(ex.doc("softmax", level))
    assert str(exc.value) == message


def test_emit_rejects_unknown_backends(ex):
    with pytest.raises(UsageError, match=r"unknown backend 'fortran' \(known: c, numpy\)"):
        pypto.emit(ex.doc("softmax", "sched"), "fortran")


def test_schedule_places_instances_only_with_sizes(ex):
    dynamic = pypto.schedule(ex.doc("softmax", "exec"), "a2")
    s = next(op for op in dynamic.body if op.name == "schedule").attrs
    assert not s.get("instances")
    bound = pypto.schedule(ex.doc("softmax", "exec"), "a2", {"x_0": 100})
    s = next(op for op in bound.body if op.name == "schedule").attrs
    assert s["instances"] and s["bindings"]["x_0"] == 100
    static = pypto.schedule(ex.doc("add", "exec"), "a2")
    assert next(op for op in static.body if op.name == "schedule").attrs["instances"]


def test_run_and_profile_on_the_numpy_backend(ex):
    rec = pypto.run(ex.doc("softmax", "tensor"), bind={"x_0": 20}, backend="numpy", threads=1,
                    seed=3)
    a = rec.body[0].attrs
    assert rec.level == "run" and a["verdict"] == "pass" and a["backend"] == "numpy"
    assert a["bindings"]["x_0"] == 20
    with pytest.raises(InputError, match="got a 'run' file, past what pypto-run makes"):
        pypto.run(rec)
    report = pypto.profile(rec)
    assert "softmax" in str(report)


# -- the package API ---------------------------------------------------------------------------

def test_every_lazy_name_resolves():
    for name in pypto._LAZY:
        assert getattr(pypto, name) is not None, name
    assert set(pypto._LAZY) <= set(dir(pypto))
    with pytest.raises(AttributeError, match="no attribute '_nope'"):
        pypto._nope
    with pytest.raises(AttributeError):
        pypto.definitely_not_an_op_name


def test_version_matches_pyproject(ex):
    import tomllib
    root = pathlib.Path(ex.path("add")).parents[1]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert pypto.__version__ == meta["project"]["version"]


# -- targets -----------------------------------------------------------------------------------

def test_documents_carry_the_whole_target_record(ex):
    from libpypto.targets import load_target
    a2 = load_target("a2")
    exe = pypto.lower(ex.docs("softmax")["tensor"], None, "a2")
    assert exe.attrs["target"] == a2.record()
    sched = pypto.schedule(exe)                  # no --target: the record is the target
    s = next(op for op in sched.body if op.name == "schedule")
    assert s.attrs["target"] == "a2" and s.attrs["cores"] == a2.cores()


def test_a_version_1_0_record_of_a_builtin_target_is_completed(ex):
    """Files written before 1.1 carried name, align, buffers and mixed_programs only."""
    exe = pypto.lower(ex.docs("softmax")["tensor"], None, "a3")
    full = exe.attrs["target"]
    exe.attrs["target"] = {"name": "a3", "align": 32, "mixed_programs": False,
                           "buffers": dict(full["buffers"])}
    exe.version = (1, 0)
    old = parse_ir(serde.dumps(exe), "old.ir")
    assert old.version == (1, 1) and old.attrs["target"]["compute"]     # brought up to 1.1
    s = next(op for op in pypto.schedule(old).body if op.name == "schedule")
    assert s.attrs["target"] == "a3"


def test_a_target_record_that_is_not_one_is_refused(ex):
    exe = pypto.lower(ex.docs("softmax")["tensor"])
    exe.attrs["target"] = {"name": "/dev/zero", "buffers": {}}
    with pytest.raises(InputError, match="bad.ir: module target needs clock_ghz"):
        parse_ir(serde.dumps(exe), "bad.ir")
