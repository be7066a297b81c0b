"""cse: loads of the same footprint into tiles of the same type share one tile.

Within a block's top level, a tload whose tensor, footprint (offsets, valid extents, tile
shape) and tile type match an earlier load is dropped and its tile replaced by the earlier
one, unless a store into that tensor, or a gather or scatter touching it, came in between.
Loads of the same footprint into tiles of another type (space or dtype) stay apart.
"""
from __future__ import annotations

from ..ir.core import Document, copy_doc
from .footprint import access_key, blocks, grid_key, replace_uses
from .nbuffer import merge_loop


def cse(doc: Document, *, target) -> Document:
    """Share one tile between duplicate loads (same footprint, same tile type)."""
    doc = copy_doc(doc)
    for blk in blocks(doc):
        inst = merge_loop(blk)          # a merged block: the body of one of its instances
        inst.regions[0] = share_loads(inst.regions[0], blk.attrs["grid"])
    return doc


def share_loads(body: list, grid: list) -> list:
    """The body of a block over grid with duplicate loads dropped (edits body's ops)."""
    grid = grid_key(grid)
    loaded: dict = {}        # gm -> {footprint key + tile type: tile loaded from there}
    alias: dict = {}
    dead_tiles: set = set()
    kept: set = set()        # tiles of the loads kept: never aliased away (a tile loaded twice)
    out: list = []
    for op in body:
        op.operands = [alias.get(v, v) for v in op.operands]
        if op.name == "tstore":
            loaded.pop(op.operands[1], None)
        elif op.name in ("tscatter", "tgather"):
            for v in op.operands:
                loaded.pop(v, None)
        elif op.name == "tload":
            dst = op.operands[0]
            seen = loaded.setdefault(op.operands[1], {})
            key = access_key(op, grid) + (dst.type,)
            if key in seen and dst not in kept:
                alias[dst] = seen[key]
                dead_tiles.add(dst)
                continue
            seen[key] = dst
            kept.add(dst)
        out.append(op)
    return replace_uses(out, alias, dead_tiles)
