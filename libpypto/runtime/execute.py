"""Run a code-level document: native (emitted C + the thread-pool runtime) or numpy programs."""
from __future__ import annotations

import ctypes
import heapq
import threading
import time

import numpy as np

from ..errors import PyptoError
from ..ir.types import TensorType
from .expand import Expansion, expand


def tensors_for(exp: Expansion, arrays: dict) -> dict:
    """Array of every gm tensor: parameters from arrays, workspaces freshly zeroed."""
    out = {}
    for op in exp.gms:
        t: TensorType = op.result.type
        if "param" in op.attrs:
            out[op] = arrays[op.attrs["param"]]
        else:
            out[op] = np.zeros(exp.shapes[op], t.dtype.np)
    return out


def _task_tensors(exp: Expansion, tensors: dict) -> list[list]:
    by_value = {op.result: op for op in exp.gms}
    return [[tensors[by_value[v]] for v in t.operands] for t in exp.tasks]


def run_native(lib_path: str, exp: Expansion, arrays: dict, nthreads: int) -> dict:
    lib = ctypes.CDLL(lib_path)
    fn = lib.pypto_run
    fn.restype = ctypes.c_int
    tensors = tensors_for(exp, arrays)
    per_task = _task_tensors(exp, tensors)
    n = exp.n
    # tensor pointer table: one row per task (instances of a task share it)
    flat_ptrs, toff = [], []
    for arrs in per_task:
        toff.append(len(flat_ptrs))
        flat_ptrs.extend(a.ctypes.data for a in arrs)
    ptrs = (ctypes.c_void_p * max(1, len(flat_ptrs)))(*flat_ptrs)
    task_of = exp.task_of.astype(np.int64)
    tensor_off = np.asarray(toff, np.int64)[task_of] if n else np.zeros(0, np.int64)
    widths = [s.shape[1] for s in exp.scalars]
    scal = np.concatenate([s.ravel() for s in exp.scalars]) if n else np.zeros(1, np.int64)
    scal = np.ascontiguousarray(scal, np.int64)
    soff = np.zeros(n, np.int64)
    pos = 0
    for ti, s in enumerate(exp.scalars):
        k = s.shape[0]
        soff[exp.first[ti]:exp.first[ti] + k] = pos + np.arange(k, dtype=np.int64) * widths[ti]
        pos += s.size
    prog_index = {p.attrs["name"]: i for i, p in enumerate(exp.programs)}
    prog = np.asarray([prog_index[t.attrs["program"]] for t in exp.tasks], np.int32)[task_of] \
        if n else np.zeros(0, np.int32)
    npred = np.asarray([len(p) for p in exp.preds], np.int32)
    succ_lists = [[] for _ in range(n)]
    for i, ps in enumerate(exp.preds):
        for p in ps:
            succ_lists[p].append(i)
    succ_off = np.zeros(n + 1, np.int64)
    succ_off[1:] = np.cumsum([len(s) for s in succ_lists])
    succ = np.asarray([x for s in succ_lists for x in s] or [0], np.int64)
    t_start, t_end = np.zeros(n, np.int64), np.zeros(n, np.int64)
    t_core = np.zeros(n, np.int32)

    def p(a):
        return a.ctypes.data_as(ctypes.c_void_p)

    prog = np.ascontiguousarray(prog)
    tensor_off = np.ascontiguousarray(tensor_off)
    t0 = time.perf_counter()
    rc = fn(ctypes.c_int64(n), p(prog), ptrs, p(tensor_off), p(scal), p(soff), p(npred),
            p(succ_off), p(succ), ctypes.c_int(nthreads), p(t_start), p(t_end), p(t_core))
    wall = time.perf_counter() - t0
    if rc != 0:
        raise PyptoError("the runtime could not start its worker threads or arenas")
    return {"start_ns": t_start, "end_ns": t_end, "core": t_core, "wall_s": wall}


def run_numpy(source: str, exp: Expansion, arrays: dict, nthreads: int) -> dict:
    ns: dict = {}
    exec(compile(source, "<pypto numpy programs>", "exec"), ns)  # noqa: S102 -- our own code
    prog_fns = {f.__name__: f for f in ns["PROGRAMS"]}
    tensors = tensors_for(exp, arrays)
    per_task = _task_tensors(exp, tensors)
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
            ti = int(exp.task_of[i])
            t = exp.tasks[ti]
            fn = prog_fns[t.attrs["program"]]
            t_start[i] = time.perf_counter_ns() - base
            try:
                fn(per_task[ti], [int(x) for x in exp.scalars[ti][i - exp.first[ti]]])
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


__all__ = ["expand", "run_native", "run_numpy", "tensors_for"]
