"""An op file that imports a module that is not installed."""
import libpypto as pypto
import pypto_no_such_module  # noqa: F401


@pypto.jit
def missing_module(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
                   y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = x
