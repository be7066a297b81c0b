"""The list scheduler's loops in C (place.c) over numpy arrays, for big expansions.

`available()` says whether place.c could be built (analysis/native.py; else the
scheduler's Python loops run, with one warning). The functions take the instances'
predecessors as CSR arrays (pred_ptr, pred_idx) and program kinds coded by KIND_CODE,
and give the same numbers, to the bit, as the Python functions of sched/__init__.py.
"""
from __future__ import annotations

import ctypes
from importlib import resources

import numpy as np

from ..analysis import native

KIND_CODE = {"vector": 0, "cube": 1, "mixed": 2}
_lib: list = []


def _load():
    if not _lib:
        lib = native.load("scheduler", resources.files(__package__).joinpath("place.c")
                          .read_text())
        if lib is not None:
            p, i64, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
            lib.pp_bottom_levels.argtypes = [i64, p, p, p, p]
            lib.pp_bottom_levels.restype = None
            lib.pp_sweep.argtypes = [i64] + [p] * 7
            lib.pp_sweep.restype = None
            lib.pp_place.argtypes = [i64] + [p] * 6 + [i64] + [p] * 4 + [f64, ctypes.c_int32] + \
                [p] * 3
            lib.pp_place.restype = i64
        _lib.append(lib)
    return _lib[0]


def available() -> bool:
    return _load() is not None


def _p(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


def _arr(a, dtype) -> np.ndarray:
    return np.ascontiguousarray(a, dtype)


def bottom_levels(dur: np.ndarray, ptr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    dur = _arr(dur, np.float64)
    bl = np.zeros(dur.size)
    _load().pp_bottom_levels(dur.size, _p(dur), _p(_arr(ptr, np.int64)), _p(_arr(idx, np.int64)),
                             _p(bl))
    return bl


def sweep(dur, ptr, idx, kind) -> tuple:
    """(finish, via, work per kind code) of the instances (bounds' sweep)."""
    dur = _arr(dur, np.float64)
    finish, via, work = np.zeros(dur.size), np.zeros(dur.size, np.int64), np.zeros(3)
    _load().pp_sweep(dur.size, _p(dur), _p(_arr(ptr, np.int64)), _p(_arr(idx, np.int64)),
                     _p(_arr(kind, np.int32)), _p(finish), _p(via), _p(work))
    return finish, via, work


def successors(ptr: np.ndarray, idx: np.ndarray, n: int) -> tuple:
    """The successor CSR arrays of a predecessor CSR (each list in increasing order)."""
    order = np.argsort(idx, kind="stable")
    succ = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))[order]
    off = np.zeros(n + 1, np.int64)
    if n:
        off[1:] = np.cumsum(np.bincount(idx, minlength=n))
    return off, np.ascontiguousarray(succ)


def place(dur, ptr, idx, kind, lanes: list, gm_bytes, gm_alone, hbm) -> tuple:
    """Critical-path list scheduling (sched.place): (start, end, core) arrays, or raises
    ValueError with the number of instances that cannot start."""
    n = int(dur.size)
    dur = _arr(dur, np.float64)
    bl = bottom_levels(dur, ptr, idx)
    inst = np.argsort(-bl, kind="stable")          # stable: ties by id
    rank = np.empty(n, np.int64)
    rank[inst] = np.arange(n, dtype=np.int64)
    succ_off, succ = successors(ptr, idx, n)
    core_kind = _arr([KIND_CODE[k] for k in lanes] or [0], np.int32)
    start, end, core = np.zeros(n), np.zeros(n), np.zeros(n, np.int32)
    use_gm = gm_bytes is not None and bool(hbm)
    gb = _arr(gm_bytes if use_gm else np.zeros(n), np.float64)
    ga = _arr(gm_alone if use_gm else np.zeros(n), np.float64)
    left = _load().pp_place(n, _p(rank), _p(_arr(inst, np.int64)), _p(_arr(kind, np.int32)),
                            _p(succ_off), _p(succ), _p(_arr(np.diff(ptr), np.int64)), len(lanes),
                            _p(core_kind), _p(dur), _p(gb), _p(ga), float(hbm or 0.0),
                            int(use_gm), _p(start), _p(end), _p(core))
    if left < 0:
        raise MemoryError("scheduler: out of memory")
    if left:
        raise ValueError(int(left))
    return start, end, core
