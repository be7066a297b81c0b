import libpypto as pypto


@pypto.jit
def escape(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 32)
    for i in pypto.loop(4):
        t = x * 2.0
    y[:] = t
