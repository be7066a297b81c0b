"""The discrete-event engine: instruction streams on cores, shared HBM and L2.

Time is in cycles of the target's clock. An instruction is ready when every instruction
it waits for (its pipe's previous one, its dependences or flags: flatten.py) has finished
and every cross-core event it needs has been posted; it then starts at once (its pipe is
free: the pipe's previous instruction is among those it waited for). On-chip work finishes
after its cycles. A GM transfer is an event of the heap, taken in time order: after its
set-up and the L2's hit or miss latency, its bytes flow at the path's per-core rate, in
64-cycle buckets of the shared resource (HBM, or the L2 on a hit) that earlier transfers
have not used up; so cores contend for HBM and a saturated HBM slows every transfer. The
transfer finishes when its last byte has moved. Taking transfers in time order keeps the
shared resources causal: everything a transfer's finish makes ready starts no earlier.

L2 (when the target has one): a least-recently-used cache of GM boxes (tensor, offsets,
shape), holding as many as fit in its bytes. A load of a box in L2 is a hit (L2 bandwidth,
hit latency, and no earlier than the box arrives); otherwise a miss (HBM bandwidth, miss
latency) that brings the box in. A store, with the target's `l2.write_back` = 1, writes
the box into L2 at L2 bandwidth and marks it dirty: it reaches HBM (taking HBM bandwidth)
when it is evicted, and a box still dirty when the run ends is not waited for (a kernel
ends when its stores are in L2). With write_back = 0 a store writes through to HBM and
leaves the box in L2. Either way a later load of what another core stored is a hit.
Boxes are matched exactly: a load that overlaps a cached box without being it misses
(conservative).
"""
from __future__ import annotations

import heapq
import os
from array import array
from collections import OrderedDict

BUCKET = 64                     # cycles per bucket of a shared resource's calendar
MAX_EVENTS = 200_000            # per-pipe events kept in a run record ($PYPTO_MAX_SIM_EVENTS)


class Calendar:
    """Bytes per bucket a shared resource can move, and what transfers have taken."""

    def __init__(self, bytes_per_cycle: float):
        self.cap = bytes_per_cycle * BUCKET
        self.used = array("d")
        self.total = 0.0

    def reserve(self, t0: float, nbytes: float, rate: float) -> float:
        """Move nbytes from t0 at up to rate bytes per cycle; the finish time."""
        self.total += nbytes
        if nbytes <= 0:
            return t0
        b, t, rem, used, cap = int(t0 // BUCKET), t0, float(nbytes), self.used, self.cap
        while True:
            if b >= len(used):
                used.extend(array("d", bytes(8 * (b - len(used) + 4096))))
            end = (b + 1) * BUCKET
            room = min(cap - used[b], rate * (end - t))
            if room >= rem:
                used[b] += rem
                return t + rem * (end - t) / room
            if room > 0:
                used[b] += room
                rem -= room
            b, t = b + 1, end


class Run:
    """One stream running on one core from t0."""

    __slots__ = ("st", "core", "t0", "wait", "ready", "succ", "left", "end", "done", "tag",
                 "evid")

    def __init__(self, st, core, t0, done, tag):
        self.st, self.core, self.t0, self.done, self.tag = st, core, t0, done, tag
        n = len(st)
        self.wait = [len(p) for p in st.preds]
        self.ready = [t0] * n
        succ = getattr(st, "succ", None)      # worked out once per template (classes.py)
        if succ is None:
            succ = [[] for _ in range(n)]
            for i, ps in enumerate(st.preds):
                for j in ps:
                    succ[j].append(i)
        self.succ = succ
        self.left = n
        self.end = t0
        self.evid = [-1] * n      # index of each instruction's event in Engine.events, or -1


class Engine:
    def __init__(self, costs, ncores: int, npipes: int):
        self.c = costs
        self.heap: list = []
        self.seq = 0
        self.work: list = []
        self.hbm = Calendar(costs.hbm)
        self.l2 = Calendar(costs.l2_bw) if costs.l2_bytes and costs.l2_bw else None
        self.lru: OrderedDict = OrderedDict()
        self.l2_used = 0
        self.l2_hit_bytes = self.l2_write_bytes = self.hbm_read = self.hbm_write = 0.0
        self.busy = [[0.0] * npipes for _ in range(ncores)]
        self.mail: dict = {}
        self.waiters: dict = {}
        self.events: list = []
        self.nevents = 0
        self.nkept = 0            # events with a duration (kept unless past the cap)
        self.flows: list = []     # (event index, event index): a flag from one to the other
        self.poster: dict = {}    # cross-core key -> event index of what its setter signals
        self.max_events = int(os.environ.get("PYPTO_MAX_SIM_EVENTS", MAX_EVENTS) or 0)
        self.now = 0.0

    # -- the heap ---------------------------------------------------------------------------
    def at(self, t: float, fn, *args) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, fn, args))

    def run(self) -> None:
        while self.heap:
            t, _, fn, args = heapq.heappop(self.heap)
            self.now = t
            fn(*args)
            self._drain()

    # -- streams ----------------------------------------------------------------------------
    def start(self, st, core: int, t0: float, done, tag=None) -> None:
        """Run stream st on core from t0; done(run) is called when its last instruction
        has finished (run.end)."""
        r = Run(st, core, t0, done, tag)
        if not len(st):
            self.at(t0, done, r)
            return
        self.work.extend((r, i) for i in range(len(st)) if r.wait[i] == 0)
        self._drain()

    def _drain(self) -> None:
        work = self.work
        while work:
            r, i = work.pop()
            self._ready(r, i)

    def _ready(self, r: Run, i: int) -> None:
        st = r.st
        t = r.ready[i]
        need = st.need[i]
        if need:
            for key in need:
                got = self.mail.get(key)
                if got is None:
                    self.waiters.setdefault(key, []).append((r, i))
                    return
                t = max(t, got)
            r.ready[i] = t
        if st.gm[i] is not None:
            self.at(t, self._transfer, r, i)
        else:
            self._finish(r, i, t, t + st.dur[i])

    def _finish(self, r: Run, i: int, start: float, end: float) -> None:
        st = r.st
        pipe = st.pipe[i]
        self.busy[r.core][pipe] += end - start
        self.nevents += 1
        if end > start:
            self.nkept += 1
            if len(self.events) < self.max_events:
                r.evid[i] = len(self.events)
                self.events.append((r.core, pipe, start, end, st.prog, st.op[i]))
            if st.flag[i] or st.xflag[i]:
                self._flows(r, i)
        post = st.post[i]
        if post:
            src = st.flag[i]
            ev = r.evid[src[0]] if src else -1
            for key in post:
                self.poster[key] = ev
                self.mail[key] = end
                for w in self.waiters.pop(key, ()):
                    self.work.append(w)
        ready, wait, work = r.ready, r.wait, self.work
        for j in r.succ[i]:
            if end > ready[j]:
                ready[j] = end
            wait[j] -= 1
            if wait[j] == 0:
                work.append((r, j))
        if end > r.end:
            r.end = end
        r.left -= 1
        if r.left == 0:
            self.at(r.end, r.done, r)

    def room(self) -> bool:
        """Whether the record still keeps events (else flags need not be worked out)."""
        return len(self.events) < self.max_events

    def _flows(self, r: Run, i: int) -> None:
        """The flags instruction i waited for, as (setter's event, i's event) pairs: the
        setting instructions of its own stream (flag) and of other cores (xflag keys)."""
        st, me = r.st, r.evid[i]
        flag, xflag = st.flag[i] or (), st.xflag[i] or ()
        if me < 0 or len(self.flows) >= self.max_events:
            return
        srcs = [r.evid[j] for j in flag] + [self.poster.get(k, -1) for k in xflag]
        self.flows += [(ev, me) for ev in srcs if ev >= 0][:self.max_events - len(self.flows)]

    # -- GM transfers -------------------------------------------------------------------------
    def _transfer(self, r: Run, i: int) -> None:
        key, nbytes, rate, store, _ = r.st.gm[i]
        c, t = self.c, self.now
        begin = t + r.st.dur[i]
        if store and self.l2 is not None and c.write_back and key is not None and \
                nbytes <= c.l2_bytes:
            end = self.l2.reserve(begin + c.l2_hit, nbytes, rate)
            self.l2_write_bytes += nbytes
            self._cache(key, nbytes, end, dirty=True)
        elif store:
            end = self.hbm.reserve(begin, nbytes, rate)
            self.hbm_write += nbytes
            self._cache(key, nbytes, end)
        else:
            hit = self.lru.get(key) if self.l2 is not None and key is not None else None
            if hit is not None:
                self.lru.move_to_end(key)
                end = self.l2.reserve(begin + c.l2_hit, nbytes, rate)
                end = max(end, hit[1])
                self.l2_hit_bytes += nbytes
            else:
                end = self.hbm.reserve(begin + (c.l2_miss if self.l2 is not None else 0),
                                       nbytes, rate)
                self.hbm_read += nbytes
                self._cache(key, nbytes, end)
        self._finish(r, i, t, end)

    def _cache(self, key, nbytes: float, avail: float, dirty: bool = False) -> None:
        """Put a box in L2 (most recently used), evicting the least recently used boxes
        that no longer fit; a dirty box evicted is written to HBM then (write-back)."""
        if self.l2 is None or key is None or nbytes > self.c.l2_bytes:
            return
        old = self.lru.pop(key, None)
        if old is not None:
            self.l2_used -= old[0]
        while self.l2_used + nbytes > self.c.l2_bytes and self.lru:
            _, (size, _, was_dirty) = self.lru.popitem(last=False)
            self.l2_used -= size
            if was_dirty:
                self.hbm.reserve(self.now, size, self.c.hbm)
                self.hbm_write += size
        self.lru[key] = (nbytes, avail, dirty)
        self.l2_used += nbytes

    def stuck(self) -> list:
        """The (run, instruction) pairs still waiting for a cross-core event (a deadlock)."""
        return [w for ws in self.waiters.values() for w in ws]
