"""reshape of symbolic trailing dims (tensor-to-tile copies it by blocks, passes/
reshape_rows.py): [B, S, H] -> [B*S, H] and back, [B, S, H] -> [B, S*H], with B and S DYNAMIC,
against numpy on both backends for several sizes (one artifact)."""
import numpy as np
import pytest

import libpypto as pypto
from libpypto.passes.reshape_rows import blocks

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]
D = pypto.DYNAMIC


@pytest.mark.parametrize("backend", BACKENDS)
def test_symbolic_trailing_dims(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([D, D, 32], pypto.DT_FP32), y: pypto.Tensor([D, 32], pypto.DT_FP32),
          z: pypto.Tensor([D, D, 32], pypto.DT_FP32), w: pypto.Tensor([D, D], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        b, s = x.shape[0], x.shape[1]
        r = pypto.reshape(x, [b * s, 32])
        y[:] = r * 2.0
        z[:] = pypto.reshape(r + 1.0, [b, s, 32])
        w[:] = pypto.reshape(x, [b, s * 32])
    for b, s in ((3, 5), (1, 1), (2, 9)):
        x = np.arange(b * s * 32, dtype=np.float32).reshape(b, s, 32)
        y, z, w = np.zeros((b * s, 32), np.float32), np.zeros_like(x), np.zeros((b, s * 32),
                                                                                np.float32)
        k(x, y, z, w)
        np.testing.assert_array_equal(y, x.reshape(b * s, 32) * 2)
        np.testing.assert_array_equal(z, x + 1)
        np.testing.assert_array_equal(w, x.reshape(b, s * 32))
    assert k.compiles == 1


def test_blocks_of_a_shape():
    assert blocks([4, 6]) == {1: (1, 1), 2: (1, 2), 3: (1, 3), 6: (1, 6), 12: (0, 2),
                              24: (0, 4)}
    from libpypto.ir import expr as E
    assert set(blocks([E.sym("n"), 32])) == {1, 2, 4, 8, 16, 32}
    assert set(blocks([E.mul(E.sym("n"), 2), 3])) == {1, 3, 6}
