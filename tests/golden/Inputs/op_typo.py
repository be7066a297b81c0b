"""A misspelt op name (pypto.expp): the error offers the closest one."""
import libpypto as pypto


@pypto.jit
def typo(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
         y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = pypto.expp(x)
