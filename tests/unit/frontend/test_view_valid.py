"""A view given no valid_shape takes its valid region from its source, as the reference
derives it (per dim: the source's valid size less the offset, clamped to [0, size])."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto as pypto

seen = {}


@pypto.jit
def halves(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
           y: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
    n = x.shape[0]
    pypto.set_vec_tile_shapes(4, 8)
    for i in pypto.loop((n + 3) // 4):
        rows = (n - i * 4).min(4)
        t = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[rows, 8]) * 2.0
        left = pypto.view(t, [4, 4], [0, 0])            # no valid_shape: rows from t
        right = pypto.view(t, [4, 4], [0, 4])
        past = pypto.view(t, [2, 8], [2, 0])            # rows 2..3 of the tile
        seen.update(left=left.valid_shape, past=past.valid_shape)
        y[i * 4:, 0:4] = right + 1.0
        y[i * 4:, 4:8] = left


@pytest.mark.parametrize("backend", [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"])
@pytest.mark.parametrize("n", [4, 7, 9])
def test_a_view_of_a_tail_keeps_the_tails_rows(backend, n):
    x = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
    y = np.zeros_like(x)
    halves.options["backend"] = backend
    halves(x, y)                       # before: "assemble ... would fall off the end"
    np.testing.assert_array_equal(y, np.concatenate([2 * x[:, 4:] + 1, 2 * x[:, :4]], 1))


def test_the_derived_valid_shape_is_clamped():
    x = np.zeros((5, 8), np.float32)
    halves.options["backend"] = "numpy"
    halves(x, np.zeros_like(x))
    assert str(seen["left"][0]) == "SymScalar(max(0, min(4, x_0 - i0*4)))" and seen["left"][1] == 4
    assert str(seen["past"][0]) == "SymScalar(max(0, min(2, min(4, x_0 - i0*4) - 2)))"
    assert seen["past"][1] == 8


def test_a_full_source_gives_a_full_view():
    @pypto.jit
    def k(x: pypto.Tensor([4, 8], pypto.DT_FP32), y: pypto.Tensor([4, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        v = pypto.view(x * 1.0, [4, 4], [0, 2])
        assert v.valid_shape == (4, 4)
        y[:] = v
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros((4, 4), np.float32)
    k.options["backend"] = "numpy"
    k(x, y)
    np.testing.assert_array_equal(y, x[:, 2:6])
