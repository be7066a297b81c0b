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

GRANULE_CAP = 1 << 20     # granules per tensor; coarser granules only add false dependencies


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
    preds: list = field(default_factory=list)   # per instance: sorted predecessor ids
    shapes: dict = field(default_factory=dict)  # gm op -> concrete shape

    @property
    def n(self) -> int:
        return int(self.launch_of.shape[0])


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
    exp.preds = _dependencies(w.boxes, [lc.first for lc in w.launches],
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
    """Granule size per dim for every tensor: gcd of all box boundaries, capped in count."""
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
        while int(np.prod(counts)) > GRANULE_CAP:
            d = int(np.argmax(counts))
            g[d] *= 2
            counts[d] = -(-shape[d] // g[d])
        out.append((g, counts))
    return out


def _dependencies(boxes: list, first: list, shapes: list, total: int) -> list:
    """Per instance, the sorted ids of the instances it waits for (RAW, WAW, WAR over the
    granules of every GM tensor). Whole-array operations per launch and access: each access
    is a list of (granule, instance) pairs (_cell_pairs), a tensor keeps the last writer of
    each granule and the (granule, instance) pairs of its reads since; no Python runs per
    instance but to hand out the lists at the end (per-instance numpy calls made 1.5 M
    instances take minutes, and a first call with new sizes tens of milliseconds)."""
    gran = _granules(boxes, shapes)
    last_w = [np.full(max(1, int(np.prod(c))), -1, np.int64) for _, c in gran]
    reads: list = [(_EMPTY, _EMPTY) for _ in shapes]   # per tensor: granules, instances
    src, dst = [], []                                  # dst waits for src
    for ti, accs in enumerate(boxes):
        pairs = [(gm, mode) + _cell_pairs(lo, hi, *gran[gm], shapes[gm], first[ti])
                 for gm, mode, lo, hi in accs]
        for gm, mode, cells, inst in pairs:
            w = last_w[gm][cells]
            src.append(w[w >= 0])
            dst.append(inst[w >= 0])
            if mode == "w" and reads[gm][0].size:      # readers since the last write
                rc, ri = reads[gm]
                order = np.argsort(cells, kind="stable")
                at = np.minimum(np.searchsorted(cells[order], rc), max(0, cells.size - 1))
                hit = cells[order][at] == rc if cells.size else np.zeros(rc.size, bool)
                src.append(ri[hit])
                dst.append(inst[order][at[hit]])
        for gm, mode, cells, inst in pairs:
            if mode == "r":
                rc, ri = reads[gm]
                reads[gm] = (np.concatenate([rc, cells]), np.concatenate([ri, inst]))
        for gm in {gm for gm, mode, _, _ in pairs if mode == "w"}:
            cells = np.concatenate([c for g, m, c, _ in pairs if g == gm and m == "w"])
            inst = np.concatenate([i for g, m, _, i in pairs if g == gm and m == "w"])
            _written(cells, inst, gm)
            last_w[gm][cells] = inst
            rc, ri = reads[gm]
            if rc.size:
                keep = ~np.isin(rc, cells)
                reads[gm] = (rc[keep], ri[keep])
    return _pred_lists(src, dst, total)


_EMPTY = np.zeros(0, np.int64)


def _pred_lists(src: list, dst: list, total: int) -> list:
    """Per instance, the sorted distinct instances it waits for, from (src, dst) pairs."""
    preds: list = [[] for _ in range(total)]
    s = np.concatenate(src) if src else _EMPTY
    d = np.concatenate(dst) if dst else _EMPTY
    if not s.size:
        return preds
    key = np.unique(d * np.int64(max(1, total)) + s)
    d, s = (key // max(1, total)).tolist(), (key % max(1, total)).tolist()
    lo = 0
    for hi in range(1, len(d) + 1):
        if hi == len(d) or d[hi] != d[lo]:
            preds[d[lo]] = s[lo:hi]
            lo = hi
    return preds


def _written(cells: np.ndarray, inst: np.ndarray, gm: int) -> None:
    """Refuse two instances of one launch writing one granule of tensor gm."""
    if cells.size > 1 and bool(np.all(cells[1:] > cells[:-1])):
        return                    # every granule once (instance i writes granule i, ...)
    if cells.size:
        lo = int(inst.min())
        span = np.int64(int(inst.max()) - lo + 1)
        pairs = np.unique(cells * span + (inst - lo))        # (granule, instance) once each
        if np.unique(pairs // span).size != pairs.size:
            _overlap(gm)


def _overlap(gm: int):
    raise InputError(f"the instances of one task write overlapping regions of GM tensor {gm} "
                     f"(a task's write footprints must be disjoint)")


def _cell_pairs(lo, hi, g, counts, shape, base: int) -> tuple:
    """(granules, instances): every granule each instance's box [lo, hi) covers, with the
    instance's id (base + its index), as two flat arrays. Instances whose boxes span the
    same number of granules per dim are done together (one group in the common case, a
    second for the tail)."""
    n, r = lo.shape[0], len(shape)
    ids = base + np.arange(n, dtype=np.int64)
    if r == 0:
        return np.zeros(n, np.int64), ids
    lo = np.clip(lo, 0, np.array(shape))
    hi = np.clip(hi, 0, np.array(shape))
    glo = lo // np.array(g)
    ext = np.where(np.any(hi <= lo, axis=1)[:, None], 0, -(-hi // np.array(g)) - glo)
    if np.all(ext == 1):          # one granule per instance
        return np.ravel_multi_index(tuple(glo[:, d] for d in range(r)), counts), ids
    cells, inst = [], []
    groups, which = np.unique(ext, axis=0, return_inverse=True)
    for k, e in enumerate(groups):
        if not np.all(e > 0):
            continue              # empty boxes cover nothing
        sel = np.flatnonzero(which.reshape(-1) == k)
        offs = np.indices(tuple(int(x) for x in e), dtype=np.int64).reshape(r, -1)
        at = glo[sel][:, :, None] + offs[None]              # (instances, dims, cells)
        cells.append(np.ravel_multi_index(tuple(at[:, d].reshape(-1) for d in range(r)),
                                          counts))
        inst.append(np.repeat(ids[sel], offs.shape[1]))
    if not cells:
        return _EMPTY, _EMPTY
    return np.concatenate(cells), np.concatenate(inst)
