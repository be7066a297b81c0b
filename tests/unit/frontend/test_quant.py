"""quantize / dequantize and experimental.online_softmax(_update): the reference pages'
worked examples, and random inputs against numpy formulas written here, on both backends."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]


def make_quant(backend):
    @pypto.jit(backend=backend)
    def q(x: pypto.Tensor([6, 32], pypto.DT_FP32), s: pypto.Tensor([6], pypto.DT_FP32),
          z: pypto.Tensor([6], pypto.DT_FP32), sc: pypto.Tensor([6, 1], pypto.DT_FP32),
          y1: pypto.Tensor([6, 32], pypto.DT_INT8), y2: pypto.Tensor([6, 32], pypto.DT_UINT8),
          d1: pypto.Tensor([6, 32], pypto.DT_FP32), d2: pypto.Tensor([6, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 32)
        a = pypto.quantize(x, s, pypto.DT_INT8, -1, None)
        y1[:] = a
        y2[:] = pypto.quantize(x, s, pypto.DT_UINT8, -1, z)
        d1[:] = pypto.dequantize(a, sc, pypto.DT_FP32, -1, None)
        d2[:] = pypto.dequantize(a, s, pypto.DT_FP32, -1, z)
    return q


def np_rint_sat(v, lo, hi):
    return np.clip(np.rint(v.astype(np.float64)), lo, hi)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantize_and_dequantize_against_numpy(backend):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 32)) * 60).astype(np.float32)       # some saturate
    s = rng.uniform(0.5, 2.0, 6).astype(np.float32)
    z = rng.uniform(-130, 10, 6).round().astype(np.float32)
    outs = [np.zeros((6, 32), t) for t in (np.int8, np.uint8, np.float32, np.float32)]
    make_quant(backend)(x, s, z, s[:, None], *outs)
    y1, y2, d1, d2 = outs
    xs = x * s[:, None]
    np.testing.assert_array_equal(y1, np_rint_sat(xs, -128, 127).astype(np.int8))
    np.testing.assert_array_equal(y2, np_rint_sat(xs - z[:, None], 0, 255).astype(np.uint8))
    np.testing.assert_allclose(d1, y1.astype(np.float32) * s[:, None], rtol=1e-6)
    np.testing.assert_allclose(d2, (y1.astype(np.float32) + z[:, None]) * s[:, None],
                               rtol=1e-6)
    assert (y1 == 127).any() and (y1 == -128).any()                 # saturation was tested


def test_the_reference_pages_examples():
    @pypto.jit(backend="numpy")
    def k(x: pypto.Tensor([3, 4], pypto.DT_FP32), s: pypto.Tensor([3], pypto.DT_FP32),
          z: pypto.Tensor([3], pypto.DT_FP32), xi: pypto.Tensor([3, 4], pypto.DT_INT8),
          zd: pypto.Tensor([3, 1], pypto.DT_FP32),
          y1: pypto.Tensor([3, 4], pypto.DT_INT8), y2: pypto.Tensor([3, 4], pypto.DT_UINT8),
          d2: pypto.Tensor([3, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 32)
        y1[:] = pypto.quantize(x, s, pypto.DT_INT8, -1, None)
        y2[:] = pypto.quantize(x, s, pypto.DT_UINT8, -1, z)
        d2[:] = pypto.dequantize(xi, s, pypto.DT_FP32, -1, zd)
    x = np.array([[1.1, -2.2, 3.3, -4.4]] * 3, np.float32)
    xi = np.array([[1, 2, 3, 4]] * 3, np.int8)
    outs = [np.zeros((3, 4), t) for t in (np.int8, np.uint8, np.float32)]
    k(x, np.ones(3, np.float32), np.full(3, -5.0, np.float32), xi,
      np.full((3, 1), -2.0, np.float32), *outs)
    assert outs[0].tolist() == [[1, -2, 3, -4]] * 3
    assert outs[1].tolist() == [[6, 3, 8, 1]] * 3
    assert outs[2].tolist() == [[-1.0, 0.0, 1.0, 2.0]] * 3


def test_quantize_axis_minus_two_and_errors():
    @pypto.jit(backend="numpy")
    def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), s: pypto.Tensor([8], pypto.DT_FP32),
          y: pypto.Tensor([4, 8], pypto.DT_INT8)):
        pypto.set_vec_tile_shapes(4, 32)
        y[:] = pypto.quantize(x, s, pypto.DT_INT8, -2, None)
    x = np.arange(32, dtype=np.float32).reshape(4, 8) / 3
    s = np.linspace(1, 4, 8).astype(np.float32)
    y = np.zeros((4, 8), np.int8)
    k(x, s, y)
    np.testing.assert_array_equal(y, np_rint_sat(x * s[None, :], -128, 127).astype(np.int8))

    @pypto.jit
    def bad(x: pypto.Tensor([4, 8], pypto.DT_FP16), s: pypto.Tensor([4], pypto.DT_FP32),
            y: pypto.Tensor([4, 8], pypto.DT_INT8)):
        y[:] = pypto.quantize(x, s, pypto.DT_INT8, -1, None)
    with pytest.raises(pypto.CompileError, match="quantize takes fp32 input"):
        bad.trace()


def make_online(backend):
    @pypto.jit(backend=backend)
    def k(s1: pypto.Tensor([16, 32], pypto.DT_FP32), s2: pypto.Tensor([16, 32], pypto.DT_FP32),
          v1: pypto.Tensor([8, 16], pypto.DT_FP32), v2: pypto.Tensor([8, 16], pypto.DT_FP32),
          e1: pypto.Tensor([16, 32], pypto.DT_BF16), m: pypto.Tensor([1, 32], pypto.DT_FP32),
          sm: pypto.Tensor([1, 32], pypto.DT_FP32), o: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 32)
        pypto.set_cube_tile_shapes([8, 8], [16, 16], [32, 32])
        p1, m1, l1 = pypto.experimental.online_softmax(s1, 0.5)
        p2, m2, l2 = pypto.experimental.online_softmax(s2, 0.5)
        e1[:] = p1
        o1 = pypto.matmul(v1, pypto.cast(p1, pypto.DT_FP32), pypto.DT_FP32)
        o2 = pypto.matmul(v2, pypto.cast(p2, pypto.DT_FP32), pypto.DT_FP32)
        mm, ll, oo = pypto.experimental.online_softmax_update(m1, l1, o1, m2, l2, o2)
        m[:] = mm
        sm[:] = ll
        o[:] = oo
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_online_softmax_blocks_merge_to_the_whole_softmax(backend):
    rng = np.random.default_rng(2)
    s1, s2 = (rng.standard_normal((16, 32), dtype=np.float32) * 3 for _ in range(2))
    v1, v2 = (rng.standard_normal((8, 16), dtype=np.float32) for _ in range(2))
    e1 = np.zeros((16, 32), ml_dtypes.bfloat16)
    m, sm, o = np.zeros((1, 32), np.float32), np.zeros((1, 32), np.float32), \
        np.zeros((8, 32), np.float32)
    make_online(backend)(s1, s2, v1, v2, e1, m, sm, o)
    a1 = s1.astype(np.float64) * 0.5
    ref_e1 = np.exp(a1 - a1.max(0, keepdims=True))
    np.testing.assert_allclose(e1.astype(np.float64), ref_e1, rtol=1e-2, atol=1e-3)
    whole = np.concatenate([s1, s2]).astype(np.float64) * 0.5      # columns over k_len 32
    np.testing.assert_allclose(m, whole.max(0, keepdims=True), rtol=1e-6)
    p = np.exp(whole - whole.max(0, keepdims=True))
    np.testing.assert_allclose(sm, p.sum(0, keepdims=True), rtol=1e-5)
    # the bf16 block exponentials feed the PV products, as in attention
    pb = np.concatenate([np.exp(a - a.max(0, keepdims=True)).astype(ml_dtypes.bfloat16)
                         .astype(np.float64) * np.exp(a.max(0, keepdims=True)
                                                      - whole.max(0, keepdims=True))
                         for a in (a1, s2.astype(np.float64) * 0.5)])
    np.testing.assert_allclose(o, np.concatenate([v1, v2], 1).astype(np.float64) @ pb,
                               rtol=1e-4, atol=1e-4)


def test_experimental_namespace():
    assert pypto.experimental.online_softmax.__name__ == "online_softmax"
    assert pypto.experimental.gather_in_l1.__name__ == "gather_in_l1"
    with pytest.raises(AttributeError, match="pypto.experimental has no 'gather_in_l2'"):
        pypto.experimental.gather_in_l2


@pytest.mark.parametrize("backend", BACKENDS)
def test_transposed_batchmatmul(backend):
    """(M, B, K) x (B, K, N) -> (M, B, N), the reference page's shapes (16, 2, 32) and
    (2, 32, 64), fp16 in and out, against numpy in float64 rounded once to fp16."""
    @pypto.jit(backend=backend)
    def k(a: pypto.Tensor[[16, 2, 32], pypto.DT_FP16], b: pypto.Tensor[[2, 32, 64], pypto.DT_FP16],
          c: pypto.Tensor[[16, 2, 64], pypto.DT_FP16]):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [64, 64])
        pypto.set_vec_tile_shapes(16, 2, 64)
        c[:] = pypto.experimental.transposed_batchmatmul(a, b, pypto.DT_FP16)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 2, 32)).astype(np.float16)
    b = rng.standard_normal((2, 32, 64)).astype(np.float16)
    c = np.zeros((16, 2, 64), np.float16)
    k(a, b, c)
    want = np.einsum("mbk,bkn->mbn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_transposed_batchmatmul_wants_rank_3():
    @pypto.jit
    def k(a: pypto.Tensor[[16, 32], pypto.DT_FP16], b: pypto.Tensor[[2, 32, 64], pypto.DT_FP16],
          c: pypto.Tensor[[2, 16, 64], pypto.DT_FP16]):
        c[:] = pypto.experimental.transposed_batchmatmul(a, b, pypto.DT_FP16)
    with pytest.raises(pypto.PyptoError, match=r"takes a \(M, B, K\) and b \(B, K, N\)"):
        k(np.zeros((16, 32), np.float16), np.zeros((2, 32, 64), np.float16),
          np.zeros((2, 16, 64), np.float16))
