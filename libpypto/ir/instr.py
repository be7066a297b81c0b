"""Which operands of a tile instruction it writes and which it reads (destination first).

Most instructions write their first operand and read the rest; a few write two tiles, read
their destination (accumulate into it) or work on GM tensors only.
"""
from __future__ import annotations

from .types import TileType

_DESTS = {"tsort": (0, 1), "targreduce": (0, 1), "tscan": (0, 2), "tstore": (),
          "tscatter": ()}
_READS_DEST = {"tmatmul": (0,), "targreduce": (0, 1), "tscan": (2,)}


def dests(op) -> list:
    """The tiles op writes."""
    pos = _DESTS.get(op.name, (0,))
    return [op.operands[i] for i in pos if isinstance(op.operands[i].type, TileType)]


def sources(op) -> list:
    """The tiles op reads."""
    written = set(_DESTS.get(op.name, (0,))) - set(_READS_DEST.get(op.name, ()))
    return [v for i, v in enumerate(op.operands)
            if i not in written and isinstance(v.type, TileType)]
