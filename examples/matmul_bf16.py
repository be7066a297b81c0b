"""bf16 matmul with a bias row, fp32 accumulation, bf16 output; B given transposed
(reference basic_ops::matmul and matmul_ops bias / b_trans)."""
import ml_dtypes
import numpy as np

import libpypto as pypto


@pypto.jit
def matmul_bf16(a: pypto.Tensor[[64, 128], pypto.DT_BF16],
                bt: pypto.Tensor[[96, 128], pypto.DT_BF16],
                bias: pypto.Tensor[[1, 96], pypto.DT_BF16],
                c: pypto.Tensor[[64, 96], pypto.DT_BF16]):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
    pypto.set_vec_tile_shapes(32, 32)
    c[:] = pypto.matmul(a, bt, pypto.DT_BF16, b_trans=True,
                        extend_params={"bias_tensor": bias})


def reference(a, bt, bias):
    f = np.float32
    out = a.astype(f) @ bt.astype(f).T + bias.astype(f)
    return {"c": out.astype(ml_dtypes.bfloat16)}


EXAMPLE = {"bind": {}}
