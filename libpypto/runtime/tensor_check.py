"""The race and sync checker (runtime/pro_check.py) on Tensor-mode programs.

A program lowered with insert-sync (its `sync` attribute) carries its own flags, as a Pro
kernel does; this walks instances of it as the pipes would run them and hands every access
to the Pro checker: tile bytes at their addresses (evaluated per iteration, so N-buffered
tiles use the slot of their iteration), GM boxes at their offsets, flags matched in order
per (set pipe, wait pipe, event id), pipe barriers joining every pipe. A mixed program for a
cluster (section markers, ir/mix_ops.py) is walked part by part: each core has its own pipes,
tiles, flags and GM records here, and what one core hands another is mix_check's to check
(runtime/mix_check.py). A cross-core event runs on its pipe: a cross_set that other pipes'
GM accesses of its core do not happen-before, or a GM access that a cross_wait of its core
on another pipe does not happen-before, is an error too (the other core could see the event
before the GM work is done, or the access could run before what it waits for). Two accesses of
different pipes to overlapping bytes, one a write, that no sync orders are a race
(SyncError, naming both instructions and their op file lines); a wait with no set before it,
or a set never waited, is an error too.

Which instances: of every launch, those at the first and the last index of each grid dim
(the corners, where tails are; the others differ only in offsets), at most MAX_INSTANCES in
all, the first launches first. Programs without the attribute (lowered without
insert-sync: the simulator infers their order) are not checked; the summary counts them.
Instances of different tasks are ordered by the runtime (analysis/expand.py), not by sync:
they are not compared here.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..ir import expr as E
from ..ir.defs import dests, sources
from ..ir.mix_ops import part
from ..ir.pro_ops import SYNC_OPS
from ..ir.types import TileType
from .pro_check import Checker, SyncError

MAX_INSTANCES = 256
GM_WRITE = {"tstore": 1, "tscatter": 0}


def check_expansion(exp, align: int = 32) -> dict:
    """Check the sampled instances of every launch of an expansion (analysis/expand.py);
    raises SyncError at the first race. Returns {"programs": programs checked, "instances":
    instances walked, "unsynced": programs without their own sync}."""
    progs = {p.attrs["name"]: p for p in exp.programs}
    gm_name = {op.result: op.attrs.get("param") or op.attrs.get("local") or f"ws{i}"
               for i, op in enumerate(exp.gms)}
    checked, unsynced, left = set(), set(), MAX_INSTANCES
    walked = 0
    for lc in exp.launches:
        task = exp.tasks[lc.task]
        prog = progs[task.attrs["program"]]
        if "sync" not in prog.attrs:
            unsynced.add(prog.attrs["name"])
            continue
        names = [gm_name.get(v, v.name or "?") for v in task.operands]
        for row in _corners(lc)[:left]:
            Instance(prog, names, align).run(_env(prog, lc.scalars[row], exp.env))
            walked += 1
        left = MAX_INSTANCES - walked
        checked.add(prog.attrs["name"])
        if left <= 0:
            break
    return {"programs": len(checked), "instances": walked, "unsynced": len(unsynced)}


def _corners(lc) -> list:
    """Rows of a launch at the first or last index of every grid dim, in order."""
    gi = np.asarray(lc.grid_index)
    if gi.size == 0:
        return list(range(lc.n))
    keep = np.ones(lc.n, bool)
    for d in range(gi.shape[1]):
        col = gi[:, d]
        keep &= (col == col.min()) | (col == col.max())
    return [int(i) for i in np.nonzero(keep)[0]]


def _env(prog, row, base: dict) -> dict:
    g = prog.attrs["grid_rank"]
    env = dict(base)
    env.update({f"g{d}": int(row[d]) for d in range(g)})
    env.update({s: int(row[g + k]) for k, s in enumerate(prog.attrs["scalars"])})
    return env


class Instance:
    """One instance of a program on one core, walked in program order."""

    def __init__(self, prog, tensors: list, align: int = 32):
        self.prog, self.align = prog, align
        self.tensors = tensors          # arg index -> the GM tensor's name
        self.chk = Checker(True)
        self.tiles: dict = {}
        self.flags: dict = {}
        self.args = {op.result: op.attrs["index"] for op in prog.regions[0]
                     if op.name == "arg"}
        self.core = 0                   # a mixed program's part: its last section marker's
        self.gm_last: dict = {}         # (core, pipe) -> (tick, op) of its last GM access
        self.waits: dict = {}           # (core, pipe) -> (tick, op) of its last cross_wait

    def run(self, env: dict) -> None:
        try:
            self.block(self.prog.regions[0], dict(env))
            self.leftovers()
        except SyncError as exc:
            grid = ", ".join(f"{k}={env[k]}" for k in sorted(env) if k[0] == "g" and
                             k[1:].isdigit())
            raise SyncError(f"program {self.prog.attrs['name']} ({grid}): {exc.message}",
                            exc.loc) from None

    def block(self, ops, env) -> None:
        for op in ops:
            n = op.name
            if n == "arg":
                continue
            if n == "for":
                a = op.attrs
                lo, hi, st = (int(E.evaluate(a[k], env)) for k in ("start", "stop", "step"))
                for i in range(lo, hi, st):
                    self.block(op.regions[0], {**env, a["var"]: i})
            elif n == "if":
                self.block(op.regions[0 if E.evaluate(op.attrs["cond"], env) else 1], env)
            elif n == "tile":
                self.tile(op, env)
            elif n == "section":
                self.core = part(op)[0]
            elif n in SYNC_OPS:
                self.sync(op, env)
            else:
                self.instr(op, env)

    def tile(self, op, env) -> None:
        t: TileType = op.result.type
        addr = int(E.evaluate(op.attrs.get("addr", 0), env))
        self.tiles[op.result] = (t.space, addr, addr + t.padded_nbytes(self.align))

    def instr(self, op, env) -> None:
        th = (self.core, op.attrs.get("pipe", "S"))
        tick = self.chk.tick(th)
        written = set(map(id, dests(op)))
        for v in sources(op):
            if id(v) not in written:
                self.touch(th, v, False, op)
        boxes = self.boxes(op, env)
        if boxes:
            self.after_waits(th, op)
            self.gm_last[th] = (tick, op)
        for key, lo, hi, write, what in boxes:
            self.chk.access(th, key, lo, hi, write, what, op)
        for v in dests(op):
            self.touch(th, v, True, op)

    def touch(self, th, v, write: bool, op) -> None:
        space, lo, hi = self.tiles[v]
        self.chk.access(th, ("tile", self.core, space), [lo], [hi], write,
                        f"{space} bytes {lo:#x}-{hi:#x}", op)

    def unordered(self, th, table: dict):
        """(pipe, op) of the first of table's (core, pipe) -> (tick, op) entries of th's core
        on another pipe that does not happen-before th, or None."""
        clk = self.chk.clock(th)
        for (core, pipe), (t, other) in table.items():
            if core == th[0] and pipe != th[1] and clk.get((core, pipe), 0) < t:
                return pipe, other
        return None

    def after_waits(self, th, op) -> None:
        """A GM access follows every cross_wait its core made before it (on any pipe)."""
        got = self.unordered(th, self.waits)
        if got:
            pipe, wait = got
            raise SyncError(f"{op.name} on {th[1]} may run before the cross_wait on {pipe} "
                            f"(event {wait.attrs['event_id']}) before it is done waiting "
                            f"for the other core: add a {pipe} -> {th[1]} flag", op.loc)

    def event(self, op, env) -> None:
        """A cross-core event on its pipe (the other core's part is not walked here: the
        order between cores is mix_check's): a set follows every GM access of its core on
        the other pipes; a wait is what later GM accesses follow."""
        th = (self.core, op.attrs.get("pipe", "S"))
        tick = self.chk.tick(th)
        if op.name == "cross_wait":
            self.waits[th] = (tick, op)
            return
        got = self.unordered(th, self.gm_last)
        if got:
            pipe, acc = got
            raise SyncError(f"cross_set on {th[1]} (event {op.attrs['event_id']}) may be "
                            f"seen before {acc.name} on {pipe} ({acc.loc}) is done: "
                            f"add a {pipe} -> {th[1]} flag", op.loc)

    def boxes(self, op, env) -> list:
        """(key, lo, hi, write, what) of the GM boxes an instruction touches."""
        out = []
        n = op.name
        if n in ("tload", "tstore"):
            offs = [int(E.evaluate(o, env)) for o in op.attrs["offsets"]]
            ext = [max(0, int(E.evaluate(v, env))) for v in op.attrs["valid"]]
            out.append((op.operands[1], offs, [o + e for o, e in zip(offs, ext)],
                        n == "tstore"))
        elif n == "tgather":
            out.append((op.operands[1], *self.region(op.attrs, env), False))
        elif n == "tscatter":
            a = op.attrs
            out.append((op.operands[0], *self.region(a["out_region"], env), True))
            out.append((op.operands[1], *self.region(a["index_region"], env), False))
            if len(op.operands) > 2 and "src_region" in a:
                out.append((op.operands[2], *self.region(a["src_region"], env), False))
        res = []
        for v, lo, hi, write in out:
            name = self.tensors[self.args[v]] if v in self.args else (v.name or "?")
            box = ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))
            res.append((("gm", self.core, name), lo, hi, write, f"tensor {name}[{box}]"))
        return res

    def region(self, a: dict, env) -> tuple:
        offs = [int(E.evaluate(o, env)) for o in a["region_offsets"]]
        shape = [int(E.evaluate(s, env)) for s in a["region_shape"]]
        return offs, [o + s for o, s in zip(offs, shape)]

    def sync(self, op, env) -> None:
        a, n = op.attrs, op.name
        th = (self.core, a.get("pipe", "S"))
        if n in ("cross_set", "cross_wait"):
            self.event(op, env)
        elif n == "sync_set":
            key = (a["pipe"], a["wait_pipe"], int(E.evaluate(a["event_id"], env)))
            self.flags.setdefault((self.core,) + key, deque()).append((self.chk.release(th), op))
        elif n == "sync_wait":
            key = (a["set_pipe"], a["pipe"], int(E.evaluate(a["event_id"], env)))
            q = self.flags.get((self.core,) + key)
            if not q:
                raise SyncError(f"sync_wait ({key[0]} -> {key[1]}, event {key[2]}) has no "
                                f"sync_set before it: it would wait forever", op.loc)
            self.chk.acquire(th, q.popleft()[0])
        elif n == "barrier" and a["which"] == "ALL" or n == "sync_all":
            self.chk.bar_all(self.core)
        # mutexes: Pro mode only
        elif n in ("mutex_lock", "mutex_unlock"):
            mid = int(E.evaluate(a["mutex_id"], env))
            (self.chk.lock if n == "mutex_lock" else self.chk.unlock)(0, a["pipe"], mid)

    def leftovers(self) -> None:
        for key, q in sorted(self.flags.items()):
            if q:
                raise SyncError(f"sync_set ({key[1]} -> {key[2]}, event {key[3]}) is never "
                                f"waited", q[0][1].loc)

