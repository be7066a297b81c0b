"""C text helpers shared by the renderer's modules: element loads and stores in the compute
type, literals, strides, pointer arithmetic, reduction combines, walking a program's
instructions and regions.
"""
from __future__ import annotations

import math

from ..ir import expr as E
from ..ir import ops as O
from ..ir.instr import dests

ACC_LANES = 16     # independent partial accumulators per reduced row: fixed order, vectorises


def _ld(dt, x: str) -> str:
    """A stored element as the compute type (float for floating dtypes, int64 for ints)."""
    if dt.name == "bf16":
        return f"pp_bf2f({x})"
    if dt.name == "f16":
        return f"(float){x}"
    if dt.kind == "float":
        return x
    return f"(int64_t){x}"


def _st(dt, x: str, src_kind: str = "float") -> str:
    """A compute-type value rounded to the storage dtype."""
    if dt.name == "bf16":
        return f"pp_f2bf({x})"
    if dt.name == "f16":
        return f"(_Float16)({x})"
    if dt.kind == "float":
        return f"(float)({x})"
    if dt.kind == "bool":
        return f"(uint8_t)(({x}) != 0)"
    if src_kind == "float":
        return f"({dt.c_type})nearbyintf({x})"
    return f"({dt.c_type})({x})"


def _flit(v) -> str:
    if isinstance(v, E.Expr):
        return f"(float)({E.to_c(v)})"
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


def _strides(shape) -> list:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))


_MM_DT = {"f32": "PP_F32", "f16": "PP_F16", "bf16": "PP_BF16"}   # pp_matmul operand dtypes


def _fusable(op) -> bool:
    """Elementwise instructions whose element i depends only on their sources' element i."""
    return op.name == "tcvt" or (op.name.startswith("t") and op.name[1:] in O.ELEMENTWISE)


def _counts(body: list, which) -> dict:
    """How often each tile is read (which=sources) or written (which=dests) in the program."""
    out: dict = {}
    for op in _instrs(body):
        for v in which(op):
            out[v] = out.get(v, 0) + 1
    return out


def _reduce_ops(kind: str, sdt) -> tuple[str, str, str]:
    """(identity, combine template over {acc} and {x}, work type) of a reduction."""
    ident, _, comb, _, _ = O.REDUCE[kind]
    work = "float" if sdt.kind == "float" else "int64_t"
    if work != "float":
        ident = {"0": "0", "1": "1", "-INFINITY": "INT64_MIN", "INFINITY": "INT64_MAX"}[ident]
        comb = {"max": "({x} > {acc} ? {x} : {acc})",
                "min": "({x} < {acc} ? {x} : {acc})"}.get(kind, comb)
    return ident, comb, work


def _instrs(ops: list):
    """The tile instructions among ops and inside their regions, in program order."""
    for top in ops:
        for op in top.walk():
            if op.name not in ("tile", "for", "if", "arg"):
                yield op


def _regions(body: list):
    """Every op list of the program: the body, then each region nested in it."""
    yield body
    for top in body:
        for op in top.walk():
            for region in op.regions:
                yield region


def _clobbers(ops: list, mem, extent: dict) -> bool:
    """Does an instruction among ops write mem: arena bytes (lo, hi), or "gm" (any tensor)?"""
    for op in _instrs(ops):
        if mem == "gm":
            if op.name in ("tstore", "tscatter"):
                return True
            continue
        for w in dests(op):
            lo, hi = extent[w]
            if lo < mem[1] and mem[0] < hi:
                return True
    return False


def _is_mm_operand(op, v) -> bool:
    return op.name == "tmatmul" and op.operands[0] is not v


def _any_reader(op, v) -> bool:
    return True


def _loadable_in_place(op) -> bool:
    """A tload whose destination could be a pointer into GM: same dtype, a matrix (leading
    tile dims 1) of a tensor of rank 2 or more."""
    d, gm = op.operands
    t, g = d.type, gm.type
    return (t.dtype == g.dtype and t.rank >= 2 and g.rank >= t.rank
            and all(x == 1 for x in t.shape[:-2]))


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
