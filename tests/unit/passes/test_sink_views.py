"""sink-views: halves of an elementwise result computed in their readers' kernels, with the
same bytes as the whole result's GM round trip (the pass turned off)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from libpypto.passes import DEFAULT_PIPELINE

pytestmark = pytest.mark.needs_cc
OFF = DEFAULT_PIPELINE.replace("sink-views", "sink-views{enable=false}")

ROPE = '''import libpypto as pypto

@pypto.jit
def rope(x: pypto.Tensor[[pypto.DYNAMIC, 4, 64], pypto.DT_BF16],
         cos: pypto.Tensor[[pypto.DYNAMIC, 1, 32], pypto.DT_FP32],
         sin: pypto.Tensor[[pypto.DYNAMIC, 1, 32], pypto.DT_FP32],
         out: pypto.Tensor[[pypto.DYNAMIC, 4, 64], pypto.DT_BF16]):
    pypto.set_vec_tile_shapes(4, 4, 32)
    xf = pypto.cast(x, pypto.DT_FP32) * 0.5
    x1, x2 = xf[:, :, 0:32], xf[:, :, 32:64]
    out[:, :, 0:32] = pypto.cast(x1 * cos - x2 * sin, pypto.DT_BF16)
    out[:, :, 32:64] = pypto.cast(x2 * cos + x1 * sin, pypto.DT_BF16)
'''


@pytest.mark.parametrize("n", [4, 9])
def test_halves_of_a_cast_fuse_with_their_readers_bit_for_bit(op_runner, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 4, 64)).astype(ml_dtypes.bfloat16)
    c, s = (rng.standard_normal((n, 1, 32), dtype=np.float32) for _ in range(2))
    inputs = {"x": x, "cos": c, "sin": s, "out": np.zeros_like(x)}
    on_blocks, on = op_runner.run("rope", ROPE, inputs)
    off_blocks, off = op_runner.run("rope", ROPE, inputs, pipeline=OFF)
    # off: the cast and the scale make a kernel of their own (a GM round trip); on: one block
    assert len(off_blocks) == 2 and len(on_blocks) == 1
    assert np.array_equal(on["out"].view(np.uint16), off["out"].view(np.uint16))
    xf = x.astype(np.float32) * 0.5
    x1, x2 = xf[..., :32], xf[..., 32:]
    want = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    np.testing.assert_allclose(on["out"].astype(np.float32), want, rtol=1e-2, atol=1e-2)
