"""fp16 elementwise: out = (a + b) * 2.0, each op rounded to fp16 (reference basic_ops::add)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def basic_ops(a: pypto.Tensor[[64, 64], pypto.DT_FP16],
              b: pypto.Tensor[[64, 64], pypto.DT_FP16],
              out: pypto.Tensor[[64, 64], pypto.DT_FP16]):
    pypto.set_vec_tile_shapes(32, 32)
    out[:] = (a + b) * 2.0


def reference(a, b):
    return {"out": ((a + b) * np.float16(2.0)).astype(np.float16)}


EXAMPLE = {"bind": {}}
