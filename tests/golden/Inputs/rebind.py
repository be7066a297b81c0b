"""The classic trap: `z = expr` rebinds the name and writes nothing into z (y is written)."""
import libpypto as pypto


@pypto.jit
def rebind(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
           y: pypto.Tensor[[64, 256], pypto.DT_FP32],
           z: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = pypto.exp(x)
    z = pypto.exp(y)
