"""Reference interpretation of the Tensor Graph with numpy: the executable semantics.

Every op computes in float32 for fp16/bf16 (in its own type otherwise) and rounds its result
to the declared dtype; reductions and matmul accumulate in float32. Values that came from a
view with valid_shape carry their valid region: reductions read only inside it and assemble
writes only inside it.
"""
from __future__ import annotations

import numpy as np

from ..errors import PyptoError
from ..ir import expr as E
from ..ir import ops as O
from ..ir.types import dtype as _dtype


def run_tensor(doc, arrays: dict, env: dict) -> dict:
    """Interpret the tensor graph; arrays hold every parameter and are updated in place."""
    ops = doc.body
    for op in doc.body:
        if op.name == "source":
            ops = op.regions[0]
    it = _Interp(arrays, env)
    it.region(ops)
    return arrays


class _Interp:
    def __init__(self, arrays, env):
        self.arrays, self.env = arrays, dict(env)
        self.vals: dict = {}     # Value -> (array, valid tuple or None)

    def ev(self, e):
        return int(E.evaluate(e, self.env))

    def region(self, ops) -> None:
        for op in ops:
            fn = getattr(self, "op_" + op.name, None)
            if fn is None:
                fn = self.elementwise if O.is_elementwise(op.name) else None
            if fn is None:
                raise PyptoError(f"the tensor interpreter has no rule for op {op.name!r}", op.loc)
            fn(op)

    def get(self, v):
        return self.vals[v]

    def set(self, op, arr, valid=None):
        dt = op.result.type.dtype.np
        self.vals[op.result] = (np.asarray(arr).astype(dt, copy=False), valid)

    def op_param(self, op):
        self.vals[op.result] = (self.arrays[op.result.name], None)

    def elementwise(self, op):
        t = op.result.type
        ins = [self.get(v) for v in op.operands]
        valid = _merge_valid([v for _, v in ins], t.rank)
        if op.name == "cast":
            self.set(op, cast_array(ins[0][0], t.dtype), valid)
            return
        d = O.ELEMENTWISE[op.name]
        work = np.float32 if t.dtype.kind == "float" else None
        args = [a.astype(work) if work else a for a, _ in ins]
        if "scalar" in op.attrs:
            s = op.attrs["scalar"]
            s = self.ev(s) if isinstance(s, E.Expr) else s
            sarr = np.asarray(s, dtype=work or args[0].dtype)
            args = [sarr, args[0]] if op.attrs.get("scalar_side") == "lhs" else [args[0], sarr]
        env = {"np": np, "a": args[0], "b": args[1] if len(args) > 1 else None}
        with np.errstate(all="ignore"):
            res = eval(d.np, env)   # noqa: S307 -- catalogue strings, not user input
        self.set(op, res, valid)

    def op_view(self, op):
        src, src_valid = self.get(op.operands[0])
        offs = [self.ev(o) for o in op.attrs["offsets"]]
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
        dst = self.arrays[op.operands[1].name]
        offs = [self.ev(o) for o in op.attrs["offsets"]]
        ext = [min(v if valid else s, d - o)
               for v, s, d, o in zip(valid or src.shape, src.shape, dst.shape, offs)]
        if any(e <= 0 for e in ext):
            return
        dst[tuple(slice(o, o + e) for o, e in zip(offs, ext))] = \
            src[tuple(slice(0, e) for e in ext)]

    def _reduce(self, op, fn):
        x, valid = self.get(op.operands[0])
        dims = tuple(op.attrs["dims"])
        if valid is not None:
            x = x[tuple(slice(0, v) if i in dims else slice(None) for i, v in enumerate(valid))]
        work = x.astype(np.float32) if x.dtype.kind == "f" else x
        r = fn(work, axis=dims, keepdims=op.attrs["keepdim"])
        keep = None
        if valid is not None:
            keep = tuple(1 if i in dims else v for i, v in enumerate(valid))
            if not op.attrs["keepdim"]:
                keep = tuple(v for i, v in enumerate(keep) if i not in dims)
        self.set(op, r, keep)

    def op_sum(self, op):
        self._reduce(op, np.sum)

    def op_amax(self, op):
        self._reduce(op, np.max)

    def op_amin(self, op):
        self._reduce(op, np.min)

    def op_matmul(self, op):
        (a, va), (b, vb) = self.get(op.operands[0]), self.get(op.operands[1])
        if a.dtype.kind == "f":
            r = a.astype(np.float32) @ b.astype(np.float32)
        else:
            r = a.astype(np.int64) @ b.astype(np.int64)
        valid = None
        if va is not None or vb is not None:
            valid = ((va or a.shape)[0], (vb or b.shape)[1])
        self.set(op, cast_array(r, op.result.type.dtype), valid)


def _merge_valid(valids, rank):
    vs = [v for v in valids if v is not None]
    if not vs:
        return None
    out = list(vs[0][-rank:]) if len(vs[0]) >= rank else [None] * (rank - len(vs[0])) + list(vs[0])
    for v in vs[1:]:
        pad = [None] * (rank - len(v)) + list(v)
        out = [b if a is None else a if b is None else min(a, b) for a, b in zip(out, pad)]
    return tuple(out)


def cast_array(x: np.ndarray, dt) -> np.ndarray:
    """Convert with round-to-nearest-even (floats to ints included), saturating nothing."""
    target = dt.np if not isinstance(dt, str) else _dtype(dt).np
    if x.dtype.kind == "f" and target.kind in "iub":
        with np.errstate(all="ignore"):
            return np.rint(x.astype(np.float32)).astype(target)
    if x.dtype.kind == "f" and target.kind == "f" and x.dtype.itemsize < 4 and target.itemsize < 4:
        return x.astype(np.float32).astype(target)
    return x.astype(target)
