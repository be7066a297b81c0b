"""interleave, deinterleave, gathermask and index_put_ as composites of the primitives (reshape, concat,
view, scatter, index_add): their lowering, numpy meaning and C come from the ops they are
made of.

interleave(input, other) -> (out0, out1) -- the reference's page: along the last dim the
stream s[2k] = input[k], s[2k + 1] = other[k] (length 2n) is cut at its middle; out0 is
s[:n], out1 is s[n:]. Built as concat([input, other] each unsqueezed to [..., n, 1], last
dim) reshaped to [..., 2n], and two views.

deinterleave(input, other=None) -> (out0, out1) -- its inverse: out0 = s[0::2], out1 =
s[1::2] of the stream s, which is input itself (one operand; the outputs' last dim is half
of input's) or concat([input, other], last dim) (two operands of the same shape; the outputs
have that shape). Built as a reshape to [..., n, 2], two [..., n, 1] views and reshapes.

Both, as the pages: the operands' dtypes, ranks (1 to 4) and shapes must match, and the last
dim must be even (for interleave the pages demand it of the operands too, though the stream
2n splits at n for any n; pypto follows the page and refuses odd sizes). The reference's
dtype list (int8/16/32, uint8/16/32, fp16, fp32, bf16) is checked; the last dim must be
static (it is reshaped).

gathermask(self, pattern_mode) -- the reference's page: along the last dim, the first
(mode 1) or second (2) of every two elements, the first to fourth (3 to 6) of every four, or
all (7, a copy); the last dim must be a multiple of 2 or 4 (and static), the page's dtypes
(int16, uint16, int32, uint32, fp16, bf16, fp32), rank 1 to 4. The page's tile rules (the
tile's last dim a multiple of 2 or 4, no view split of the last dim) are the device's: any
tile works here. A reshape to [..., n / k, k], a view of column j, a reshape.

pack(self) / unpack(self, dstDataType) -- the reference's pages: pack flattens self
(row-major) and gives its bytes as a 1-D uint8 tensor; unpack gives a 1-D uint8 tensor's
bytes as dstDataType (n / itemsize elements; n must divide). Bytes are the host's
little-endian order, as the pages' example (0x03040506 packs to 6 5 4 3). The pages' dtypes
(bf16, fp16, fp32, int8/16/32/64, uint8/16/32/64); static sizes. These need one primitive,
`bitcast` (tile instruction `tbitcast`, a byte copy of each row's tile); pack of a rank > 1
tensor bitcasts its rows and reshapes the bytes to 1-D (tensor-to-tile copies a reshape by
blocks that fit an eighth of UB, so any size tiles).

index_put_(input, indices, values, accumulate=False) -- the reference's page: indices is a
tuple of k 1-D integer tensors of one length t (k <= input's rank), values has shape
[t] + input.shape[k:] (rank(input) + 1 == k + rank(values)) and input's dtype; for each i,
input[indices[0][i], ..., indices[k-1][i], ...] = values[i] (or += with accumulate). In
place (as tril_ and the other in-place forms: input.move(result), which writes a parameter
or local tensor and rebinds a computed value); returns None. Choices: an
index wraps modulo its dim (pypto's rule for every index op; the page requires indices in
range); a position named twice keeps the last write (the page: "undefined") or, with
accumulate, sums every value (index_add's order). accumulate takes the page's dtypes: bf16,
fp16, fp32, int8, int16, int32. Built as the flat row index sum_j indices[j] * stride_j of
input viewed as [prod(shape[:k]), rest] rows, then scatter (overwrite) or index_add
(accumulate) of values' rows. Tiles: as the page, a vec tile of lower rank than values is
completed with values' trailing dims (a tile [t1] for values [t, n, p] is [t1, n, p]).
"""
from __future__ import annotations

import math

from ..ir import expr as E
from ..ir.types import DTYPES, I64, DType, TensorType
from . import int4
from .api import move
from .composites import clone, concat, unsqueeze
from .ops import (_b, _result, _tensor, add, cast, expand_clone, index_add, mul, remainder, reshape,
                  scatter)
from .ops import view as _view
from .tensor import SymScalar

U8 = DTYPES["u8"]
SHUFFLE_DTYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "f16", "f32", "bf16")


def _check_pair(b, what: str, x, y=None):
    x = _tensor(x, b, what)
    if x.dtype.name not in SHUFFLE_DTYPES:
        raise b.error(f"{what}: dtype {x.dtype} is not supported (int8/16/32, uint8/16/32, "
                      f"fp16, fp32, bf16)")
    if not 1 <= x.ndim <= 4:
        raise b.error(f"{what} takes a tensor of rank 1 to 4, not {x.ndim}")
    n = x.type.shape[-1]
    if not isinstance(n, int):
        raise b.error(f"{what}: the last dim must be static, not {E.to_str(n)}")
    if n % 2:
        raise b.error(f"{what}: the last dim ({n}) must be even")
    if y is not None:
        y = _tensor(y, b, what)
        if y.dtype != x.dtype or y.ndim != x.ndim:
            raise b.error(f"{what}: the operands differ ({x.type} and {y.type})")
        for i, (p, q) in enumerate(zip(x.type.shape, y.type.shape)):
            b.same(p, q, f"{what}: dim {i} of the operands differs")
    return x, y


def interleave(input, other):  # noqa: A002 -- the reference's names
    """(out0, out1): the halves of the stream input[0], other[0], input[1], other[1], ...
    along the last dim."""
    b = _b()
    x, y = _check_pair(b, "interleave", input, other)
    lead, n = list(x.type.shape[:-1]), x.type.shape[-1]
    s = reshape(concat([unsqueeze(x, x.ndim), unsqueeze(y, y.ndim)], -1), lead + [2 * n])
    zero = [0] * len(lead)
    return _view(s, lead + [n], zero + [0]), _view(s, lead + [n], zero + [n])


def deinterleave(input, other=None):  # noqa: A002
    """(even, odd) positions along the last dim of input, or of concat([input, other])."""
    b = _b()
    x, y = _check_pair(b, "deinterleave", input, other)
    s = x if y is None else concat([x, y], -1)
    lead, n = list(s.type.shape[:-1]), s.type.shape[-1] // 2
    pairs = reshape(s, lead + [n, 2])
    zero = [0] * (len(lead) + 1)
    return tuple(reshape(_view(pairs, lead + [n, 1], zero + [j]), lead + [n]) for j in (0, 1))


# gathermask's pattern modes: (group size, position kept in each group)
PATTERNS = {1: (2, 0), 2: (2, 1), 3: (4, 0), 4: (4, 1), 5: (4, 2), 6: (4, 3)}
GATHERMASK_DTYPES = ("i16", "u16", "i32", "u32", "f16", "bf16", "f32")


def gathermask(self, pattern_mode: int):
    """Along the last dim, element j of each group of 2 (modes 1, 2: j = 0, 1) or 4 (modes 3
    to 6: j = 0 to 3); mode 7 keeps every element."""
    b = _b()
    x = _tensor(self, b, "gathermask")
    if x.dtype.name not in GATHERMASK_DTYPES:
        raise b.error(f"gathermask: dtype {x.dtype} is not supported (int16, uint16, int32, "
                      f"uint32, fp16, bf16, fp32)")
    if not 1 <= x.ndim <= 4:
        raise b.error(f"gathermask takes a tensor of rank 1 to 4, not {x.ndim}")
    if pattern_mode == 7:
        return clone(x)
    if isinstance(pattern_mode, bool) or pattern_mode not in PATTERNS:
        raise b.error(f"gathermask: pattern_mode must be an int from 1 to 7, not "
                      f"{pattern_mode!r}")
    k, j = PATTERNS[pattern_mode]
    n = x.type.shape[-1]
    if not isinstance(n, int) or n % k:
        raise b.error(f"gathermask: pattern_mode {pattern_mode} needs a static last dim that "
                      f"is a multiple of {k}, not {E.to_str(n)}")
    lead = list(x.type.shape[:-1])
    groups = reshape(x, lead + [n // k, k])
    return reshape(_view(groups, lead + [n // k, 1], [0] * (len(lead) + 1) + [j]),
                   lead + [n // k])


PACK_DTYPES = ("bf16", "f16", "f32", "i64", "u64", "i32", "u32", "i16", "u16", "i8", "u8")


def _bitcast(b, x, dtype: DType, what: str):
    """x's rows (last dim, static) as dtype: a primitive (tensor op `bitcast`). As the
    reference's pages, the vec tile's last size splits the source; it is rounded up to whole
    elements of both dtypes; the other dims take the vec tile's (trailing) sizes."""
    si, so = x.dtype.itemsize, dtype.itemsize
    n = x.type.shape[-1] * si // so
    if b.vec_tile is None:
        raise b.error(f"{what}: no vector tile shape in force; call "
                      f"pypto.set_vec_tile_shapes(...) before this op")
    unit = so // math.gcd(si, so)                   # source elements per whole output one
    t = min(n, -(-b.vec_tile[-1] // unit) * unit * si // so)
    lead = ([1] * x.ndim + list(b.vec_tile[:-1]))[-x.ndim:-1] if x.ndim > 1 else []
    lead = [min(c, d) if isinstance(d, int) else c for c, d in zip(lead, x.type.shape)]
    op = b.emit("bitcast", [x.value], [TensorType(dtype, tuple(x.type.shape[:-1]) + (n,))],
                {"tile": lead + [t]})
    return _result(op)


def view(input, shape=None, offsets=None, valid_shape=None, *, dtype=None):  # noqa: A002
    """A sub-tensor (ops.view; shape and offsets default to the whole tensor), and the
    reference's dtype=: the view's bytes read as dtype, each row's (a bitcast: the last dim
    scales by the itemsizes; a static last dim; the page's example views fp32 [2, 2] as int8
    [2, 8])."""
    b = _b()
    if isinstance(input, int4.Int4Tensor) and dtype is None:
        return int4._view(input, input.shape if shape is None else shape,
                          [0] * input.ndim if offsets is None else offsets, valid_shape)
    x = _tensor(input, b, "view")
    whole = [d if isinstance(d, int) else SymScalar(d) for d in x.type.shape]
    v = x if shape is None and offsets is None and valid_shape is None else \
        _view(x, whole if shape is None else shape, [0] * x.ndim if offsets is None else offsets,
              valid_shape)
    if dtype is None or dtype == v.dtype:
        return v
    if not isinstance(dtype, DType) or dtype.name not in PACK_DTYPES + ("f8e4m3", "f8e5m2",
                                                                        "e8m0") or \
            v.dtype.name == "bool" or not isinstance(v.type.shape[-1], int) or \
            v.type.shape[-1] * v.dtype.itemsize % dtype.itemsize:
        raise b.error(f"view(dtype={dtype!r}) of {v.type}: the rows' bytes of a static last "
                      f"dim must be a whole number of {dtype!r} elements")
    saved = b.vec_tile
    if saved is None:
        b.vec_tile = [1] * (v.ndim - 1) + [v.type.shape[-1]]
    try:
        return _bitcast(b, v, dtype, "view")
    finally:
        b.vec_tile = saved


def pack(self):
    """The bytes of self (flattened, row-major, little-endian) as a 1-D uint8 tensor: each
    row's bytes (bitcast), then a reshape to 1-D (by blocks: any size tiles)."""
    b = _b()
    x = _tensor(self, b, "pack")
    if x.dtype.name not in PACK_DTYPES:
        raise b.error(f"pack: dtype {x.dtype} is not supported (bf16, fp16, fp32, int8/16/32/64,"
                      f" uint8/16/32/64)")
    if not 1 <= x.ndim <= 4 or not all(isinstance(d, int) for d in x.type.shape):
        raise b.error(f"pack takes a tensor of 1 to 4 static dims, not {x.type}")
    rows = _bitcast(b, x, U8, "pack")
    return rows if x.ndim == 1 else reshape(rows, [math.prod(rows.type.shape)])


def unpack(self, dtype: DType = None, *, dstDataType: DType = None):  # noqa: N803
    """A 1-D uint8 tensor's bytes as dtype (the reference's code; dstDataType= as its page
    names it), little-endian: n / itemsize elements."""
    b = _b()
    dstDataType = dtype if dtype is not None else dstDataType
    x = _tensor(self, b, "unpack")
    if x.dtype != U8 or x.ndim != 1 or not isinstance(x.type.shape[0], int):
        raise b.error(f"unpack takes a 1-D uint8 tensor of static size, not {x.type}")
    if not isinstance(dstDataType, DType) or dstDataType.name not in PACK_DTYPES:
        raise b.error(f"unpack: dstDataType {dstDataType!r} is not supported (bf16, fp16, fp32,"
                      f" int8/16/32/64, uint8/16/32/64)")
    if x.type.shape[0] % dstDataType.itemsize:
        raise b.error(f"unpack: {x.type.shape[0]} bytes are not a whole number of "
                      f"{dstDataType} elements ({dstDataType.itemsize} bytes each)")
    return _bitcast(b, x, dstDataType, "unpack")


ACCUMULATE_DTYPES = ("bf16", "f16", "f32", "i8", "i16", "i32")


def _flat_index(x, indices):
    """The row of x viewed as [prod(shape[:k]), rest...] that each tuple of indices names
    (int64; with one index, scatter and index_add wrap it, with several each is wrapped
    modulo its dim first)."""
    if len(indices) == 1:
        return indices[0]
    flat = None
    for j, ix in enumerate(indices):
        d = x.dim(j) if isinstance(x.dim(j), int) else SymScalar(x.dim(j))
        ix = remainder(cast(ix, I64), d)
        flat = ix if flat is None else add(mul(flat, d), ix)
    return flat


def index_put_(input, indices, values, accumulate: bool = False):  # noqa: A002
    """input[indices[0][i], ..., indices[k-1][i], ...] = values[i] (+= with accumulate), in
    place; returns None."""
    b = _b()
    x = _tensor(input, b, "index_put_")
    if not isinstance(indices, (tuple, list)) or not indices:
        raise b.error("index_put_: indices must be a non-empty tuple of 1-D integer tensors")
    idx = [_tensor(t, b, "index_put_ index") for t in indices]
    v = _tensor(values, b, "index_put_ values")
    k = len(idx)
    if k > x.ndim:
        raise b.error(f"index_put_: {k} index tensors for a rank-{x.ndim} input")
    for t in idx:
        if t.ndim != 1 or t.dtype.kind != "int":
            raise b.error(f"index_put_: every index must be a 1-D integer tensor, not {t.type}")
        b.same(t.dim(0), idx[0].dim(0), "index_put_: the index tensors differ in length")
    if v.dtype != x.dtype:
        raise b.error(f"index_put_: values dtype {v.dtype} differs from input's {x.dtype}")
    want = (idx[0].dim(0),) + tuple(x.type.shape[k:])
    if v.ndim != len(want):
        raise b.error(f"index_put_: values must have shape [{', '.join(map(E.to_str, want))}]"
                      f" (rank(input) + 1 == len(indices) + rank(values)), not {v.type}")
    for i, (p, q) in enumerate(zip(v.type.shape, want)):
        b.same(p, q, f"index_put_: dim {i} of values must be {E.to_str(q)}")
    if accumulate and x.dtype.name not in ACCUMULATE_DTYPES:
        raise b.error(f"index_put_: accumulate=True takes bf16, fp16, fp32, int8, int16 or "
                      f"int32, not {x.dtype}")
    saved = b.vec_tile
    if saved is not None and len(saved) < v.ndim and \
            all(isinstance(d, int) for d in v.type.shape[len(saved):]):
        b.vec_tile = list(saved) + list(v.type.shape[len(saved):])     # the page's rule
    try:
        out = _put_rows(x, idx, v, accumulate)
    finally:
        b.vec_tile = saved
    move(x, out)
    return None


def _put_rows(x, idx, v, accumulate: bool):
    """x with values' rows put (or added) at the rows the indices name."""
    k, rows, rest = len(idx), 1, list(x.type.shape[len(idx):])
    for j in range(k):
        rows = E.mul(rows, x.dim(j))
    flat_x = reshape(x, [rows] + rest) if k != 1 else x
    t = idx[0].dim(0)
    row = _flat_index(x, idx)
    if accumulate:
        out = index_add(flat_x, 0, row, v)
    else:
        full_idx = expand_clone(reshape(row, [t] + [1] * len(rest)), [t] + rest)
        out = scatter(flat_x, 0, full_idx, v)
    return reshape(out, list(x.type.shape)) if k != 1 else out
