"""An op file that is not valid Python."""
import libpypto as pypto


@pypto.jit
def syntax_error(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
                 y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    y[:] = (x +
