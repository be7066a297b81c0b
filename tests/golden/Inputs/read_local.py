import libpypto as pypto


@pypto.jit
def uninit(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 32)
    acc = pypto.tensor([8, 32], pypto.DT_FP32, "acc")
    y[:] = acc + x
