import libpypto as pypto


@pypto.jit
def rows(x: pypto.Tensor[[pypto.DYNAMIC, 32], pypto.DT_FP32],
         y: pypto.Tensor[[pypto.DYNAMIC, 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 32)
    for i in range(x.shape[0]):
        y[i:i + 1, :] = x[i:i + 1, :]
