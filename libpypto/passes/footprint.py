"""Footprints of GM accesses: what a tload or tstore touches, as one comparable key.

fuse compares footprints to decide whether an instance only needs what it produced itself;
forward and cse compare them to find loads of what was just stored or already loaded. All
three must agree, so the key is made here only.
"""
from __future__ import annotations

from .assign_memory import pipe_of


def access_key(op) -> tuple:
    """What a tload/tstore touches: its tensor and footprint (offsets, valid, tile shape)."""
    tile = op.operands[0]
    return (op.operands[1], tuple(op.attrs["offsets"]), tuple(op.attrs["valid"]),
            tile.type.shape)


def blocks(doc) -> list:
    """Every block of a block-level document, in program order (inside regions too)."""
    return [op for top in doc.body if top.name not in ("source", "gm")
            for op in top.walk() if op.name == "block"]


def replace_uses(body: list, alias: dict, dead_tiles: set) -> list:
    """body with every use of an aliased tile replaced by its final target (pipes follow the
    new operands: a store may now leave from L0C, through FIX) and dead_tiles undeclared."""
    if alias:
        for top in body:
            for op in top.walk():
                op.operands = [_resolve(alias, v) for v in op.operands]
                if "pipe" in op.attrs:
                    op.attrs["pipe"] = pipe_of(op)
    return [op for op in body if not (op.name == "tile" and op.result in dead_tiles)]


def _resolve(alias: dict, v):
    while v in alias:
        v = alias[v]
    return v
