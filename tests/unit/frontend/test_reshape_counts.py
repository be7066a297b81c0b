"""Reshapes whose element counts agree in form only, and a symbolic leading dim merged with
static ones (the paged KV cache's [blocks, 16, 1, 64] -> [blocks*16, 64])."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import PyptoError


@pypto.jit(backend="numpy")
def rows(q: pypto.Tensor([pypto.DYNAMIC, 4, 32], pypto.DT_FP32),
         lens: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
         y: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 32)
    b = lens.shape[0]
    s1 = q.shape[0] // b
    q2 = pypto.reshape(q, (b * s1 * 4, 32), inplace=True)     # the reference's spelling
    y[:] = q2 * 2.0


@pytest.mark.parametrize("n, b", [(6, 3), (4, 4), (5, 1)])
def test_counts_equal_in_form_only_run(n, b):
    q = np.random.default_rng(n).standard_normal((n, 4, 32), dtype=np.float32)
    y = np.zeros((n * 4, 32), np.float32)
    rows(q, np.zeros(b, np.int32), y)
    np.testing.assert_array_equal(y, q.reshape(n * 4, 32) * 2)


def test_counts_that_differ_at_run_time_are_an_error():
    q = np.zeros((5, 4, 32), np.float32)
    with pytest.raises(PyptoError, match="element counts differ"):
        rows(q, np.zeros(2, np.int32), np.zeros((20, 32), np.float32))    # 2 * (5 // 2) != 5


@pypto.jit(backend="numpy")
def cache_rows(k: pypto.Tensor([pypto.DYNAMIC, 16, 1, 32], pypto.DT_FP32),
               y: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 32)
    y[:] = pypto.reshape(k, (k.shape[0] * 16, 32)) + 1.0


def test_a_symbolic_leading_dim_merges_with_static_ones():
    k = np.random.default_rng(0).standard_normal((3, 16, 1, 32), dtype=np.float32)
    y = np.zeros((48, 32), np.float32)
    cache_rows(k, y)
    np.testing.assert_array_equal(y, k.reshape(48, 32) + 1)
