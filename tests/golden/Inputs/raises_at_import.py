"""An op file that raises while it is imported, before any kernel traces."""
import libpypto as pypto

SIZES = [64, 256]
ROWS = SIZES[2]


@pypto.jit
def raises_at_import(x: pypto.Tensor[[ROWS, 256], pypto.DT_FP32],
                     y: pypto.Tensor[[ROWS, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = x
