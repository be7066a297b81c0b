"""The reference's enums as op files use them (pypto.CastMode.CAST_TRUNC, ...), and the one
place a keyword or option pypto does not implement is reported.

Members carry the reference's names; where the reference accepts a string for an enum
(`cast(x, dt, "CAST_TRUNC")`), the member's name is accepted too. What each member means
here is in the docstring of the function that takes it; docs/parity.md lists the
differences.
"""
from __future__ import annotations

import enum

from .. import errors
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


_WARNED: set = set()


def new_trace() -> None:
    """Warnings are once per op-file line and message within one trace (all its paths)."""
    _WARNED.clear()


def unsupported(what: str, note: str = "", error: bool = False) -> None:
    """A keyword or option of the reference that pypto does not implement: an error, or one
    warning per op-file line (never silently dropped)."""
    try:
        b = builder()
    except errors.CompileError:
        b = None
    msg = f"{what} is not implemented by pypto" + (f": {note}" if note else "")
    if error:
        raise (b.error(msg) if b else errors.CompileError(msg))
    loc = b.loc() if b else None
    key = (msg, str(loc))
    if key not in _WARNED:
        _WARNED.add(key)
        errors.warn(msg + " (ignored)", loc)
