"""The mixed block mix-fuse writes for a planned loop (mix_fuse.py says what and why).

    block {core="mixed", grid=<the cube blocks' grid>} {
      sections: the loop-invariant loads of each core; the credits of the back edges
      for t in [start, stop + the largest delay):
        if start + d <= t < stop + d:       the phases of delay d, for step t - d
        ...                                 (in body order, lower delays first)
      sections: what is left of the credits (cross_wait)
    }

A phase is one section on the cube core, or one per vector core: vector core v runs the
vector instance k g0 + v (k = 2) of the cube instance g0, or with k = 1 vector core 0 runs
instance g0 and core 1 only takes part in the events; a vector instance past the vector
grid (a tail) runs nothing but its events. Each section waits for the events its phase
needs and sets the ones it gives last: it waits after its loads of tensors the loop never
writes (they move to the front and overlap the wait; into both arms of an `if` that is all
the phase holds), on the pipe of the first instruction after the waits, and sets on the pipe
of its last store (insert-sync orders the core's other pipes before it). A ring
workspace's accesses get the slot (step - start) % slots in a new leading dim.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.core import Op, Value, clone_ops
from ..ir.types import TensorType
from .mix_promote import promote

MODE = "INTRA_BLOCK"


class Emitter:
    def __init__(self, plan):
        self.p = plan
        self.loc = plan.loop.loc
        m = len(plan.phases)
        self.back = {(b, a): m - 1 + i for i, (b, a, _) in enumerate(plan.back)}
        self.vmaps: dict = {}       # per core: hoisted values -> that core's copies
        self.promo: dict = {}       # per vector core: promoted tensor -> its UB tile

    def block(self, name: str) -> Op:
        p = self.p
        for v, n in p.slots.items():
            v.type = TensorType(v.type.dtype, (n,) + tuple(v.type.shape))
        pre = self.hoisted() + self.kept(True)
        t = E.sym(p.var)
        inner, k, m = [], 0, len(p.phases)
        while k < m:
            d, ks = p.delays[k], []
            while k < m and p.delays[k] == d:
                ks.append(k)
                k += 1
            ops = [x for j in ks for x in self.phase(j, E.sub(t, d))]
            conds = ([E.le(E.add(p.start, d), t)] if d else []) + \
                ([E.lt(t, E.add(p.stop, d))] if d < p.preload else [])
            if conds:
                cond = conds[0] if len(conds) == 1 else E.logical_and(*conds)
                ops = [Op("if", [], [], {"cond": cond}, [ops, []], self.loc)]
            inner += ops
        loop = Op("for", [], [], {"var": p.var, "start": p.start,
                                  "stop": E.add(p.stop, p.preload), "step": 1},
                  [inner], self.loc)
        body = _merged(pre + self.credits(True)) + [loop] + \
            _merged(self.credits(False) + self.kept(False))
        return Op("block", [], [], self.attrs(name), [body], self.loc)

    def attrs(self, name: str) -> dict:
        blocks = [b for ph in self.p.phases for b in ph.blocks]
        blocks.sort(key=lambda b: int(b.attrs["name"][1:]) if b.attrs["name"][1:].isdigit()
                    else 0)
        out = {"name": name, "grid": list(self.p.grid), "core": "mixed",
               "kernels": [k for b in blocks for k in b.attrs["kernels"]],
               "ops": [o for b in blocks for o in b.attrs["ops"]]}
        labels = list(dict.fromkeys(x for b in blocks for x in b.attrs.get("labels", [])))
        if labels:
            out["labels"] = labels
        return out

    # -- before and after the loop ----------------------------------------------------------
    def hoisted(self) -> list:
        """Each core's loop-invariant instructions, once before the loop."""
        out = []
        for core in ("cube", "vector"):
            ops = [op for k, ph in enumerate(self.p.phases) if ph.core == core
                   for op in self.p.hoisted[k]]
            if not ops:
                continue
            for sub in self.subs(core):
                items = self.clone(ops, sub, E.sym(self.p.var), self.vmaps.setdefault(sub, {}))
                if items:
                    out += [_section(core, sub, self.loc)] + items
        return out

    def kept(self, before: bool) -> list:
        """The running state kept in each vector core's UB (mix_promote.py): its tile and
        its load before the loop; after it the store, where something else reads it."""
        p, out = self.p, []
        if not p.kept:
            return out
        for sub in self.subs("vector"):
            if sub >= p.k:
                continue
            tiles = self.promo.setdefault(sub, {})
            ops = []
            for t, like in sorted(p.kept.items(), key=lambda kv: kv[0].name or ""):
                if before:
                    decl = Op("tile", [], [Value(like.operands[0].type)], {}, [], self.loc)
                    tiles[t] = decl.result
                    ops += [decl, Op("tload", [decl.result, t], [], _box(like), [], like.loc)]
                elif t in p.store_back:
                    ops.append(Op("tstore", [tiles[t], t], [], {**_box(like), "pipe": "MTE3"},
                                  [], like.loc))
            if ops:
                out += [_section("vector", sub, self.loc)] + self.subst(ops, sub, None)
        return out

    def credits(self, before: bool) -> list:
        """Before the loop each back edge's setter posts its credits; after it the waiter
        takes what is left, so every set is waited."""
        want: dict = {}
        for b, a, n in self.p.back:
            core = self.p.phases[b if before else a].core
            want.setdefault(core, []).extend([self.back[(b, a)]] * n)
        out = []
        for core in sorted(want):
            which = "cross_set" if before else "cross_wait"
            pipe = ("FIX" if core == "cube" else "MTE3") if before else "MTE2"
            for sub in self.subs(core):
                out.append(_section(core, sub, self.loc))
                out += [_event(which, e, pipe, self.loc) for e in want[core]]
        return out

    def events(self, k: int) -> tuple:
        """(ids phase k waits for first, ids it sets last)."""
        ready = self.p.ready
        waits = ([k - 1] if k - 1 in ready else []) + \
            [e for (b, a), e in self.back.items() if a == k]
        sets = ([k] if k in ready else []) + [e for (b, a), e in self.back.items() if b == k]
        return waits, sets

    # -- phases -----------------------------------------------------------------------------
    def subs(self, core: str) -> list:
        return [None] if core == "cube" else [0, 1]

    def phase(self, k: int, step) -> list:
        """The sections of phase k for the step expression `step`."""
        ph = self.p.phases[k]
        waits, sets = self.events(k)
        out = []
        for sub in self.subs(ph.core):
            items = self.clone(ph.items, sub, step)
            first, last = _pipes(items, ph.core)
            out.append(_section(ph.core, sub, self.loc))
            out += _waits_placed(items, waits, self.p.written, first, self.loc)
            out += [_event("cross_set", e, last, self.loc) for e in sets]
        return out

    def clone(self, ops: list, sub, step, vmap: dict | None = None) -> list:
        """ops for one core: cloned, the loop variable the step, a vector core's rows its
        instance's, the rings' slot added, a vector instance past the grid skipped."""
        p = self.p
        if sub is not None and sub >= p.k:
            return []
        out = clone_ops(ops, vmap if vmap is not None else dict(self.vmaps.get(sub, {})))
        out = self.subst(out, sub, step)
        if sub is not None and sub in self.promo:
            promote(out, self.promo[sub])
        if sub and p.k == 2 and out and not self.always(sub):
            inst = E.add(E.mul(E.sym("g0"), 2), sub)
            out = [Op("if", [], [], {"cond": E.lt(inst, p.vgrid[0])}, [out, []], self.loc)]
        return out

    def subst(self, out: list, sub, step) -> list:
        """out (edited) with the loop variable the step (None: left), a vector core's rows
        its instance's, and the rings' slots added."""
        p = self.p
        env = {p.var: step} if step is not None else {}
        if sub is not None and p.k == 2:
            env["g0"] = E.add(E.mul(E.sym("g0"), 2), sub)
        for top in out:
            for op in top.walk():
                op.attrs = E.substitute_attrs(op.attrs, env)
                if op.name in ("tload", "tstore") and op.operands[1] in p.slots:
                    slot = E.mod(E.sub(step, p.start), p.slots[op.operands[1]])
                    op.attrs["offsets"] = [slot] + list(op.attrs["offsets"])
                    op.attrs["valid"] = [1] + list(op.attrs["valid"])
        return out

    def always(self, sub: int) -> bool:
        """Does vector instance 2 g0 + sub exist for every cube instance g0?"""
        gc, gv = self.p.grid[0], self.p.vgrid[0]
        return isinstance(gc, int) and isinstance(gv, int) and 2 * (gc - 1) + sub < gv


def _waits_placed(items: list, waits: list, written: set, pipe: str, loc) -> list:
    """items with the phase's cross_waits in them: after the loads of tensors the loop never
    writes (flash attention's K and V blocks: nothing of the other core's), which move to
    the front, so that they overlap the wait; into both arms of an `if` that is all the
    phase holds and has two (each arm waits once: the events stay balanced; a tail's
    `if` with nothing in its other arm keeps the waits before it)."""
    if not waits:
        return items
    body = [op for op in items if op.name != "tile"]
    if len(body) == 1 and body[0].name == "if" and all(body[0].regions):
        body[0].regions = [_waits_placed(r, waits, written, pipe, loc)
                           for r in body[0].regions]
        return items
    early = _free_loads(items, written)
    rest = [op for op in items if id(op) not in early]
    pipe = _pipes(rest, "vector")[0] if rest else pipe
    return [op for op in items if id(op) in early] + \
        [_event("cross_wait", e, pipe, loc) for e in waits] + rest


def _free_loads(items: list, written: set) -> set:
    """ids of the top-level tloads of tensors the loop does not write, with their tiles'
    declarations, where nothing before the load touches its tile."""
    out: set = set()
    decls = {op.result: op for op in items if op.name == "tile"}
    seen: set = set()
    for op in items:
        if op.name == "tload" and op.operands[1] not in written and \
                op.operands[0] in decls and op.operands[0] not in seen:
            out.update((id(op), id(decls[op.operands[0]])))
        for sub in op.walk():
            seen.update(v for v in sub.operands)
    return out


def _box(like) -> dict:
    return {"offsets": list(like.attrs["offsets"]), "valid": list(like.attrs["valid"]),
            "pipe": "MTE2"}


def _merged(ops: list) -> list:
    """ops (straight-line, before the loop: each core's loads and credits, which touch
    nothing another core's do) grouped by core, one section marker each."""
    chunks: list = []
    for op in ops:
        if op.name == "section" or not chunks:
            chunks.append([])
        chunks[-1].append(op)
    rank = {("cube", None): 0, ("vector", 0): 1, ("vector", 1): 2}
    chunks.sort(key=lambda c: rank[(c[0].attrs["core"], c[0].attrs.get("sub"))])
    out, last = [], None
    for op in (x for c in chunks for x in c):
        if op.name == "section":
            who = (op.attrs["core"], op.attrs.get("sub"))
            if who == last:
                continue
            last = who
        out.append(op)
    return out


def _section(core: str, sub, loc) -> Op:
    attrs = {"core": core, "pipe": "S"}
    if sub is not None:
        attrs["sub"] = sub
    return Op("section", [], [], attrs, [], loc)


def _event(name: str, e: int, pipe: str, loc) -> Op:
    return Op(name, [], [], {"event_id": e, "mode": MODE, "pipe": pipe}, [], loc)


def _pipes(items: list, core: str) -> tuple:
    """The pipe of the first instruction under items, and that of the last store (of the
    last instruction where none stores): a set on the store's pipe follows the store
    without a flag (defaults: the copy-in pipe, and FIX or MTE3 by core)."""
    ops = [op for top in items for op in top.walk()
           if op.name not in ("tile", "if", "for") and "pipe" in op.attrs]
    stores = [op for op in ops if op.name == "tstore"]
    last = (stores or ops)[-1].attrs["pipe"] if ops else ("FIX" if core == "cube" else "MTE3")
    return ops[0].attrs["pipe"] if ops else "MTE2", last
