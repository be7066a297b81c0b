"""Random tensors: the reference's `pypto.uniform` and `pypto.normal`, with its signature
(shape, key, counter, alg, dtype) and its generator, so that a seed gives the reference's
numbers.

uniform -- a primitive (tensor op `uniform`, tile instruction `tuniform`): Philox4x32-10,
element i (row-major over the whole tensor) is word i % 4 of the block with counter
(i // 4, counter[1]) under key[0] (runtime/philox.py has the definition, codegen/c_ops.h the
same in C), turned into [0, 1) by its low mantissa bits (23 for fp32, 10 for fp16, 7 for
bf16). Every element depends on (key, counter, i) only: the same numbers on both backends,
for any tile shape and thread count. This reproduces the reference page's worked example
exactly (shape [4, 4], key [1234], counter [0, 1]).

normal -- a composite, the reference's Box-Muller: uniform fp32 numbers u over the shape's
element count rounded up to even; for each pair (u[2j], u[2j + 1]): r = sqrt(log(max(u[2j],
1e-7)) * -2), t = u[2j + 1] * 2 pi; z[2j] = r sin t, z[2j + 1] = r cos t; then the cast to
dtype. The page's example agrees to about 1e-6 (its numbers come from the chip's sin, cos and
log; pypto's are fp32 libm-grade, so single values differ in the last bits, as they differ
between pypto's C and numpy backends).

Choices, from the pages and the reference's code (`python/pypto/op/random.py`):
- key is [seed] with 0 <= seed < 2**64; counter is [c0, c1] and c0 is ignored (the pages:
  "counter[0] is hard-coded to 0"); alg is [1] (Philox) or [3] (auto: Philox), anything
  else is an error; the reference's 10 rounds.
- dtype fp32, fp16 or bf16; shape 1 to 4 static dims.
- the pages' tiling limits (view shape = shape, the tile's last dim a multiple of 4, for
  normal one tile for everything) are the device's; pypto tiles with the vec tile in force
  and gets the same numbers for any tile. normal of a shape whose last dim is odd has pairs
  that straddle rows: it is made as one stream of pairs (tiles of pairs), reshaped to the
  shape (tensor-to-tile copies a big reshape by blocks, passes/reshape_rows.py).
"""
from __future__ import annotations

import math

from ..ir.types import F32, DType, TensorType
from .composites import concat
from .ops import _b, _result, _tile, cast, cos, log, maximum, mul, reshape, sin, sqrt, view

MASK32 = 0xFFFFFFFF


def _check(b, what: str, shape, key, counter, alg, dtype):
    if not isinstance(shape, (list, tuple)) or not 1 <= len(shape) <= 4 or \
            not all(isinstance(d, int) and d > 0 for d in shape):
        raise b.error(f"{what}: shape must be a list of 1 to 4 positive ints, not {shape!r}")
    if not isinstance(key, (list, tuple)) or len(key) != 1 or not isinstance(key[0], int) \
            or not 0 <= key[0] < 2 ** 64:
        raise b.error(f"{what}: key must be [seed] with 0 <= seed < 2**64, not {key!r}")
    if not isinstance(counter, (list, tuple)) or len(counter) != 2 or \
            not all(isinstance(c, int) and 0 <= c < 2 ** 64 for c in counter):
        raise b.error(f"{what}: counter must be two ints in [0, 2**64), not {counter!r}")
    if not isinstance(alg, (list, tuple)) or len(alg) != 1 or alg[0] not in (1, 3):
        raise b.error(f"{what}: alg must be [1] (Philox) or [3] (auto, Philox), not {alg!r}")
    if not isinstance(dtype, DType) or dtype.name not in ("f32", "f16", "bf16"):
        raise b.error(f"{what}: dtype must be DT_FP32, DT_FP16 or DT_BF16, not {dtype!r}")


def _uniform(b, shape, key: int, counter1: int, dtype: DType, tile: list):
    op = b.emit("uniform", [], [TensorType(dtype, tuple(shape))],
                {"key": [key & MASK32, key >> 32], "counter": [counter1 & MASK32,
                                                               counter1 >> 32],
                 "rounds": 10, "tile": tile})
    return _result(op)


def uniform(shape, key, counter, alg, dtype):
    """Uniform [0, 1) numbers of the given shape: Philox4x32-10 under key[0], counter[1]."""
    b = _b()
    _check(b, "uniform", shape, key, counter, alg, dtype)
    tile = _tile(b, len(shape), dtype, list(shape), "uniform", strict=False)
    return _uniform(b, list(shape), key[0], counter[1], dtype, tile)


def normal(shape, key, counter, alg, dtype):
    """Standard normal numbers of the given shape: Box-Muller over uniform's pairs."""
    b = _b()
    _check(b, "normal", shape, key, counter, alg, dtype)
    user_tile = _tile(b, len(shape), dtype, list(shape), "normal", strict=False)
    n = math.prod(shape)
    if shape[-1] % 2 == 0:          # pairs along each row: the same stream, tiled by rows
        pairs = list(shape[:-1]) + [shape[-1] // 2, 2]
        inner = list(user_tile[:-1]) + [max(1, min(pairs[-2], user_tile[-1] // 2)), 2]
    else:                           # one stream of n rounded up to even, in tiles of pairs
        pairs = [(n + 1) // 2, 2]
        inner = [max(1, min(pairs[0], math.prod(user_tile) // 2)), 2]
    saved, b.vec_tile = b.vec_tile, inner
    try:
        u = _uniform(b, pairs, key[0], counter[1], F32, inner)
        half = pairs[:-1] + [1]
        zero = [0] * len(pairs)
        u1 = maximum(view(u, half, zero), 1.0e-7)
        u2 = view(u, half, zero[:-1] + [1])
        t = mul(u2, 2.0 * math.pi)
        r = sqrt(mul(log(u1), -2.0))
        z = concat([mul(sin(t), r), mul(cos(t), r)], -1)
        if shape[-1] % 2:
            z = view(reshape(z, [pairs[0] * 2]), [n], [0])
    finally:
        b.vec_tile = saved
    z = reshape(z, list(shape))
    return z if dtype == F32 else cast(z, dtype)
