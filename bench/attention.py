"""Attention on the host, a suite of bench/bench.py: the flash-attention pattern of
examples/flash_attention.py (an online softmax over KV blocks of 128, the running max, sum
and output in local tensors) on (1, H, S, 128) fp32 with 4-D batched matmuls, beside numpy
(the scores materialised) and torch's `scaled_dot_product_attention` (eager and compiled),
as issue 12 asks: batch 1, 32 heads, S = 1024, head dim 128 (--quick: 4 heads, S = 256).

    python bench/bench.py --only attention

The case follows bench/README.md's suite format; the FLOPs are the two matmuls'
(4 B H S^2 D), what SDPA is usually measured by.
"""
# no `from __future__ import annotations`: the kernel's annotations use local names
import numpy as np

import libpypto as pypto

D = 128
BLK = 128


def make_kernel(H: int):
    """The flash-attention kernel over (1, H, S, D), S named."""
    @pypto.jit
    def flash_attention(q: pypto.Tensor[[1, H, "S", D], pypto.DT_FP32],
                        k: pypto.Tensor[[1, H, "S", D], pypto.DT_FP32],
                        v: pypto.Tensor[[1, H, "S", D], pypto.DT_FP32],
                        o: pypto.Tensor[[1, H, "S", D], pypto.DT_FP32]):
        pypto.set_cube_tile_shapes([128, 128], [128, 128], [128, 128])
        pypto.set_vec_tile_shapes(1, 1, 64, 128)
        n = q.shape[2]
        acc = pypto.tensor([1, H, n, D], pypto.DT_FP32, "acc")
        row_max = pypto.tensor([1, H, n, 1], pypto.DT_FP32, "row_max")
        row_sum = pypto.tensor([1, H, n, 1], pypto.DT_FP32, "row_sum")
        for j in pypto.loop(k.shape[2] // BLK):
            kj = pypto.view(k, [1, H, BLK, D], [0, 0, j * BLK, 0])
            vj = pypto.view(v, [1, H, BLK, D], [0, 0, j * BLK, 0])
            s = pypto.matmul(q, kj, pypto.DT_FP32, b_trans=True) * (1.0 / np.sqrt(D))
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
    return flash_attention


def np_attention(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(D))
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def cases(quick: bool):
    """One case: the issue's attention shape (small when quick)."""
    H, S = (4, 256) if quick else (32, 1024)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, H, S, D), dtype=np.float32) for _ in range(3))
    o = np.zeros_like(q)
    kern = make_kernel(H)
    yield {"op": "flash attention", "shape": f"1x{H}x{S}x{D} f32",
           "pypto": lambda: kern(q, k, v, o), "kernels": [kern], "result": lambda: o,
           "numpy": lambda: np_attention(q, k, v),
           "torch": lambda torch: (torch.nn.functional.scaled_dot_product_attention,
                                   tuple(torch.from_numpy(x) for x in (q, k, v))),
           "flops": 4 * H * S * S * D, "tol": 1e-4}
