"""MPMD list scheduler: place task instances on a target's cores with predicted times.

Cost model (first order, from hardware-model.md section 8): a task instance runs its
program's instructions one after another; a copy costs a set-up plus bytes over the path's
bandwidth, a vector instruction a fixed start-up plus bytes over the vector width, a matmul
the cube start-up plus 2*M*N*K over the cube's FLOP/cycle. Loops multiply by their trip
counts. Each task adds the target's dispatch overhead. Shared HBM bandwidth is not modelled
here (that is the simulator's job), so predictions are optimistic for memory-bound graphs.
A graph that reads tensor elements at run time (data-dependent loop bounds or offsets) is
ordered but not placed: its instances depend on data no schedule has; it says so.

The task order is a topological order of the task DAG (networkx; the graph has a node per
task, so it stays small whatever the sizes). With sizes bound, the schedule also records
what no schedule can beat: the critical path over the instances (numpy-sized work stays in
plain loops over the expansion) and the work of each core kind over its cores.
"""
from __future__ import annotations

import heapq

from ..analysis.expand import expand, reads_of
from ..analysis.work import formal_scalars, trip_count
from ..errors import UsageError
from ..ir import expr as E
from ..ir.core import Document, Op, copy_doc
from ..ir.types import TensorType

CORE_KINDS = {"vector": ("vector", "mixed"), "cube": ("cube", "mixed"), "mixed": ("mixed",)}


def schedule(doc: Document, target, env: dict | None) -> Document:
    """Order the tasks and, when every size is bound, place each instance on a core."""
    doc = copy_doc(doc, "sched")
    doc.body = [op for op in doc.body if op.name != "schedule"]
    tasks = [op for op in doc.walk() if op.name == "task"]
    programs = {op.attrs["name"]: op for op in doc.body if op.name == "program"}
    cores = target.cores()
    lanes = _lanes(cores)
    for t in tasks:
        kind = programs[t.attrs["program"]].attrs["core"]
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
        _place(doc, tasks, programs, target, env, lanes, attrs)
    doc.body.append(Op("schedule", [], [], attrs, [], None))
    return doc


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


def _place(doc, tasks, programs, target, env, lanes, attrs) -> None:
    exp = expand(doc, env)
    costs = [task_cost(programs[tasks[lc.task].attrs["program"]], lc.scalars, target)
             for lc in exp.launches]
    free = {k: [(0.0, i) for i, kind in enumerate(lanes) if kind == k] for k in set(lanes)}
    for h in free.values():
        heapq.heapify(h)
    end = [0.0] * exp.n
    rows = []
    for inst in range(exp.n):
        li = int(exp.launch_of[inst])
        lc = exp.launches[li]
        kind = programs[tasks[lc.task].attrs["program"]].attrs["core"]
        ready = max((end[p] for p in exp.preds[inst]), default=0.0)
        best = None
        for k in CORE_KINDS[kind]:
            if free.get(k):
                t_free, core = free[k][0]
                start = max(ready, t_free)
                if best is None or (start, core) < (best[0], best[2]):
                    best = (start, k, core)
        start, k, core = best
        heapq.heappop(free[k])
        finish = start + costs[li]
        heapq.heappush(free[k], (finish, core))
        end[inst] = finish
        rows.append([lc.task, inst - lc.first, core, round(start * 1e6, 3), round(finish * 1e6, 3)])
    attrs["instances"] = rows
    attrs["launch_cost_us"] = [round(c * 1e6, 3) for c in costs]
    attrs["makespan_us"] = round(max(end, default=0.0) * 1e6, 3)
    attrs.update(_bounds(exp, costs, [programs[t.attrs["program"]].attrs["core"] for t in tasks],
                         target.cores()))


def _bounds(exp, costs: list, kinds: list, cores: dict) -> dict:
    """What no schedule can beat: the critical path (every instance as early as its
    predecessors allow, on unlimited cores) and the work of each core kind spread over its
    cores; and the tasks on the critical path. The path is found over instances: an edge
    between two tasks need not join every instance of the second to the first, so a path of
    tasks alone would not bound anything."""
    n = exp.n
    cost = [costs[int(exp.launch_of[i])] for i in range(n)]
    finish, via = [0.0] * n, [-1] * n
    for i in range(n):
        ready, via[i] = max(((finish[p], p) for p in exp.preds[i]), default=(0.0, -1))
        finish[i] = ready + cost[i]
    work: dict = {}
    for i in range(n):
        kind = kinds[exp.launches[int(exp.launch_of[i])].task]
        work[kind] = work.get(kind, 0.0) + cost[i]
    lanes = {k: sum(cores.get(c, 0) for c in CORE_KINDS[k]) for k in work}
    spread = max((w / lanes[k] for k, w in work.items() if lanes[k]), default=0.0)
    path, i = [], max(range(n), key=lambda j: (finish[j], -j)) if n else -1
    while i >= 0:
        t = exp.launches[int(exp.launch_of[i])].task
        if not path or path[-1] != t:
            path.append(t)
        i = via[i]
    cp = max(finish, default=0.0)
    return {"critical_path_us": round(cp * 1e6, 3), "lower_bound_us": round(max(cp, spread) * 1e6, 3),
            "critical_tasks": path[::-1]}


def task_cost(prog: Op, scalars, target) -> float:
    """Predicted seconds for one instance of a launch (its program at full tiles)."""
    formal = formal_scalars(prog, scalars)
    clock = float(target["clock_ghz"]) * 1e9
    comp = target["compute"]
    total = float(target.data.get("task_overhead_us", 0.0)) * 1e-6

    def walk(ops, mult: float) -> float:
        t = 0.0
        for op in ops:
            if op.name == "for":
                try:
                    trips = trip_count(op.attrs, formal)
                except E.UnboundSymbol:
                    trips = 1
                t += walk(op.regions[0], mult * trips)
            elif op.name not in ("tile", "arg"):
                t += mult * instr_cost(op, target, clock, comp)
        return t

    return total + walk(prog.regions[0], 1.0)


def instr_cost(op: Op, target, clock: float, comp: dict) -> float:
    n = op.name
    setup = float(comp.get("transfer_setup_cycles", 0)) / clock
    tiles = [v.type for v in op.operands if not isinstance(v.type, TensorType)]
    nbytes = tiles[0].nbytes if tiles else 0
    if n == "tload":
        path = "gm_to_l1" if tiles[0].space == "l1" else "gm_to_ub"
        return setup + nbytes / target.bw(path)
    if n == "tstore":
        path = "l0c_to_gm" if tiles[0].space == "l0c" else "ub_to_gm"
        return setup + nbytes / target.bw(path)
    if n == "textract":
        return nbytes / target.bw("l1_to_l0")
    if n == "tmov" and len(tiles) > 1 and tiles[1].space == "l0c":
        return nbytes / target.bw("l0c_to_ub")
    if n == "tmatmul":
        acc, a, b = tiles
        (m, k), (_, nn) = a.shape, b.shape
        rate = comp["cube_flops_per_cycle"].get(a.dtype.name, min(comp["cube_flops_per_cycle"].values()))
        return (float(comp.get("cube_startup_cycles", 0)) + 2.0 * m * nn * k / rate) / clock
    src_bytes = max((t.nbytes for t in tiles), default=0)
    return (float(comp["vector_op_cycles"]) + src_bytes / float(comp["vector_bytes_per_cycle"])) / clock
