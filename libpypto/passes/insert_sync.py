"""insert-sync: explicit flags between the pipes of each block, so that its program orders
itself as a Pro kernel does (DESIGN.md section 4; ir/pro_ops.py).

A block's pipes (MTE2, MTE1, M, V, MTE3, FIX, S) run as independent in-order queues. Two
instructions on different pipes must be ordered when they touch overlapping bytes of a
buffer (by the addresses alloc gave, so a buffer reused for another tile counts) and one of
them writes: read after write, write after read, write after write; and when they touch the
same GM tensor, one of them storing (a load of what the instance stored waits for the
store; a store over what it loaded waits for the load). These are the rules the simulator
infers for programs without sync (sim/flatten.py); with them in the program, it follows the
program's own sync instead.

How (passes/sync_model.py has the model):
- Walk the block as the pipes would run it, with happens-before as vector clocks; at the
  first pair of accesses nothing orders, add one flag: `sync_set` on the earlier pipe
  right after the node holding the earlier access, `sync_wait` on the later pipe right
  before the node holding the later one, in the innermost region both run in the same
  instance of. So a dependence into a loop waits before the loop, one out of it sets after
  it, and both arms of an `if` stay balanced. A dependence from one iteration of a loop to
  a later one (a buffer the next iteration overwrites, or reads) is loop-carried: set where
  the earlier access ends, wait where the later one starts, with a prologue that sets it
  before the loop and an epilogue that waits after it, so every wait has its set and every
  set its wait. An N-buffered tile (nbuffer) conflicts with its own slot N iterations later:
  its flag takes N event ids, picked by the iteration (base + i mod N), as the hand-written
  Pro GEMM (bench/sim/gemm_pro.py) does. Walk again until nothing is unordered, for every
  scenario of symbolic trip counts (0, 1, 2N + 1) and branch arms.
- Transitive reduction: drop every flag the others already imply (the walks still find
  nothing unordered without it), so no wait is one that pipe order or another wait implies.
- Event ids per pipe pair: a flag holds its ids from its set to its wait in program order
  (a loop-carried one over its whole loop); flags whose spans overlap take different ids,
  at most max-events per pair (the target's [sync] event_ids: 8 on a2/a3, 16 on the 950).
  Where they run out, an N-id flag falls back to one id (one buffer's overlap lost), then a
  flag to a pipe barrier (`barrier ALL` before the later access).

A mixed program for a cluster (mix-fuse; its `section` markers, ir/mix_ops.py, say which core
runs what) is walked with each core's pipes, buffers and flags its own: the cube's MTE2 and a
vector core's are different queues, two vector cores' UB tiles at one address do not meet,
and GM one core hands to another is ordered by the cross-core events mix-fuse wrote, not by
flags. The events themselves run on a pipe: a `cross_set` needs a flag from each other pipe
of its core that touched GM before it (the other core may read what was stored, or
overwrite what was loaded, once it sees the event), and a GM access after a `cross_wait` on
another pipe needs a flag from the wait. A sync op placed where the program may be on more
than one core (between two phases' ifs) gets its core's section marker before it, and the
place's own marker after it where the place had one core.

Blocks that already hold flags, barriers or mutexes (written by hand) are left as they are,
and cross-core events are never added or moved. The block records what it used:
`sync={MTE2_V=2, ..., barrier=1}` (event ids per pipe pair, barriers); a block with the
attribute carries its own sync, and the simulator times it by that sync.
"""
from __future__ import annotations

from ..errors import CompileError, UsageError
from ..ir import expr as E
from ..ir.core import Document, Op, copy_doc
from .alloc import iteration
from .sync_model import MANUAL, Flag, Violation, Walk, anchors, build, placement, sizes

MAX_FLAGS = 4096          # a walk that keeps finding work past this many flags is a bug


def insert_sync(doc: Document, *, target, max_events: int = 0) -> Document:
    """Insert sync_set / sync_wait between the pipes of every block (RAW, WAR, WAW).

    max-events: event ids per pipe pair (0: the target's [sync] event_ids); past them a
    flag falls back to a pipe barrier.
    """
    if max_events < 0:
        raise UsageError(f"insert-sync: max-events must be >= 0, not {max_events}")
    doc = copy_doc(doc)
    limit = max_events or target.event_ids
    align = target.align
    for blk in [op for op in doc.walk() if op.name == "block"]:
        if "sync" in blk.attrs or _has_manual_sync(blk):
            continue
        body, used = sync_region(blk.regions[0], align, limit)
        blk.regions[0] = body
        blk.attrs["sync"] = used
    return doc


def _has_manual_sync(blk) -> bool:
    return any(op.name in MANUAL for op in blk.walk())


def sync_region(ops: list, align: int, limit: int) -> tuple[list, dict]:
    """The ops of one core's program with its flags inserted, and what they use (event ids
    per pipe pair "P_Q", "barrier")."""
    roots = build(ops, align)
    scenarios = _scenarios(roots)
    flags = _derive(roots, scenarios)
    flags = _reduce(roots, flags, scenarios)
    _assign_ids(flags, limit)
    return _emit(roots, flags), _used(flags)


def _scenarios(roots) -> list:
    """(symbolic trip counts, arm of symbolic branches, sizes of the symbols that set
    the trip counts: sync_model.sizes, least and largest) to walk: only the first when the
    block has no symbolic loop or branch."""
    loops = branches = False
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n.kind == "for" and not all(isinstance(n.op.attrs[k], int)
                                       for k in ("start", "stop", "step")):
            loops = True
        if n.kind == "if" and not isinstance(n.op.attrs["cond"], int):
            branches = True
        for r in n.regions:
            stack.extend(r)
    trips = ["U", 1, 0] if loops else ["U"]
    arms = [0, 1] if branches else [0]
    given = [(t, sizes(roots, t, most)) for t in trips for most in (False, True)]
    out: list = []
    for a in arms:
        for t, env in given:
            if (t, a, env) not in out:
                out.append((t, a, env))
    return out


def _derive(roots, scenarios) -> list:
    """Flags until no walk of any scenario finds an unordered pair."""
    flags: list = []
    seen: set = set()
    for sc in scenarios:
        while True:
            try:
                Walk(roots, flags, sc).run()
                break
            except Violation as v:
                f = _flag_for(v, len(flags))
                if f.key() in seen or len(flags) >= MAX_FLAGS:
                    raise CompileError(f"insert-sync: no flag orders {v.src[0].op.name} "
                                       f"before {v.dst[0].op.name} (an internal error)",
                                       v.dst[0].op.loc) from None
                seen.add(f.key())
                flags.append(f)
    return flags


def _flag_for(v: Violation, uid: int) -> Flag:
    (a, _), (b, _) = v.src, v.dst
    where = placement(v.src, v.dst)
    if where[0] == "fwd":
        loop = _slot_loop(where[1]) if v.slotted else None
        if loop is not None:
            return Flag(uid, "fwd", a.pipe, b.pipe, where[1], where[2], loop, loop.slots,
                        a.core)
        return Flag(uid, "fwd", a.pipe, b.pipe, where[1], where[2], core=a.core)
    _, loop, after, before, d = where
    return Flag(uid, "loop", a.pipe, b.pipe, after, before, loop, d, a.core)


def _slot_loop(node):
    """The innermost loop around node whose body has N-buffered tiles (None if none)."""
    node = node.parent
    while node is not None:
        if node.kind == "for" and node.slots > 1:
            return node
        node = node.parent
    return None


def _clean(roots, flags, scenarios) -> bool:
    try:
        for sc in scenarios:
            Walk(roots, flags, sc).run()
    except Violation:
        return False
    return True


def _reduce(roots, flags, scenarios) -> list:
    """Drop each flag (latest first) that the others imply."""
    for f in reversed(list(flags)):
        trial = [g for g in flags if g is not f]
        if _clean(roots, trial, scenarios):
            flags = trial
    return flags


def _span(f) -> tuple:
    """Where in program order a flag holds its event ids."""
    if f.kind == "loop":
        return f.loop.first, f.loop.last
    return f.after.last, f.before.first


def _assign_ids(flags, limit: int) -> None:
    """Event ids per pipe pair by the flags' spans (see the module docstring)."""
    pairs: dict = {}
    for f in sorted(flags, key=lambda f: (_span(f), f.uid)):
        if f.kind == "barrier":
            continue
        done = pairs.setdefault((f.core, f.P, f.Q), [])
        lo, hi = _span(f)
        taken = set()
        for g in done:
            glo, ghi = _span(g)
            if lo <= ghi and glo <= hi:
                taken.update(range(g.ids, g.ids + g.d))
        base = _free(taken, f.d, limit)
        if base is None and f.d > 1:
            f.d = 1                 # one id: the loop's buffers no longer overlap each other
            base = _free(taken, 1, limit)
        if base is None:
            f.kind = "barrier"
            continue
        f.ids = base
        done.append(f)


def _free(taken: set, d: int, limit: int):
    for base in range(0, limit - d + 1):
        if not taken.intersection(range(base, base + d)):
            return base
    return None


def _used(flags) -> dict:
    out: dict = {}
    for f in flags:
        if f.kind == "barrier":
            out["barrier"] = out.get("barrier", 0) + 1
            continue
        ids = out.setdefault(f"{f.P}_{f.Q}", set())
        ids.update(range(f.ids, f.ids + f.d))
    return {k: (v if isinstance(v, int) else len(v)) for k, v in sorted(out.items())}


def _emit(roots, flags) -> list:
    pre, post = anchors(flags)

    def region(nodes) -> list:
        out = []
        for n in nodes:
            out += _placed(pre.get(id(n), ()), n.enter)
            if n.regions:
                n.op.regions = [region(r) for r in n.regions]
            out.append(n.op)
            out += _placed(post.get(id(n), ()), n.exit)
        return out
    return region(roots)


def _placed(acts, cores: frozenset) -> list:
    """The sync ops of acts at a place that runs on one of `cores` (a mixed program's
    section markers, ir/mix_ops.py): each on its flag's core, a marker before it where that
    is not the only core the place runs on, and the place's own marker after them again
    where one was needed and the place has a core of its own."""
    out, cur = [], cores
    for act in acts:
        core = act[1].core
        if cur != {core}:
            out.append(_marker(core, act))
            cur = frozenset([core])
        out.append(_sync_op(act))
    if cur != cores and len(cores) == 1 and None not in cores:
        out.append(_marker(next(iter(cores)), acts[-1]))
    return out


def _marker(core, act) -> Op:
    """The section marker of a core of a cluster (0: the cube core, 1 + v: vector core v),
    at the line of the sync op it is for."""
    f = act[1]
    where = f.after if act[0] in ("set", "preset") else f.before
    attrs = {"core": "cube", "pipe": "S"} if core == 0 else \
        {"core": "vector", "pipe": "S", "sub": core - 1}
    return Op("section", [], [], attrs, [], _loc(where))


def _sync_op(act) -> Op:
    what, f = act[0], act[1]
    if what == "barrier":
        return Op("barrier", [], [], {"pipe": "S", "which": "ALL"}, [], _loc(f.before))
    if len(act) > 2:
        eid = f.ids + act[2]
    elif f.loop is not None and f.d > 1:
        eid = E.add(f.ids, E.mod(iteration(f.loop.op), f.d))
    else:
        eid = f.ids
    if what in ("set", "preset"):
        return Op("sync_set", [], [], {"pipe": f.P, "wait_pipe": f.Q, "event_id": eid}, [],
                  _loc(f.after))
    return Op("sync_wait", [], [], {"pipe": f.Q, "set_pipe": f.P, "event_id": eid}, [],
              _loc(f.before))


def _loc(node):
    """The source line of a node: its own, or its first instruction's."""
    if node.op.loc is not None:
        return node.op.loc
    for r in node.regions:
        for n in r:
            loc = _loc(n)
            if loc is not None:
                return loc
    return None
