"""The Pro runner's SIMT launch (`simt_launch`, ir/simt_ops.py; the language is
prolang/simt.py): one thread block run vectorised with numpy on the vector core that
launches it.

Every register is an array over the block's threads (int64 or float32); the body runs one
instruction at a time over all threads, under a mask of the threads that execute it: an
`if` runs its arms under mask & c and mask & ~c, a `for` runs its body while any thread of
the mask still iterates. Only masked threads write registers and memory (a masked-off
thread keeps its values). An element index outside its tile's static shape or its tensor's
shape on an executing thread, an integer division by zero or a loop step <= 0 is a
ProRunError naming the thread and block.

Atomics: one atomic instruction is applied thread after thread in linear thread order
(the old values are exact and fixed). GM atomics hold one lock of the process for the whole
instruction, so clusters on different Python threads never lose an update; a launch whose
GM atomics depend on the order of the blocks is `serial` (pro_exec.serial: clusters run in
cluster order).

The checker sees the launch as one V instruction that reads, writes and atomically updates
the elements it really touched (GM: boxes of the tensor's elements, row runs; UB: byte
runs of the tile's buffer), recorded after it ran; atomic updates are marked so that
atomics of different blocks do not race with each other (pro_check).
"""
from __future__ import annotations

import threading

import numpy as np

from ..ir.types import TensorType
from .interp import cast_array

GM_LOCK = threading.Lock()
_INT_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
            "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
            "xor": np.bitwise_xor, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
_FLOAT_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
              "min": np.minimum, "max": np.maximum, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
_CLS = {"i": np.int64, "f": np.float32}


def kernels(error, tile_name) -> dict:
    """The Pro runner's rules (pro_exec.KERNELS) for a SIMT launch; error: pro_exec's
    ProRunError, tile_name: its checker name of a tile's bytes (given, not imported: this
    module sits below pro_exec)."""
    def launch(core, op, env) -> None:
        m = _Machine(core, op, env, error)
        m.block(op.attrs["body"], np.ones(m.nt, bool))
        m.record(tile_name)

    launch.own_access = True        # pro_exec: the launch records its accesses itself
    return {"simt_launch": launch}


class _Machine:
    def __init__(self, core, op, env, error):
        a = op.attrs
        self.core, self.op, self.error = core, op, error
        self.dims = a["threads"]
        self.nt = self.dims[0] * self.dims[1] * self.dims[2]
        self.scalars = [core.ev(e, env) for e in a["scalars"]]
        self.bufs = [core.vals[v] for v in op.operands]
        self.regs = [np.zeros(self.nt, _CLS[c]) for c in a["regs"]]
        self.touched = [{"r": [], "w": [], "a": []} for _ in op.operands]
        self.tid = np.arange(self.nt, dtype=np.int64)

    def fail(self, mask, msg: str):
        t = int(np.flatnonzero(mask)[0])
        return self.error(f"SIMT launch of {self.op.attrs['fn']}: thread {t} of block "
                          f"{self.core.g0}: {msg}", self.op.loc)

    def put(self, d: int, mask, value) -> None:
        r = self.regs[d]
        r[mask] = np.asarray(value, r.dtype)[mask] if np.ndim(value) else value

    def block(self, body, mask) -> None:
        for i in body:
            if mask.any():
                getattr(self, "i_" + i[0])(i, mask)

    # -- values -----------------------------------------------------------------------------
    def i_const(self, i, mask):
        self.put(i[1], mask, _CLS[self.op.attrs["regs"][i[1]]](i[2]))

    def i_scalar(self, i, mask):
        cls = self.op.attrs["regs"][i[1]]
        v = self.scalars[i[2]]
        self.put(i[1], mask, np.float32(v) if cls == "f" else np.int64(int(v)))

    def i_ctx(self, i, mask):
        x, y, _ = self.dims
        v = {"tx": self.tid % x, "ty": self.tid // x % y, "tz": self.tid // (x * y),
             "tid": self.tid, "warp": np.full(self.nt, 32, np.int64)}[i[2]]
        self.put(i[1], mask, v)

    def i_mov(self, i, mask):
        self.put(i[1], mask, self.regs[i[2]])

    def i_sel(self, i, mask):
        self.put(i[1], mask, np.where(self.regs[i[2]] != 0, self.regs[i[3]],
                                      self.regs[i[4]]))

    def i_bin(self, i, mask):
        op, a, b = i[2], self.regs[i[3]], self.regs[i[4]]
        with np.errstate(all="ignore"):
            if a.dtype == np.float32:
                v = _FLOAT_BIN[op](a, b)
            elif op in ("floordiv", "mod"):
                v = self.divide(op, a, b, mask)
            elif op in ("shl", "shr"):
                v = (np.left_shift if op == "shl" else np.right_shift)(a, b & 63)
            elif op in ("land", "lor"):
                v = ((a != 0) & (b != 0)) if op == "land" else ((a != 0) | (b != 0))
            else:
                v = _INT_BIN[op](a, b)
        self.put(i[1], mask, np.asarray(v).astype(self.regs[i[1]].dtype))

    def divide(self, op, a, b, mask):
        zero = mask & (b == 0)
        if zero.any():
            raise self.fail(zero, "integer division by zero")
        safe = np.where((b == 0) | (b == -1), 1, b)
        q, r = np.floor_divide(a, safe), np.mod(a, safe)
        q = np.where(b == -1, np.negative(a), q)     # wraps at int64's minimum, as C does
        r = np.where(b == -1, 0, r)
        return q if op == "floordiv" else r

    def i_un(self, i, mask):
        op, a = i[2], self.regs[i[3]]
        with np.errstate(all="ignore"):
            if op == "neg":
                v = np.negative(a)
            elif op == "abs":
                v = np.abs(a)
            elif op == "not":
                v = (a == 0).astype(np.int64)
            elif op == "inv":
                v = np.invert(a)
            elif op == "itof":
                v = a.astype(np.float32)
            else:                                   # ftoi: NaN 0, saturating, truncated
                f = np.where(np.isnan(a), 0.0, a.astype(np.float64))
                big, small = f >= 2.0 ** 63, f < -2.0 ** 63
                v = np.where(big | small, 0.0, np.trunc(f)).astype(np.int64)
                v = np.where(big, np.iinfo(np.int64).max,
                             np.where(small, np.iinfo(np.int64).min, v))
        self.put(i[1], mask, v)

    # -- control flow -----------------------------------------------------------------------
    def i_if(self, i, mask):
        c = self.regs[i[1]] != 0
        self.block(i[2], mask & c)
        self.block(i[3], mask & ~c)

    def i_for(self, i, mask):
        v, start, stop, step = (self.regs[r] for r in i[1:5])
        bad = mask & (step <= 0)
        if bad.any():
            raise self.fail(bad, f"a pl.range step {int(step[bad][0])} <= 0")
        v[mask] = start[mask]
        live = mask & (v < stop)
        while live.any():
            self.block(i[5], live)
            with np.errstate(all="ignore"):
                v[live] += step[live]
            live &= v < stop

    # -- memory -----------------------------------------------------------------------------
    def where(self, b: int, idx: list, mask) -> tuple:
        """The executing threads' element indices into buffer b (checked)."""
        arr = self.bufs[b]
        ix = [self.regs[r][mask] for r in idx]
        bad = np.zeros(len(ix[0]), bool)
        for k, n in zip(ix, arr.shape):
            bad |= (k < 0) | (k >= n)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            t = np.flatnonzero(mask)[j]
            at = ", ".join(str(int(k[j])) for k in ix)
            raise self.error(f"SIMT launch of {self.op.attrs['fn']}: thread {t} of block "
                             f"{self.core.g0}: {self.name(b)}[{at}] is outside its shape "
                             f"{list(arr.shape)}", self.op.loc)
        return tuple(ix)

    def name(self, b: int) -> str:
        v = self.op.operands[b]
        if isinstance(v.type, TensorType):
            return f"tensor {v.name}"
        owner = v.owner
        return f"tile {owner.attrs.get('name', '?') if owner is not None else '?'}"

    def i_ld(self, i, mask):
        arr = self.bufs[i[2]]
        ix = self.where(i[2], i[3], mask)
        self.touched[i[2]]["r"].append(ix)
        self.put(i[1], mask, _widen(arr[ix], self.regs[i[1]], mask))

    def i_st(self, i, mask):
        arr = self.bufs[i[1]]
        ix = self.where(i[1], i[2], mask)
        self.touched[i[1]]["w"].append(ix)
        arr[ix] = _narrow(self.regs[i[3]][mask], arr.dtype)

    def i_atom(self, i, mask):
        d, kind, b, idx, v, cmp = i[1:]
        arr = self.bufs[b]
        ix = self.where(b, idx, mask)
        self.touched[b]["a"].append(ix)
        vals = self.regs[v][mask]
        cmps = self.regs[cmp][mask] if cmp >= 0 else vals
        old = np.zeros(len(vals), self.regs[v].dtype)
        gm = isinstance(self.op.operands[b].type, TensorType)
        with GM_LOCK if gm else _NOLOCK, np.errstate(all="ignore"):
            if d < 0 and _fast(kind, vals, arr.dtype):
                _UFUNC[kind].at(arr, ix, vals.astype(arr.dtype))    # in thread order
                return
            for k in range(len(vals)):
                at = tuple(int(x[k]) for x in ix)
                o = old.dtype.type(arr[at])
                old[k] = o
                arr[at] = _narrow(np.asarray([_apply(kind, o, vals[k], cmps[k])]),
                                  arr.dtype)[0]
        if d >= 0:
            self.put(d, mask, _scatter(old, mask, self.regs[d]))

    # -- the checker ------------------------------------------------------------------------
    def record(self, tile_name) -> None:
        core, op = self.core, self.op
        th = (core.key, "V")
        for b, (v, t) in enumerate(zip(op.operands, self.touched)):
            for kind in ("r", "w", "a"):
                if not t[kind]:
                    continue
                ix = tuple(np.concatenate([x[k] for x in t[kind]]) for k in range(len(t[kind][0])))
                arr = self.bufs[b]
                if isinstance(v.type, TensorType):
                    core.cluster.bytes += len(ix[0]) * arr.itemsize
                    if core.chk.enabled:
                        for lo, hi in gm_boxes(np.ravel_multi_index(ix, arr.shape), arr.shape):
                            core.chk.access(th, ("gm", v.name), lo, hi, kind != "r",
                                            f"tensor {v.name}[{_box(lo, hi)}]", op,
                                            atomic=kind == "a")
                elif core.chk.enabled:
                    self.record_tile(th, v, ix, kind, tile_name)

    def record_tile(self, th, v, ix, kind, tile_name) -> None:
        core = self.core
        arr = self.bufs[self.op.operands.index(v)]
        key, lo0, _ = core.where(v)
        rs = arr.strides[0] // arr.itemsize
        flat = np.unique(ix[0] * rs + ix[1])
        for a, z in _runs(flat):
            lo, hi = lo0[0] + a * arr.itemsize, lo0[0] + z * arr.itemsize
            core.chk.access(th, key, [lo], [hi], kind != "r", tile_name(v, [lo]), self.op,
                            atomic=kind == "a")


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOLOCK = _NoLock()


_UFUNC = {"add": np.add, "sub": np.subtract, "max": np.maximum, "min": np.minimum,
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _fast(kind: str, vals, dtype) -> bool:
    """Can an atomic whose old values are unused be one ufunc.at on the elements (applied
    in the order of the threads, as the loop would)? Integer add/sub/and/or/xor wrap the
    same in the element's dtype; max/min only when every value fits it."""
    if kind not in _UFUNC:
        return False
    if kind in ("max", "min") and vals.dtype != np.float32:
        return bool(np.all(vals.astype(dtype).astype(np.int64) == vals))
    return True


def _widen(x, reg, mask):
    out = np.zeros(reg.shape, reg.dtype)
    out[mask] = x.astype(reg.dtype) if x.dtype != np.bool_ else x.astype(np.int64)
    return out


def _scatter(vals, mask, reg):
    out = np.zeros(reg.shape, reg.dtype)
    out[mask] = vals
    return out


def _narrow(x, dtype):
    """Register values (int64 / float32) as elements of dtype: integers wrap, bools are
    x != 0, floats round (cast_array, as every other store)."""
    if dtype == np.bool_:
        return x != 0
    if x.dtype == np.float32:
        return x if dtype == np.float32 else cast_array(x, dtype)
    return x.astype(dtype)


def _apply(kind, old, v, cmp):
    """One atomic's new value from the old (in the register class)."""
    if kind == "add":
        return old + v
    if kind == "sub":
        return old - v
    if kind == "max":
        return np.maximum(old, v)
    if kind == "min":
        return np.minimum(old, v)
    if kind == "exch":
        return v
    if kind == "cas":
        return v if old == cmp else old
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind](old, v)


def _runs(flat) -> list:
    """[start, end) runs of consecutive values of a sorted unique array."""
    if not len(flat):
        return []
    brk = np.flatnonzero(np.diff(flat) != 1) + 1
    starts, ends = np.r_[0, brk], np.r_[brk, len(flat)]
    return [(int(flat[s]), int(flat[e - 1]) + 1) for s, e in zip(starts, ends)]


def gm_boxes(flat, shape) -> list:
    """(lo, hi) element boxes covering exactly the flat indices of a tensor: runs along the
    last dim, and for a 2-D tensor equal runs of consecutive rows merged."""
    flat = np.unique(flat)
    last = shape[-1]
    rows: list = []
    for a, z in _runs(flat):
        r = a // last
        while a < z:                      # split a run at row ends
            e = min(z, (r + 1) * last)
            rows.append([r, r + 1, a - r * last, e - r * last])
            a, r = e, r + 1
    if len(shape) == 2:
        merged: list = []
        for box in rows:
            p = merged[-1] if merged else None
            if p and p[1] == box[0] and p[2:] == box[2:]:
                p[1] = box[1]
            else:
                merged.append(box)
        return [([r0, c0], [r1, c1]) for r0, r1, c0, c1 in merged]
    out = []
    for r0, _, c0, c1 in rows:
        lead = list(np.unravel_index(r0, shape[:-1])) if len(shape) > 1 else []
        out.append(([int(x) for x in lead] + [c0], [int(x) + 1 for x in lead] + [c1]))
    return out


def _box(lo, hi) -> str:
    return ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))

