"""The pipes of one core as insert-sync sees a block: a tree of its instructions, and walks
of it that say which accesses no sync orders.

A block's body becomes a tree of nodes: instructions (their core and pipe, and the bytes they
read and write: each tile's buffer bytes at its address, a GM tensor as a whole, or the rows
of its first dim where the walk can evaluate them: a ring slot of mix-fuse), cross-core
events (on their pipe), `for` loops and `if` branches with their regions, section markers
and inert nodes (tile declarations). The core of a node is that of the section marker before
it on every path (a mixed program, ir/mix_ops.py; None in a one-core program); each core has
its own pipes (a unit is (core, pipe)), buffers and GM records, and a walk orders only what
one core does: the cross-core events order the cores. A cross_set must follow every GM access
its core made on another pipe; a GM access must follow every cross_wait its core made on
another pipe.

A walk runs the tree as the checker runs a program (libpypto/runtime/pro_check.py): every
pipe an in-order queue, happens-before as vector clocks, a flag's n-th wait taking the
clock of its n-th set, a barrier joining every pipe. Loops run a representative number of
iterations: a static trip count as it is (a long one cut to a count with the same remainder
modulo the loop's buffer count), a symbolic one 0, 1 or U = 2N + 1 times (a scenario), a
branch whose condition is not static either arm. Both counts reach R iterations further, R
the largest constant in a branch condition on the loop variable: a software-pipelined loop
(mix-fuse) starts its phase of delay d under `d <= i`, its first step under `i - d == 0`,
so the walk runs the iterations where every phase and arm is live; a scenario also gives
the symbol of a symbolic trip count a value that makes the count exact (`sizes`), so
branches on the sizes go as in a real run. An access that overlaps an earlier access of
another pipe, one of them a write, with no happens-before between them is a violation:
`Walk.run` reports the first one (find mode: the pass adds a flag for it) or whether there
is none (check mode).

Flags (Flag) are static: a set after one node on its pipe and a wait before another on the
waiting pipe, in one region (forward), or around a loop's back edge (loop-carried: the wait
in iteration i takes the set of iteration i - d, a prologue before the loop sets d times and
an epilogue after it waits d times), or a barrier before a node where event ids ran out.
"""
from __future__ import annotations

from collections import deque

from ..errors import CompileError
from ..ir import expr as E
from ..ir.defs import dests, sources
from ..ir.mix_ops import part
from ..ir.types import TensorType

INERT = ("tile", "mm_layout")
EVENTS = {"cross_set": "xset", "cross_wait": "xwait"}
NOWHERE = frozenset([None])      # before any section marker: the program's one core
ALL = "*"                        # a barrier of every core (sync_all)
MANUAL = ("sync_set", "sync_wait", "barrier", "mutex_lock", "mutex_unlock")
GM_WRITES = {"tstore": (1,), "tscatter": (0,)}


class Node:
    """One op of the block as the model sees it."""

    __slots__ = ("op", "kind", "pipe", "acc", "regions", "parent", "arm", "slots", "reach",
                 "seq", "first", "last", "core", "unit", "enter", "exit")

    def __init__(self, op, kind, parent, arm):
        self.op, self.kind, self.parent, self.arm = op, kind, parent, arm
        self.pipe, self.acc, self.regions, self.slots, self.reach = None, [], [], 1, 0
        self.seq = self.first = self.last = 0
        self.core, self.unit = None, None       # the core (part) it runs on; (core, pipe)
        self.enter = self.exit = NOWHERE        # the cores it may run on, before and after

    def __repr__(self) -> str:
        return f"Node({self.op.name}@{self.seq})"


def build(body: list, align: int) -> list:
    """The tree of a block's body (a list of top-level nodes), numbered in program order
    (node.first / node.last: the positions of its start and end, for event-id lifetimes)."""
    tiles: dict = {}
    roots = _region(body, None, 0, align, tiles)
    _cores(roots, NOWHERE)
    count = [0]

    def number(nodes):
        for n in nodes:
            n.first = count[0]
            count[0] += 1
            n.seq = n.first
            for r in n.regions:
                number(r)
            n.last = count[0]
            count[0] += 1
    number(roots)
    return roots


def _region(ops, parent, arm, align, tiles) -> list:
    out = []
    for op in ops:
        n = op.name
        if n == "for":
            node = Node(op, "for", parent, arm)
            node.regions = [_region(op.regions[0], node, 0, align, tiles)]
            node.slots = max([t.attrs.get("slots", 1) for t in op.regions[0]
                              if t.name == "tile"] + [1])
            node.reach = _reach(op)
        elif n == "if":
            node = Node(op, "if", parent, arm)
            node.regions = [_region(r, node, i, align, tiles) for i, r in enumerate(op.regions)]
        elif n == "sync_all":
            node = Node(op, "drain", parent, arm)
        elif n == "section":
            node = Node(op, "section", parent, arm)
        elif n in EVENTS:
            node = Node(op, EVENTS[n], parent, arm)
            node.pipe = op.attrs.get("pipe", "S")
        elif n in INERT:
            node = Node(op, "inert", parent, arm)
            if n == "tile":
                tiles[op.result] = op
        elif n in MANUAL:
            raise CompileError(f"insert-sync: the block already has {n}", op.loc)
        else:
            node = Node(op, "instr", parent, arm)
            node.pipe = op.attrs.get("pipe", "S")
            node.acc = _accesses(op, align, tiles)
        out.append(node)
    return out


def _cores(nodes, cur: frozenset) -> frozenset:
    """Give each node the cores it may run on (a mixed program's section markers,
    ir/mix_ops.py: an instruction runs on the core of the last marker before it), each
    instruction its core and unit (core, pipe); the cores after the nodes. An instruction
    that could run on either of two cores is an error."""
    for n in nodes:
        n.enter = cur
        if n.kind == "section":
            cur = frozenset([part(n.op)[0]])
        elif n.kind == "if":
            cur = frozenset().union(*(_cores(r, cur) for r in n.regions)) \
                if len(n.regions) == 2 else cur | _cores(n.regions[0], cur)
        elif n.kind == "for":
            entry = cur
            while True:
                out = _cores(n.regions[0], entry)
                if out <= entry:
                    break
                entry = entry | out
            cur = entry
        elif n.kind in ("instr", "xset", "xwait"):
            if len(cur) != 1:
                raise CompileError(f"insert-sync: {n.op.name} of a mixed program runs after "
                                   f"section markers of different cores: put one before it",
                                   n.op.loc)
            (n.core,) = cur
        n.unit = (n.core, n.pipe)
        n.exit = cur
    return cur


def _reach(loop) -> int:
    """The largest integer constant in a branch condition of the loop's body that names the
    loop variable (0 if none): a software-pipelined loop guards its late phases by
    `d <= i`, `i - d == 0`, so a walk must run past iteration d to see them."""
    var, most = loop.attrs["var"], 0
    stack = list(loop.regions[0])
    while stack:
        op = stack.pop()
        for r in op.regions:
            stack.extend(r)
        cond = op.attrs.get("cond") if op.name == "if" else None
        if isinstance(cond, E.Expr) and var in E.free_symbols(cond):
            terms = [cond]            # the constants of its sums and comparisons
            while terms:
                t = terms.pop()
                if isinstance(t, int):
                    most = max(most, abs(t))
                elif isinstance(t, E.Expr) and t.op in _AFFINE:
                    terms.extend(t.args)
    return most


_AFFINE = ("add", "lt", "le", "eq", "ne", "and", "or", "not")


def _accesses(op, align: int, tiles: dict) -> list:
    """(key, address expression or None, bytes, write) of every operand an instruction
    touches: tiles by their buffer bytes, GM tensors whole."""
    out = []
    writes = {id(v) for v in dests(op)}
    for v in dests(op) + [s for s in sources(op) if id(s) not in writes]:
        decl = tiles.get(v)
        if decl is None or "addr" not in decl.attrs:
            raise CompileError("insert-sync needs tile addresses: run it after alloc",
                               op.loc)
        t = v.type
        out.append((("tile", t.space), decl.attrs["addr"], t.padded_nbytes(align),
                    id(v) in writes))
    gm_w = GM_WRITES.get(op.name, ())
    for i, v in enumerate(op.operands):
        if isinstance(v.type, TensorType):
            rows = None
            if op.name in ("tload", "tstore") and i == 1 and op.attrs.get("offsets"):
                rows = (op.attrs["offsets"][0], op.attrs["valid"][0])
            out.append((("gm", id(v)), rows, None, i in gm_w))
    return out


WHOLE = (0, 1 << 62)


def gm_rows(rows, env: dict) -> tuple:
    """The rows [lo, hi) of its first dim a GM access touches where the walk knows them (a
    ring's slot, mix-fuse: the step modulo the slots), else the whole tensor."""
    if rows is None:
        return WHOLE
    try:
        lo = int(E.evaluate(rows[0], env))
        return lo, lo + max(1, int(E.evaluate(rows[1], env)))
    except (E.UnboundSymbol, ZeroDivisionError, TypeError, ValueError):
        return WHOLE


def ancestors(node) -> list:
    chain = []
    while node is not None:
        chain.append(node)
        node = node.parent
    return chain[::-1]


class Flag:
    """A static flag between two pipes (see the module docstring). kind: "fwd", "loop" or
    "barrier"; d: the event ids it takes, one per iteration of `loop` modulo d: for a
    loop-carried flag the iterations between its set and its wait, for a forward one
    (inside a loop whose tiles are N-buffered, ordering an access to one of them) N, so
    that a pipe running ahead into the next buffer sets another id."""

    __slots__ = ("uid", "kind", "P", "Q", "after", "before", "loop", "d", "ids", "core")

    def __init__(self, uid, kind, P, Q, after, before, loop=None, d=1, core=None):
        self.uid, self.kind, self.P, self.Q = uid, kind, P, Q
        self.after, self.before, self.loop, self.d = after, before, loop, d
        self.ids, self.core = None, core

    def key(self) -> tuple:
        return (self.kind, self.core, self.P, self.Q, id(self.after), id(self.before),
                id(self.loop), self.d)


def placement(a: tuple, b: tuple) -> tuple:
    """Where a flag ordering dynamic access a (node, iterations) before b goes:
    ("fwd", set after, wait before) in the innermost region both run in the same instance
    of, or ("loop", loop, set after, wait before, d) across that loop's iterations."""
    (na, ita), (nb, itb) = a, b
    ca, cb = ancestors(na), ancestors(nb)
    for k in range(min(len(ca), len(cb))):
        x, y = ca[k], cb[k]
        if x is not y:
            return ("fwd", x, y)
        if x.kind == "for" and ita[x] != itb[x]:
            return ("loop", x, ca[k + 1], cb[k + 1], itb[x] - ita[x])
    raise CompileError(f"insert-sync: cannot place a flag between {na.op.name} and "
                       f"{nb.op.name}", nb.op.loc)


class Violation(Exception):
    """The first unordered pair of a walk: src and dst are (node, {loop node: iteration});
    slotted: one of the two accesses is to an N-buffered tile (its address moves)."""

    def __init__(self, src, dst, slotted=False):
        super().__init__("unordered access")
        self.src, self.dst, self.slotted = src, dst, slotted


class _Rec:
    __slots__ = ("lo", "hi", "pipe", "tick", "write", "node", "its", "seq", "moving")

    def __init__(self, lo, hi, pipe, tick, write, node, its, seq, moving):
        self.lo, self.hi, self.pipe, self.tick, self.write = lo, hi, pipe, tick, write
        self.node, self.its, self.seq, self.moving = node, its, seq, moving


class Walk:
    """One walk of the tree under a scenario (trips: "U", 1 or 0 for symbolic loops; arm:
    the arm of branches whose condition is not static) with the flags given."""

    def __init__(self, roots, flags, scenario):
        self.roots, self.trips, self.arm = roots, scenario[0], scenario[1]
        self.sizes = scenario[2] if len(scenario) > 2 else {}
        self.pre, self.post = anchors(flags)
        self.clk: dict = {}          # unit (core, pipe) -> its vector clock
        self.floor: dict = {}        # core -> what its pipes know after its last barrier
        self.recs: dict = {}
        self.queues: dict = {}
        self.its: dict = {}          # loop node -> current iteration
        self.env: dict = dict(self.sizes)
        self.dyn = 0
        self.gm_last: dict = {}      # core -> pipe -> (tick, node, its) of its last GM access
        self.waits: dict = {}        # core -> pipe -> (tick, node, its) of its last cross_wait

    def run(self) -> None:
        """Walk; raise Violation at the first unordered access."""
        self.region(self.roots)

    def region(self, nodes) -> None:
        for n in nodes:
            for act in self.pre.get(id(n), ()):
                self.act(act)
            if n.kind == "instr":
                self.instr(n)
            elif n.kind in ("xset", "xwait"):
                self.event(n)
            elif n.kind == "for":
                self.loop(n)
            elif n.kind == "if":
                self.branch(n)
            elif n.kind == "drain":
                self.barrier(ALL)
            for act in self.post.get(id(n), ()):
                self.act(act)

    def loop(self, n) -> None:
        a = n.op.attrs
        start, step = a["start"], a["step"]
        for i in range(trip_count(n, self.trips, self.sizes)):
            self.its[n] = i
            self.env[a["var"]] = start + i * step if isinstance(start, int) and \
                isinstance(step, int) else i
            self.region(n.regions[0])
        self.its.pop(n, None)
        self.env.pop(a["var"], None)

    def branch(self, n) -> None:
        cond = n.op.attrs["cond"]
        try:
            arm = 0 if E.evaluate(cond, self.env) else 1
        except E.UnboundSymbol:
            arm = self.arm
        self.region(n.regions[arm])

    def clock(self, unit) -> dict:
        c = self.clk.get(unit)
        if c is None:
            c = self.clk[unit] = dict(self.floor.get(unit[0], self.floor.get(ALL, {})))
        return c

    def act(self, act) -> None:
        what, f = act[0], act[1]
        if what == "barrier":
            self.barrier(f.core)
            return
        if len(act) > 2:
            slot = act[2]
        else:
            slot = self.its[f.loop] % f.d if f.loop is not None else 0
        q = self.queues.setdefault((f.uid, slot), deque())
        if what in ("set", "preset"):
            q.append(dict(self.clock((f.core, f.P))))
            return
        if not q:
            raise CompileError(f"insert-sync: a wait ({f.P} -> {f.Q}) with no set: an "
                               f"internal error", f.before.op.loc)
        c = self.clock((f.core, f.Q))
        for k, v in q.popleft().items():
            if c.get(k, 0) < v:
                c[k] = v

    def barrier(self, core) -> None:
        """Join the clocks of every pipe of a core (ALL: of every core: sync_all)."""
        mine = [u for u in self.clk if core is ALL or u[0] == core]
        joined: dict = dict(self.floor.get(core, self.floor.get(ALL, {})))
        for u in mine:
            for k, v in self.clk[u].items():
                if joined.get(k, 0) < v:
                    joined[k] = v
        if core is ALL:
            self.floor = {c: dict(joined) for c in list(self.floor) + [ALL]}
        self.floor[core] = joined
        for u in mine:
            self.clk[u] = dict(joined)

    def event(self, n) -> None:
        """A cross-core event on its pipe: a set must follow every GM access its core made
        before it on the other pipes (the other core then touches that GM), and every GM
        access after a wait, on any pipe, must follow the wait."""
        q = n.unit
        c = self.clock(q)
        c[q] = tick = c.get(q, 0) + 1
        its = dict(self.its)
        if n.kind == "xwait":
            self.waits.setdefault(n.core, {})[n.pipe] = (tick, n, its)
            return
        self._follows(self.gm_last, n, c, its)

    @staticmethod
    def _follows(table: dict, n, c: dict, its: dict) -> None:
        """n (clock c) must follow what table (core -> pipe -> (tick, node, its)) holds of
        its core on the other pipes: its last GM accesses, or its last cross_waits."""
        for p, (t, node, at) in table.get(n.core, {}).items():
            if p != n.pipe and c.get((n.core, p), 0) < t:
                raise Violation((node, at), (n, its))

    def instr(self, n) -> None:
        q = n.unit
        c = self.clock(q)
        c[q] = tick = c.get(q, 0) + 1
        self.dyn += 1
        its = dict(self.its)
        if any(key[0] == "gm" for key, *_ in n.acc):
            self._follows(self.waits, n, c, its)
            self.gm_last.setdefault(n.core, {})[n.pipe] = (tick, n, its)
        worst = None
        for key, addr, size, write in n.acc:
            if key[0] == "gm":
                moving = False
                lo, hi = gm_rows(addr, self.env)
            else:
                moving = not isinstance(addr, int)
                lo = int(E.evaluate(addr, self.env)) if moving else addr
                hi = lo + size
            recs = self.recs.setdefault((n.core, key), [])     # another core's buffers
            # and GM accesses are not this core's to order: the cross-core events do
            for r in recs:
                if r.pipe != q and (r.write or write) and r.lo < hi and lo < r.hi and \
                        c.get(r.pipe, 0) < r.tick and (worst is None or r.seq > worst[0].seq):
                    worst = (r, moving or r.moving)
            if worst is None:
                self._record(recs, _Rec(lo, hi, q, tick, write, n, its, self.dyn, moving), c)
        if worst is not None:
            r, slotted = worst
            raise Violation((r.node, r.its), (n, its), slotted)

    @staticmethod
    def _record(recs, new, c) -> None:
        keep = []
        for r in recs:
            covered = new.lo <= r.lo and r.hi <= new.hi
            if new.write and covered and (r.pipe == new.pipe or c.get(r.pipe, 0) >= r.tick):
                continue
            if not new.write and not r.write and covered and r.pipe == new.pipe:
                continue
            keep.append(r)
        keep.append(new)
        recs[:] = keep


def anchors(flags) -> tuple:
    """The actions of the flags at the nodes they are anchored to (node id -> actions), in
    the order insert-sync emits them, sets as early and waits as late as they can be:
    before a node its barriers, then (a loop) its prologue sets, then waits; after a node
    its sets, then (a loop) its epilogue waits; flags in the order they were made."""
    pre: dict = {}
    post: dict = {}

    def put(table, node, order, f, action):
        table.setdefault(id(node), []).append(((order, f.uid, action[-1] if len(action) > 2
                                                 else 0), action))
    for f in flags:
        if f.kind == "barrier":
            put(pre, f.before, 0, f, ("barrier", f))
            continue
        put(pre, f.before, 2, f, ("wait", f))
        put(post, f.after, 0, f, ("set", f))
        if f.kind == "loop":
            for s in range(f.d):
                put(pre, f.loop, 1, f, ("preset", f, s))
                put(post, f.loop, 1, f, ("drain", f, s))
    for table in (pre, post):
        for k, v in table.items():
            table[k] = [a for _, a in sorted(v, key=lambda t: t[0])]
    return pre, post


def trip_count(n, trips, sizes=None) -> int:
    """The iterations a walk runs loop node n for (see the module docstring); sizes: the
    scenario's values of symbols (sizes()), which make a symbolic trip count exact."""
    a = n.op.attrs
    start, stop, step = a["start"], a["stop"], a["step"]
    period = max(1, n.slots)
    reach = -(-n.reach // abs(step)) if isinstance(step, int) and step else n.reach
    exact = isinstance(start, int) and isinstance(step, int) and step > 0 and sizes and \
        isinstance(stop, E.Expr) and E.free_symbols(stop) <= sizes.keys()
    if exact:
        stop = E.evaluate(stop, sizes)
    if all(isinstance(x, int) for x in (start, stop, step)):
        t = max(0, -(-(stop - start) // step))
        cap = 2 * period + 2 + reach
        if exact and t <= 4 * cap:
            return t
        return t if t <= cap else cap - ((cap - t) % period)
    most = None
    if isinstance(start, int) and isinstance(step, int) and step > 0:
        hi = E.bounds(stop, {})[1]
        if hi is not None:
            most = max(0, -(-(hi - start) // step))
    want = 2 * period + 1 + reach if trips == "U" else trips
    return want if most is None else min(want, most)


def sizes(roots, trips, most: bool = False) -> dict:
    """Values of the symbols of symbolic trip counts for a scenario (trips "U", 1 or 0),
    so that the walk evaluates the branches on them exactly: a loop's count is its value
    at 0 plus that many (U: as trip_count counts), at the least value of the one symbol its
    stop names besides those already given (most: the largest value with that count, so
    a size that divides and one that leaves a tail are both walked). A pipelined loop
    `for i in [0, S // 64 + 4)` gets S = 0, 64 or 64 U (63, 127, 64 U + 63): no step, one
    step (first and last at once) and several, where the arms of `i - 4 == 0` and `i - 4
    == S // 64 - 1` go as in a real run. A stop naming no symbol or several (or a loop
    variable) stays as trip_count counts it."""
    out: dict = {}
    loopvars: set = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n.kind == "for":
            loopvars.add(n.op.attrs["var"])
        for r in n.regions:
            stack.extend(r)
    stack = list(reversed(roots))
    while stack:
        n = stack.pop()
        for r in reversed(n.regions):
            stack.extend(reversed(r))
        if n.kind != "for":
            continue
        a = n.op.attrs
        start, stop, step = a["start"], a["stop"], a["step"]
        if not (isinstance(start, int) and isinstance(step, int) and step > 0 and
                isinstance(stop, E.Expr)):
            continue
        free = E.free_symbols(stop) - out.keys()
        if len(free) != 1 or free & loopvars:
            continue
        (x,) = free

        def count(v, x=x, stop=stop, start=start, step=step):
            return max(0, -(-(E.evaluate(stop, {**out, x: v}) - start) // step))
        try:
            base = count(0)
        except (E.UnboundSymbol, ZeroDivisionError):
            continue
        period = max(1, n.slots)
        more = 2 * period + 1 + -(-n.reach // step) if trips == "U" else trips
        want, hi = base + more, 1
        while count(hi) < want and hi < 1 << 40:
            hi *= 2
        if count(hi) < want:
            continue
        least = _least(count, want, hi)
        if most and count(least) == want:
            top = hi
            while count(top) <= want and top < 1 << 40:
                top *= 2
            least = _least(count, want + 1, top) - 1 if count(top) > want else least
        out[x] = least
    return out


def _least(count, want: int, hi: int) -> int:
    """The least v in [0, hi] with count(v) >= want (count grows with v; count(hi) >= want)."""
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if count(mid) >= want:
            hi = mid
        else:
            lo = mid + 1
    return lo
