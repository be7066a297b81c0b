import libpypto as pypto


@pypto.jit
def mixed(x: pypto.Tensor[[8, 32], pypto.DT_FP32], h: pypto.Tensor[[8, 32], pypto.DT_FP16],
          y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 32)
    y[:] = x * h
