"""tensor-to-tile's rule for `bitonic`, one kernel of a sort longer than a tile
(frontend/sorts.py): the values and int32 positions of each row, N a power of two, in tiles
of t (a power of two) along the last dim.

- mode tile: a grid over the rows and the N / t tiles; each instance loads its two tiles,
  runs the steps inside them (tbitonic) and stores them;
- mode pair (distance d >= t): a grid over the rows, the N / 2d blocks and the d / t tile
  pairs of a block; an instance loads the tiles at b 2d + a t and d further, compares and
  exchanges them (tbitonic2) and stores both;
- mode mirror (block 2d > t): the same over blocks of 2d, the partner of the tile at a t is
  the one at 2d - (a + 1) t, element j against element t - 1 - j.
Only loads and stores at offsets known from the grid: what fuse, the scheduler and the
simulator see of a kernel; each kernel writes two footprints of each result.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.core import Op, Value
from ..ir.types import TileType


def _new_tile(body: list, dt, shape) -> Value:
    v = Value(TileType("any", dt, tuple(int(s) for s in shape)))
    body.append(Op("tile", [], [v], {}, [], None))
    return v


def bitonic_kernel(x, op) -> None:
    """Expand a bitonic op (x: the tensor-to-tile expander)."""
    v, i = op.operands
    a = op.attrs
    shape = list(v.type.shape)
    lead, N = shape[:-1], shape[-1]
    tile = list(a["tile"])
    t = tile[-1]
    lt = [min(c, s) if isinstance(s, int) else c for c, s in zip(tile[:-1], lead)]
    common = {"n": a["n"], "descending": a["descending"]}
    body: list = []
    g = [E.sym(f"g{k}") for k in range(len(lead) + 2)]
    rows = [E.mul(g[k], c) for k, c in enumerate(lt)]
    if a["mode"] == "tile":
        grid = [E.cdiv(s, c) for s, c in zip(lead, lt)] + [N // t]
        offs = [rows + [E.mul(g[len(lead)], t)]]
    else:
        d = a["dist"]
        grid = [E.cdiv(s, c) for s, c in zip(lead, lt)] + [N // (2 * d), d // t]
        base = E.add(E.mul(g[len(lead)], 2 * d), E.mul(g[len(lead) + 1], t))
        hi = E.add(base, d) if a["mode"] == "pair" else \
            E.sub(E.add(E.mul(g[len(lead)], 2 * d), 2 * d), E.mul(E.add(g[len(lead) + 1], 1), t))
        offs = [rows + [base], rows + [hi]]
    tshape = lt + [t]
    valid = [x.valid_in(v, o, tshape) for o in offs]
    srcs = [[x.load(body, w, tshape, o, val) for w in (v, i)] for o, val in zip(offs, valid)]
    dsts = [[_new_tile(body, w.type.dtype, tshape) for w in (v, i)] for _ in offs]
    flat_d = [t_ for pair in dsts for t_ in pair]
    flat_s = [t_ for pair in srcs for t_ in pair]
    if a["mode"] == "tile":
        body.append(Op("tbitonic", flat_d + flat_s, [], {**common, "steps": a["steps"]}, [],
                       op.loc))
    else:
        body.append(Op("tbitonic2", flat_d + flat_s, [], {**common,
                                                          "mirror": a["mode"] == "mirror"},
                       [], op.loc))
    homes = [x.workspace(op, k) for k in range(2)]
    for (dv, di), o, val in zip(dsts, offs, valid):
        x.store(body, dv, homes[0], o, val, op.loc)
        x.store(body, di, homes[1], o, val, op.loc)
    for k in range(2):
        x.tile_of[op.results[k]] = tshape
    x.kernel(op, grid, body, tshape)
