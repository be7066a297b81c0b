"""Runtime branches inside a loop: `if i < 2` on the symbolic index, and is_loop_begin /
is_loop_end; out = x + y, plus 1 on the first two batches, plus 10 on the first and 20 on
the last (reference controlflow/condition)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def conditions(x: pypto.Tensor[["B", 32, 256], pypto.DT_FP32],
               y: pypto.Tensor[["B", 32, 256], pypto.DT_FP32],
               out: pypto.Tensor[["B", 32, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 8, 256)
    for i in pypto.loop(x.shape[0]):
        s = pypto.view(x, [1, 32, 256], [i, 0, 0]) + pypto.view(y, [1, 32, 256], [i, 0, 0])
        if i < 2:
            s = s + 1.0
        if pypto.is_loop_begin(i):
            s = s + 10.0
        elif pypto.is_loop_end(i):
            s = s + 20.0
        pypto.assemble(s, [i, 0, 0], out)


def reference(x, y):
    out = x + y
    out[:2] += np.float32(1)
    out[0] += np.float32(10)
    if out.shape[0] > 1:
        out[-1] += np.float32(20)
    return {"out": out}


EXAMPLE = {"bind": {"B": 5}}
