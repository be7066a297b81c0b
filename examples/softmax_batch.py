"""Softmax over the last dim of a (B, 32, 1, 256) tensor, B DYNAMIC, one batch per loop
iteration with view and assemble (reference 02_intermediate softmax)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def softmax_batch(x: pypto.Tensor[["B", 32, 1, 256], pypto.DT_FP32],
                  y: pypto.Tensor[["B", 32, 1, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 8, 1, 256)
    for b in pypto.loop(x.shape[0]):
        xb = pypto.view(x, [1, 32, 1, 256], [b, 0, 0, 0])
        pypto.assemble(pypto.softmax(xb, -1), [b, 0, 0, 0], y)


def reference(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return {"y": e / e.sum(-1, keepdims=True)}


EXAMPLE = {"bind": {"B": 3}}
