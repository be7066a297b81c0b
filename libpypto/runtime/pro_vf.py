"""The Pro runner's Reg instructions (ir/reg_ops.py, written by prolang/vf.py): registers as
numpy arrays of one core, loads and stores as views of its UB bytes.

A register is an array of `lanes` elements of its dtype in the core's values (a mask: bool
lanes), zero when declared. An instruction computes on the compute type (float32 for float
lanes, int64 for integers), rounds to the destination's dtype and writes the active lanes;
the others are zero, or keep the destination's value with merge. Every formula here is
written as the C of codegen/pro_vf_c.py computes it (the same comparisons, the same
float64 steps for exp, ln, exp_sub, axpy and mul_add_dst, the same binary tree for
reduce_sum), so the two agree bit for bit; prolang/vf.py says what each instruction means.

Each instruction runs on the V pipe; a load reads, a store writes, the UB bytes it moves
(only the active lanes' span for a masked store) through the race checker, as a tile
instruction's operands do. A load or store past its tile's bytes, or an aligned one at an
address that is not 32-byte aligned, stops the run (RegRunError, a PyptoError naming the
line, as pro_exec's ProRunError).
"""
from __future__ import annotations

import numpy as np

from ..errors import PyptoError
from ..ir import expr as E
from ..ir.types import REG_BYTES


class RegRunError(PyptoError):
    """A Reg instruction went wrong at run time (past its tile, unaligned)."""


ProRunError = RegRunError


def _tile_name(v, lo) -> str:
    owner = v.owner
    name = owner.attrs.get("name", "?") if owner is not None else "?"
    return f"tile {name} ({v.type.space} bytes at {lo[0]:#x})"

F32, F64, I64 = np.float32, np.float64, np.int64


def _is_float(dt) -> bool:
    return dt.kind == "float"


def reg(core, v):
    """The register value v (zero lanes when first seen)."""
    a = core.vals.get(v)
    if a is None:
        a = core.vals[v] = np.zeros(v.type.lanes, v.type.dtype.np)
    return a


def work(core, v):
    a = reg(core, v)
    return a.astype(F32) if _is_float(v.type.dtype) else a.astype(I64)


def to_dtype(x, dt):
    """Compute-type lanes rounded to a register dtype (floats through float32, ints wrap)."""
    if _is_float(dt):
        return np.asarray(x).astype(F32).astype(dt.np)
    if dt.kind == "bool":
        return np.asarray(x) != 0
    return np.asarray(x).astype(I64).astype(dt.np)


def put(core, op, res, active) -> None:
    """Write res (compute type) into the destination's active lanes; the rest are zero, or
    keep their value with merge."""
    dst = op.operands[0]
    res = to_dtype(res, dst.type.dtype)
    keep = reg(core, dst) if op.attrs.get("merge") else np.zeros_like(res)
    core.vals[dst] = np.where(active, res, keep)


def mask(core, v):
    return reg(core, v).astype(bool)


def scalar(core, op, env, dt):
    s = op.attrs["scalar"] if "scalar" in op.attrs else op.attrs["value"]
    s = E.evaluate(s, env) if isinstance(s, E.Expr) else s
    return F32(s) if _is_float(dt) else I64(int(s))


# -- tile bytes -------------------------------------------------------------------------------

def span(core, op, tile, off: int, nbytes: int, aligned: bool) -> int:
    """The byte address in the tile's buffer of element `off` (checked: inside the tile,
    32-byte aligned for the aligned forms)."""
    arr = core.vals[tile]
    base = core.bufs[tile.type.space]
    lo = arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    rs = arr.strides[0] // arr.itemsize
    hi = lo + ((arr.shape[0] - 1) * rs + arr.shape[1]) * arr.itemsize
    at = lo + off * arr.itemsize
    name = tile.owner.attrs.get("name", "?") if tile.owner is not None else "?"
    if off < 0 or at + nbytes > hi:
        raise ProRunError(f"a register {'load' if op.name.startswith('vld') else 'store'} of "
                          f"{nbytes} bytes at element {off} of tile {name} runs past its "
                          f"{hi - lo} bytes", op.loc)
    if aligned and at % 32:
        raise ProRunError(f"{op.name} at element {off} of tile {name} is not 32-byte aligned "
                          f"(vf.load_unalign / vf.store_unalign take any offset)", op.loc)
    return at


def access(core, op, th, tile, lo: int, hi: int, write: bool) -> None:
    if core.chk.enabled and hi > lo:
        key, _, _ = core.where(tile)
        core.chk.access(th, key, [lo], [hi], write, _tile_name(tile, [lo]), op)


def _load(core, op, env, th):
    dst, tile = op.operands
    off = int(core.ev(op.attrs["offset"], env))
    at = span(core, op, tile, off, REG_BYTES, op.name == "vlds")
    access(core, op, th, tile, at, at + REG_BYTES, False)
    buf = core.bufs[tile.type.space]
    core.vals[dst] = buf[at:at + REG_BYTES].view(dst.type.dtype.np).copy()


def _store(core, op, env, th):
    tile, src = op.operands[:2]
    lanes = src.type.lanes
    off = int(core.ev(op.attrs["offset"], env))
    if op.name == "vsts":
        active = mask(core, op.operands[2])
    else:
        n = int(core.ev(op.attrs["count"], env))
        if not 0 <= n <= lanes:
            raise ProRunError(f"vf.store_unalign of {n} elements from a {lanes}-lane register",
                              op.loc)
        active = np.arange(lanes) < n
    isz = src.type.dtype.itemsize
    nbytes = (lanes if op.name == "vsts" else int(active.sum())) * isz
    at = span(core, op, tile, off, nbytes, op.name == "vsts")
    idx = np.flatnonzero(active)
    if idx.size:
        access(core, op, th, tile, at + int(idx[0]) * isz, at + (int(idx[-1]) + 1) * isz, True)
    view = core.bufs[tile.type.space][at:at + nbytes].view(src.type.dtype.np)
    view[...] = np.where(active[:view.size], reg(core, src)[:view.size], view)


# -- compute ----------------------------------------------------------------------------------

def _fmax(a, b):
    return np.where((a > b) | (a != a), a, b)


def _fmin(a, b):
    return np.where((a < b) | (a != a), a, b)


def _f64(fn, *xs):
    with np.errstate(all="ignore"):
        return fn(*(x.astype(F64) for x in xs)).astype(F32)


UNARY = {
    "vabs": lambda a: np.abs(a),
    "vneg": lambda a: -a,
    "vexp": lambda a: _f64(np.exp, a),
    "vln": lambda a: _f64(np.log, a),
    "vsqrt": lambda a: np.sqrt(a),
    "vrelu": lambda a: np.where(a > 0, a, a.dtype.type(0)),
    "vnot": lambda a: ~a,
}
BINARY = {
    "vadd": lambda a, b: a + b,
    "vsub": lambda a, b: a - b,
    "vmul": lambda a, b: a * b,
    "vdiv": lambda a, b: a / b,
    "vmax": _fmax,
    "vmin": _fmin,
    "vand": lambda a, b: a & b,
    "vor": lambda a, b: a | b,
    "vxor": lambda a, b: a ^ b,
    "vabsdif": lambda a, b: np.abs(a - b),
    "vexpsub": lambda a, b: _f64(lambda x, y: np.exp(x - y), a, b),
    "vadds": lambda a, b: a + b,
    "vsubs": lambda a, b: a - b,
    "vmuls": lambda a, b: a * b,
    "vmaxs": _fmax,
    "vmins": _fmin,
    "vlrelu": lambda a, s: np.where(a >= 0, a, a * s),
}
CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


def _compute(core, op, env, th):
    n, ops = op.name, op.operands
    a = work(core, ops[1])
    with np.errstate(all="ignore"):
        if n in UNARY:
            res = UNARY[n](a)
        elif len(ops) == 4:
            res = BINARY[n](a, work(core, ops[2]))
        else:
            res = BINARY[n](a, scalar(core, op, env, ops[1].type.dtype))
    core.cluster.flops += a.size
    put(core, op, res, mask(core, ops[-1]))


def _fused(core, op, env, th):
    """vaxpy: dst + src * scalar; vmula: dst + src0 * src1; in float64, rounded once."""
    ops = op.operands
    d, a = work(core, ops[0]).astype(F64), work(core, ops[1]).astype(F64)
    b = F64(scalar(core, op, env, F32Dt)) if op.name == "vaxpy" else \
        work(core, ops[2]).astype(F64)
    with np.errstate(all="ignore"):
        res = (d + a * b).astype(F32)
    put(core, op, res, mask(core, ops[-1]))


class F32Dt:
    kind = "float"


def _compare(core, op, env, th):
    ops = op.operands
    a = work(core, ops[1])
    b = work(core, ops[2]) if op.name == "vcmp" else scalar(core, op, env, ops[1].type.dtype)
    core.vals[ops[0]] = CMP[op.attrs["cmp"]](a, b) & mask(core, ops[-1])


def _select(core, op, env, th):
    d, a, b, m = op.operands
    core.vals[d] = np.where(mask(core, m), reg(core, a), reg(core, b))


def _dup(core, op, env, th):
    dst = op.operands[0]
    v = scalar(core, op, env, dst.type.dtype)
    lanes = dst.type.lanes
    active = mask(core, op.operands[1]) if len(op.operands) > 1 else np.ones(lanes, bool)
    put(core, op, np.full(lanes, v), active)


def _dupl(core, op, env, th):
    dst, src, m = op.operands
    a = work(core, src)
    v = a[0] if op.attrs["pos"] == "lowest" else a[-1]
    put(core, op, np.full(a.size, v), mask(core, m))


def _reduce(core, op, env, th):
    dst, src, m = op.operands
    a, active = work(core, src), mask(core, m)
    dt = src.type.dtype
    out = np.zeros(a.size, dt.np)
    if op.name == "vcadd":
        x = np.where(active, a, a.dtype.type(0))
        while x.size > 1:
            x = x[0::2] + x[1::2]
        out[:1] = to_dtype(x, dt)
    else:
        val, idx = extreme(a, active, op.name == "vcmax", dt)
        out[:1] = to_dtype(np.asarray([val]), dt)
        out.view(f"u{dt.itemsize}")[1] = idx
    core.vals[dst] = out


def extreme(a, active, is_max: bool, dt) -> tuple:
    """(value, index) of reduce_max / reduce_min: the first NaN, else the first extreme
    lane (+0 beats -0 for max, -0 beats +0 for min); an empty mask: the dtype's lowest
    (max) or highest (min) value, index 0."""
    if not active.any():
        if _is_float(dt):
            return (-np.inf if is_max else np.inf), 0
        info = np.iinfo(dt.np)
        return (info.min if is_max else info.max), 0
    if _is_float(dt):
        nan = active & (a != a)
        if nan.any():
            i = int(np.flatnonzero(nan)[0])
            return a[i], i
    vals = a[active]
    best = vals.max() if is_max else vals.min()
    cand = active & (a == best)
    if _is_float(dt) and best == 0:
        pref = cand & (np.signbit(a) != is_max)
        cand = pref if pref.any() else cand
    i = int(np.flatnonzero(cand)[0])
    return a[i], i


def _round(x, mode: str):
    x = x.astype(F64)
    if mode == "round":
        return np.trunc(x + np.copysign(0.5, x))
    return {"rint": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}[mode](x)


def convert(a, src_dt, dt, mode: str):
    """astype's lane conversion (compute type in, compute type of dt out)."""
    if _is_float(dt):
        return a.astype(F32)
    if not _is_float(src_dt):
        return a.astype(I64)
    bits = dt.itemsize * 8
    lo, hi = (0, (1 << bits) - 1) if dt.name.startswith("u") else \
        (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    with np.errstate(all="ignore"):
        r = np.clip(_round(a, mode), lo, hi)
        return np.where(a != a, 0, r).astype(I64)


def _cvt(core, op, env, th):
    dst, src, m = op.operands
    sdt, dt = src.type.dtype, dst.type.dtype
    a, active = work(core, src), mask(core, m)
    part = op.attrs["part"]
    conv = convert(a, sdt, dt, op.attrs["round"])
    n = dst.type.lanes
    if n == a.size:
        res, act = conv, active
    elif n < a.size:                      # widening: source elements 2i + part
        res, act = conv[part::2], active[part::2]
    else:                                 # narrowing: destination elements 2i + part
        res = np.zeros(n, conv.dtype)
        act = np.zeros(n, bool)
        res[part::2], act[part::2] = conv, active
    core.vals[dst] = np.where(act, to_dtype(res, dt), np.zeros(n, dt.np))


def _copy(core, op, env, th):
    dst, src = op.operands
    core.vals[dst] = reg(core, src).view(dst.type.dtype.np).copy() if op.name == "vbitcast" \
        else reg(core, src).astype(dst.type.dtype.np)


PATTERN_N = {f"VL{n}": n for n in (1, 2, 3, 4, 8, 16, 32, 64, 128)}


def pattern(name: str, lanes: int):
    i = np.arange(lanes)
    if name in PATTERN_N:
        return i < PATTERN_N[name]
    return {"ALL": i >= 0, "ALLF": i < 0, "H": i < lanes // 2, "Q": i < lanes // 4,
            "M3": i % 3 == 0, "M4": i % 4 == 0}[name]


def _pset(core, op, env, th):
    core.vals[op.operands[0]] = pattern(op.attrs["pattern"], op.operands[0].type.lanes)


def _plt(core, op, env, th):
    n = int(core.ev(op.attrs["n"], env))
    core.vals[op.operands[0]] = np.arange(op.operands[0].type.lanes) < n


def _vci(core, op, env, th):
    dst = op.operands[0]
    s = op.attrs["start"]
    s = E.evaluate(s, env) if isinstance(s, E.Expr) else s
    lanes = np.arange(dst.type.lanes)
    if _is_float(dst.type.dtype):
        i = lanes.astype(F32)
        res = F32(s) + i if op.attrs["order"] == "inc" else F32(s) - i
    else:
        res = I64(int(s)) + lanes if op.attrs["order"] == "inc" else I64(int(s)) - lanes
    core.vals[dst] = to_dtype(res, dst.type.dtype)


def _vreg(core, op, env, th):
    core.vals[op.result] = np.zeros(op.result.type.lanes, op.result.type.dtype.np)


VF = {"vreg": _vreg, "vlds": _load, "vldus": _load, "vsts": _store, "vstus": _store,
      "vdup": _dup, "vdupl": _dupl, "vaxpy": _fused, "vmula": _fused, "vcmp": _compare,
      "vcmps": _compare, "vsel": _select, "vcadd": _reduce, "vcmax": _reduce,
      "vcmin": _reduce, "vcvt": _cvt, "vbitcast": _copy, "vmov": _copy, "vci": _vci, "pset": _pset,
      "plt": _plt, **{n: _compute for n in list(UNARY) + list(BINARY)}}
