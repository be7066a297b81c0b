"""The Pro runner's numpy for the instructions of libpypto/ir/tile_ops_more.py (semantics:
libpypto/prolang/ops_more.py's docstring); codegen/pro_c_more.py is their C, which must agree
bit for bit. pro_exec.py hooks KERNELS in and calls load_mx for an MX scale load."""
from __future__ import annotations

import numpy as np

from ..errors import PyptoError
from .interp import cast_array, work


class ProOpError(PyptoError):
    """An instruction of this module went wrong at run time (an index outside its tile, a
    scale tile away from its data tile's address >> 4)."""


def _err(msg, op):
    return ProOpError(msg, op.loc)


def _put(dst, value):
    """pro_exec._put: the value converted to dst's dtype (cast_array's rounding)."""
    v = np.asarray(value)
    dst[...] = v if v.dtype == dst.dtype else cast_array(v, dst.dtype)


def fp8_to_f64(a: np.ndarray) -> np.ndarray:
    """fp8 / E8M0 values as float64 (exact; E8M0 0xFF is NaN)."""
    return a.astype(np.float64)


def load_mx(core, op, env, src, dst):
    """An E8M0 scale box [r, g/2, 2] (ZZ) or [g/2, c, 2] (NN) into a Mat tile."""
    if op.attrs["mx"] == "ZZ":
        r, h, _ = src.shape
        _put(dst[:r, :2 * h], src.reshape(r, 2 * h))
    else:
        h, c, _ = src.shape
        _put(dst[:2 * h, :c], src.transpose(0, 2, 1).reshape(2 * h, c))


def _scale_addr(core, op, i, data_i):
    """The MX instruction reads its scales at the data tile's address >> 4."""
    v, d = op.operands[i], op.operands[data_i]
    lo = core.where(v)[1][0]
    dlo = core.where(d)[1][0]
    if lo != dlo >> 4:
        raise _err(f"{op.name}: the scale tile is at {lo:#x}, but the instruction reads the "
                   f"scales of its data tile (at {dlo:#x}) at {dlo >> 4:#x}", op)


def _tmatmul_mx(core, op, env):
    acc, a, b, sa, sb = (core.vals[v] for v in op.operands)
    _scale_addr(core, op, 3, 1)
    _scale_addr(core, op, 4, 2)
    m, n = core.valid(op, env, acc.shape)
    k = max(0, min(int(core.ev(op.attrs["k_valid"], env)), a.shape[1]))
    ka = np.arange(k) // 32
    da = fp8_to_f64(a[:m, :k]) * fp8_to_f64(sa[:m][:, ka])
    db = fp8_to_f64(b[:k, :n]) * fp8_to_f64(sb[ka][:, :n])
    s = np.zeros((m, n), np.float64)
    with np.errstate(all="ignore"):
        for q in range(k):              # in order, as the C
            s = s + da[:, q:q + 1] * db[q:q + 1, :]
        if not int(core.ev(op.attrs["init"], env)):
            s = acc[:m, :n].astype(np.float64) + s
    core.cluster.flops += 2 * m * n * k
    _put(acc[:m, :n], s.astype(np.float32))


def _rows(core, op, env):
    d = core.vals[op.operands[0]]
    return d, core.valid(op, env, d.shape)


def _tquant(core, op, env):
    (d, (r, c)), src = _rows(core, op, env), core.vals[op.operands[1]]
    scale = core.vals[op.operands[2]][:r, :1]
    v = np.rint(src[:r, :c].astype(np.float32) * scale)
    if op.attrs["mode"] == "asym":
        v = np.rint(v + core.vals[op.operands[3]][:r, :1])
    lo, hi = (-128, 127) if op.attrs["mode"] == "sym" else (0, 255)
    _put(d[:r, :c], np.clip(np.nan_to_num(v, nan=0.0), lo, hi).astype(d.dtype))


def _tdequant(core, op, env):
    (d, (r, c)), src = _rows(core, op, env), core.vals[op.operands[1]]
    scale, off = (core.vals[v][:r, :1] for v in op.operands[2:4])
    _put(d[:r, :c], (src[:r, :c].astype(np.float32) - off) * scale)


def _tvgather(core, op, env):
    (d, (r, c)), src = _rows(core, op, env), core.vals[op.operands[1]]
    idx = core.vals[op.operands[2]][:r, :c].astype(np.int64) + op.attrs["offset"]
    if idx.size and (idx.min() < 0 or idx.max() >= src.size):
        raise _err(f"gather index {int(idx.min() if idx.min() < 0 else idx.max())} is outside "
                   f"the {src.size} elements of its source", op)
    flat = np.ascontiguousarray(src).reshape(-1)
    _put(d[:r, :c], flat[idx])


def _tvscatter(core, op, env):
    d, src, idx = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, src.shape)
    ix = idx[:r, :c].astype(np.int64).reshape(-1)
    if ix.size and (ix.min() < 0 or ix.max() >= d.size):
        raise _err(f"scatter index {int(ix.min() if ix.min() < 0 else ix.max())} is outside "
                   f"the {d.size} elements of its destination", op)
    vals = src[:r, :c].reshape(-1)
    _, first = np.unique(ix[::-1], return_index=True)
    keep = len(ix) - 1 - first                      # the last write to each index wins
    d[ix[keep] // d.shape[1], ix[keep] % d.shape[1]] = vals[keep]


def _desc(vals):
    """Stable descending order, NaN last."""
    return np.argsort(-vals.astype(np.float64), kind="stable")


def _records(vals, ids, dt):
    """(value, uint32 index) 8-byte records of a dtype, as a flat array of that dtype."""
    n = len(vals)
    out = np.zeros(n * 8, np.uint8)
    rec = out.reshape(n, 8)
    w = dt.itemsize
    rec[:, :w] = np.ascontiguousarray(vals.astype(dt)).view(np.uint8).reshape(n, w)
    rec[:, 4:] = np.ascontiguousarray(ids.astype(np.uint32)).view(np.uint8).reshape(n, 4)
    return out.view(dt)


def _tsort32(core, op, env):
    d, src, idx = (core.vals[v] for v in op.operands[:3])
    r, c = core.valid(op, env, src.shape)
    w = 8 // src.dtype.itemsize
    for i in range(r):
        ids = idx[i if idx.shape[0] > 1 else 0]
        for g in range(0, c, 32):
            v = src[i, g:min(c, g + 32)]
            o = _desc(v)
            d[i, g * w:(g + len(v)) * w] = _records(v[o], ids[g:g + len(v)][o], src.dtype)


def _unpack(row, dt):
    rec = np.ascontiguousarray(row).view(np.uint8).reshape(-1, 8)
    vals = rec[:, :dt.itemsize].copy().view(dt).reshape(-1)
    ids = rec[:, 4:].copy().view(np.uint32).reshape(-1)
    return vals, ids


def _tmrgsort(core, op, env):
    d, src = (core.vals[v] for v in op.operands)
    w, bl = 8 // src.dtype.itemsize, op.attrs["block_len"]
    n = src.shape[1]
    for g in range(0, n, 4 * bl):
        vals, ids = _unpack(src[0, g:min(n, g + 4 * bl)], src.dtype)
        o = _desc(vals)                 # stable: ties keep the earlier run first
        d[0, g:g + len(vals) * w] = _records(vals[o], ids[o], src.dtype)


def _thistogram(core, op, env):
    d, src, idx = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, src.shape)
    x = src[:r, :c].astype(np.int64)
    hi, lo = x >> 8, x & 0xFF
    for i in range(r):
        byte = hi[i] if op.attrs["msb"] else lo[i][hi[i] == int(idx[i, 0])]
        counts = np.bincount(byte, minlength=256)[:256]
        d[i, :256] = np.cumsum(counts).astype(np.uint32)


def pad_value(dt: np.dtype, pad: str):
    """The value of a TilePad for a dtype (floats: +-inf for max / min)."""
    if pad == "zero":
        return 0
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return int(info.max if pad == "max" else info.min)
    return float("inf") if pad == "max" else float("-inf")


def _tfillpad(core, op, env):
    d, src = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, src.shape)
    res = np.full(d.shape, pad_value(d.dtype, op.attrs["pad"]), d.dtype)
    res[:r, :c] = src[:r, :c]           # built first: INPLACE reads what it writes
    d[...] = res


def _targ(core, op, env):
    d, src = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, src.shape)
    x = work(src[:r, :c]).astype(np.float64)
    if op.attrs["dim"] == 1:
        x = x.T
    big = op.name == "targmax"
    key = np.where(np.isnan(x), np.inf if big else -np.inf, x)
    pos = np.argmax(key, axis=1) if big else np.argmin(key, axis=1)
    nan = np.isnan(x)
    first_nan = np.where(nan.any(axis=1), nan.argmax(axis=1), pos)
    res = first_nan.astype(np.int64)
    if op.attrs["dim"] == 0:
        _put(d[:len(res), :1], res.reshape(-1, 1))
    else:
        _put(d[:1, :len(res)], res.reshape(1, -1))


def _fused(core, op, env):
    (d, (r, c)) = _rows(core, op, env)
    srcs = [work(core.vals[v][:r, :c]) for v in op.operands[1:]]
    out = work(d[:r, :c])
    kind = op.name[1:]
    f = out.dtype.kind == "f"
    with np.errstate(all="ignore"):
        if kind in ("add_relu", "add_relu_cast"):
            v = _relu(srcs[0] + srcs[1], f)
        elif kind in ("sub_relu", "sub_relu_cast"):
            v = _relu(srcs[0] - srcs[1], f)
        elif kind == "mul_cast":
            v = srcs[0] * srcs[1]
        elif kind == "addc":
            v = srcs[0] + srcs[1] + srcs[2]
        elif kind == "mul_add_dst":
            v = srcs[0] * srcs[1] + out
        elif kind == "fused_mul_add":
            v = srcs[0] * out + srcs[1]
        elif kind == "fused_mul_add_relu":
            v = _relu(out * srcs[0] + srcs[1], f)
        elif kind == "axpy":
            v = srcs[0] * out.dtype.type(core.ev(op.attrs["alpha"], env)) + out
        elif kind == "xor":
            v = srcs[0] ^ srcs[1]
        else:
            v = _shift(kind, srcs[0], srcs[1], core.vals[op.operands[1]].dtype)
    core.cluster.flops += r * c
    _put(d[:r, :c], v)


def _relu(v, is_float: bool):
    """x if x > 0 (or NaN) else 0: the C's pp_relu_nan."""
    if is_float:
        return np.where((v > 0) | np.isnan(v), v, v.dtype.type(0))
    return np.maximum(v, 0)


def _shift(kind, a, s, dt):
    """Shifts by 0..bits-1 (a count outside gives 0, or -1 for a negative signed shr)."""
    bits = dt.itemsize * 8
    ok = (s >= 0) & (s < bits)
    sc = np.where(ok, s, 0)
    if kind == "shl":
        return np.where(ok, a << sc, 0)
    if dt.kind == "u":
        return np.where(ok, a >> sc, 0)
    return np.where(ok, a >> sc, np.where(a < 0, -1, 0))


KERNELS_MORE = {"tmatmul_mx": _tmatmul_mx, "tquant": _tquant, "tdequant": _tdequant,
                "tvgather": _tvgather, "tvscatter": _tvscatter, "tsort32": _tsort32,
                "tmrgsort": _tmrgsort, "thistogram": _thistogram, "tfillpad": _tfillpad,
                "targmax": _targ,
                "targmin": _targ}
KERNELS_MORE.update({"t" + k: _fused for k in (
    "add_relu", "sub_relu", "addc", "mul_add_dst", "fused_mul_add", "fused_mul_add_relu",
    "axpy", "shl", "shr", "xor", "add_relu_cast", "sub_relu_cast", "mul_cast")})
