"""Sort-like ops (sort, argsort, topk) along any dim: the tile holds whole rows of the
sorted dim; along a dim other than the last the tensor is permuted to put it last, sorted,
and the results permuted back."""
from __future__ import annotations

from ..ir import expr as E
from ..ir.tensor_ops import INDEX
from ..ir.types import TensorType
from .composites import concat
from .ops import (_arith, _b, _dims, _norm_shape, _result, _tensor, _tile, arange, expand_clone,
                  full, view)
from .tensor import TraceTensor


def _sort_like(name: str, x, dim: int, results: list, attrs: dict):
    """Sort-like ops work along the last dim of a tile that holds whole rows; along another
    dim d the tensor is permuted (d <-> last), sorted, and the results permuted back. The
    tile (the vec tile shapes, in the tensor's own dim order) must cover dim d."""
    b = _b()
    x = _tensor(x, b, name)
    _arith(b, x.dtype, name)
    d = _dims(b, x, dim, name)[0]
    if not isinstance(x.dim(d), int):
        raise b.error(f"{name} along a symbolic dim is not supported: the sorted dim must have "
                      f"a fixed size")
    tile = _tile(b, x.ndim, x.dtype, x.type.shape, name)
    last = x.ndim - 1
    perm = list(range(x.ndim))
    perm[d], perm[last] = last, d
    if d != last:
        x = _permute_to(b, x, perm, [tile[p] for p in perm])
        results = [TensorType(r.dtype, tuple(r.shape[p] for p in perm)) for r in results]
    ptile = [tile[p] for p in perm]
    if tile[d] < x.dim(last):                 # a row longer than a tile: the bitonic network
        outs = _long_sort(b, x, ptile, name, results, attrs)
    else:
        op = b.emit(name, [x.value], results, {**attrs, "dim": last, "tile": ptile})
        outs = [_result_i(op, i) for i in range(len(results))]
    return outs if d == last else [_permute_to(b, o, perm, tile) for o in outs]


def _long_sort(b, x, tile: list, name: str, results: list, attrs: dict) -> list:
    """Sort rows longer than a tile along the last dim (values and int32 positions): padded
    to N, a power of two (the positions past n mark the padding, which sorts last), then a
    bitonic network (passes/sort_tiles.py): each tile sorted inside, then for every block
    size s = 2t, 4t, ..., N the mirrored tile pairs of s, the tile pairs s/4, ..., t apart,
    and the steps inside the tiles. Equal values keep their position order (the comparison
    takes the position second), so the result is the stable sort's, as for one tile."""
    n = x.dim(x.ndim - 1)
    t = 1 << (tile[-1].bit_length() - 1)            # the tile, a power of two
    align = max(32 // x.dtype.itemsize, 8)          # whole 32-byte rows of values and int32
    if t < align:
        raise b.error(f"{name}: a row of {n} is longer than the tile ({tile[-1]}); a sort "
                      f"across tiles needs a tile of at least {align} in the sorted dim")
    big = max(t, 1 << (n - 1).bit_length())
    lead = list(x.type.shape[:-1])
    desc = bool(attrs.get("largest", attrs.get("descending", False)))
    saved, b.vec_tile = b.vec_tile, list(tile[:-1]) + [t]
    try:
        pos = expand_clone(arange(0, big, dtype=INDEX), lead + [big])
        v = x if big == n else concat([x, full(lead + [big - n], 0, x.dtype)], -1)
        steps = [[s, s // 2 >> k, k == 0] for s in _powers(2, t) for k in range(_log2(s))]
        v, pos = _bitonic(b, v, pos, n, desc, "tile", 0, steps, t)
        for s in _powers(2 * t, big):
            v, pos = _bitonic(b, v, pos, n, desc, "mirror", s // 2, None, t)
            for dist in _powers(t, s // 4)[::-1]:
                v, pos = _bitonic(b, v, pos, n, desc, "pair", dist, None, t)
            v, pos = _bitonic(b, v, pos, n, desc, "tile", 0,
                              [[2 * (t >> k), t >> k, False] for k in range(1, _log2(t) + 1)], t)
        k = results[0].shape[-1]
        outs = [view(w, lead + [k], [0] * (len(lead) + 1)) for w in (v, pos)]
    finally:
        b.vec_tile = saved
    return outs[1:] if name == "argsort" else outs


def _powers(lo: int, hi: int) -> list:
    out = []
    while lo <= hi:
        out.append(lo)
        lo *= 2
    return out


def _log2(v: int) -> int:
    return v.bit_length() - 1


def _bitonic(b, v, pos, n, desc, mode, dist, steps, t):
    attrs = {"n": n, "descending": desc, "mode": mode, "dist": dist, "tile": list(b.vec_tile)}
    if steps is not None:
        attrs["steps"] = steps
    op = b.emit("bitonic", [v.value, pos.value], [v.type, pos.type], attrs)
    return _result_i(op, 0), _result_i(op, 1)


def _permute_to(b, t, perm: list, tile: list):
    """permute with a given output tile (the sort's, so the kernels tile alike)."""
    shape = [b.norm(t.type.shape[p]) for p in perm]
    tile = [min(c, s) if isinstance(s, int) else c for c, s in zip(tile, shape)]
    op = b.emit("permute", [t.value], [TensorType(t.dtype, tuple(shape))],
                {"perm": perm, "tile": tile})
    return _result(op)


def _result_i(op, i):
    return TraceTensor(op.results[i])


def topk(x, k: int, dim: int | None = -1, largest: bool = True, algo=None, *,
         sorted: bool = True):  # noqa: A002
    """(values, indices) of the k largest (smallest) elements along dim (any dim; the last
    by default, also for None as the reference's); ties keep the lower index first. algo
    (TopKAlgo): both give these values and indices; sorted (torch's keyword) is always
    honoured: the k come in order."""
    b = _b()
    if algo is not None:
        from .enums import TopKAlgo, member
        member(TopKAlgo, algo, "topk algo")
    dim = -1 if dim is None else dim
    d = _dims(b, x, dim, "topk")[0]
    n = x.dim(d)
    if not isinstance(k, int) or not (isinstance(n, int) and 0 < k <= n):
        raise b.error(f"topk: k={k!r} must be an int in [1, {E.to_str(n)}]")
    shape = list(_norm_shape(b, x.type.shape))
    shape[d] = k
    shape = tuple(shape)
    v, i = _sort_like("topk", x, dim, [TensorType(x.dtype, shape), TensorType(INDEX, shape)],
                      {"k": k, "largest": bool(largest)})
    return v, i


def sort(x, dim: int = -1, descending: bool = False):
    shape = _norm_shape(_b(), x.type.shape)
    v, i = _sort_like("sort", x, dim, [TensorType(x.dtype, shape), TensorType(INDEX, shape)],
                      {"descending": bool(descending)})
    return v, i


def argsort(x, dim: int = -1, descending: bool = False):
    """Indices (int32) that sort x along dim (the last by default); equal elements keep
    their order.
    Ascending by default as the reference's implementation (python/pypto/op/comparison.py)
    has it; its documentation page says descending=True (docs/parity.md)."""
    shape = _norm_shape(_b(), x.type.shape)
    (i,) = _sort_like("argsort", x, dim, [TensorType(INDEX, shape)],
                      {"descending": bool(descending)})
    return i
