"""Rotary position embedding, interleaved form (even and odd lanes are the pairs) on
(T, 64) fp32: the lanes are split by reshaping to (T, 32, 2) (the InterleaveRope pattern)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def rope_interleaved(x: pypto.Tensor[["T", 64], pypto.DT_FP32],
                     cos: pypto.Tensor[["T", 32], pypto.DT_FP32],
                     sin: pypto.Tensor[["T", 32], pypto.DT_FP32],
                     out: pypto.Tensor[["T", 64], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 32, 2)
    pairs = pypto.reshape(x, [x.shape[0], 32, 2])
    xe, xo = pairs[:, :, 0:1], pairs[:, :, 1:2]
    c, s = pypto.unsqueeze(cos, -1), pypto.unsqueeze(sin, -1)
    rot = pypto.concat([xe * c - xo * s, xo * c + xe * s], -1)
    out[:] = pypto.reshape(rot, [x.shape[0], 64])


def reference(x, cos, sin):
    xe, xo = x[:, 0::2], x[:, 1::2]
    o = np.empty_like(x)
    o[:, 0::2] = xe * cos - xo * sin
    o[:, 1::2] = xo * cos + xe * sin
    return {"out": o}


EXAMPLE = {"bind": {"T": 12}}
