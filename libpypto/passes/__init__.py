"""Pass registry: the one place a pass name meets its implementation (keep alphabetical).

name: (input level, output level, "module:function"). A pass is a pure function
Document -> Document; its docstring's first line is the --list-passes summary and its
keyword-only parameters are its options (pipeline syntax: name{opt=value,...}).
"""
from __future__ import annotations

PASSES = {
    "alloc":          ("block", "block", "libpypto.passes.alloc:alloc"),
    "assign-memory":  ("tile", "tile", "libpypto.passes.assign_memory:assign_memory"),
    "cse":            ("block", "block", "libpypto.passes.cse:cse"),
    "dce":            ("block", "block", "libpypto.passes.dce:dce"),
    "fold-scale":     ("tensor", "tensor", "libpypto.passes.fold_scale:fold_scale"),
    "forward":        ("block", "block", "libpypto.passes.forward:forward"),
    "fuse":           ("tile", "block", "libpypto.passes.fuse:fuse"),
    "gm-reuse":       ("exec", "exec", "libpypto.passes.gm_reuse:gm_reuse"),
    "insert-sync":    ("block", "block", "libpypto.passes.insert_sync:insert_sync"),
    "l1-reuse":       ("block", "block", "libpypto.passes.l1_reuse:l1_reuse"),
    "make-exec":      ("block", "exec", "libpypto.passes.make_exec:make_exec"),
    "mix-fuse":       ("block", "block", "libpypto.passes.mix_fuse:mix_fuse"),
    "nbuffer":        ("block", "block", "libpypto.passes.nbuffer:nbuffer"),
    "ooo-schedule":   ("block", "block", "libpypto.passes.ooo_schedule:ooo_schedule"),
    "sink-views":     ("tensor", "tensor", "libpypto.passes.sink_views:sink_views"),
    "tensor-to-tile": ("tensor", "tile", "libpypto.passes.tensor_to_tile:tensor_to_tile"),
}

DEFAULT_PIPELINE = ("fold-scale,sink-views,tensor-to-tile,assign-memory,fuse,mix-fuse,l1-reuse,nbuffer,"
                    "forward,cse,dce,ooo-schedule,alloc,insert-sync,make-exec,gm-reuse")


def get_pass(name: str):
    from importlib import import_module
    mod, fn = PASSES[name][2].split(":")
    return getattr(import_module(mod), fn)
