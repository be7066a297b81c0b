"""Definitions of the Reg (vector-function) instructions of Pro mode: the block level's
register loads and stores, register arithmetic, compares into masks, masks, reductions
within a register, broadcasts and casts (written by libpypto/prolang/vf.py).

How registers appear in the block level (the decision): a register is a storage value, like
a tile. `%r = vreg {name=...} : vreg.f32[64]` declares one (types.RegType: kind "vreg", 256
bytes of one dtype, 256 / itemsize lanes; kind "mask", a predicate of `lanes` bool lanes)
among the program's first ops, where make_tile's tiles are declared; every Reg instruction
names its destination register first and reads the others, as tile instructions do with
tiles (destination first, written in place). A register is not an SSA value because the
reference's registers are variables a loop updates (`row_max = vf.max(row_max, part, m)` in
a pl.range body): the vector function's assignment names the register. Registers are private
to the core and live on the V pipe only, so the checker never sees them; the tile bytes a
load reads and a store writes go through it like any tile access. `pypto-trace -S` prints
`vadd %5, %3, %4, %2 {merge=false, pipe="V"}` over `vreg.f32[64]` values; msgpack keeps a
register type as ["reg", kind, dtype, lanes].

Operands (R a register or a mask, T a Vec tile), attributes and PTO mnemonic, after the
AscendC instruction each stands for:

    vreg   -> R                      declaration {name}
    vlds   R, T      {offset}        load_align: VL elements at an element offset (32-B aligned)
    vldus  R, T      {offset}        load_unalign: any element offset
    vsts   T, R, M   {offset}        store_align: the mask's lanes (the rest of T kept)
    vstus  T, R      {offset, count} store_unalign: the first count lanes at any offset
    vdup   R[, M]    {value, merge}  full(scalar): broadcast a number or a runtime scalar
    vdupl  R, R, M   {pos, merge}    full(register): broadcast the lowest / highest lane
    v<unary>  R, R, M {merge}        abs neg exp ln sqrt relu not
    v<binary> R, R, R, M {merge}     add sub mul div max min and or xor absdif expsub
    v<s>   R, R, M   {scalar, merge} adds subs muls maxs mins lrelu (a number or scalar)
    vaxpy  R, R, M   {scalar, merge} axpy: dst + src * scalar (reads its destination)
    vmula  R, R, R, M {merge}        mul_add_dst: dst + src0 * src1 (reads its destination)
    vcmp   M, R, R, M {cmp}          compare into a mask (eq ne lt le gt ge)
    vcmps  M, R, M   {cmp, scalar}   compare with a scalar
    vsel   R, R, R, M                select(src_true, src_false, mask)
    vcadd / vcmax / vcmin  R, R, M   reduce_sum / reduce_max / reduce_min into lane 0
    vcvt   R, R, M   {part, round}   astype
    vbitcast R, R                    bit_cast (the same 256 bytes as another dtype)
    vmov   R, R                      a register copy (`y = x` in a vector function)
    vci    R         {start, order}  arange: lane i = start + i (inc) or start - i (dec)
    pset   M         {pattern}       create_mask
    plt    M         {n}             update_mask: the first n lanes
"""
from __future__ import annotations

from . import expr as E
from .opdef import EXPR, Bool, Ex, Ident, Int, OpDef, Str, attr, opt
from .types import RegType

R, TL = "reg", "tile"
W = ("tile",)
PATTERNS = ("ALL", "ALLF", "VL1", "VL2", "VL3", "VL4", "VL8", "VL16", "VL32", "VL64", "VL128",
            "M3", "M4", "H", "Q")
CMPS = ("eq", "ne", "lt", "le", "gt", "ge")
ROUNDS = ("rint", "round", "floor", "ceil", "trunc")
UNARY = ("abs", "neg", "exp", "ln", "sqrt", "relu", "not")
BINARY = ("add", "sub", "mul", "div", "max", "min", "and", "or", "xor", "absdif", "expsub")
SCALAR = ("adds", "subs", "muls", "maxs", "mins", "lrelu")
REDUCE = {"vcadd": "sum", "vcmax": "max", "vcmin": "min"}
MERGE = {"merge": opt(Bool())}
PIPED = {"pipe": opt(Str("V"))}


def _regs(op) -> list:
    return [v.type for v in op.operands if isinstance(v.type, RegType)]


def v_regs(op, err) -> None:
    """Data registers of one instruction share a lane count (a mask too), and one dtype
    unless the instruction converts (vcvt, vbitcast) or compares into a mask."""
    regs = _regs(op)
    data = [t for t in regs if t.kind == "vreg"]
    if op.name in ("vcvt", "vbitcast"):
        data = data[1:]
    if len({t.dtype for t in data}) > 1:
        err(f"{op.name} on registers of different dtypes "
            f"({', '.join(str(t) for t in data)})")
    if op.name != "vcvt" and len({t.lanes for t in regs}) > 1:
        err(f"{op.name} on registers of different lane counts "
            f"({', '.join(str(t) for t in regs)})")


def _i(name, operands, attrs, pto, writes=(0,), reads_dest=(), optional=0, verify=v_regs):
    return OpDef(name, W, operands, optional, (), 0, {**attrs, **PIPED}, verify,
                 {"c": "i_vf", "numpy": "tvf", "pto": pto}, writes, reads_dest, "V", pto)


DEFS = [
    # a declaration, stamped with the pipe its registers belong to (verify wants one)
    OpDef("vreg", W, (), 0, (R,), 0, {"name": attr(Ident()), **PIPED}, None, {}),
    _i("vlds", (R, TL), {"offset": attr(EXPR)}, "VLDS"),
    _i("vldus", (R, TL), {"offset": attr(EXPR)}, "VLDUS"),
    _i("vsts", (TL, R, R), {"offset": attr(EXPR)}, "VSTS", reads_dest=(0,)),
    _i("vstus", (TL, R), {"offset": attr(EXPR), "count": attr(EXPR)}, "VSTUS", reads_dest=(0,)),
    _i("vdup", (R, R), {"value": attr(Ex(num=True)), **MERGE}, "VDUP", optional=1),
    _i("vdupl", (R, R, R), {"pos": attr(Str("lowest", "highest")), **MERGE}, "VDUP"),
    *[_i("v" + n, (R, R, R), dict(MERGE), "V" + n.upper()) for n in UNARY],
    *[_i("v" + n, (R, R, R, R), dict(MERGE), "V" + n.upper()) for n in BINARY],
    *[_i("v" + n, (R, R, R), {"scalar": attr(Ex(num=True)), **MERGE}, "V" + n.upper())
      for n in SCALAR],
    _i("vaxpy", (R, R, R), {"scalar": attr(Ex(num=True)), **MERGE}, "VAXPY", reads_dest=(0,)),
    _i("vmula", (R, R, R, R), dict(MERGE), "VMULA", reads_dest=(0,)),
    _i("vcmp", (R, R, R, R), {"cmp": attr(Str(*CMPS))}, "VCMP"),
    _i("vcmps", (R, R, R), {"cmp": attr(Str(*CMPS)), "scalar": attr(Ex(num=True))}, "VCMPS"),
    _i("vsel", (R, R, R, R), {}, "VSEL"),
    *[_i(n, (R, R, R), {}, n.upper()) for n in REDUCE],
    _i("vcvt", (R, R, R), {"part": attr(Int(0, 1)), "round": attr(Str(*ROUNDS))}, "VCVT"),
    _i("vbitcast", (R, R), {}, "VBITCAST"),
    _i("vmov", (R, R), {}, "VMOV"),
    _i("vci", (R,), {"start": attr(Ex(num=True)), "order": attr(Str("inc", "dec"))}, "VCI"),
    _i("pset", (R,), {"pattern": attr(Str(*PATTERNS))}, "PSET"),
    _i("plt", (R,), {"n": attr(EXPR)}, "PLT"),
]
REG_OPS = frozenset(d.name for d in DEFS)       # with vreg
OPS_PTO = {d.name: d.pto for d in DEFS}


def reg_note(attrs: dict) -> str:
    """A Reg instruction's attributes for the PTO listing: `  ; offset i0*64, merge true`."""
    parts = [f"{k} {E.to_str(v) if isinstance(v, E.Expr) else v}"
             for k, v in sorted(attrs.items()) if k != "pipe"]
    return f"  ; {', '.join(parts)}" if parts else ""


def reg_line(op, names: dict) -> str:
    """A register declaration or Reg instruction in the PTO listing (codegen/pto.py):
    `.reg body_acc_2 : vreg.f32[64]`, `V     VADD body_acc_2, body_acc_2, body_x_3, ...`."""
    if op.name == "vreg":
        names[op.result] = op.attrs["name"]
        return f".reg {op.attrs['name']} : {op.result.type}"
    ops = ", ".join(names.get(v, getattr(v, "name", None) or "?") for v in op.operands)
    return f"{op.attrs.get('pipe', 'V'):<5} {OPS_PTO[op.name]} {ops}{reg_note(op.attrs)}"
