"""A Pro kernel's C (codegen/pro_c.py, carried by its code-level document) compiled, loaded
and launched: the second execution pypto-run compares the Pro runner with.

The source is compiled with the runtime of Tensor mode (rt.c, its worker pool: the same
threads, the same `--threads` / `threads=` setting; compiler.compile_shared: cached by
content, verified before it is loaded) and run with `pypto_pro_run(block_dim, threads, T,
S, F, &cluster, t_start, t_end, t_core, &ntasks)`; an error index comes back as the
instruction's op file line. Each run's per-task start, end and worker (one task per
cluster; per worker share for a grid-wide sync) are kept in `last_events` for the run
record ([0, task, worker, start ns, end ns], the shape of Tensor mode's events).
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from ..errors import PyptoError
from ..ir.core import Loc
from .compiler import compile_shared, runtime_source
from .pro_debug import NativeLog, native_stop

ERR_OPS = ("?", "tile", "tload", "tstore", "cross_set", "cross_wait", "tinsert",
           "simt_index", "simt_div", "simt_step", "simt_oom")        # codegen/pro_c.ERR_OPS
WHAT = {"simt_index": "a SIMT element index outside its tensor or tile",
        "simt_div": "a SIMT integer division by zero", "simt_step": "a SIMT loop step <= 0",
        "simt_oom": "no memory for a SIMT launch's registers","tile": "a tile outside its buffer", "tload": "a load outside its tensor",
        "tstore": "a store outside its tensor", "cross_set": "an event id outside 0-15",
        "cross_wait": "an event id outside 0-15", "tinsert": "an insert outside its tile"}


class ProNative:
    def __init__(self, doc, source: str):
        t0 = time.perf_counter()
        path, cached = compile_shared(source + "\n" + runtime_source(), sanitize=False)
        self.compile_info = {"cached": cached, "seconds": round(time.perf_counter() - t0, 3)}
        self.lib = ctypes.CDLL(path)
        self.fn = self.lib.pypto_pro_run
        self.fn.restype = ctypes.c_int
        self.doc = doc
        self.last_events: list = []

    def __call__(self, arrays: dict, env: dict, block_dim: int, threads: int,
                 debug=None) -> float:
        """debug: a pro_debug.Debug for the printf and dump_data records (None drops
        them)."""
        from ..ir.pro_ops import grid_wide
        from .pro_exec import ProRunError, grid_limit
        doc = self.doc
        if not isinstance(block_dim, int) or block_dim < 1:
            raise ProRunError(f"block_dim must be a positive int, not {block_dim!r}")
        if grid_wide(doc):
            grid_limit(doc, block_dim)
        from .pro_exec import serial
        if serial(doc):            # atomic-add stores: clusters in order (pro_exec.serial)
            threads = 1
        names = [n for n, _ in doc.attrs["pro"]["scalars"]]
        vals = {**env, "block_num": block_dim}
        S = np.array([int(vals[n]) for n in names] or [0], np.int64)
        F = np.array([float(vals[n]) for n in names] or [0.0], np.float64)
        params = doc.attrs["params"]
        T = (ctypes.c_void_p * max(1, len(params)))(*[arrays[p].ctypes.data for p in params])
        cluster, ntasks = ctypes.c_int64(0), ctypes.c_int64(0)
        t_start, t_end = (np.zeros(block_dim, np.int64) for _ in range(2))
        t_core = np.zeros(block_dim, np.int32)
        ptr = ctypes.c_void_p
        log = NativeLog(self.lib, block_dim) if hasattr(self.lib, "pypto_pro_debug_begin") \
            else None
        t0 = time.perf_counter()
        rc = self.fn(ctypes.c_int64(block_dim), ctypes.c_int(threads), T,
                     S.ctypes.data_as(ptr), F.ctypes.data_as(ptr), ctypes.byref(cluster),
                     t_start.ctypes.data_as(ptr), t_end.ctypes.data_as(ptr),
                     t_core.ctypes.data_as(ptr), ctypes.byref(ntasks))
        wall = time.perf_counter() - t0
        stops = log.take(self.doc, debug) if log is not None else []
        if rc:
            exc = native_stop(stops, cluster.value) if rc > 0 else None
            raise exc or self.error(rc, cluster.value)
        self.last_events = [[0, i, int(t_core[i]), int(t_start[i]), int(t_end[i])]
                            for i in range(ntasks.value)]
        return wall

    def error(self, rc: int, cluster: int) -> PyptoError:
        if rc == -2 and cluster < 0:
            return PyptoError("C backend: a grid-wide sync (sync_all or INTER_BLOCK) "
                              "deadlocked")
        if rc == -2:
            return PyptoError(f"C backend: cluster {cluster} deadlocked on a cross-core wait")
        if rc < 0:
            return PyptoError("C backend: out of memory for the cores' buffers")
        op = ctypes.c_int(0)
        line = self.lib.pypto_pro_error(ctypes.c_int(rc), ctypes.byref(op))
        what = WHAT.get(ERR_OPS[op.value] if 0 <= op.value < len(ERR_OPS) else "?", "an error")
        return PyptoError(f"C backend: {what} in cluster {cluster}",
                          Loc(self.doc.attrs.get("file", "?"), line))
