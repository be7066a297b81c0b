"""Every catalogue op, traced through the JIT, against an independent numpy formula.

Each op runs as its own kernel on the C backend (fp32, fp16, bf16, and the integer dtypes
where the op takes them) and on the numpy backend (fp32), with tolerances that fit the dtype.
"""

import math

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.runtime.data import compare

BF16 = np.dtype(ml_dtypes.bfloat16)
DT = {"f32": (pypto.DT_FP32, np.float32), "f16": (pypto.DT_FP16, np.float16),
      "bf16": (pypto.DT_BF16, BF16), "i32": (pypto.DT_INT32, np.int32),
      "i64": (pypto.DT_INT64, np.int64), "i8": (pypto.DT_INT8, np.int8),
      "bool": (pypto.DT_BOOL, np.bool_)}
SHAPE = (16, 64)
_erf = np.vectorize(math.erf)

# op -> (numpy formula on float64, input domain (lo, hi))
UNARY = {
    "neg": (lambda a: -a, (-3, 3)), "abs": (np.abs, (-3, 3)), "sign": (np.sign, (-3, 3)),
    "reciprocal": (lambda a: 1 / a, (0.5, 3)), "sqrt": (np.sqrt, (0, 4)),
    "rsqrt": (lambda a: 1 / np.sqrt(a), (0.5, 4)), "cbrt": (np.cbrt, (-3, 3)),
    "exp": (np.exp, (-4, 4)), "exp2": (np.exp2, (-4, 4)), "expm1": (np.expm1, (-2, 2)),
    "log": (np.log, (0.1, 4)), "log2": (np.log2, (0.1, 4)), "log10": (np.log10, (0.1, 4)),
    "log1p": (np.log1p, (-0.5, 3)), "sin": (np.sin, (-3, 3)), "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1, 1)), "asin": (np.arcsin, (-0.9, 0.9)),
    "acos": (np.arccos, (-0.9, 0.9)), "atan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-2, 2)), "cosh": (np.cosh, (-2, 2)), "tanh": (np.tanh, (-3, 3)),
    "asinh": (np.arcsinh, (-3, 3)), "acosh": (np.arccosh, (1.1, 4)),
    "atanh": (np.arctanh, (-0.9, 0.9)), "erf": (_erf, (-2, 2)),
    "erfc": (lambda a: 1 - _erf(a), (-2, 2)), "ceil": (np.ceil, (-3, 3)),
    "floor": (np.floor, (-3, 3)), "trunc": (np.trunc, (-3, 3)),
    "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), (-4, 4)), "relu": (lambda a: np.maximum(a, 0), (-3, 3)),
    "silu": (lambda a: a / (1 + np.exp(-a)), (-4, 4)),
    "gelu": (lambda a: 0.5 * a * (1 + _erf(a / np.sqrt(2))), (-3, 3)),
    "round": (np.round, (-3, 3)),
}
BOOL_UNARY = {"isnan": np.isnan, "isfinite": np.isfinite, "signbit": np.signbit,
              "logical_not": lambda a: a == 0}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "pow": np.power, "fmod": np.fmod,
    "remainder": np.remainder, "floor_div": np.floor_divide, "atan2": np.arctan2,
    "hypot": np.hypot,
}
# inputs moved into each op's domain: positive bases, divisors away from zero
DOMAIN = {"pow": lambda a, b: (np.abs(a) + 0.5, b), "fmod": lambda a, b: (a, b + 4),
          "remainder": lambda a, b: (a, b + 4), "floor_div": lambda a, b: (a, b + 4),
          "div": lambda a, b: (a, b + 4)}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}
INT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
              "maximum": np.maximum, "minimum": np.minimum,
              "floor_div": lambda a, b: np.floor_divide(a, np.where(b == 0, 1, b)),
              "remainder": lambda a, b: np.remainder(a, np.where(b == 0, 1, b)),
              "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
              "bitwise_xor": np.bitwise_xor}


def rand(dt: str, lo=-3.0, hi=3.0, seed=0, shape=SHAPE):
    rng = np.random.default_rng(seed)
    if dt in ("i32", "i64", "i8"):
        return rng.integers(-20, 20, shape).astype(DT[dt][1])
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.uniform(lo, hi, shape).astype(DT[dt][1])


def expected(fn, *args, out_dt: str):
    with np.errstate(all="ignore"):
        r = fn(*[a.astype(np.float64) if a.dtype != bool else a for a in args])
    return np.asarray(r).astype(DT[out_dt][1])


def check(name, got, want):
    c = compare(name, got, want)
    assert c["ok"], c


def unary_kernel(name, dt, out_dt, backend):
    pdt, pout = DT[dt][0], DT[out_dt][0]

    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor[[16, 64], pdt], y: pypto.Tensor[[16, 64], pout]):
        pypto.set_vec_tile_shapes(8, 64)
        y[:] = getattr(pypto, name)(x)
    return k


def binary_kernel(name, dt, out_dt, backend):
    pdt, pout = DT[dt][0], DT[out_dt][0]

    @pypto.jit(backend=backend)
    def k(a: pypto.Tensor[[16, 64], pdt], b: pypto.Tensor[[16, 64], pdt],
          y: pypto.Tensor[[16, 64], pout]):
        pypto.set_vec_tile_shapes(8, 64)
        y[:] = getattr(pypto, name)(a, b)
    return k


# C cases compile a kernel each: left out of make check (slow); the numpy ones stay
SLOW_IF_C = {"c": [pytest.mark.slow], "numpy": []}
CASES = [pytest.param(n, dt, be, marks=SLOW_IF_C[be]) for n in UNARY for dt, be in
         (("f32", "c"), ("f32", "numpy"), ("f16", "c"), ("bf16", "c"))]


@pytest.mark.parametrize("name,dt,backend", CASES)
def test_unary(name, dt, backend, request):
    if backend == "c":
        request.applymarker(pytest.mark.needs_cc)
    fn, (lo, hi) = UNARY[name]
    x = rand(dt, lo, hi)
    y = np.zeros(SHAPE, DT[dt][1])
    unary_kernel(name, dt, dt, backend)(x, y)
    check(name, y, expected(fn, x, out_dt=dt))


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", sorted(BOOL_UNARY))
def test_bool_unary(name):
    x = rand("f32")
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    y = np.zeros(SHAPE, bool)
    unary_kernel(name, "f32", "bool", "c")(x, y)
    np.testing.assert_array_equal(y, BOOL_UNARY[name](x))


@pytest.mark.parametrize("name,dt,backend", [pytest.param(n, dt, be, marks=SLOW_IF_C[be])
                                             for n in BINARY for dt, be in
                                             (("f32", "c"), ("f32", "numpy"), ("f16", "c"),
                                              ("bf16", "c"))])
def test_binary(name, dt, backend, request):
    if backend == "c":
        request.applymarker(pytest.mark.needs_cc)
    a, b = rand(dt, seed=1), rand(dt, seed=2)
    a, b = (v.astype(DT[dt][1]) for v in DOMAIN.get(name, lambda a, b: (a, b))(a, b))
    y = np.zeros(SHAPE, DT[dt][1])
    binary_kernel(name, dt, dt, backend)(a, b, y)
    check(name, y, expected(BINARY[name], a, b, out_dt=dt))


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", sorted(COMPARE))
@pytest.mark.parametrize("dt", ["f32", "i32"])
def test_compare(name, dt):
    a, b = rand(dt, seed=3), rand(dt, seed=4)
    b[0] = a[0]                                   # some equal elements
    y = np.zeros(SHAPE, bool)
    binary_kernel(name, dt, "bool", "c")(a, b, y)
    np.testing.assert_array_equal(y, COMPARE[name](a, b))


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", sorted(INT_BINARY))
@pytest.mark.parametrize("dt", ["i32", "i64", "i8"])
def test_int_binary(name, dt):
    if name in ("floor_div", "remainder"):
        pytest.skip("covered with nonzero divisors in test_int_division")
    a, b = rand(dt, seed=5), rand(dt, seed=6)
    y = np.zeros(SHAPE, DT[dt][1])
    binary_kernel(name, dt, dt, "c")(a, b, y)
    with np.errstate(all="ignore"):
        want = INT_BINARY[name](a.astype(np.int64), b.astype(np.int64)).astype(DT[dt][1])
    np.testing.assert_array_equal(y, want)


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", ["floor_div", "remainder", "fmod"])
def test_int_division(name):
    a, b = rand("i32", seed=7), rand("i32", seed=8)
    b[b == 0] = 3
    y = np.zeros(SHAPE, np.int32)
    binary_kernel(name, "i32", "i32", "c")(a, b, y)
    fn = {"floor_div": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod}[name]
    np.testing.assert_array_equal(y, fn(a, b))


CAST_DTYPES = ["f32", "f16", "bf16", "i32", "i64", "i8", "bool"]


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("src", CAST_DTYPES)
@pytest.mark.parametrize("dst", CAST_DTYPES)
def test_cast(src, dst):
    if src == dst:
        pytest.skip("identity")
    psrc, pdst = DT[src][0], DT[dst][0]

    @pypto.jit
    def k(x: pypto.Tensor[[16, 64], psrc], y: pypto.Tensor[[16, 64], pdst]):
        pypto.set_vec_tile_shapes(16, 64)
        y[:] = pypto.cast(x, pdst)

    x = rand(src, -100, 100, seed=9)
    if src in ("f32", "f16", "bf16"):
        x[0, :6] = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5]).astype(DT[src][1])  # ties
        if dst == "i8":
            x = np.clip(x.astype(np.float32), -100, 100).astype(DT[src][1])
    y = np.zeros(SHAPE, DT[dst][1])
    k(x, y)
    xf = x.astype(np.float64) if src != "bool" else x.astype(np.float64)
    if dst == "bool":
        want = x != 0
    elif dst in ("i32", "i64", "i8") and src in ("f32", "f16", "bf16"):
        want = np.trunc(xf).astype(DT[dst][1])          # the reference's CAST_NONE: trunc
    else:
        want = x.astype(np.float32).astype(DT[dst][1]) if src in ("f16", "bf16") else \
            x.astype(DT[dst][1])
    if dst in ("f32", "f16", "bf16"):
        check("y", y, want)
    else:
        np.testing.assert_array_equal(y, want)


REDUCE = {"sum": np.sum, "amax": np.max, "amin": np.min, "prod": np.prod,
          "mean": np.mean}


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("dim", [0, 1])
def test_reduce_across_tiles(name, dt, dim):
    """The reduced dim spans several tiles (an accumulator loop), both dims."""
    pdt = DT[dt][0]
    out_shape = [1, 64] if dim == 0 else [16, 1]

    @pypto.jit
    def k(x: pypto.Tensor[[16, 64], pdt], y: pypto.Tensor[out_shape, pdt]):
        pypto.set_vec_tile_shapes(4, 16)
        y[:] = getattr(pypto, name)(x, dim, keepdim=True)

    x = rand(dt, 0.5, 1.5, seed=10)
    y = np.zeros(out_shape, DT[dt][1])
    k(x, y)
    want = REDUCE[name](x.astype(np.float64), axis=dim, keepdims=True).astype(DT[dt][1])
    check(name, y, want)


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "i8"])
def test_matmul_dtypes(dt):
    pdt = DT[dt][0]
    out = pypto.DT_INT32 if dt == "i8" else pypto.DT_FP32
    nout = np.int32 if dt == "i8" else np.float32

    @pypto.jit
    def k(a: pypto.Tensor[[40, 96], pdt], b: pypto.Tensor[[96, 72], pdt],
          c: pypto.Tensor[[40, 72], out]):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
        c[:] = pypto.matmul(a, b, out)

    a, b = rand(dt, seed=11, shape=(40, 96)), rand(dt, seed=12, shape=(96, 72))
    c = np.zeros((40, 72), nout)
    k(a, b, c)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(nout)
    if dt == "i8":
        np.testing.assert_array_equal(c, want)
    else:
        check("c", c, want)
