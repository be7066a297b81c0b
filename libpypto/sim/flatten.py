"""One program instance as the flat instruction stream the simulator runs.

A stream holds, per dynamic instruction (loops unrolled, branches taken for the instance's
values): its pipe, its cycles (on-chip work), its GM transfer (shared HBM / L2 traffic),
the earlier instructions of the stream it must wait for, and the cross-core events it
posts and needs.

Ordering within a core:
- every pipe is an in-order queue: an instruction waits for the previous one on its pipe;
- a program that carries its own sync (Pro mode, and Tensor-mode programs lowered with
  insert-sync: their `sync` attribute): only that sync: the n-th sync_wait of a (set pipe,
  wait pipe, event) waits for the n-th sync_set; mutex_lock for the last mutex_unlock of
  its id; barrier(ALL) and sync_all drain every pipe. Cross-core events (cross_set /
  cross_wait, sync_all) are posted and needed by key, resolved across cores by the engine
  with the matching rules of the Pro runner (runtime/pro_exec.py);
- a Tensor-mode program without it (lowered without insert-sync): an instruction waits for
  the last writer of every tile byte it reads or writes (RAW, WAW) and for the last reader
  on each pipe of every byte it overwrites (WAR), by buffer addresses, as a correct sync
  insertion would order them (a tile whose address is an expression, an N-buffered one,
  counts as its whole memory space); a load from a GM tensor the instance stored to waits
  for that store.
"""
from __future__ import annotations

import math
import operator

from ..ir import expr as E
from ..ir.defs import dests, sources
from ..ir.mix_ops import part
from ..ir.types import TileType
from ..targets.costs import PIPE_INDEX, gm_path, padded_bytes

V = PIPE_INDEX["V"]
S = PIPE_INDEX["S"]
NPIPES = len(PIPE_INDEX)
CROSS = ("cross_set", "cross_wait", "sync_all")


class Stream:
    """The flat instructions of one program instance (parallel lists, one entry each)."""

    __slots__ = ("pipe", "dur", "gm", "preds", "post", "need", "op", "prog", "flag", "xflag")

    def __init__(self, prog: int):
        self.prog = prog
        self.pipe: list = []
        self.dur: list = []
        self.gm: list = []        # None or (key, nbytes, path bytes/cycle, is_store)
        self.preds: list = []
        self.post: list = []      # None or [(key, n)]
        self.need: list = []      # None or [(key, n)]
        self.op: list = []        # index of the static op in the program (OpTable)
        # The flags for pypto-prof's arrows (they order nothing: preds and need do):
        # flag: None or the earlier instructions of the stream whose flag this one waited
        # for (Tensor mode: the last it depends on of each other pipe, unless implied; Pro: the instruction
        # each sync_wait before it on its pipe was set after); on a cross-core post, the
        # instruction the posted event signals. xflag: None or the cross-core keys a
        # cross_wait before it on its pipe needed.
        self.flag: list = []
        self.xflag: list = []

    def __len__(self) -> int:
        return len(self.pipe)

    def add(self, pipe, dur, gm, preds, op, post=None, need=None, flag=None,
            xflag=None) -> int:
        self.flag.append(flag)
        self.xflag.append(xflag)
        self.pipe.append(pipe)
        self.dur.append(dur)
        self.gm.append(gm)
        self.preds.append(preds)
        self.post.append(post)
        self.need.append(need)
        self.op.append(op)
        return len(self.pipe) - 1


class Context:
    """Who runs an instance: its cluster and core (Pro), the GM tensor of each argument, the
    cross-core members (Pro INTER_BLOCK and sync_all)."""

    def __init__(self, tensors: list, cluster: int = 0, core_id: int = 0, kind: str = "vector",
                 index: int = 0, members: dict | None = None, part: bool | None = None):
        self.tensors, self.cluster, self.core_id = tensors, cluster, core_id
        self.kind, self.index, self.members = kind, index, members or {}
        self.part = part        # a mixed program for a cluster: only core_id's sections


def row_names(prog) -> list:
    """The names of a launch's scalar row: the grid variables, then the program's scalars."""
    return [f"g{d}" for d in range(prog.attrs["grid_rank"])] + list(prog.attrs["scalars"])


def instance_env(prog, lc, i: int) -> dict:
    """The grid variables and scalars of instance i of launch lc of prog."""
    return {n: int(v) for n, v in zip(row_names(prog), lc.scalars[i - lc.first])}


class Flattener:
    """Flattens instances of the programs of one document for one target's costs."""

    def __init__(self, programs: list, costs, pro: bool):
        self.programs, self.costs, self.pro = programs, costs, pro
        self.ops = [[op for op in p.walk() if op is not p] for p in programs]
        self.index = [{id(op): i for i, op in enumerate(ops)} for ops in self.ops]
        # which programs order themselves by their own sync (Pro, or lowered with insert-sync)
        self.synced = [pro or "sync" in p.attrs for p in programs]
        self.regions = [self._regions(p) if not s else {}
                        for p, s in zip(programs, self.synced)]
        self.templates: dict = {}
        self.flags = True         # work out Tensor-mode flags (off once the record is full)

    def flatten(self, pi: int, env: dict, ctx: Context) -> Stream:
        st = Stream(pi)
        state = _State(ctx)
        self._block(pi, self.programs[pi].regions[0], dict(env), st, state)
        return st

    def _block(self, pi, ops, env, st, state) -> None:
        for op in ops:
            n = op.name
            if n in ("tile", "arg"):
                continue
            if n == "section":          # a mixed program's part marker (ir/mix_ops.py)
                state.on = state.ctx.part is None or part(op)[0] == state.ctx.core_id
                continue
            if n == "for":
                a = op.attrs
                lo, hi, step = (int(_fn(a[k])(env)) for k in ("start", "stop", "step"))
                for i in range(lo, hi, step):
                    env[a["var"]] = i
                    self._block(pi, op.regions[0], env, st, state)
            elif n == "if":
                arm = 0 if _fn(op.attrs["cond"])(env) else 1
                self._block(pi, op.regions[arm], env, st, state)
            elif state.on:
                self._instr(pi, op, env, st, state)

    def _instr(self, pi, op, env, st, state) -> None:
        t = self.templates.get(id(op))
        if t is None:
            t = self.templates[id(op)] = _Template(self, pi, op)
        pipe = t.pipe
        if t.sync is not None:
            t.sync(self, op, env, st, state, pipe, t.oid)
            return
        dur, gm = t.cost(env, state.ctx)
        last = state.last[pipe]
        if self.synced[pi]:
            flag, xflag = state.pending[pipe], state.xpending[pipe]
            if flag or xflag:
                state.pending[pipe], state.xpending[pipe] = [], []
            i = st.add(pipe, dur, gm, (last,) if last >= 0 else (), t.oid,
                       flag=tuple(flag) or None, xflag=tuple(xflag) or None)
            state.last[pipe] = state.real[pipe] = i
            return
        preds = {last} if last >= 0 else set()
        writer, readers = state.writer, state.readers
        for over in t.reads:
            for r in over:
                w = writer.get(r, -1)
                if w >= 0:
                    preds.add(w)
        for _, over in t.writes:
            for r in over:
                w = writer.get(r, -1)
                if w >= 0:
                    preds.add(w)
                rd = readers.get(r)
                if rd:
                    preds.update(rd.values())
        if gm is not None:
            self._gm_deps(gm, preds, state, len(st))
        i = st.add(pipe, dur, gm, tuple(sorted(preds)), t.oid, flag=_other_pipes(st, preds, pipe, state) if self.flags else None)
        state.last[pipe] = i
        for over in t.reads:
            for r in over:
                rd = readers.get(r)
                if rd is None:
                    rd = readers[r] = {}
                rd[pipe] = i
        for key, over in t.writes:
            for r in over:
                writer[r] = i
            readers.pop(key, None)

    # -- costs ------------------------------------------------------------------------------
    def static_cost(self, op, tiles) -> float:
        """Cycles of an instruction whose cost no size changes (vector, on-chip moves): the
        target's formula (Costs.on_chip), shared with pypto-sched."""
        return self.costs.on_chip(op, tiles)

    # -- Tensor mode: dependences from operands ---------------------------------------------
    def _regions(self, prog) -> dict:
        """id(tile value) -> (region key, keys of the regions overlapping it)."""
        spans = {}
        for op in prog.walk():
            if op.name == "tile":
                t = op.result.type
                addr = op.attrs.get("addr", 0)
                lo = addr if isinstance(addr, int) else 0
                hi = lo + t.padded_nbytes() if isinstance(addr, int) else 1 << 62
                spans[id(op.result)] = (t.space, lo, hi)
        keys = sorted(set(spans.values()))
        over = {k: [o for o in keys if o[0] == k[0] and o[1] < k[2] and k[1] < o[2]]
                for k in keys}
        return {v: (k, over[k]) for v, k in spans.items()}

    def _gm_deps(self, gm, preds, state, i) -> None:
        arg = gm[4]
        if gm[3]:
            state.gm_store[arg] = i
        elif arg in state.gm_store:
            preds.add(state.gm_store[arg])


class _Template:
    """What an instruction costs and touches, worked out once per static op: its pipe, its
    tile regions (Tensor mode), its fixed cycles, or the compiled expressions its cost
    depends on (valid shapes, offsets, k)."""

    def __init__(self, fl, pi, op):
        self.fl, self.op = fl, op
        self.pipe = PIPE_INDEX.get(op.attrs.get("pipe", "S"), S)
        self.oid = fl.index[pi][id(op)] if pi is not None else 0
        if pi is None:
            self.sync = None
        elif not fl.pro and op.name in _TENSOR_SYNC:
            # a Tensor-mode mixed program's cross events: insert-sync leaves them alone (no
            # flag orders a core's GM work before a set), so a set waits for that work
            self.sync = _TENSOR_SYNC[op.name]
        else:       # a program's own flags (Pro mode, or lowered with insert-sync)
            self.sync = _SYNC.get(op.name) if fl.synced[pi] else None
        regions = fl.regions[pi] if fl.regions is not None and pi is not None else {}
        self.reads = [regions[id(v)][1] for v in sources(op) if id(v) in regions]
        self.writes = [regions[id(v)] for v in dests(op) if id(v) in regions]
        self.tiles = [v.type for v in op.operands if isinstance(v.type, TileType)]
        self.fixed = None
        self.memo: dict = {}
        n = op.name
        if n in ("tload", "tstore", "tgather"):
            self.kind = "gm"
            t = self.tiles[0]
            self.rate, self.store = fl.costs.path[gm_path(n, t)], n == "tstore"
            self.arg = op.operands[1].owner.attrs["index"]
            v = op.attrs.get("valid")
            if v is not None and len(v) > t.rank and not fl.pro:
                # a Tensor-mode tile of lower rank than its tensor (a batched matmul's L1
                # tiles, a mix-fuse ring slot): its dims are the tensor's last ones, as the
                # C copies them (the leading ones are 1 or empty)
                v = v[len(v) - t.rank:]
            self.valid = [_fn(x) for x in v] if v is not None else None
            self.offs = [_fn(x) for x in op.attrs["offsets"]] if n != "tgather" else None
        elif n == "tmatmul" and "k_valid" in op.attrs:
            self.kind, self.k = "matmul", _fn(op.attrs["k_valid"])
        else:
            self.kind = "fixed"
            self.fixed = fl.static_cost(op, self.tiles)

    def cost(self, env, ctx) -> tuple:
        if self.kind == "fixed":
            return self.fixed, None
        if self.kind == "matmul":
            k = int(self.k(env))
            got = self.memo.get(k)
            if got is None:
                acc, a, b = self.tiles[:3]
                kk = max(0, min(a.shape[1], k))
                got = self.memo[k] = self.fl.costs.cube(a.shape[0], b.shape[1], kk,
                                                        a.dtype.name)
            return got, None
        t = self.tiles[0]
        shape = tuple(t.shape) if self.valid is None else \
            tuple(max(0, min(int(f(env)), d)) for f, d in zip(self.valid, t.shape))
        nbytes = self.memo.get(shape)
        if nbytes is None:
            nbytes = self.memo[shape] = padded_bytes(shape, t.dtype.itemsize)
        key = None
        if self.offs is not None:
            key = (ctx.tensors[self.arg], tuple(int(f(env)) for f in self.offs), shape)
        return self.fl.costs.setup, (key, nbytes, self.rate, self.store, self.arg)


def _fn(e):
    """A function of env computing expression e (ir/expr.py), built once per expression:
    closures over the tree, so evaluating it costs a few calls, not a tree walk."""
    got = _FNS.get(e) if not isinstance(e, int) else None
    if got is not None:
        return got
    f = _build(e)
    if not isinstance(e, int):
        _FNS[e] = f
    return f


_FNS: dict = {}


def _build(e):
    if isinstance(e, int):
        return lambda env, v=e: v
    op, args = e.op, e.args
    if op == "sym":
        name = args[0]
        return lambda env: env[name]
    fs = [_fn(a) for a in args]
    if len(fs) == 2 and op in _BINARY:
        return _binary(_BINARY[op], *fs)
    if op in ("add", "mul", "min", "max"):
        fold = {"add": sum, "mul": math.prod, "min": min, "max": max}[op]
        return lambda env: fold([f(env) for f in fs])
    if op == "not":
        (f0,) = fs
        return lambda env: int(not f0(env))
    if op == "select":
        c, a, b = fs
        return lambda env: a(env) if c(env) else b(env)
    return lambda env: E.evaluate(e, env)


def _binary(how, f0, f1):
    return lambda env: how(f0(env), f1(env))


# scalar forms of ir/expr.py's two-argument ops (the simulator's sizes are ints)
_BINARY = {"add": operator.add, "mul": operator.mul, "min": min, "max": max,
           "floordiv": operator.floordiv, "cdiv": lambda a, b: -(-a // b),
           "mod": operator.mod, "lt": lambda a, b: int(a < b),
           "le": lambda a, b: int(a <= b), "eq": lambda a, b: int(a == b),
           "ne": lambda a, b: int(a != b), "and": lambda a, b: int(bool(a) and bool(b)),
           "or": lambda a, b: int(bool(a) or bool(b))}


def _other_pipes(st, preds, pipe, state):
    """The last of preds on each pipe other than pipe, unless an earlier instruction of
    pipe already waited for it or a later one of that pipe: the flags a sync insertion
    sets (what the pipes' order implies needs none). None if none."""
    last: dict = {}
    for p in preds:
        q = st.pipe[p]
        if q != pipe and p > last.get(q, -1):
            last[q] = p
    seen = state.seen[pipe]
    new = [p for q, p in last.items() if p > seen[q]]
    for p in new:
        seen[st.pipe[p]] = p
    return tuple(sorted(new)) if new else None


class _State:
    def __init__(self, ctx):
        self.ctx = ctx
        self.on = ctx.part is None       # in a section of the core flattened (or no sections)
        self.last = [-1] * NPIPES
        self.real = [-1] * NPIPES                    # the last non-sync instruction per pipe
        self.seen = [[-1] * NPIPES for _ in range(NPIPES)]   # Tensor: flags waited for
        self.pending: list = [[] for _ in range(NPIPES)]     # flag sources for the next one
        self.xpending: list = [[] for _ in range(NPIPES)]    # cross-core keys for the next
        self.writer: dict = {}
        self.readers: dict = {}
        self.gm_store: dict = {}
        self.flags: dict = {}
        self.mutex: dict = {}
        self.count: dict = {}


# -- Pro mode: the sync instructions ------------------------------------------------------------

def _event(op, env) -> int:
    e = op.attrs["event_id"]
    return int(E.evaluate(e, env)) if isinstance(e, E.Expr) else int(e)


def _plain(fl, st, state, pipe, oid, extra=(), post=None, need=None) -> int:
    preds = set(extra)
    if state.last[pipe] >= 0:
        preds.add(state.last[pipe])
    i = st.add(pipe, 0.0, None, tuple(sorted(preds)), oid, post, need)
    state.last[pipe] = i
    return i


def _sync_set(fl, op, env, st, state, pipe, oid):
    key = (op.attrs["pipe"], op.attrs["wait_pipe"], _event(op, env))
    i = _plain(fl, st, state, pipe, oid)
    state.flags.setdefault(key, []).append((i, state.real[pipe]))


def _sync_wait(fl, op, env, st, state, pipe, oid):
    key = (op.attrs["set_pipe"], op.attrs["pipe"], _event(op, env))
    q = state.flags.get(key)
    setter, src = q.pop(0) if q else (None, -1)
    _plain(fl, st, state, pipe, oid, (setter,) if setter is not None else ())
    if src >= 0:
        state.pending[pipe].append(src)


def _mutex(fl, op, env, st, state, pipe, oid):
    mid = int(E.evaluate(op.attrs["mutex_id"], env))
    if op.name == "mutex_lock":
        prev = state.mutex.get(mid)
        _plain(fl, st, state, pipe, oid, (prev,) if prev is not None else ())
    else:
        state.mutex[mid] = _plain(fl, st, state, pipe, oid)


def _drain(st, state, oid, post=None, need=None) -> int:
    """An instruction after every earlier one on every pipe, before every later one."""
    preds = tuple(sorted({x for x in state.last if x >= 0}))
    i = st.add(S, 0.0, None, preds, oid, post, need)
    state.last = [i] * NPIPES
    return i


def _barrier(fl, op, env, st, state, pipe, oid):
    if op.attrs["which"] == "ALL":
        _drain(st, state, oid)


def _nth(state, key) -> int:
    state.count[key] = n = state.count.get(key, 0) + 1
    return n


def _cross(fl, op, env, st, state, pipe, oid):
    """cross_set posts, cross_wait needs, keyed as the Pro runner matches them."""
    ctx, e, mode = state.ctx, _event(op, env), op.attrs["mode"]
    if mode == "INTER_BLOCK":
        return _inter_block(fl, op, st, state, pipe, oid, e)
    setting, marks = _cross_marks(op, state, e)
    if setting:
        i = _plain(fl, st, state, pipe, oid, post=marks)
        if state.real[pipe] >= 0:
            st.flag[i] = (state.real[pipe],)
        return i
    state.xpending[pipe] += marks
    return _plain(fl, st, state, pipe, oid, need=marks)


GM_PIPES = tuple(PIPE_INDEX[p] for p in ("MTE2", "MTE3", "FIX"))


def _tensor_cross(fl, op, env, st, state, pipe, oid):
    """A cross-core event of a Tensor-mode mixed program (mix-fuse), whose parts carry no
    intra-core sync yet: GM is reached only through MTE2, MTE3 and FIX, so a set posts once
    the core's last instruction on each of them has finished (everything it read or wrote
    in GM before the set), and a wait holds back the next instruction on each of them
    (compute after a wait waits for the data it reads through the buffer dependences)."""
    setting, marks = _cross_marks(op, state, _event(op, env))
    if setting:
        preds = sorted({state.last[p] for p in GM_PIPES + (S,) if state.last[p] >= 0})
        i = st.add(S, 0.0, None, tuple(preds), oid, post=marks)
        state.last[S] = i
        if preds:
            st.flag[i] = (max(preds),)
        return i
    for p in GM_PIPES:
        last = state.last[p]
        state.last[p] = st.add(p, 0.0, None, (last,) if last >= 0 else (), oid, need=marks)
    return state.last[GM_PIPES[0]]


def _inter_block(fl, op, st, state, pipe, oid, e):
    ctx = state.ctx
    if op.name == "cross_set":
        marks = [(("b", ctx.kind, e, ctx.index), _nth(state, (True, ("b", ctx.kind, e,
                                                                     ctx.index))))]
        i = _plain(fl, st, state, pipe, oid, post=marks)
        if state.real[pipe] >= 0:
            st.flag[i] = (state.real[pipe],)
        return i
    n = _nth(state, ("bw", ctx.kind, e))
    need = [(("b", ctx.kind, e, j), n) for j in range(ctx.members.get(ctx.kind, 0))]
    state.xpending[pipe] += need
    return _plain(fl, st, state, pipe, oid, need=need)


def _cross_marks(op, state, e) -> tuple:
    """(is a set, [(key, n)]) of a cross-core event other than INTER_BLOCK: the n-th set of
    a key matches its n-th wait."""
    ctx, mode = state.ctx, op.attrs["mode"]
    cl, me = ctx.cluster, ctx.core_id
    setting = op.name == "cross_set"
    if mode == "INTER_SUBBLOCK":
        keys = [("s", cl, 3 - me, e)] if setting else [("s", cl, me, e)]
    elif mode == "UNICAST_BLOCK":
        keys = [("n", cl, me != 0, e)] if setting else [("n", cl, me == 0, e)]
    elif me == 0:
        keys = [("d", cl, 1, e), ("d", cl, 2, e)] if setting else \
            [("u", cl, 1, e), ("u", cl, 2, e)]
    else:
        keys = [("u", cl, me, e)] if setting else [("d", cl, me, e)]
    return setting, [(k, _nth(state, (setting, k))) for k in keys]


def _sync_all(fl, op, env, st, state, pipe, oid):
    ctx, kind = state.ctx, op.attrs["core_type"]
    r = _nth(state, ("all", kind))
    kinds = {"MIX": ("cube", "vector"), "AIV_ONLY": ("vector",), "AIC_ONLY": ("cube",)}[kind]
    need = [(("a", kind, r, k, j), 1) for k in kinds for j in range(ctx.members.get(k, 0))]
    _drain(st, state, oid, post=[(("a", kind, r, ctx.kind, ctx.index), 1)])
    _drain(st, state, oid, need=need)


_SYNC = {"sync_set": _sync_set, "sync_wait": _sync_wait, "mutex_lock": _mutex,
         "mutex_unlock": _mutex, "barrier": _barrier, "cross_set": _cross,
         "cross_wait": _cross, "sync_all": _sync_all,
         "mm_layout": lambda fl, op, env, st, state, pipe, oid: None}
_TENSOR_SYNC = {"cross_set": _tensor_cross, "cross_wait": _tensor_cross}
