"""Reductions and scans over every dim, with and without keepdim: sum, prod, amax, amin,
mean, var, argmax, argmin, cumsum, cumprod (reference compute/reduce_ops)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def reductions(x: pypto.Tensor[[8, 16, 32], pypto.DT_FP32],
               s0: pypto.Tensor[[1, 16, 32], pypto.DT_FP32],
               mx1: pypto.Tensor[[8, 32], pypto.DT_FP32],
               mn2: pypto.Tensor[[8, 16], pypto.DT_FP32],
               stats: pypto.Tensor[[8, 16, 1], pypto.DT_FP32],
               am: pypto.Tensor[[8, 16], pypto.DT_INT32],
               scans: pypto.Tensor[[8, 16, 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 16, 32)
    s0[:] = pypto.sum(x, 0, keepdim=True)
    mx1[:] = pypto.amax(x, 1)
    mn2[:] = pypto.amin(x, -1)
    stats[:] = pypto.mean(x, -1, keepdim=True) + pypto.var(x, -1, keepdim=True) \
        + pypto.prod(x * 0.1 + 1.0, -1, keepdim=True)
    am_max, am_min = pypto.argmax(x, -1), pypto.argmin(x, 2)
    pypto.set_vec_tile_shapes(8, 16)
    am[:] = am_max * 100 + am_min
    pypto.set_vec_tile_shapes(8, 16, 32)
    scans[:] = pypto.cumsum(x, 1) + pypto.cumprod(x * 0.01 + 1.0, 2)


def reference(x):
    f = np.float32
    return {"s0": x.sum(0, keepdims=True), "mx1": x.max(1), "mn2": x.min(-1),
            "stats": x.mean(-1, keepdims=True) + x.var(-1, ddof=1, keepdims=True)
            + np.prod(x * f(0.1) + f(1), -1, keepdims=True),
            "am": (x.argmax(-1) * 100 + x.argmin(2)).astype(np.int32),
            "scans": np.cumsum(x, 1) + np.cumprod(x * f(0.01) + f(1), 2)}


EXAMPLE = {"bind": {}}
