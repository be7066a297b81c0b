"""Elementwise add: out = x + y, fp32, one row block per task."""

import libpypto as pypto


@pypto.jit
def add(x: pypto.Tensor[[256, 512], pypto.DT_FP32],
        y: pypto.Tensor[[256, 512], pypto.DT_FP32],
        out: pypto.Tensor[[256, 512], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(32, 512)
    out[:] = x + y


def reference(x, y):
    return {"out": x + y}


EXAMPLE = {"bind": {}}
