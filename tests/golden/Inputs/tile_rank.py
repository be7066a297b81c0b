"""A rank-3 vector tile shape for rank-2 operands."""
import libpypto as pypto


@pypto.jit
def tile_rank(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
              y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(2, 16, 256)
    y[:] = pypto.exp(x)
