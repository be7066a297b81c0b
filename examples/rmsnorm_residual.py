"""Residual add then RMSNorm, bf16 in and out (fp32 inside): returns the normalised
hidden state and the new residual (the InplaceAddRmsNorm pattern)."""
import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def rmsnorm_residual(x: pypto.Tensor[["T", 256], pypto.DT_BF16],
                     residual: pypto.Tensor[["T", 256], pypto.DT_BF16],
                     gamma: pypto.Tensor[[256], pypto.DT_BF16],
                     y: pypto.Tensor[["T", 256], pypto.DT_BF16],
                     residual_out: pypto.Tensor[["T", 256], pypto.DT_BF16],
                     eps: float = 1e-6):
    pypto.set_vec_tile_shapes(256)
    g = pypto.cast(gamma, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(8, 256)
    r = pypto.cast(x, pypto.DT_FP32) + pypto.cast(residual, pypto.DT_FP32)
    residual_out[:] = pypto.cast(r, pypto.DT_BF16)
    y[:] = pypto.cast(pypto.rms_norm(r, g, eps), pypto.DT_BF16)


def reference(x, residual, gamma, eps=1e-6):
    f, bf = np.float32, ml_dtypes.bfloat16
    r = x.astype(f) + residual.astype(f)
    y = r / np.sqrt((r * r).mean(-1, keepdims=True) + eps) * gamma.astype(f)
    return {"y": y.astype(bf), "residual_out": r.astype(bf)}


EXAMPLE = {"bind": {"T": 21}}
