"""The race checker on Tensor-mode mixed programs for a cluster (mix-fuse, ir/mix_ops.py).

Every instance of every task whose program has sections is run as a cluster: its cube part
and its two vector parts (the instructions after each `section` marker of that core) are
coroutines that walk the program for the instance's sizes, as the simulator flattens them,
and record the GM box each tload and tstore touches in the Pro checker
(runtime/pro_check.Checker). Cross-core events are matched as the Pro runner matches
INTRA_BLOCK ones: a cube set releases both vector cores, a cube wait needs a set from each,
the n-th wait of a key takes its n-th set; a wait with no set yet yields to the next core.

Each core counts as one in-order thread here: what this checks is the order between cores,
which only the cross-core events give. The order inside a core, its pipes and flags
(insert-sync) and the pipe each event runs on, is tensor_check's (runtime/tensor_check.py).
Two accesses of different cores to overlapping GM, one a write, that no chain of events
orders, are a race (SyncError naming both lines); so are a wait no
core will satisfy (a deadlock) and a set never waited. Instances are then compared with
each other (pro_check.across_clusters): nothing orders two clusters.

    check(doc, env)      # raises SyncError; env binds the symbolic sizes
    check_expansion(expand(doc, env), {name: program})     # variants of one document
"""
from __future__ import annotations

from collections import deque

from ..ir import expr as E
from ..ir.mix_ops import clustered, part
from . import pro_check
from .pro_check import Checker, SyncError


def check(doc, env: dict, data: dict | None = None) -> int:
    """Check every clustered program's instances for sizes env; returns how many."""
    from ..analysis.expand import expand
    return check_expansion(expand(doc, dict(env), data))


def check_expansion(exp, programs: dict | None = None) -> int:
    """check() on an expansion (analysis/expand.py), with programs (name -> program op)
    in place of its own where given (variants of one document)."""
    progs = {p.attrs["name"]: p for p in exp.programs}
    progs.update(programs or {})
    gm_of = {op.result: i for i, op in enumerate(exp.gms)}
    records, n = [], 0
    for lc in exp.launches:
        task = exp.tasks[lc.task]
        prog = progs[task.attrs["program"]]
        if not clustered(prog):
            continue
        tensors = [gm_of[v] for v in task.operands]
        g = prog.attrs["grid_rank"]
        for row in lc.scalars:
            row = [int(x) for x in row]
            ienv = {f"g{d}": row[d] for d in range(g)}
            ienv.update({s: row[g + k] for k, s in enumerate(prog.attrs["scalars"])})
            records.append(_Cluster(prog, ienv, tensors, exp).run())
            n += 1
    pro_check.across_clusters(records)
    return n


class _Cluster:
    def __init__(self, prog, env: dict, tensors: list, exp):
        self.prog, self.env, self.tensors = prog, env, tensors
        self.shapes = [exp.shapes[op] for op in exp.gms]
        self.args = {op.result: op.attrs["index"] for op in prog.regions[0]
                     if op.name == "arg"}
        self.chk = Checker()
        self.mail: dict = {}
        self.count: dict = {}

    def run(self) -> dict:
        cores = {cid: self.core(cid) for cid in range(3)}
        blocked: dict = {}
        while cores:
            moved = False
            for cid in list(cores):
                try:
                    blocked[cid] = next(cores[cid])
                    moved = moved or blocked[cid] is None
                except StopIteration:
                    del cores[cid]
                    blocked.pop(cid, None)
                    moved = True
            if cores and not moved:
                op = blocked[min(blocked)]
                raise SyncError(f"deadlock: {op.name} (event {op.attrs['event_id']}) on core "
                                f"{min(blocked)} waits for a cross_set no core will make",
                                op.loc)
        for key, q in sorted(self.mail.items(), key=lambda kv: str(kv[0])):
            if q:
                op = q[0][1]
                raise SyncError(f"cross_set (event {op.attrs['event_id']}) is never waited: "
                                f"add the matching cross_wait", op.loc)
        return pro_check.gm_records(self.chk)

    def core(self, cid: int):
        """Core cid's part of the program: yields None after progress, the op it waits on
        while blocked."""
        state = {"on": False}
        yield from self.ops(self.prog.regions[0], dict(self.env), cid, state)

    def ops(self, ops, env, cid, state):
        for op in ops:
            n = op.name
            if n == "section":
                state["on"] = part(op)[0] == cid
            elif n == "for":
                a = op.attrs
                lo, hi, step = (int(E.evaluate(a[k], env)) for k in ("start", "stop", "step"))
                for i in range(lo, hi, step):
                    yield from self.ops(op.regions[0], {**env, a["var"]: i}, cid, state)
            elif n == "if":
                arm = 0 if E.evaluate(op.attrs["cond"], env) else 1
                yield from self.ops(op.regions[arm], env, cid, state)
            elif not state["on"]:
                continue
            elif n in ("cross_set", "cross_wait"):
                yield from self.event(op, env, cid)
            elif n in ("tload", "tstore"):
                self.access(op, env, cid)

    def event(self, op, env, cid: int):
        e = int(E.evaluate(op.attrs["event_id"], env))
        th = (cid, "ALL")
        if op.name == "cross_set":
            keys = [("d", 1, e), ("d", 2, e)] if cid == 0 else [("u", cid, e)]
            clk = self.chk.release(th)
            for k in keys:
                self.mail.setdefault(k, deque()).append((clk, op))
            self.chk.tick(th)
            yield None
            return
        keys = [("u", 1, e), ("u", 2, e)] if cid == 0 else [("d", cid, e)]
        while not all(self.mail.get(k) for k in keys):
            yield op
        for k in keys:
            self.chk.acquire(th, self.mail[k].popleft()[0])
        yield None

    def access(self, op, env, cid: int) -> None:
        th = (cid, "ALL")
        self.chk.tick(th)
        gm = op.operands[1]
        t = self.tensors[self.args[gm]]
        offs = [int(E.evaluate(o, env)) for o in op.attrs["offsets"]]
        tile = op.operands[0].type.shape
        valid = [int(E.evaluate(v, env)) for v in op.attrs["valid"]]
        lead = len(valid) - len(tile)
        ext = [max(0, min(v, tile[d - lead]) if d >= lead else v) for d, v in enumerate(valid)]
        if not all(ext):
            return
        lo, hi = offs, [o + x for o, x in zip(offs, ext)]
        self.chk.access(th, ("gm", t), lo, hi, op.name == "tstore", f"tensor {gm.name}", op)
