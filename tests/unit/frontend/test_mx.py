"""quant_mx and scaled_mm (frontend/mx.py) against numpy formulas written here from the
reference's definitions (OCP floor and NV ceiling exponents, saturating e4m3), with the
pages' shapes, special values, both axes and both modes, on both backends."""
import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

# a composite of a dozen ops per call compiles a dozen programs (10-20 s on this loaded
# 2-core machine): the C runs are slow-marked, the numpy ones stay in make check
BACKENDS = [pytest.param("c", marks=[pytest.mark.needs_cc, pytest.mark.slow]), "numpy"]
E4M3, E8M0 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e8m0fnu)


def ref_quant_mx(x: np.ndarray, axis: int, up: bool):
    """(quantized bytes, scale bytes) in the page's layout."""
    xf = np.moveaxis(x.astype(np.float32), axis, -1)
    g = xf.reshape(*xf.shape[:-1], -1, 32)
    amax = np.max(np.abs(g), -1)
    with np.errstate(all="ignore"):
        a64 = amax.astype(np.float64)
        if up:
            e = np.ceil(np.log2(a64 / 448.0)) + 127
            e = np.where(a64 / 448.0 > 2.0 ** -127, e, 0)
            e = np.where(np.isinf(a64), 254, np.clip(e, 0, 254))
        else:
            _, ex = np.frexp(a64)
            e = np.where(a64 >= 2.0 ** -126, ex - 1 + 127 - 8, 0)
            e = np.where(np.isinf(a64), 255 - 8, np.clip(e, 0, 254))
        e = np.where(np.isnan(a64), 255, e).astype(np.int64)
        recip = np.where(e == 255, np.nan, np.ldexp(1.0, 127 - e)).astype(np.float32)
        q = g * recip[..., None]
        q = np.where(np.isnan(q), q, np.clip(q, -448, 448)).astype(E4M3)
    q = np.moveaxis(q.reshape(xf.shape), -1, axis)
    eb = e.astype(np.uint8)                     # [..., (other), n/32]
    if axis in (-1, x.ndim - 1):
        scale = eb.reshape(*eb.shape[:-1], -1, 2)
    else:                                       # [..., c, m/32] -> [..., m/64, c, 2]
        s = np.moveaxis(eb, -1, -2)             # [..., m/32, c]
        s = s.reshape(*s.shape[:-2], -1, 2, s.shape[-1])
        scale = np.swapaxes(s, -1, -2)
    return q.view(np.uint8), scale


def special_input(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-20, 20, shape))).astype(np.float32)
    flat = x.reshape(-1)
    flat[:32] = 0.0                              # a zero group
    flat[32] = np.inf                            # an infinite group
    flat[64:96] = 1e-40                          # a subnormal group
    flat[96] = np.nan                            # a NaN group
    flat[128:160] = 1.75 * 2.0 ** 5              # NV's boundary: exactly 1.75 * 2**E
    flat[160:192] = 1.7500001 * 2.0 ** 5         # just past it
    return x.astype(dtype)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quant_mx_against_numpy(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([4, 256], pypto.DT_FP32), h: pypto.Tensor([128, 48], pypto.DT_BF16),
          q1: pypto.Tensor([4, 256], pypto.DT_FP8E4M3), s1: pypto.Tensor([4, 4, 2], pypto.DT_FP8E8M0),
          q2: pypto.Tensor([4, 256], pypto.DT_FP8E4M3), s2: pypto.Tensor([4, 4, 2], pypto.DT_FP8E8M0),
          q3: pypto.Tensor([128, 48], pypto.DT_FP8E4M3), s3: pypto.Tensor([2, 48, 2], pypto.DT_FP8E8M0),
          q4: pypto.Tensor([128, 48], pypto.DT_FP8E4M3), s4: pypto.Tensor([2, 48, 2], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(2, 128)
        q1[:], s1[:] = pypto.quant_mx(x)
        q2[:], s2[:] = pypto.quant_mx(x, pypto.DT_FP8E4M3, pypto.ROUND_UP, -1, True)
        pypto.set_vec_tile_shapes(64, 48)
        q3[:], s3[:] = pypto.quant_mx(h, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -2, False)
        q4[:], s4[:] = pypto.quant_mx(h, pypto.DT_FP8E4M3, pypto.ROUND_UP, -2, False)
    x = special_input((4, 256), np.float32)
    h = special_input((128, 48), ml_dtypes.bfloat16, seed=1)
    outs = [np.zeros(s, d) for s, d in (((4, 256), E4M3), ((4, 4, 2), E8M0)) * 2] + \
           [np.zeros(s, d) for s, d in (((128, 48), E4M3), ((2, 48, 2), E8M0)) * 2]
    k(x, h, *outs)
    for i, (src, axis, up) in enumerate(((x, -1, False), (x, -1, True), (h, -2, False),
                                         (h, -2, True))):
        wq, ws = ref_quant_mx(src, axis, up)
        np.testing.assert_array_equal(outs[2 * i + 1].view(np.uint8), ws, err_msg=f"scale {i}")
        np.testing.assert_array_equal(outs[2 * i].view(np.uint8), wq, err_msg=f"quant {i}")
    s1, s2 = outs[1].view(np.uint8), outs[3].view(np.uint8)
    assert s1.flat[0] == 0 and s1.flat[1] == 247 and s2.flat[1] == 254 and s1.flat[3] == 255
    assert s2.flat[4] == s1.flat[4] and s2.flat[5] == s1.flat[5] + 1      # 1.75 boundary


def test_quant_mx_the_pages_shapes_and_errors():
    @pypto.jit
    def k(x: pypto.Tensor([8, 64], pypto.DT_FP32), y: pypto.Tensor([128, 96], pypto.DT_FP16),
          a: pypto.Tensor([8, 1, 2], pypto.DT_FP8E8M0), c: pypto.Tensor([2, 96, 2], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(4, 64)
        q, s = pypto.quant_mx(x)
        assert q.shape == (8, 64) and q.dtype == pypto.DT_FP8E4M3
        assert s.shape == (8, 1, 2) and s.dtype == pypto.DT_FP8E8M0
        a[:] = s
        pypto.set_vec_tile_shapes(64, 96)
        c[:] = pypto.quant_mx(y, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -2, False)[1]
    k.trace()
    for body, match in ((lambda x: pypto.quant_mx(x[:, :32])[0], "multiple of 64"),
                        (lambda x: pypto.quant_mx(x, pypto.DT_FP8E5M2)[0], "not supported"),
                        (lambda x: pypto.quant_mx(x, axis=0)[0], "multiple of 64")):
        @pypto.jit
        def bad(x: pypto.Tensor([8, 64], pypto.DT_FP32), y: pypto.Tensor([8, 64], pypto.DT_FP8E4M3)):
            pypto.set_vec_tile_shapes(4, 64)
            r = body(x)
            y[0:r.shape[0], 0:r.shape[1]] = r
        with pytest.raises(CompileError, match=match):
            bad.trace()


def expand(s: np.ndarray, k: int, axis: int) -> np.ndarray:
    """[rows, K/64, 2] E8M0 bytes -> the float64 [rows, K] factors (axis: where K goes)."""
    f = np.ldexp(1.0, s.view(np.uint8).astype(int) - 127).reshape(s.shape[0], -1)[:, :k // 32]
    f = np.repeat(f, 32, axis=1)
    return f if axis == 1 else f.T


@pytest.mark.parametrize("backend", BACKENDS)
def test_scaled_mm_against_numpy(backend):
    M, K, N = 32, 128, 48

    @pypto.jit(backend=backend)
    def k(a: pypto.Tensor([M, K], pypto.DT_FP8E5M2), b: pypto.Tensor([K, N], pypto.DT_FP8E4M3),
          sa: pypto.Tensor([M, 2, 2], pypto.DT_FP8E8M0), sb: pypto.Tensor([2, N, 2], pypto.DT_FP8E8M0),
          at: pypto.Tensor([K, M], pypto.DT_FP8E5M2), bt: pypto.Tensor([N, K], pypto.DT_FP8E4M3),
          sat: pypto.Tensor([2, M, 2], pypto.DT_FP8E8M0), sbt: pypto.Tensor([N, 2, 2], pypto.DT_FP8E8M0),
          bias: pypto.Tensor([1, N], pypto.DT_FP32),
          y1: pypto.Tensor([M, N], pypto.DT_FP32), y2: pypto.Tensor([M, N], pypto.DT_BF16)):
        pypto.set_cube_tile_shapes([16, 32], [64, 128], [16, 48])
        y1[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)
        y2[:] = pypto.scaled_mm(at, bt, pypto.DT_BF16, sat, sbt, a_trans=True, b_trans=True,
                                scale_a_trans=True, scale_b_trans=True,
                                extend_params={"bias_tensor": bias})
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e5m2)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e4m3fn)
    sa = rng.integers(120, 134, (M, 2, 2)).astype(np.uint8).view(E8M0)
    sb = rng.integers(120, 134, (2, N, 2)).astype(np.uint8).view(E8M0)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    y1, y2 = np.zeros((M, N), np.float32), np.zeros((M, N), ml_dtypes.bfloat16)
    k(a, b, sa, sb, np.ascontiguousarray(a.T), np.ascontiguousarray(b.T),
      np.ascontiguousarray(sa.transpose(1, 0, 2)), np.ascontiguousarray(sb.transpose(1, 0, 2)),
      bias, y1, y2)
    da = a.astype(np.float64) * expand(sa, K, 1)
    db = b.astype(np.float64) * expand(sb.transpose(1, 0, 2), K, 0)
    want = da @ db
    np.testing.assert_allclose(y1, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    np.testing.assert_allclose(y2.astype(np.float64), want + bias, rtol=1e-2,
                               atol=1e-2 * np.abs(want).max())
