"""A numpy function applied to a traced tensor: the error names the pypto op to use."""
import numpy as np

import libpypto as pypto


@pypto.jit
def npexp(x: pypto.Tensor[[64, 256], pypto.DT_FP32],
          y: pypto.Tensor[[64, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 256)
    y[:] = np.exp(x)
