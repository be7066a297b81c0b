"""Flash attention with an online softmax over KV blocks: the running max, sum and output
live in local tensors, initialised under is_loop_begin and finalised under is_loop_end; the
score matrix is never written whole (models/glm attention pattern)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def flash_attention(q: pypto.Tensor[[64, 64], pypto.DT_FP32],
                    k: pypto.Tensor[["S", 64], pypto.DT_FP32],
                    v: pypto.Tensor[["S", 64], pypto.DT_FP32],
                    o: pypto.Tensor[[64, 64], pypto.DT_FP32], blk: int = 64):
    pypto.set_cube_tile_shapes([64, 64], [64, 64], [64, 64])
    pypto.set_vec_tile_shapes(64, 64)
    acc = pypto.tensor([64, 64], pypto.DT_FP32, "acc")
    row_max = pypto.tensor([64, 1], pypto.DT_FP32, "row_max")
    row_sum = pypto.tensor([64, 1], pypto.DT_FP32, "row_sum")
    for j in pypto.loop(k.shape[0] // blk):
        kj = pypto.view(k, [blk, 64], [j * blk, 0])
        vj = pypto.view(v, [blk, 64], [j * blk, 0])
        s = pypto.matmul(q, kj, pypto.DT_FP32, b_trans=True) * 0.125
        if pypto.is_loop_begin(j):
            m = pypto.amax(s, -1, keepdim=True)
            p = pypto.exp(s - m)
            row_max[:] = m
            row_sum[:] = pypto.sum(p, -1, keepdim=True)
            acc[:] = pypto.matmul(p, vj, pypto.DT_FP32)
        else:
            m = pypto.maximum(row_max, pypto.amax(s, -1, keepdim=True))
            alpha = pypto.exp(row_max - m)
            p = pypto.exp(s - m)
            row_sum[:] = row_sum * alpha + pypto.sum(p, -1, keepdim=True)
            acc[:] = acc * alpha + pypto.matmul(p, vj, pypto.DT_FP32)
            row_max[:] = m
        if pypto.is_loop_end(j):
            o[:] = acc / row_sum


def reference(q, k, v):
    s = q @ k.T / np.float32(8)
    e = np.exp(s - s.max(-1, keepdims=True))
    return {"o": (e / e.sum(-1, keepdims=True)) @ v}


EXAMPLE = {"bind": {"S": 192}}
