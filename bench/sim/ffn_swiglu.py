"""SwiGLU FFN out = (silu(h @ W_gate) * (h @ W_up)) @ W_down in bf16 at a model's size. The
sizes are STATIC (T tokens `h_0`, H hidden `h_1` and `w_down_1`, I intermediate `w_gate_1`
and `w_up_1`: `pypto-run bench/sim/ffn_swiglu.py --bind h_0=1024 ...`), so the lowering sees
whole grids: the gate and up projections both load h's tiles into L1, which l1-reuse shares
(bench/sim/l1_reuse.py times it with and without).
Cube tiles [128, 256, 128] (M, K in L1, N): two fp32 accumulators of 64 KiB fit one L0C."""
import ml_dtypes
import numpy as np

import libpypto as pypto

S = pypto.STATIC


@pypto.jit
def ffn_swiglu(h: pypto.Tensor[[S, S], pypto.DT_BF16],
               w_gate: pypto.Tensor[[S, S], pypto.DT_BF16],
               w_up: pypto.Tensor[[S, S], pypto.DT_BF16],
               w_down: pypto.Tensor[[S, S], pypto.DT_BF16],
               out: pypto.Tensor[[S, S], pypto.DT_BF16]):
    pypto.set_cube_tile_shapes([128, 128], [64, 256], [128, 128])
    pypto.set_vec_tile_shapes(64, 256)
    g = pypto.matmul(h, w_gate, pypto.DT_FP32)
    u = pypto.matmul(h, w_up, pypto.DT_FP32)
    a = pypto.cast(pypto.silu(g) * u, pypto.DT_BF16)
    out[:] = pypto.matmul(a, w_down, pypto.DT_BF16)


def reference(h, w_gate, w_up, w_down):
    f, bf = np.float32, ml_dtypes.bfloat16
    g, u = h.astype(f) @ w_gate.astype(f), h.astype(f) @ w_up.astype(f)
    a = (g / (1 + np.exp(-g)) * u).astype(bf)
    return {"out": (a.astype(f) @ w_down.astype(f)).astype(bf)}


EXAMPLE = {"bind": {"h_0": 256, "h_1": 256, "w_gate_1": 512, "w_up_1": 512, "w_down_1": 256}}
