"""The `section` marker of mixed programs: one program for a cluster's cube core and its
vector cores (made by the mix-fuse pass, libpypto/passes/mix_fuse.py).

    section {core="cube", pipe="S"}             the instructions after it run on the cube core
    section {core="vector", sub=0, pipe="S"}    ... on vector core `sub` (0 or 1) of the cluster

A section marker says on which core of the cluster the instructions after it run, up to the
next marker the program reaches (loops and branches included: the core of an instruction
is that of the last marker executed before it in the instance's program order). A program
with markers is a *mixed program for a cluster*: on a target with separate cube and vector
cores each core runs its own part (libpypto/sim places the program on a cluster of one cube
core and two vector cores; its cross_set / cross_wait events, ir/pro_ops.py, order the
parts as they order a Pro kernel's cores). Its program order is one valid order of all the
parts together, so a target whose cores do both (the host) runs the program as it is: the
markers are no-ops, as are the events (the C and numpy implementations are those of the sync
instructions).
"""
from __future__ import annotations

from .opdef import PIPE, Int, OpDef, Str, attr, opt

DEFS = [
    OpDef("section", ("tile",), (), 0, (), 0,
          {"core": attr(Str("cube", "vector")), "sub": opt(Int(0, 1)), "pipe": opt(PIPE)},
          None, {"c": "i_sync", "numpy": "tsync", "pto": "SECTION"}, (), (), "S", "SECTION"),
]


def clustered(prog) -> bool:
    """Is prog (a block or program op) a mixed program for a cluster (it has sections)?"""
    return prog.attrs.get("core") == "mixed" and any(
        op.name == "section" for top in prog.regions[0] for op in top.walk())


def part(op) -> tuple:
    """The core a section marker names: (0, "cube") or (1 + sub, "vector")."""
    if op.attrs["core"] == "cube":
        return 0, "cube"
    return 1 + int(op.attrs.get("sub", 0)), "vector"


SECOND_UB = 2       # vector core 1: its UB tiles are placed apart from vector core 0's


def second_ub_tiles(body: list) -> set:
    """The UB tiles a program declares in vector core 1's part (after its section marker):
    alloc places them in that core's own UB, apart from vector core 0's (the same addresses
    may hold both), and a target whose one core runs every part (the host) gives them a
    UB region of their own."""
    out: set = set()

    def visit(ops, cur):
        for op in ops:
            if op.name == "section":
                cur = part(op)[0]
            elif op.name == "tile" and cur == SECOND_UB and op.result.type.space == "ub":
                out.add(op.result)
            for r in op.regions:
                visit(r, cur)
    visit(body, None)
    return out
