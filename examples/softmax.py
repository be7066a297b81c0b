"""Row softmax over a DYNAMIC number of rows: y = exp(x - max(x)) / sum(exp(x - max(x)))."""
import numpy as np

import libpypto as pypto


@pypto.jit
def softmax(x: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32],
            y: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 1024)
    m = pypto.amax(x, dim=-1, keepdim=True)
    e = pypto.exp(x - m)
    y[:] = e / pypto.sum(e, dim=-1, keepdim=True)


def reference(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return {"y": e / e.sum(-1, keepdims=True)}


EXAMPLE = {"bind": {"x_0": 100}}       # 100 rows: the last tile of 8 is a tail of 4
