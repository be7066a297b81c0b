"""Loops: two pypto.loop regions over 64-row blocks, one with step 2 covering two blocks per
iteration; every block is written once (reference controlflow/loop loop_basic)."""

import libpypto as pypto


@pypto.jit
def loops(t0: pypto.Tensor[[512, 64], pypto.DT_FP16],
          t1: pypto.Tensor[[512, 64], pypto.DT_FP16],
          out0: pypto.Tensor[[512, 64], pypto.DT_FP16],
          out1: pypto.Tensor[[512, 64], pypto.DT_FP16], s: int = 64, n: int = 8):
    pypto.set_vec_tile_shapes(64, 64)
    for i in pypto.loop(n):
        a = pypto.view(t0, [s, 64], [i * s, 0])
        b = pypto.view(t1, [s, 64], [i * s, 0])
        pypto.assemble(a + b, [i * s, 0], out0)
    for i in pypto.loop(0, n, 2):
        a = pypto.view(t0, [2 * s, 64], [i * s, 0])
        b = pypto.view(t1, [2 * s, 64], [i * s, 0])
        pypto.assemble(a + b, [i * s, 0], out1)


def reference(t0, t1):
    return {"out0": t0 + t1, "out1": t0 + t1}


EXAMPLE = {"bind": {}}
