"""Batched matmul with batch broadcasting ((1,S,K) @ (B,K,N)) and a transposed A
((B,K,M)^T @ (B,K,N)), fp32 (reference compute/matmul_ops)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def matmul_batched(a: pypto.Tensor[[1, 48, 64], pypto.DT_FP32],
                   b: pypto.Tensor[["B", 64, 32], pypto.DT_FP32],
                   at: pypto.Tensor[["B", 64, 48], pypto.DT_FP32],
                   c: pypto.Tensor[["B", 48, 32], pypto.DT_FP32],
                   d: pypto.Tensor[["B", 48, 32], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
    c[:] = pypto.matmul(a, b, pypto.DT_FP32)
    d[:] = pypto.matmul(at, b, pypto.DT_FP32, a_trans=True)


def reference(a, b, at):
    return {"c": np.matmul(a, b), "d": np.matmul(np.swapaxes(at, -1, -2), b)}


EXAMPLE = {"bind": {"B": 3}}
