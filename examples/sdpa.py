"""Scaled dot-product attention on (B, H, S, D) fp32: softmax(q k^T / sqrt(D)) v with 4-D
batched matmuls (reference controlflow/others dynamic.py attention, kernel_input sdpa)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def sdpa(q: pypto.Tensor[["B", 8, 64, 64], pypto.DT_FP32],
         k: pypto.Tensor[["B", 8, 64, 64], pypto.DT_FP32],
         v: pypto.Tensor[["B", 8, 64, 64], pypto.DT_FP32],
         out: pypto.Tensor[["B", 8, 64, 64], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([64, 64], [64, 64], [64, 64])
    pypto.set_vec_tile_shapes(1, 1, 64, 64)
    s = pypto.matmul(q, k, pypto.DT_FP32, b_trans=True) * 0.125
    out[:] = pypto.matmul(pypto.softmax(s, -1), v, pypto.DT_FP32)


def reference(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.float32(8)
    e = np.exp(s - s.max(-1, keepdims=True))
    return {"out": (e / e.sum(-1, keepdims=True)) @ v}


EXAMPLE = {"bind": {"B": 2}}
