"""Matmul c = a @ b with fp32 accumulation, M DYNAMIC; K walked in L1 steps of 256."""
import numpy as np

import libpypto as pypto


@pypto.jit
def matmul(a: pypto.Tensor[["M", 512], pypto.DT_FP32],
           b: pypto.Tensor[[512, 256], pypto.DT_FP32],
           c: pypto.Tensor[["M", 256], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([128, 128], [128, 256], [128, 128])
    c[:] = pypto.matmul(a, b, pypto.DT_FP32)


def reference(a, b):
    return {"c": (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)}


EXAMPLE = {"bind": {"M": 200}}
