"""Sort-like ops (sort, argsort, topk) along any dim: the tile holds whole rows of the
sorted dim; along a dim other than the last the tensor is permuted to put it last, sorted,
and the results permuted back."""
from __future__ import annotations

from ..ir import expr as E
from ..ir.tensor_ops import INDEX
from ..ir.types import TensorType
from .ops import _b, _dims, _norm_shape, _result, _tensor, _tile, _arith
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
    if tile[d] < x.dim(d):
        raise b.error(f"{name}: the tile ({tile[d]} in dim {d}) must cover the whole "
                      f"sorted dim ({x.dim(d)}); set a tile with {x.dim(d)} there")
    last = x.ndim - 1
    perm = list(range(x.ndim))
    perm[d], perm[last] = last, d
    if d != last:
        x = _permute_to(b, x, perm, [tile[p] for p in perm])
        results = [TensorType(r.dtype, tuple(r.shape[p] for p in perm)) for r in results]
    op = b.emit(name, [x.value], results,
                {**attrs, "dim": last, "tile": [tile[p] for p in perm]})
    outs = [_result_i(op, i) for i in range(len(results))]
    return outs if d == last else [_permute_to(b, o, perm, tile) for o in outs]


def _permute_to(b, t, perm: list, tile: list):
    """permute with a given output tile (the sort's, so the kernels tile alike)."""
    shape = [b.norm(t.type.shape[p]) for p in perm]
    tile = [min(c, s) if isinstance(s, int) else c for c, s in zip(tile, shape)]
    op = b.emit("permute", [t.value], [TensorType(t.dtype, tuple(shape))],
                {"perm": perm, "tile": tile})
    return _result(op)


def _result_i(op, i):
    return TraceTensor(op.results[i])


def topk(x, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, algo=None):  # noqa: A002
    """(values, indices) of the k largest (smallest) elements along dim (any dim; the last
    by default); ties keep the lower index first."""
    b = _b()
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
