"""fp8 (DT_FP8E4M3, DT_FP8E5M2) and E8M0 in Tensor mode: casts in every CastMode and
SaturationMode against a rounding written here from the table of the format's values,
decoding of every byte, data movement, fp8 matmul; arithmetic on them is an error (as in the
reference). Both backends."""
import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]
# ten casts compile ten programs (about 10 s on a loaded 2-core machine): slow on C
SLOW_C = [pytest.param("c", marks=[pytest.mark.needs_cc, pytest.mark.slow]), "numpy"]
FP8 = {"e4m3": (pypto.DT_FP8E4M3, np.dtype(ml_dtypes.float8_e4m3fn), 448.0, False),
       "e5m2": (pypto.DT_FP8E5M2, np.dtype(ml_dtypes.float8_e5m2), 57344.0, True)}
MODES = ["CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC"]


def table(npdt):
    """Every finite value of the format (from its bytes), ascending, and the codes."""
    codes = np.arange(256, dtype=np.uint8)
    v = codes.view(npdt).astype(np.float64)
    ok = np.isfinite(v) & ~((v == 0) & (codes == 0x80))       # one zero
    order = np.argsort(v[ok], kind="stable")
    return v[ok][order], codes[ok][order]


def expected(x: np.ndarray, fmt: str, mode: str, sat: bool) -> np.ndarray:
    """The cast written from the value table: directed modes take the neighbour on their
    side, the nearest modes the closer one (ties: even code, or away from zero); a value
    past the largest finite one goes to infinity (NaN for e4m3, which has none) under
    rint/round, under ceil of a positive and floor of a negative one, else to +-max; sat
    clamps every result to +-max. Codes as bytes."""
    _, npdt, big, has_inf = FP8[fmt]
    vals, codes = table(npdt)
    out = np.zeros(x.shape, np.uint8)
    inf = np.array([np.inf], np.float64).astype(npdt).view(np.uint8)[0] if has_inf else 0x7F
    for i, xv in enumerate(x.astype(np.float64).ravel()):
        if np.isnan(xv):
            out.flat[i] = np.array([xv], np.float32).astype(npdt).view(np.uint8)[0]
            continue
        j = np.searchsorted(vals, xv)
        lo = vals[j - 1] if j > 0 else -np.inf
        hi = vals[j] if j < len(vals) else np.inf
        if j < len(vals) and vals[j] == xv:
            r = xv
        else:
            near = xv if abs(xv) <= big else np.copysign(big, xv)
            step = 2.0 ** (np.floor(np.log2(big)) - (3 if fmt == "e4m3" else 2))
            tie_up = mode == "CAST_ROUND" or codes[np.searchsorted(vals, big)] & 1
            over = abs(xv) > big and (abs(xv) - big > step / 2 or
                                      (abs(xv) - big == step / 2 and tie_up))
            pick = {"CAST_FLOOR": lo, "CAST_CEIL": hi,
                    "CAST_TRUNC": lo if xv > 0 else hi}.get(mode)
            if pick is None:
                if abs(xv) > big:
                    pick = np.copysign(np.inf, xv) if over else near
                else:
                    d_lo, d_hi = xv - lo, hi - xv
                    if d_lo != d_hi:
                        pick = lo if d_lo < d_hi else hi
                    elif mode == "CAST_ROUND":
                        pick = hi if xv > 0 else lo
                    else:
                        pick = lo if codes[vals == lo][0] % 2 == 0 else hi
            r = pick
        if sat:
            r = float(np.clip(r, -big, big))
        if np.isinf(r):
            out.flat[i] = inf | (0x80 if r < 0 else 0)
        else:
            out.flat[i] = codes[vals == r][0] if r != 0 or not np.signbit(xv) else 0x80
    return out


def inputs(fmt: str) -> np.ndarray:
    """Every value, every midpoint, the overflow boundary, zeros, NaN and random values."""
    _, npdt, big, _ = FP8[fmt]
    vals, _ = table(npdt)
    mids = (vals[1:] + vals[:-1]) / 2
    step = 32.0 if fmt == "e4m3" else 8192.0
    edge = [big + step / 2, big + step / 2 * 0.999, big + step, 1e30, -1e30, np.nan, -0.0,
            1e-12, -1e-12]
    rng = np.random.default_rng(3)
    rand = rng.standard_normal(200) * big / 8
    x = np.concatenate([vals, mids, -mids, edge, rand]).astype(np.float32)
    n = -(-x.size // 64) * 64
    return np.resize(x, n).reshape(-1, 64)


CASES = [(m, sat) for m in MODES for sat in (False, True)]


def cast_kernel(fmt, backend, rows):
    """Every (mode, sat) cast of x, one block of rows each, and the first one widened back."""
    dt = FP8[fmt][0]

    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([rows, 64], pypto.DT_FP32),
          y: pypto.Tensor([len(CASES) * rows, 64], dt), z: pypto.Tensor([rows, 64], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 64)
        for i, (mode, sat) in enumerate(CASES):
            q = pypto.cast(x, dt, getattr(pypto.CastMode, mode),
                           pypto.SaturationMode.ON if sat else pypto.SaturationMode.OFF)
            y[i * rows:(i + 1) * rows, :] = q
            if i == 0:
                z[:] = pypto.cast(q, pypto.DT_FP32)
    return k


@pytest.mark.parametrize("backend", SLOW_C)
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_casts_in_every_mode_against_the_value_table(fmt, backend):
    x = inputs(fmt)
    rows = x.shape[0]
    npdt = FP8[fmt][1]
    y = np.zeros((len(CASES) * rows, 64), npdt)
    z = np.zeros(x.shape, np.float32)
    cast_kernel(fmt, backend, rows)(x, y, z)
    for i, (mode, sat) in enumerate(CASES):
        got = y[i * rows:(i + 1) * rows].view(np.uint8)
        want = expected(x, fmt, mode, sat)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (mode, sat, x.flat[bad[:5]], got.flat[bad[:5]], want.flat[bad[:5]])
    np.testing.assert_array_equal(z, y[:rows].astype(np.float32))       # exact widening


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_byte_decodes_and_moves(backend):
    @pypto.jit(backend=backend)
    def k(a: pypto.Tensor([8, 32], pypto.DT_FP8E4M3), b: pypto.Tensor([8, 32], pypto.DT_FP8E5M2),
          s: pypto.Tensor([8, 32], pypto.DT_FP8E8M0), fa: pypto.Tensor([8, 32], pypto.DT_FP32),
          fb: pypto.Tensor([8, 32], pypto.DT_FP32), fs: pypto.Tensor([8, 32], pypto.DT_FP32),
          t: pypto.Tensor([32, 8], pypto.DT_FP8E4M3), r: pypto.Tensor([4, 64], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(8, 32)
        fa[:] = pypto.cast(a, pypto.DT_FP32)
        fb[:] = pypto.cast(b, pypto.DT_FP32)
        fs[:] = pypto.cast(s, pypto.DT_FP32)
        t[:] = pypto.transpose(a, 0, 1)
        r[:] = pypto.reshape(s, [4, 64])
    codes = np.arange(256, dtype=np.uint8).reshape(8, 32)
    a, b, s = (codes.view(d) for d in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                                       ml_dtypes.float8_e8m0fnu))
    fa, fb, fs = (np.zeros((8, 32), np.float32) for _ in range(3))
    t = np.zeros((32, 8), a.dtype)
    r = np.zeros((4, 64), s.dtype)
    k(a, b, s, fa, fb, fs, t, r)
    np.testing.assert_array_equal(fa, a.astype(np.float32))
    np.testing.assert_array_equal(fb, b.astype(np.float32))
    want_s = np.where(codes == 255, np.nan, np.ldexp(1.0, codes.astype(int) - 127))
    np.testing.assert_array_equal(fs, want_s.astype(np.float32))
    np.testing.assert_array_equal(t.view(np.uint8), codes.T)
    np.testing.assert_array_equal(r.view(np.uint8), codes.reshape(4, 64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fp8_matmul_mixed_formats(backend):
    @pypto.jit(backend=backend)
    def k(a: pypto.Tensor([16, 64], pypto.DT_FP8E4M3), b: pypto.Tensor([64, 32], pypto.DT_FP8E5M2),
          y: pypto.Tensor([16, 32], pypto.DT_FP32), z: pypto.Tensor([16, 32], pypto.DT_BF16)):
        pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
        y[:] = pypto.matmul(a, b, pypto.DT_FP32)
        z[:] = pypto.matmul(a, b, pypto.DT_BF16)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 64)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((64, 32)).astype(ml_dtypes.float8_e5m2)
    y = np.zeros((16, 32), np.float32)
    z = np.zeros((16, 32), ml_dtypes.bfloat16)
    k(a, b, y, z)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(z.astype(np.float32), want, rtol=8e-3, atol=1e-2)


def test_fp8_takes_no_arithmetic_and_no_cast_to_e8m0():
    def trace(body):
        @pypto.jit
        def k(a: pypto.Tensor([8, 32], pypto.DT_FP8E4M3), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 32)
            y[:] = body(a)
        return k.trace()
    for body, match in ((lambda a: pypto.cast(a + a, pypto.DT_FP32), "add does not take"),
                        (lambda a: pypto.cast(pypto.sum(a, -1, True), pypto.DT_FP32) + 0 * a,
                         "sum does not take"),
                        (lambda a: pypto.cast(pypto.cast(a, pypto.DT_FP8E8M0), pypto.DT_FP32),
                         "cast to DT_FP8E8M0 is not defined")):
        with pytest.raises(CompileError, match=match):
            trace(body)
