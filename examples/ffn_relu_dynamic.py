"""ReLU FFN in fp16 over a DYNAMIC number of tokens, 16 rows per loop iteration; the last
block is a tail cut with view(valid_shape=...) (reference ffn_module dynamic)."""
import numpy as np

import libpypto as pypto


@pypto.jit
def ffn_relu_dynamic(h: pypto.Tensor[[pypto.DYNAMIC, 128], pypto.DT_FP16],
                     w_up: pypto.Tensor[[128, 256], pypto.DT_FP16],
                     w_down: pypto.Tensor[[256, 128], pypto.DT_FP16],
                     out: pypto.Tensor[[pypto.DYNAMIC, 128], pypto.DT_FP16]):
    pypto.set_cube_tile_shapes([16, 16], [64, 128], [64, 64])
    pypto.set_vec_tile_shapes(16, 64)
    n = h.shape[0]
    for i in pypto.loop((n + 15) // 16):
        rows = (n - i * 16).min(16)
        blk = pypto.view(h, [16, 128], [i * 16, 0], valid_shape=[rows, 128])
        a = pypto.relu(pypto.matmul(blk, w_up, pypto.DT_FP16))
        pypto.assemble(pypto.matmul(a, w_down, pypto.DT_FP16), [i * 16, 0], out)


def reference(h, w_up, w_down):
    f = np.float32
    a = np.maximum((h.astype(f) @ w_up.astype(f)).astype(np.float16), 0)
    return {"out": (a.astype(f) @ w_down.astype(f)).astype(np.float16)}


EXAMPLE = {"bind": {"h_0": 37, "out_0": 37}}
