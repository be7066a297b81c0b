"""Element types, tensor types (GM, symbolic shape) and tile types (on-chip, static shape)."""
from __future__ import annotations

from dataclasses import dataclass

from . import expr as E


@dataclass(frozen=True)
class DType:
    """An element type. `name` is the IR spelling; `api` the op-file spelling (DT_FP32)."""

    name: str
    api: str
    itemsize: int
    kind: str          # "float", "int", "bool"
    np_name: str       # numpy / ml_dtypes name
    c_type: str        # storage type in emitted C

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"pypto.{self.api}"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def np(self):
        """The numpy dtype (bf16 through ml_dtypes)."""
        import numpy as np
        if self.np_name == "bfloat16" or self.np_name.startswith("float8"):
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, self.np_name))
        return np.dtype(self.np_name)


DTYPES = {d.name: d for d in [
    DType("f32", "DT_FP32", 4, "float", "float32", "float"),
    DType("f16", "DT_FP16", 2, "float", "float16", "uint16_t"),
    DType("bf16", "DT_BF16", 2, "float", "bfloat16", "uint16_t"),
    DType("i8", "DT_INT8", 1, "int", "int8", "int8_t"),
    DType("i16", "DT_INT16", 2, "int", "int16", "int16_t"),
    DType("i32", "DT_INT32", 4, "int", "int32", "int32_t"),
    DType("i64", "DT_INT64", 8, "int", "int64", "int64_t"),
    DType("u8", "DT_UINT8", 1, "int", "uint8", "uint8_t"),
    DType("u16", "DT_UINT16", 2, "int", "uint16", "uint16_t"),
    DType("u32", "DT_UINT32", 4, "int", "uint32", "uint32_t"),
    DType("u64", "DT_UINT64", 8, "int", "uint64", "uint64_t"),
    DType("bool", "DT_BOOL", 1, "bool", "bool", "uint8_t"),
    # the 950's 8-bit floats (ml_dtypes on the host, the raw byte in C): MX operands and
    # their E8M0 block scales (2**(e - 127), 0xFF NaN); conversions exact, see FP8 below
    DType("f8e4m3", "DT_FP8E4M3FN", 1, "float", "float8_e4m3fn", "uint8_t"),
    DType("f8e5m2", "DT_FP8E5M2", 1, "float", "float8_e5m2", "uint8_t"),
    DType("e8m0", "DT_FP8E8M0", 1, "float", "float8_e8m0fnu", "uint8_t"),
]}
# the 8-bit floats: (exponent bits, mantissa bits, exponent bias) of their encoding
FP8 = {"f8e4m3": (4, 3, 7), "f8e5m2": (5, 2, 15), "e8m0": (8, 0, 127)}
F32, F16, BF16, I32, I64, BOOL = (DTYPES[n] for n in ("f32", "f16", "bf16", "i32", "i64", "bool"))
# DT_INT4, packed two per byte: never a dtype of the IR (not in DTYPES); a tensor of it is
# the uint8 tensor of its bytes (frontend/int4.py), so numpy sees uint8
INT4 = DType("i4", "DT_INT4", 1, "int", "uint8", "uint8_t")
# dtypes that hold values but take no arithmetic in Tensor mode (as in the reference): they
# are cast, moved, quantised into (quant_mx) and multiplied (matmul, scaled_mm)
STORAGE_ONLY = ("f8e4m3", "f8e5m2", "e8m0")
# the reference's Tensor-mode names of them, where they differ from the api spelling
API_ALIASES = {"DT_FP8E4M3": "f8e4m3"}


def dtype(name: str) -> DType:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})") from None


def from_numpy(np_dtype) -> DType:
    name = str(np_dtype)
    for d in DTYPES.values():
        if d.np_name == name:
            return d
    raise ValueError(f"numpy dtype {name} has no pypto equivalent "
                     f"(supported: {', '.join(d.np_name for d in DTYPES.values())})")


# Memory spaces, as in PTO: GM (HBM), UB (vector buffer), L1, L0A, L0B, L0C; "any" until
# assign-memory has placed a tile
SPACES = ("gm", "ub", "l1", "l0a", "l0b", "l0c", "bias", "any",   # bias: Pro's bias table
          "scale_left", "scale_right")      # the 950's MX scale buffers beside L0A / L0B


@dataclass(frozen=True)
class TensorType:
    """A tensor in global memory: element type and a shape of ints and symbolic Exprs."""

    dtype: DType
    shape: tuple

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(E.to_str(d) for d in self.shape)}]"

    @property
    def rank(self) -> int:
        return len(self.shape)

    def numel(self) -> E.Ex:
        return E.mul(*self.shape) if self.shape else 1


@dataclass(frozen=True)
class TileType:
    """A tile in an on-chip buffer: memory space, element type and a static shape."""

    space: str
    dtype: DType
    shape: tuple

    def __str__(self) -> str:
        return f"{self.space}.{self.dtype}[{', '.join(str(d) for d in self.shape)}]"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for d in self.shape:
            n *= d
        return n

    def padded_nbytes(self, align: int = 32) -> int:
        """Bytes when each row (last dim) is padded to the alignment, as the buffers store it."""
        if not self.shape:
            return align
        row = -(-self.shape[-1] * self.dtype.itemsize // align) * align
        n = row
        for d in self.shape[:-1]:
            n *= d
        return n


@dataclass(frozen=True)
class ScalarType:
    """A runtime scalar of an element type (a value read from a tensor, a reduction result)."""

    dtype: DType

    def __str__(self) -> str:
        return f"scalar.{self.dtype}"


@dataclass(frozen=True)
class RegType:
    """A register of Pro mode's Reg (vector-function) computation (ir/reg_ops.py): kind
    "vreg" is one 256-byte vector register of `lanes` = 256 / itemsize elements of dtype;
    kind "mask" a predicate register of `lanes` lanes (dtype bool). Printed vreg.f32[64],
    mask.bool[64]."""

    kind: str
    dtype: DType
    lanes: int

    def __str__(self) -> str:
        return f"{self.kind}.{self.dtype}[{self.lanes}]"


REG_BYTES = 256          # a vector register, and what a predicate register's lanes cover


def reg_type_problem(kind: str, dt: DType, lanes: int) -> str | None:
    """What is wrong with a register type read from a file, or None."""
    if kind == "vreg" and (dt.kind == "bool" or lanes * dt.itemsize != REG_BYTES):
        return f"a vreg of {dt} has {REG_BYTES // max(1, dt.itemsize)} lanes, not {lanes}"
    if kind == "mask" and (dt.kind != "bool" or lanes not in (32, 64, 128, 256)):
        return f"a mask has 32, 64, 128 or 256 bool lanes, not {lanes} {dt}"
    return None if kind in ("vreg", "mask") else f"unknown register kind {kind!r}"


Type = TensorType | TileType | ScalarType | RegType
