"""Adding a [64, 256] and a [64, 128] tensor: a shape mismatch at trace time."""
import libpypto as pypto


@pypto.jit
def shape_mismatch(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
                   y: pypto.Tensor[[64, 128], pypto.DT_FP32],
                   z: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    z[:] = x + y
