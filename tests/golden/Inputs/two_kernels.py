"""Two kernels in one op file: pypto-trace needs --kernel to pick one."""
import libpypto as pypto


@pypto.jit
def scale(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
          y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = x * 2.0


@pypto.jit
def shift(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
          y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = x + 1.0
