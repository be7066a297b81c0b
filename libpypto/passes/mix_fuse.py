"""mix-fuse: a loop of cube and vector blocks as one mixed program per cluster, pipelined.

On a target with separate cube and vector cores (a2, a3, 950: a cluster is one cube core
and two vector cores), fuse leaves flash attention's KV loop as seven tasks per step, cube
and vector, passing scores, probabilities and partial outputs through GM workspaces, each
step waiting for the last. mix-fuse turns such a `loop` into one block (core "mixed", the
grid of its cube blocks: one instance per cluster) whose program loops over the steps
itself, the reference's mixed subgraph:

- The loop body's blocks become phases of alternating core kinds (mix_phases.py):
  flash attention: [cube: S = Q K^T] [vector: softmax (is_loop_begin or not)]
  [cube: P V] [vector: rescale and add, the last step's division]. Each phase's work is
  written in the program as a `section` (ir/mix_ops.py) of its core: the cube's, or one
  per vector core with the vector rows split between them (vector instance 2 g + v of a
  cube instance g runs on vector core v; a vector instance past the vector grid does
  nothing), their data in GM workspaces as before (forward and cse have kept what each
  block's own instructions share on chip).
- Cross-core events (cross_set / cross_wait, INTRA_BLOCK: the instructions Pro mode
  writes, ir/pro_ops.py) order the phases: phase k sets event k, which phase k + 1 waits
  for; a cube set releases both vector cores, a cube wait needs a set from each.
- Pipelining (software pipelining over the steps): phase k of step j runs in loop
  iteration t = j + d_k. The first phase (flash attention's Q K^T on the cube) gets d = 0,
  the next preload, every later hand-over one step more (the cube runs ahead, the P V
  matmul a step behind the softmax, the rescale a step behind it, so no core waits for
  the other within an iteration), except that phases a < b one of which writes what the
  other touches (the later one in a later step: a loop-carried dependence against the
  body order) share a delay: a step's softmax reading the running max the previous
  step's softmax wrote is fine, one reading what the previous step's rescale wrote is
  not (fuse's sinking keeps flash attention's `acc * alpha` out of the softmax for this).
  Accesses guarded by is_loop_begin (first step only) on the later side, or by
  is_loop_end (last step only) on the earlier side, do not count: no such step exists.
- Rings: a workspace only one phase writes and only later phases read (nothing outside
  the loop touching it) gets as many slots as the delays between its writer and its
  readers need, plus `slack` (a leading dim indexed by the step modulo the slots): with a
  slot of slack the writer waits for the reader of a step one iteration further back, not
  the iteration just before.
- Back edges: where a later phase b must precede an earlier phase a of a later step on
  the other core (it reads a ring slot a overwrites n steps on, or a conflict tied their
  delays: n = 1), b sets an event a waits for, with n credits the setter posts before the
  loop (and the waiter takes after it, so every set is waited), unless the hand-overs
  already order the two (`_implied`: flash attention's back edges once its rings have a
  slot of slack). Event ids: the hand-overs 0 .. m - 2 (m phases), then the back edges; at
  most 16.
- Loop-invariant loads (and what only they feed, their tiles written by nothing else:
  flash attention's Q and its extract into L0A) move before the loop, on their core.
- The running state (mix_promote.py): tensors only the vector phases touch, at one box,
  live in a UB tile of each vector core for the whole loop.
- The program order is one valid order of the whole cluster's work: run as it stands on one
  core (the host) it computes what the loop computed. When the block does not fit the
  cores' buffers, the running state stays in GM, then the invariant loads in the loop; a
  block that still does not fit is not made.

When it applies: every block of the loop (through `if` regions, no inner loop, step 1) is a
cube or vector block over a grid [n, 1, ...] of row bands: the cube blocks' instances own
rows [r g, r g + r) and the vector blocks' [r v, r v + r) or [r v / 2, ...) (one or two
vector instances per cube instance), every tensor written in the loop is accessed only in
its instance's band (so instance g's steps need no other instance's: the loop may run
inside each instance), by loads and stores only. Loops that do not fit are left alone.

insert-sync gives each part its intra-core flags (one core's pipes at a time). Lowered
without it, the simulator orders a Tensor-mode program's instructions within a core by their
buffers (sim/flatten.py): a cross-core set there posts once its core's GM work issued before
it is done, and a wait holds back its core's next GM work.
"""
from __future__ import annotations

from ..errors import UsageError
from ..ir import expr as E
from ..ir.core import Document, Op, clone_ops, copy_doc
from ..ir.defs import dests, sources
from ..ir.types import TensorType
from .alloc import plan as alloc_plan
from .cse import share_loads
from .footprint import canonical, grid_key
from .forward import forward_body
from .mix_emit import Emitter
from .mix_phases import NotMixable, accesses, phases, touched
from .mix_promote import promotable, redirect

MAX_EVENTS = 16          # cross-core event ids 0-15 (hardware-model.md)


def mix_fuse(doc: Document, *, target, enable: bool = True, preload: int = 2,
             slack: int = 1) -> Document:
    """Fuse a loop's cube and vector blocks into one pipelined mixed program per cluster.

    enable: fuse at all (off: the loop's blocks stay tasks of their own).
    preload: steps the loop's first phase (flash attention's Q K^T on the cube) runs ahead
      of the others; its workspaces get preload + 1 slots. 0: steps in order.
    slack: ring slots beyond those the delays need, so that a writer waits for the reader
      of the step `slack` iterations before the one it overwrites, not the one just before
      (flash attention's Q K^T on the cube, for the vector cores' softmax). 0: the fewest.
    """
    for name, v in (("preload", preload), ("slack", slack)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise UsageError(f"mix-fuse {name} must be an int >= 0, not {v!r}")
    opts = {"preload": preload, "slack": slack}
    cores = target.cores()
    if not enable or target.mixed_programs or not cores.get("cube") or \
            not cores.get("vector"):
        return doc
    doc = copy_doc(doc)
    gms = {op.result: op for op in doc.body if op.name == "gm"}
    outer = _outside_uses(doc.body)
    counter = [0]
    rest = [op for op in doc.body if op.name in ("source", "gm")]
    made: list = []
    body = _region([op for op in doc.body if op.name not in ("source", "gm")], gms, outer,
                   opts, counter, target, made)
    doc.body = rest + made + body
    return doc


def _outside_uses(body: list) -> dict:
    """loop op -> the GM tensors blocks outside that loop touch (for each top-level loop and
    the loops nested in other regions)."""
    out: dict = {}
    tops = [op for op in body if op.name not in ("source", "gm")]
    every = [(blk, v) for top in tops for blk in top.walk() if blk.name == "block"
             for v in _gm_of(blk)]
    for top in tops:
        for lp in top.walk():
            if lp.name == "loop":
                inside = {id(b) for b in lp.walk() if b.name == "block"}
                out[id(lp)] = {v for blk, v in every if id(blk) not in inside}
    return out


def _gm_of(blk) -> set:
    return {v for op in blk.walk() for v in op.operands if op.name in ("tload", "tstore",
                                                                     "tgather", "tscatter")}


def _region(ops: list, gms, outer, opts, counter, target, new_gms: list) -> list:
    out = []
    for op in ops:
        if op.name == "loop":
            got = _try(op, gms, outer, opts, counter, target, new_gms)
            if got is not None:
                out.append(got)
                continue
        op.regions = [_region(r, gms, outer, opts, counter, target, new_gms)
                      for r in op.regions]
        out.append(op)
    return out


def _try(loop, gms, outer, opts, counter, target, new_gms: list):
    """The mixed block for a loop, or None. Without room in the cores' buffers for the
    running state kept in UB, then for the loop-invariant tiles, they stay as they were; a
    block that still does not fit is not made."""
    for keep, hoist in ((True, True), (False, True), (False, False)):
        try:
            plan = _Plan(loop, gms, outer.get(id(loop), set()), opts, hoist, keep)
        except NotMixable:
            return None
        blk = Emitter(plan).block(f"mix{counter[0]}")
        _, peak = alloc_plan(blk.regions[0], target)
        if all(used <= target.buffer(s) for s, used in peak.items()):
            counter[0] += 1
            new_gms += plan.new_gms
            return blk
        for v in plan.slots:            # the rings' leading dim goes again
            v.type = TensorType(v.type.dtype, tuple(v.type.shape[1:]))
    return None


class _Plan:
    """What mix-fuse decided for one loop: its phases, grids, rings and events."""

    def __init__(self, loop, gms: dict, outside: set, opts: dict, hoist: bool = True,
                 keep: bool = True):
        a = loop.attrs
        if a["step"] != 1:
            raise NotMixable("a loop with a step other than 1")
        self.loop, self.var, self.start, self.stop = loop, a["var"], a["start"], a["stop"]
        blocks = [op for op in loop.walk() if op.name == "block"]
        if {b.attrs["core"] for b in blocks} != {"cube", "vector"}:
            raise NotMixable("not both cube and vector blocks")
        bodies = {b: _inner_loops(share_loads(forward_body(clone_ops(b.regions[0], {}),
                                                           b.attrs["grid"]), b.attrs["grid"]),
                                  b.attrs["grid"], b.loc) for b in blocks}
        self.phases = phases(loop.regions[0], bodies)
        if len(self.phases) + 1 > MAX_EVENTS:
            raise NotMixable("more phases than cross-core event ids")
        self.new_gms = redirect(self, gms) if keep else []
        gms = {**gms, **{op.result: op for op in self.new_gms}}
        self.written = set().union(*(touched(p.items)[1] for p in self.phases))
        self._grids(blocks)
        self._bands()
        self.hoisted = [self._hoist(p) if hoist else [] for p in self.phases]
        self._pipeline(gms, outside, opts)
        self.kept = promotable(self, gms) if keep else {}
        self.store_back = {t for t in self.kept if t in outside or gms[t].attrs.get("param")}

    def _hoist(self, ph) -> list:
        """Take the phase's loop-invariant top-level instructions out of it: loads of what the
        loop never writes at offsets free of the loop variable, and instructions on tiles
        only those make, whose destinations nothing else in the phase writes."""
        writers: dict = {}
        for top in ph.items:
            for op in top.walk():
                for v in dests(op) if op.name not in ("tile", "if", "for") else ():
                    writers[v] = writers.get(v, 0) + 1
        fixed, out = set(), []
        for op in ph.items:
            if op.name in ("tile", "if", "for") or self.var in _symbols(op.attrs):
                continue
            outs = dests(op)
            if not outs or any(writers.get(v, 0) != 1 for v in outs):
                continue
            if op.name == "tload":
                ok = op.operands[1] not in self.written
            else:
                ok = all(v in fixed for v in sources(op))
            if ok:
                fixed.update(outs)
                out.append(op)
        decls = [op for op in ph.items if op.name == "tile" and op.result in fixed]
        ph.items = [op for op in ph.items if op not in out and op not in decls]
        return decls + out

    # -- grids and row bands ------------------------------------------------------------------
    def _grids(self, blocks: list) -> None:
        """The cluster grid (the cube blocks'), vector instances per cube instance (k)."""
        cube = {_rows_grid(b.attrs["grid"]) for b in blocks if b.attrs["core"] == "cube"}
        vec = {_rows_grid(b.attrs["grid"]) for b in blocks if b.attrs["core"] == "vector"}
        if len(cube) != 1 or len(vec) != 1:
            raise NotMixable("blocks over different grids")
        (gc,), (gv,) = cube, vec
        if len(gc) != len(gv) or any(d != 1 for d in gc[1:] + gv[1:]):
            raise NotMixable("a grid with more than one instance beyond its first dim")
        self.grid, self.vgrid = list(gc), list(gv)
        self.rows = {c: self._rows(c, [b for b in blocks if b.attrs["core"] == c])
                     for c in ("cube", "vector")}
        rc, rv = self.rows["cube"], self.rows["vector"]
        if rc % rv or rc // rv not in (1, 2):
            raise NotMixable("cube row tiles not 1 or 2 vector row tiles")
        self.k = rc // rv
        g0, v0 = gc[0], gv[0]
        if isinstance(g0, int) and isinstance(v0, int):
            ok = g0 == -(-v0 // self.k)
        else:
            ok = isinstance(g0, E.Expr) and g0.op == "cdiv" and g0.args[1] == rc and \
                v0 == E.cdiv(g0.args[0], rv)
        if not ok:
            raise NotMixable("cube and vector grids that do not cover the same rows")

    def _rows(self, core: str, blocks: list) -> int:
        """The rows of one instance's band: c in the dim-0 offset c * g0 of every access of a
        written tensor by blocks of this kind."""
        seen = set()
        for b in blocks:
            grid = grid_key(b.attrs["grid"])
            for v, _, op in accesses(b.regions[0]):
                if v in self.written:
                    seen.add(_band(op, grid))
        if len(seen) != 1 or None in seen:
            raise NotMixable(f"{core} accesses outside their instance's rows")
        return seen.pop()

    def _bands(self) -> None:
        """Every access of a written tensor, by any block, stays in its instance's band."""
        for p in self.phases:
            for b in p.blocks:
                grid = grid_key(b.attrs["grid"])
                for v, _, op in accesses(b.regions[0]):
                    if v in self.written and _band(op, grid) != self.rows[b.attrs["core"]]:
                        raise NotMixable("an access outside its instance's rows")

    # -- pipelining, rings, events -----------------------------------------------------------
    def _pipeline(self, gms: dict, outside: set, opts: dict) -> None:
        """Delays, rings and back edges (module docstring)."""
        ph = self.phases
        m = len(ph)
        use = [_uses(p.items, self.var, self.start, self.stop) for p in ph]
        self.rings = self._ring_candidates(use, gms, outside)
        group = list(range(m))                  # phases merged to one delay
        for b in range(m):
            for a in range(b):
                if _backward(use[b], use[a], self.rings):
                    for k in range(a + 1, b + 1):
                        group[k] = group[a]
        order = sorted(set(group))
        preload = opts["preload"]
        delay = {g: (0 if i == 0 else preload + i - 1) for i, g in enumerate(order)}
        self.delays = [delay[g] for g in group]
        self.preload = max(self.delays)
        self.slots = {}
        for v, a in sorted(self.rings.items(), key=lambda kv: kv[1]):
            readers = [k for k in range(a + 1, m) if v in use[k].reads]
            if not readers:             # nobody reads it (dce drops it)
                continue
            n = max(self.delays[k] for k in readers) - self.delays[a] + 1
            if n > 1:
                n += opts["slack"]
                self.slots[v] = n
        self.rings = {v: a for v, a in self.rings.items() if v in self.slots}
        self.back = self._back_edges(use)
        self.ready = list(range(m - 1))
        if m - 1 + len(self.back) > MAX_EVENTS:
            raise NotMixable("more cross-core events than event ids")

    def _ring_candidates(self, use: list, gms: dict, outside: set) -> dict:
        """workspace -> the one phase that writes it, for workspaces only later phases
        read and nothing outside the loop touches."""
        out = {}
        for a, u in enumerate(use):
            for v in u.writes:
                if gms[v].attrs.get("workspace") and v not in outside and v not in u.reads and \
                        all(v not in w.writes for k, w in enumerate(use) if k != a) and \
                        all(v not in w.reads for w in use[:a]):
                    out[v] = a
        return out

    def _back_edges(self, use: list) -> list:
        """(setter phase b, waiter phase a < b, credits): b's step j before a's step
        j + credits, for each conflict across cores against program order."""
        ph, want = self.phases, {}
        for b in range(len(ph)):
            for a in range(b):
                if ph[a].core == ph[b].core:
                    continue
                dist = [self.slots[v] for v in use[b].reads & set(self.rings)
                        if self.rings[v] == a]
                if _backward(use[b], use[a], self.rings):
                    dist.append(1)
                if dist:
                    want[(b, a)] = min(dist)
        keep = []
        for (b, a), n in sorted(want.items()):
            if not any(b2 > b and a2 == a and ph[b2].core == ph[b].core and n2 <= n
                       for (b2, a2), n2 in want.items()) and not self._implied(b, a, n):
                keep.append((b, a, n))
        return keep

    def _implied(self, b: int, a: int, n: int) -> bool:
        """Do the hand-overs already order phase b's step j before phase a's step j + n (a
        on the other core)? Some phase p on b's core runs a step j' after b's step j in that
        core's program order, and p + 1 (on a's core) waits for it: if p + 1's step j' comes
        before a's step j + n on a's core (or is it), the chain orders them. Flash attention
        with a slot of slack: the P V matmul waits for the softmax, and the cube's next
        Q K^T comes after it; the next softmax comes after the rescale, and the P V matmul
        of its step waits for it."""
        ph, d = self.phases, self.delays
        for p in range(len(ph) - 1):
            if ph[p].core != ph[b].core or ph[p + 1].core != ph[a].core:
                continue
            step = d[b] - d[p] + (0 if p >= b else 1)       # j' - j
            at, want = step + d[p + 1], n + d[a]            # their iterations, less j
            if at < want or (at == want and p + 1 <= a):
                return True
        return False


class _Use:
    """A phase's GM accesses: reads and writes, and each (tensor, mode) with the guards it
    is under in every place it occurs (first: only the loop's first step, last: its last)."""

    def __init__(self):
        self.reads, self.writes = set(), set()
        self.guards: list = []                    # (tensor, mode, frozenset of guards)


def _uses(items: list, var: str, start, stop) -> _Use:
    u = _Use()
    v = E.sym(var)
    first = E.eq(v, start)
    last = E.eq(v, E.add(start, E.sub(E.cdiv(E.sub(stop, start), 1), 1)))

    def walk(ops, when):
        for op in ops:
            if op.name == "if":
                c = op.attrs["cond"]
                extra = {"first"} if c == first else {"last"} if c == last else set()
                walk(op.regions[0], when | extra)
                walk(op.regions[1], when)
            elif op.name in ("tload", "tstore"):
                t, mode = op.operands[1], "r" if op.name == "tload" else "w"
                (u.reads if mode == "r" else u.writes).add(t)
                u.guards.append((t, mode, when))
            else:
                for r in op.regions:
                    walk(r, when)
    walk(items, frozenset())
    return u


def _backward(b: _Use, a: _Use, rings: dict) -> bool:
    """Must phase b of a step precede phase a (earlier in the body) of a later step for a
    tensor other than a ring: one writes what the other touches, leaving out b's accesses
    in the last step only and a's in the first step only (no such later step)."""
    mb = {(t, mode) for t, mode, g in b.guards if "last" not in g and t not in rings}
    ma = {(t, mode) for t, mode, g in a.guards if "first" not in g}
    return any(t2 is t and "w" in (mode, mode2) for t, mode in mb for t2, mode2 in ma)


def _rows_grid(grid) -> tuple:
    """A block's grid as the mixed program runs it: its first dim, the others (static:
    _inner_loops) loops inside the instance."""
    return (grid[0],) + (1,) * (len(grid) - 1)


def _inner_loops(body: list, grid, loc) -> list:
    """A block's body with its grid dims past the first as loops inside it (flash attention
    with KV blocks of 512: the scores and the exp over 4 column tiles of 128 each), so
    that one instance of the mixed program runs the whole row band. A symbolic one is not
    mixable."""
    extra = [(d, n) for d, n in enumerate(grid) if d > 0 and n != 1]
    if any(not isinstance(n, int) for _, n in extra):
        raise NotMixable("a symbolic grid dim beyond the first")
    for d, n in reversed(extra):
        var = f"gl{d}"
        env = {f"g{d}": E.sym(var)}
        for top in body:
            for op in top.walk():
                op.attrs = E.substitute_attrs(op.attrs, env)
        body = [Op("for", [], [], {"var": var, "start": 0, "stop": n, "step": 1}, [body], loc)]
    return body


def _symbols(attrs) -> set:
    out: set = set()

    def walk(a):
        if isinstance(a, dict):
            for x in a.values():
                walk(x)
        elif isinstance(a, list):
            for x in a:
                walk(x)
        elif isinstance(a, E.Expr):
            out.update(E.free_symbols(a))
    walk(attrs)
    return out


def _band(op, grid):
    """c when the access's dim-0 offset is c * g0 (canonical over grid), its tile at most c
    rows there and no other offset uses g0; else None. A grid of one instance in its first
    dim is one band: an access at dim-0 offset 0 is in the band of its tile's rows."""
    offs = op.attrs["offsets"]
    if not offs:
        return None
    first = canonical(offs[0], grid)
    tile, gm = op.operands[0].type, op.operands[1].type
    if first == 0 and grid[0] == 1:
        return tile.shape[0] if tile.rank == gm.rank else 1
    g0 = E.sym("g0")
    if not (isinstance(first, E.Expr) and first.op == "mul" and len(first.args) == 2 and
            first.args[0] == g0 and isinstance(first.args[1], int)):
        return None
    c = first.args[1]
    if any("g0" in E.free_symbols(canonical(o, grid)) for o in offs[1:]
           if isinstance(o, E.Expr)):
        return None
    if tile.rank == gm.rank and tile.shape[0] > c:
        return None
    return c


