"""Tile shape (8, 1020) for fp32: 4080 bytes in the last dim is not a multiple of 32.

((8, 1000) would be aligned for fp32: 4000 = 125 x 32 bytes.)
"""
import libpypto as pypto


@pypto.jit
def unaligned_tile(x: pypto.Tensor[[64, 2048], pypto.DT_FP32],
                   y: pypto.Tensor[[64, 2048], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 1020)
    y[:] = pypto.exp(x)
