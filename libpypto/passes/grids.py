"""Grids of tiles over a (possibly symbolic) shape, for tensor-to-tile: how many tiles a dim
takes, each tile's offsets and valid extents. A size symbol the document bounds (its
`max`, analysis/versions.py) pins a count: cdiv(H, 4096) is 1 when 1 <= H <= 4096."""
from __future__ import annotations

from ..ir import expr as E


def _clip(tile, shape) -> list:
    return [_clip1(t, s) for t, s in zip(tile, shape)]


def _clip1(t: int, s) -> int:
    return min(t, s) if isinstance(s, int) else t


def _count(s, t: int, ranges) -> object:
    """cdiv(s, t) tiles, a constant when the ranges pin it (a bounded size symbol)."""
    n = E.cdiv(s, t)
    if ranges and not isinstance(n, int):
        lo, hi = E.bounds(n, ranges)
        if lo is not None and lo == hi:
            return lo
    return n


def _grid(shape, tile, limit, ranges=None) -> tuple[list, list, list]:
    grid = [_count(s, t, ranges) for s, t in zip(shape, tile)]
    offs = [E.mul(E.sym(f"g{d}"), t) if g != 1 else 0 for d, (g, t) in enumerate(zip(grid, tile))]
    valid = [E.minimum(t, E.sub(lim, o)) for t, lim, o in zip(tile, limit, offs)]
    return grid, offs, valid
