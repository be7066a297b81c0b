"""Executables: a code-level graph loaded once, run many times (the JIT and benchmarks).

For each binding of the symbolic sizes the task expansion, dependency tables and workspaces
are built once and kept; a call then only fills in the tensor pointers and launches.
"""
from __future__ import annotations

import ctypes
import heapq
import threading
import time

import numpy as np

from ..errors import PyptoError
from ..analysis.expand import Expansion, expand


class Plan:
    """Everything a launch needs for one binding, except the parameter arrays."""

    def __init__(self, exp: Expansion):
        self.exp = exp
        n = exp.n
        launch_of = exp.launch_of.astype(np.int64)
        # tensor table: per task op, its gm ops; pointers are refreshed per call
        by_value = {op.result: op for op in exp.gms}
        self.task_gms = [[by_value[v] for v in t.operands] for t in exp.tasks]
        toff, pos = [], 0
        for gms in self.task_gms:
            toff.append(pos)
            pos += len(gms)
        self.nptrs = max(1, pos)
        task_of_launch = np.asarray([lc.task for lc in exp.launches] or [0], np.int64)
        self.tensor_off = np.ascontiguousarray(
            np.asarray(toff or [0], np.int64)[task_of_launch[launch_of]] if n
            else np.zeros(1, np.int64))
        self.scalars = np.ascontiguousarray(
            np.concatenate([lc.scalars.ravel() for lc in exp.launches]) if n else np.zeros(1),
            np.int64)
        soff = np.zeros(max(1, n), np.int64)
        p = 0
        for lc in exp.launches:
            w = lc.scalars.shape[1]
            soff[lc.first:lc.first + lc.n] = p + np.arange(lc.n, dtype=np.int64) * w
            p += lc.scalars.size
        self.scalar_off = soff
        index = {pr.attrs["name"]: i for i, pr in enumerate(exp.programs)}
        prog_of_task = np.asarray([index[t.attrs["program"]] for t in exp.tasks] or [0], np.int32)
        self.prog = np.ascontiguousarray(prog_of_task[task_of_launch[launch_of]] if n
                                         else np.zeros(1, np.int32))
        self.npred = np.asarray([len(ps) for ps in exp.preds] or [0], np.int32)
        succ = [[] for _ in range(n)]
        for i, ps in enumerate(exp.preds):
            for q in ps:
                succ[q].append(i)
        self.succ_off = np.zeros(n + 1, np.int64)
        self.succ_off[1:] = np.cumsum([len(s) for s in succ]) if n else []
        self.succ = np.asarray([x for s in succ for x in s] or [0], np.int64)
        self.workspaces = {op: np.zeros(exp.shapes[op], op.result.type.dtype.np)
                           for op in exp.gms if "param" not in op.attrs}

    def instance(self, i: int) -> tuple:
        """(task index, index within its launch) of instance i."""
        lc = self.exp.launches[int(self.exp.launch_of[i])]
        return lc.task, i - lc.first


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


class NativeExecutable:
    """A compiled shared library of programs plus the runtime, with plans per binding."""

    def __init__(self, doc, lib_path: str):
        self.doc = doc
        self.lib = ctypes.CDLL(lib_path)
        self.fn = self.lib.pypto_run
        self.fn.restype = ctypes.c_int
        self.plans: dict = {}

    def plan(self, env: dict) -> Plan:
        key = tuple(sorted(env.items()))
        p = self.plans.get(key)
        if p is None:
            p = self.plans[key] = Plan(expand(self.doc, env))
        return p

    def __call__(self, plan: Plan, arrays: dict, nthreads: int) -> dict:
        exp = plan.exp
        n = exp.n
        ptrs = (ctypes.c_void_p * plan.nptrs)()
        k = 0
        for gms in plan.task_gms:
            for op in gms:
                a = arrays[op.attrs["param"]] if "param" in op.attrs else plan.workspaces[op]
                ptrs[k] = a.ctypes.data
                k += 1
        npred = plan.npred.copy()
        t_start, t_end = np.zeros(max(1, n), np.int64), np.zeros(max(1, n), np.int64)
        t_core = np.zeros(max(1, n), np.int32)
        t0 = time.perf_counter()
        rc = self.fn(ctypes.c_int64(n), _ptr(plan.prog), ptrs, _ptr(plan.tensor_off),
                     _ptr(plan.scalars), _ptr(plan.scalar_off), _ptr(npred),
                     _ptr(plan.succ_off), _ptr(plan.succ), ctypes.c_int(nthreads),
                     _ptr(t_start), _ptr(t_end), _ptr(t_core))
        wall = time.perf_counter() - t0
        if rc != 0:
            raise PyptoError("the runtime could not start its worker threads or arenas")
        return {"start_ns": t_start[:n], "end_ns": t_end[:n], "core": t_core[:n],
                "wall_s": wall}


class NumpyExecutable:
    """Programs run instruction by instruction on numpy (npexec.py), by a Python thread pool
    in dependency order. No source text is executed."""

    def __init__(self, doc):
        from .npexec import ProgramRunner
        self.doc = doc
        self.fns = {p.attrs["name"]: ProgramRunner(p) for p in doc.body if p.name == "program"}
        self.plans: dict = {}

    plan = NativeExecutable.plan

    def __call__(self, plan: Plan, arrays: dict, nthreads: int) -> dict:
        exp = plan.exp
        prog_fns = self.fns
        per_task = [[arrays[op.attrs["param"]] if "param" in op.attrs else plan.workspaces[op]
                     for op in gms] for gms in plan.task_gms]
        n = exp.n
        t_start, t_end = np.zeros(n, np.int64), np.zeros(n, np.int64)
        t_core = np.zeros(n, np.int32)
        npred = [len(p) for p in exp.preds]
        succ = [[] for _ in range(n)]
        for i, ps in enumerate(exp.preds):
            for q in ps:
                succ[q].append(i)
        ready = [i for i in range(n) if npred[i] == 0]
        heapq.heapify(ready)
        lock = threading.Condition()
        state = {"remaining": n, "error": None}
        base = time.perf_counter_ns()

        def worker(core: int) -> None:
            while True:
                with lock:
                    while not ready and state["remaining"] > 0 and state["error"] is None:
                        lock.wait()
                    if state["remaining"] == 0 or state["error"] is not None:
                        return
                    i = heapq.heappop(ready)
                lc = exp.launches[int(exp.launch_of[i])]
                ti = lc.task
                fn = prog_fns[exp.tasks[ti].attrs["program"]]
                t_start[i] = time.perf_counter_ns() - base
                try:
                    fn(per_task[ti], [int(x) for x in lc.scalars[i - lc.first]])
                except Exception as exc:   # report, then stop every worker
                    with lock:
                        state["error"] = exc
                        lock.notify_all()
                    return
                t_end[i] = time.perf_counter_ns() - base
                t_core[i] = core
                with lock:
                    for s in succ[i]:
                        npred[s] -= 1
                        if npred[s] == 0:
                            heapq.heappush(ready, s)
                    state["remaining"] -= 1
                    lock.notify_all()

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(c,)) for c in range(1, max(1, nthreads))]
        for th in threads:
            th.start()
        worker(0)
        for th in threads:
            th.join()
        wall = time.perf_counter() - t0
        if state["error"] is not None:
            exc = state["error"]
            raise PyptoError(f"numpy backend failed: {type(exc).__name__}: {exc}") from exc
        return {"start_ns": t_start, "end_ns": t_end, "core": t_core, "wall_s": wall}
