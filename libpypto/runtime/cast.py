"""The meaning of `cast` in numpy: every CastMode and SaturationMode of the reference.

One definition, used by the tensor interpreter, the numpy backend (tcvt) and, spelled in C,
by the C backend (codegen/c_ops.h: pp_fround, pp_rnd, pp_f2i); tests hold them equal.

Rounding modes (the IR spelling; the op file's `pypto.CastMode.CAST_*`):

- ``rint``  to nearest, ties to even (IEEE default)   - ``round`` to nearest, ties away from 0
- ``floor`` toward -inf                               - ``ceil``  toward +inf
- ``trunc`` toward 0                                  - ``odd``   inexact results get an odd
  last mantissa bit (von Neumann rounding)

A cast with no mode uses the reference's default for the pair of dtypes: ``trunc`` from a
float to an integer, ``rint`` otherwise (docs/zh/api/datatype/CastMode.md). Saturation
(`satmode=`), off by default as in the reference:

- float -> int: off: NaN gives 0, +-inf the largest / smallest value, any other value is
  rounded and then wraps modulo 2**bits (the reference's "binary truncation": fp16 300.0 ->
  int8 44); on: clamped to the target's range (NaN gives 0).
- int -> narrower int: off wraps modulo 2**bits, on clamps.
- to a float: off, a finite value beyond the largest finite one becomes +-inf under rint and
  round, and the largest finite value under trunc, odd and the directed mode toward 0
  (IEEE 754 rounding of overflow); on, every result is clamped to +-max finite (NaN stays).
- same float dtype with a mode: rounds to an integral value in that mode (the reference's
  "same-type rounding"); with no mode a cast to the same dtype is the identity.
- fp8 e4m3fn / e5m2 as targets are binary formats like the others (e4m3fn has no infinity:
  what would become +-inf becomes NaN); fp8 and E8M0 (2**(e - 127), 0xFF NaN) sources widen
  exactly. A cast to E8M0 is not defined (the reference has none; quant_mx makes scales).

Rounding to a float dtype of p mantissa bits works on float64: q = x / ulp(x) is exact (ulp is
a power of two), q is rounded to an integer in the mode, and q * ulp is exactly representable
in the target. Integer sources are first converted to float64 (exact below 2**53, to nearest
above it).
"""
from __future__ import annotations

import numpy as np

MODES = ("rint", "round", "floor", "ceil", "trunc", "odd")

# p (mantissa bits with the implicit one), emin, largest finite value
FLOAT_FORMATS = {
    "float32": (24, -126, float(np.finfo(np.float32).max)),
    "float16": (11, -14, 65504.0),
    "bfloat16": (8, -126, float.fromhex("0x1.fep127")),
    # fp8: e4m3fn has no infinity (an overflow that IEEE rounding takes to inf is NaN there,
    # as ml_dtypes converts it); e5m2 has one
    "float8_e4m3fn": (4, -6, 448.0),
    "float8_e5m2": (3, -14, 57344.0),
}


def is_float(dt) -> bool:
    """numpy floats and ml_dtypes' floats (whose numpy kind is 'V')."""
    return dt.kind == "f" or dt.name in FLOAT_FORMATS or dt.name.startswith("float8")


def default_mode(src_is_float: bool, dst_is_int: bool) -> str:
    """The reference's CAST_NONE: trunc from a float to an integer, rint otherwise."""
    return "trunc" if src_is_float and dst_is_int else "rint"


def rnd(q: np.ndarray, mode: str) -> np.ndarray:
    """float64 values rounded to integers in a mode (exact: float64 has no fraction above
    2**52)."""
    if mode == "rint":
        return np.rint(q)
    if mode == "round":
        return np.copysign(np.floor(np.abs(q) + 0.5), q)
    if mode == "floor":
        return np.floor(q)
    if mode == "ceil":
        return np.ceil(q)
    t = np.trunc(q)
    if mode == "trunc":
        return t
    if mode == "odd":
        even = np.fmod(t, 2.0) == 0
        return np.where((t != q) & even, t + np.sign(q), t)
    raise ValueError(f"unknown cast mode {mode!r}")


def round_float(x: np.ndarray, fmt: tuple, mode: str, sat: bool) -> np.ndarray:
    """float64 values rounded to a binary float format (p, emin, max), as float64."""
    p, emin, big = fmt
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        _, ex = np.frexp(np.abs(x))
        e = np.maximum(ex - 1, emin)
        ulp = np.ldexp(1.0, (e - (p - 1)).astype(np.int32))
        y = rnd(x / ulp, mode) * ulp
        over = np.isfinite(x) & (np.abs(y) > big)
        to_inf = {"rint": True, "round": True, "floor": x < 0, "ceil": x > 0,
                  "trunc": False, "odd": False}[mode]
        y = np.where(over, np.where(to_inf, np.copysign(np.inf, x), np.copysign(big, x)), y)
        y = np.where(np.isfinite(x) & (x != 0), y, x)
        if sat:
            y = np.where(np.isnan(y), y, np.clip(y, -big, big))
    return y


def _float_to_int(x: np.ndarray, target: np.dtype, mode: str, sat: bool) -> np.ndarray:
    info = np.iinfo(target)
    lo, hi = np.array(info.min, target), np.array(info.max, target)
    with np.errstate(all="ignore"):
        r = rnd(np.asarray(x, np.float64), mode)
        nan, inf = np.isnan(r), np.isinf(r)
        r = np.where(nan | inf, 0.0, r)
        if sat:
            hi_m, lo_m = r >= float(info.max), r <= float(info.min)
            inner = np.where(hi_m | lo_m, 0.0, r)
            via = np.uint64 if info.min == 0 and info.bits == 64 else np.int64
            res = inner.astype(via).astype(target)
            res = np.where(hi_m, hi, np.where(lo_m, lo, res))
        else:   # wrap: r modulo 2**64 fits int64 exactly, then narrows bitwise
            m = np.fmod(r, 2.0 ** 64)
            m = np.where(m >= 2.0 ** 63, m - 2.0 ** 64, np.where(m < -2.0 ** 63, m + 2.0 ** 64, m))
            res = m.astype(np.int64).astype(target)
        xs = np.asarray(x, np.float64)
        res = np.where(inf, np.where(xs > 0, hi, lo), res)
        res = np.where(nan, np.zeros((), target), res)
    return np.asarray(res).astype(target)


def _int_to_int(x: np.ndarray, target: np.dtype, sat: bool) -> np.ndarray:
    if sat:
        src, tgt = np.iinfo(x.dtype), np.iinfo(target)
        if tgt.min > src.min:
            x = np.maximum(x, np.array(tgt.min).astype(x.dtype))
        if tgt.max < src.max:
            x = np.minimum(x, np.array(tgt.max).astype(x.dtype))
    return x.astype(target)


def float_format(dt: np.dtype) -> tuple | None:
    return FLOAT_FORMATS.get(dt.name)


def _to_float(x: np.ndarray, target: np.dtype, mode: str, sat: bool) -> np.ndarray:
    fmt = float_format(target)
    if fmt is None:                      # float64: every source value fits, to nearest
        return x.astype(target)
    if mode == "rint" and not sat and is_float(x.dtype) and x.dtype.itemsize <= 4:
        if x.dtype.itemsize < 4 and target.itemsize < 4 and x.dtype != target:
            return x.astype(np.float32).astype(target)   # exact widening, one rounding
        with np.errstate(over="ignore"):
            return x.astype(target)      # numpy / ml_dtypes round to nearest even
    return round_float(x.astype(np.float64), fmt, mode, sat).astype(target)


def cast_array(x: np.ndarray, target, mode: str | None = None, sat: bool = False) -> np.ndarray:
    """x converted to the numpy dtype target with a rounding mode (None: the reference's
    default for the pair) and saturation; see the module docstring."""
    target = np.dtype(target)
    x = np.asarray(x)
    if target.kind == "b":
        return x != 0
    if x.dtype.kind == "b":
        x = x.astype(np.int64)
    src_float = is_float(x.dtype)
    if target.kind in "iu":
        if src_float:
            return _float_to_int(x, target, mode or "trunc", sat)
        return _int_to_int(x, target, sat)
    if x.dtype == target and src_float:
        if mode is None:
            return x.copy()
        return rnd(x.astype(np.float64), mode).astype(target)   # same-type rounding
    return _to_float(x, target, mode or "rint", sat)
