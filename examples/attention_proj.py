"""Multi-head attention with projections on (B, S, 256) bf16, 4 heads of 64: project,
split heads with reshape + transpose, softmax attention, merge heads, output projection
(reference 03_advanced attention_with_projection)."""
import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def attention_proj(h: pypto.Tensor[[2, 32, 256], pypto.DT_BF16],
                   wq: pypto.Tensor[[256, 256], pypto.DT_BF16],
                   wk: pypto.Tensor[[256, 256], pypto.DT_BF16],
                   wv: pypto.Tensor[[256, 256], pypto.DT_BF16],
                   wo: pypto.Tensor[[256, 256], pypto.DT_BF16],
                   out: pypto.Tensor[[2, 32, 256], pypto.DT_BF16]):
    pypto.set_cube_tile_shapes([32, 32], [64, 128], [64, 64])

    def heads(w):
        x = pypto.matmul(h, w, pypto.DT_FP32)                       # (2, 32, 256)
        pypto.set_vec_tile_shapes(1, 32, 4, 64)
        x = pypto.reshape(x, [2, 32, 4, 64])
        return pypto.transpose(x, 1, 2)                           # (2, 4, 32, 64)

    q, k, v = heads(wq), heads(wk), heads(wv)
    pypto.set_vec_tile_shapes(1, 1, 32, 32)
    p = pypto.softmax(pypto.matmul(q, k, pypto.DT_FP32, b_trans=True) * 0.125, -1)
    pypto.set_vec_tile_shapes(1, 1, 32, 64)
    ctx = pypto.transpose(pypto.matmul(p, v, pypto.DT_FP32), 1, 2)  # (2, 32, 4, 64)
    pypto.set_vec_tile_shapes(1, 32, 256)
    ctx = pypto.cast(pypto.reshape(ctx, [2, 32, 256]), pypto.DT_BF16)
    out[:] = pypto.matmul(ctx, wo, pypto.DT_BF16)


def reference(h, wq, wk, wv, wo):
    f, bf = np.float32, ml_dtypes.bfloat16
    hf = h.astype(f)

    def heads(w):
        return (hf @ w.astype(f)).reshape(2, 32, 4, 64).transpose(0, 2, 1, 3)

    q, k, v = heads(wq), heads(wk), heads(wv)
    s = q @ np.swapaxes(k, -1, -2) * f(0.125)
    e = np.exp(s - s.max(-1, keepdims=True))
    ctx = ((e / e.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(2, 32, 256)
    return {"out": (ctx.astype(bf).astype(f) @ wo.astype(f)).astype(bf)}


EXAMPLE = {"bind": {}}
