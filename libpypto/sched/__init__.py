"""MPMD list scheduler: place task instances on a target's cores with predicted times.

Cost model (first order, from hardware-model.md section 8): a task instance runs its
program's instructions one after another; a copy costs a set-up plus bytes over the path's
bandwidth, a vector instruction a fixed start-up plus bytes over the vector width, a matmul
the cube start-up plus 2*M*N*K over the cube's FLOP/cycle. Loops multiply by their trip
counts. Each task adds the target's dispatch overhead. Shared HBM bandwidth is not modelled
here (that is the simulator's job), so predictions are optimistic for memory-bound graphs.
"""
from __future__ import annotations

import heapq

from ..analysis.expand import expand
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
    attrs = {"target": target.name, "cores": cores, "order": list(range(len(tasks))),
             "bindings": dict(sorted((env or {}).items())), "instances": None}
    symbols = set(doc.attrs.get("symbols", {}))
    if env is not None and symbols <= set(env):
        _place(doc, tasks, programs, target, env, lanes, attrs)
    doc.body.append(Op("schedule", [], [], attrs, [], None))
    return doc


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
