"""The Pro runner: a Pro kernel's block-level document run on the host, block_dim clusters
on a thread pool (one scheduler for a kernel with a grid-wide sync).

A cluster is what one block index names: one vector core (vector-only kernel), one cube
core (cube-only), or one cube core and two vector cores (mixed; vector core v of cluster c
has block index 2c + v). Each core has its own buffers (bytes, the sizes the plan was checked
against) and a tile is a view of its bytes at its address, so tiles that share bytes share
values, as on the hardware. Each core runs its program in program order, which honours every
intra-core sync; the cores of a cluster run as coroutines on one thread, switching only at a
cross-core wait that is not yet satisfied, so cross-core events are real (a wait really
waits for the set) with no deadlock whatever the thread count, and the order of everything
is fixed: results are bit-identical for any number of threads. Clusters share only GM; the
cores of a mixed cluster also share L1 (the cube core's: the vector cores write it with an
insert UB -> L1, and the checker keys those bytes to the cube core). A kernel that stores
with atomic add runs its clusters one after the other in cluster order (`serial`).

Numerics are numpy's (libpypto.runtime.interp): floats compute in float32 and round to the
destination's dtype, integers in int64; matmul accumulates in float32 (int64 for int8, then
int32), a bias row is added to the sums before rounding; a store's fixpipe options apply
relu, then the fp32 scale, then the atomic add, then rounding (saturating into integers).
A subview tile is a strided view of its parent's bytes. Every instruction touches only its
destination's valid region; a load or store of a
box past its tensor's end is an error, never a silent clip. With check=True each cluster is
also checked by pro_check (the race and sync checker).

Grid-wide sync (sync_all, INTER_BLOCK events; ir/pro_ops.grid_wide): every cluster must be
resident at once, so block_dim is limited to the target's clusters (grid_limit: the cube
cores, or the vector cores of a vector-only kernel, as on the device), and all the cores
of all the clusters run as coroutines of one scheduler (the thread count does not matter:
the Python runner gains nothing from threads). One checker spans the launch: cores are
named (cluster, id) and GM is compared across clusters. INTER_BLOCK is a counting barrier
per core kind (system.py); sync_all drains the core's pipes, counts the arrival and waits
for every member of its core_type to arrive at the same round. A wait nobody will satisfy
is a deadlock error; an INTER_BLOCK set never waited is an error at the end.

run() returns, beside the cluster count, one event per cluster ([0, cluster, worker,
start ns, end ns]: Tensor mode's event shape, for pypto-prof) or one for the whole grid,
and the GM bytes loaded and stored (valid regions) and the FLOPs (elementwise: one per
element, matmul 2mnk).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import PyptoError
from ..ir import expr as E
from ..ir.pro_ops import grid_wide
from ..ir.types import TileType
from . import pro_check
from .interp import cast_array, elementwise, reduce_array, work
from .pro_check import Checker, SyncError
from .pro_vf import VF           # Reg instructions (ir/reg_ops.py)


class ProRunError(PyptoError):
    """A Pro kernel went wrong at run time (a box past a tensor's end, a bad event id)."""


def programs_of(doc) -> dict:
    """core kind -> program op."""
    return {op.attrs["core"]: op for op in doc.body if op.name == "program"}


def serial(doc) -> bool:
    """Does the kernel store with atomic add? Then its clusters run one after the other in
    cluster order (here and in its C): float adds from several clusters into one GM element
    would otherwise sum in an order that depends on the thread count. So does a SIMT launch
    marked serial (its GM atomics' results depend on the order of the blocks: simt_ops)."""
    return any((op.name == "tstore" and op.attrs.get("atomic")) or
               (op.name == "simt_launch" and op.attrs.get("serial"))
               for p in programs_of(doc).values() for top in p.regions[0] for op in top.walk())


def run(doc, arrays: dict, env: dict, block_dim: int, threads: int = 1,
        check: bool = True, debug=None) -> dict:
    """Run doc for block_dim clusters; arrays (name -> contiguous numpy array) are written
    in place. env: the program scalars except block_num. Returns {"clusters": n, "events":
    [[0, cluster, worker, start ns, end ns], ...], "bytes": GM bytes moved, "flops": ...}."""
    if not isinstance(block_dim, int) or block_dim < 1:
        raise ProRunError(f"block_dim must be a positive int, not {block_dim!r}")
    if serial(doc):
        threads = 1
    progs = programs_of(doc)
    pro = doc.attrs["pro"]
    env = dict(env, block_num=block_dim)
    buffers = pro["buffers"]
    t0 = time.perf_counter_ns()
    if grid_wide(doc):
        grid_limit(doc, block_dim)
        grid = _Grid(pro["mixed"], "cube" in progs, "vector" in progs, block_dim, check)
        clusters = [_Cluster(progs, pro["mixed"], c, arrays, env, buffers, check, grid)
                    for c in range(block_dim)]
        for cl in clusters:
            cl.debug = debug            # pro_debug: where printf and dump_data records go
        grid.run(clusters, t0)
        return {**_summary(clusters), "events": [grid.event]}   # one share: all clusters
    workers: dict = {}

    def one(c: int):
        """Run cluster c; keep only what the launch needs of it (not its buffers)."""
        cl = _Cluster(progs, pro["mixed"], c, arrays, env, buffers, check)
        cl.debug = debug                # pro_debug: where printf and dump_data records go
        w = workers.setdefault(threading.get_ident(), len(workers))
        start = time.perf_counter_ns() - t0
        try:
            cl.run()
        except PyptoError as exc:
            exc.cluster = getattr(exc, "cluster", c)   # pro_debug prints clusters up to c
            raise
        return _Done([0, c, w, start, time.perf_counter_ns() - t0], cl.bytes, cl.flops,
                     pro_check.gm_records(cl.checker) if check else {})

    if threads <= 1 or block_dim == 1:
        clusters = [one(c) for c in range(block_dim)]
    else:
        with ThreadPoolExecutor(max_workers=min(threads, block_dim)) as pool:
            futures = [pool.submit(one, c) for c in range(block_dim)]
            clusters = [f.result() for f in futures]      # the first failure, in cluster order
    if check:
        pro_check.across_clusters([cl.gm for cl in clusters])
    return _summary(clusters)


class _Done:
    """What a finished cluster leaves: its event, GM bytes, flops and GM accesses."""

    def __init__(self, event, nbytes, flops, gm):
        self.event, self.bytes, self.flops, self.gm = event, nbytes, flops, gm


def _summary(clusters) -> dict:
    return {"clusters": len(clusters), "events": [cl.event for cl in clusters],
            "bytes": sum(cl.bytes for cl in clusters),
            "flops": sum(cl.flops for cl in clusters)}


def grid_limit(doc, block_dim: int) -> None:
    """A grid-wide sync needs every cluster resident at once, as on the device: block_dim
    may not exceed the target's clusters (cube cores; vector cores for a vector-only
    kernel)."""
    from ..targets import load_target
    pro = doc.attrs["pro"]
    arch = pro.get("options", {}).get("arch", "a2")
    cores = load_target({"a5": "950"}.get(arch, arch)).data.get("cores", {})
    kinds = {op.attrs["core"] for op in doc.body if op.name == "program"}
    most = int(cores.get("vector" if kinds == {"vector"} else "cube", 0) or 0)
    if most and block_dim > most:
        raise ProRunError(f"block_dim {block_dim}: this kernel synchronises across blocks "
                          f"(sync_all or an INTER_BLOCK event), so all its clusters must be "
                          f"resident at once, and {arch} has {most}; use block_dim <= {most}")


class _Grid:
    """What the clusters of a grid-synchronised launch share: the checker (GM is checked
    across clusters), INTER_BLOCK counters and sync_all rounds. The clusters' cores all run
    as coroutines of one scheduler, so a wait never holds a thread."""

    def __init__(self, mixed, has_cube, has_vector, block_dim, check):
        self.checker = Checker(check)
        self.n = {"cube": block_dim if has_cube else 0,
                  "vector": (2 * block_dim if mixed else block_dim) if has_vector else 0}
        self.sets: dict = {}       # (core kind, event) -> sets per core (by block index)
        self.waits: dict = {}
        self.clk: dict = {}        # (core kind, event, round) -> joined release clocks
        self.rounds: dict = {}     # (core_type, round) -> [arrivals, joined clock]

    def count(self, table: dict, key) -> list:
        got = table.get(key)
        if got is None:
            got = table[key] = [0] * self.n[key[0]]
        return got

    def members(self, core_type: str) -> int:
        return {"MIX": self.n["cube"] + self.n["vector"], "AIV_ONLY": self.n["vector"],
                "AIC_ONLY": self.n["cube"]}[core_type]

    def run(self, clusters, t0) -> None:
        gens = {(cl.index, core.id): core.run() for cl in clusters for core in cl.cores}
        blocked: dict = {}
        self.event = [0, 0, 0, time.perf_counter_ns() - t0, 0]
        while gens:
            before = sum(cl.steps for cl in clusters)
            for key in list(gens):
                try:
                    blocked[key] = next(gens[key])
                except StopIteration:
                    del gens[key]
                    blocked.pop(key, None)
            if gens and sum(cl.steps for cl in clusters) == before:
                raise _deadlock(blocked[min(blocked)])
        self.event[4] = time.perf_counter_ns() - t0
        for cl in clusters:
            cl.leftovers()
        for (kind, e), sets in sorted(self.sets.items()):
            waits = self.count(self.waits, (kind, e))
            for i, (s_, w) in enumerate(zip(sets, waits)):
                if s_ != w:
                    raise SyncError(f"INTER_BLOCK event {e}: {kind} core {i} set it {s_} times "
                                    f"and waited {w} times; every {kind} core must set and "
                                    f"wait it equally often (a set never waited)", None)


def _deadlock(op) -> SyncError:
    if op.name == "sync_all":
        return SyncError(f"deadlock: sync_all({op.attrs['core_type']}) waits for cores that "
                         f"never reach it: every core of the launch it names must call it "
                         f"equally often", op.loc)
    return SyncError(f"deadlock: {op.name} on {op.attrs['pipe']} (event "
                     f"{op.attrs['event_id']}, {op.attrs['mode']}) waits for a set_cross_core "
                     f"no core will make", op.loc)


class _Cluster:
    def __init__(self, progs, mixed, c, arrays, env, buffers, check, grid=None):
        self.index, self.grid = c, grid
        self.checker = grid.checker if grid is not None else Checker(check)
        self.mail: dict = {}
        self.unicast: dict = {}
        self.cores = []
        self.bytes = self.flops = 0
        self.event = None
        if mixed:
            self.cores.append(_Core(self, 0, progs["cube"], c, arrays, env, buffers))
            for v in (0, 1):
                self.cores.append(_Core(self, 1 + v, progs["vector"], 2 * c + v, arrays, env,
                                        buffers, sub=v))
            for core in self.cores[1:]:     # L1 is the cluster's: the vector cores insert
                core.bufs["l1"] = self.cores[0].bufs["l1"]      # into it (UB -> L1)
                core.owner["l1"] = 0
        else:
            (core, prog), = progs.items()
            self.cores.append(_Core(self, 0 if core == "cube" else 1, prog, c, arrays, env,
                                    buffers))
        self.steps = 0

    def run(self) -> None:
        gens = {core.id: core.run() for core in self.cores}
        blocked: dict = {}
        while gens:
            before = self.steps
            for cid in list(gens):
                try:
                    blocked[cid] = next(gens[cid])
                except StopIteration:
                    del gens[cid]
                    blocked.pop(cid, None)
            if gens and self.steps == before:
                raise _deadlock(blocked[min(blocked)])
        self.leftovers()

    def leftovers(self) -> None:
        for core in self.cores:
            for key, q in core.flags.items():
                if q:
                    op = q[0][1]
                    raise SyncError(f"sync_src ({op.attrs['pipe']} -> {op.attrs['wait_pipe']}, "
                                    f"event {key[2]}) is never waited: add the matching "
                                    f"pl.system.sync_dst", op.loc)
        for key, q in sorted(self.mail.items(), key=lambda kv: str(kv[0])):
            if q:
                op = q[0][1]
                raise SyncError(f"set_cross_core (event {op.attrs['event_id']}, "
                                f"{op.attrs['mode']}) is never waited: add the matching "
                                f"wait_cross_core", op.loc)

    def post(self, key, clk, op) -> None:
        self.mail.setdefault(key, deque()).append((clk, op))

    def ready(self, keys) -> bool:
        return all(self.mail.get(k) for k in keys)

    def take(self, keys) -> list:
        return [self.mail[k].popleft()[0] for k in keys]

    def unicast_by(self, core, direction: str, e: int, op) -> None:
        """A vector core's part in a UNICAST_BLOCK event: one vector core per (event,
        direction), so which set a wait takes is never in doubt."""
        subs = self.unicast.setdefault((direction, e), set())
        subs.add(core.sub)
        if len(subs) > 1:
            raise SyncError(f"UNICAST_BLOCK event {e} ({direction}) is used by both vector "
                            f"cores of cluster {self.index}: which set a wait takes would "
                            f"depend on timing; use one event id per vector core, or "
                            f"INTRA_BLOCK", op.loc)


class _Core:
    def __init__(self, cluster, cid, prog, g0, arrays, env, buffers, sub=None):
        self.cluster, self.id, self.prog, self.sub = cluster, cid, prog, sub
        self.kind = "cube" if cid == 0 else "vector"
        self.g0 = g0
        # the checker's name of this core: its id in the cluster, (cluster, id) when the
        # checker spans the launch (grid-wide sync)
        self.key = (cluster.index, cid) if cluster.grid is not None else cid
        self.arrived: dict = {}       # sync_all rounds reached, per core_type
        self.arrays = arrays
        self.env = dict(env, g0=g0)
        self.bufs = {s: np.zeros(int(n), np.uint8) for s, n in buffers.items()}
        self.owner = {s: cid for s in buffers}      # whose buffer a space is (the checker key)
        self.vals: dict = {}
        self.flags: dict = {}
        self.chk = cluster.checker

    def run(self):
        args = {op.result: self.arrays[op.result.name] for op in self.prog.regions[0]
                if op.name == "arg"}
        self.vals.update(args)
        yield from self.block(self.prog.regions[0], self.env)

    def block(self, ops, env):
        for op in ops:
            n = op.name
            if n == "arg":
                continue
            if n == "for":
                a = op.attrs
                lo, hi, st = (int(E.evaluate(a[k], env)) for k in ("start", "stop", "step"))
                for i in range(lo, hi, st):
                    yield from self.block(op.regions[0], {**env, a["var"]: i})
            elif n == "if":
                arm = 0 if E.evaluate(op.attrs["cond"], env) else 1
                yield from self.block(op.regions[arm], env)
            elif n == "tile":
                self.vals[op.result] = self.tile(op, env)
            elif n == "cross_wait" and op.attrs["mode"] == "INTER_BLOCK":
                yield from self.grid_wait(op, env)
                self.cluster.steps += 1
            elif n == "cross_wait":
                keys = self.wait_keys(op, env)
                while not self.cluster.ready(keys):
                    yield op
                for clk in self.cluster.take(keys):
                    self.chk.acquire((self.key, op.attrs["pipe"]), clk)
                self.cluster.steps += 1
            elif n == "sync_all":
                yield from self.sync_all(op)
                self.cluster.steps += 1
            else:
                self.instr(op, env)
                self.cluster.steps += 1

    # -- tiles ------------------------------------------------------------------------------
    def tile(self, op, env):
        t: TileType = op.result.type
        addr = int(E.evaluate(op.attrs.get("addr", 0), env))
        rows, cols = t.shape
        stride = int(op.attrs.get("stride", cols))     # a subview keeps its parent's rows
        isz = t.dtype.itemsize
        nbytes = ((rows - 1) * stride + cols) * isz
        buf = self.bufs.get(t.space)
        if buf is None or addr < 0 or addr + nbytes > buf.size:
            raise ProRunError(f"tile {op.attrs.get('name', '?')} at {addr:#x} + {nbytes} bytes "
                              f"is outside the {t.space} buffer", op.loc)
        flat = buf[addr:addr + nbytes].view(t.dtype.np)
        if stride == cols:
            return flat.reshape(t.shape)
        return np.lib.stride_tricks.as_strided(flat, t.shape, (stride * isz, isz))

    def where(self, v, op=None, env=None):
        """(checker key, lo, hi) of a tile operand's bytes: its whole extent (a subview's
        from its first to its last element), or for an insert's destination the rows and
        columns it writes."""
        t = v.type
        if not isinstance(t, TileType):
            return None
        arr = self.vals[v]
        base = self.bufs[t.space]
        lo = arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        rs = arr.strides[0] // arr.itemsize
        hi = lo + ((arr.shape[0] - 1) * rs + arr.shape[1]) * arr.itemsize
        if op is not None and op.name == "tinsert" and v is op.operands[0]:
            r, c = self.valid(op, env, op.operands[1].type.shape)
            o0, o1 = (int(self.ev(o, env)) for o in op.attrs["offsets"])
            if r > 0 and c > 0:
                lo, hi = (lo + (o0 * rs + o1) * arr.itemsize,
                          lo + ((o0 + r - 1) * rs + o1 + c) * arr.itemsize)
        owner = self.owner[t.space]
        key = (self.cluster.index, owner) if self.cluster.grid is not None else owner
        return ("tile", key, t.space), [lo], [hi]

    # -- instructions -----------------------------------------------------------------------
    def instr(self, op, env) -> None:
        n, a = op.name, op.attrs
        pipe = a.get("pipe", "S")
        th = (self.key, pipe)
        if n in SYNC:
            SYNC[n](self, op, env, th)
            return
        self.chk.tick(th)
        if n in VF:                     # Reg instructions: registers, byte-precise checks
            VF[n](self, op, env, th)
            return
        fn = KERNELS.get(n) or (_elementwise if n[1:] in _ELEMENTWISE else None)
        if fn is None:
            raise ProRunError(f"the Pro runner has no rule for {n}", op.loc)
        if not getattr(fn, "own_access", False):    # a SIMT launch records its own
            self.check_access(op, env, th)
        fn(self, op, env)

    def check_access(self, op, env, th) -> None:
        from ..ir.instr import dests, sources
        if not self.chk.enabled:
            return
        for v in sources(op):
            if op.name == "tinsert" and v is op.operands[0]:
                continue        # an insert keeps the rest of its destination: no read
            key, lo, hi = self.where(v)
            self.chk.access(th, key, lo, hi, False, _tile_name(v, lo), op)
        if op.name in ("tload", "tstore"):
            lo, hi = self.box(op, env)
            self.chk.access(th, ("gm", op.operands[1].name), lo, hi, op.name == "tstore",
                            f"tensor {op.operands[1].name}[{_box_str(lo, hi)}]", op)
        for v in dests(op):
            key, lo, hi = self.where(v, op, env)
            self.chk.access(th, key, lo, hi, True, _tile_name(v, lo), op)

    def box(self, op, env) -> tuple:
        offs = [int(E.evaluate(o, env)) for o in op.attrs["offsets"]]
        ext = [int(E.evaluate(v, env)) for v in op.attrs["valid"]]
        return offs, [o + e for o, e in zip(offs, ext)]

    def valid(self, op, env, shape) -> tuple:
        v = op.attrs.get("valid")
        if v is None:
            return tuple(shape)
        return tuple(max(0, min(int(E.evaluate(x, env)), s)) for x, s in zip(v, shape))

    def ev(self, x, env):
        return E.evaluate(x, env) if isinstance(x, E.Expr) else x

    def wait_keys(self, op, env) -> list:
        e = self.event(op, env)
        mode = op.attrs["mode"]
        if mode == "INTER_SUBBLOCK":
            return [("sub", self.id, e)]
        if mode == "UNICAST_BLOCK":
            if self.id != 0:
                self.cluster.unicast_by(self, "cube to vector", e, op)
            return [("uni", self.id == 0, e)]
        if self.id == 0:
            return [("up", 1, e), ("up", 2, e)]
        return [("down", self.id, e)]

    def grid_wait(self, op, env):
        """INTER_BLOCK: the n-th wait completes once every core of this kind has set n
        times; it acquires the join of their n-th sets."""
        g, e = self.cluster.grid, self.event(op, env)
        key = (self.kind, e)
        n = g.count(g.waits, key)[self.g0] + 1
        while min(g.count(g.sets, key)) < n:
            yield op
        g.waits[key][self.g0] = n
        self.chk.acquire((self.key, op.attrs["pipe"]), g.clk[(self.kind, e, n)])

    def sync_all(self, op):
        """All of this core's pipes drain (bar_all), then it waits for every core of the
        core_type to arrive at the same round, and takes their joined clocks."""
        g, kind = self.cluster.grid, op.attrs["core_type"]
        self.chk.bar_all(self.key)
        r = self.arrived[kind] = self.arrived.get(kind, 0) + 1
        slot = g.rounds.setdefault((kind, r), [0, {}])
        slot[0] += 1
        self.cluster.steps += 1
        self.chk.acquire(("join", kind, r), self.chk.release((self.key, "S")))
        while slot[0] < g.members(kind):
            yield op
        self.chk.acquire((self.key, "S"), self.chk.release(("join", kind, r)))
        self.chk.bar_all(self.key)

    def event(self, op, env) -> int:
        e = int(self.ev(op.attrs["event_id"], env))
        if not 0 <= e <= 15:
            raise ProRunError(f"event id {e} is outside 0-15", op.loc)
        return e


def _tile_name(v, lo) -> str:
    owner = v.owner
    name = owner.attrs.get("name", "?") if owner is not None else "?"
    return f"tile {name} ({v.type.space} bytes at {lo[0]:#x})"


def _box_str(lo, hi) -> str:
    return ", ".join(f"{a}:{b}" for a, b in zip(lo, hi))


# -- sync -------------------------------------------------------------------------------------

def _sync_set(core, op, env, th):
    a = op.attrs
    key = (a["pipe"], a["wait_pipe"], core.event(op, env))
    core.flags.setdefault(key, deque()).append((core.chk.release(th), op))


def _sync_wait(core, op, env, th):
    a = op.attrs
    key = (a["set_pipe"], a["pipe"], core.event(op, env))
    q = core.flags.get(key)
    if not q:
        raise SyncError(f"sync_dst ({a['set_pipe']} -> {a['pipe']}, event {key[2]}) has no "
                        f"sync_src before it: it would wait forever; add "
                        f"pl.system.sync_src(set_pipe=pl.PipeType.{a['set_pipe']}, "
                        f"wait_pipe=pl.PipeType.{a['pipe']}, event_id={key[2]}) before it",
                        op.loc)
    core.chk.acquire(th, q.popleft()[0])


def _barrier(core, op, env, th):
    if op.attrs["which"] == "ALL":
        core.chk.bar_all(core.key)


def _mutex(core, op, env, th):
    mid = int(core.ev(op.attrs["mutex_id"], env))
    if not 0 <= mid <= 31:
        raise ProRunError(f"mutex id {mid} is outside 0-31", op.loc)
    (core.chk.lock if op.name == "mutex_lock" else core.chk.unlock)(core.key,
                                                                    op.attrs["pipe"], mid)


def _cross_set(core, op, env, th):
    e = core.event(op, env)
    clk = core.chk.release(th)
    cl = core.cluster
    mode = op.attrs["mode"]
    if mode == "INTER_SUBBLOCK":
        if core.sub is None:
            raise ProRunError("INTER_SUBBLOCK events are between the two vector cores of a "
                              "mixed kernel", op.loc)
        cl.post(("sub", 3 - core.id, e), clk, op)
    elif mode == "INTER_BLOCK":
        g = cl.grid
        sets = g.count(g.sets, (core.kind, e))
        sets[core.g0] += 1
        joined = g.clk.setdefault((core.kind, e, sets[core.g0]), {})
        for k, v in clk.items():
            joined[k] = max(joined.get(k, 0), v)
    elif mode == "UNICAST_BLOCK":
        if core.id != 0:
            cl.unicast_by(core, "vector to cube", e, op)
        cl.post(("uni", core.id != 0, e), clk, op)
    elif core.id == 0:
        cl.post(("down", 1, e), clk, op)
        cl.post(("down", 2, e), clk, op)
    else:
        cl.post(("up", core.id, e), clk, op)


def _nop(core, op, env, th):
    return None


SYNC = {"sync_set": _sync_set, "sync_wait": _sync_wait, "barrier": _barrier,
        "mutex_lock": _mutex, "mutex_unlock": _mutex, "cross_set": _cross_set,
        "mm_layout": _nop}


# -- tile instructions ------------------------------------------------------------------------

def _put(dst, value) -> None:
    v = np.asarray(value)
    if v.dtype != dst.dtype:
        v = cast_array(v, _DT(dst.dtype))
    dst[...] = v


class _DT:
    def __init__(self, np_dtype):
        self.np = np_dtype


def _gm(core, op, env):
    arr = core.vals[op.operands[1]]
    lo, hi = core.box(op, env)
    if any(l < 0 or h > n or h < l for l, h, n in zip(lo, hi, arr.shape)):
        raise ProRunError(f"{'load' if op.name == 'tload' else 'store'} of "
                          f"{op.operands[1].name}[{_box_str(lo, hi)}] is outside its shape "
                          f"{list(arr.shape)}: set the tile's valid shape for the tail",
                          op.loc)
    a0, a1 = op.attrs.get("order") or (-2, -1)      # the tensor axes of rows and columns
    return arr[tuple(slice(l, h) for l, h in zip(lo, hi))], hi[a0] - lo[a0], hi[a1] - lo[a1]


def _tload(core, op, env):
    src, r, c = _gm(core, op, env)
    dst = core.vals[op.operands[0]]
    if "mx" in op.attrs:                # an MX scale load (pro_exec_more.py)
        core.cluster.bytes += src.nbytes
        return load_mx(core, op, env, src, dst)
    a0, a1 = op.attrs.get("order") or (0, 1)
    box = src.reshape(c, r).T if a0 > a1 else src.reshape(r, c)   # descending: transposed
    _put(dst[:r, :c], box)
    core.cluster.bytes += src.nbytes


def _tstore(core, op, env):
    dst, r, c = _gm(core, op, env)
    src = core.vals[op.operands[0]]
    a = op.attrs
    core.cluster.bytes += dst.nbytes
    if not (a.get("relu") or "scale" in a or a.get("atomic")):
        _put(dst, src[:r, :c].reshape(dst.shape))
        return
    old = dst.reshape(r, c) if a.get("atomic") else None
    _put(dst, _fixpipe(core, op, env, src[:r, :c], dst.dtype, old).reshape(dst.shape))


def _fixpipe(core, op, env, v, out_dtype, old=None):
    """A store's options on the way out: relu, scale (fp32), the atomic add of the
    old GM values, then saturation into an integer dtype (the rounding is _put's)."""
    a = op.attrs
    w = work(v)
    if a.get("relu"):
        w = np.maximum(w, w.dtype.type(0))
    if "scale" in a:
        w = w.astype(np.float32) * np.float32(core.ev(a["scale"], env))
    if old is not None:
        w = work(old) + w
    if np.issubdtype(out_dtype, np.integer) and w.dtype.kind == "f":
        info = np.iinfo(out_dtype)
        w = np.rint(np.clip(w, info.min, info.max))    # round half to even, as nearbyintf
    return w


def _tmov(core, op, env):
    d, s = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, d.shape)
    _put(d[:r, :c], s[:r, :c])


def _textract(core, op, env):
    d, s = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, d.shape)
    o0, o1 = (int(core.ev(o, env)) for o in op.attrs["offsets"])
    _put(d[:r, :c], s[o0:o0 + r, o1:o1 + c])


def _tinsert(core, op, env):
    d, s = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, s.shape)
    o0, o1 = (int(core.ev(o, env)) for o in op.attrs["offsets"])
    if o0 < 0 or o1 < 0 or o0 + r > d.shape[0] or o1 + c > d.shape[1]:
        raise ProRunError(f"insert of a [{r}, {c}] region at [{o0}, {o1}] falls outside the "
                          f"{list(d.shape)} tile", op.loc)
    _put(d[o0:o0 + r, o1:o1 + c], s[:r, :c])


def _texpands(core, op, env):
    d = core.vals[op.operands[0]]
    r, c = core.valid(op, env, d.shape)
    _put(d[:r, :c], np.full((r, c), core.ev(op.attrs["value"], env), work(d).dtype))


def _treduce(core, op, env):
    d, s = (core.vals[v] for v in op.operands)
    r, c = core.valid(op, env, s.shape)
    res = reduce_array(op.attrs["kind"], work(s[:r, :c]), tuple(op.attrs["dims"]), True)
    _put(d[:res.shape[0], :res.shape[1]], res)


def _tmatmul(core, op, env):
    acc, a, b = (core.vals[v] for v in op.operands[:3])
    m, n = core.valid(op, env, acc.shape)
    k = max(0, min(int(core.ev(op.attrs["k_valid"], env)), a.shape[1]))
    core.cluster.flops += 2 * m * n * k
    prod = _in_order_product(work(a[:m, :k]), work(b[:k, :n]))
    if len(op.operands) == 4:           # the bias row, down every row
        prod = prod + work(core.vals[op.operands[3]][:1, :n])
    if int(core.ev(op.attrs["init"], env)):
        _put(acc[:m, :n], prod)
    else:
        _put(acc[:m, :n], work(acc[:m, :n]) + prod)


def _in_order_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b summed over k in order, as the C does (codegen/pro_c.py i_tmatmul): each float
    product rounded to float32, then added. Integers are exact in int64 in any order. Not
    numpy's matmul: the BLAS behind it picks its own summation order per CPU and shape."""
    if a.dtype.kind in "iu":
        return a @ b
    s = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for q in range(a.shape[1]):
        s += a[:, q:q + 1] * b[q:q + 1, :]
    return s


def _elementwise(core, op, env):
    d = core.vals[op.operands[0]]
    r, c = core.valid(op, env, d.shape)
    srcs = [core.vals[v] for v in op.operands[1:]]
    parts = [work(s[:min(r, s.shape[0]), :min(c, s.shape[1])]) for s in srcs]
    scalar = op.attrs.get("scalar")
    if scalar is not None:
        scalar = core.ev(scalar, env)
    res = elementwise(op.name[1:], parts, scalar, op.attrs.get("scalar_side", "rhs"))
    core.cluster.flops += r * c
    _put(d[:r, :c], np.broadcast_to(res, (r, c)))


from ..ir import ops as _O   # noqa: E402

_ELEMENTWISE = set(_O.ELEMENTWISE)
KERNELS = {"tload": _tload, "tstore": _tstore, "tmov": _tmov, "tcvt": _tmov,
           "textract": _textract, "texpands": _texpands, "treduce": _treduce,
           "tmatmul": _tmatmul, "tinsert": _tinsert}
from . import pro_simt as _pro_simt   # noqa: E402 -- pl.simt launches (runtime/pro_simt.py)

KERNELS.update(_pro_simt.kernels(ProRunError, _tile_name))
from . import pro_debug as _pro_debug   # noqa: E402 -- printf, pto_assert, dump_data, trap
KERNELS.update(_pro_debug.KERNELS)

from .pro_pipeline import KERNELS as _PIPELINE   # noqa: E402 -- L0C -> UB (pipeline.py)

KERNELS.update(_PIPELINE)

from .pro_exec_more import KERNELS_MORE, load_mx   # noqa: E402 -- issue 9 item 4

KERNELS.update(KERNELS_MORE)
