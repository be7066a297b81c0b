"""Which operands of a tile instruction it writes and which it reads (destination first),
from the instruction's definition (tile_ops.py): most write their first operand and read
the rest; a few write two tiles, read their destination (accumulate into it) or work on GM
tensors only."""
from __future__ import annotations

from .defs import dests, sources

__all__ = ["dests", "sources"]
