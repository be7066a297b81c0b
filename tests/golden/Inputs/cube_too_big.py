import libpypto as pypto


@pypto.jit
def mm(a: pypto.Tensor[[512, 512], pypto.DT_FP32], b: pypto.Tensor[[512, 512], pypto.DT_FP32],
       c: pypto.Tensor[[512, 512], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([256, 256], [128, 128], [64, 64])   # L0A: 128 KiB of fp32
    c[:] = pypto.matmul(a, b, pypto.DT_FP32)
