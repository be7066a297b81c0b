"""Rotary position embedding, half-rotate form, on (T, H, 64) bf16 with fp32 math:
o = [x1 cos - x2 sin, x2 cos + x1 sin] for the halves x1, x2 (GLM / LLaMA style)."""
import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def rope(x: pypto.Tensor[["T", 8, 64], pypto.DT_BF16],
         cos: pypto.Tensor[["T", 1, 32], pypto.DT_FP32],
         sin: pypto.Tensor[["T", 1, 32], pypto.DT_FP32],
         out: pypto.Tensor[["T", 8, 64], pypto.DT_BF16]):
    pypto.set_vec_tile_shapes(4, 8, 32)
    xf = pypto.cast(x, pypto.DT_FP32)
    x1, x2 = xf[:, :, 0:32], xf[:, :, 32:64]
    out[:, :, 0:32] = pypto.cast(x1 * cos - x2 * sin, pypto.DT_BF16)
    out[:, :, 32:64] = pypto.cast(x2 * cos + x1 * sin, pypto.DT_BF16)


def reference(x, cos, sin):
    xf = x.astype(np.float32)
    x1, x2 = xf[..., :32], xf[..., 32:]
    o = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)
    return {"out": o.astype(ml_dtypes.bfloat16)}


EXAMPLE = {"bind": {"T": 6}}
