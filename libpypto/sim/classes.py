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

The keys are ids (_Keys): equal boxes (tensor, offsets, shape), as flatten.py's key
tuples compare, get equal ids.
"""
from __future__ import annotations

import numpy as np

from ..errors import warn
from ..ir import expr as E
from .flatten import Context, row_names

NOT_TIMED = frozenset({"offsets", "init", "row0"})     # attributes no cost depends on
GM_OPS = ("tload", "tstore", "tgather", "tscatter")
_warned: list = []


class Plan:
    """The streams of a run's task instances: templates[tpl[i]] with the L2 key ids
    keys[kbase[i] : kbase[i] + ngm[tpl[i]]] (ngm: GM instructions of a template; equal
    boxes, equal ids; -1 for a box the L2 does not key)."""

    def __init__(self, templates, tpl, kbase, keys, ngm):
        self.templates, self.tpl, self.kbase, self.keys, self.ngm = \
            templates, tpl, kbase, keys, ngm


def plan(exp, fl, prog_of: list, tensors: list, intern=None) -> Plan:
    """Templates and keys for every instance of the expansion exp (prog_of[task]: the
    program index of each task op, tensors[task]: the GM tensor of each of its args).
    intern: a function giving dense ids to int64 codes (native.intern), np.unique's
    inverse by default."""
    cache: dict = {}
    templates: list = []
    tpl = np.zeros(exp.n, np.int32)
    parts: list = []            # (instances, boxes: per GM instruction, see _Walk.boxes)
    for lc in exp.launches:
        if lc.n == 0:
            continue
        pi = prog_of[lc.task]
        names = row_names(fl.programs[pi])
        for members, sig, boxes in _classes(fl.programs[pi], names, lc.scalars,
                                            tensors[lc.task]):
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
                    parts.append((np.array([lc.first + m]), [g[0] and (
                        g[0][0], list(g[0][1]), g[0][2]) for g in st.gm if g is not None]))
                continue
            assert len(boxes) == sum(g is not None for g in templates[got].gm)
            tpl[ids] = got
            parts.append((ids, boxes))
    ngm = np.array([sum(g is not None for g in st.gm) for st in templates], np.int64)
    counts = ngm[tpl] if exp.n else np.zeros(0, np.int64)
    kbase = np.zeros(exp.n, np.int64)
    if exp.n:
        kbase[1:] = np.cumsum(counts)[:-1]
    keys = _Keys([exp.shapes[op] for op in exp.gms], int(counts.sum()))
    for ids, boxes in parts:
        at = kbase[ids]
        for k, box in enumerate(boxes):
            keys.put(at + k, box)
    return Plan(templates, tpl, kbase, keys.ids(intern), ngm)


class _Keys:
    """L2 key ids of GM boxes (tensor, offsets, shape), equal boxes equal ids. A box is
    coded as one integer: its offsets in mixed radix over its tensor's dims (each offset
    from 0 to the dim), plus the base of its (tensor, shape) group; or, when an offset lies
    outside that range, every box as a row [tensor, ranks, offsets, shape] (slower)."""

    def __init__(self, shapes: list, n: int):
        self.shapes, self.n = shapes, n
        self.group: dict = {}
        self.gid = np.full(n, -1, np.int64)
        self.code = np.zeros(n, np.int64)
        self.boxes: list = []           # (positions, box), for the rows if need be
        self.exact = False

    def put(self, pos, box) -> None:
        self.boxes.append((pos, box))
        if box is None or self.exact:
            return
        tensor, offs, shape = box
        dims = self.shapes[tensor]
        if len(offs) != len(dims):
            self.exact = True
            return
        code = 0
        stride = 1
        for v, d in zip(reversed(offs), reversed(dims)):
            a = np.asarray(v)
            if a.size and (a.min() < 0 or a.max() > d):
                self.exact = True
                return
            code = code + a * stride
            stride *= d + 1
        self.gid[pos] = self.group.setdefault((tensor, tuple(shape)), len(self.group))
        self.code[pos] = code

    def ids(self, intern) -> np.ndarray:
        base, total = [], 0
        for tensor, _ in self.group:
            base.append(total)
            total += int(np.prod([d + 1 for d in self.shapes[tensor]], dtype=object))
        if self.exact or total >= 1 << 62:
            return self._rows(intern)
        none = self.gid < 0
        key = np.asarray(base + [0], np.int64)[self.gid] + self.code
        out = _dense(key[~none], intern)
        ids = np.full(self.n, -1, np.int64)
        ids[~none] = out
        return ids

    def _rows(self, intern) -> np.ndarray:
        ro = max((len(b[1]) for _, b in self.boxes if b), default=0)
        rs = max((len(b[2]) for _, b in self.boxes if b), default=0)
        rows = np.zeros((self.n, 3 + ro + rs), np.int64)
        rows[:, 0] = -1
        for pos, b in self.boxes:
            if b is None:
                continue
            tensor, offs, shape = b
            rows[pos, 0], rows[pos, 1], rows[pos, 2] = tensor, len(offs), len(shape)
            for d, v in enumerate(offs):
                rows[pos, 3 + d] = v
            for d, v in enumerate(shape):
                rows[pos, 3 + ro + d] = v
        none = rows[:, 0] < 0
        ids = np.full(self.n, -1, np.int64)
        if (~none).any():
            _, inv = np.unique(rows[~none], axis=0, return_inverse=True)
            ids[~none] = inv.reshape(-1)
        return ids


def _dense(key: np.ndarray, intern) -> np.ndarray:
    """Ids 0.. for int64 codes, equal codes equal ids."""
    if intern is not None:
        return intern(key)
    return np.unique(key, return_inverse=True)[1].reshape(-1)


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


def _env(names, row) -> dict:
    return {n: int(v) for n, v in zip(names, row)}


class _Split(Exception):
    def __init__(self, values):
        self.values = values


def _classes(prog, names, rows, tensors):
    """(instances, signature, GM boxes) per class of a launch's instances (rows: the
    launch's S rows), the instances in increasing order, the classes by first instance."""
    out = []
    todo = [np.arange(rows.shape[0], dtype=np.int64)]
    while todo:
        m = todo.pop()
        w = _Walk({n: rows[m, k] for k, n in enumerate(names)}, set(names), tensors)
        try:
            w.block(prog.regions[0])
        except _Split as s:
            order = np.argsort(s.values, kind="stable")
            v = s.values[order]
            cuts = np.flatnonzero(v[1:] != v[:-1]) + 1
            todo.extend(reversed(np.split(m[order], cuts)))
            continue
        out.append((m, tuple(w.sig), w.boxes))
    out.sort(key=lambda c: int(c[0][0]))
    return out


class _Walk:
    """Walks a program as the flattener does, over many instances at once: the values that
    decide the stream must agree (else _Split with the differing values), the GM boxes'
    offsets are kept per instance."""

    def __init__(self, env, row_vars, tensors):
        self.env, self.row_vars, self.tensors = env, row_vars, tensors
        self.sig: list = []
        # per GM instruction: None (no key) or (tensor, offsets: ints or per-instance
        # arrays, shape)
        self.boxes: list = []
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
