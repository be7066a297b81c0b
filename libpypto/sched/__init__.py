"""MPMD list scheduler: place task instances on a target's cores with predicted times.

Cost model: the simulator's cost tables (libpypto/targets/costs.py, `program_cost`). A
task instance costs the target's dispatch overhead plus the sum of its pipes' busy time,
every instruction costed as the simulator costs it (vector by op class and dtype, cube by
the fractal formula, DMA set-up, L2 miss latency and bytes over the path's per-core rate),
loops at their trip counts, GM boxes at their valid size where the launch's scalars fix it
(full tiles where the grid index does: one cost per launch, so the cost stays linear in
the instances). Targets without the simulator's `[vector]` table (the host) get one from
their first-order numbers (costs.schedule_costs). HBM is a shared server: the GM bytes of
the instances flow through it one after another at `hbm_total`, and an instance whose
bytes wait for it ends that much later (first order; the simulator shares it in 64-cycle
buckets and adds the L2). A graph that reads tensor elements at run time (data-dependent
loop bounds or offsets) is ordered but not placed: its instances depend on data no
schedule has; it says so.

Placement: list scheduling by critical-path priority. Whenever a core is free, the ready
instance (all its predecessors ended) with the longest path to the end of the graph (its
own cost plus the longest chain of its successors') starts on the lowest free core of a
kind that runs it; equal paths go to the lower instance id (instances are numbered in task
order), so the schedule is deterministic. `place(..., priority="fifo")` is the order they
became ready instead (for comparison: tests show where it is worse).

The task order is a topological order of the task DAG (networkx; the graph has a node per
task, so it stays small whatever the sizes). With sizes bound, the schedule also records
what no schedule can beat: the critical path over the instances (numpy-sized work stays in
plain loops over the expansion), the work of each core kind over its cores and the GM
bytes over the HBM bandwidth; the largest of the three is the lower bound, and `bound`
names it.
"""
from __future__ import annotations

import heapq

from ..analysis.expand import expand, reads_of
from ..analysis.work import formal_scalars
from ..errors import UsageError
from ..ir.core import Document, Op, copy_doc
from ..targets.costs import program_cost, schedule_costs
from ..analysis.native import no_gc
from . import native

CORE_KINDS = {"vector": ("vector", "mixed"), "cube": ("cube", "mixed"), "mixed": ("mixed",)}


def schedule(doc: Document, target, env: dict | None, instance_costs=None) -> Document:
    """Order the tasks and, when every size is bound, place each instance on a core.
    instance_costs: a function of an expansion giving each instance's costs as the
    simulator times it alone (sim/alone.py; the driver passes it for targets the simulator
    takes); without it, program_cost's sum of pipes per launch."""
    doc = copy_doc(doc, "sched")
    doc.body = [op for op in doc.body if op.name != "schedule"]
    tasks = [op for op in doc.walk() if op.name == "task"]
    programs = {op.attrs["name"]: op for op in doc.body if op.name == "program"}
    cores = target.cores()
    lanes = _lanes(cores)
    for t in tasks:
        kind = core_kind(programs[t.attrs["program"]], cores)
        if not any(k in cores for k in CORE_KINDS[kind]):
            built = doc.attrs.get("target", {}).get("name", "?")
            raise UsageError(f"target {target.name} has no core that runs {kind} programs "
                             f"(cores: {', '.join(cores)}); the graph was lowered for "
                             f"{built}: lower it with --target {target.name}")
    attrs = {"target": target.name, "cores": cores, "order": task_order(doc),
             "bindings": dict(sorted((env or {}).items())), "instances": None}
    symbols = set(doc.attrs.get("symbols", {}))
    reads = reads_of(doc)
    if reads:                   # loop bounds and offsets known only from the data
        attrs["data_dependent"] = reads
    elif env is not None and symbols <= set(env):
        _place(doc, tasks, programs, target, env, lanes, attrs, instance_costs)
    doc.body.append(Op("schedule", [], [], attrs, [], None))
    return doc


def core_kind(prog: Op, cores: dict) -> str:
    """The kind of core a program's instances are placed on here. A mixed program for a
    cluster (ir/mix_ops.py: sections) on a target without mixed cores is placed on the
    cluster's cube core and costed as the sum of all its parts (the simulator times the
    parts on their own cores, overlapped)."""
    from ..ir.mix_ops import clustered
    kind = prog.attrs["core"]
    return "cube" if kind == "mixed" and not cores.get("mixed") and clustered(prog) else kind


def task_graph(doc: Document):
    """The task-level DAG (networkx): a node per task op in walk order, an edge from each
    task to the later tasks of its region that must (partly) follow it ("after"), from the
    tasks before a loop or branch to the tasks inside it, and from those to the tasks after
    it. Edges only run from earlier to later tasks: the graph is acyclic by construction."""
    import networkx as nx
    g = nx.DiGraph()
    count = [0]

    def region(ops, before: list) -> list:
        local: list = []           # global ids of this region's tasks, in order
        last = list(before)
        for op in ops:
            if op.name == "task":
                i = count[0]
                count[0] += 1
                g.add_node(i, program=op.attrs["program"])
                g.add_edges_from((p, i) for p in before)
                g.add_edges_from((local[a], i) for a in op.attrs["after"] if a < len(local))
                local.append(i)
                last.append(i)
            elif op.regions:
                inner = [x for r in op.regions for x in region(r, last)]
                before, last = before + last + inner, last + inner
        return local

    region(doc.body, [])
    return g


def task_order(doc: Document) -> list[int]:
    """Tasks in an order their dependences allow: topological, ties to the earlier task."""
    import networkx as nx
    return list(nx.lexicographical_topological_sort(task_graph(doc)))


def _lanes(cores: dict) -> list[str]:
    """Core kind of each core id: ids run over the kinds in a fixed order."""
    out = []
    for kind in ("cube", "vector", "mixed"):
        out += [kind] * cores.get(kind, 0)
    return out


def _place(doc, tasks, programs, target, env, lanes, attrs, instance_costs=None) -> None:
    import numpy as np
    costs = schedule_costs(target)
    exp = expand(doc, env)
    kinds = [core_kind(programs[t.attrs["program"]], target.cores()) for t in tasks]
    lo = exp.launch_of
    if instance_costs is not None:          # the simulator's, per instance
        c = instance_costs(exp)
        dur, gmb, alone = c["cycles"], c["hbm_bytes"], c["gm_cycles"]
        nbytes, floor = float(c["gm_bytes"].sum()), c["hbm_floor"]
        cut = [lc.first for lc in exp.launches]
        per = [(float(x),) for x in np.maximum.reduceat(dur, cut)] if exp.n else []
    else:
        per = [task_cost(programs[tasks[lc.task].attrs["program"]], lc.scalars, costs)
               for lc in exp.launches]
        col = lambda k: np.array([p[k] for p in per] or [0.0], np.float64)[lo]   # noqa: E731
        dur, gmb, alone = col(0), col(1), col(2)
        nbytes = floor = sum(p[1] * lc.n for p, lc in zip(per, exp.launches))
    kind = [kinds[lc.task] for lc in exp.launches]
    start, end, core, b = _timeline(exp, dur, kind, lanes, gmb, alone, costs.hbm,
                                    target.cores(), floor)
    us = 1e6 / costs.clock_hz
    task_l = np.array([lc.task for lc in exp.launches] or [0], np.int64)
    first = np.array([lc.first for lc in exp.launches] or [0], np.int64)[lo]
    task_of = task_l[lo]
    with no_gc():
        attrs["instances"] = list(map(list, zip(
            task_of.tolist(), (np.arange(exp.n, dtype=np.int64) - first).tolist(),
            core.tolist(), round3(start * us), round3(end * us))))
    attrs["launch_cost_us"] = [round(p[0] * us, 3) for p in per]
    attrs["makespan_us"] = round(float(end.max()) * us, 3) if exp.n else 0.0
    path = []
    for i in b.pop("path"):
        t = int(task_of[i])
        if not path or path[-1] != t:
            path.append(t)
    attrs.update({k: round(v * us, 3) if k.endswith("_us") else v for k, v in b.items()})
    attrs["gm_bytes"] = int(round(nbytes))
    attrs["critical_tasks"] = path


def _timeline(exp, dur, kind_l, lanes, gmb, alone, hbm, cores, nbytes) -> tuple:
    """(start, end, core) arrays and the bounds of the instances of exp: in C
    (sched/native.py) when it can be built, else with place() and bounds()."""
    import numpy as np
    lo = exp.launch_of
    if native.available():
        code = np.array([native.KIND_CODE[k] for k in kind_l] or [0], np.int32)[lo]
        try:
            start, end, core = native.place(dur, exp.pred_ptr, exp.pred_idx, code, lanes, gmb,
                                            alone, hbm)
        except ValueError as e:
            raise UsageError(f"{e.args[0]} task instances cannot start (a dependence "
                             f"cycle)") from None
        finish, via, work = native.sweep(dur, exp.pred_ptr, exp.pred_idx, code)
        present = {k: float(work[native.KIND_CODE[k]]) for k in kind_l}
        return start, end, core, _bounds_from(finish, via, present, cores, nbytes, hbm)
    kind = [kind_l[x] for x in lo.tolist()]
    d = dur.tolist()
    gm = list(zip(gmb.tolist(), alone.tolist()))
    start, end, core = place(d, exp.preds, kind, lanes, gm, hbm)
    b = bounds(d, exp.preds, kind, cores, nbytes, hbm)
    return np.array(start), np.array(end), np.array(core, np.int64), b


def round3(x) -> list:
    """[round(v, 3) for v in x] for a float array, with whole-array operations: v * 1000
    rounded to the nearest integer, divided by 1000, is what round gives (the nearest
    double to the correctly rounded decimal) unless v * 1000 lies near a half, where
    rounding the product could differ from rounding the exact value: those few are
    rounded by round itself."""
    import numpy as np
    x = np.asarray(x, np.float64)
    m = x * 1000.0
    out = (np.rint(m) / 1000.0).tolist()
    risky = (np.abs(m - np.floor(m) - 0.5) < 1e-3) | ~(np.abs(m) < 2.0 ** 40)
    for j in np.flatnonzero(risky).tolist():
        out[j] = round(float(x[j]), 3)
    return out


def task_cost(prog: Op, scalars, costs) -> tuple:
    """(cycles, GM bytes, GM transfer cycles) of one instance of a launch of prog, its
    scalars from the launch's S rows: the target's dispatch overhead plus
    targets.costs.program_cost (the simulator's formulas; the sum of the pipes' busy time)."""
    pc = program_cost(prog, formal_scalars(prog, scalars), costs)
    return costs.dispatch + pc.cycles, pc.gm_bytes, pc.gm_cycles


def bottom_levels(dur: list, preds: list) -> list:
    """Per instance, the longest path from its start to the end of the graph: its own
    duration plus the longest of its successors'. Predecessors have lower ids (the
    expansion numbers instances in task order), so one backward sweep is enough."""
    bl = list(dur)
    for i in range(len(dur) - 1, -1, -1):
        b = bl[i]
        for p in preds[i]:
            if dur[p] + b > bl[p]:
                bl[p] = dur[p] + b
    return bl


def place(dur: list, preds: list, kind: list, lanes: list, gm: list | None = None,
          hbm: float | None = None, priority: str = "critical-path") -> tuple:
    """List-schedule instances on cores: (start, end, core) per instance.

    dur[i]: cycles of instance i alone; preds[i]: the lower ids it waits for; kind[i]: the
    program's core kind (CORE_KINDS says which cores run it); lanes: the kind of each core;
    gm[i]: (GM bytes, cycles of its GM transfers alone), shared at hbm bytes per cycle:
    the bytes flow through the HBM one instance after another, and an instance ends later
    by as much as its bytes finish after its own transfers would have. priority:
    "critical-path" (longest path to the end first, then the lower id) or "fifo" (the
    order the instances became ready, then the lower id).

    The ready queues hold ranks (ints): the instances sorted once by priority, so a heap
    step compares two ints (FIFO, whose order depends on the times, holds tuples)."""
    n = len(dur)
    if priority == "critical-path":
        neg = [-b for b in bottom_levels(dur, preds)]
        order = sorted(range(n), key=neg.__getitem__)       # stable: ties by id
        rank = [0] * n
        for r, i in enumerate(order):
            rank[i] = r
        key = lambda i, t: rank[i]          # noqa: E731
        inst = order.__getitem__
    elif priority == "fifo":
        key = lambda i, t: (t, i)           # noqa: E731
        inst = lambda k: k[1]               # noqa: E731
    else:
        raise ValueError(f"unknown priority {priority!r}")
    waiting = [len(p) for p in preds]
    succ: dict = {}
    for i, ps in enumerate(preds):
        for p in ps:
            succ.setdefault(p, []).append(i)
    free = {k: [c for c, kk in enumerate(lanes) if kk == k] for k in set(lanes)}
    ready: dict = {k: [] for k in CORE_KINDS}
    for i in range(n):
        if not waiting[i]:
            ready[kind[i]].append(key(i, 0.0))
    for q in ready.values():
        heapq.heapify(q)
    queues = [(ready[pk], [free[k] for k in CORE_KINDS[pk] if k in free])
              for pk in CORE_KINDS if any(x == pk for x in set(kind))]
    out = ([0.0] * n, [0.0] * n, [0] * n)
    running: list = []
    hbm_free, t, done = 0.0, 0.0, 0
    push, pop = heapq.heappush, heapq.heappop
    while done < n:
        hbm_free = _assign(queues, inst, running, t, dur, gm, hbm, hbm_free, out)
        if not running:
            raise UsageError(f"{n - done} task instances cannot start (a dependence cycle)")
        t = running[0][0]
        while running and running[0][0] == t:
            _, c, pool, i = pop(running)
            push(pool, c)
            done += 1
            for j in succ.get(i, ()):
                waiting[j] -= 1
                if not waiting[j]:
                    push(ready[kind[j]], key(j, t))
    return out


def _assign(queues, inst, running, t, dur, gm, hbm, hbm_free, out) -> float:
    """Start ready instances on free cores at time t, highest priority first (the lowest
    free core of the kinds that run it); the HBM server's next free time."""
    start, end, core = out
    push, pop = heapq.heappush, heapq.heappop
    while True:
        best = None
        for q, pools in queues:
            if q and (best is None or q[0] < best[0][0]) and any(pools):
                best = (q, pools)
        if best is None:
            return hbm_free
        q, pools = best
        i = inst(pop(q))
        pool = pools[0] if len(pools) == 1 else min((p for p in pools if p),
                                                    key=lambda p: p[0])
        c = pop(pool)
        e = t + dur[i]
        if gm is not None and hbm:
            nbytes, alone = gm[i]
            if nbytes > 0:
                hbm_free = (hbm_free if hbm_free > t else t) + nbytes / hbm
                if hbm_free > t + alone:
                    e += hbm_free - (t + alone)
        start[i], end[i], core[i] = t, e, c
        push(running, (e, c, pool, i))


def bounds(dur: list, preds: list, kind: list, cores: dict, gm_bytes: float = 0.0,
           hbm: float | None = None) -> dict:
    """What no schedule can beat: the critical path (every instance as early as
    its predecessors allow, on unlimited cores), each core kind's work spread over the
    cores that run it (`work_us`, the largest), and gm_bytes (all GM bytes moved) over the
    HBM bandwidth (`bandwidth_us`); the `_us` values are in the units of dur (cycles when
    _place calls it); `lower_bound_us` is the largest and `bound` names it ("critical
    path", "work (KIND)" or "bandwidth"); `path`: the instances along the critical path.
    The path is found over instances: an edge between two tasks need not join every
    instance of the second to the first, so a path of tasks alone would not bound
    anything."""
    n = len(dur)
    finish, via = list(dur), [-1] * n
    for i, ps in enumerate(preds):
        if ps:
            ready, via[i] = max((finish[p], p) for p in ps)
            finish[i] += ready
    work: dict = {}
    for i in range(n):
        work[kind[i]] = work.get(kind[i], 0.0) + dur[i]
    return _bounds_from(finish, via, work, cores, gm_bytes, hbm)


def _bounds_from(finish, via, work: dict, cores: dict, gm_bytes, hbm) -> dict:
    """bounds() from its sweep: each instance's earliest finish, the predecessor it waited
    for, the work of each core kind (lists, or the arrays of sched/native.py)."""
    n = len(finish)
    lanes = {k: sum(cores.get(c, 0) for c in CORE_KINDS[k]) for k in work}
    spread = {k: w / lanes[k] for k, w in work.items() if lanes[k]}
    wk = max(sorted(spread), key=lambda k: spread[k], default=None)
    arrays = not isinstance(finish, list)
    if not n:
        i, cp = -1, 0.0
    elif arrays:            # argmax: the first of the latest, as the key below
        i = int(finish.argmax())
        cp = float(finish[i])
    else:
        i = max(range(n), key=lambda j: (finish[j], -j))
        cp = max(finish)
    path = []
    while i >= 0:
        path.append(i)
        i = int(via[i])
    bw = gm_bytes / hbm if gm_bytes and hbm else 0.0
    terms = [(cp, "critical path"), (spread.get(wk, 0.0), f"work ({wk})"), (bw, "bandwidth")]
    lb, name = max(terms, key=lambda x: x[0])     # ties: the first (max keeps the first)
    return {"critical_path_us": cp, "work_us": spread.get(wk, 0.0), "bandwidth_us": bw,
            "lower_bound_us": lb, "bound": name, "path": path[::-1]}
