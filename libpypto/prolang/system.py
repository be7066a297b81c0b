"""pl.system: synchronisation (reference section 1.8), recorded as the block level's sync
instructions (libpypto/ir/pro_ops.py).

- sync_src(set_pipe=, wait_pipe=, event_id=) / sync_dst(...): set_flag / wait_flag, always
  paired; event ids 0-15 (a runtime scalar is checked when it runs).
- bar_all(), bar_m(), bar_v(), bar_mte1(), bar_mte2(), bar_mte3(), bar_fix(): pipe barriers
  (bar_all orders every pipe of the core; a one-pipe barrier orders that pipe, already in
  order, so it adds no ordering between pipes).
- mutex_lock(pipe=, mutex_id=) / mutex_unlock(...): buffer-id locks, ids 0-31; a lock is
  ordered after the previous unlock of the id on any pipe of the core.
- set_cross_core(pipe=, event_id=, sync_mode=) / wait_cross_core(...): cross-core events,
  the four modes of the reference (set_cross_core_wait_cross_core.md; set and wait use the
  same mode):
  - INTRA_BLOCK (mode 2, default; mixed kernels): a cube set releases one wait on each of the
    two vector cores of its cluster; a cube wait completes once both vector cores have set.
  - INTER_SUBBLOCK (mode 1; mixed kernels): a set on one vector core releases one wait on
    the other vector core of the cluster.
  - UNICAST_BLOCK (mode 3; mixed kernels): cube <-> one vector core. A vector core's set is
    one signal for its cube core, whose wait takes one signal from either vector core; a
    cube set is one signal that one vector core's wait takes. Our choice where the page is
    silent: the pairing must be unambiguous, so one (cluster, event id, direction) may be
    used by only one of the two vector cores (the runner reports it otherwise), as in the
    reference's own use (`if sub_id == 0: set`, the cube waits UNICAST_BLOCK). Not
    restricted, though the reference's A5 code generator suggests it: which vector core a
    cube's UNICAST set reaches (it emits one set_intra_block with the event id, where an
    INTRA_BLOCK set emits id and id + 16, one per vector core, so likely subblock 0 only).
  - INTER_BLOCK (mode 0; any kernel): every core of the launch of the caller's type (all
    vector cores, or all cube cores): a grid-wide counting barrier. A core's n-th wait
    completes once every core of its type has set the event n times; each core must wait
    as often as it sets (a set left unwaited is an error).
- sync_all(workspaces=None, *, core_type=pl.SyncCoreType.MIX, mode=pl.SyncAllMode.HARD):
  the all-core barrier (sync_all.md): every core of core_type in the launch (MIX: all cube
  and vector cores, AIV_ONLY: the vector cores, AIC_ONLY: the cube cores) waits until all
  of them have reached it, and all of a core's pipes finish their earlier work first (like
  bar_all). Only cores of core_type may call it (MIX needs a mixed kernel, as on the
  hardware, where MIX in a vector-only kernel waits for cube cores that do not run). SOFT
  takes the workspace list of the page (a GM tensor plus a Vec tile for AIV_ONLY, a Mat
  tile for AIC_ONLY, both for MIX; used_cores 0 or left out), checked here, and runs as
  HARD on the host: the workspaces are not written (the hardware's polling words are not
  part of the contract). A kernel with sync_all or an INTER_BLOCK event needs all of its
  clusters resident at once (libpypto.runtime.pro_exec): block_dim is limited to the
  target's core count, as on the device.
- set_mm_layout_transform(enabled=): recorded (no effect on the host's row-major L0C).
"""
from __future__ import annotations

from .dsl import CrossCoreSyncMode, PipeType, SyncAllMode, SyncCoreType, expr_of
from .ops import TensorView
from .state import current
from .tiles import Tile

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
    if m.value in ("INTRA_BLOCK", "UNICAST_BLOCK") and not t.mixed:
        raise t.error(f"an {m.value} cross-core event needs both a cube and a vector section")
    if m.value == "INTER_SUBBLOCK" and not (t.mixed and t.section == "vector"):
        raise t.error("an INTER_SUBBLOCK cross-core event is between the two vector cores of a "
                      "mixed kernel: use it in pl.section_vector() of a kernel with both "
                      "sections")
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


def sync_all(workspaces=None, *, core_type=SyncCoreType.MIX, mode=SyncAllMode.HARD):
    """The all-core barrier of the launch (module docstring)."""
    t = current()
    if not isinstance(core_type, SyncCoreType):
        raise t.error(f"sync_all core_type must be a pl.SyncCoreType, not {core_type!r}")
    if not isinstance(mode, SyncAllMode):
        raise t.error(f"sync_all mode must be a pl.SyncAllMode, not {mode!r}")
    core = t.section or ("vector" if not t.sections else "")
    kind = core_type.value
    if kind == "MIX" and not t.mixed:
        raise t.error("sync_all(core_type=MIX) waits for the cube and the vector cores: a "
                      "kernel with one kind of core must say core_type="
                      f"pl.SyncCoreType.{'AIV_ONLY' if core == 'vector' else 'AIC_ONLY'}")
    if (kind, core) in (("AIV_ONLY", "cube"), ("AIC_ONLY", "vector")):
        raise t.error(f"sync_all(core_type={kind}) in the {core} section: only the cores it "
                      f"synchronises may call it")
    _workspaces(t, workspaces, kind, mode.value)
    return _emit("sync_all", {"core_type": kind, "mode": mode.value, "pipe": "S"})


def _workspaces(t, ws, kind: str, mode: str) -> None:
    """The SOFT workspace list of sync_all.md, checked (the host run does not write it)."""
    ws = list(ws or [])
    if mode == "HARD":
        if ws:
            raise t.error("sync_all in HARD mode takes no workspaces (SOFT mode does)")
        return
    if not ws:
        raise t.error("sync_all in SOFT mode needs its workspaces: [gm_tensor, vec_tile] "
                      "(AIV_ONLY), [gm_tensor, mat_tile] (AIC_ONLY) or all three (MIX)")
    seen: dict = {}
    for w in ws:
        if isinstance(w, TensorView):
            what = "gm"
        elif isinstance(w, Tile) and w.type.space in ("ub", "l1"):
            what = w.type.space
        elif isinstance(w, int) or expr_of(w) is not None:
            what = "used_cores"
            if not (isinstance(w, int) and w == 0):
                raise t.error("sync_all used_cores other than 0 (all cores) is not built")
        else:
            raise t.error(f"a sync_all workspace is a GM tensor, a Vec or Mat tile or an int "
                          f"used_cores, not {w!r}")
        if what in seen:
            raise t.error(f"sync_all takes at most one {what} workspace")
        seen[what] = w
    need = {"AIV_ONLY": ("gm", "ub"), "AIC_ONLY": ("gm", "l1"), "MIX": ("gm", "ub", "l1")}[kind]
    banned = {"AIV_ONLY": "l1", "AIC_ONLY": "ub"}.get(kind)
    names = {"gm": "a GM tensor", "ub": "a Vec tile", "l1": "a Mat tile"}
    missing = [names[n] for n in need if n not in seen]
    if missing:
        raise t.error(f"sync_all(core_type={kind}, mode=SOFT) needs {' and '.join(missing)} "
                      f"among its workspaces")
    if banned in seen:
        raise t.error(f"sync_all(core_type={kind}, mode=SOFT) takes no {names[banned]}")
