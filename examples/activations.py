"""Activations in bf16 (fp32 inside): SiLU, GELU (erf and tanh forms), SwiGLU, GeGLU,
leaky and parametric ReLU (reference 02_intermediate activation)."""
import math

import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def activations(x: pypto.Tensor[[32, 128], pypto.DT_BF16],
                up: pypto.Tensor[[32, 128], pypto.DT_BF16],
                w: pypto.Tensor[[128], pypto.DT_FP32],
                silu: pypto.Tensor[[32, 128], pypto.DT_BF16],
                gelu: pypto.Tensor[[32, 128], pypto.DT_BF16],
                gelu_tanh: pypto.Tensor[[32, 128], pypto.DT_BF16],
                swiglu: pypto.Tensor[[32, 128], pypto.DT_BF16],
                geglu: pypto.Tensor[[32, 128], pypto.DT_BF16],
                relus: pypto.Tensor[[32, 128], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(32, 32)
    xf = pypto.cast(x, pypto.DT_FP32)
    uf = pypto.cast(up, pypto.DT_FP32)
    silu[:] = pypto.cast(pypto.silu(xf), pypto.DT_BF16)
    gelu[:] = pypto.cast(pypto.gelu(xf), pypto.DT_BF16)
    gelu_tanh[:] = pypto.cast(pypto.gelu(xf, approximate="tanh"), pypto.DT_BF16)
    swiglu[:] = pypto.cast(pypto.silu(xf) * uf, pypto.DT_BF16)
    geglu[:] = pypto.cast(pypto.gelu(xf) * uf, pypto.DT_BF16)
    relus[:] = pypto.lrelu(xf, 0.1) + pypto.prelu(xf, w) + pypto.relu(xf)


def reference(x, up, w):
    f, bf = np.float32, ml_dtypes.bfloat16
    xf, uf = x.astype(f), up.astype(f)
    erf = np.vectorize(math.erf)(xf / np.sqrt(2)).astype(f)
    sil = xf / (1 + np.exp(-xf))
    gel = 0.5 * xf * (1 + erf)
    tan = 0.5 * xf * (1 + np.tanh(np.sqrt(2 / np.pi) * (xf + 0.044715 * xf ** 3)))
    return {"silu": sil.astype(bf), "gelu": gel.astype(bf), "gelu_tanh": tan.astype(bf),
            "swiglu": (sil * uf).astype(bf), "geglu": (gel * uf).astype(bf),
            "relus": np.where(xf < 0, xf * f(0.1), xf) + np.where(xf < 0, xf * w, xf)
            + np.maximum(xf, 0)}


EXAMPLE = {"bind": {}}
