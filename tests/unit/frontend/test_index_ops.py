"""Index outputs use the reference's index dtype, DT_INT32 (issue 11, item 1): argmax,
argmin, topk, sort and argsort, on both backends, against numpy (stable order on ties)."""

import numpy as np
import pytest

import libpypto as pypto

BACKENDS = ["c", "numpy"]


def _x(seed=0):
    x = np.random.default_rng(seed).integers(-5, 5, (8, 32)).astype(np.float32)  # many ties
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_arg_reductions_are_int32(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], a: pypto.Tensor[[8], pypto.DT_INT32],
          b: pypto.Tensor[[8, 1], pypto.DT_INT32]):
        pypto.set_vec_tile_shapes(8, 32)
        i = pypto.argmax(x, -1)
        assert i.dtype == pypto.DT_INT32
        a[:] = i
        b[:] = pypto.argmin(x, 1, keepdim=True)
    x = _x()
    a, b = np.zeros(8, np.int32), np.zeros((8, 1), np.int32)
    k(x, a, b)
    np.testing.assert_array_equal(a, x.argmax(-1))
    np.testing.assert_array_equal(b[:, 0], x.argmin(1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_sorts_are_int32(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], tv: pypto.Tensor[[8, 4], pypto.DT_FP32],
          ti: pypto.Tensor[[8, 4], pypto.DT_INT32], ai: pypto.Tensor[[8, 32], pypto.DT_INT32],
          di: pypto.Tensor[[8, 32], pypto.DT_INT32], si: pypto.Tensor[[8, 32], pypto.DT_INT32]):
        pypto.set_vec_tile_shapes(8, 32)
        v, i = pypto.topk(x, 4)
        tv[:] = v
        ti[:] = i
        ai[:] = pypto.argsort(x)                       # ascending: the reference's default
        di[:] = pypto.argsort(x, -1, descending=True)
        _, s = pypto.sort(x)
        si[:] = s
    x = _x(1)
    tv, ti = np.zeros((8, 4), np.float32), np.zeros((8, 4), np.int32)
    ai, di, si = (np.zeros((8, 32), np.int32) for _ in range(3))
    k(x, tv, ti, ai, di, si)
    down = np.argsort(-x, -1, kind="stable")
    np.testing.assert_array_equal(ti, down[:, :4])
    np.testing.assert_array_equal(tv, np.take_along_axis(x, down[:, :4], -1))
    np.testing.assert_array_equal(ai, np.argsort(x, -1, kind="stable"))
    np.testing.assert_array_equal(di, down)
    np.testing.assert_array_equal(si, np.argsort(x, -1, kind="stable"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_sorts_along_any_dim(backend):
    """sort, topk and argsort along a dim other than the last (issue 11, item 3): permuted,
    sorted along the last dim, permuted back; a 3-D tensor sorted along its middle dim."""
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor[[4, 24, 16], pypto.DT_FP32],
          v: pypto.Tensor[[4, 24, 16], pypto.DT_FP32], i: pypto.Tensor[[4, 24, 16], pypto.DT_INT32],
          tv: pypto.Tensor[[4, 3, 16], pypto.DT_FP32], ti: pypto.Tensor[[4, 3, 16], pypto.DT_INT32],
          a: pypto.Tensor[[4, 24, 16], pypto.DT_INT32]):
        pypto.set_vec_tile_shapes(2, 24, 8)
        vv, ii = pypto.sort(x, dim=1, descending=True)
        v[:] = vv
        i[:] = ii
        t1, t2 = pypto.topk(x, 3, dim=-2, largest=False)
        tv[:] = t1
        ti[:] = t2
        a[:] = pypto.argsort(x, 1)
    x = np.random.default_rng(3).integers(-6, 6, (4, 24, 16)).astype(np.float32)   # ties
    v, tv = np.zeros((4, 24, 16), np.float32), np.zeros((4, 3, 16), np.float32)
    i, a, ti = np.zeros((4, 24, 16), np.int32), np.zeros((4, 24, 16), np.int32), \
        np.zeros((4, 3, 16), np.int32)
    k(x, v, i, tv, ti, a)
    down, up = np.argsort(-x, 1, kind="stable"), np.argsort(x, 1, kind="stable")
    np.testing.assert_array_equal(i, down)
    np.testing.assert_array_equal(v, np.take_along_axis(x, down, 1))
    np.testing.assert_array_equal(ti, up[:, :3])
    np.testing.assert_array_equal(tv, np.take_along_axis(x, up[:, :3], 1))
    np.testing.assert_array_equal(a, up)


def test_a_sort_across_tiles_needs_whole_32_byte_rows():
    """A row longer than the tile sorts across tiles (test_long_sorts.py), with tiles of at
    least 32 bytes of the values and of the int32 positions."""
    @pypto.jit
    def k(x: pypto.Tensor[[32, 8], pypto.DT_FP32], v: pypto.Tensor[[32, 8], pypto.DT_INT32]):
        pypto.set_vec_tile_shapes(4, 8)
        v[:] = pypto.argsort(x, 0)
    with pytest.raises(pypto.PyptoError, match=r"a row of 32 is longer than the tile \(4\); "
                                                r"a sort across tiles needs a tile of at least 8"):
        k(np.zeros((32, 8), np.float32), np.zeros((32, 8), np.int32))
