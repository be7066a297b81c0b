"""Integer and bool ops: bitwise and shifts, floor division and remainder with negative
operands, comparisons, casts between int8, int32, int64, bool and fp32."""
import numpy as np

import libpypto as pypto


@pypto.jit
def int_ops(a: pypto.Tensor[[16, 64], pypto.DT_INT32],
            b: pypto.Tensor[[16, 64], pypto.DT_INT32],
            c: pypto.Tensor[[16, 64], pypto.DT_INT8],
            bits: pypto.Tensor[[16, 64], pypto.DT_INT32],
            arith: pypto.Tensor[[16, 64], pypto.DT_INT64],
            casts: pypto.Tensor[[16, 64], pypto.DT_FP32],
            mask: pypto.Tensor[[16, 64], pypto.DT_BOOL]):
    pypto.set_vec_tile_shapes(16, 64)
    bits[:] = (a & b) | (a ^ 5) | pypto.bitwise_left_shift(a & 7, 2) \
        | pypto.bitwise_right_shift(pypto.abs(b), 1) | ~b
    a64 = pypto.cast(a, pypto.DT_INT64)
    b64 = pypto.cast(b, pypto.DT_INT64) + 9
    arith[:] = pypto.floor_div(a64, b64) * 100 + pypto.remainder(a64, b64) * 10 \
        + pypto.fmod(a64, b64) + pypto.maximum(a64, b64) - pypto.minimum(a64, 3) + a64 * b64
    casts[:] = pypto.cast(c, pypto.DT_FP32) * 0.5 + pypto.cast(pypto.cast(a, pypto.DT_FP32) * 0.75,
                                                              pypto.DT_INT32).cast(pypto.DT_FP32)
    mask[:] = pypto.logical_xor(a > b, c == 3) if hasattr(pypto, "logical_xor") else \
        pypto.logical_or(a > b, pypto.cast(c, pypto.DT_INT32) == 3)


def reference(a, b, c):
    a64, b64 = a.astype(np.int64), b.astype(np.int64) + 9
    bits = (a & b) | (a ^ 5) | ((a & 7) << 2) | (np.abs(b) >> 1) | ~b
    arith = np.floor_divide(a64, b64) * 100 + np.remainder(a64, b64) * 10 + np.fmod(a64, b64) \
        + np.maximum(a64, b64) - np.minimum(a64, 3) + a64 * b64
    # a float -> int cast without a mode truncates (the reference's CAST_NONE for the pair)
    third = np.trunc(a.astype(np.float32) * np.float32(0.75)).astype(np.int32).astype(np.float32)
    casts = c.astype(np.float32) * np.float32(0.5) + third
    return {"bits": bits.astype(np.int32), "arith": arith, "casts": casts,
            "mask": (a > b) | (c.astype(np.int32) == 3)}


EXAMPLE = {"bind": {}}
