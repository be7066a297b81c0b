"""Tile shape (8, 1000) for fp16: 2000 bytes in the last dim is not a multiple of 32."""
import libpypto as pypto


@pypto.jit
def unaligned_tile_fp16(x: pypto.Tensor[[64, 2048], pypto.DT_FP16],
                        y: pypto.Tensor[[64, 2048], pypto.DT_FP16]):
    pypto.set_vec_tile_shapes(8, 1000)
    y[:] = pypto.exp(x)
