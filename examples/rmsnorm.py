"""RMSNorm over the hidden dim: y = x / sqrt(mean(x^2) + eps) * gamma, tokens DYNAMIC."""
import numpy as np

import libpypto as pypto


@pypto.jit
def rmsnorm(x: pypto.Tensor[["T", 4096], pypto.DT_FP32],
            gamma: pypto.Tensor[[4096], pypto.DT_FP32],
            y: pypto.Tensor[["T", 4096], pypto.DT_FP32],
            eps: float = 1e-6):
    pypto.set_vec_tile_shapes(4, 4096)
    ms = pypto.sum(x * x, dim=-1, keepdim=True) * (1.0 / 4096)
    y[:] = x * pypto.rsqrt(ms + eps) * gamma


def reference(x, gamma, eps=1e-6):
    ms = (x.astype(np.float64) ** 2).mean(-1, keepdims=True)
    return {"y": (x / np.sqrt(ms + eps) * gamma).astype(np.float32)}


EXAMPLE = {"bind": {"T": 37}}
