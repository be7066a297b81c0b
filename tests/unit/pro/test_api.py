"""The Pro API items added after the first merge: @pl.jit(datatype=), subview, insert into
Mat, store/move options (relu, scale, atomic add), bias tiles and matmul with a bias. Every
result is checked against numpy, in process and through the pipe."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.errors import CompileError, UsageError

from . import kernels_api as K

RNG = np.random.default_rng(11)
ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
KFILE = str(Path(K.__file__))


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# -- datatype= ------------------------------------------------------------------------------

def _axpy(dt, n=37, bd=3, backend="numpy"):
    x, y = rand(n, 64, dtype=dt), rand(n, 64, dtype=dt)
    z = np.zeros_like(x)
    d = pl.DT_FP16 if dt == np.float16 else pl.DT_FP32
    K.dt_axpy.backend = backend
    try:
        K.dt_axpy[None, bd, {"x": d, "y": d, "z": d}](x, y, z)
    finally:
        K.dt_axpy.backend = "numpy"
    return x, y, z


def test_datatype_two_dtypes_in_one_process():
    k = K.dt_axpy
    k._cache.clear()
    before = k.compiles
    x, y, z = _axpy(np.float32)
    assert np.array_equal(z, x + y)
    x, y, z = _axpy(np.float16)                 # the fp16 arm of `if T == pl.DT_FP16`
    assert np.array_equal(z, x * y)
    _axpy(np.float32, n=5)                       # cached: a DYNAMIC dim never recompiles
    _axpy(np.float16, n=70, bd=2)
    x = rand(4, 64, dtype=np.float16)
    k[None, 1, {"x": "f16", "y": "fp16", "z": "DT_FP16"}](x, x, x.copy())   # names: cached
    assert k.compiles - before == 2
    assert k.last_doc.attrs["pro"]["datatype"] == {"x": "f16", "y": "f16", "z": "f16"}


def test_datatype_c_backend_matches_numpy():
    x, y, z = _axpy(np.float16, backend="c")
    assert np.array_equal(z, x * y)


def test_datatype_with_tiling_key_and_two_variables():
    x = rand(16, 64)
    for scale in (1, 3):
        z = np.zeros((16, 64), np.float16)
        K.dt_cast_scale[None, 1, {"Scale": scale}, {"x": pl.DT_FP32, "z": pl.DT_FP16}](x, z)
        assert np.array_equal(z, (x * np.float32(scale)).astype(np.float16))
    z32 = np.zeros((16, 64), np.float32)
    K.dt_cast_scale[None, 1, {"Scale": 3}, {"x": "f32", "z": "fp32"}](x, z32)
    assert np.array_equal(z32, x * np.float32(3))


@pytest.mark.parametrize("dts,msg", [
    ({"x": pl.DT_FP16, "y": pl.DT_FP32, "z": pl.DT_FP16}, "different dtypes"),
    ({"x": pl.DT_FP16, "y": pl.DT_FP16}, "no dtype for datatype parameter"),
    ({"x": "f13", "y": pl.DT_FP16, "z": pl.DT_FP16}, "must be a pl.DT_"),
    ({"x": pl.DT_FP16, "y": pl.DT_FP16, "z": pl.DT_FP16, "w": pl.DT_FP16}, "does not list"),
])
def test_datatype_bad_launch_dicts(dts, msg):
    x = rand(4, 64, dtype=np.float16)
    with pytest.raises(CompileError, match=msg):
        K.dt_axpy[None, 1, dts](x, x, x.copy())


def test_datatype_array_must_have_the_launch_dtype():
    x = rand(4, 64)
    d = pl.DT_FP16
    with pytest.raises(UsageError, match="float16|f16"):
        K.dt_axpy[None, 1, {"x": d, "y": d, "z": d}](x, x, x.copy())


def test_datatype_kernel_needs_the_bracket_launch():
    x = rand(4, 64)
    with pytest.raises(CompileError, match=r"dt_axpy\[stream, block_dim, dtypes\]"):
        K.dt_axpy(x, x, x.copy())
    with pytest.raises(CompileError, match="key, dtypes"):
        K.dt_cast_scale[None, 1, {"Scale": 1}](x, x.copy())


def test_datatype_schema_errors():
    with pytest.raises(CompileError, match="non-empty dict"):
        pl.jit(datatype=["x"])(lambda x: None)
    with pytest.raises(CompileError, match="identifier"):
        pl.jit(datatype={"x": "not a name"})(lambda x: None)
    for name, msg in (("bad_dt_missing", "not parameters"), ("bad_dt_clash", "clash"),
                      ("bad_dt_concrete", "annotate it"), ("bad_dt_unlisted", "does not list")):
        with pytest.raises(CompileError, match=msg):
            getattr(K, name).params


def test_datatype_through_the_pipe(tmp_path):
    ir = tmp_path / "dt.ir"
    consts = [a for p in "xyz" for a in ("--const", f"{p}=f16")]
    r = subprocess.run([str(BIN / "pypto-trace"), KFILE, "--kernel", "dt_axpy", *consts,
                        "-o", str(ir)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(BIN / "pypto-run"), str(ir), "--block-dim", "2", "--bind",
                        "x_0=40", "-S", "-o", "/dev/null"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(BIN / "pypto-trace"), KFILE, "--kernel", "dt_axpy", "-o",
                        str(ir)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "--const x=f16" in r.stderr


# -- bias tiles, store options, order, insert into Mat, subview --------------------------------

BACKENDS = ["numpy", "c"]


def _launch(k, backend, *args, bd=None):
    k.backend = backend
    try:
        return (k[bd] if bd else k)(*args)
    finally:
        k.backend = "numpy"


@pytest.mark.parametrize("backend", BACKENDS)
def test_matmul_with_bias_and_relu_store(backend):
    a, b = rand(32, 64, dtype=np.float16), rand(64, 32, dtype=np.float16)
    bias = rand(1, 32, dtype=np.float16)
    c, r = np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float16)
    _launch(K.mm_bias, backend, a, b, bias, c, r)
    ref = a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(r.astype(np.float32), np.maximum(ref, 0), rtol=1e-3, atol=1e-3)
    assert (r >= 0).all() and (ref < 0).any()


def test_bias_listing_and_pipes():
    _launch(K.mm_bias, "c", *[np.zeros(s, d) for s, d in (
        ((32, 64), np.float16), ((64, 32), np.float16), ((1, 32), np.float16),
        ((32, 32), np.float32), ((32, 32), np.float16))])
    listing = [op for op in K.mm_bias.last_doc.body if op.name == "code"][0].attrs["listing"]
    assert "MTE1  TMOV BIAS@0x00000, L1@0x02000" in listing
    assert "M     TMATMUL_BIAS" in listing and "; relu" in listing
    assert K.mm_bias.last_doc.attrs["pro"]["buffers"]["bias"] == 1024     # a2's bias table


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantising_and_dequantising_stores(backend):
    a = RNG.integers(-20, 20, (32, 64)).astype(np.int8)
    b = RNG.integers(-20, 20, (64, 32)).astype(np.int8)
    q, h = np.zeros((32, 32), np.int8), np.zeros((32, 32), np.float16)
    _launch(K.mm_quant, backend, a, b, q, h, 0.125)
    acc = a.astype(np.int64) @ b.astype(np.int64)
    want_q = np.clip(np.rint(acc.astype(np.float32) * np.float32(0.05)), -128, 127)
    assert np.array_equal(q, want_q.astype(np.int8))
    assert (q == 127).any() and (q == -128).any()                   # saturation was needed
    want_h = (np.maximum(acc, 0).astype(np.float32) * np.float32(0.125)).astype(np.float16)
    assert np.array_equal(h, want_h)


@pytest.mark.parametrize("backend", BACKENDS)
def test_atomic_add_store(backend):
    x, out = rand(64, 64), rand(16, 64)
    want = out.copy()
    for t in (0, 3, 1, 2):          # bd 3: cluster 0 adds blocks 0 and 3, then 1, then 2
        want = want + x[16 * t:16 * (t + 1)]
    _launch(K.atomic_rows, backend, x, out, bd=3)
    assert np.array_equal(out, want)


def test_atomic_add_is_thread_count_invariant():
    x = rand(160, 64)
    outs = []
    for threads in (1, 2, 4):
        out = np.zeros((16, 64), np.float32)
        K.atomic_rows.threads = threads
        _launch(K.atomic_rows, "c", x, out, bd=7)
        outs.append(out)
    K.atomic_rows.threads = None
    assert all(np.array_equal(o, outs[0]) for o in outs)
    np.testing.assert_allclose(outs[0], x.reshape(10, 16, 64).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_load_with_order(backend):
    x, y = rand(4, 8, 64), np.zeros((8, 4, 64), np.float32)
    _launch(K.ordered, backend, x, y)
    assert np.array_equal(y, x.transpose(1, 0, 2) * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_insert_into_mat_from_both_vector_cores(backend):
    x, y, rhs = rand(64, 64), rand(64, 64), rand(64, 64)
    out = np.zeros((64, 64), np.float32)
    _launch(K.insert_matmul, backend, x, y, rhs, out, bd=1)   # its two vector cores insert
    np.testing.assert_allclose(out, (x + y) @ rhs, rtol=1e-5, atol=1e-4)
    vec = [op for op in K.insert_matmul.last_doc.body if op.name == "program" and
           op.attrs["core"] == "vector"][0]
    pipes = {op.attrs["pipe"] for top in vec.regions[0] for op in top.walk()
             if op.name == "tinsert"}
    assert pipes == {"MTE3"}                            # UB -> L1 on MTE3, as the reference


def test_insert_into_mat_without_the_handshake_is_a_race():
    from libpypto.runtime.pro_check import SyncError
    with pytest.raises(SyncError, match="MTE3"):
        K.insert_nosync[1](rand(64, 64), rand(64, 64), rand(64, 64), np.zeros((64, 64),
                                                                              np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_subview_store_and_clamp(backend):
    a = rand(8, 64, dtype=np.float16)
    out, out2 = np.zeros((4, 34), np.float16), np.full((4, 24), 7, np.float16)
    _launch(K.sub_store, backend, a, out, out2, 5)
    assert np.array_equal(out, a[2:6, 16:50])
    assert np.array_equal(out2[:3], a[2:5, 16:40]) and (out2[3:] == 7).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_subview_computes_in_place(backend):
    x, y = rand(16, 64), np.zeros((16, 64), np.float32)
    _launch(K.sub_compute, backend, x, y)
    want = x.copy()
    want[:, 32:] *= 2
    assert np.array_equal(y, want)


def test_subview_bytes_are_the_parents():
    from libpypto.runtime.pro_check import SyncError
    with pytest.raises(SyncError, match=r"tload on MTE2 .* tstore on MTE3 .*sync_src"):
        K.sub_race(rand(16, 64), np.zeros((16, 32), np.float32))


# -- misuse: each is a CompileError naming the op file line ------------------------------------

ERR_HEAD = """\
import libpypto.pro as pl
F32, F16 = pl.DT_FP32, pl.DT_FP16
VEC = pl.TileType([16, 64], F32, pl.MemorySpace.Vec)
ACC = pl.TileType([16, 64], F32, pl.MemorySpace.Acc)
MAT = pl.TileType([16, 64], F32, pl.MemorySpace.Mat)

@pl.jit
def k(x: pl.Tensor[[16, 64], F32], y: pl.Tensor[[4, 16, 64], F32], n: pl.DT_INT32, f: F32):
"""
VEC_BODY = "a = pl.make_tile(VEC, addr=0)\nwith pl.section_vector():\n    {}\n"
CUBE_BODY = ("c = pl.make_tile(ACC, addr=0)\nm = pl.make_tile(MAT, addr=0)\n"
             "with pl.section_cube():\n    {}\n")
MIXED_BODY = ("m = pl.make_tile(MAT, addr=0)\nwith pl.section_cube():\n    pl.load(m, x, [0, 0])\n"
              "with pl.section_vector():\n    a = pl.make_tile(VEC, addr=0)\n    {}\n")
BIAS = "pl.make_tile(pl.TileType([1, {}], F32, pl.MemorySpace.Bias), addr={})"


@pytest.mark.parametrize("body,line,msg", [
    (VEC_BODY.format("pl.store(x, a, [0, 0], relu_pre_mode=pl.ReluPreMode.NormalRelu)"), 3,
     "fixpipe options, for an Acc source"),
    (CUBE_BODY.format("pl.store(x, c, [0, 0], scale=n)"), 4, "runtime FP32 scalar"),
    (CUBE_BODY.format("pl.store(x, c, [0, 0], scale=m)"), 4, "per-channel scale tile"),
    (VEC_BODY.format("pl.store(x, a, [0, 0], atomic='add')"), 3, "AtomicNone or AtomicAdd"),
    (VEC_BODY.format("pl.load(a, y, [0, 0, 0], order=[1, 1])"), 3, "two distinct"),
    (VEC_BODY.format("pl.load(a, y, [0, 0, 0], order=[0, 3])"), 3, "two distinct tensor axes"),
    (VEC_BODY.format("pl.store(x, a[n:8, 0:64], [0, 0])"), 3, "compile-time int"),
    (VEC_BODY.format("pl.store(x, a[0:8:2, 0:64], [0, 0])"), 3, "takes two slices"),
    (VEC_BODY.format("pl.store(x, a[0:17, 0:64], [0, 0])"), 3, "stop must be"),
    (CUBE_BODY.format("pl.load(m, x, [0, 0]); s = m[0:8, 0:64]"), 4, "subviews are of Vec"),
    (CUBE_BODY.format("b = pl.make_tile(pl.TileType([2, 64], F32, pl.MemorySpace.Bias), "
                      "addr=0)"), 4, "one row of the accumulator's dtype"),
    (CUBE_BODY.format("b = " + BIAS.format(512, 0) + "; pl.move(b, m)"), 4,
     "does not fit the 1024-byte Bias buffer"),
    (CUBE_BODY.format("b = " + BIAS.format(64, 16) + "; pl.move(b, m)"), 4, "32-byte aligned"),
    (CUBE_BODY.format("b = " + BIAS.format(64, 0) + "; pl.move(b, c)"), 4,
     "move into Bias takes a Mat tile"),
    (CUBE_BODY.format("pl.move(c, c, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)"), 4,
     "acc_to_vec_mode"),
    (CUBE_BODY.format("pl.move(c, c, relu_pre_mode=pl.ReluPreMode.NormalRelu)"), 4,
     "use pl.store's options"),
    (MIXED_BODY.format("pl.insert(m, a, [0, 0])"), 6, "takes an NZ source"),
    (MIXED_BODY.format("pl.insert(a, m, [0, 0])"), 6, "Vec -> Vec and Vec -> Mat"),
])
def test_api_misuse(tmp_path, body, line, msg):
    import importlib.util
    import textwrap
    from libpypto.driver import pro_trace
    path = tmp_path / "op.py"
    path.write_text(ERR_HEAD + textwrap.indent(body, "    "))
    spec = importlib.util.spec_from_file_location(f"op_{abs(hash(body))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(CompileError, match=msg) as e:
        pro_trace(mod.k)
    assert e.value.loc is not None and e.value.loc.line == ERR_HEAD.count("\n") + line


def test_matmul_bias_must_match_the_accumulator():
    from libpypto.driver import pro_trace
    with pytest.raises(CompileError, match=r"must be a \[1, 32\] MemorySpace.Bias tile"):
        pro_trace(K.bad_bias)


def test_unsynced_bias_move_is_a_race():
    from libpypto.runtime.pro_check import SyncError
    a, b = rand(32, 64, dtype=np.float16), rand(64, 32, dtype=np.float16)
    with pytest.raises(SyncError, match=r"tmov on MTE1 .* tmatmul on M .*bias bytes"):
        K.mm_bias_late(a, b, rand(1, 32, dtype=np.float16), np.zeros((32, 32), np.float32))


def test_bias_capacity_follows_the_arch():
    from libpypto.driver import pro_trace
    with pytest.raises(CompileError, match="1024-byte Bias buffer"):
        pro_trace(K.big_bias)
    k = pl.jit(arch="a5")(K.big_bias.fn)
    a, b, bias = rand(16, 16, dtype=np.float16), rand(16, 512, dtype=np.float16), rand(1, 512)
    c = np.zeros((16, 512), np.float32)
    k(a, b, bias, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias,
                               rtol=1e-5, atol=1e-4)
    assert k.last_doc.attrs["pro"]["buffers"]["bias"] == 4096


@pytest.mark.parametrize("backend", BACKENDS)
def test_move_of_a_sub_block_inserts(backend):
    x, y = rand(8, 32), np.full((16, 64), 5.0, np.float32)
    _launch(K.move_insert, backend, x, y)
    want = np.zeros((16, 64), np.float32)
    want[4:12, 16:48] = x
    assert np.array_equal(y, want)


def test_vec_to_mat_move_is_an_insert_on_mte3():
    from libpypto.driver import pro_trace
    doc = pro_trace(K.vec_to_mat)
    ops = [op for p in doc.body if p.name == "program" for top in p.regions[0]
           for op in top.walk() if op.name in ("tinsert", "tmov")]
    assert [(op.name, op.attrs["pipe"]) for op in ops] == [("tinsert", "MTE3")]
    from libpypto.runtime.pro_check import SyncError
    x, y, z = rand(16, 64), rand(16, 64), np.zeros((32, 64), np.float32)
    with pytest.raises(SyncError, match=r"write after write\) on cores 1 and 2: tinsert on "
                                        r"MTE3 .* tile t0 \(l1 bytes"):
        K.vec_to_mat[1](x, y, z)   # both vector cores write the cluster's whole L1 tile


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [48, 37])
def test_transposing_load(backend, n):
    x = rand(n, 64)
    y = np.full((64, n), 9.0, np.float32)
    _launch(K.transposed, backend, x, y, bd=2)
    assert np.array_equal(y, x.T)


def test_store_refuses_a_descending_order(tmp_path):
    import importlib.util
    from libpypto.driver import pro_trace
    path = tmp_path / "op.py"
    path.write_text(ERR_HEAD + "    a = pl.make_tile(VEC, addr=0)\n    with pl.section_vector():"
                    "\n        pl.store(y, a, [0, 0, 0], order=[2, 1])\n")
    spec = importlib.util.spec_from_file_location("op_desc", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(CompileError, match="ascending orders only"):
        pro_trace(mod.k)
