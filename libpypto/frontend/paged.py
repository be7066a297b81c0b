"""The reference's paged gathers, pypto.experimental.gather_in_ub and gather_in_l1, as
composites of gather, integer ops and index_select (their lowering, numpy meaning and C come
from those ops).

Both look tokens up through a page table: token t is row block_table[0, t // block_size] *
block_size + t % block_size of the cache (the pages' worked example: token 4 with block size
2 is in logical block 2, which block_table maps to physical block 1, so row 2).

gather_in_ub(param, indices, block_table, block_size, axis=-2) -> [k, hidden]: the rows of
param [tokens, hidden] (fp32, fp16) of the k tokens in indices [1, k] (int32); the page's
only axis is -2. The reference puts the result in UB; here it is a tensor like any other.

gather_in_l1(src, indices, block_table, block_size, size, is_b_matrix, is_trans) -> the first
size columns of those rows, [n, size] (src fp32, fp16, bf16, int8; indices [1, n] int32 or
int64): the reference loads them into L1 as a matmul operand; is_b_matrix only says which
operand (no value changes), is_trans gives the transpose [size, n] (pypto's reading of the
page, which does not say more).

Indices and table entries wrap modulo their dims (gather's and index_select's rule); the
pages require them in range.
"""
from __future__ import annotations

from ..ir import expr as E
from .composites import transpose
from .ops import _b, _tensor, _tile, floor_div, gather, index_select, remainder, reshape, view


def _rows(b, what, indices, block_table, block_size):
    """The cache rows of the tokens in indices [1, n]: a 1-D int tensor of n."""
    idx = _tensor(indices, b, f"{what} indices")
    table = _tensor(block_table, b, f"{what} block_table")
    for t, name in ((idx, "indices"), (table, "block_table")):
        if t.ndim != 2 or not E.to_str(t.type.shape[0]) == "1" or t.dtype.kind != "int":
            raise b.error(f"{what}: {name} must be a [1, n] integer tensor, not {t.type}")
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise b.error(f"{what}: block_size must be a positive int, not {block_size!r}")
    n = idx.type.shape[1]
    saved = b.vec_tile
    b.vec_tile = [1, n if isinstance(n, int) else 64]
    try:
        blocks = gather(table, 1, floor_div(idx, block_size))
        rows = blocks * block_size + remainder(idx, block_size)
        return reshape(rows, [n])
    finally:
        b.vec_tile = saved


def gather_in_ub(param, indices, block_table, block_size: int, axis: int = -2):
    """The rows of the k tokens in indices, looked up through the page table."""
    b = _b()
    p = _tensor(param, b, "gather_in_ub")
    if p.ndim != 2 or p.dtype.name not in ("f32", "f16"):
        raise b.error(f"gather_in_ub takes a 2-D fp32 or fp16 param, not {p.type}")
    if axis not in (-2, 0):
        raise b.error(f"gather_in_ub: axis must be -2 (the page's only axis), not {axis!r}")
    _tile(b, 2, p.dtype, p.type.shape, "gather_in_ub")
    return index_select(p, 0, _rows(b, "gather_in_ub", indices, block_table, block_size))


def gather_in_l1(src, indices, block_table, block_size: int, size: int, is_b_matrix: bool,
                 is_trans: bool):
    """The first size columns of the tokens' rows ([n, size]; transposed with is_trans)."""
    b = _b()
    s = _tensor(src, b, "gather_in_l1")
    if s.ndim != 2 or s.dtype.name not in ("f32", "f16", "bf16", "i8"):
        raise b.error(f"gather_in_l1 takes a 2-D fp32, fp16, bf16 or int8 src, not {s.type}")
    cols = s.type.shape[1]
    if not isinstance(size, int) or size < 1 or (isinstance(cols, int) and size > cols):
        raise b.error(f"gather_in_l1: size must be an int in [1, {E.to_str(cols)}], not "
                      f"{size!r}")
    _tile(b, 2, s.dtype, s.type.shape, "gather_in_l1")
    rows = _rows(b, "gather_in_l1", indices, block_table, block_size)
    out = index_select(view(s, [s.type.shape[0], size], [0, 0]), 0, rows)
    return transpose(out, 0, 1) if is_trans else out
