"""Definitions of the ops that give a document its structure: the source tensor graph, GM
tensors, kernels (tile level), blocks (block level), programs and tasks (exec level), the
schedule, the emitted code and the run record.
"""
from __future__ import annotations

from .opdef import (EXPR, EXPRS, INT_LIMIT, NAT, SPACE, Anything, Bool, Bytes, DictOf, Ident,
                    Int, ListOf, MapOf, Null, Num, OneOf, OpDef, Str, Text, Tuple, attr, is_int,
                    opt, short)
from .types import DTYPES

M = ("module",)
CORE = Str("vector", "cube", "mixed")
NAMES = ListOf(Ident())
BUFFERS = MapOf(SPACE, NAT)
BOX = Tuple(NAT, EXPRS, EXPRS)        # [tensor index, lo, hi]: a task's GM footprint
RUN = {
    "verdict": attr(Str("pass", "fail", "unchecked")),
    "backend": attr(Str("c", "numpy")),
    "threads": attr(Int(1)),
    "wall_s": attr(Num()),
    "walls_s": attr(ListOf(Num())),
    "bindings": attr(MapOf(Ident(), NAT)),
    "outputs": attr(ListOf(DictOf({
        "name": attr(Ident()), "dtype": attr(Text()), "shape": attr(ListOf(NAT)),
        "sha256": attr(Text()), "data": opt(Bytes()), "path": opt(Text())}))),
    "checks": attr(ListOf(DictOf({"name": attr(Ident()), "ok": attr(Bool())}, open_=True))),
    "events": attr(ListOf(Tuple(NAT, NAT, NAT, Int(), Int()))),
    "tasks": attr(ListOf(DictOf({
        "program": attr(Ident()), "ops": attr(NAMES), "block": attr(Text()),
        "bytes": attr(NAT), "flops": attr(NAT), "loc": attr(Text()),
        "labels": opt(ListOf(Text()))}))),
    "compile": attr(DictOf({"cached": opt(Bool()), "seconds": opt(Num())})),
    "notice": attr(Text()),
    "environment": attr(MapOf(Ident(), Anything())),
    # the race and sync checker on a Tensor-mode run (runtime/tensor_check.py)
    "sync_check": opt(DictOf({"programs": attr(NAT), "instances": attr(NAT),
                              "unsynced": attr(NAT)})),
    # pypto-run --target: the simulated timeline of the run (libpypto/sim)
    "sim": opt(DictOf({"target": attr(Text()), "cycles": attr(NAT), "us": attr(Num()),
                       "bound": attr(Text())}, open_=True)),
}


def _positive(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= INT_LIMIT


class Positive(Num):
    what = "a positive number"

    def problem(self, v):
        return None if _positive(v) else f"must be a positive number, not {short(v)}"


class PowerOfTwo(Int):
    def __init__(self):
        super().__init__(1)
        self.what = "a power of two"

    def problem(self, v):
        return None if is_int(v) and 0 < v <= INT_LIMIT and not v & (v - 1) else \
            f"must be a power of two, not {short(v)}"


# A target description (libpypto/targets/*.toml), as a document carries it. One schema for
# the TOML files and for the records in documents: a record is data, never a path.
TARGET = DictOf({
    "name": attr(Text()), "description": opt(Text()), "clock_ghz": attr(Positive()),
    "align_bytes": opt(PowerOfTwo()), "buffer_align": opt(PowerOfTwo()),
    "mixed_programs": opt(Bool()), "task_overhead_us": opt(Num()),
    "cores": attr(MapOf(CORE, NAT)),
    "buffers": attr(DictOf({s: attr(Int(0, 1 << 40)) for s in ("ub", "l1", "l0a", "l0b", "l0c")})),
    "bandwidth": attr(MapOf(Ident(), Positive())),
    "compute": attr(DictOf({
        "vector_bytes_per_cycle": attr(Positive()), "vector_op_cycles": attr(Int(0)),
        "cube_flops_per_cycle": attr(MapOf(Ident(), Positive())),
        "cube_startup_cycles": opt(Int(0)), "transfer_setup_cycles": opt(Int(0))})),
}, open_=True)
BANDWIDTHS = ("gm_to_ub", "gm_to_l1", "ub_to_gm", "l0c_to_gm", "l1_to_l0", "l0c_to_ub")

# a Pro kernel's launch facts (prolang/kernel.py): the runner and the C renderer read them
PRO = DictOf({
    "mixed": attr(Bool()),
    "scalars": attr(ListOf(Tuple(Ident(), Str(*DTYPES)))),
    "buffers": attr(BUFFERS),
    "options": attr(MapOf(Ident(), Anything())),
    "tiling_key": attr(MapOf(Ident(), OneOf(Num(), Bool(), Text(), Null()))),
    "datatype": opt(MapOf(Ident(), Str(*DTYPES))),     # @pl.jit(datatype=): param -> dtype
})
SYMBOL = DictOf({"kind": attr(Str("dynamic", "named", "static")),
                 "dims": attr(ListOf(Tuple(Ident(), NAT))), "value": opt(NAT),
                 "max": opt(NAT)})    # compiled for 1 <= size <= max (analysis/versions.py)
PASS_OPTION = DictOf({"pass": attr(Text()), "option": attr(Text()),
                      "value": attr(OneOf(Num(), Bool(), Text())), "from": attr(Text()),
                      "file": opt(Text()), "line": opt(NAT)})
# the module attributes of a document (what `module {...}` holds)
DOC = {
    "kernel": attr(Ident()), "file": attr(Text()), "params": attr(NAMES),
    "symbols": attr(MapOf(Ident(), SYMBOL)),
    "constraints": attr(ListOf(Tuple(Ident(), EXPR))),
    "consts": attr(MapOf(Ident(), OneOf(Num(), Bool(), Text(), Null()))),
    "target": opt(TARGET),
    # the op file's lines that ops are located at, [file, line, text]: comments in the
    # listing and the generated code (frontend/kernel.py source_lines)
    "lines": opt(ListOf(Tuple(Text(), NAT, Text()))),
    "pro": opt(PRO),      # a Pro kernel's launch facts (prolang)
    "arena_bytes": opt(EXPR),     # the GM arena of the tensors with `arena` (gm-reuse)
    # pass options the op file set (frontend/passopts.py), applied by pypto-lower
    # (passes/docopts.py); the passes whose result to print (* = every pass)
    "pass_options": opt(ListOf(PASS_OPTION)),
    "print_after": opt(ListOf(Text())),
}


# what the block-level passes decided, kept on a block and its program for readers and for
# the stages after them: sync (insert-sync: event ids used per pipe pair "P_Q", and
# "barrier": pipe barriers where the ids ran out; present = the program carries its own
# sync), nbuffer (nbuffer + alloc: per memory space [buffers asked, buffers given]),
# merge (nbuffer: [grid dim, instances run by one task])
BLOCK_PLAN = {"sync": opt(MapOf(Ident(), NAT)), "nbuffer": opt(MapOf(SPACE, ListOf(Int(1), 2))),
              "merge": opt(Tuple(NAT, Int(1)))}


def _m(name, attrs, operands=(), results=(), regions=0):
    return OpDef(name, M, operands, 0, results, regions, attrs, None, {})


DEFS = [
    _m("source", {}, regions=1),
    _m("gm", {"index": opt(NAT), "param": opt(Ident()), "role": opt(Str("input", "output")),
              "local": opt(Ident()), "workspace": opt(Bool()),
              "arena": opt(EXPR)}, results=("tensor",)),    # byte offset (gm-reuse)
    _m("kernel", {"grid": attr(EXPRS), "name": attr(Ident()), "op": attr(Ident()),
                  "tile": attr(ListOf(Int(1))), "label": opt(Text()),
                  "scope": opt(Tuple(Int(0), Bool()))}, regions=1),
    _m("block", {"name": attr(Ident()), "grid": attr(EXPRS), "core": attr(CORE),
                 "kernels": attr(NAMES), "ops": attr(NAMES), "buffers": opt(BUFFERS),
                 "labels": opt(ListOf(Text())), **BLOCK_PLAN},
       regions=1),
    _m("program", {"name": attr(Ident()), "core": attr(CORE), "grid_rank": attr(NAT),
                   "scalars": attr(NAMES), "buffers": attr(BUFFERS), "ops": attr(NAMES),
                   **BLOCK_PLAN},
       regions=1),
    _m("task", {"program": attr(Ident()), "block": attr(Ident()), "grid": attr(EXPRS),
                "scalars": attr(EXPRS), "reads": attr(ListOf(BOX)),
                "writes": attr(ListOf(BOX)), "ops": attr(NAMES),
                "after": attr(ListOf(NAT)), "labels": opt(ListOf(Text()))},
       operands=("tensor*",)),
    _m("schedule", {"target": attr(Text()), "cores": attr(MapOf(CORE, NAT)),
                    "order": attr(ListOf(NAT)), "bindings": attr(MapOf(Ident(), NAT)),
                    "instances": attr(OneOf(Null(), ListOf(Tuple(NAT, NAT, NAT, Num(),
                                                                  Num())))),
                    "launch_cost_us": opt(ListOf(Num())), "makespan_us": opt(Num()),
                    "critical_path_us": opt(Num()), "lower_bound_us": opt(Num()),
                    "work_us": opt(Num()), "bandwidth_us": opt(Num()), "bound": opt(Text()),
                    "gm_bytes": opt(NAT),
                    "critical_tasks": opt(ListOf(NAT)),
                    "data_dependent": opt(ListOf(Ident()))}),
    _m("code", {"backend": attr(Str("c", "numpy")), "listing": attr(Text()),
                "source": attr(Text())}),
    _m("run", RUN),
]
