"""Both dims DYNAMIC: out = 2 * x over (rows, cols) blocks of 32 x 64 with tails in both
dims, nested pypto.loop regions (reference basic_ops::dynamic_add, controlflow/dynamic)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def dynamic_shapes(x: pypto.Tensor[["M", "N"], pypto.DT_FP16],
                   out: pypto.Tensor[["M", "N"], pypto.DT_FP16]):
    m, n = x.shape[0], x.shape[1]
    pypto.set_vec_tile_shapes(32, 64)
    for i in pypto.loop((m + 31) // 32):
        for j in pypto.loop((n + 63) // 64):
            rows, cols = (m - i * 32).min(32), (n - j * 64).min(64)
            blk = pypto.view(x, [32, 64], [i * 32, j * 64], valid_shape=[rows, cols])
            pypto.assemble(blk * 2.0, [i * 32, j * 64], out)


def reference(x):
    return {"out": (x * np.float16(2)).astype(np.float16)}


EXAMPLE = {"bind": {"M": 70, "N": 150}}
