"""An op file with no @pypto.jit kernel: a plain function is not traced."""
import libpypto as pypto


def not_a_kernel(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
                 y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    y[:] = x
