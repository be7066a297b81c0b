"""Writing a parameter that was read first: it is an input, and inputs are read-only."""
import libpypto as pypto


@pypto.jit
def write_input(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
                y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = pypto.exp(x)
    x[:] = y + 1.0
