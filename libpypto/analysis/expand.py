"""Expand an exec-level graph into task instances for one binding of its symbolic sizes.

Each `task` op runs its program once per point of its grid. Instances of different tasks are
ordered by the GM data they share: every tensor is cut into granules (the largest boxes that
no footprint boundary splits), and an instance waits for the last writer of every granule it
reads (RAW), and for the last writer and the readers since of every granule it writes (WAW,
WAR). The scheduler and the runtimes share this one expansion.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from math import gcd

import numpy as np

from ..errors import InputError, PyptoError
from ..ir import expr as E
from .access import check_accesses
from .limits import require

# granules per tensor, at least: coarser granules only add false dependencies between
# launches, but two instances of one launch writing one granule are refused (the last writer
# of a granule is one instance), so a tensor may have as many granules as twice its boxes
GRANULE_CAP = 1 << 20


@dataclass
class Launch:
    """One instantiation of a task op (loops instantiate a task once per iteration)."""

    task: int                       # index of the task op (walk order)
    first: int                      # id of its first instance
    grid_index: np.ndarray          # (n, rank) grid coordinates
    scalars: np.ndarray             # (n, grid rank + program scalars): the program's S rows

    @property
    def n(self) -> int:
        return int(self.scalars.shape[0])


@dataclass
class Expansion:
    tasks: list                     # the task ops, in walk order
    programs: list                  # the program ops, in order
    gms: list                       # the gm ops, in order (tensor ids)
    env: dict
    launches: list                  # Launch per instantiation, in program order
    launch_of: np.ndarray           # launch index per instance
    shapes: dict = field(default_factory=dict)  # gm op -> concrete shape
    # the instances each instance waits for, sorted: pred_idx[pred_ptr[i]:pred_ptr[i + 1]]
    pred_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    pred_idx: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def n(self) -> int:
        return int(self.launch_of.shape[0])

    @property
    def preds(self) -> list:
        """Per instance, the sorted list of the instances it waits for (made on first use
        from pred_ptr and pred_idx; the arrays are what the fast paths read)."""
        got = self.__dict__.get("_preds")
        if got is None:
            flat, ptr = self.pred_idx.tolist(), self.pred_ptr.tolist()
            got = self.__dict__["_preds"] = [flat[a:b] for a, b in zip(ptr, ptr[1:])]
        return got


def expand(doc, env: dict, data: dict | None = None) -> Expansion:
    """Every task instance of doc for the sizes in env, and the instances each waits for.
    data: the arrays of the parameters the document reads at run time (`read` ops), by
    name; their elements set loop bounds, offsets and conditions like sizes do."""
    w = _Walker(doc, env)
    w.data = data or {}
    w.walk(doc.body, dict(env))
    launch_of = np.concatenate([np.full(lc.n, i, np.int32) for i, lc in enumerate(w.launches)]) \
        if w.launches else np.zeros(0, np.int32)
    exp = Expansion(w.tasks, w.programs, w.gms, dict(env), w.launches, launch_of,
                    shapes=dict(w.shapes))
    exp.pred_ptr, exp.pred_idx = _dependencies(w.boxes, [lc.first for lc in w.launches],
                                               [w.shapes[op] for op in w.gms], w.count)
    check_accesses(exp)
    return exp


class _Walker:
    """Walks a document's loops and branches for bound sizes, launching its tasks."""

    def __init__(self, doc, env: dict):
        self.tasks = [op for op in doc.walk() if op.name == "task"]
        self.task_index = {id(t): i for i, t in enumerate(self.tasks)}
        self.programs = [op for op in doc.body if op.name == "program"]
        self.gms = [op for op in doc.body if op.name == "gm"]
        self.gm_index = {op.result: i for i, op in enumerate(self.gms)}
        self.shapes = {op: _shape(op, env) for op in self.gms}
        require("BYTES", sum(int(np.prod(s, dtype=object)) * op.result.type.dtype.itemsize
                             for op, s in self.shapes.items()), "the tensors of this run, in bytes")
        self.launches: list[Launch] = []
        self.boxes: list = []        # per launch: list of (tensor id, mode, lo, hi)
        self.count = 0

    def walk(self, ops, lenv) -> None:
        for op in ops:
            if op.name == "task":
                self.launch(op, lenv)
            elif op.name == "loop":
                a = op.attrs
                start, stop, step = (_int(a[k], lenv) for k in ("start", "stop", "step"))
                if step <= 0:
                    raise PyptoError(f"loop step {step} is not positive", op.loc)
                require("LAUNCHES", len(self.launches) + len(range(start, stop, step)),
                        "loop iterations, counted as task launches")
                for i in range(start, stop, step):
                    self.walk(op.regions[0], {**lenv, a["var"]: i})
            elif op.name == "if":
                self.walk(op.regions[0] if _int(op.attrs["cond"], lenv) else op.regions[1],
                          lenv)
            elif op.name == "check":
                check(op, lenv)
            elif op.name == "read":
                lenv = {**lenv, op.attrs["var"]: read_value(op, lenv, self.data)}

    def launch(self, t, lenv) -> None:
        extents = [max(0, _int(g, lenv)) for g in t.attrs["grid"]]
        n = int(np.prod(extents, dtype=object)) if extents else 1
        require("INSTANCES", self.count + n, "task instances")
        require("LAUNCHES", len(self.launches) + 1, "task launches")
        idx = np.indices(extents, dtype=np.int64).reshape(len(extents), -1).T if extents \
            else np.zeros((1, 0), np.int64)
        svals = np.array([_int(s, lenv) for s in t.attrs["scalars"]], np.int64)
        scal = np.hstack([idx, np.broadcast_to(svals, (n, len(svals)))]).astype(np.int64)
        self.launches.append(Launch(self.task_index[id(t)], self.count, idx, scal))
        genv = dict(lenv)
        for d in range(idx.shape[1]):
            genv[f"g{d}"] = idx[:, d]
        acc = []
        for mode, key in (("r", "reads"), ("w", "writes")):
            for tensor, lo, hi in t.attrs[key]:
                gm = self.gm_index[t.operands[tensor]]
                lo_a = np.stack([_col(E.evaluate(x, genv), n) for x in lo], 1) if lo else \
                    np.zeros((n, 0), np.int64)
                hi_a = np.stack([_col(E.evaluate(x, genv), n) for x in hi], 1) if hi else \
                    np.zeros((n, 0), np.int64)
                acc.append((gm, mode, lo_a, hi_a))
        self.boxes.append(acc)
        self.count += n


def _shape(op, env: dict) -> tuple:
    try:
        shape = tuple(int(E.evaluate(d, env)) for d in op.result.type.shape)
    except E.UnboundSymbol as u:
        raise PyptoError(f"symbol {u.name} has no size") from None
    if any(d < 0 for d in shape):
        raise PyptoError(f"{op.result.name or 'a tensor'} would have the negative shape "
                         f"{list(shape)}", op.loc)
    return shape


def _int(e, env: dict) -> int:
    return int(E.evaluate(e, env))


def reads_of(doc) -> list[str]:
    """The parameters doc reads elements of at run time (`read` ops), in first-read order."""
    out: list[str] = []
    for top in doc.body:
        for op in top.walk():
            if op.name == "read" and op.attrs["param"] not in out:
                out.append(op.attrs["param"])
    return out


def read_value(op, env: dict, data: dict) -> int:
    """The element a `read` op reads for the indices under env, from data[param]."""
    name = op.attrs["param"]
    arr = data.get(name)
    if arr is None:
        raise DataDependent(f"{name}[...] is read at run time: its data is needed to expand "
                            f"the tasks", op.loc)
    idx = [_int(x, env) for x in op.attrs["index"]]
    if len(idx) != arr.ndim or any(not 0 <= i < d for i, d in zip(idx, arr.shape)):
        raise PyptoError(f"{name}[{', '.join(map(str, idx))}] is outside {name} (shape "
                         f"{list(arr.shape)})", op.loc)
    return int(arr[tuple(idx)])


class DataDependent(PyptoError):
    """Expanding needs the data of a parameter read at run time, and it was not given."""


def check(op, env: dict) -> None:
    """A size check: refuse sizes that would make a write fall off its tensor (or break what
    the check's `why` says)."""
    if not E.evaluate(op.attrs["cond"], env):
        used = sorted(E.free_symbols(op.attrs["cond"]))
        values = ", ".join(f"{s}={env[s]}" for s in used if s in env)
        why = op.attrs.get("why", "it would fall off the end")
        raise PyptoError(f"{op.attrs['what']} (with {values}): {why}", op.loc)


def _col(v, n: int) -> np.ndarray:
    a = np.asarray(v, dtype=np.int64)
    return np.broadcast_to(a, (n,)) if a.ndim == 0 else a


def _granules(boxes: list, shapes: list) -> list:
    """Granule size per dim for every tensor: gcd of all box boundaries, capped in count
    (GRANULE_CAP, or twice the tensor's boxes when more)."""
    per: dict = {}
    for accs in boxes:
        for gm, _, lo, hi in accs:
            per.setdefault(gm, []).append((lo, hi))
    out = []
    for gm, shape in enumerate(shapes):
        g = []
        for d, size in enumerate(shape):
            vals = [size]
            for lo, hi in per.get(gm, []):
                vals.append(int(np.gcd.reduce(np.clip(lo[:, d], 0, size))) if lo.size else 0)
                vals.append(int(np.gcd.reduce(np.clip(hi[:, d], 0, size))) if hi.size else 0)
            g.append(max(1, reduce(gcd, vals)))
        counts = [-(-s // x) for s, x in zip(shape, g)]
        cap = max(GRANULE_CAP, 2 * sum(lo.shape[0] for lo, _ in per.get(gm, [])))
        while int(np.prod(counts)) > cap:
            d = int(np.argmax(counts))
            g[d] *= 2
            counts[d] = -(-shape[d] // g[d])
        out.append((g, counts))
    return out


def _dependencies(boxes: list, first: list, shapes: list, total: int) -> tuple:
    """The instances each instance waits for (RAW, WAW, WAR over the granules of every GM
    tensor), as CSR arrays (ptr, idx): instance i waits for idx[ptr[i]:ptr[i + 1]], sorted.

    Whole-array operations per launch and access, no per-instance Python (a per-instance
    np.unique once made 1.5 M instances take minutes): an access is a list of (instance,
    granule) pairs; an instance waits for the last writer of every granule it touches and,
    for a write, for the readers of that granule since its last write. The instances of one
    launch never wait for each other."""
    gran = _granules(boxes, shapes)
    ncell = [max(1, int(np.prod(c))) for _, c in gran]
    last_w = [np.full(k, -1, np.int64) for k in ncell]
    scratch: dict = {}                 # tensor -> granule -> writer in this launch, or -1
    readers: list = [[] for _ in shapes]    # per tensor: (granules, reader ids) since writes
    src: list = []
    dst: list = []
    for ti, accs in enumerate(boxes):
        base = first[ti]
        pairs = [(gm, mode) + _pairs(lo, hi, *gran[gm], shapes[gm]) for gm, mode, lo, hi in accs]
        for gm, _, inst, cells in pairs:             # RAW, WAW: the last writer
            w = last_w[gm][cells]
            keep = w >= 0
            src.append(w[keep])
            dst.append(inst[keep] + base)
        marks = _mark_writes(pairs, ncell, scratch, base)
        for gm, (wmap, _) in marks.items():          # WAR: the readers since the last write
            if readers[gm]:
                rc = np.concatenate([c for c, _ in readers[gm]])
                ri = np.concatenate([r for _, r in readers[gm]])
                w = wmap[rc]
                hit = w >= 0
                src.append(ri[hit])
                dst.append(w[hit])
                readers[gm] = [(rc[~hit], ri[~hit])] if not hit.all() else []
        for gm, mode, inst, cells in pairs:          # this launch's reads, unless it writes them
            if mode == "r" and cells.size:
                if gm in marks:
                    keep = marks[gm][0][cells] < 0
                    inst, cells = inst[keep], cells[keep]
                if cells.size:
                    readers[gm].append((cells, inst + base))
        for gm, (wmap, cells) in marks.items():
            last_w[gm][cells] = wmap[cells]
            wmap[cells] = -1
    return _csr(src, dst, total)


def _mark_writes(pairs: list, ncell: list, scratch: dict, base: int) -> dict:
    """tensor -> (granule -> the instance of this launch writing it, or -1; the granules
    written), refusing two instances of the launch writing one granule."""
    marks: dict = {}
    for gm, mode, inst, cells in pairs:
        if mode != "w" or not cells.size:
            continue
        wmap = scratch.get(gm)
        if wmap is None:
            wmap = scratch[gm] = np.full(ncell[gm], -1, np.int64)
        ids = inst + base
        prev = wmap[cells]
        order = np.argsort(cells, kind="stable")
        c, i = cells[order], ids[order]
        if ((prev >= 0) & (prev != ids)).any() or ((c[1:] == c[:-1]) & (i[1:] != i[:-1])).any():
            _overlap(gm)
        wmap[cells] = ids
        got = marks.get(gm)
        marks[gm] = (wmap, cells if got is None else np.concatenate([got[1], cells]))
    return marks


def _csr(src: list, dst: list, total: int) -> tuple:
    """Edges (src[k] -> dst[k], duplicates allowed) as CSR predecessor arrays (ptr, idx),
    each instance's predecessors sorted and distinct."""
    ptr = np.zeros(total + 1, np.int64)
    s = np.concatenate(src) if src else np.zeros(0, np.int64)
    if not s.size:
        return ptr, s
    key = np.unique(np.concatenate(dst) * total + s)
    d, s = np.divmod(key, total)
    ptr[1:] = np.cumsum(np.bincount(d, minlength=total))
    return ptr, s


def _overlap(gm: int):
    raise InputError(f"the instances of one task write overlapping regions of GM tensor {gm} "
                     f"(a task's write footprints must be disjoint)")


def _pairs(lo, hi, g, counts, shape) -> tuple:
    """The (instance, flat granule) pairs of the boxes [lo, hi) of a launch's instances
    (one row each), as two arrays; an empty box has none."""
    n = lo.shape[0]
    r = len(shape)
    if r == 0:
        return np.arange(n, dtype=np.int64), np.zeros(n, np.int64)
    shp = np.array(shape, np.int64)
    lo = np.clip(lo, 0, shp)
    hi = np.clip(hi, 0, shp)
    glo = lo // np.array(g, np.int64)
    ext = np.where((hi > lo).all(axis=1)[:, None], -(-hi // np.array(g, np.int64)) - glo, 0)
    strides = np.ones(r, np.int64)
    for d in range(r - 2, -1, -1):
        strides[d] = strides[d + 1] * counts[d + 1]
    if (ext == 1).all():                # one granule per instance: the common case
        return np.arange(n, dtype=np.int64), glo @ strides
    num = ext.prod(axis=1)
    inst = np.repeat(np.arange(n, dtype=np.int64), num)
    k = np.arange(inst.size, dtype=np.int64) - np.repeat(np.cumsum(num) - num, num)
    cells = np.zeros(inst.size, np.int64)
    for d in range(r - 1, -1, -1):
        e = ext[inst, d]
        cells += (glo[inst, d] + k % e) * strides[d]
        k //= e
    return inst, cells
