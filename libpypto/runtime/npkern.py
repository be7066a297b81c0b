"""Tile instruction semantics in numpy: what programs emitted by the numpy backend call.

The same rules as the C backend: floats compute in float32 (integers in int64) and round to
the destination tile's dtype; loads zero the part of a tile outside its valid region, stores
write only the valid region; reductions, scans and sorts read only the valid region. The
elementwise, cast and sort semantics are the tensor interpreter's own (one definition).
"""
from __future__ import annotations

import numpy as np

from ..errors import PyptoError
from .interp import (bitonic_step, cast_array, elementwise, exchange, is_float, reduce_array,
                     sort_rows, work)
from .philox import uniform_block


def _put(dst: np.ndarray, value) -> None:
    v = np.asarray(value)
    if v.dtype != dst.dtype:
        v = cast_array(v, _dt(dst))
    dst[...] = v


class _DT:
    def __init__(self, np_dtype):
        self.np = np_dtype


def _dt(a: np.ndarray) -> _DT:
    return _DT(a.dtype)


def _lead(tile: np.ndarray, rank: int) -> np.ndarray:
    """A tile seen with the rank of its GM tensor (missing leading dims are 1)."""
    return tile.reshape((1,) * (rank - tile.ndim) + tile.shape)


def _region(valid, shape) -> tuple:
    return tuple(slice(0, max(0, min(int(v), s))) for v, s in zip(valid, shape))


def tload(dst, src, offsets, valid) -> None:
    d = _lead(dst, src.ndim)
    reg = _region(valid, d.shape)
    ext = [r.stop for r in reg]
    if ext != list(d.shape):
        dst[...] = 0
    if all(e > 0 for e in ext):
        _put(d[reg], src[tuple(slice(o, o + e) for o, e in zip(offsets, ext))])


def tstore(src, dst, offsets, valid) -> None:
    s = _lead(src, dst.ndim)
    reg = _region(valid, s.shape)
    ext = [r.stop for r in reg]
    if all(e > 0 for e in ext):
        _put(dst[tuple(slice(o, o + e) for o, e in zip(offsets, ext))], s[reg])


def tcvt(dst, src, mode=None, sat=False) -> None:
    """A conversion with a rounding mode and saturation (runtime/cast.py)."""
    src = src.reshape(dst.shape) if src.size == dst.size else src
    dst[...] = cast_array(src, dst.dtype, mode, bool(sat))


def tcopy(dst, src) -> None:
    _put(dst, src.reshape(dst.shape) if src.size == dst.size else src)


def tbitcast(dst, src) -> None:
    """The same bytes as dst's dtype (pack / unpack)."""
    dst[...] = np.ascontiguousarray(src).view(dst.dtype).reshape(dst.shape)


def textract(dst, src, offsets, trans=False) -> None:
    s = src.reshape(src.shape[-2:])
    o0, o1 = offsets
    r, c = dst.shape
    dst[...] = s[o0:o0 + c, o1:o1 + r].T if trans else s[o0:o0 + r, o1:o1 + c]


def texpands(dst, value) -> None:
    _put(dst, np.full(dst.shape, value))


def tiota(dst, start, step, offset) -> None:
    _put(dst, start + (offset + np.arange(dst.shape[0])) * step)


def tuniform(dst, offsets, shape, key, counter, rounds) -> None:
    """Philox4x32 [0, 1) floats of the tile at offsets of a tensor of shape (runtime/philox)."""
    _put(dst, uniform_block(offsets, dst.shape, shape, key, counter, rounds, _name(dst)))


def _name(a: np.ndarray) -> str:
    return {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}[a.dtype.name]


def telementwise(name: str, dst, *srcs, scalar=None, scalar_side="rhs") -> None:
    res = elementwise(name, [work(s) for s in srcs], scalar, scalar_side)
    _put(dst, np.broadcast_to(res, dst.shape))


def ttri(dst, src, lower, diagonal, row0, col0) -> None:
    r, c = src.shape[-2:]
    rows = row0 + np.arange(r)[:, None]
    cols = col0 + np.arange(c)[None, :]
    keep = (cols - rows <= diagonal) if lower else (cols - rows >= diagonal)
    _put(dst, np.where(keep, src, np.zeros((), src.dtype)))


def ttrans(dst, src, perm) -> None:
    _put(dst, np.transpose(src, perm))


def treduce(dst, src, kind: str, dims, valid) -> None:
    reg = tuple(slice(0, max(0, min(int(valid[d]), n))) if d in dims else slice(None)
                for d, n in enumerate(src.shape))
    part = src[reg]
    if part.size == 0:
        ident = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf}[kind]
        _put(dst, np.full(dst.shape, ident))
        return
    _put(dst, reduce_array(kind, part, tuple(dims), True))


def targreduce(acc_v, acc_i, src, kind, dim, valid, base, init) -> None:
    n = max(0, min(int(valid[dim]), src.shape[dim]))
    part = work(np.take(src, np.arange(n), axis=dim))
    if n == 0:
        return
    fn = np.argmax if kind == "max" else np.argmin
    i = np.expand_dims(fn(part, axis=dim), dim)
    v = np.take_along_axis(part, i, dim)
    if init:
        _put(acc_v, v)
        _put(acc_i, i + base)
        return
    better = v > acc_v if kind == "max" else v < acc_v
    better |= np.isnan(v) & ~np.isnan(acc_v) if is_float(part.dtype) else False
    _put(acc_i, np.where(better, i + base, acc_i))
    _put(acc_v, np.where(better, v, acc_v))


def tscan(dst, src, carry, kind, dim, valid, init) -> None:
    fn = np.cumsum if kind == "sum" else np.cumprod
    n = max(0, min(int(valid[dim]), src.shape[dim]))
    part = work(np.take(src, np.arange(n), axis=dim))
    if not init:
        c = work(carry)
        part = np.concatenate([c, part], axis=dim)
        out = np.take(fn(part, axis=dim), np.arange(1, n + 1), axis=dim)
    else:
        out = fn(part, axis=dim)
    full = np.zeros(dst.shape, out.dtype)
    idx = [slice(None)] * dst.ndim
    idx[dim] = slice(0, n)
    full[tuple(idx)] = out
    _put(dst, full)
    if n:
        _put(carry, np.take(out, [n - 1], axis=dim))


def tsort(vals, idx, src, descending, valid) -> None:
    n = max(0, min(int(valid[-1]), src.shape[-1]))
    v, i = sort_rows(src[..., :n], descending)
    vals[...] = 0
    idx[...] = 0
    vals[..., :n] = v
    idx[..., :n] = i


def tbitonic(dv, di, sv, si, n, descending, steps) -> None:
    """Bitonic steps [block, distance, mirrored] inside each row of the tiles."""
    v, i = sv.copy(), si.astype(np.int64)
    for s, d, flip in steps:
        v, i = bitonic_step(v, i, int(s), int(d), bool(flip), int(n), bool(descending))
    dv[...], di[...] = v, i


def tbitonic2(lv, li, hv, hi, slv, sli, shv, shi, n, descending, mirror) -> None:
    """The compare-exchange of two tiles (the second reversed when mirror)."""
    b_v, b_i = (shv[..., ::-1], shi[..., ::-1]) if mirror else (shv, shi)
    a, b, c, e = exchange(slv, sli.astype(np.int64), b_v, b_i.astype(np.int64), int(n),
                          bool(descending))
    lv[...], li[...] = a, b
    hv[...], hi[...] = (c[..., ::-1], e[..., ::-1]) if mirror else (c, e)


def tgather(dst, src, index, dim, mode, out_offsets, region_offsets, region_shape) -> None:
    n = int(region_shape[dim])
    x = src[tuple(slice(o, o + int(s)) for o, s in zip(region_offsets, region_shape))]
    idx = np.mod(index.astype(np.int64), n)
    if mode == "select":
        coords = np.indices(dst.shape)
        sel = [np.clip(c + o, 0, int(s) - 1) for c, o, s in zip(coords, out_offsets, region_shape)]
        sel[dim] = idx[coords[dim].clip(0, idx.shape[0] - 1)]
        _put(dst, x[tuple(sel)])
        return
    coords = np.indices(dst.shape)
    sel = [np.clip(c + o, 0, int(s) - 1) for c, o, s in zip(coords, out_offsets, region_shape)]
    sel[dim] = idx
    _put(dst, x[tuple(sel)])


def tscatter(out, index, src, mode, dim, reduce, out_region, index_region, src_region=None,
             value=None, alpha=1) -> None:
    def sub(a, r):
        return a[tuple(slice(o, o + int(s)) for o, s in zip(r["region_offsets"], r["region_shape"]))]
    o = sub(out, out_region)
    idx = np.mod(sub(index, index_region).astype(np.int64), o.shape[dim])
    s = work(sub(src, src_region)) if src is not None else None
    acc = work(o)
    if mode == "index_add":
        for j, t in enumerate(idx):
            dst = [slice(None)] * o.ndim
            dst[dim] = t
            sel = [slice(None)] * o.ndim
            sel[dim] = j
            contrib = s[tuple(sel)] if alpha == 1 else \
                cast_array(s[tuple(sel)] * alpha, _dt(o)).astype(acc.dtype)
            acc[tuple(dst)] = cast_array(acc[tuple(dst)] + contrib, _dt(o))
    else:
        for pos in np.ndindex(*idx.shape):
            tgt = list(pos)
            tgt[dim] = idx[pos]
            tgt = tuple(tgt)
            v = s[pos] if s is not None else value
            if reduce == "add":
                acc[tgt] = cast_array(np.asarray(acc[tgt] + v), _dt(o))
            elif reduce == "multiply":
                acc[tgt] = cast_array(np.asarray(acc[tgt] * v), _dt(o))
            else:
                acc[tgt] = v
    _put(o, acc)


def tmatmul(acc, a, b, init, k_valid) -> None:
    k = max(0, min(int(k_valid), a.shape[1]))
    prod = work(a[:, :k]) @ work(b[:k, :])
    _put(acc, prod if init else work(acc) + prod)


def tinsert(dst, src, offsets, valid=None) -> None:
    r, c = src.shape if valid is None else (max(0, min(int(v), n)) for v, n in
                                             zip(valid, src.shape))
    o0, o1 = (int(o) for o in offsets)
    _put(dst[o0:o0 + r, o1:o1 + c], src[:r, :c])


def tvf(*_operands, **_attrs) -> None:
    """Reg instructions (libpypto/ir/reg_ops.py) run on the Pro runner (runtime/pro_vf.py):
    a Tensor-mode numpy program never has one."""
    raise NotImplementedError("Reg instructions run only in Pro kernels (the Pro runner)")
def tpro_only(*_args, **_attrs) -> None:
    """The Pro-only instructions (libpypto/ir/tile_ops_more.py): Tensor mode never makes
    them; the Pro runner (pro_exec_more.py) runs them."""
    raise PyptoError("a Pro-only instruction (MX matmul, quant, sort32, ...) runs only on "
                     "the Pro runner")


def tsync(**_attrs) -> None:
    """Synchronisation instructions (libpypto/ir/pro_ops.py): no-ops in program order; the
    Pro runner (pro_exec.py) gives them their meaning between pipes and cores."""
    if "body" in _attrs:        # simt_launch (ir/simt_ops.py): Pro mode's executions only
        raise ValueError("a SIMT launch runs only on the Pro runner or the Pro C")
