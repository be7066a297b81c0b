"""Definitions of the synchronisation instructions of the block level (written by Pro mode,
DESIGN.md section 4; the reference page's section 1.8).

They are tile instructions like the others: each runs on a pipe and has a PTO mnemonic, a C
method and a numpy function. A program executed in program order on one thread already
honours every one of them, so the C and numpy implementations are no-ops; what they mean for
pipes running as independent queues is checked by libpypto.runtime.pro_check (the race and
sync checker), and cross-core events (between the cores of a cluster, or across the
launch for INTER_BLOCK and sync_all) are implemented by the Pro runner
(libpypto.runtime.pro_exec) and the Pro C (codegen/pro_rt.h, pro_launch.h).

    sync_set    set_flag(pipe -> wait_pipe, event_id)       on pipe (the setting pipe)
    sync_wait   wait_flag(set_pipe -> pipe, event_id)       on pipe (the waiting pipe)
    barrier     pipe_barrier(which): which = a pipe or ALL  on S
    mutex_lock / mutex_unlock   get_buf / rls_buf(mutex_id) on pipe
    cross_set / cross_wait      cross-core event (event_id, mode)  on pipe
    mm_layout   set_mm_layout_transform(enabled)            on S (no effect on the host)
    sync_all    SYNCALL(core_type, mode): the all-core barrier  on S (every pipe of the core)
"""
from __future__ import annotations

from .opdef import EXPR, PIPE, PIPES, Bool, OpDef, Str, attr, opt

W = ("tile",)
MODES = ("INTRA_BLOCK", "INTER_SUBBLOCK", "INTER_BLOCK", "UNICAST_BLOCK")
CORE_TYPES = ("MIX", "AIV_ONLY", "AIC_ONLY")


def grid_wide(doc) -> bool:
    """Whether a Pro document synchronises across clusters (sync_all, or an INTER_BLOCK
    event): then every cluster of a launch must be resident at once."""
    return any(op.name == "sync_all" or (op.name in ("cross_set", "cross_wait") and
                                         op.attrs["mode"] == "INTER_BLOCK")
               for top in doc.body if top.name == "program" for op in top.walk())


def _s(name, attrs, pto):
    return OpDef(name, W, (), 0, (), 0, {**attrs, "pipe": opt(PIPE)}, None,
                 {"c": "i_sync", "numpy": "tsync", "pto": pto}, (), (), "S", pto)


def _on_pipe(op) -> str:
    return op.attrs.get("pipe", "S")


def _p(name, attrs, pto):
    return OpDef(name, W, (), 0, (), 0, {**attrs, "pipe": opt(PIPE)}, None,
                 {"c": "i_sync", "numpy": "tsync", "pto": pto}, (), (), _on_pipe, pto)


EVENT = {"event_id": attr(EXPR)}
DEFS = [
    _p("sync_set", {"wait_pipe": attr(PIPE), **EVENT}, "SET_FLAG"),
    _p("sync_wait", {"set_pipe": attr(PIPE), **EVENT}, "WAIT_FLAG"),
    _s("barrier", {"which": attr(Str(*PIPES, "ALL"))}, "PIPE_BARRIER"),
    _p("mutex_lock", {"mutex_id": attr(EXPR)}, "GET_BUF"),
    _p("mutex_unlock", {"mutex_id": attr(EXPR)}, "RLS_BUF"),
    _p("cross_set", {**EVENT, "mode": attr(Str(*MODES))}, "SET_CROSS_CORE"),
    _p("cross_wait", {**EVENT, "mode": attr(Str(*MODES))}, "WAIT_CROSS_CORE"),
    _s("mm_layout", {"enabled": attr(Bool())}, "SET_MM_LAYOUT"),
    _s("sync_all", {"core_type": attr(Str(*CORE_TYPES)), "mode": attr(Str("HARD", "SOFT"))},
       "SYNCALL"),
]
SYNC_OPS = frozenset(d.name for d in DEFS)
