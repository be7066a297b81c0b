"""Vector math in the generated C (c_prelude.h): accuracy against numpy in float64, and the
vector variants really called; fp16 conversions exact.

Bounds are in units in the last place of the result's dtype (ulp of the float64 reference's
value there, subnormal spacing below the normal range). For fp32 they are glibc libmvec's
documented bound for its float variants (4 ulp; the scalar libm functions that take a loop's
tail are within it too) plus the roundings of the formula around the call (sigmoid:
1 / (1 + exp(-x)) rounds twice more); each function's measured maximum on these inputs is
inside (fp32 on this machine's AVX-512 variants: cos 1.7, sin 1.6, tanh 1.4, exp 2.3,
log 2.8, sigmoid 3.0, rsqrt 1.4 and erf 3.97, where erff rounds to 1 just below it). For fp16 and bf16 the float32 result is rounded once to the dtype:
half an ulp, plus what the float32 error adds after that rounding, so 1 ulp.
Inputs: 8 rows of 1000 (not a multiple of any vector width: the vectorised body, the
narrower epilogue and the scalar tail all run), spread over each function's useful range.
"""
# no `from __future__ import annotations`: the kernels' annotations use local names
import math

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.jit import call_kernel
from libpypto.runtime import code_op
from libpypto.runtime.compiler import compile_shared, find_cc, mvec_flags, runtime_source

pytestmark = pytest.mark.needs_cc

SHAPE = (8, 1000)
ERF = np.vectorize(math.erf)
# name: (frontend op, float64 reference, input sampler(rng, n) -> array, fp32 ulp bound)
FUNCS = {
    "exp": (pypto.exp, np.exp, lambda g, n: g.uniform(-87, 88, n), 4),
    "log": (pypto.log, np.log, lambda g, n: np.exp(g.uniform(-80, 80, n)), 4),
    "tanh": (pypto.tanh, np.tanh, lambda g, n: g.uniform(-12, 12, n), 4),
    "erf": (pypto.erf, ERF, lambda g, n: g.uniform(-5, 5, n), 4),
    "sigmoid": (pypto.sigmoid, lambda x: 1 / (1 + np.exp(-x)),
                lambda g, n: g.uniform(-80, 30, n), 6),
    "sin": (pypto.sin, np.sin, lambda g, n: g.uniform(-100, 100, n), 4),
    "cos": (pypto.cos, np.cos, lambda g, n: g.uniform(-100, 100, n), 4),
    "rsqrt": (pypto.rsqrt, lambda x: 1 / np.sqrt(x), lambda g, n: np.exp(g.uniform(-80, 80, n)),
              2),
}
POW_ULP = 4          # powf(x, y) for x in (0.05, 20), y in (-8, 8)
MANT = {"f32": 24, "f16": 11, "bf16": 8}
EMIN = {"f32": -126, "f16": -14, "bf16": -126}
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
DT = {"f32": pypto.DT_FP32, "f16": pypto.DT_FP16, "bf16": pypto.DT_BF16}


def ulp_error(got, want, dt: str) -> np.ndarray:
    """|got - want| in ulps of want's value in dtype dt (want in float64)."""
    w = np.abs(want)
    e = np.floor(np.log2(np.where(w > 0, w, 1.0)))
    ulp = np.exp2(np.maximum(e, EMIN[dt]) - (MANT[dt] - 1))
    return np.abs(got.astype(np.float64) - want) / ulp


def _unary_kernel(fn, dt):
    @pypto.jit
    def k(x: pypto.Tensor[list(SHAPE), dt], y: pypto.Tensor[list(SHAPE), dt]):
        pypto.set_vec_tile_shapes(*SHAPE)
        y[:] = fn(x)
    return k


def _run(k, *arrays):
    call_kernel(k, arrays, {}, threads=1)
    return next(iter(k._cache.values())).doc


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_unary_within_its_ulp_bound(name, dt):
    fn, ref, sample, bound = FUNCS[name]
    rng = np.random.default_rng(7)
    big = float(ml_dtypes.finfo(NP[dt]).max) / 2
    x = np.clip(sample(rng, SHAPE), -big, big).astype(NP[dt])
    with np.errstate(all="ignore"):     # keep the reference in range of the narrow dtype
        x = np.where(np.abs(ref(x.astype(np.float64))) < big, x, NP[dt](0.5)).astype(NP[dt])
        want = ref(x.astype(np.float64))
    y = np.zeros(SHAPE, NP[dt])
    _run(_unary_kernel(fn, DT[dt]), x, y)
    with np.errstate(all="ignore"):
        err = ulp_error(y, want, dt)
    limit = bound if dt == "f32" else 1.0
    assert np.all(np.isfinite(y.astype(np.float64)) == np.isfinite(want))
    worst = float(np.nanmax(err))
    assert worst <= limit, f"{name} {dt}: {worst:.2f} ulp > {limit}"


def test_pow_within_its_ulp_bound():
    @pypto.jit
    def k(a: pypto.Tensor[list(SHAPE), pypto.DT_FP32], b: pypto.Tensor[list(SHAPE), pypto.DT_FP32],
          y: pypto.Tensor[list(SHAPE), pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(*SHAPE)
        y[:] = pypto.pow(a, b)
    rng = np.random.default_rng(3)
    a = np.exp(rng.uniform(np.log(0.05), np.log(20), SHAPE)).astype(np.float32)
    b = rng.uniform(-8, 8, SHAPE).astype(np.float32)
    y = np.zeros(SHAPE, np.float32)
    _run(k, a, b, y)
    err = ulp_error(y, np.power(a.astype(np.float64), b.astype(np.float64)), "f32")
    assert float(err.max()) <= POW_ULP


def test_math_loops_call_the_vector_variants():
    """With libmvec, the compiled kernel references its vector variants (gcc vectorised the
    loops over tanhf, erff, expf, sinf and powf)."""
    cc = find_cc()
    if not mvec_flags(cc):
        pytest.skip("this compiler cannot link libmvec: the math stays scalar")

    @pypto.jit
    def k(x: pypto.Tensor[list(SHAPE), pypto.DT_FP32], y: pypto.Tensor[list(SHAPE), pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(*SHAPE)
        y[:] = pypto.tanh(x) + pypto.erf(x) + pypto.exp(x) + pypto.sin(x) + pypto.pow(x, x)
    x = np.random.default_rng(1).uniform(0.5, 2, SHAPE).astype(np.float32)
    doc = _run(k, x, np.zeros(SHAPE, np.float32))
    path, _ = compile_shared(code_op(doc).attrs["source"] + "\n" + runtime_source())
    lib = open(path, "rb").read()
    for fn in (b"v_tanhf", b"v_erff", b"v_expf", b"v_sinf", b"vv_powf"):
        assert any(lib.find(b"_ZGV" + isa + fn) >= 0
                   for isa in (b"eN16", b"dN8", b"cN8", b"bN4")), fn


def _cast_kernel(src, dst, shape):
    @pypto.jit
    def k(x: pypto.Tensor[list(shape), src], y: pypto.Tensor[list(shape), dst]):
        pypto.set_vec_tile_shapes(8, shape[1])
        y[:] = pypto.cast(x, dst)
    return k


def test_fp16_to_fp32_exact_for_every_half():
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16).reshape(256, 256)
    x = bits.view(np.float16)
    y = np.zeros((256, 256), np.float32)
    _run(_cast_kernel(pypto.DT_FP16, pypto.DT_FP32, (256, 256)), x, y)
    want = x.astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(y), nan)
    assert np.array_equal(y[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_fp32_to_fp16_rounds_to_nearest_even():
    """Random bit patterns, and every float near the fp16 edges (subnormals, the largest
    finite value, ties), against numpy's IEEE conversion."""
    rng = np.random.default_rng(5)
    rand = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    edges = [np.float32(v).view(np.uint32) for v in (65504.0, 65519.996, 65520.0, 6.1035156e-05,
                                                      5.9604645e-08, 2.9802322e-08, 2.9802326e-08)]
    near = np.concatenate([np.arange(int(e) - 3000, int(e) + 3000) for e in edges])
    near = near.astype(np.uint32)
    allb = np.concatenate([rand, near, near | np.uint32(0x80000000)])
    allb = np.resize(allb, (len(allb) // 512 + 1) * 512).reshape(-1, 512)
    x = allb.view(np.float32)
    y = np.zeros(x.shape, np.float16)
    _run(_cast_kernel(pypto.DT_FP32, pypto.DT_FP16, x.shape), x, y)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(y), nan)
    assert np.array_equal(y[~nan].view(np.uint16), want[~nan].view(np.uint16))
