"""The likeliest first mistake: `y = expr` instead of `y[:] = expr`, so nothing is written."""
import libpypto as pypto


@pypto.jit
def no_output(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
              y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y = pypto.exp(x)
