"""The simulator's engine in C (engine.c): streams packed into arrays, the results read back.

`available()` says whether the C engine could be built (analysis/native.py: without a C
compiler, or with $PYPTO_NO_NATIVE, the simulator runs engine.py, with one warning).
`run_tasks` and `run_waves` run Tensor-mode task instances and Pro clusters and return a
`Result` with the attributes of engine.Engine that the record is made from. engine.c
follows engine.py step by step, so the results are the same to the bit.
"""
from __future__ import annotations

import ctypes
from importlib import resources
from itertools import chain

import numpy as np

from ..analysis import native

_I64 = ctypes.POINTER(ctypes.c_int64)
_I32 = ctypes.POINTER(ctypes.c_int32)
_I8 = ctypes.POINTER(ctypes.c_int8)
_F64 = ctypes.POINTER(ctypes.c_double)


class _Sim(ctypes.Structure):
    _fields_ = [
        ("ntpl", ctypes.c_int64), ("tpl_off", _I64), ("tpl_prog", _I32),
        ("pipe", _I32), ("dur", _F64), ("gslot", _I32), ("nbytes", _F64), ("rate", _F64),
        ("store", _I8), ("op", _I32), ("npred", _I32),
        ("succ_off", _I64), ("succ", _I32), ("flag_off", _I64), ("flag", _I32),
        ("xflag_off", _I64), ("xflag", _I64), ("post_off", _I64), ("post", _I64),
        ("need_off", _I64), ("need", _I64),
        ("keys", _I64), ("nkeys", ctypes.c_int64), ("nxkeys", ctypes.c_int64),
        ("ncores", ctypes.c_int64), ("npipes", ctypes.c_int64),
        ("hbm", ctypes.c_double), ("l2_bw", ctypes.c_double), ("l2_bytes", ctypes.c_double),
        ("l2_hit", ctypes.c_double), ("l2_miss", ctypes.c_double),
        ("launch", ctypes.c_double), ("dispatch", ctypes.c_double),
        ("has_l2", ctypes.c_int32), ("write_back", ctypes.c_int32),
        ("max_events", ctypes.c_int64),
        ("busy", _F64), ("ev_core", _I32), ("ev_pipe", _I32), ("ev_prog", _I32),
        ("ev_op", _I32), ("ev_start", _F64), ("ev_end", _F64), ("flow_a", _I64),
        ("flow_b", _I64), ("counters", _F64), ("counts", _I64)]


_FIELDS = dict(_Sim._fields_)
_lib: list = []


def _load():
    if not _lib:
        src = resources.files(__package__).joinpath("engine.c").read_text()
        lib = native.load("simulator", src)
        if lib is not None:
            p = ctypes.c_void_p
            lib.pp_sim_tasks.argtypes = [ctypes.POINTER(_Sim), ctypes.c_int64] + [p] * 10
            lib.pp_sim_waves.argtypes = [ctypes.POINTER(_Sim), ctypes.c_int64,
                                         ctypes.c_int64] + [p] * 6
            lib.pp_intern_rows.argtypes = [p, ctypes.c_int64, ctypes.c_int64, p, p]
            for f in (lib.pp_sim_tasks, lib.pp_sim_waves, lib.pp_intern_rows):
                f.restype = ctypes.c_int
        _lib.append(lib)
    return _lib[0]


def available() -> bool:
    return _load() is not None


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


def intern(rows: np.ndarray) -> np.ndarray:
    """An id per key row (or per code of a 1-D array), equal rows equal ids, in the order
    of first occurrence; -1 for a row starting with -1."""
    rows = np.ascontiguousarray(rows, np.int64)
    if rows.ndim == 1:
        rows = rows.reshape(-1, 1)
    ids = np.zeros(rows.shape[0], np.int64)
    lib = _load()
    if lib is not None:
        count = np.zeros(1, np.int64)
        if lib.pp_intern_rows(_ptr(rows), rows.shape[0], rows.shape[1], _ptr(ids),
                              _ptr(count)) != 0:
            raise MemoryError("simulator: out of memory interning the L2 keys")
        return ids
    if not rows.shape[0]:
        return ids
    _, inv = np.unique(rows, axis=0, return_inverse=True)
    ids[:] = inv.reshape(-1)
    ids[rows[:, 0] < 0] = -1
    return ids


def _csr(lists: list, dtype) -> tuple:
    """Lists (None for empty) as CSR arrays (offsets, values)."""
    lens = np.fromiter((len(x) if x else 0 for x in lists), np.int64, len(lists))
    off = np.zeros(len(lists) + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    flat = np.fromiter(chain.from_iterable(x for x in lists if x), dtype, int(off[-1]))
    return off, flat


class _Packed:
    """Streams as engine.c's arrays; cross-core keys interned (`xids`: key -> id)."""

    def __init__(self, streams: list):
        self.xids: dict = {}
        lens = [len(st) for st in streams]
        self.tpl_off = np.zeros(len(streams) + 1, np.int64)
        self.tpl_off[1:] = np.cumsum(lens)
        n = int(self.tpl_off[-1])
        self.tpl_prog = np.array([st.prog for st in streams], np.int32)
        col = lambda name: list(chain.from_iterable(getattr(st, name) for st in streams))  # noqa
        self.pipe = np.array(col("pipe"), np.int32).reshape(n)
        self.dur = np.array(col("dur"), np.float64).reshape(n)
        self.op = np.array(col("op"), np.int32).reshape(n)
        gm = col("gm")
        self.nbytes = np.array([g[1] if g else 0 for g in gm], np.float64).reshape(n)
        self.rate = np.array([g[2] if g else 0 for g in gm], np.float64).reshape(n)
        self.store = np.array([bool(g and g[3]) for g in gm], np.int8).reshape(n)
        is_gm = np.array([g is not None for g in gm], bool).reshape(n)
        seen = np.cumsum(is_gm) - is_gm                  # GM instructions before, overall
        first = np.concatenate([[0], np.cumsum(is_gm)])[self.tpl_off[:-1]]
        base = np.repeat(first, lens) if n else np.zeros(0, np.int64)
        self.gslot = np.where(is_gm, seen - base, -1).astype(np.int32)
        pred_off, pred = _csr(col("preds"), np.int64)
        self.npred = np.diff(pred_off).astype(np.int32)
        start = np.repeat(self.tpl_off[:-1], lens) if n else np.zeros(0, np.int64)
        src = pred + np.repeat(start, self.npred)         # global index of each predecessor
        dst = np.repeat(np.arange(n, dtype=np.int64), self.npred)
        order = np.argsort(src, kind="stable")
        self.succ = np.ascontiguousarray((dst - np.repeat(start, self.npred))[order], np.int32)
        self.succ_off = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self.succ_off[1:])
        self.flag_off, self.flag = _csr(col("flag"), np.int32)
        x = self._x
        self.xflag_off, self.xflag = _csr([x(k) for k in col("xflag")], np.int64)
        self.post_off, self.post = _csr([x(k) for k in col("post")], np.int64)
        self.need_off, self.need = _csr([x(k) for k in col("need")], np.int64)
        self.nflags = np.diff(self.flag_off) + np.diff(self.xflag_off)

    def _x(self, keys):
        if not keys:
            return None
        return [self.xids.setdefault(k, len(self.xids)) for k in keys]


class Result:
    """What the record is made from, as engine.Engine holds it (events and flows as
    arrays: (core, pipe, start, end, program, op) of the kept events, (setter, waiter))."""

    def __init__(self, out: dict, ncores: int, npipes: int):
        k = out["counts"]
        self.hbm_read, self.hbm_write, self.l2_hit_bytes, self.l2_write_bytes = \
            out["counters"].tolist()
        self.nevents, self.nkept = int(k[0]), int(k[1])
        self.stuck_waiters, self.finished = int(k[4]), int(k[5])
        nev, nfl = int(k[2]), int(k[3])
        self.events = tuple(out[n][:nev] for n in ("ev_core", "ev_pipe", "ev_start", "ev_end",
                                                   "ev_prog", "ev_op"))
        self.flows = (out["flow_a"][:nfl], out["flow_b"][:nfl])
        self.busy = out["busy"].reshape(ncores, npipes).tolist()


def _machine(costs, ncores: int, npipes: int, pk: _Packed, keys: np.ndarray, nkeys: int,
             max_events: int, total: int, total_flags: int) -> tuple:
    """The _Sim structure and the arrays it points into (kept alive by the caller)."""
    cap = max(0, min(max_events, total))
    fcap = max(0, min(max_events, total_flags))
    out = {"busy": np.zeros(ncores * npipes), "ev_core": np.zeros(cap, np.int32),
           "ev_pipe": np.zeros(cap, np.int32), "ev_prog": np.zeros(cap, np.int32),
           "ev_op": np.zeros(cap, np.int32), "ev_start": np.zeros(cap),
           "ev_end": np.zeros(cap), "flow_a": np.zeros(fcap, np.int64),
           "flow_b": np.zeros(fcap, np.int64), "counters": np.zeros(4),
           "counts": np.zeros(6, np.int64)}
    s = _Sim()
    s.ntpl = len(pk.tpl_prog)
    for name in ("tpl_off", "tpl_prog", "pipe", "dur", "gslot", "nbytes", "rate", "store", "op",
                 "npred", "succ_off", "succ", "flag_off", "flag", "xflag_off", "xflag",
                 "post_off", "post", "need_off", "need"):
        setattr(s, name, ctypes.cast(getattr(pk, name).ctypes.data, _FIELDS[name]))
    keys = np.ascontiguousarray(keys, np.int64) if keys.size else np.full(1, -1, np.int64)
    s.keys = ctypes.cast(keys.ctypes.data, _I64)
    s.nkeys, s.nxkeys = max(1, nkeys), max(1, len(pk.xids))
    s.ncores, s.npipes = ncores, npipes
    has_l2 = bool(costs.l2_bytes and costs.l2_bw)
    s.hbm, s.l2_bw, s.l2_bytes = costs.hbm, costs.l2_bw, float(costs.l2_bytes)
    s.l2_hit, s.l2_miss, s.launch, s.dispatch = costs.l2_hit, costs.l2_miss, costs.launch, \
        costs.dispatch
    s.has_l2, s.write_back = int(has_l2), int(bool(costs.write_back))
    s.max_events = max_events
    for name, a in out.items():
        setattr(s, name, ctypes.cast(a.ctypes.data, _FIELDS[name]))
    return s, out, keys


def run_tasks(costs, kinds: list, npipes: int, streams: list, tpl: np.ndarray,
              kbase: np.ndarray, key_ids: np.ndarray, kind: np.ndarray, exp,
              max_events: int) -> tuple:
    """Tensor-mode instances (template tpl[i], keys from kbase[i], program kind kind[i]:
    0 vector, 1 cube, 2 mixed) dispatched to the cores (kinds: each core's kind) as their
    predecessors (exp.pred_ptr / pred_idx) finish: (Result, core, t0, end per instance)."""
    lib = _load()
    pk = _Packed(streams)
    n = exp.n
    lens = np.diff(pk.tpl_off)
    total = int(lens[tpl].sum()) if n else 0
    cs = np.concatenate([[0], np.cumsum(pk.nflags)])
    total_flags = int((cs[pk.tpl_off[1:]] - cs[pk.tpl_off[:-1]])[tpl].sum()) if n else 0
    nkeys = int(key_ids.max()) + 1 if key_ids.size else 0
    s, out, keep = _machine(costs, len(kinds), npipes, pk, key_ids, nkeys, max_events, total,
                            total_flags)
    npred = np.diff(exp.pred_ptr)
    order = np.argsort(exp.pred_idx, kind="stable")
    succ = np.ascontiguousarray(np.repeat(np.arange(n, dtype=np.int64), npred)[order])
    succ_off = np.zeros(n + 1, np.int64)
    succ_off[1:] = np.cumsum(np.bincount(exp.pred_idx, minlength=n)) if n else []
    code = {"vector": 0, "cube": 1, "mixed": 2}
    core_kind = np.array([code[k] for k in kinds], np.int32)
    core = np.zeros(n, np.int32)
    t0, end = np.zeros(n), np.zeros(n)
    args = [np.ascontiguousarray(a) for a in (tpl.astype(np.int32), kind.astype(np.int32),
                                              kbase.astype(np.int64), npred.astype(np.int64),
                                              succ_off, succ, core_kind)]
    rc = lib.pp_sim_tasks(ctypes.byref(s), n, *[_ptr(a) for a in args], _ptr(core), _ptr(t0),
                          _ptr(end))
    if rc != 0:
        raise MemoryError("simulator: out of memory")
    del keep
    return Result(out, len(kinds), npipes), core, t0, end


def run_waves(costs, kinds: list, npipes: int, streams: list, members: list, slots: int,
              max_events: int) -> tuple:
    """Pro clusters: members[c] = [(stream index, core), ...] of cluster c; cluster c starts
    once cluster c - slots has finished: (Result, start and end of each cluster)."""
    lib = _load()
    pk = _Packed(streams)
    ids: dict = {}          # the streams' own L2 keys (any hashable) -> ids
    key_ids = np.array([-1 if g[0] is None else ids.setdefault(g[0], len(ids))
                        for st in streams for g in st.gm if g is not None], np.int64)
    kb = np.zeros(len(streams) + 1, np.int64)
    kb[1:] = np.cumsum([sum(g is not None for g in st.gm) for st in streams])
    nkeys = len(ids)
    total = int(pk.tpl_off[-1])
    s, out, keep = _machine(costs, len(kinds), npipes, pk, key_ids, nkeys, max_events, total,
                            int(pk.nflags.sum()))
    mem_off = np.zeros(len(members) + 1, np.int64)
    mem_off[1:] = np.cumsum([len(m) for m in members])
    mem_tpl = np.array([t for m in members for t, _ in m] or [0], np.int64)
    mem_core = np.array([c for m in members for _, c in m] or [0], np.int32)
    mem_kbase = kb[mem_tpl]
    c_t0, c_end = np.zeros(max(1, len(members))), np.zeros(max(1, len(members)))
    rc = lib.pp_sim_waves(ctypes.byref(s), len(members), slots, _ptr(mem_off), _ptr(mem_tpl),
                          _ptr(mem_core), _ptr(np.ascontiguousarray(mem_kbase)), _ptr(c_t0),
                          _ptr(c_end))
    if rc != 0:
        raise MemoryError("simulator: out of memory")
    del keep
    return Result(out, len(kinds), npipes), c_t0, c_end
