"""forward: a tile stored and loaded again in the same block stays on chip.

A top-level tload that reads exactly the footprint (tensor, offsets, valid extents, tile
shape) that the block's last top-level tstore into that tensor wrote takes the stored tile
instead: the same tile (an alias) when the types agree or when the loaded tile is only
stored again (the store converts the dtype, and leaves L0C through FIX), else a `tmov` into
the loaded tile (another memory space or dtype). A load of any other footprint still reads
GM. A store forgets what was stored into its tensor before; a gather or scatter forgets
everything about the tensors it touches. Stores stay: dce drops the ones nobody reads.
"""
from __future__ import annotations

from ..ir.core import Document, Op, copy_doc
from .assign_memory import pipe_of
from .footprint import access_key, blocks, grid_key, replace_uses
from .nbuffer import merge_loop


def forward(doc: Document, *, target) -> Document:
    """Forward stored tiles to later loads of the same footprint (alias, or tmov)."""
    doc = copy_doc(doc)
    for blk in blocks(doc):
        inst = merge_loop(blk)          # a merged block: the body of one of its instances
        inst.regions[0] = forward_body(inst.regions[0], blk.attrs["grid"])
    return doc


def forward_body(body: list, grid: list) -> list:
    """The body of a block over grid with loads of just-stored footprints replaced (edits
    body's ops)."""
    grid = grid_key(grid)
    stored: dict = {}        # gm -> {footprint key: tile last stored there}
    alias: dict = {}
    dead_tiles: set = set()
    only_stored = _only_stored(body)
    out: list = []
    for op in body:
        op.operands = [alias.get(v, v) for v in op.operands]
        if op.name == "tstore":
            stored[op.operands[1]] = {access_key(op, grid): op.operands[0]}
        elif op.name in ("tscatter", "tgather"):
            for v in op.operands:
                stored.pop(v, None)
        elif op.name == "tload":
            src = stored.get(op.operands[1], {}).get(access_key(op, grid))
            if src is not None:
                dst = op.operands[0]
                if src is dst:          # loading back what the tile holds: nothing to do
                    continue
                if src.type == dst.type or (dst in only_stored and src.type.space in
                                            ("ub", "l0c")):
                    alias[dst] = src
                    dead_tiles.add(dst)
                else:
                    mov = Op("tmov", [dst, src], [], {}, [], op.loc)
                    mov.attrs["pipe"] = pipe_of(mov)
                    out.append(mov)
                continue
        out.append(op)
    return replace_uses(out, alias, dead_tiles)


def _only_stored(body: list) -> set:
    """Tiles whose every use (besides the load that fills them) is as a tstore's source."""
    uses: dict = {}
    for top in body:
        for op in top.walk():
            for i, v in enumerate(op.operands):
                if op.name == "tload" and i == 0:
                    continue
                uses.setdefault(v, []).append(op.name == "tstore" and i == 0)
    return {v for v, u in uses.items() if all(u)}
