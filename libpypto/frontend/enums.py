"""The reference's enums as op files use them (pypto.CastMode.CAST_TRUNC, ...), and the one
place a keyword or option pypto does not implement is reported.

Members carry the reference's names; where the reference accepts a string for an enum
(`cast(x, dt, "CAST_TRUNC")`), the member's name is accepted too. What each member means
here is in the docstring of the function that takes it; docs/parity.md lists the
differences.
"""
from __future__ import annotations

import enum

from .tensor import builder


class CastMode(enum.Enum):
    """Rounding of `cast` (runtime/cast.py): CAST_NONE is the reference's default for the
    pair of dtypes (CAST_TRUNC from a float to an integer, CAST_RINT otherwise)."""
    CAST_NONE = None
    CAST_RINT = "rint"
    CAST_ROUND = "round"
    CAST_FLOOR = "floor"
    CAST_CEIL = "ceil"
    CAST_TRUNC = "trunc"
    CAST_ODD = "odd"


class SaturationMode(enum.Enum):
    """Out-of-range values of `cast`: OFF (default) wraps integers, ON clamps."""
    OFF = False
    ON = True


class PrecisionType(enum.Enum):
    """pypto computes every op at full fp32 precision: HIGH_PRECISION is what it does, and
    INTRINSIC (the chip's faster approximation) gives the same, more precise, numbers."""
    INTRINSIC = "intrinsic"
    HIGH_PRECISION = "high_precision"


class TileOpFormat(enum.Enum):
    """Tensor layout: ND (row-major) is what pypto stores; NZ (the cube's fractal layout) is
    accepted where the reference only uses it as a layout hint and changes no value."""
    TILEOP_ND = "nd"
    TILEOP_NZ = "nz"


class CachePolicy(enum.Enum):
    """L2 cache policy of a tensor (set_cache_policy): a hint with no effect on the host."""
    NONE_CACHEABLE = "none_cacheable"


class LogBaseType(enum.Enum):
    LOG_E = "e"
    LOG_2 = "2"
    LOG_10 = "10"


class TopKAlgo(enum.Enum):
    """topk's algorithm: both give the same values and indices here (a stable sort)."""
    MERGE_SORT = "merge_sort"
    RADIX_SELECT = "radix_select"


class ScatterMode(enum.Enum):
    NONE = "none"
    ADD = "add"
    MULTIPLY = "multiply"


class ReduceMode(enum.Enum):
    ATOMIC_ADD = "atomic_add"


class ReLuType(enum.Enum):
    NO_RELU = "no_relu"
    RELU = "relu"


class TransMode(enum.Enum):
    CAST_NONE = "none"
    CAST_RINT = "rint"
    CAST_ROUND = "round"


class OpType(enum.Enum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


class OutType(enum.Enum):
    BOOL = "bool"
    BIT = "bit"


# the reference's DataType members pypto does not have, with what they are
UNSUPPORTED_DTYPES = {
    "DT_FP8": "8-bit float (generic; use DT_FP8E4M3 or "
    "DT_FP8E5M2)", "DT_HF4": "hifloat4", "DT_HF8": "hifloat8",
    "DT_FP4_E2M1": "fp4 e2m1", "DT_FP4_E2M1X2": "packed fp4 e2m1", "DT_FP4_E1M2": "fp4 e1m2",
    "DT_FP4_E1M2X2": "packed fp4 e1m2", "DT_DOUBLE": "float64", "DT_BOTTOM": "no type"}


def unsupported_dtype(name: str) -> AttributeError:
    from ..ir.types import DTYPES
    have = ", ".join(d.api for d in DTYPES.values())
    return AttributeError(f"pypto.{name} ({UNSUPPORTED_DTYPES[name]}) is not supported by "
                          f"pypto; supported: {have}")


class _DataTypeMeta(type):
    def __getattr__(cls, name):
        if name in UNSUPPORTED_DTYPES:
            raise unsupported_dtype(name)
        raise AttributeError(f"DataType has no member {name!r}")

    def __iter__(cls):
        from ..ir.types import DTYPES
        return iter(DTYPES.values())


class DataType(metaclass=_DataTypeMeta):
    """pypto.DataType.DT_FP32 is pypto.DT_FP32: the dtypes pypto has (ir/types.py; the fp8
    ones DT_FP8E4M3 (also DT_FP8E4M3FN), DT_FP8E5M2 and DT_FP8E8M0 hold values that are cast,
    moved and multiplied, not computed on); the reference's others (fp4, int4, hifloat,
    double) are a clear error when named."""


def _install_dtypes() -> None:
    from ..ir.types import API_ALIASES, DTYPES
    for d in DTYPES.values():
        setattr(DataType, d.api, d)
    for alias, name in API_ALIASES.items():
        setattr(DataType, alias, DTYPES[name])
    from ..ir.types import INT4
    DataType.DT_INT4 = INT4                     # packed, frontend/int4.py


_install_dtypes()

ENUMS = {c.__name__: c for c in (CastMode, SaturationMode, PrecisionType, TileOpFormat,
                                 CachePolicy, LogBaseType, TopKAlgo, ScatterMode, ReduceMode,
                                 ReLuType, TransMode, OpType, OutType)}


def member(cls, v, what: str):
    """v as a member of enum cls: a member, its name as a string (as the reference's
    bindings accept), or its value here (a bool for SaturationMode)."""
    if isinstance(v, cls):
        return v
    if isinstance(v, str):
        name = v.split(".")[-1]
        if name in cls.__members__:
            return cls[name]
    for m in cls:              # a member's value (SaturationMode: a bool; CastMode: "trunc")
        if m.value is not None and type(m.value) is type(v) and m.value == v:
            return m
    names = ", ".join(f"{cls.__name__}.{n}" for n in cls.__members__)
    raise builder().error(f"{what}: {v!r} is not a {cls.__name__} (one of {names})")
