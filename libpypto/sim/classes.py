"""Task instances grouped by the instruction stream they flatten to, for a fast simulation.

An instance's stream (flatten.py) depends on the values of a few expressions of its
program for the instance's grid index and scalars: loop bounds, branch conditions, the
valid shapes of its GM boxes, a matmul's k, sync event ids. Instances that agree on all of
them flatten to the same stream except for the offsets of their GM boxes, which only name
the boxes for the L2. So each launch is split into classes of equal values, with
whole-array operations over its instances (`_Walk`); one instance of each class is
flattened (the template), and per instance only the L2 keys of its boxes are computed.
Classes with the same values share one template across launches and tasks.

Which expressions decide a stream: loop bounds, branch conditions and every expression
attribute of an instruction, except the offsets of GM boxes (the keys) and, on other
instructions, the attributes in NOT_TIMED, which the flattener does not read. As a guard,
the last instance of a class of several is flattened too and must give the same stream
(else, with a warning, each instance of the class is flattened on its own).

A key is a row of KEY_W integers: [tensor, rank of the offsets, rank of the shape,
offsets..., shape...] padded with zeros, or -1 first for a box the L2 does not key
(tgather). Equal rows are equal keys, as flatten.py's (tensor, offsets, shape) tuples.
"""
from __future__ import annotations

import numpy as np

from ..errors import warn
from ..ir import expr as E
from .flatten import Context

NOT_TIMED = frozenset({"offsets", "init", "row0"})     # attributes no cost depends on
GM_OPS = ("tload", "tstore", "tgather", "tscatter")
_warned: list = []


class Plan:
    """The streams of a run's task instances: templates[tpl[i]] with the L2 key rows
    keys[kbase[i] : kbase[i] + ngm[tpl[i]]] (ngm: GM instructions of a template)."""

    def __init__(self, templates, tpl, kbase, keys, ngm):
        self.templates, self.tpl, self.kbase, self.keys, self.ngm = \
            templates, tpl, kbase, keys, ngm


def plan(exp, fl, prog_of: list, tensors: list) -> Plan:
    """Templates and keys for every instance of the expansion exp (prog_of[task]: the
    program index of each task op, tensors[task]: the GM tensor of each of its args)."""
    ro, rs = _ranks(fl.programs)
    width = 3 + ro + rs
    cache: dict = {}
    templates: list = []
    tpl = np.zeros(exp.n, np.int32)
    parts: list = []            # (instances, key rows (m, ngm, width))
    for lc in exp.launches:
        if lc.n == 0:
            continue
        pi = prog_of[lc.task]
        names = _row_names(fl.programs[pi])
        for members, sig, rows in _classes(fl.programs[pi], names, lc.scalars, tensors[lc.task],
                                           ro, rs):
            ids = members + lc.first
            got = cache.get((pi, sig))
            if got is None:
                got = cache[(pi, sig)] = _template(fl, pi, names, lc, members, tensors[lc.task],
                                                   templates)
            if got == -1:       # the guard failed: each instance its own stream
                for m in members.tolist():
                    st = fl.flatten(pi, _env(names, lc.scalars[m]), Context(tensors[lc.task]))
                    tpl[lc.first + m] = len(templates)
                    templates.append(st)
                    parts.append((np.array([lc.first + m]), stream_keys(st, ro, rs)[None]))
                continue
            assert rows.shape[1] == sum(g is not None for g in templates[got].gm)
            tpl[ids] = got
            parts.append((ids, rows))
    ngm = np.array([sum(g is not None for g in st.gm) for st in templates], np.int64)
    counts = ngm[tpl] if exp.n else np.zeros(0, np.int64)
    kbase = np.zeros(exp.n, np.int64)
    if exp.n:
        kbase[1:] = np.cumsum(counts)[:-1]
    keys = np.zeros((int(counts.sum()), width), np.int64)
    for ids, rows in parts:
        if rows.shape[1]:
            pos = kbase[ids][:, None] + np.arange(rows.shape[1])
            keys[pos.ravel()] = rows.reshape(-1, width)
    return Plan(templates, tpl, kbase, keys, ngm)


def _template(fl, pi, names, lc, members, tensors, templates) -> int:
    """Flatten a class's first instance as its template (and its last, as the guard);
    the template's index, or -1 when the two differ."""
    st = fl.flatten(pi, _env(names, lc.scalars[members[0]]), Context(tensors))
    if len(members) > 1:
        other = fl.flatten(pi, _env(names, lc.scalars[members[-1]]), Context(tensors))
        if not same_stream(st, other):
            if not _warned:
                _warned.append(1)
                warn(f"simulator: instances of program {fl.programs[pi].attrs['name']} that "
                     f"agree on every timed expression flatten differently; they are "
                     f"flattened one by one (sim/classes.py NOT_TIMED is out of date)")
            return -1
    templates.append(st)
    return len(templates) - 1


def same_stream(a, b) -> bool:
    """Whether two streams are equal but for the L2 keys of their GM boxes."""
    if (a.pipe, a.dur, a.preds, a.post, a.need, a.op, a.flag, a.xflag) != \
            (b.pipe, b.dur, b.preds, b.post, b.need, b.op, b.flag, b.xflag):
        return False
    return [g and g[1:] for g in a.gm] == [g and g[1:] for g in b.gm]


def stream_keys(st, ro: int, rs: int) -> np.ndarray:
    """The key rows of a flattened stream's GM instructions, (ngm, width)."""
    rows = [_row(g[0], ro, rs) for g in st.gm if g is not None]
    return np.array(rows, np.int64).reshape(len(rows), 3 + ro + rs)


def _row(key, ro: int, rs: int) -> list:
    if key is None:
        return [-1] + [0] * (2 + ro + rs)
    tensor, offs, shape = key
    return [tensor, len(offs), len(shape), *offs, *[0] * (ro - len(offs)), *shape,
            *[0] * (rs - len(shape))]


def _ranks(programs) -> tuple:
    """The largest rank of a GM box's offsets and of its shape in these programs."""
    ro = rs = 0
    for p in programs:
        for op in p.walk():
            if op.name in ("tload", "tstore", "tgather"):
                ro = max(ro, len(op.attrs.get("offsets") or ()))
                rs = max(rs, len(op.operands[0].type.shape))
    return ro, rs


def _row_names(prog) -> list:
    g = prog.attrs["grid_rank"]
    return [f"g{d}" for d in range(g)] + list(prog.attrs["scalars"])


def _env(names, row) -> dict:
    return {n: int(v) for n, v in zip(names, row)}


class _Split(Exception):
    def __init__(self, values):
        self.values = values


def _classes(prog, names, rows, tensors, ro, rs):
    """(instances, signature, key rows) per class of a launch's instances (rows: the
    launch's S rows), the instances in increasing order, the classes by first instance."""
    out = []
    todo = [np.arange(rows.shape[0], dtype=np.int64)]
    while todo:
        m = todo.pop()
        w = _Walk({n: rows[m, k] for k, n in enumerate(names)}, set(names), len(m), tensors,
                  ro, rs)
        try:
            w.block(prog.regions[0])
        except _Split as s:
            order = np.argsort(s.values, kind="stable")
            v = s.values[order]
            cuts = np.flatnonzero(v[1:] != v[:-1]) + 1
            todo.extend(reversed(np.split(m[order], cuts)))
            continue
        out.append((m, tuple(w.sig), w.key_rows()))
    out.sort(key=lambda c: int(c[0][0]))
    return out


class _Walk:
    """Walks a program as the flattener does, over many instances at once: the values that
    decide the stream must agree (else _Split with the differing values), the GM boxes'
    offsets are kept per instance."""

    def __init__(self, env, row_vars, n, tensors, ro, rs):
        self.env, self.row_vars, self.n, self.tensors = env, row_vars, n, tensors
        self.ro, self.rs = ro, rs
        self.sig: list = []
        self.boxes: list = []       # per GM instruction: None or (tensor, offsets, shape)
        self.free: dict = {}

    def value(self, e) -> int:
        if isinstance(e, int):
            return e
        syms = self.free.get(e)
        if syms is None:
            syms = self.free[e] = bool(E.free_symbols(e) & self.row_vars)
        v = E.evaluate(e, self.env)
        if syms and isinstance(v, np.ndarray):
            if v.size and (v != v[0]).any():
                raise _Split(np.asarray(v, np.int64))
            v = v[0] if v.size else 0
        v = int(v)
        self.sig.append(v)
        return v

    def attrs(self, v) -> None:
        if isinstance(v, E.Expr):
            self.value(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                self.attrs(x)
        elif isinstance(v, dict):
            for x in v.values():
                self.attrs(x)

    def block(self, ops) -> None:
        for op in ops:
            n = op.name
            if n in ("tile", "arg"):
                continue
            if n == "for":
                a = op.attrs
                lo, hi, step = (self.value(a[k]) for k in ("start", "stop", "step"))
                for i in range(lo, hi, step):
                    self.env[a["var"]] = i
                    self.block(op.regions[0])
            elif n == "if":
                self.block(op.regions[0 if self.value(op.attrs["cond"]) else 1])
            elif n in GM_OPS:
                self.box(op)
            else:
                for k, v in op.attrs.items():
                    if k not in NOT_TIMED:
                        self.attrs(v)

    def box(self, op) -> None:
        tile = op.operands[0].type
        valid = op.attrs.get("valid")
        shape = tuple(tile.shape) if valid is None else \
            tuple(max(0, min(self.value(x), d)) for x, d in zip(valid, tile.shape))
        if op.name == "tscatter":
            return
        if op.name == "tgather":
            self.boxes.append(None)
            return
        offs = [E.evaluate(x, self.env) for x in op.attrs["offsets"]]
        self.boxes.append((self.tensors[op.operands[1].owner.attrs["index"]], offs, shape))

    def key_rows(self) -> np.ndarray:
        width = 3 + self.ro + self.rs
        out = np.zeros((self.n, len(self.boxes), width), np.int64)
        for k, b in enumerate(self.boxes):
            if b is None:
                out[:, k, 0] = -1
                continue
            tensor, offs, shape = b
            out[:, k, 0], out[:, k, 1], out[:, k, 2] = tensor, len(offs), len(shape)
            for d, v in enumerate(offs):
                out[:, k, 3 + d] = v
            for d, v in enumerate(shape):
                out[:, k, 3 + self.ro + d] = v
        return out


class InstanceStream:
    """A template's stream with one instance's L2 keys (for the Python engine): the
    template's lists, but for `gm`, and its successors worked out once (`succ`)."""

    __slots__ = ("pipe", "dur", "gm", "preds", "post", "need", "op", "prog", "flag", "xflag",
                 "succ")

    def __len__(self) -> int:
        return len(self.pipe)


def instance_streams(p: Plan, key_ids):
    """A function of an instance id making its InstanceStream from plan p, the keys being
    key_ids (one per key row: equal rows, equal ids; -1 for no key)."""
    shared = []
    for st in p.templates:
        succ: list = [[] for _ in range(len(st))]
        for i, ps in enumerate(st.preds):
            for j in ps:
                succ[j].append(i)
        shared.append((st, succ, [k for k, g in enumerate(st.gm) if g is not None]))
    ids, tpl, kbase = key_ids.tolist(), p.tpl.tolist(), p.kbase.tolist()

    def make(i: int) -> InstanceStream:
        st, succ, where = shared[tpl[i]]
        v = InstanceStream()
        v.pipe, v.dur, v.preds, v.post, v.need, v.op, v.prog, v.flag, v.xflag, v.succ = (
            st.pipe, st.dur, st.preds, st.post, st.need, st.op, st.prog, st.flag, st.xflag,
            succ)
        gm = list(st.gm)
        b = kbase[i]
        for k, pos in enumerate(where):
            key = ids[b + k]
            gm[pos] = (key if key >= 0 else None,) + gm[pos][1:]
        v.gm = gm
        return v
    return make
