"""pypto.experimental.gather_in_ub / gather_in_l1 (frontend/paged.py): the reference page's
worked example and random page tables against numpy, on both backends."""
import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]
T = pypto.Tensor


def paged_rows(indices, table, bs):
    return table[0, indices[0] // bs] * bs + indices[0] % bs


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_in_ub_the_pages_example_and_gather_in_l1(backend):
    @pypto.jit(backend=backend)
    def k(param: T([6, 4], pypto.DT_FP32), idx: T([1, 3], pypto.DT_INT32),
          table: T([1, 3], pypto.DT_INT32), src: T([32, 48], pypto.DT_FP16),
          idx2: T([1, 8], pypto.DT_INT32), table2: T([1, 8], pypto.DT_INT32),
          out: T([3, 4], pypto.DT_FP32), l1: T([8, 16], pypto.DT_FP16),
          l1t: T([16, 8], pypto.DT_FP16)):
        pypto.set_vec_tile_shapes(3, 4)
        out[:] = pypto.experimental.gather_in_ub(param, idx, table, 2, -2)
        pypto.set_vec_tile_shapes(8, 16)
        l1[:] = pypto.experimental.gather_in_l1(src, idx2, table2, 4, 16, False, False)
        l1t[:] = pypto.experimental.gather_in_l1(src, idx2, table2, 4, 16, True, True)
    param = np.array([[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23], [30, 31, 32, 33],
                      [40, 41, 42, 43], [50, 51, 52, 53]], np.float32)
    rng = np.random.default_rng(2)
    src = rng.standard_normal((32, 48)).astype(np.float16)
    idx2 = rng.integers(0, 32, (1, 8)).astype(np.int32)
    table2 = rng.permutation(8).astype(np.int32)[None]
    out = np.zeros((3, 4), np.float32)
    l1, l1t = np.zeros((8, 16), np.float16), np.zeros((16, 8), np.float16)
    k(param, np.array([[0, 4, 3]], np.int32), np.array([[0, 2, 1]], np.int32), src, idx2,
      table2, out, l1, l1t)
    assert out.tolist() == [[0, 1, 2, 3], [20, 21, 22, 23], [50, 51, 52, 53]]
    want = src[paged_rows(idx2, table2, 4), :16]
    np.testing.assert_array_equal(l1, want)
    np.testing.assert_array_equal(l1t, want.T)


def test_paged_gather_errors():
    @pypto.jit
    def k(param: T([6, 4], pypto.DT_INT32), idx: T([1, 3], pypto.DT_INT32),
          table: T([1, 3], pypto.DT_INT32), out: T([3, 4], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(3, 4)
        out[:] = pypto.experimental.gather_in_ub(param, idx, table, 2, -2)
    with pytest.raises(CompileError, match="fp32 or fp16 param"):
        k.trace()
