"""Footprints of GM accesses: what a tload or tstore touches, as one canonical key.

fuse compares footprints to decide whether an instance only needs what it produced itself;
forward and cse compare them to find loads of what was just stored or already loaded. All
three must agree, so the key is made here only, in one canonical form: two accesses that
touch the same box in every instance of the grid get the same key however their offsets
and valid extents are written. What is known is the grid: g_d runs over [0, grid_d - 1], so
g_d is 0 where grid_d is 1, and an argument of a min (max) that is never smaller (larger)
than another over the whole grid goes: min(1, B - g0) over a grid of B rows of 1 is 1,
min(16, 48 - g1*16) over a grid of 3 is 16, min(8, N - g0*8) over cdiv(N, 8) stays (the
tail). Tile shapes compare without leading 1s: a [64, 64] and a [1, 1, 64, 64] tile hold the
same elements in the same places.
"""
from __future__ import annotations

import functools

from ..ir import expr as E
from .assign_memory import pipe_of


def access_key(op, grid: tuple) -> tuple:
    """What a tload/tstore touches in the instances of grid: its tensor, canonical offsets,
    canonical valid extents and tile shape without leading 1s (pass grid through grid_key
    once when making many keys)."""
    if type(grid) is not tuple:
        grid = grid_key(grid)
    shape = op.operands[0].type.shape
    while len(shape) > 1 and shape[0] == 1:
        shape = shape[1:]
    a = op.attrs
    return (op.operands[1], _canonical_all(a["offsets"], grid), _canonical_all(a["valid"], grid),
            tuple(shape))


def _canonical_all(es: list, grid: tuple) -> tuple:
    """canonical() of each of es (inlined lookups: this runs for every access of every
    fusion attempt)."""
    memo, gid, out = _MEMO, id(grid), []
    for e in es:
        if type(e) is not int:
            hit = memo.get((id(e), gid))
            e = hit[2] if hit is not None else canonical(e, grid)
        out.append(e)
    return tuple(out)


def grid_key(grid) -> tuple:
    """One tuple object per distinct grid: canonical()'s cache then compares grids by
    identity instead of expression by expression."""
    g = tuple(grid)
    return _GRIDS.setdefault(g, g) if len(_GRIDS) < 4096 else g


_GRIDS: dict = {}


def canonical(e, grid: tuple):
    """e in one form for the instances of grid (see the module docstring): grid variables
    of one-instance dims are 0, dominated arguments of a top-level min or max go."""
    key = (id(e), id(grid))
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) >= 1 << 16:
            _MEMO.clear()
        hit = _MEMO[key] = (e, grid, _canonical(e, grid))
    return hit[2]


# (id(e), id(grid)) -> (e, grid, canonical(e, grid)): an entry keeps its e and grid alive,
# so no other object can have their ids while it exists. The same expression objects come
# back on every fusion attempt (clones share their attributes' expressions): looked up by
# identity they cost no walk of the expression; equal expressions made apart (one per
# kernel) share one computation through _canonical's cache.
_MEMO: dict = {}


@functools.lru_cache(maxsize=4096)
def _canonical(e, grid: tuple):
    if not isinstance(e, E.Expr):
        return e
    fixed = {f"g{d}": 0 for d, n in enumerate(grid) if n == 1}
    if fixed:
        e = E.substitute(e, fixed)
    if not isinstance(e, E.Expr) or e.op not in ("min", "max"):
        return e
    keep = list(e.args)
    for a in e.args:
        rest = [o for o in keep if o is not a]
        if any(_nonneg(E.sub(a, o) if e.op == "min" else E.sub(o, a), grid) for o in rest):
            keep = rest
    if len(keep) == len(e.args):
        return e
    return E.minimum(*keep) if e.op == "min" else E.maximum(*keep)


def _nonneg(d, grid: tuple) -> bool:
    """Is d >= 0 in every instance of grid, whatever the sizes (symbols >= 0)?

    A grid variable that d holds only as c * g_d is set where the term is smallest (0, or
    grid_d - 1, which may be symbolic: B - g0 - 1 at g0 = B - 1 is 0); any other grid
    variable keeps its range [0, grid_d - 1] for E.bounds."""
    if isinstance(d, int):
        return d >= 0
    terms = [_coeff(t) for t in (d.args if d.op == "add" else (d,))]
    env, ranges = {}, {}
    for i, n in enumerate(grid):
        g = E.sym(f"g{i}")
        linear = [c for c, base in terms if base == g]
        elsewhere = any(base is not None and base != g and f"g{i}" in E.free_symbols(base)
                        for _, base in terms)
        if len(linear) == 1 and not elsewhere:
            env[f"g{i}"] = 0 if linear[0] > 0 else E.sub(n, 1)
        else:
            ranges[f"g{i}"] = (0, n - 1 if isinstance(n, int) else None)
    lo, _ = E.bounds(E.substitute(d, env), ranges)
    return lo is not None and lo >= 0


def _coeff(t) -> tuple:
    """(c, base) with t == c * base; (t, None) for a constant."""
    if isinstance(t, int):
        return t, None
    if t.op == "mul" and isinstance(t.args[-1], int):
        rest = t.args[:-1]
        return t.args[-1], rest[0] if len(rest) == 1 else E.Expr("mul", rest)
    return 1, t


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
    seen = set()
    while v in alias and v not in seen:     # a cycle (a hand-made file) ends, never hangs
        seen.add(v)
        v = alias[v]
    return v
