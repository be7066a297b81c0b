"""Hypothesis strategies over the IR schema: a value for every attribute grammar (the Kinds of
libpypto/ir/opdef.py and module_ops.py), types, and symbolic expressions. Values drawn here
pass the grammar, so they reach what comes after it: the verifier's cross-op checks, the
passes, the scheduler, the code generators and the runtimes."""
from __future__ import annotations

from hypothesis import strategies as st

from libpypto.ir import expr as E
from libpypto.ir import module_ops as M
from libpypto.ir import opdef as D
from libpypto.ir.types import DTYPES, SPACES, ScalarType, TensorType, TileType

SYMBOLS = ["N", "M", "S", "x_0", "h_0", "out_0", "g0", "g1", "i0", "k"]
NAMES = ["x", "y", "out", "h", "w_up", "p0", "p1", "b0", "k0", "softmax", "main", "N", "i0"]
EDGE_INTS = [0, 1, 2, 31, 32, 33, 255, 256, 1 << 20, (1 << 31) - 1, 1 << 31, 1 << 40, D.INT_LIMIT]


def ints(lo: int = -D.INT_LIMIT, hi: int = D.INT_LIMIT):
    edges = [v for v in EDGE_INTS + [-1, -32, lo, hi] if lo <= v <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, min(hi, max(lo, 0) + 4096)),
                     st.integers(lo, hi))


def exprs(small: bool = False):
    """Symbolic integer expressions, normalised as the library builds them."""
    base = st.one_of(ints(-64, 4096) if small else ints(), st.sampled_from(SYMBOLS).map(E.sym))
    pos = st.integers(1, 1 << 12)
    return st.recursive(base, lambda c: st.one_of(
        st.tuples(c, c).map(lambda t: E.add(*t)),
        st.tuples(c, c).map(lambda t: E.mul(*t)),
        st.tuples(c, pos).map(lambda t: E.floordiv(*t)),
        st.tuples(c, pos).map(lambda t: E.cdiv(*t)),
        st.tuples(c, c).map(lambda t: E.minimum(*t)),
        st.tuples(c, c).map(lambda t: E.lt(*t))), max_leaves=6)


def anything():
    leaf = st.one_of(st.none(), st.booleans(), ints(), st.floats(), st.text(max_size=8))
    return st.recursive(leaf, lambda c: st.one_of(
        st.lists(c, max_size=3), st.dictionaries(st.text(max_size=6), c, max_size=3)),
        max_leaves=8)


def value(kind: D.Kind):
    """A value that kind's grammar accepts (most of the time: an Ex may hold an expression
    whose ints grow past the limit when folded)."""
    k = type(kind)
    if k is M.PowerOfTwo:
        return st.integers(0, 61).map(lambda e: 1 << e)
    if k is M.Positive:
        return st.one_of(st.floats(min_value=1e-9, max_value=1e15), st.integers(1, D.INT_LIMIT))
    simple = {D.Bool: st.booleans, D.Null: st.none, D.Anything: anything,
              D.Text: lambda: st.text(max_size=40), D.Bytes: lambda: st.binary(max_size=32),
              D.Ident: lambda: st.one_of(st.sampled_from(NAMES), st.from_regex(
                  D.IDENT, fullmatch=True).filter(lambda s: len(s) < 16))}
    if k in simple:
        return simple[k]()
    if k is D.Int:
        return ints(kind.lo, kind.hi)
    if isinstance(kind, D.Num):
        return st.one_of(ints(), st.floats())
    if k is D.Ex:
        return st.one_of(exprs(), st.floats()) if kind.num else exprs()
    if k is D.Str:
        return st.sampled_from(kind.choices)
    return _composite(kind)


def _composite(kind: D.Kind):
    k = type(kind)
    if k is D.OneOf:
        return st.one_of(*[value(x) for x in kind.kinds])
    if k is D.ListOf:
        n = kind.n
        return st.lists(value(kind.item), min_size=n or 0, max_size=n if n is not None else 5)
    if k is D.Tuple:
        return st.tuples(*[value(x) for x in kind.items]).map(list)
    if k is D.DictOf:
        return attrs(kind.schema)
    if k is D.MapOf:
        return st.dictionaries(value(kind.key), value(kind.value), max_size=4)
    raise TypeError(f"no strategy for the grammar {kind!r}")


def attrs(schema: dict):
    """A dict of attributes for a schema (name -> (kind, required))."""
    return st.fixed_dictionaries({n: value(k) for n, (k, req) in schema.items() if req},
                                 optional={n: value(k) for n, (k, req) in schema.items()
                                           if not req})


def types():
    """A value type: a tensor of dims >= 0 or expressions, a tile of dims >= 1 in a space,
    a scalar (what the verifier accepts of a type on its own)."""
    dtype = st.sampled_from(sorted(DTYPES)).map(DTYPES.__getitem__)
    dims = st.lists(st.one_of(ints(0, D.INT_LIMIT), exprs(small=True)), max_size=4)
    tile_dims = st.lists(ints(1, D.INT_LIMIT), max_size=3)
    return st.one_of(
        st.tuples(dtype, dims).map(lambda t: TensorType(t[0], tuple(t[1]))),
        st.tuples(st.sampled_from(SPACES), dtype, tile_dims).map(
            lambda t: TileType(t[0], t[1], tuple(t[2]))),
        dtype.map(ScalarType))
