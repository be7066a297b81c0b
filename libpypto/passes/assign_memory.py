"""assign-memory: place every tile in a memory space and put every instruction on a pipe.

Cube operands are loaded into L1 and extracted into L0A / L0B; matmul accumulates in L0C;
vector tiles live in UB. Copy-in runs on MTE2, copy-out on MTE3 (from UB) or FIX (from L0C),
L1 -> L0 extraction on MTE1, matmul on M, vector work on V: each instruction's pipe rule is
part of its definition (libpypto/ir/tile_ops.py).
"""
from __future__ import annotations

from ..ir.core import Document, copy_doc
from ..ir.defs import OPS, pipe_of
from ..ir.types import TileType

__all__ = ["assign_memory", "pipe_of", "space_rules"]


def assign_memory(doc: Document, *, target) -> Document:
    """Place tiles in UB / L1 / L0A / L0B / L0C and assign each instruction its pipe."""
    doc = copy_doc(doc)
    for k in doc.walk():
        if k.name == "kernel":
            _assign(k.regions[0])
    return doc


def space_rules(body: list) -> dict:
    """Tile -> required memory space, from how cube instructions use it; the rest go to UB."""
    want: dict = {}
    for top in body:
        for op in top.walk():
            if op.name == "tmatmul":
                acc, a, b = op.operands
                want[acc], want[a], want[b] = "l0c", "l0a", "l0b"
            elif op.name == "textract":
                want[op.operands[1]] = "l1"
    return want


def _assign(body: list) -> None:
    want = space_rules(body)
    for top in body:
        for op in top.walk():
            if op.name == "tile":
                t = op.result.type
                space = want.get(op.result, "ub") if t.space == "any" else t.space
                op.result.type = TileType(space, t.dtype, t.shape)
    for top in body:
        for op in top.walk():
            if OPS[op.name].pipe is not None:
                op.attrs["pipe"] = pipe_of(op)
