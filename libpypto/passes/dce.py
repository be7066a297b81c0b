"""dce: drop what no block reads: workspace stores, workspaces, instructions and tiles.

A workspace (a `gm` tensor the lowering made for an intermediate, never a parameter or a
local) that no block loads, gathers from or scatters with goes, and so do the stores into
it; then every instruction none of whose results is read and every tile nothing uses, until
nothing more goes (an instruction feeding only a dropped store goes too).
"""
from __future__ import annotations

from ..ir.core import Document, copy_doc
from ..ir.instr import dests, sources
from .footprint import blocks


def dce(doc: Document, *, target) -> Document:
    """Drop unread workspaces and their stores, then dead instructions and tiles."""
    doc = copy_doc(doc)
    blks = blocks(doc)
    read = set()
    for b in blks:
        for op in b.walk():
            if op.name in ("tload", "tgather"):
                read.add(op.operands[1])
            elif op.name == "tscatter":
                read.update(op.operands)
    dead = {op.result for op in doc.body
            if op.name == "gm" and op.attrs.get("workspace") and op.result not in read}
    for b in blks:
        b.regions[0] = _without_stores(b.regions[0], dead)
        drop_unused(b.regions[0])
    doc.body = [op for op in doc.body if not (op.name == "gm" and op.result in dead)]
    return doc


def _without_stores(ops: list, dead: set) -> list:
    out = []
    for op in ops:
        if op.name == "tstore" and op.operands[1] in dead:
            continue
        op.regions = [_without_stores(r, dead) for r in op.regions]
        out.append(op)
    return out


def drop_unused(body: list) -> None:
    """Delete tiles (and the instructions computing them) that nothing reads any more."""
    while True:
        reads: set = set()
        for top in body:
            for op in top.walk():
                if op.name not in ("tile", "for", "if"):
                    reads.update(sources(op))
        n = sum(1 for top in body for _ in top.walk())

        def dead(op):         # an instruction none of whose results is read
            outs = dests(op) if op.name not in ("tile", "for", "if") else None
            return bool(outs) and not any(v in reads for v in outs)

        body[:] = _keep(body, lambda op: not dead(op))
        used = {v for top in body for op in top.walk() for v in op.operands}
        body[:] = _keep(body, lambda op: op.name != "tile" or op.result in used)
        if sum(1 for top in body for _ in top.walk()) == n:
            return


def _keep(ops: list, pred) -> list:
    """ops (and their regions, recursively) without the ops pred rejects."""
    out = []
    for op in ops:
        if pred(op):
            op.regions = [_keep(r, pred) for r in op.regions]
            out.append(op)
    return out
