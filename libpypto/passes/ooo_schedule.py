"""ooo-schedule: reorder the instructions of each block to shorten its pipe-level critical path.

A block's core runs each pipe (MTE2, MTE1, M, V, MTE3, FIX, S) as an in-order queue, so the
order of a block's instructions decides when a copy-in can start beside the compute of an
earlier tile: program order as the lowering writes it runs a load -> compute -> store chain
to its end before the next chain's load, and alloc then gives the next chain's tiles the
buffers the first one freed (each reuse is a wait). This pass list-schedules every region of
a block (the block body, each loop body, each branch arm: nothing moves into or out of a
region; a loop or a branch moves as one node among its siblings):

- dependences: a tile's writer before its readers (RAW), its readers and writer before the
  next writer (WAR, WAW), by tile (before alloc) or by overlapping buffer bytes (a block that
  has addresses); a GM tensor's store and its loads in program order (any box: two accesses
  of one tensor, one of them a write, never swap); an instruction the pass does not know
  (sync, debug output, Reg and SIMT code) stays between everything before and after it;
- each pipe an in-order queue; an instruction's cost from the target's cost tables, the
  simulator's own (targets/costs.py: on-chip formulas, DMA set-up plus bytes over the
  path's bandwidth and the L2's miss latency for a load, the cube's fractal formula), with
  full tiles where a valid shape is symbolic; a loop costs its trip count (1 when symbolic)
  times its scheduled body, a branch its costlier arm;
- priority: the longest path in cycles from the instruction to the region's end (highest
  level first); at each step the ready instructions that can start earliest compete, the
  highest priority wins, ties go to the earlier in program order (deterministic);
- what the host computes stays the same bits: the C backend fuses runs of neighbouring
  vector instructions into loops, and its vector math (in a vectorised loop or a scalar
  one) can differ in the last bit, so vector instructions (and loops, branches holding
  them, and barriers) keep their order and their neighbours: two that were next to each
  other still are, two that were apart still are (units);
- buffer pressure: the bytes of the region's live tiles per memory space (a tile is live from
  the first scheduled instruction that uses it to the last), plus what a loop or branch node
  holds inside and what the region's outer tiles hold, stay within the core's buffer; an
  instruction that would go over waits (when every ready one would, the earliest in program
  order goes).

The new order of a block is kept only when alloc's plan of it still fits every buffer the
old order fit, and when the block's estimated time on one core (the same model, its tiles at
the offsets alloc will give them: a reused buffer is a wait) is shorter than the old order's;
otherwise the block keeps its order. A tile's declaration moves to just before its first
use. Targets without the simulator's pipe costs (the host, whose C runs one instruction
after another and fuses runs of neighbouring instructions) keep every block as it is.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir.core import Document, copy_doc
from ..ir.defs import dests, sources
from ..ir.tile_ops import DEFS as TILE_DEFS
from ..ir.tile_ops_more import DEFS as MORE_DEFS
from ..ir.types import TensorType, TileType
from ..targets.costs import PIPE_INDEX, PIPES, Costs, gm_path, padded_bytes
from .alloc import buffer_align, plan

MODES = ("hlf",)
NPIPES = len(PIPES)
V_PIPE = PIPE_INDEX["V"]
# instructions that may move: the tile instructions of Tensor and Pro mode (sync, debug
# output, Reg and SIMT instructions are defined elsewhere and stay where they are)
MOVABLE = frozenset(d.name for d in TILE_DEFS + MORE_DEFS)
GM_READS = ("tload", "tgather")


def ooo_schedule(doc: Document, *, target, enable: bool = True, mode: str = "hlf") -> Document:
    """Reorder instructions inside each block region by critical-path list scheduling.

    enable: reorder at all (enable=false keeps program order).
    mode: hlf (highest level first: the ready instruction with the longest path to the
    region's end goes first, the meaning of the reference's ooo_sched_mode "HLF"; its
    "GAPMIN" and default local search are not built).
    """
    if mode not in MODES:
        raise UsageError(f"ooo-schedule mode {mode!r}: known modes are {', '.join(MODES)}")
    doc = copy_doc(doc)
    if not enable or not isinstance(target.data.get("vector"), dict):
        return doc
    costs = Costs(target)
    for blk in doc.walk():
        if blk.name == "block":
            blk.regions[0] = schedule_block(blk.regions[0], target, costs)
    return doc


def schedule_block(body: list, target, costs) -> list:
    """body in its new order, or body itself when the new order does not fit or is not
    faster (see the module docstring)."""
    old = _snapshot(body)
    # tiles that already have buffer offsets (alloc ran first) keep them: their accesses
    # then conflict by overlapping bytes, which keeps every reuse of a buffer in order
    addrs = {op.result: op.attrs["addr"] for top in body for op in top.walk()
             if op.name == "tile" and isinstance(op.attrs.get("addr"), int)}
    ctx = _Context(target, costs, addrs=addrs or None)
    new = ctx.schedule(body, outer=set())
    if new == body and all(op.regions == regions for op, regions in old[:-1]):
        return body
    old_body = _restore(old)
    _, old_peak = plan(old_body, target)
    _, new_peak = plan(new, target)
    for space, used in new_peak.items():
        cap = target.buffer(space)
        if used > cap and old_peak.get(space, 0) <= cap:
            return old_body
    if estimate(new, target, costs) < estimate(old_body, target, costs):
        return new
    return old_body


def _snapshot(body: list) -> list:
    """(op, its regions' op lists) of every op under body: scheduling rewrites regions in
    place, the snapshot puts them back."""
    return [(op, [list(r) for r in op.regions]) for top in body for op in top.walk()] + \
        [(None, list(body))]


def _restore(snap: list) -> list:
    for op, regions in snap[:-1]:
        op.regions = [list(r) for r in regions]
    return list(snap[-1][1])


def estimate(body: list, target, costs) -> float:
    """Cycles of one instance of a block body in its program order on one core, its tiles at
    the offsets alloc's plan gives them (a reused buffer orders its users)."""
    offsets, _ = plan(body, target)
    return _Context(target, costs, offsets).region(body, set()).makespan(None)


class _Context:
    """What scheduling needs across the regions of one block: the target, its costs, the
    tile offsets (estimates only) and the bytes every tile takes."""

    def __init__(self, target, costs, offsets: dict | None = None, addrs: dict | None = None):
        self.target, self.costs, self.offsets = target, costs, offsets
        self.align = buffer_align(target)
        where = offsets if offsets is not None else addrs
        self.spans = None if where is None else _Spans(where, self.size)

    def size(self, v) -> int:
        return -(-v.type.padded_nbytes(self.target.align) // self.align) * self.align

    def region(self, ops: list, outer: set) -> "_Region":
        return _Region(ops, self, outer)

    def schedule(self, ops: list, outer: set) -> list:
        """ops of one region in list-schedule order (nested regions scheduled first)."""
        reg = self.region(ops, outer)
        if len(reg.nodes) < 2:
            return ops
        return reg.emit(reg.list_schedule())


class _Spans:
    """Buffer byte ranges of allocated tiles: the keys a tile's accesses conflict on."""

    def __init__(self, offsets: dict, size):
        self.key = {v: (v.type.space, off, off + size(v)) for v, off in offsets.items()}
        keys = sorted(set(self.key.values()))
        self.over = {k: [o for o in keys if o[0] == k[0] and o[1] < k[2] and k[1] < o[2]]
                     for k in keys}

    def keys(self, v) -> list:
        k = self.key.get(v)
        return [v] if k is None else self.over[k]

    def own(self, v):
        return self.key.get(v, v)


class _Node:
    """One instruction, loop or branch of a region: its pipes, cycles, tile and GM accesses."""

    __slots__ = ("op", "pos", "pipes", "dur", "reads", "writes", "gm_r", "gm_w", "barrier",
                 "tiles", "inner")

    def __init__(self, op, pos: int):
        self.op, self.pos = op, pos
        self.pipes: set = set()
        self.dur = 0.0
        self.reads, self.writes, self.gm_r, self.gm_w = set(), set(), set(), set()
        self.barrier = False
        self.tiles: set = set()        # every tile it uses (nested uses too)
        self.inner: dict = {}          # space -> bytes its own nested tiles hold at most


class _Region:
    """The nodes of one region with their dependences and priorities."""

    def __init__(self, ops: list, ctx: _Context, outer: set):
        self.ctx, self.ops = ctx, ops
        self.decls = [op for op in ops if op.name == "tile"]
        own = {op.result for op in self.decls}
        self.nodes = []
        for op in ops:
            if op.name != "tile":
                self.nodes.append(self._node(op, len(self.nodes), outer | own))
        self.own = own
        self.outer_bytes = _bytes_by_space(
            {v for n in self.nodes for v in n.tiles} - own, ctx.size)
        self.preds = _dependences(self.nodes, ctx.spans)
        self.succ = [[] for _ in self.nodes]
        for j, ps in enumerate(self.preds):
            for i in ps:
                self.succ[i].append(j)
        self.anchor = [bool(n.barrier or V_PIPE in n.pipes) for n in self.nodes]
        # priorities: the longest path to the region's end, through the data dependences
        # and the anchors' fixed order (units)
        chain = [i for i, a in enumerate(self.anchor) if a]
        nxt = dict(zip(chain, chain[1:]))
        self.prio = [0.0] * len(self.nodes)
        for i in range(len(self.nodes) - 1, -1, -1):
            after = self.succ[i] + ([nxt[i]] if i in nxt else [])
            self.prio[i] = self.nodes[i].dur + max((self.prio[s] for s in after), default=0.0)

    def _node(self, op, pos: int, visible: set) -> _Node:
        n = _Node(op, pos)
        if op.regions:
            self._compound(n, visible)
            return n
        pipe = op.attrs.get("pipe")
        if op.name not in MOVABLE or pipe not in PIPE_INDEX:
            n.barrier = True
            n.pipes = set(range(NPIPES))
        else:
            n.pipes = {PIPE_INDEX[pipe]}
            n.dur = instr_cycles(op, self.ctx.costs)
        _accesses(op, n)
        return n

    def _compound(self, n: _Node, visible: set) -> None:
        """A loop or branch: its regions (scheduled first when scheduling), their union of
        accesses and pipes, their cost and the bytes of the tiles they declare."""
        op, ctx = n.op, self.ctx
        if ctx.offsets is None:
            op.regions = [ctx.schedule(r, visible) for r in op.regions]
        spans = [ctx.region(r, visible) for r in op.regions]
        times = [s.makespan(None) for s in spans]
        n.dur = (max(times, default=0.0)) * (_trips(op) if op.name == "for" else 1)
        for s in spans:
            for m in s.nodes:
                n.pipes |= m.pipes
                n.reads |= m.reads
                n.writes |= m.writes
                n.gm_r |= m.gm_r
                n.gm_w |= m.gm_w
                n.tiles |= m.tiles - s.own
                n.barrier |= m.barrier
            for space, b in plan(s.ops, ctx.target)[1].items():
                n.inner[space] = max(n.inner.get(space, 0), b)
        if op.name not in ("for", "if"):
            n.barrier = True
        if n.barrier:
            n.pipes = set(range(NPIPES))

    # -- timing ------------------------------------------------------------------------------
    def makespan(self, order: list | None) -> float:
        """Cycles from the region's start to its last node's end with the nodes issued in
        order (program order by default): each pipe in order, each node after its preds."""
        finish = [0.0] * len(self.nodes)
        free = [0.0] * NPIPES
        end = 0.0
        for i in (order if order is not None else range(len(self.nodes))):
            n = self.nodes[i]
            t = max([finish[p] for p in self.preds[i]] + [free[q] for q in n.pipes],
                    default=0.0)
            finish[i] = t + n.dur
            for q in n.pipes:
                free[q] = finish[i]
            end = max(end, finish[i])
        return end

    # -- list scheduling ---------------------------------------------------------------------
    def list_schedule(self) -> list:
        """The node indices in list-schedule order (the module docstring's rules)."""
        units, before = self.units()
        unit_of = {i: u for u, m in enumerate(units) for i in m}
        preds = [({unit_of[p] for i in m for p in self.preds[i]} - {u}) | before[u]
                 for u, m in enumerate(units)]
        succ: list = [[] for _ in units]
        for u, ps in enumerate(preds):
            for p in ps:
                succ[p].append(u)
        indeg = [len(p) for p in preds]
        ready = [u for u in range(len(units)) if indeg[u] == 0]
        prio = [max(self.prio[i] for i in m) for m in units]
        # among units that can start at once a copy-in goes first: declared earlier, its
        # tile is live beside the work running then and alloc gives it a buffer of its own
        copy_in = [self.nodes[m[0]].op.name in GM_READS for m in units]
        finish, free = [0.0] * len(self.nodes), [0.0] * NPIPES
        live = _Pressure(self)
        order: list = []
        while ready:
            est = {u: self._start(units[u][0], finish, free) for u in ready}
            fits = [u for u in sorted(ready, key=lambda u: (est[u], not copy_in[u], -prio[u], u))
                    if live.fits(units[u])]
            pick = fits[0] if fits else min(ready)
            ready.remove(pick)
            for i in units[pick]:
                finish[i] = self._start(i, finish, free) + self.nodes[i].dur
                for q in self.nodes[i].pipes:
                    free[q] = finish[i]
                live.take(i)
                order.append(i)
            for s in succ[pick]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
        return order

    def _start(self, i: int, finish: list, free: list) -> float:
        return max([finish[p] for p in self.preds[i]] + [free[q] for q in self.nodes[i].pipes],
                   default=0.0)

    def units(self) -> tuple[list, list]:
        """What the schedule moves, and in which order it must still emit some of it.

        The C backend fuses runs of neighbouring vector instructions into loops, and its
        vector math (a vectorised loop or a scalar one) can differ in the last bit: to keep
        host results bit-identical, vector instructions, loops and branches holding vector
        work, and barriers (the anchors) keep their order, anchors next to each other move
        as one unit, and of
        the instructions between two anchors one (the lowest priority, the latest among
        equals) stays between them, so neighbouring anchors stay neighbours and separated
        ones stay separated. Returns the units (node indices, in order) and per unit the
        units to emit before it (order only: no time)."""
        anchor = self.anchor
        units: list = []
        for i in range(len(self.nodes)):
            if anchor[i] and i and anchor[i - 1]:
                units[-1].append(i)
            else:
                units.append([i])
        before: list = [set() for _ in units]
        anchors = [u for u, m in enumerate(units) if anchor[m[0]]]
        for a, b in zip(anchors, anchors[1:]):
            before[b].add(a)
            if b > a + 1:
                pin = max(range(a + 1, b), key=lambda u: (-self.prio[units[u][0]], u))
                before[pin].add(a)
                before[b].add(pin)
        return units, before

    def emit(self, order: list) -> list:
        """The region's ops in the given node order, each tile declared just before the
        first node that uses it (declarations nothing uses first)."""
        if order == list(range(len(self.nodes))):
            return self.ops
        first: dict = {}
        for k, i in enumerate(order):
            for v in self.nodes[i].tiles:
                first.setdefault(v, k)
        front: list = []
        before: list = [[] for _ in order]
        for d in self.decls:
            k = first.get(d.result)
            (front if k is None else before[k]).append(d)
        out = front
        for k, i in enumerate(order):
            out.extend(before[k])
            out.append(self.nodes[i].op)
        return out


class _Pressure:
    """Live bytes per memory space while a region is list-scheduled: a tile of the region is
    live from the first scheduled node that uses it until its last user is scheduled."""

    def __init__(self, reg: _Region):
        self.reg, size = reg, reg.ctx.size
        target = reg.ctx.target
        spaces = target.data["buffers"]
        self.cap = {s: int(spaces[s]) - reg.outer_bytes.get(s, 0) for s in spaces}
        self.size = {v: size(v) for v in reg.own}
        self.left = {v: 0 for v in reg.own}
        for n in reg.nodes:
            for v in n.tiles & reg.own:
                self.left[v] += 1
        self.alive: set = set()
        self.live: dict = {}

    def fits(self, members: list) -> bool:
        need: dict = {}
        new: set = set()
        for i in members:
            n = self.reg.nodes[i]
            for space, b in n.inner.items():
                need[space] = max(need.get(space, 0), b)
            new |= (n.tiles & self.reg.own) - self.alive
        for v in new:
            need[v.type.space] = need.get(v.type.space, 0) + self.size[v]
        return all(self.live.get(s, 0) + b <= self.cap[s]
                   for s, b in need.items() if s in self.cap)

    def take(self, i: int) -> None:
        for v in self.reg.nodes[i].tiles & self.reg.own:
            if v not in self.alive:
                self.alive.add(v)
                self.live[v.type.space] = self.live.get(v.type.space, 0) + self.size[v]
            self.left[v] -= 1
            if self.left[v] == 0:
                self.live[v.type.space] -= self.size[v]


# -- accesses, dependences, costs ---------------------------------------------------------------

def _accesses(op, n: _Node) -> None:
    """The tiles op reads and writes (every tile operand both, for an instruction the pass
    does not know) and the GM tensors it reads and writes."""
    if op.name in MOVABLE:
        n.reads.update(sources(op))
        n.writes.update(dests(op))
    for v in op.operands:
        if isinstance(v.type, TileType):
            n.tiles.add(v)
            if op.name not in MOVABLE:
                n.reads.add(v)
                n.writes.add(v)
        elif isinstance(v.type, TensorType):
            if op.name in GM_READS:
                n.gm_r.add(v)
            elif op.name == "tstore":
                n.gm_w.add(v)
            else:
                n.gm_r.add(v)
                n.gm_w.add(v)


def _dependences(nodes: list, spans) -> list:
    """Per node, the sorted earlier nodes it must follow: RAW, WAR and WAW on tiles (on
    overlapping buffer bytes when spans is given) and on GM tensors, and around barriers."""
    keys = (lambda v: (v,)) if spans is None else spans.keys
    own = (lambda v: v) if spans is None else spans.own
    writer: dict = {}
    readers: dict = {}
    preds, barrier = [], -1
    for j, n in enumerate(nodes):
        p = set(range(j)) if n.barrier else {barrier} if barrier >= 0 else set()
        for v in n.reads | n.gm_r:
            for k in keys(v):
                if k in writer:
                    p.add(writer[k])
        for v in n.writes | n.gm_w:
            for k in keys(v):
                if k in writer:
                    p.add(writer[k])
                p.update(readers.get(k, ()))
        for v in n.reads | n.gm_r:
            readers.setdefault(own(v), set()).add(j)
        for v in n.writes | n.gm_w:
            writer[own(v)] = j
            readers.pop(own(v), None)
        if n.barrier:
            barrier = j
        p.discard(j)
        preds.append(sorted(p))
    return preds


def instr_cycles(op, costs) -> float:
    """Cycles of one instruction alone on its pipe (the simulator's formulas), full tiles
    where a valid shape or a matmul's k is symbolic."""
    tiles = [v.type for v in op.operands if isinstance(v.type, TileType)]
    n = op.name
    if n in ("tload", "tstore", "tgather"):
        t = tiles[0]
        valid = op.attrs.get("valid") or t.shape
        shape = tuple(min(x, d) if isinstance(x, int) else d for x, d in zip(valid, t.shape))
        return costs.gm_alone(gm_path(n, t), padded_bytes(shape, t.dtype.itemsize),
                              n == "tstore")
    k = op.attrs.get("k_valid")
    if n == "tmatmul" and isinstance(k, int):
        a, b = tiles[1], tiles[2]
        return costs.cube(a.shape[0], b.shape[1], max(0, min(a.shape[1], k)), a.dtype.name)
    return costs.on_chip(op, tiles)


def _trips(op) -> int:
    """A loop's trip count, 1 when it is symbolic."""
    a = op.attrs
    start, stop, step = (a.get(k) for k in ("start", "stop", "step"))
    if all(isinstance(x, int) for x in (start, stop, step)) and step > 0:
        return len(range(start, stop, step))
    return 1


def _bytes_by_space(tiles: set, size) -> dict:
    out: dict = {}
    for v in tiles:
        out[v.type.space] = out.get(v.type.space, 0) + size(v)
    return out
