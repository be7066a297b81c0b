import libpypto as pypto

@pypto.jit
def softmax(x: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32],
            y: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 1024)
    m = pypto.amax(x, dim=-1, keepdim=True)
    e = pypto.exp(x - m)
    y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
