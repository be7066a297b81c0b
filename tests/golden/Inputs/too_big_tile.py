"""Tiles of (512, 1024) fp32 are 2 MiB each: more than a core's UB holds."""
import libpypto as pypto


@pypto.jit
def too_big_tile(x: pypto.Tensor[[1024, 1024], pypto.DT_FP32],
                 y: pypto.Tensor[[1024, 1024], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(512, 1024)
    y[:] = pypto.exp(x)
