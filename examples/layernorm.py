"""LayerNorm over the hidden dim in bf16 with fp32 statistics, tokens named "T"
(reference basic_nn/layer_normalization)."""
import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def layernorm(x: pypto.Tensor[["T", 128], pypto.DT_BF16],
              gamma: pypto.Tensor[[128], pypto.DT_FP32],
              beta: pypto.Tensor[[128], pypto.DT_FP32],
              y: pypto.Tensor[["T", 128], pypto.DT_BF16], eps: float = 1e-6):
    pypto.set_vec_tile_shapes(16, 128)
    xf = pypto.cast(x, pypto.DT_FP32)
    y[:] = pypto.cast(pypto.layer_norm(xf, gamma, beta, eps), pypto.DT_BF16)


def reference(x, gamma, beta, eps=1e-6):
    xf = x.astype(np.float32)
    m = xf.mean(-1, keepdims=True)
    v = ((xf - m) ** 2).mean(-1, keepdims=True)
    return {"y": ((xf - m) / np.sqrt(v + eps) * gamma + beta).astype(ml_dtypes.bfloat16)}


EXAMPLE = {"bind": {"T": 40}}
