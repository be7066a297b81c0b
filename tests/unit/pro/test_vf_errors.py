"""Reg computation: errors (wrong dtype, registers of the wrong lane count, a vector function
outside a vector section, offsets past a tile or unaligned, what is not built), the race
checker on register loads and stores, the IR round trips and thread-count independence."""
import importlib.util
import pathlib
import textwrap

import numpy as np
import pytest

from libpypto import driver
from libpypto.errors import CompileError, PyptoError
from libpypto.ir import serde, text
from libpypto.runtime.compiler import find_cc
from libpypto.runtime.pro_check import SyncError

ROOT = pathlib.Path(__file__).resolve().parents[3]

HEAD = """\
import libpypto.pro as pl
from libpypto.pro import Vf as vf
F32 = pl.DT_FP32
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
TT = pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Vec)

def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)

@pl.vector_function
def body(src, dst, n: pl.DT_INT64):
{vf}

@pl.jit
def k(x: pl.Tensor[[8, 64], F32], y: pl.Tensor[[8, 64], F32], n: pl.DT_INT64):
    a = pl.make_tile(TT, addr=0)
    b = pl.make_tile(TT, addr=2048)
{kernel}
"""

VF = """\
full = vf.create_mask(dtype=pl.DT_FP32)
for m in pl.range(0, n):
    r = vf.load_align(src, [m, 0])
    vf.store_align(dst, vf.exp(r, full), full, [m, 0])
"""

KERNEL = """\
with pl.section_vector():
    pl.load(a, x, [0, 0])
    sync(MTE2, V)
    body(a, b, n)
    sync(V, MTE3)
    pl.store(y, b, [0, 0])
"""


def kernel(tmp_path, vf=VF, body=KERNEL):
    path = tmp_path / "op.py"
    path.write_text(HEAD.format(vf=textwrap.indent(vf, "    "),
                                kernel=textwrap.indent(body, "    ")))
    spec = importlib.util.spec_from_file_location(f"op_{abs(hash(vf + body))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def launch(mod, n=8, backend="numpy"):
    x = np.linspace(-1, 1, 8 * 64, dtype=np.float32).reshape(8, 64)
    y = np.zeros_like(x)
    mod.k.backend = backend
    mod.k(x, y, n)
    return x, y


def test_the_template_runs(tmp_path):
    x, y = launch(kernel(tmp_path))
    assert np.array_equal(y, np.exp(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("vf_body,msg", [
    ("i = vf.load_align(src, 0, dtype=pl.DT_INT32)\nvf.exp(i, vf.create_mask())",
     "vf.exp takes a float register, not vreg.i32[64]"),
    ("r = vf.load_align(src, 0)\nvf.store_align(dst, vf.astype(r, vf.create_mask(), "
     "dtype=pl.DT_FP16), vf.create_mask(dtype=pl.DT_FP16))",
     "a vreg.f16[128] register into a f32 tile"),
    ("h = vf.load_align(src, 0, dtype=pl.DT_FP16)\nvf.add(h, h, vf.create_mask())",
     "a mask of 64 lanes on a register of 128 lanes"),
    ("r = vf.load_align(src, 0)\ni = vf.load_align(src, 0, dtype=pl.DT_INT32)\n"
     "vf.add(r, i, vf.create_mask())", "on registers of different types"),
    ("vf.add(src, src, vf.create_mask())", "must be a vector register"),
    ("r = vf.load_align(src, 3)", "is not 32-byte aligned"),
    ("r = vf.load_align(src, [7, 32])", "runs past its 2048 bytes"),
    ("s = 0\nfor m in pl.range(0, n):\n    s = s + 1", "is updated from its own value"),
    ("r = vf.histograms(src)", "vf.histograms is not built"),
    ("r = vf.load_align(src, 0, post_update=True)", "post_update= is not built"),
])
def test_errors_when_traced(tmp_path, vf_body, msg):
    with pytest.raises(CompileError) as e:
        launch(kernel(tmp_path, vf_body))
    assert msg in str(e.value)
    assert str(e.value).startswith("op.py:")


def test_a_vector_function_outside_a_vector_section(tmp_path):
    cube = KERNEL.replace("    body(a, b, n)\n", "")
    cube += "with pl.section_cube():\n    body(a, b, n)\n"
    with pytest.raises(CompileError, match="runs on a vector core: call it inside "
                                           "pl.section_vector"):
        launch(kernel(tmp_path, body=cube))
    mod = kernel(tmp_path)
    with pytest.raises(CompileError, match="called outside a @pl.jit kernel"):
        mod.body(None, None, 1)
    loose = KERNEL.replace("    body(a, b, n)\n", "    vf.create_mask()\n")
    with pytest.raises(CompileError, match="only inside a @pl.vector_function"):
        launch(kernel(tmp_path, body=loose))


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_a_runtime_offset_past_the_tile_stops_the_run(tmp_path, backend):
    if backend == "c" and find_cc() is None:
        pytest.skip("no C compiler")
    mod = kernel(tmp_path)
    mod.k.check = backend == "numpy"            # the C alone (else the Pro runner first)
    with pytest.raises(PyptoError) as e:
        launch(mod, n=9, backend=backend)       # row 8 of an 8-row tile
    assert e.value.loc.line == 15               # the vf.load_align line
    assert ("runs past its 2048 bytes" if backend == "numpy" else "C backend") in str(e.value)


def test_missing_sync_before_a_register_load_is_a_race(tmp_path):
    with pytest.raises(SyncError) as e:
        launch(kernel(tmp_path, body=KERNEL.replace("    sync(MTE2, V)\n", "")))
    msg = str(e.value)
    assert "race (read after write)" in msg and "tload on MTE2" in msg and "vlds on V" in msg
    assert msg.startswith("op.py:15")          # the vf.load_align line


def test_missing_sync_after_a_register_store_is_a_race(tmp_path):
    with pytest.raises(SyncError) as e:
        launch(kernel(tmp_path, body=KERNEL.replace("    sync(V, MTE3)\n", "")))
    assert "vsts on V" in str(e.value) and "tstore on MTE3" in str(e.value)


def test_ir_round_trips_and_prints_registers():
    doc = driver.trace(str(ROOT / "examples/pro/softmax_vf.py"), "softmax_vf")
    s = text.print_doc(doc)
    assert ": vreg.f32[64]" in s and ": mask.bool[64]" in s and "vcmax " in s
    assert text.print_doc(text.parse_doc(s)) == s
    assert serde.dumps(serde.loads(serde.dumps(doc))) == serde.dumps(doc)
    bad = s.replace(": vreg.f32[64]", ": vreg.f32[32]", 1)
    with pytest.raises(text.TextError, match="a vreg of f32 has 64 lanes, not 32"):
        text.parse_doc(bad)


def test_one_and_two_threads_are_bit_identical():
    spec = importlib.util.spec_from_file_location("softmax_vf_t", ROOT /
                                                  "examples/pro/softmax_vf.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.random.default_rng(3).standard_normal((203, 200)).astype(np.float32) * 4
    outs = []
    for backend in (["numpy", "c"] if find_cc() else ["numpy"]):
        for threads in (1, 2):
            mod.softmax_vf.backend, mod.softmax_vf.threads = backend, threads
            y = np.zeros_like(x)
            mod.softmax_vf[5](x, y)
            outs.append(y.tobytes())
    assert len(set(outs)) == 1
    np.testing.assert_allclose(y, mod.reference(x)["y"], rtol=1e-5, atol=1e-7)


BRANCH = """\
full = vf.create_mask(dtype=pl.DT_FP32)
for m in pl.range(0, 8):
    r = vf.load_align(src, [m, 0])
    if m < n:
        r = vf.exp(r, full)
    else:
        r = vf.neg(r, full)
    vf.store_align(dst, r, full, [m, 0])
"""


@pytest.mark.parametrize("n", [0, 3, 8])
def test_a_runtime_branch_writes_the_variables_register(tmp_path, n):
    mod = kernel(tmp_path, BRANCH)
    x, y = launch(mod, n=n)
    rows = np.arange(8)[:, None] < n
    want = np.where(rows, np.exp(x.astype(np.float64)).astype(np.float32), -x)
    assert np.array_equal(y, want)
    if find_cc() is not None:
        assert np.array_equal(launch(mod, n=n, backend="c")[1], y)
