"""DT_INT4, the reference's packed 4-bit integers: two per byte, the even element in the low
nibble (the reference's "low first" packing), signed (-8 to 7).

A DT_INT4 tensor never reaches the IR as such: a kernel parameter Tensor([..., n], DT_INT4)
(n static and even) is the uint8 parameter [..., n / 2] of its bytes, which is what a call
passes (a numpy uint8 array, as the reference's torch interface passes DT_INT4 as uint8).
While tracing it is an Int4Tensor over those bytes. It takes what the reference's int4
takes:
- cast to a float dtype (the reference: DT_FP16): each nibble sign-extended (shifts of the
  bytes as int8), the pairs interleaved, converted exactly;
- cast from a float dtype (the reference: DT_FP16) with a CastMode (CAST_TRUNC by default,
  as for every float to integer cast) and a SaturationMode: OFF wraps the integer modulo 16
  into [-8, 7] (NaN is 0, +-inf 7 and -8, as the other integer casts), ON clamps;
- view (offsets and sizes of the last dim even), assemble and `t[...] = v` of int4 values.
Anything else on one is an error saying so. bytes_of(DT_INT4) is 1, as in the reference
(the byte width that holds an element).
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir.types import DTYPES, I32, INT4, DType, TensorType
from . import ops
from .composites import concat, unsqueeze
from .enums import CastMode, SaturationMode, member
from .ops import (bitwise_and, bitwise_left_shift, bitwise_or, bitwise_right_shift, bitwise_xor,
                  eq, maximum, minimum, reshape, where)
from .tensor import SymScalar, TraceTensor, builder, slice_key

DT_INT4 = INT4
U8, I8 = DTYPES["u8"], DTYPES["i8"]


class Int4Tensor:
    """A DT_INT4 tensor while a kernel traces: raw is the uint8 tensor of its bytes."""

    dtype = INT4

    def __init__(self, raw: TraceTensor):
        self.raw = raw

    @property
    def shape(self) -> tuple:
        s = self.raw.shape
        return s[:-1] + (s[-1] * 2,)

    @property
    def ndim(self) -> int:
        return self.raw.ndim

    def __repr__(self) -> str:
        return f"<traced DT_INT4 tensor of {self.shape}>"

    def __getitem__(self, key):
        offsets, shape = slice_key(self._logical(), key)
        return _view(self, shape, offsets)

    def __setitem__(self, key, value):
        offsets, shape = slice_key(self._logical(), key)
        if not isinstance(value, Int4Tensor):
            raise builder().error("a DT_INT4 tensor takes DT_INT4 values: cast to DT_INT4 first")
        _assemble(value, offsets, self)

    def _logical(self):
        """A stand-in with the logical shape, for slice_key."""
        return _Shape(self.shape)

    def __getattr__(self, name):
        raise builder().error(f"DT_INT4 tensors take cast, view and assemble only, not {name}")


def _refuse(name):
    def op(self, *args):
        raise builder().error(f"DT_INT4 tensors take cast, view and assemble only, not {name}")
    return op


for _d in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
           "xor", "lshift", "rshift", "lt", "le", "gt", "ge"):
    setattr(Int4Tensor, f"__{_d}__", _refuse(_d))
    setattr(Int4Tensor, f"__r{_d}__", _refuse(_d))
for _d in ("neg", "abs", "invert"):
    setattr(Int4Tensor, f"__{_d}__", _refuse(_d))


class _Shape:
    def __init__(self, shape):
        self._shape = [d.e if isinstance(d, SymScalar) else d for d in shape]
        self.ndim = len(shape)

    def dim(self, i):
        return self._shape[i]


def _param(name: str, shape: list, loc) -> tuple:
    """(the IR type, the tracer) of a DT_INT4 parameter of this logical shape."""
    n = shape[-1] if shape else None
    if not isinstance(n, int) or n % 2:
        from ..errors import CompileError
        raise CompileError(f"{name}: a DT_INT4 tensor needs a static, even last dim (two "
                           f"elements per byte), not {n}", loc)
    return TensorType(U8, tuple(shape[:-1]) + (n // 2,))


def _even(b, v, what: str) -> int:
    e = b.norm(v.e if isinstance(v, SymScalar) else v)
    if not isinstance(e, int) or e % 2:
        raise b.error(f"{what} of a DT_INT4 tensor must be even and static in the last dim "
                      f"(two elements per byte), not {E.to_str(e)}")
    return e // 2


def _view(t: Int4Tensor, shape, offsets, valid_shape=None) -> Int4Tensor:
    b = builder()
    if valid_shape is not None:
        raise b.error("view of a DT_INT4 tensor: valid_shape is not supported")
    shape, offsets = list(shape), list(offsets)
    shape[-1] = _even(b, shape[-1], "a view size")
    offsets[-1] = _even(b, offsets[-1], "a view offset")
    return Int4Tensor(ops.view(t.raw, shape, offsets))


def _assemble(src: Int4Tensor, offsets, dst: Int4Tensor) -> None:
    b = builder()
    if not isinstance(src, Int4Tensor) or not isinstance(dst, Int4Tensor):
        raise b.error("assemble of DT_INT4 takes DT_INT4 source and destination")
    offsets = list(offsets)
    offsets[-1] = _even(b, offsets[-1], "an assemble offset")
    ops.assemble(src.raw, offsets, dst.raw)


def _tile_for(saved, rank: int, extra: bool) -> list:
    """The vec tile in force (saved) for a tensor of rank; extra: for its [..., n / 2, 2]
    pairs."""
    tile = list(saved or [])
    tile = ([1] * rank + tile)[-rank:] if tile else [1] * (rank - 1) + [64]
    return tile[:-1] + [max(1, tile[-1] // 2), 2] if extra else tile


def cast(x, dtype: DType, mode=None, satmode=None, strict: bool = True):
    """pypto.cast: ops.cast, and the casts to and from DT_INT4 (see the module docstring)."""
    if dtype is not INT4 and not isinstance(x, Int4Tensor):
        return ops.cast(x, dtype, mode, satmode, strict)
    b = builder()
    if isinstance(x, Int4Tensor):
        if dtype is INT4:
            return x
        if not isinstance(dtype, DType) or dtype.kind != "float":
            raise b.error(f"cast from DT_INT4 goes to a float dtype (the reference: DT_FP16), "
                          f"not {dtype!r}")
        return _unpacked(b, x, dtype)
    if not isinstance(x, TraceTensor) or x.dtype.kind != "float":
        raise b.error(f"cast to DT_INT4 takes a float tensor (the reference: DT_FP16), not "
                      f"{getattr(x, 'type', x)}")
    return _packed(b, x, mode, satmode)


def assemble(src, offsets, dst=None, parallel: bool = False) -> None:
    """pypto.assemble: ops.assemble, and DT_INT4 sources into DT_INT4 destinations."""
    if isinstance(src, Int4Tensor) or isinstance(dst, Int4Tensor):
        return _assemble(src, offsets, dst)
    return ops.assemble(src, offsets, dst, parallel)


def _unpacked(b, x: Int4Tensor, dtype):
    cast_ = ops.cast
    saved = b.vec_tile
    try:
        b.vec_tile = _tile_for(saved, x.ndim, False)
        s = cast_(x.raw, I8)                          # the same bits, signed
        lo = bitwise_right_shift(bitwise_left_shift(s, 4), 4)
        hi = bitwise_right_shift(s, 4)
        b.vec_tile = _tile_for(saved, x.ndim + 1, False)[:-1] + [2]
        pairs = concat([unsqueeze(lo, -1), unsqueeze(hi, -1)], -1)
        b.vec_tile = _tile_for(saved, x.ndim, False)
        return cast_(reshape(pairs, list(x.shape)), dtype)
    finally:
        b.vec_tile = saved


def _packed(b, x, mode, satmode):
    cast_, raw_view = ops.cast, ops.view
    m = member(CastMode, CastMode.CAST_NONE if mode is None else mode, "cast mode")
    sat = member(SaturationMode, SaturationMode.OFF if satmode is None else satmode,
                 "cast satmode") is SaturationMode.ON
    n = x.type.shape[-1]
    if not isinstance(n, int) or n % 2:
        raise b.error(f"cast to DT_INT4 needs a static, even last dim, not {E.to_str(n)}")
    saved = b.vec_tile
    try:
        b.vec_tile = _tile_for(saved, x.ndim, False)
        q = cast_(x, I32, CastMode.CAST_TRUNC if m is CastMode.CAST_NONE else m)
        if sat:
            q = minimum(maximum(q, -8), 7)
        else:                               # modulo 16, +-inf to the int4 extremes
            q = bitwise_xor(bitwise_and(q, 15), 8) - 8
            q = where(eq(x, float("inf")), 7, where(eq(x, float("-inf")), -8, q))
        lead = list(x.type.shape[:-1])
        b.vec_tile = _tile_for(saved, x.ndim + 1, True)
        pairs = reshape(q, lead + [n // 2, 2])
        lo = bitwise_and(raw_view(pairs, lead + [n // 2, 1], [0] * (len(lead) + 2)), 15)
        hi = bitwise_left_shift(bitwise_and(raw_view(pairs, lead + [n // 2, 1],
                                                     [0] * (len(lead) + 1) + [1]), 15), 4)
        byte = cast_(bitwise_or(lo, hi), U8)
        b.vec_tile = _tile_for(saved, x.ndim, False)
        return Int4Tensor(reshape(byte, lead + [n // 2]))
    finally:
        b.vec_tile = saved
