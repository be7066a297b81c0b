"""pl.system: synchronisation (reference section 1.8), recorded as the block level's sync
instructions (libpypto/ir/pro_ops.py).

- sync_src(set_pipe=, wait_pipe=, event_id=) / sync_dst(...): set_flag / wait_flag, always
  paired; event ids 0-15 (a runtime scalar is checked when it runs).
- bar_all(), bar_m(), bar_v(), bar_mte1(), bar_mte2(), bar_mte3(), bar_fix(): pipe barriers
  (bar_all orders every pipe of the core; a one-pipe barrier orders that pipe, already in
  order, so it adds no ordering between pipes).
- mutex_lock(pipe=, mutex_id=) / mutex_unlock(...): buffer-id locks, ids 0-31; a lock is
  ordered after the previous unlock of the id on any pipe of the core.
- set_cross_core(pipe=, event_id=, sync_mode=) / wait_cross_core(...): events between the
  cores of a cluster. INTRA_BLOCK (default): a cube set releases one wait on each of the two
  vector cores; a cube wait completes once both vector cores have set. INTER_SUBBLOCK: a set
  on one vector core releases one wait on the other. INTER_BLOCK and UNICAST_BLOCK are not
  built yet.
- set_mm_layout_transform(enabled=): recorded (no effect on the host's row-major L0C).
"""
from __future__ import annotations

from .dsl import CrossCoreSyncMode, PipeType, expr_of
from .state import current

_REAL_PIPES = ("MTE1", "MTE2", "MTE3", "M", "V", "FIX", "S")


def _pipe(t, p, what: str) -> str:
    if not isinstance(p, PipeType) or p.value not in _REAL_PIPES:
        raise t.error(f"{what} must be a pl.PipeType (MTE1, MTE2, MTE3, M, V, FIX, S), not "
                      f"{p!r}")
    return p.value


def _id(t, v, hi: int, what: str):
    e = expr_of(v)
    if e is None or (isinstance(e, int) and not 0 <= e <= hi):
        raise t.error(f"{what} must be an integer in 0-{hi}, not {v!r}")
    return e


def _emit(name: str, attrs: dict):
    t = current()
    op = t.emit(name, (), attrs)
    return op


def sync_src(set_pipe=None, wait_pipe=None, event_id=None):
    """set_flag: set_pipe signals wait_pipe once its earlier work is done."""
    t = current()
    return _emit("sync_set", {"pipe": _pipe(t, set_pipe, "set_pipe"),
                              "wait_pipe": _pipe(t, wait_pipe, "wait_pipe"),
                              "event_id": _id(t, event_id, 15, "event_id")})


def sync_dst(set_pipe=None, wait_pipe=None, event_id=None):
    """wait_flag: wait_pipe waits for set_pipe's signal before its later work."""
    t = current()
    return _emit("sync_wait", {"pipe": _pipe(t, wait_pipe, "wait_pipe"),
                               "set_pipe": _pipe(t, set_pipe, "set_pipe"),
                               "event_id": _id(t, event_id, 15, "event_id")})


def _bar(which: str):
    def bar():
        return _emit("barrier", {"which": which, "pipe": "S"})
    bar.__name__ = f"bar_{which.lower()}"
    bar.__doc__ = f"pipe_barrier({which})"
    return bar


bar_all, bar_m, bar_v = _bar("ALL"), _bar("M"), _bar("V")
bar_mte1, bar_mte2, bar_mte3, bar_fix = _bar("MTE1"), _bar("MTE2"), _bar("MTE3"), _bar("FIX")


def mutex_lock(pipe=None, mutex_id=None):
    t = current()
    return _emit("mutex_lock", {"pipe": _pipe(t, pipe, "pipe"),
                                "mutex_id": _id(t, mutex_id, 31, "mutex_id")})


def mutex_unlock(pipe=None, mutex_id=None):
    t = current()
    return _emit("mutex_unlock", {"pipe": _pipe(t, pipe, "pipe"),
                                  "mutex_id": _id(t, mutex_id, 31, "mutex_id")})


def _mode(t, m) -> str:
    if not isinstance(m, CrossCoreSyncMode):
        raise t.error(f"sync_mode must be a pl.CrossCoreSyncMode, not {m!r}")
    if m.value in ("INTER_BLOCK", "UNICAST_BLOCK"):
        raise t.error(f"cross-core sync mode {m.value} is not built yet (INTRA_BLOCK and "
                      f"INTER_SUBBLOCK are)")
    if m.value == "INTRA_BLOCK" and not t.mixed:
        raise t.error("an INTRA_BLOCK cross-core event needs both a cube and a vector section")
    return m.value


def set_cross_core(pipe=None, event_id=None, sync_mode=CrossCoreSyncMode.INTRA_BLOCK):
    t = current()
    return _emit("cross_set", {"pipe": _pipe(t, pipe, "pipe"),
                               "event_id": _id(t, event_id, 15, "event_id"),
                               "mode": _mode(t, sync_mode)})


def wait_cross_core(pipe=None, event_id=None, sync_mode=CrossCoreSyncMode.INTRA_BLOCK):
    t = current()
    return _emit("cross_wait", {"pipe": _pipe(t, pipe, "pipe"),
                                "event_id": _id(t, event_id, 15, "event_id"),
                                "mode": _mode(t, sync_mode)})


def set_mm_layout_transform(enabled=True):
    return _emit("mm_layout", {"enabled": bool(enabled), "pipe": "S"})


def sync_all(**_kw):
    raise current().error("pl.system.sync_all is not built yet")
