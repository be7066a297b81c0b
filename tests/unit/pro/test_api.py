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
