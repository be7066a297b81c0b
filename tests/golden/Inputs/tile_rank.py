"""A rank-1 vector tile shape for rank-2 operands (a higher rank is fine: its trailing dims
are used, as in the reference; a lower one is an error)."""
import libpypto as pypto


@pypto.jit
def tile_rank(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
              y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(256)
    y[:] = pypto.exp(x)
