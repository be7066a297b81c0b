"""A Pro kernel's C (codegen/pro_c.py, carried by its code-level document) compiled, loaded
and launched: the second execution pypto-run compares the Pro runner with.

The source is compiled like Tensor mode's (compiler.compile_shared: cached by content,
verified before it is loaded) and run with `pypto_pro_run(block_dim, threads, T, S, F,
&cluster)`; an error index comes back as the instruction's op file line.
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from ..errors import PyptoError
from ..ir.core import Loc
from .compiler import compile_shared

ERR_OPS = ("?", "tile", "tload", "tstore", "cross_set", "cross_wait", "tinsert")
WHAT = {"tile": "a tile outside its buffer", "tload": "a load outside its tensor",
        "tstore": "a store outside its tensor", "cross_set": "an event id outside 0-15",
        "cross_wait": "an event id outside 0-15", "tinsert": "an insert outside its tile"}


class ProNative:
    def __init__(self, doc, source: str):
        t0 = time.perf_counter()
        path, cached = compile_shared(source, sanitize=False)
        self.compile_info = {"cached": cached, "seconds": round(time.perf_counter() - t0, 3)}
        self.lib = ctypes.CDLL(path)
        self.fn = self.lib.pypto_pro_run
        self.fn.restype = ctypes.c_int
        self.doc = doc

    def __call__(self, arrays: dict, env: dict, block_dim: int, threads: int) -> float:
        doc = self.doc
        from .pro_exec import serial
        if serial(doc):            # atomic-add stores: clusters in order (pro_exec.serial)
            threads = 1
        names = [n for n, _ in doc.attrs["pro"]["scalars"]]
        vals = {**env, "block_num": block_dim}
        S = np.array([int(vals[n]) for n in names] or [0], np.int64)
        F = np.array([float(vals[n]) for n in names] or [0.0], np.float64)
        params = doc.attrs["params"]
        T = (ctypes.c_void_p * max(1, len(params)))(*[arrays[p].ctypes.data for p in params])
        cluster = ctypes.c_int64(0)
        t0 = time.perf_counter()
        rc = self.fn(ctypes.c_int64(block_dim), ctypes.c_int(threads), T,
                     S.ctypes.data_as(ctypes.c_void_p), F.ctypes.data_as(ctypes.c_void_p),
                     ctypes.byref(cluster))
        wall = time.perf_counter() - t0
        if rc:
            raise self.error(rc, cluster.value)
        return wall

    def error(self, rc: int, cluster: int) -> PyptoError:
        if rc == -2:
            return PyptoError(f"C backend: cluster {cluster} deadlocked on a cross-core wait")
        if rc < 0:
            return PyptoError("C backend: out of memory for the cores' buffers")
        op = ctypes.c_int(0)
        line = self.lib.pypto_pro_error(ctypes.c_int(rc), ctypes.byref(op))
        what = WHAT.get(ERR_OPS[op.value] if 0 <= op.value < len(ERR_OPS) else "?", "an error")
        return PyptoError(f"C backend: {what} in cluster {cluster}",
                          Loc(self.doc.attrs.get("file", "?"), line))
