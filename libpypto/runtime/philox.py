"""The counter-based generator of `pypto.uniform` and `pypto.normal`, in numpy: the tensor
interpreter and the numpy backend's tile instruction call it, and the C backend prints the
same arithmetic (codegen/c_ops.h pp_philox); tests hold the two equal bit for bit.

Philox4x32 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
SC 2011; the Random123 constants): a 128-bit counter (c0, c1, c2, c3) and a 64-bit key
(k0, k1); each round takes hi/lo of 0xD2511F53 * c0 and 0xCD9E8D57 * c2 and gives
(hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0), then bumps the key by (0x9E3779B9, 0xBB67AE85).
Element i of the result (row-major over the whole tensor) is word i % 4 of the block whose
counter is (i // 4) as c0, c1 (low and high words) and the op's counter as c2, c3 -- the
reference's layout: its counter[0] is fixed at 0 and its counter[1] is the upper 64 bits,
the block number increments the lower 64. Each element is computed from (key, counter, i)
alone, so tiles and threads cannot change a value.

The unit float of a word x is its low mantissa bits over a power of two: fp32 (x & 0x7fffff)
/ 2**23, fp16 (x & 0x3ff) / 2**10, bf16 (x & 0x7f) / 2**7 -- exactly the reference's
"mantissa bits under exponent 0, minus 1.0", and exact in every dtype: in [0, 1).
"""
from __future__ import annotations

import numpy as np

from ..ir.ops import UNIFORM_BITS

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def words(v: int) -> list:
    """A uint64 as its (low, high) 32-bit words."""
    return [v & MASK32, (v >> 32) & MASK32]


def philox_bits(index: np.ndarray, key, counter, rounds: int = 10) -> np.ndarray:
    """The uint32 word of each flat element index (int64 array): key and counter are the two
    32-bit words of the op's key and of its counter's upper 64 bits."""
    index = np.asarray(index, np.uint64)
    block, lane = index >> np.uint64(2), index & np.uint64(3)
    c = [block & np.uint64(MASK32), block >> np.uint64(32),
         np.full(index.shape, counter[0], np.uint64), np.full(index.shape, counter[1], np.uint64)]
    k0, k1 = int(key[0]), int(key[1])
    m32 = np.uint64(MASK32)
    for _ in range(rounds):
        p0 = np.uint64(M0) * c[0]                   # < 2**64: exact in uint64
        p1 = np.uint64(M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & m32,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & m32]
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    out = np.choose(lane.astype(np.int64), c)
    return out.astype(np.uint32)


def unit_floats(bits: np.ndarray, dtype_name: str) -> np.ndarray:
    """[0, 1) floats (float64, exact in the named dtype) from the words."""
    if dtype_name not in UNIFORM_BITS:
        raise ValueError(f"uniform makes fp32, fp16 or bf16, not {dtype_name}")
    n = UNIFORM_BITS[dtype_name]
    return (bits & np.uint32((1 << n) - 1)).astype(np.float64) * 2.0 ** -n


def uniform_block(offsets, tile_shape, shape, key, counter, rounds, dtype_name) -> np.ndarray:
    """The tile at offsets (tile_shape) of a uniform tensor of the given shape, as float64."""
    idx = np.zeros(tuple(tile_shape), np.int64)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        pos = int(offsets[d]) + np.arange(tile_shape[d], dtype=np.int64)
        view = [1] * len(shape)
        view[d] = tile_shape[d]
        idx = idx + pos.reshape(view) * stride
        stride *= int(shape[d])
    return unit_floats(philox_bits(idx, key, counter, rounds), dtype_name)
