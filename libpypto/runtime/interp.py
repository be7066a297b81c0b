"""Reference interpretation of the Tensor Graph with numpy: the executable semantics.

Every op computes in float32 for fp16/bf16 (in int64 for integers) and rounds its result to
the declared dtype; reductions, scans and matmul accumulate in float32 (int64 for integers).
Values that came from a view with valid_shape carry their valid region: reductions read only
inside it and assemble writes only inside it. Loops run for the bound sizes; `if` regions
take the branch their condition selects. Indices wrap modulo the indexed dim.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import PyptoError
from ..ir import expr as E
from ..ir import ops as O
from ..analysis.expand import check, read_value
from ..ir.defs import OPS
from ..ir.types import dtype as _dtype
from . import cast as _cast
from .cast import is_float
from .philox import uniform_block

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
NP_ENV = {"np": np, "erf": lambda a: _erf(a).astype(a.dtype), "erfc": lambda a: _erfc(a).astype(a.dtype)}


def run_tensor(doc, arrays: dict, env: dict, dump=None, probe=None) -> dict:
    """Interpret the tensor graph; arrays hold every parameter and are updated in place.
    dump: callable(op, array), called with every value an op computes, in order (an op in a
    loop once per iteration). probe: callable(op, tensors, env) for each probe
    (pass_verify_print / _save) whose cond holds; without it probes do nothing."""
    ops = doc.body
    for op in doc.body:
        if op.name == "source":
            ops = op.regions[0]
    it = _Interp(arrays, env, dump)
    it.probe = probe
    it.region(ops)
    return arrays


def work(a: np.ndarray) -> np.ndarray:
    """The compute type of an array: float32 for floats, int64 for integers and bools."""
    return a.astype(np.float32) if is_float(a.dtype) else a.astype(np.int64)


def cast_array(x: np.ndarray, dt, mode: str | None = None, sat: bool = False) -> np.ndarray:
    """Convert to a pypto dtype (or its name, or a numpy dtype) with a rounding mode (None:
    the reference's default for the pair of dtypes) and saturation: runtime/cast.py."""
    target = dt if isinstance(dt, np.dtype) else (_dtype(dt).np if isinstance(dt, str) else dt.np)
    return _cast.cast_array(x, target, mode, sat)


def elementwise(name: str, args: list, scalar=None, side: str = "rhs"):
    """numpy semantics of a catalogue op on compute-type arrays."""
    d = O.ELEMENTWISE[name]
    if scalar is not None:
        s = np.asarray(scalar, dtype=args[0].dtype)
        args = [s, args[0]] if side == "lhs" else [args[0], s]
    env = dict(NP_ENV, a=args[0], b=args[1] if len(args) > 1 else None,
               c=args[2] if len(args) > 2 else None)
    with np.errstate(all="ignore"):
        return eval(d.np, env)   # noqa: S307 -- catalogue strings, not user input


def reduce_array(kind: str, x: np.ndarray, dims: tuple, keepdims: bool):
    fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "amax": np.max,
          "amin": np.min}[kind]
    return fn(work(x), axis=dims, keepdims=keepdims)


def sort_rows(x: np.ndarray, descending: bool):
    """Stable sort along the last dim: (values, int64 indices); ties keep the lower index."""
    w = work(x)
    key = -w if descending else w
    if is_float(w.dtype):
        # NaN sorts last ascending and first descending, as torch does
        key = np.where(np.isnan(w), -np.inf if descending else np.inf, key)
    idx = np.argsort(key, axis=-1, kind="stable")
    return np.take_along_axis(x, idx, -1), idx.astype(np.int64)


def before(va, ia, vb, ib, n: int, desc: bool) -> np.ndarray:
    """Does (va, ia) come before (vb, ib) in a sort (bitonic)? Positions >= n are padding,
    after everything; NaN after every number ascending, before descending; equal values in
    position order (the stable sort's order)."""
    pa, pb = ia >= n, ib >= n
    if is_float(va.dtype):
        na, nb = np.isnan(va), np.isnan(vb)
    else:
        na = nb = np.zeros(va.shape, bool)
    with np.errstate(invalid="ignore"):
        cmp = np.where(va != vb, (va > vb) if desc else (va < vb), ia < ib)
    return np.where(pa | pb, np.where(pa == pb, ia < ib, pb),
                    np.where(na | nb, np.where(na == nb, ia < ib, na if desc else nb), cmp))


def exchange(lo_v, lo_i, hi_v, hi_i, n: int, desc: bool):
    """The compare-exchange of two equal-shaped halves: the one that comes first goes low."""
    swap = before(hi_v, hi_i, lo_v, lo_i, n, desc)
    return (np.where(swap, hi_v, lo_v), np.where(swap, hi_i, lo_i),
            np.where(swap, lo_v, hi_v), np.where(swap, lo_i, hi_i))


def bitonic_step(v, i, s: int, d: int, flip: bool, n: int, desc: bool):
    """One step of the bitonic network along the last dim (a multiple of 2d, or of s for a
    mirrored step): element u pairs with u + d in blocks of 2d, or mirrored (with s - 1 - u)
    in blocks of s when flip."""
    lead, m = v.shape[:-1], v.shape[-1]
    w = s if flip else 2 * d
    rv, ri = v.reshape(*lead, m // w, 2, w // 2), i.reshape(*lead, m // w, 2, w // 2)
    lo_v, lo_i, hi_v, hi_i = rv[..., 0, :], ri[..., 0, :], rv[..., 1, :], ri[..., 1, :]
    if flip:
        hi_v, hi_i = hi_v[..., ::-1], hi_i[..., ::-1]
    a, b, c, e = exchange(lo_v, lo_i, hi_v, hi_i, n, desc)
    if flip:
        c, e = c[..., ::-1], e[..., ::-1]
    return (np.stack([a, c], -2).reshape(v.shape), np.stack([b, e], -2).reshape(i.shape))


class _Interp:
    def __init__(self, arrays, env, dump=None):
        self.arrays, self.env = arrays, dict(env)
        self.vals: dict = {}     # Value -> (array, valid tuple or None)
        self.dump = dump
        self.probe = None        # run_tensor's probe handler

    def ev(self, e):
        return int(E.evaluate(e, self.env))

    def offsets(self, op) -> list:
        """An op's offsets for the bound sizes; a negative one is an error at its line."""
        offs = [self.ev(o) for o in op.attrs["offsets"]]
        if any(o < 0 for o in offs):
            raise PyptoError(f"{op.name} offsets {offs} are negative for these sizes", op.loc)
        return offs

    def region(self, ops) -> None:
        for op in ops:
            d = OPS.get(op.name)
            if d is None or "interp" not in d.impl:
                raise PyptoError(f"the tensor interpreter has no rule for op {op.name!r}", op.loc)
            getattr(self, d.impl["interp"])(op)

    def get(self, v):
        return self.vals[v]

    def set(self, op, arr, valid=None, i: int = 0):
        r = op.results[i]
        self.vals[r] = (np.asarray(arr).astype(r.type.dtype.np, copy=False), valid)
        if self.dump is not None:
            self.dump(op, self.vals[r][0])

    # memory
    def op_param(self, op):
        self.vals[op.result] = (self.arrays[op.result.name], None)

    def op_tensor(self, op):
        shape = [self.ev(d) for d in op.result.type.shape]
        a = self.arrays.setdefault(op.result.name, np.zeros(shape, op.result.type.dtype.np))
        self.vals[op.result] = (a, None)

    # control flow
    def op_loop(self, op):
        a = op.attrs
        start, stop, step = self.ev(a["start"]), self.ev(a["stop"]), self.ev(a["step"])
        for i in range(start, stop, step):
            self.env[a["var"]] = i
            self.region(op.regions[0])
        self.env.pop(a["var"], None)

    def op_check(self, op):
        check(op, self.env)

    def op_read(self, op):
        name = op.attrs["param"]
        self.env[op.attrs["var"]] = read_value(op, self.env, {name: self.arrays[name]})

    def op_bitonic(self, op):
        """One kernel of a long sort: its steps over the whole last dim (the pairs of a tile
        step lie in one tile, so tiles do not change them)."""
        a = op.attrs
        v, i = self.get(op.operands[0])[0], self.get(op.operands[1])[0].astype(np.int64)
        n, desc = a["n"], a["descending"]
        if a["mode"] == "tile":
            steps = a["steps"]
        else:
            d = a["dist"]
            steps = [[2 * d, d, a["mode"] == "mirror"]]
        for s_, d_, flip in steps:
            v, i = bitonic_step(v, i, s_, d_, bool(flip), n, desc)
        self.set(op, v, None, 0)
        self.set(op, i, None, 1)

    def op_probe(self, op):
        if self.probe is not None and self.ev(op.attrs["cond"]):
            self.probe(op, [self.get(v)[0] for v in op.operands], dict(self.env))

    def op_if(self, op):
        self.region(op.regions[0] if self.ev(op.attrs["cond"]) else op.regions[1])

    # elementwise
    def op_elementwise(self, op):
        t = op.result.type
        ins = [self.get(v) for v in op.operands]
        valid = _merge_valid(ins, [self.ev(d) for d in t.shape])
        if op.name == "cast":
            self.set(op, cast_array(ins[0][0], t.dtype.np, op.attrs.get("mode"),
                                    bool(op.attrs.get("sat"))), valid)
            return
        scalar = op.attrs.get("scalar")
        if isinstance(scalar, E.Expr):
            scalar = self.ev(scalar)
        res = elementwise(op.name, [work(a) for a, _ in ins], scalar,
                          op.attrs.get("scalar_side", "rhs"))
        self.set(op, _round_to(np.broadcast_to(res, [self.ev(d) for d in t.shape]), t.dtype),
                 valid)

    def op_full(self, op):
        shape = [self.ev(d) for d in op.result.type.shape]
        v = op.attrs["value"]
        v = self.ev(v) if isinstance(v, E.Expr) else v
        self.set(op, _round_to(np.full(shape, v), op.result.type.dtype))

    def op_arange(self, op):
        a = op.attrs
        start = self.ev(a["start"]) if isinstance(a["start"], E.Expr) else a["start"]
        step = self.ev(a["step"]) if isinstance(a["step"], E.Expr) else a["step"]
        n = self.ev(op.result.type.shape[0])
        self.set(op, _round_to(start + np.arange(n) * step, op.result.type.dtype))

    def op_uniform(self, op):
        a, t = op.attrs, op.result.type
        shape = [self.ev(d) for d in t.shape]
        v = uniform_block([0] * len(shape), shape, shape, a["key"], a["counter"], a["rounds"],
                          t.dtype.name)
        self.set(op, _round_to(v, t.dtype))

    # views and writes
    def op_view(self, op):
        src, src_valid = self.get(op.operands[0])
        offs = self.offsets(op)
        shape = [self.ev(s) for s in op.attrs["shape"]]
        out = np.zeros(shape, src.dtype)
        region = tuple(slice(o, min(o + s, d)) for o, s, d in zip(offs, shape, src.shape))
        part = src[region]
        out[tuple(slice(0, n) for n in part.shape)] = part
        valid = [min(s, d - o) for o, s, d in zip(offs, shape, src.shape)]
        if "valid" in op.attrs:
            valid = [min(v, self.ev(x)) for v, x in zip(valid, op.attrs["valid"])]
        if src_valid is not None:
            valid = [min(v, sv - o) for v, sv, o in zip(valid, src_valid, offs)]
        valid = [max(v, 0) for v in valid]
        self.vals[op.result] = (out, tuple(valid) if valid != shape else None)

    def op_assemble(self, op):
        src, valid = self.get(op.operands[0])
        dst = self.get(op.operands[1])[0]
        offs = self.offsets(op)
        ext = [min(v if valid else s, d - o)
               for v, s, d, o in zip(valid or src.shape, src.shape, dst.shape, offs)]
        if any(e <= 0 for e in ext):
            return
        dst[tuple(slice(o, o + e) for o, e in zip(offs, ext))] = \
            src[tuple(slice(0, e) for e in ext)]

    def op_reshape(self, op):
        x, _ = self.get(op.operands[0])
        self.set(op, x.reshape([self.ev(d) for d in op.result.type.shape]).copy())

    def op_bitcast(self, op):
        x, _ = self.get(op.operands[0])
        self.set(op, np.ascontiguousarray(x).view(op.result.type.dtype.np).copy())

    def op_permute(self, op):
        x, valid = self.get(op.operands[0])
        perm = op.attrs["perm"]
        nv = tuple(valid[p] for p in perm) if valid else None
        self.set(op, np.transpose(x, perm).copy(), nv)

    def op_copy(self, op):
        x, valid = self.get(op.operands[0])
        shape = [self.ev(d) for d in op.result.type.shape]
        self.set(op, np.broadcast_to(x, shape).copy(), valid if x.ndim == len(shape) else None)

    def _tri(self, op, lower: bool):
        x, valid = self.get(op.operands[0])
        k = op.attrs["diagonal"]
        r, c = x.shape[-2], x.shape[-1]
        mask = np.tri(r, c, k, dtype=bool) if lower else ~np.tri(r, c, k - 1, dtype=bool)
        self.set(op, np.where(mask, x, np.zeros((), x.dtype)), valid)

    def op_tril(self, op):
        self._tri(op, True)

    def op_triu(self, op):
        self._tri(op, False)

    # reductions, scans, sorts
    def _reduce(self, op, kind):
        x, valid = self.get(op.operands[0])
        dims = tuple(op.attrs["dims"])
        if valid is not None:
            x = x[tuple(slice(0, v) if i in dims else slice(None) for i, v in enumerate(valid))]
        r = reduce_array(kind, x, dims, op.attrs["keepdim"])
        keep = None
        if valid is not None:
            keep = tuple(1 if i in dims else v for i, v in enumerate(valid))
            if not op.attrs["keepdim"]:
                keep = tuple(v for i, v in enumerate(keep) if i not in dims)
        self.set(op, _round_to(r, op.result.type.dtype), keep)

    def op_sum(self, op):
        self._reduce(op, "sum")

    def op_prod(self, op):
        self._reduce(op, "prod")

    def op_amax(self, op):
        self._reduce(op, "max")

    def op_amin(self, op):
        self._reduce(op, "min")

    def _argreduce(self, op, fn):
        x, valid = self.get(op.operands[0])
        d = op.attrs["dims"][0]
        if valid is not None:
            x = x[tuple(slice(0, v) if i == d else slice(None) for i, v in enumerate(valid))]
        w = work(x)
        r = fn(w, axis=d)
        if op.attrs["keepdim"]:
            r = np.expand_dims(r, d)
        self.set(op, r.astype(np.int64))

    def op_argmax(self, op):
        self._argreduce(op, np.argmax)

    def op_argmin(self, op):
        self._argreduce(op, np.argmin)

    def _scan(self, op, fn):
        x, valid = self.get(op.operands[0])
        self.set(op, _round_to(fn(work(x), axis=op.attrs["dim"]), op.result.type.dtype), valid)

    def op_cumsum(self, op):
        self._scan(op, np.cumsum)

    def op_cumprod(self, op):
        self._scan(op, np.cumprod)

    def op_topk(self, op):
        x, _ = self.get(op.operands[0])
        v, i = sort_rows(x, op.attrs["largest"])
        k = op.attrs["k"]
        self.set(op, v[..., :k], None, 0)
        self.set(op, i[..., :k], None, 1)

    def op_sort(self, op):
        x, _ = self.get(op.operands[0])
        v, i = sort_rows(x, op.attrs["descending"])
        self.set(op, v, None, 0)
        self.set(op, i, None, 1)

    def op_argsort(self, op):
        x, _ = self.get(op.operands[0])
        self.set(op, sort_rows(x, op.attrs["descending"])[1])

    # matmul
    def op_matmul(self, op):
        (a, va), (b, vb) = self.get(op.operands[0]), self.get(op.operands[1])
        if op.attrs.get("a_trans"):
            a = np.swapaxes(a, -1, -2)
            va = None
        if op.attrs.get("b_trans"):
            b = np.swapaxes(b, -1, -2)
            vb = None
        if is_float(a.dtype):
            r = np.matmul(a.astype(np.float32), b.astype(np.float32))
        else:
            r = np.matmul(a.astype(np.int64), b.astype(np.int64))
        valid = None
        if (va is not None or vb is not None) and a.ndim == b.ndim == 2:
            valid = ((va or a.shape)[0], (vb or b.shape)[1])
        self.set(op, cast_array(r, op.result.type.dtype), valid)

    # indexing
    def op_gather(self, op):
        (x, _), (idx, _) = self.get(op.operands[0]), self.get(op.operands[1])
        d = op.attrs["dim"]
        self.set(op, np.take_along_axis(x, np.mod(idx.astype(np.int64), x.shape[d]), d))

    def op_index_select(self, op):
        (x, _), (idx, _) = self.get(op.operands[0]), self.get(op.operands[1])
        d = op.attrs["dim"]
        self.set(op, np.take(x, np.mod(idx.astype(np.int64), x.shape[d]), axis=d))

    def op_scatter(self, op):
        x, _ = self.get(op.operands[0])
        idx = self.get(op.operands[1])[0].astype(np.int64)
        d, red = op.attrs["dim"], op.attrs["reduce"]
        if len(op.operands) > 2:
            src = work(self.get(op.operands[2])[0])
        else:
            src = np.full(idx.shape, op.attrs["value"], dtype=work(x).dtype)
        out = work(x).copy()
        idx = np.mod(idx, x.shape[d])
        for pos in np.ndindex(*idx.shape):
            tgt = list(pos)
            tgt[d] = idx[pos]
            tgt = tuple(tgt)
            v = src[pos]
            if red == "add":
                out[tgt] = _round_to(np.asarray(out[tgt] + v), op.result.type.dtype)
            elif red == "multiply":
                out[tgt] = _round_to(np.asarray(out[tgt] * v), op.result.type.dtype)
            else:
                out[tgt] = v
        self.set(op, _round_to(out, op.result.type.dtype))

    def op_index_add(self, op):
        x, _ = self.get(op.operands[0])
        idx = np.mod(self.get(op.operands[1])[0].astype(np.int64), x.shape[op.attrs["dim"]])
        src = work(self.get(op.operands[2])[0])
        d, alpha = op.attrs["dim"], op.attrs["alpha"]
        out = work(x).copy()
        for j, t in enumerate(idx):
            dst = [slice(None)] * x.ndim
            dst[d] = t
            sel = [slice(None)] * x.ndim
            sel[d] = j
            dt = op.result.type.dtype
            contrib = _round_to(src[tuple(sel)] * alpha, dt).astype(out.dtype) \
                if alpha != 1 else src[tuple(sel)]
            out[tuple(dst)] = _round_to(out[tuple(dst)] + contrib, dt)
        self.set(op, _round_to(out, op.result.type.dtype))


def _round_to(a, dt) -> np.ndarray:
    """A compute-type result rounded to the op's dtype (floats to ints to nearest even)."""
    a = np.asarray(a)
    return cast_array(a, dt) if a.dtype != dt.np else a


def _merge_valid(ins, shape):
    """The valid region of an elementwise result of shape from its operands' (array, valid):
    the smallest valid extent per dim, where a dim an operand broadcasts (extent 1 against a
    longer result) does not narrow it: a row max [R, 1] valid [r, 1] under `x - max` leaves
    every column of x valid."""
    vs = [(a.shape, v) for a, v in ins if v is not None and len(v) == len(shape)]
    if not vs:
        return None
    out = list(shape)
    for ashape, v in vs:
        out = [o if (n == 1 and s != 1) else min(o, e)
               for o, n, s, e in zip(out, ashape, shape, v)]
    return tuple(out)
