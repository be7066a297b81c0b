"""A discrete-event simulator of an accelerator target: how long a run takes, pipe by pipe.

`simulate(doc, target, env)` times one run of an exec-level (or later) document on a
target (a2, a3, 950 or a TOML file) and returns the record `pypto-run --target` keeps
(the run op's `sim` attribute). The numerics are the host's; only time is simulated.

The model (every number from the target file, libpypto/targets/costs.py):
- a core has the pipes MTE2, MTE1, M, V, MTE3, FIX and S, each an in-order queue; an
  instruction starts when its pipe is free, the instructions it depends on have finished
  and the events it waits for are set (flatten.py says what it depends on in Tensor mode,
  which has no sync instructions yet, and in Pro mode, which has);
- GM transfers share the HBM bandwidth of the whole chip and an L2 (engine.py);
- Tensor mode: the kernel is launched once (`launch_overhead_us`), then every task
  instance is dispatched to a free core of its kind as soon as the instances it depends
  on (analysis/expand.py) have finished, the lowest ready instance first, to the lowest
  free core; a dispatch costs `task_overhead_us` on the core; a core runs one instance at a
  time. Pro mode: one launch, then block_dim clusters (a mixed cluster is one cube and two
  vector cores) on the target's cores, in waves when there are more clusters than fit.

The result: makespan in cycles and microseconds (launch included), per-core busy cycles
of every pipe, utilisation of each pipe (its busiest core) and of HBM and L2 over the run,
the bound (the resource with the highest utilisation, or "latency" when none is above
half), the per-pipe events (core, pipe, start, end, program, op; the first
$PYPTO_MAX_SIM_EVENTS, 200000 by default, of those with a duration: `events_dropped` counts
the rest), the flags between them (`flows`: [setter event, waiter event] index pairs into
`events`, at most as many as events; only flags between kept events) for pypto-prof's
arrows, and, in Tensor mode, each task instance's core and times (`tasks`: [task, instance,
core, start, end]), in Pro mode each cluster's slot and times (`clusters`: [cluster, slot,
start, end]) and the cores of each slot (`slots`: [slot, [core, ...]]).

How it runs fast (a million task instances in seconds): the instances of a launch that
agree on every value their streams depend on (classes.py) share one flattened stream, and
only the L2 keys of their GM boxes are worked out per instance, with whole-array
operations; the event loop is C (engine.c, built at first use, native.py). engine.py is
the same loop in Python: the fallback without a C compiler (one warning) and the reference
(`engine="reference"` also flattens every instance on its own, as the simulator first
did); tests/unit/sim/test_native.py holds the three to the same record, event by event.

A flow joins two instructions with durations: in Tensor mode an instruction and the last
instruction of each other pipe it depends on (the flag a sync insertion would set); in Pro
mode the last instruction on the set pipe before a sync_set (or cross_set) and the first
instruction on the wait pipe after the matching sync_wait (or cross_wait). A flag set
before anything ran on its pipe, mutexes, barriers and sync_all have no arrow.

What it ignores: instruction issue (the scalar unit and its queue depth), bank conflicts,
DMA efficiency of short rows beyond 32-B padding, partial overlaps in L2 (boxes match
exactly), fair sharing of HBM and L2 (first come, first served), the AICPU's own scheduling
latency beyond a fixed dispatch cost, and data-dependent costs (values of the data).
"""
from __future__ import annotations

import os

from ..errors import UsageError
from ..ir.mix_ops import clustered
from ..targets.costs import PIPES, Costs
from . import classes, native
from ..analysis.native import no_gc
from .engine import MAX_EVENTS, Engine
from .flatten import Context, Flattener, instance_env

CORE_KINDS = {"vector": ("vector", "mixed"), "cube": ("cube", "mixed"), "mixed": ("mixed",),
              "cluster": ("cube", "vector")}
BOUND_FLOOR = 0.5


def _clusters(kinds: list) -> list:
    """(cube core, vector core, vector core) of each cluster: cube core c with vector cores
    2c and 2c + 1 (counted among the vector cores), as long as both kinds last."""
    cube = [i for i, k in enumerate(kinds) if k == "cube"]
    vec = [i for i, k in enumerate(kinds) if k == "vector"]
    return [(cube[c], vec[2 * c], vec[2 * c + 1]) for c in range(min(len(cube), len(vec) // 2))]


def lanes(cores: dict) -> list:
    """Core kind of each core id: cube cores first, then vector, then mixed."""
    out = []
    for kind in ("cube", "vector", "mixed"):
        out += [kind] * int(cores.get(kind, 0))
    return out


ENGINES = ("c", "python", "reference")


def simulate(doc, target, env: dict, data: dict | None = None,
             block_dim: int | None = None, engine: str | None = None) -> dict:
    """Simulate one run of doc on target with the sizes (and Pro scalars) in env.
    data: the arrays of parameters the document reads elements of (data-dependent
    bounds); block_dim: a Pro kernel's launch size. engine (default $PYPTO_SIM_ENGINE, else
    c): "c", the event loop in C (sim/engine.c; Python when no C compiler can build it,
    with one warning); "python", engine.py on the same streams; "reference", engine.py
    with every task instance flattened on its own (the definition the others are tested
    against). All three give the same record."""
    costs = Costs(target)
    cores = {k: int(v) for k, v in target.data["cores"].items()}
    if not any(cores.values()):
        raise UsageError(f"target {target.name}: no cores to simulate")
    kinds = lanes(cores)
    engine = engine or os.environ.get("PYPTO_SIM_ENGINE") or "c"
    if engine not in ENGINES:
        raise UsageError(f"simulator engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if engine == "c" and not native.available():
        engine = "python"
    with no_gc():
        if "pro" in doc.attrs:
            eng, extra = _run_pro(doc, costs, kinds, env, block_dim or 1, engine)
        else:
            eng, extra = _run_tasks(doc, costs, kinds, env, data, target, engine)
        return _summary(eng, costs, kinds, target, extra)


# -- Tensor mode ------------------------------------------------------------------------------

def _run_tasks(doc, costs, kinds, env, data, target, engine):
    from ..analysis.arena import storage_keys
    from ..analysis.expand import expand
    exp = expand(doc, dict(env), data)
    programs = exp.programs
    pindex = {p.attrs["name"]: i for i, p in enumerate(programs)}
    fl = Flattener(programs, costs, pro=False)
    gm_of = {op.result: i for i, op in enumerate(exp.gms)}
    prog_of = [pindex[t.attrs["program"]] for t in exp.tasks]
    # a tensor in the arena meets the tensors that take its bytes (same offset, dtype and
    # shape) in the L2: they share the index of the first of them
    first: dict = {}
    store = [first.setdefault(k, i) for i, k in enumerate(storage_keys(doc, exp))]
    tensors = [[store[gm_of[v]] for v in t.operands] for t in exp.tasks]
    for ti, t in enumerate(exp.tasks):
        kind = _kind(programs[prog_of[ti]], kinds)
        if not any(k in kinds for k in CORE_KINDS[kind]):
            built = doc.attrs.get("target", {}).get("name", "?")
            raise UsageError(f"target {target.name} has no core that runs {kind} programs; "
                             f"the graph was lowered for {built}: lower it with --target "
                             f"{target.name}")
    last = None
    clusters = any(_kind(programs[pi], kinds) == "cluster" for pi in prog_of)
    if engine == "c" and not clusters:
        eng, rows, finished, last = _tasks_native(exp, fl, prog_of, tensors, costs, kinds)
    else:       # the C engine and the classes do not place mixed programs on clusters
        eng = Engine(costs, len(kinds), len(PIPES))
        make = None
        if engine == "python" and not clusters:
            p = classes.plan(exp, fl, prog_of, tensors)
            make = classes.instance_streams(p, p.keys)
        disp = _Dispatcher(eng, exp, fl, prog_of, tensors, kinds, make)
        eng.at(costs.launch, disp.begin)
        eng.run()
        rows, finished = sorted(disp.rows), disp.finished
    eng.programs, eng.ops = fl.programs, fl.ops
    if finished < exp.n:
        raise UsageError(f"simulation stopped with {exp.n - finished} task instances "
                         f"not run (a dependence cycle)")
    return eng, {"tasks": rows, "last": last}


def _tasks_native(exp, fl, prog_of, tensors, costs, kinds):
    """Tensor-mode instances on the C engine: (result, the sorted task rows, how many
    instances finished, the latest end of a row)."""
    import numpy as np
    p = classes.plan(exp, fl, prog_of, tensors, native.intern)
    code = {"vector": 0, "cube": 1, "mixed": 2}
    task_of = np.array([lc.task for lc in exp.launches], np.int64)[exp.launch_of] \
        if exp.n else np.zeros(0, np.int64)
    kind_of_task = np.array([code[fl.programs[pi].attrs["core"]] for pi in prog_of] or [0])
    res, core, t0, end = native.run_tasks(costs, kinds, len(PIPES), p.templates, p.tpl,
                                          p.kbase, p.keys,
                                          kind_of_task[task_of], exp, _max_events())
    first = np.array([lc.first for lc in exp.launches], np.int64)[exp.launch_of] \
        if exp.n else np.zeros(0, np.int64)
    cols = [task_of, np.arange(exp.n, dtype=np.int64) - first, core.astype(np.int64),
            t0.astype(np.int64), end.astype(np.int64)]
    order = np.lexsort(cols[::-1])
    rows = np.stack(cols, 1)[order].tolist() if exp.n else []
    return res, rows, res.finished, int(cols[4].max()) if exp.n else None


def _max_events() -> int:
    return int(os.environ.get("PYPTO_MAX_SIM_EVENTS", MAX_EVENTS) or 0)


def _kind(prog, kinds: list) -> str:
    """The kind of core a program runs on: a mixed program for a cluster (sections,
    ir/mix_ops.py) on a target without mixed cores runs on a cluster."""
    kind = prog.attrs["core"]
    return "cluster" if kind == "mixed" and "mixed" not in kinds and clustered(prog) else kind


class _Dispatcher:
    """Task instances to free cores, as their predecessors finish. engine.c's Tasks
    (dispatch, task_done) does the same for the C engine: a change to the placement here
    goes there too, or those runs take engine="python" (test_native.py compares them)."""

    def __init__(self, eng, exp, fl, prog_of, tensors, kinds, make=None):
        import heapq
        self.hq = heapq
        self.eng, self.exp, self.fl, self.make = eng, exp, fl, make
        self.prog_of, self.tensors = prog_of, tensors
        self.kind_of = [_kind(fl.programs[p], kinds) for p in prog_of]
        self.clusters = _clusters(kinds)
        self.parts: dict = {}         # a cluster instance -> [streams left, start, end]
        self.waiting = [len(p) for p in exp.preds]
        self.succ: list = [[] for _ in range(exp.n)]
        for i, ps in enumerate(exp.preds):
            for j in ps:
                self.succ[j].append(i)
        self.free = {k: [i for i, kk in enumerate(kinds) if kk == k] for k in set(kinds)}
        self.ready: dict = {k: [] for k in CORE_KINDS}
        self.rows: list = []
        self.finished = 0

    def begin(self) -> None:
        for i in range(self.exp.n):
            if self.waiting[i] == 0:
                self._ready(i)
        self.dispatch()

    def _ready(self, i: int) -> None:
        launch = self.exp.launches[int(self.exp.launch_of[i])]
        self.hq.heappush(self.ready[self.kind_of[launch.task]], i)

    def dispatch(self) -> None:
        eng = self.eng
        for kind, q in self.ready.items():
            if kind == "cluster":
                self.dispatch_clusters(q)
                continue
            while q:
                pool = [(self.free[k][0], k) for k in CORE_KINDS[kind] if self.free.get(k)]
                if not pool:
                    break
                core, k = min(pool)
                self.hq.heappop(self.free[k])
                i = self.hq.heappop(q)
                st = self._stream(i)
                eng.start(st, core, eng.now + eng.c.dispatch, self.done, (i, k))

    def _stream(self, i: int, ctx=None):
        if self.make is not None:
            return self.make(i)
        exp = self.exp
        li = int(exp.launch_of[i])
        lc = exp.launches[li]
        prog = self.fl.programs[self.prog_of[lc.task]]
        self.fl.flags = self.eng.room()
        env = instance_env(prog, lc, i)
        if ctx is None:
            ctx = Context(self.tensors[lc.task])
        ctx.tensors = self.tensors[lc.task]
        return self.fl.flatten(self.prog_of[lc.task], env, ctx)

    def done(self, run) -> None:
        i, k = run.tag[:2]
        if k == "cluster":                 # one part of a cluster instance: its core is free
            left = self.parts[i]
            left[0] -= 1
            left[1], left[2] = min(left[1], run.t0), max(left[2], run.end)
            self.hq.heappush(self.free[run.tag[2]], run.core)
            if not left[0]:
                del self.parts[i]
                self.finish(i, left[3], left[1], left[2])
        else:
            self.finish(i, run.core, run.t0, run.end)
            self.hq.heappush(self.free[k], run.core)
        self.dispatch()

    def finish(self, i: int, core: int, t0, end) -> None:
        lc = self.exp.launches[int(self.exp.launch_of[i])]
        self.rows.append([lc.task, i - lc.first, core, int(t0), int(end)])
        self.finished += 1
        for j in self.succ[i]:
            self.waiting[j] -= 1
            if self.waiting[j] == 0:
                self._ready(j)

    # -- mixed programs for a cluster ----------------------------------------------------------
    def dispatch_clusters(self, q: list) -> None:
        """Ready cluster instances to the lowest cluster (cube core c, vector cores 2c and
        2c + 1, as Pro clusters are placed) whose three cores are all free; each core runs
        its part of the program (its sections), the cross-core events between them."""
        eng = self.eng
        while q:
            free = {c for k in ("cube", "vector") for c in self.free.get(k, [])}
            slot = next((cl for cl in self.clusters if set(cl) <= free), None)
            if slot is None:
                return
            i = self.hq.heappop(q)
            for k, c in zip(("cube", "vector", "vector"), slot):
                self.free[k].remove(c)
                self.hq.heapify(self.free[k])
            self.parts[i] = [3, float("inf"), 0.0, slot[0]]
            for cid, core in enumerate(slot):
                kind = "cube" if cid == 0 else "vector"
                st = self._stream(i, Context(None, i, cid, kind, part=True))
                eng.start(st, core, eng.now + eng.c.dispatch, self.done, (i, "cluster", kind))


# -- Pro mode -----------------------------------------------------------------------------------

def _run_pro(doc, costs, kinds, env, block_dim: int, engine: str):
    progs = {op.attrs["core"]: op for op in doc.body if op.name == "program"}
    order = [k for k in ("cube", "vector") if k in progs]
    fl = Flattener([progs[k] for k in order], costs, pro=True)
    mixed = bool(doc.attrs["pro"]["mixed"])
    cube_ids = [i for i, k in enumerate(kinds) if k == "cube"]
    vec_ids = [i for i, k in enumerate(kinds) if k == "vector"]
    slots = min(len(cube_ids), len(vec_ids) // 2) if mixed else \
        (len(cube_ids) if order == ["cube"] else len(vec_ids))
    if slots < 1:
        raise UsageError("the target has no cores for this kernel's clusters")
    members = {"cube": block_dim if "cube" in progs else 0,
               "vector": (2 * block_dim if mixed else block_dim) if "vector" in progs else 0}
    gm = [i for i, op in enumerate(op for op in doc.body if op.name == "gm")]
    eng = Engine(costs, len(kinds), len(PIPES))
    waves = _Waves(eng, fl, order, mixed, cube_ids, vec_ids, slots, block_dim, members,
                   dict(env, block_num=block_dim), gm)
    if engine == "c":
        eng, rows, stuck = _waves_native(waves, costs, kinds)
    else:
        eng.at(costs.launch, waves.begin)
        eng.run()
        rows, stuck = sorted(waves.rows), eng.stuck()
    eng.programs, eng.ops = fl.programs, fl.ops
    if stuck:
        raise UsageError("simulation deadlocked: a cross-core wait no core sets")
    cores = [[s, [core for _, core, *_ in waves.cores_of(s)]]
             for s in range(min(slots, block_dim))]
    return eng, {"clusters": rows, "slots": cores}


def _waves_native(waves, costs, kinds):
    """Pro clusters on the C engine: (result, the sorted cluster rows, the waits left)."""
    streams, members = [], []
    for c in range(waves.block_dim):
        mine = []
        for pi, core, cid, kind, g0 in waves.cores_of(c):
            ctx = Context(waves.gm, c, cid, kind, g0, waves.members)
            mine.append((len(streams), core))
            streams.append(waves.fl.flatten(pi, dict(waves.env, g0=g0), ctx))
        members.append(mine)
    res, t0, end = native.run_waves(costs, kinds, len(PIPES), streams, members, waves.slots,
                                    _max_events())
    rows = sorted([c, c % waves.slots, int(t0[c]), int(end[c])] for c in range(waves.block_dim))
    return res, rows, res.stuck_waiters


class _Waves:
    """Pro clusters on their cores: cluster c takes slot c mod slots once the cluster
    before it on that slot has finished on all its cores."""

    def __init__(self, eng, fl, order, mixed, cube_ids, vec_ids, slots, block_dim, members,
                 env, gm):
        self.eng, self.fl, self.order, self.mixed = eng, fl, order, mixed
        self.cube_ids, self.vec_ids, self.slots = cube_ids, vec_ids, slots
        self.block_dim, self.members, self.env, self.gm = block_dim, members, env, gm
        self.left: dict = {}
        self.rows: list = []

    def begin(self) -> None:
        for c in range(min(self.slots, self.block_dim)):
            self.launch(c)

    def cores_of(self, c: int) -> list:
        """(program index, core id, id in cluster, kind, block index) of cluster c."""
        s = c % self.slots
        if self.mixed:
            out = [(self.order.index("cube"), self.cube_ids[s], 0, "cube", c)]
            return out + [(self.order.index("vector"), self.vec_ids[2 * s + v], 1 + v,
                           "vector", 2 * c + v) for v in (0, 1)]
        kind = self.order[0]
        ids = self.cube_ids if kind == "cube" else self.vec_ids
        return [(0, ids[s], 0 if kind == "cube" else 1, kind, c)]

    def launch(self, c: int) -> None:
        cores = self.cores_of(c)
        self.left[c] = [len(cores), self.eng.now, self.eng.now]
        for pi, core, cid, kind, g0 in cores:
            ctx = Context(self.gm, c, cid, kind, g0, self.members)
            st = self.fl.flatten(pi, dict(self.env, g0=g0), ctx)
            self.eng.start(st, core, self.eng.now, self.done, c)

    def done(self, run) -> None:
        c = run.tag
        slot = self.left[c]
        slot[0] -= 1
        slot[2] = max(slot[2], run.end)
        if slot[0] == 0:
            self.rows.append([c, c % self.slots, int(slot[1]), int(slot[2])])
            if c + self.slots < self.block_dim:
                self.launch(c + self.slots)


# -- the record -------------------------------------------------------------------------------

def _summary(eng, costs, kinds, target, extra: dict) -> dict:
    """The record of a run from the engine's state (engine.Engine, or native.Result)."""
    events = _event_arrays(eng)
    runs = extra.get("tasks", extra.get("clusters", []))
    last = extra.get("last")
    if last is None and runs:
        last = max(r[-1] for r in runs)
    end = max([costs.launch] + ([float(events[3].max())] if events[3].size else []) +
              ([last] if runs else []))
    span = max(1e-9, end - costs.launch)
    used = sorted({c for c in range(len(kinds)) if any(eng.busy[c])})
    util = {p: max((eng.busy[c][i] for c in used), default=0.0) / span
            for i, p in enumerate(PIPES)}
    hbm = (eng.hbm_read + eng.hbm_write) / (costs.hbm * span)
    l2 = (eng.l2_hit_bytes + eng.l2_write_bytes) / (costs.l2_bw * span) if costs.l2_bw else 0.0
    pool = {**util, "HBM": hbm, "L2": l2}
    top = max(pool, key=lambda k: (pool[k], k == "HBM"))
    clock = costs.clock_hz
    return {
        "target": target.name, "clock_ghz": clock / 1e9,
        "cycles": int(round(end)), "us": round(end / clock * 1e6, 3),
        "launch_cycles": int(round(costs.launch)),
        "utilisation": {k: round(v, 4) for k, v in pool.items()},
        "bound": top if pool[top] >= BOUND_FLOOR else "latency",
        "busiest": top,
        "hbm_bytes": [int(eng.hbm_read), int(eng.hbm_write)],
        "l2_hit_bytes": int(eng.l2_hit_bytes),
        "l2_write_bytes": int(eng.l2_write_bytes),
        "pipes": list(PIPES),
        "busy": [[c, kinds[c]] + [int(round(b)) for b in eng.busy[c]] for c in used],
        **_timeline(events, _flow_arrays(eng), eng.nevents, eng.nkept),
        "programs": [[p.attrs["name"], [op.name for op in ops]]
                     for p, ops in zip(eng.programs, eng.ops)],
        **({"tasks": extra["tasks"]} if "tasks" in extra else {}),
        **({"clusters": extra["clusters"], "slots": extra["slots"]}
           if "clusters" in extra else {}),
    }


def _event_arrays(eng) -> tuple:
    """(core, pipe, start, end, program, op) arrays of the kept events."""
    import numpy as np
    if isinstance(eng.events, tuple):
        return eng.events
    cols = list(zip(*eng.events)) or [()] * 6
    return tuple(np.array(c, dt) for c, dt in zip(cols, (np.int32, np.int32, np.float64,
                                                           np.float64, np.int32, np.int32)))


def _flow_arrays(eng) -> tuple:
    import numpy as np
    if isinstance(eng.flows, tuple):
        return eng.flows
    pairs = np.array(eng.flows, np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _timeline(events: tuple, flows: tuple, nevents: int, nkept: int) -> dict:
    """The kept events, sorted, and the flags between them as pairs of their indices."""
    import numpy as np
    core, pipe, start, end, prog, op = events
    cols = [core.astype(np.int64), pipe.astype(np.int64), start.astype(np.int64),
            end.astype(np.int64), prog.astype(np.int64), op.astype(np.int64)]
    order = np.lexsort(cols[::-1])
    where = np.empty(order.size, np.int64)
    where[order] = np.arange(order.size)
    a, b = where[flows[0]], where[flows[1]]
    forder = np.lexsort((b, a))
    return {"events": np.stack(cols, 1)[order].tolist() if order.size else [],
            "events_total": nevents, "events_dropped": nkept - order.size,
            "flows": np.stack([a, b], 1)[forder].tolist() if a.size else []}
