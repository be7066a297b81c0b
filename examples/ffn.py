"""GELU FFN in bf16: out = gelu(h @ W_up) @ W_down, activation in fp32
(reference basic_nn/ffn gelu_ffn)."""
import math

import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def ffn(h: pypto.Tensor[[16, 128], pypto.DT_BF16],
        w_up: pypto.Tensor[[128, 512], pypto.DT_BF16],
        w_down: pypto.Tensor[[512, 128], pypto.DT_BF16],
        out: pypto.Tensor[[16, 128], pypto.DT_BF16]):
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [64, 64])
    pypto.set_vec_tile_shapes(16, 64)
    u = pypto.matmul(h, w_up, pypto.DT_FP32)
    a = pypto.cast(pypto.gelu(u), pypto.DT_BF16)
    out[:] = pypto.matmul(a, w_down, pypto.DT_BF16)


def reference(h, w_up, w_down):
    f, bf = np.float32, ml_dtypes.bfloat16
    u = h.astype(f) @ w_up.astype(f)
    erf = np.vectorize(math.erf)(u / np.sqrt(2)).astype(f)
    a = (0.5 * u * (1 + erf)).astype(bf)
    return {"out": (a.astype(f) @ w_down.astype(f)).astype(bf)}


EXAMPLE = {"bind": {}}
