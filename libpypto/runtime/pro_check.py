"""The race and sync checker of Pro kernels.

Each core's pipes (MTE1, MTE2, MTE3, M, V, FIX) are modelled as independent in-order queues:
two instructions are ordered only if they are on the same pipe of the same core, or a chain
of syncs orders them: a flag (sync_src on pipe P after P's earlier work, sync_dst on pipe Q
before Q's later work), a bar_all (every pipe of the core), a buffer mutex (a lock is
ordered after the previous unlock of its id on that core), or a cross-core event (a set on
P after P's earlier work, including the GM it wrote; the wait on Q before Q's later work).
This is a happens-before relation kept with vector clocks, one per (core, pipe).

Every access to tile bytes (per core and memory space) and to GM boxes (per tensor, within
a cluster: the cube core and the two vector cores of a mixed kernel, or one core) is
compared with the earlier accesses to overlapping bytes; two accesses, at least one a write,
that happen-before does not order are a race: SyncError naming both pipes, the tile or
tensor, both op file lines and the sync that would order them.

A flag waited with no set before it, a cross-core wait no core will satisfy, or a set that
is never waited, is reported the same way (the runner stops instead of hanging).

A kernel that synchronises across clusters (sync_all, INTER_BLOCK events) has one checker
for the whole launch: cores are named (cluster, id), GM is compared across clusters, an
INTER_BLOCK wait acquires the joined clocks of every set of its round, and a sync_all
joins every pipe of every participating core (a barrier of vector clocks). Without a
grid-wide sync, clusters are checked one by one, and then against each other
(across_clusters): nothing orders two clusters, so a GM write by one that overlaps an
access by another is a race.
"""
from __future__ import annotations

from ..errors import PyptoError

PIPES = ("MTE1", "MTE2", "MTE3", "M", "V", "FIX", "S")
BUCKET = 64           # GM records are indexed by blocks of BUCKET rows of the first dim


class SyncError(PyptoError):
    """A race, or a sync that can never complete: the kernel needs another sync."""


class Access:
    __slots__ = ("lo", "hi", "thread", "clock", "write", "what", "op", "atomic")

    def __init__(self, lo, hi, thread, clock, write, what, op, atomic=False):
        self.lo, self.hi, self.thread, self.clock = lo, hi, thread, clock
        self.write, self.what, self.op = write, what, op
        self.atomic = atomic        # a SIMT atomic update: two of them commute


def _overlap(a: Access, lo, hi) -> bool:
    return all(x0 < y1 and y0 < x1 for x0, x1, y0, y1 in zip(a.lo, a.hi, lo, hi))


def _covers(lo, hi, a: Access) -> bool:
    return all(x0 <= y0 and y1 <= x1 for x0, x1, y0, y1 in zip(lo, hi, a.lo, a.hi))


class Checker:
    """Happens-before over one cluster's cores and pipes."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.vc: dict = {}
        self.mutex: dict = {}
        self.mem: dict = {}

    def clock(self, th) -> dict:
        c = self.vc.get(th)
        if c is None:
            c = self.vc[th] = {}
        return c

    def release(self, th) -> dict:
        return dict(self.clock(th))

    def acquire(self, th, clk: dict) -> None:
        c = self.clock(th)
        for k, v in clk.items():
            if c.get(k, 0) < v:
                c[k] = v

    def bar_all(self, core) -> None:
        joined: dict = {}
        for p in PIPES:
            for k, v in self.clock((core, p)).items():
                if joined.get(k, 0) < v:
                    joined[k] = v
        for p in PIPES:
            self.vc[(core, p)] = dict(joined)

    def lock(self, core, pipe, mid) -> None:
        clk = self.mutex.get((core, mid))
        if clk is not None:
            self.acquire((core, pipe), clk)

    def unlock(self, core, pipe, mid) -> None:
        self.mutex[(core, mid)] = self.release((core, pipe))

    def tick(self, th) -> int:
        c = self.clock(th)
        c[th] = c.get(th, 0) + 1
        return c[th]

    def access(self, th, key, lo, hi, write: bool, what: str, op, atomic=False) -> None:
        """One access to bytes [lo, hi) (per dim) of key by thread th, at its current tick
        (atomic: a SIMT atomic update, which does not race with another)."""
        if not self.enabled:
            return
        cur = self.clock(th)
        a = Access(tuple(lo), tuple(hi), th, cur[th], write, what, op, atomic)
        buckets = self._buckets(key, lo, hi)
        seen = set()
        for b in buckets:
            for kind in (("w", "r") if write else ("w",)):
                lst = b[kind]
                for old in lst:
                    if id(old) in seen or not _overlap(old, lo, hi):
                        continue
                    seen.add(id(old))
                    if old.thread != th and cur.get(old.thread, 0) < old.clock and \
                            not (atomic and old.atomic):
                        raise race(old, a)
        for b in buckets:
            if write and atomic:      # a later atomic does not stand for an earlier write:
                b["w"].append(a)      # another block's atomic races with the write only
            elif write:
                b["w"] = [o for o in b["w"] if not (_covers(lo, hi, o) and
                                                   cur.get(o.thread, 0) >= o.clock)]
                b["r"] = [o for o in b["r"] if not (_covers(lo, hi, o) and
                                                   cur.get(o.thread, 0) >= o.clock)]
                b["w"].append(a)
            else:
                b["r"] = [o for o in b["r"] if not (o.thread == th and o.lo == a.lo and
                                                   o.hi == a.hi)]
                b["r"].append(a)

    def _buckets(self, key, lo, hi) -> list:
        space = self.mem.setdefault(key, {})
        if key[0] != "gm":
            return [space.setdefault(0, {"w": [], "r": []})]
        first, last = lo[0] // BUCKET, max(lo[0], hi[0] - 1) // BUCKET
        return [space.setdefault(i, {"w": [], "r": []}) for i in range(first, last + 1)]


def gm_records(chk: Checker) -> dict:
    """A cluster's checker's GM accesses that remain after its run (a write covered by a
    later one of the same cluster is gone: the later one overlaps whatever it did):
    (tensor, bucket) -> (writes, all)."""
    out = {}
    for key, space in chk.mem.items():
        if key[0] == "gm":
            for b, v in space.items():
                out[(key[1], b)] = (list(v["w"]), v["w"] + v["r"])
    return out


def across_clusters(records: list) -> None:
    """records: gm_records of each cluster of a launch without a grid-wide sync, in cluster
    order. The first overlap of a write of one cluster with an access of another is a
    SyncError, unless both are atomic-add stores (store(atomic=AtomicAdd) commutes)."""
    seen: dict = {}
    for c, recs in enumerate(records):
        for k in sorted(recs, key=str):
            writes, every = recs[k]
            old_w, old_all = seen.setdefault(k, ([], []))
            for a in every:
                for c0, b in (old_all if a.write else old_w):
                    if _overlap(b, a.lo, a.hi) and not (_atomic(a) and _atomic(b)):
                        raise _cross(c0, b, c, a)
        for k, (writes, every) in recs.items():
            old_w, old_all = seen[k]
            old_w.extend((c, a) for a in writes)
            old_all.extend((c, a) for a in every)


def _atomic(a: Access) -> bool:
    """An atomic-add store or a SIMT atomic: two of them commute, so blocks may overlap in
    them."""
    return a.atomic or a.op.name == "tstore" and bool(a.op.attrs.get("atomic"))


def _cross(c0, old: Access, c1, new: Access) -> SyncError:
    kinds = {(True, False): "read after write", (False, True): "write after read",
             (True, True): "write after write"}[(old.write, new.write)]
    return SyncError(f"race ({kinds}) across clusters {c0} and {c1}: {old.op.name} on "
                     f"{old.thread[1]} ({_line(old.op)}) and {new.op.name} on "
                     f"{new.thread[1]} ({_line(new.op)}) both touch {new.what}, and nothing "
                     f"orders two blocks: give each block its own region, or put a "
                     f"pl.system.sync_all between the write and the other access",
                     new.op.loc)


def _line(op) -> str:
    return str(op.loc) if op is not None and op.loc is not None else "?"


def race(old: Access, new: Access) -> SyncError:
    p1, p2 = old.thread[1], new.thread[1]
    kinds = {(True, False): "read after write", (False, True): "write after read",
             (True, True): "write after write"}[(old.write, new.write)]
    c1, c2 = old.thread[0], new.thread[0]
    where = f"on core {_core(c1)}" if c1 == c2 else f"on cores {_core(c1)} and {_core(c2)}"
    if isinstance(c1, tuple) and c1[0] != c2[0]:
        fix = (f"add pl.system.sync_all(...) (or an INTER_BLOCK set_cross_core / "
               f"wait_cross_core pair) between line {_lineno(old.op)} and line "
               f"{_lineno(new.op)}")
    elif c1 == c2:
        fix = (f"add pl.system.sync_src(set_pipe=pl.PipeType.{p1}, wait_pipe=pl.PipeType.{p2}, "
               f"event_id=...) after line {_lineno(old.op)} and the matching sync_dst before "
               f"line {_lineno(new.op)}")
    else:
        fix = (f"add pl.system.set_cross_core(pipe=pl.PipeType.{p1}, ...) after line "
               f"{_lineno(old.op)} and wait_cross_core(pipe=pl.PipeType.{p2}, ...) before line "
               f"{_lineno(new.op)}")
    return SyncError(f"race ({kinds}) {where}: {old.op.name} on {p1} ({_line(old.op)}) and "
                     f"{new.op.name} on {p2} ({_line(new.op)}) both touch {new.what} with no "
                     f"sync ordering them: {fix}", new.op.loc)


def _core(c) -> str:
    """A core as the checker names it: its id in the cluster, or (cluster, id) when the
    checker spans the launch."""
    return f"{c[1]} of cluster {c[0]}" if isinstance(c, tuple) else str(c)


def _lineno(op) -> str:
    return str(op.loc.line) if op is not None and op.loc is not None else "?"
