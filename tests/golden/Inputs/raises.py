"""An op file whose kernel raises a plain Python exception while it traces."""
import libpypto as pypto


@pypto.jit
def raises(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
           y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    scale = {"a": 1.0}["b"]
    y[:] = x * scale
