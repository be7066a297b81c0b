"""Tile instruction semantics in numpy: what programs emitted by the numpy backend call.

The same rules as the C backend: floats compute in float32 and round to the tile's dtype,
loads zero the part of a tile outside its valid region, stores write only the valid region,
reductions read only the valid region and accumulate in float32.
"""
from __future__ import annotations

import numpy as np

from ..ir import ops as O


def _work(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if a.dtype.kind == "f" else a.astype(np.int64)


def _put(dst: np.ndarray, value) -> None:
    v = np.asarray(value)
    if dst.dtype.kind in "iu" and v.dtype.kind == "f":
        with np.errstate(all="ignore"):
            v = np.rint(v)
    if dst.dtype.kind == "b":
        v = v != 0
    with np.errstate(all="ignore"):
        dst[...] = v.astype(dst.dtype) if v.dtype != dst.dtype else v


def _region(valid, shape) -> tuple:
    return tuple(slice(0, max(0, min(int(v), s))) for v, s in zip(valid, shape))


def tload(dst, src, offsets, valid) -> None:
    reg = _region(valid, dst.shape)
    ext = [r.stop for r in reg]
    if ext != list(dst.shape):
        dst[...] = 0
    if all(e > 0 for e in ext):
        part = src[tuple(slice(o, o + e) for o, e in zip(offsets, ext))]
        _put(dst[reg], _work(part) if part.dtype != dst.dtype else part)


def tstore(src, dst, offsets, valid) -> None:
    reg = _region(valid, src.shape)
    ext = [r.stop for r in reg]
    if all(e > 0 for e in ext):
        view = dst[tuple(slice(o, o + e) for o, e in zip(offsets, ext))]
        tile = src[reg]
        _put(view, _work(tile) if tile.dtype != dst.dtype else tile)


def tcopy(dst, src) -> None:
    _put(dst, _work(src) if src.dtype != dst.dtype else src.reshape(dst.shape))


def textract(dst, src, offsets) -> None:
    o0, o1 = offsets
    dst[...] = src[o0:o0 + dst.shape[0], o1:o1 + dst.shape[1]]


def texpands(dst, value) -> None:
    _put(dst, np.full(dst.shape, value))


def telementwise(name: str, dst, *srcs, scalar=None, scalar_side="rhs") -> None:
    d = O.ELEMENTWISE[name]
    args = [_work(s) for s in srcs]
    if scalar is not None:
        s = np.asarray(scalar, dtype=args[0].dtype)
        args = [s, args[0]] if scalar_side == "lhs" else [args[0], s]
    env = {"np": np, "a": args[0], "b": args[1] if len(args) > 1 else None}
    with np.errstate(all="ignore"):
        _put(dst, np.broadcast_to(eval(d.np, env), dst.shape))  # noqa: S307 -- catalogue


def treduce(dst, src, kind: str, dims, valid) -> None:
    reg = tuple(slice(0, max(0, min(int(valid[d]), n))) if d in dims else slice(None)
                for d, n in enumerate(src.shape))
    fn = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    part = _work(src[reg])
    if part.size == 0:
        ident = {"sum": 0, "max": -np.inf, "min": np.inf}[kind]
        _put(dst, np.full(dst.shape, ident))
        return
    _put(dst, fn(part, axis=tuple(dims), keepdims=True))


def tmatmul(acc, a, b, init, k_valid) -> None:
    k = max(0, min(int(k_valid), a.shape[1]))
    prod = _work(a[:, :k]) @ _work(b[:k, :])
    if init:
        _put(acc, prod)
    else:
        _put(acc, _work(acc) + prod)
