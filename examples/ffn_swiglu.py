"""SwiGLU FFN in bf16: out = (silu(h @ W_gate) * (h @ W_up)) @ W_down
(reference basic_nn/ffn swiglu_ffn)."""
import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def ffn_swiglu(h: pypto.Tensor[[16, 128], pypto.DT_BF16],
               w_gate: pypto.Tensor[[128, 256], pypto.DT_BF16],
               w_up: pypto.Tensor[[128, 256], pypto.DT_BF16],
               w_down: pypto.Tensor[[256, 128], pypto.DT_BF16],
               out: pypto.Tensor[[16, 128], pypto.DT_BF16]):
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [64, 64])
    pypto.set_vec_tile_shapes(16, 64)
    g = pypto.matmul(h, w_gate, pypto.DT_FP32)
    u = pypto.matmul(h, w_up, pypto.DT_FP32)
    a = pypto.cast(pypto.silu(g) * u, pypto.DT_BF16)
    out[:] = pypto.matmul(a, w_down, pypto.DT_BF16)


def reference(h, w_gate, w_up, w_down):
    f, bf = np.float32, ml_dtypes.bfloat16
    g, u = h.astype(f) @ w_gate.astype(f), h.astype(f) @ w_up.astype(f)
    a = (g / (1 + np.exp(-g)) * u).astype(bf)
    return {"out": (a.astype(f) @ w_down.astype(f)).astype(bf)}


EXAMPLE = {"bind": {}}
