"""tensor-to-tile's reshape rules beyond the simple one (a grid over the leading dims the two
shapes share, each instance copying the whole static rest): merges_leading, a symbolic
leading dim merged with static ones (a paged cache to rows); reshape_blocks, by blocks,
where the simple rule cannot go: the reshaped
trailing dims are symbolic ([B, S, H] -> [B*S, H], [T, H] -> [B, S, H] with S a size), or the
static rest is past an eighth of the target's UB (pack of a big multi-dim tensor).

A reshape keeps the row-major order of the elements, so it is a copy of blocks of B
consecutive elements: B is a block of both shapes, c consecutive entries of one dim times
every dim after it (all static; c divides that dim, or its static factor when it is
symbolic). The kernel's grid runs over the output's blocks (its leading dims, and the
blocked dim's count of c-sized pieces); instance g copies the source block of the same
row-major number (its dims found by division and remainder, symbolic where the shape is)
with one treshape. B is the largest such block up to an eighth of UB (the copy holds two
tiles of it, and the allocator may double them). The source must be
valid in full (a view with a tail takes the simple rule or its error).
"""
from __future__ import annotations

import math

from ..ir import expr as E
from ..ir.core import Op, Value
from ..ir.types import TileType


def _divisors(n: int) -> list:
    out = set()
    i = 1
    while i * i <= n:
        if n % i == 0:
            out.update((i, n // i))
        i += 1
    return sorted(out)


def _static_factor(d) -> int:
    if isinstance(d, int):
        return d
    return E._split_coeff(d)[0] if isinstance(d, E.Expr) else 1


def blocks(shape) -> dict:
    """B -> (dim i, piece c) for every block of shape: c entries of dim i (c divides it)
    times the static dims after i."""
    out: dict = {}
    suffix = 1
    for i in range(len(shape) - 1, -1, -1):
        for c in _divisors(max(1, _static_factor(shape[i]))):
            out.setdefault(c * suffix, (i, c))
        if not isinstance(shape[i], int):
            break
        suffix *= shape[i]
    return out


def _valid_in_full(x, v) -> bool:
    return all(E.simplify_in(E.sub(h, s), x.ranges) == 0
               for h, s in zip(x.home[v].valid, v.type.shape))


def reshape_blocks(x, op, cap_bytes: int) -> bool:
    """Expand reshape op by blocks (see the module docstring); False where no block fits."""
    src = op.operands[0]
    sin, sout = list(src.type.shape), list(op.result.type.shape)
    dt = op.result.type.dtype
    if not sin or not sout or not _valid_in_full(x, src):
        return False
    bin_, bout = blocks(sin), blocks(sout)
    common = [b for b in bin_ if b in bout and b * dt.itemsize <= cap_bytes]
    if not common:
        return False
    size = max(common)
    (i, ci), (j, co) = bin_[size], bout[size]
    in_grid = sin[:i] + [E.floordiv(sin[i], ci)]
    out_grid = sout[:j] + [E.floordiv(sout[j], co)]
    g = [E.sym(f"g{d}") if n != 1 else 0 for d, n in enumerate(out_grid)]
    lin = 0
    for gv, n in zip(g, out_grid):
        lin = E.add(E.mul(lin, n), gv)
    idx, rest = [], lin
    for d in range(len(in_grid) - 1, -1, -1):
        n = in_grid[d]
        idx.insert(0, E.mod(rest, n) if d else rest)
        rest = E.floordiv(rest, n)
    t_in = [1] * i + [ci] + sin[i + 1:]
    t_out = [1] * j + [co] + sout[j + 1:]
    offs_in = idx[:i] + [E.mul(idx[i], ci)] + [0] * (len(sin) - i - 1)
    offs_out = g[:j] + [E.mul(g[j], co)] + [0] * (len(sout) - j - 1)
    body: list = []
    s = x.load(body, src, t_in, offs_in, list(t_in))
    d = Value(TileType("any", dt, tuple(int(v) for v in t_out)))
    body.append(Op("tile", [], [d], {}, [], None))
    body.append(Op("treshape", [d, s], [], {}, [], op.loc))
    x.store(body, d, x.workspace(op), offs_out, list(t_out), op.loc)
    x.tile_of[op.result] = t_out
    x.kernel(op, out_grid, body, t_out)
    return True


def merges_leading(x, op, sin: list, sout: list) -> bool:
    """[n, a, b, ...] -> [n*a*..., c, ...] with n symbolic and the rest static (the
    reference's inplace reshape of a paged KV cache [blocks, block_size, heads, dim] to
    rows): a grid over n, each instance copying one leading slice as rows. False where
    the reshape is not of this form."""
    if isinstance(sin[0], int) or not all(isinstance(d, int) for d in sin[1:] + sout[1:]):
        return False
    inner = 1
    for d in sin[1:]:
        inner *= d
    rest = math.prod(sout[1:])
    rows = inner // max(1, rest)
    if rows * rest != inner or E.mul(sin[0], rows) != sout[0]:
        return False
    g0 = E.sym("g0")
    body: list = []
    src = x.load(body, op.operands[0], [1] + sin[1:], [g0] + [0] * (len(sin) - 1),
                 [1] + sin[1:])
    dst = Value(TileType("any", op.result.type.dtype, tuple([rows] + sout[1:])))
    body.append(Op("tile", [], [dst], {}, [], None))
    body.append(Op("treshape", [dst, src], [], {}, [], op.loc))
    x.store(body, dst, x.workspace(op), [E.mul(g0, rows)] + [0] * (len(sout) - 1),
            [rows] + sout[1:], op.loc)
    x.tile_of[op.result] = [rows] + sout[1:]
    x.kernel(op, [sin[0]], body, [rows] + sout[1:])
    return True
