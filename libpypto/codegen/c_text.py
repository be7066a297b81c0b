"""C text helpers shared by the renderer's modules (c.py, c_more.py, c_rows.py): element loads
and stores in the compute type, literals, strides, pointer arithmetic, reduction combines.

Only spelling lives here; what to print is decided in c_plan.py.
"""
from __future__ import annotations

import math

from ..ir import expr as E
from ..ir import ops as O

ACC_LANES = 16     # independent partial accumulators per reduced row: fixed order, vectorises


_FP8 = {"f8e4m3": "e4m3", "f8e5m2": "e5m2", "e8m0": "e8m0"}   # c_ops.h pp_e4m3_f, pp_f_e4m3


def _ld(dt, x: str) -> str:
    """A stored element as the compute type (float for floating dtypes, int64 for ints)."""
    if dt.name == "bf16":
        return f"pp_bf2f({x})"
    if dt.name == "f16":
        return f"pp_h2f({x})"
    if dt.name in _FP8:
        return f"pp_{_FP8[dt.name]}_f({x})"
    if dt.kind == "float":
        return x
    return f"(int64_t){x}"


def _st(dt, x: str, src_kind: str = "float") -> str:
    """A compute-type value rounded to the storage dtype."""
    if dt.name == "bf16":
        return f"pp_f2bf({x})"
    if dt.name == "f16":
        return f"pp_f2h({x})"
    if dt.name in _FP8:
        return f"pp_f_{_FP8[dt.name]}({x})"
    if dt.kind == "float":
        return f"(float)({x})"
    if dt.kind == "bool":
        return f"(uint8_t)(({x}) != 0)"
    if src_kind == "float":
        return f"({dt.c_type})nearbyintf({x})"
    return f"({dt.c_type})({x})"


def c_comment(text: str) -> str:
    """A C comment holding text: `*/` and anything but printable ASCII cannot end it or hide
    in it."""
    clean = "".join(ch if " " <= ch <= "~" else "?" for ch in text).replace("*/", "* /")
    return f"/* {clean} */"


def _flit(v, ex=E.to_c) -> str:
    """A float literal; an expression through ex (the renderer's names for its symbols)."""
    if isinstance(v, E.Expr):
        return f"(float)({ex(v)})"
    if isinstance(v, bool):
        return "1.0f" if v else "0.0f"
    if isinstance(v, int):
        return f"{v}.0f" if abs(v) < 2**24 else f"{float(v)!r}f"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    if math.isnan(v):
        return "NAN"
    return f"{float(v)!r}f"


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def next_tile_dim(lead) -> int:
    """Along which of a tile's leading dims the next instance's tile lies, for a prefetch:
    the outermost of more than one element (the last when all are 1)."""
    return next((d for d, size in enumerate(lead) if size > 1), len(lead) - 1)


def _strides(shape) -> list:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))


_MM_DT = {"f32": "PP_F32", "f16": "PP_F16", "bf16": "PP_BF16"}   # pp_matmul operand dtypes


def _reduce_ops(kind: str, sdt) -> tuple[str, str, str]:
    """(identity, combine template over {acc} and {x}, work type) of a reduction."""
    ident, _, comb, _, _ = O.REDUCE[kind]
    work = "float" if sdt.kind == "float" else "int64_t"
    if work != "float":
        ident = {"0": "0", "1": "1", "-INFINITY": "INT64_MIN", "INFINITY": "INT64_MAX"}[ident]
        comb = {"max": "({x} > {acc} ? {x} : {acc})",
                "min": "({x} < {acc} ? {x} : {acc})"}.get(kind, comb)
    return ident, comb, work


def _paren(x: str) -> str:
    """x, parenthesised unless it is a name, a number or already in parentheses."""
    if x.replace("_", "a").isalnum():
        return x
    if x.startswith("(") and x.endswith(")"):
        depth = 0
        for i, ch in enumerate(x):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and i < len(x) - 1:
                break
        else:
            return x
    return f"({x})"


def _at(ptr: str, terms) -> str:
    """ptr + the sum of offset * stride over (offset, stride) pairs, zero terms left out."""
    out = [ptr]
    for o, st in terms:
        if o != "0":
            out.append(_paren(o) if st == "1" else f"{_paren(o)} * {st}")
    return " + ".join(out)


def _minus(a: str, b: str) -> str:
    return a if b == "0" else f"{a} - {_paren(b)}"


def _subst_ab(tmpl: str, env: dict) -> str:
    out, i = [], 0
    while i < len(tmpl):
        ch = tmpl[i]
        prev = tmpl[i - 1] if i else " "
        nxt = tmpl[i + 1] if i + 1 < len(tmpl) else " "
        if ch in "abc" and not (prev.isalnum() or prev == "_") and not (nxt.isalnum() or nxt == "_"):
            out.append(env[ch])
        else:
            out.append(ch)
        i += 1
    return "".join(out)


CAST_MODES = ("rint", "round", "floor", "ceil", "trunc", "odd")     # pp_rnd's numbering
# binary float formats: mantissa bits (with the implicit one), minimum exponent, largest value
_FLOAT_FMT = {"f32": (24, -126, "0x1.fffffep+127"), "f16": (11, -14, "65504.0"),
              "bf16": (8, -126, "0x1.fep+127"), "f8e4m3": (4, -6, "448.0"),
              "f8e5m2": (3, -14, "57344.0")}


def _int_range(dt) -> tuple[int, int]:
    bits = dt.itemsize * 8
    if dt.np_name.startswith("uint"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _i64_lit(v: int) -> str:
    if v >= 1 << 63:                      # uint64 max: its bits as int64
        return "(int64_t)-1"
    return "(-9223372036854775807LL - 1)" if v == -(1 << 63) else f"{v}LL"


def cvt_expr(src, dst, x: str, attrs: dict) -> tuple[str, str]:
    """A cast of the compute-type value x (an expression) from dtype src to dst with the
    tcvt's mode and sat attributes: the value, in the compute type, that _st then stores
    exactly, and its kind. runtime/cast.py defines the same in numpy."""
    kind = "float" if src.kind == "float" else "int"
    mode, sat = attrs.get("mode"), int(bool(attrs.get("sat")))
    if dst.kind == "bool":
        return x, kind
    if dst.kind == "int":
        lo, hi = _int_range(dst)
        if kind == "float":
            m = CAST_MODES.index(mode or "trunc")
            u64 = int(hi >= 1 << 63)
            return (f"pp_f2i((double)({x}), {m}, {sat}, {float(lo)!r}, {float(hi)!r}, "
                    f"{_i64_lit(lo)}, {_i64_lit(hi)}, {u64})", "int")
        slo, shi = _int_range(src) if src.kind == "int" else (0, 1)
        if sat and (lo > slo or hi < shi):
            return f"pp_isat({x}, {_i64_lit(max(lo, slo))}, {_i64_lit(min(hi, shi))})", "int"
        return x, "int"
    m = CAST_MODES.index(mode or "rint")
    if src == dst:
        return (f"(float)pp_rnd((double)({x}), {m})", "float") if mode else (x, kind)
    if m == 0 and not sat:
        return x, kind                    # the store rounds to nearest even
    p, emin, big = _FLOAT_FMT[dst.name]
    return f"(float)pp_fround((double)({x}), {p}, {emin}, {big}, {m}, {sat})", "float"
