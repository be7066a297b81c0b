"""Reg (vector-function) computation: `@pl.vector_function`, the register namespace `Vf`
(`from libpypto.pro import Vf as vf`, as the reference's tests import it), RegTensor and
MaskReg. Names and argument orders are the reference's (`pypto_pro.language._vf_api`,
docs/zh/pypto_pro/api/SIMD-API/operation/vf_computation).

    @pl.vector_function
    def rows(src, dst, n_rows: pl.DT_INT64):
        preg = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
        for m in pl.range(0, n_rows):
            x = vf.load_align(src, [m, 0])
            vf.store_align(dst, vf.exp(x, preg), preg, [m, 0])

    with pl.section_vector():          # a vector function is called from a vector section
        rows(tile_a, tile_b, n)

How it traces: a call runs the function's body on tracer objects at the call site (its
instructions go into the calling program, on the V pipe); the body is first rewritten
(rewrite.py: branches; and every `name = <expr>` becomes a binding of the register the
variable names). A register is storage, as on the hardware: `x = vf.add(a, b, m)` writes the
register of variable x (declared on its first assignment, `vreg` in ir/reg_ops.py, which
says how registers appear in the block level), so `acc = vf.add(acc, part, m)` in a pl.range
body updates acc every iteration. `y = x` copies x's register into y's (vmov). A value that
is not a register assigned in a pl.range body from its own value is refused (the body is
traced once). Each call of a vector function has its own registers. Registers start zeroed
(the reference: undefined until loaded or filled); the reference's limit of 32 RegTensors
(spilling to a reserved 8 KB of UB beyond) is not modelled.

Registers: a RegTensor holds exactly 256 bytes of one dtype (64 fp32/int32 lanes, 128
fp16/bf16/int16, 256 int8/uint8, 32 int64); a MaskReg has the lanes of the dtype it was made
for (`create_mask(dtype=)`), and an instruction's registers and mask must have one lane count
(an fp32 mask on an fp16 register is an error, not a reinterpretation of mask bits).

Choices (written down; the reference is the authority where it speaks):
- masked-off lanes: compute instructions zero them (MergeMode.ZEROING, the default) or keep
  the destination's value (MergeMode.MERGING: the register the result is assigned to);
  compares give False there; store_align leaves the tile's element unchanged there;
  select takes src_false there. reduce_sum/max/min write lane 0 (reduce_max/min: lane 1 the
  index of the first extreme lane, its bits as an unsigned integer of the lane width; read it
  with vf.bit_cast(r, dtype=pl.DT_UINT32) for fp32) and zero the other lanes; an empty mask
  gives 0 (sum) or the dtype's lowest / highest value (-inf / +inf for floats) with index 0;
  NaN wins max and min (the first NaN's index). reduce_sum adds in a binary tree (lanes 2i
  and 2i + 1, then pairs of those), fp16/bf16 in fp32, rounded once at the end.
- numerics: float lanes compute in float32 and round to the register's dtype after every
  instruction (as the tile instructions do); exp, ln and exp_sub compute in float64 and round
  once to float32 (exact in C and numpy alike, so the two backends agree bit for bit);
  axpy and mul_add_dst compute the product and the sum in float64 (a fused multiply-add,
  rounded once); integers compute in int64 and wrap to the lane width.
- astype: equal widths convert lane to lane; a widening cast (fp16 -> fp32) reads source
  elements 2i + part, a narrowing one (fp32 -> fp16) writes destination elements 2i + part
  (part: layout=pl.CastLayout.ZERO 0 (default), ONE 1) and zeroes the others; the mask has
  the source's lanes. round_mode pl.VFRoundMode.CAST_RINT (default, nearest even), CAST_ROUND
  (half away from zero), CAST_FLOOR, CAST_CEIL, CAST_TRUNC; float -> integer always saturates
  (NaN -> 0).
- loads and stores: offsets are elements of the tile's dtype, an int, a runtime scalar or
  [row, col] (row * the tile's row stride + col); `tile + offset` is a pointer (as the
  reference writes `out_tile + (base + r * 64)`). A register moves 256 bytes whatever the
  tile's valid shape; those bytes must lie inside the tile (a load or store past its end is
  an error at run time, or when traced if the offset is an int), and load_align / store_align
  need a 32-byte aligned address (load_unalign / store_unalign take any element offset).
  `dtype=` on load_align reinterprets the bytes. store_align and store_unalign need a
  register of the tile's element width.
- unaligned forms: load_unalign_init / load_unalign_pre / load_unalign and
  unalign_reg_for_store / store_unalign / store_unalign_post, with `post_update=True` moving
  the register's address by `stride` elements (default one register) after each use, also
  across pl.range iterations (the address is kept in closed form as a tile group's slot
  counter is, state.py; the step per iteration must not depend on the iteration). Without
  post_update the pointer argument is the address. The stride is in elements (the
  reference's load_unalign page says bytes; its examples pass 64 for 64 fp32 lanes).
  store_unalign writes `stride` elements (default the register's lanes) at once, so
  store_unalign_post (the hardware's flush of the alignment register) has nothing left to
  write on the host and records nothing; mem_bar records nothing either (one core's Reg
  instructions run in program order).

The reference's VF API (_vf_api.py: 80 names; get_spr of its docs too), for the README's
parity table:
- built (53): arange, create_mask, update_mask, full (scalar and lane broadcast), load_align,
  store_align (a register source), load_unalign_init, load_unalign_pre, load_unalign,
  unalign_reg_for_store, store_unalign, store_unalign_post, mem_bar, max, min, add, sub,
  mul, div, and_, or_, xor, abs_sub, exp_sub (fp32), muls, adds, subs, maxs, mins,
  leaky_relu, axpy, mul_add_dst, abs, neg, exp, ln, log, sqrt, relu, not_, eq, ne, lt, le,
  gt, ge, select, reduce_sum, reduce_max, reduce_min, astype, bit_cast, move.
- not built (27, plus get_spr; calling one is an error naming it): create_addr_reg, load,
  store, de_interleave, interleave, pack, unpack, unsqueeze, squeeze, histograms,
  shift_left, shift_right, gather, scatter, clear_spr, get_mask_spr,
  mask_gen_with_reg_tensor, pair_reduce_sum, mull, addc, subc, prelu, mul_dst_add,
  muls_cast, log2, log10, truncate.
- built in part (the rest is an error): load_align without dist= / data_copy_mode= /
  post_update= / AddrReg offsets; store_align of a register only (a MaskReg source and
  dist= / data_copy_mode= / post_update= are not built); reduce_* with datablock=False;
  exp_sub on fp32 only; astype of widths 1:1 and 2:1 (not FP8 / FP4, which pypto has no
  dtypes for) with CastLayout ZERO / ONE; move without a mask; MergeMode.MERGING where the
  reference offers it except astype and the reductions (ZEROING only, as the reference).
"""
from __future__ import annotations

import enum
import os
import sys

from ..ir import expr as E
from ..ir.core import Loc, make
from ..ir.types import DTYPES, REG_BYTES, RegType
from .dsl import Scalar, expr_of
from .ops import emit
from .state import current
from .tiles import Tile, TilePtr


class MaskPattern(enum.Enum):
    ALL = "ALL"
    ALLF = "ALLF"
    VL1 = "VL1"
    VL2 = "VL2"
    VL3 = "VL3"
    VL4 = "VL4"
    VL8 = "VL8"
    VL16 = "VL16"
    VL32 = "VL32"
    VL64 = "VL64"
    VL128 = "VL128"
    M3 = "M3"
    M4 = "M4"
    H = "H"
    Q = "Q"


class MergeMode(enum.Enum):
    ZEROING = "ZEROING"
    MERGING = "MERGING"


class DuplicatePos(enum.Enum):
    LOWEST = "lowest"
    HIGHEST = "highest"


class CastLayout(enum.Enum):
    ZERO = 0
    ONE = 1
    TWO = 2
    THREE = 3


class VFRoundMode(enum.Enum):
    CAST_RINT = "rint"
    CAST_ROUND = "round"
    CAST_FLOOR = "floor"
    CAST_CEIL = "ceil"
    CAST_TRUNC = "trunc"
    CAST_ODD = "odd"
    CAST_HYBRID = "hybrid"


class IndexOrder(enum.Enum):
    INCREASE_ORDER = "inc"
    DECREASE_ORDER = "dec"


class SaturateMode(enum.Enum):
    OFF = "OFF"
    ON = "ON"


ENUMS = {"MaskPattern": MaskPattern, "MergeMode": MergeMode, "DuplicatePos": DuplicatePos,
         "CastLayout": CastLayout, "VFRoundMode": VFRoundMode, "SaturateMode": SaturateMode,
         "IndexOrder": IndexOrder}


# -- registers --------------------------------------------------------------------------------

class Reg:
    """A register at trace time: its IR value (a `vreg` declaration), its type, the
    instruction that wrote it last if it is still unnamed (`fresh`)."""

    def __init__(self, v, decl, op=None):
        self.v, self.decl, self.op = v, decl, op
        self.fresh = op is not None

    @property
    def type(self) -> RegType:
        return self.v.type

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def lanes(self) -> int:
        return self.type.lanes

    @property
    def name(self) -> str:
        return self.decl.attrs["name"]

    def value(self, t):
        self.fresh = False             # read by an instruction: a binding copies it
        return self.v

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}: {self.type})"


class RegTensor(Reg):
    """vf.reg_tensor: one 256-byte vector register of a dtype (made by the assignment form of
    a Vf instruction, never called)."""


class MaskReg(Reg):
    """A predicate register of `lanes` lanes (create_mask, update_mask, compares)."""


class UnalignReg:
    """load_unalign_init / unalign_reg_for_store: the address an unaligned load or store with
    post_update moves; `count` (elements from `base`) is kept in closed form across pl.range
    iterations by the loop machinery of state.py, as a tile group's slot counter is."""

    def __init__(self, t, kind: str):
        self.kind, self.tile, self.base, self.count = kind, None, 0, 0
        self.name = f"u{len(t.groups)}"
        t.groups.append(self)


class _Frame:
    """One call of a vector function: its name, source file and registers by variable."""

    def __init__(self, fn: str, src: str):
        self.fn, self.src, self.regs = fn, src, {}


_FRAMES: list = []


def _frame(t) -> _Frame:
    if not _FRAMES:
        raise t.error("vf.* instructions work only inside a @pl.vector_function called from "
                      "a vector section")
    return _FRAMES[-1]


def _loc(t) -> Loc | None:
    """The innermost line of the op file (a line of the vector function's body)."""
    files = {t.source_file} | {fr.src for fr in _FRAMES}
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename in files:
            return Loc(os.path.basename(f.f_code.co_filename), f.f_lineno)
        f = f.f_back
    return None


def _declare(t, kind: str, dtype, lanes: int, var: str | None = None) -> tuple:
    fr = _frame(t)
    t.nvregs = getattr(t, "nvregs", 0) + 1
    name = f"{fr.fn}_{var or 'tmp'}_{t.nvregs}"       # a temporary until a binding names it
    op = make("vreg", (), (RegType(kind, dtype, lanes),), {"name": name, "pipe": "V"}, None,
              _loc(t))
    t.program("a vector function").hoisted.append(op)
    return op.result, op


def _new(t, cls, dtype, lanes: int, name: str, operands: list, attrs: dict) -> Reg:
    """A new register written by instruction `name` (destination first)."""
    kind = "mask" if cls is MaskReg else "vreg"
    v, decl = _declare(t, kind, DTYPES["bool"] if kind == "mask" else dtype, lanes)
    reg = cls(v, decl)
    op = _instr(t, name, [reg] + operands, attrs)
    reg.op, reg.fresh = op, True
    return reg


def _instr(t, name: str, operands: list, attrs: dict):
    op = emit(name, operands, attrs)
    op.loc = _loc(t)
    return op


def bind(name: str, value, carried: bool = False):
    """`name = value` in a vector function body (the rewrite's helper): a register value
    becomes the register of variable `name` (see the module docstring)."""
    t = current()
    if not isinstance(value, Reg) or not _FRAMES:
        if carried:
            raise t.error(f"{name!r} is updated from its own value in a pl.range body: the "
                          f"body is traced once (only registers are updated per iteration)")
        return value
    fr = _frame(t)
    old = fr.regs.get(name)
    if old is value:
        return value
    if value.fresh and old is not None and old.type == value.type:
        value.op.operands[0] = old.v               # the instruction writes the variable's
        t.program("a vector function").hoisted.remove(value.decl)
        value.fresh = False
        return old
    if value.fresh:
        value.decl.attrs["name"] = f"{fr.fn}_{name}_{value.name.rsplit('_', 1)[1]}"
        value.fresh = False
        fr.regs[name] = value
        return value
    dst = old if old is not None and old.type == value.type else None
    if dst is None:
        v, decl = _declare(t, value.type.kind, value.dtype, value.lanes, name)
        dst = type(value)(v, decl)
    _instr(t, "vmov", [dst, value], {})
    fr.regs[name] = dst
    return dst


# -- operand checks ---------------------------------------------------------------------------

def _reg(t, x, what: str) -> RegTensor:
    if not isinstance(x, RegTensor):
        raise t.error(f"{what} must be a vector register (RegTensor, from vf.load_align, "
                      f"vf.full or a Vf instruction), not {x!r}")
    return x


def _mask(t, x, what: str, lanes: int) -> MaskReg:
    if not isinstance(x, MaskReg):
        raise t.error(f"{what} must be a mask register (from vf.create_mask, vf.update_mask "
                      f"or a compare), not {x!r}")
    if x.lanes != lanes:
        raise t.error(f"{what}: a mask of {x.lanes} lanes on a register of {lanes} lanes "
                      f"(make the mask with the register's dtype: "
                      f"vf.create_mask(dtype=pl.DT_...))")
    return x


def _same(t, what: str, *regs) -> None:
    if len({r.lanes for r in regs}) > 1 or len({r.dtype for r in regs}) > 1:
        raise t.error(f"{what} on registers of different types "
                      f"({', '.join(str(r.type) for r in regs)}): use vf.astype")


def _float_only(t, what: str, r) -> None:
    if r.dtype.kind != "float":
        raise t.error(f"{what} takes a float register, not {r.type}")


def _int_only(t, what: str, r) -> None:
    if r.dtype.kind != "int":
        raise t.error(f"{what} takes an integer register, not {r.type}")


def _merge(t, mode) -> dict:
    if mode is None or mode is MergeMode.ZEROING:
        return {}
    if mode is MergeMode.MERGING:
        return {"merge": True}
    raise t.error(f"mode= must be pl.MergeMode.ZEROING or MERGING, not {mode!r}")


def _scalar(t, v, r, what: str):
    """A scalar operand for register r: a number, or a runtime scalar (an expression)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, Scalar)):
        raise t.error(f"{what}: the scalar must be a number or a runtime scalar, not {v!r}")
    if isinstance(v, float) and r.dtype.kind != "float":
        raise t.error(f"{what}: a float scalar for an integer register {r.type}")
    if isinstance(v, float):
        return v
    if isinstance(v, int):
        return float(v) if r.dtype.kind == "float" else v
    e = expr_of(v)
    if r.dtype.kind != "float":
        floats = {n for n, d in getattr(t, "scalar_dtypes", {}).items()
                  if d.startswith(("f", "bf"))}
        if E.free_symbols(e) & floats:
            raise t.error(f"{what}: a float scalar for an integer register {r.type}")
    return e


def _dtype(t, dtype, what: str, default=None):
    d = default if dtype is None else dtype
    if d is None or getattr(d, "api", None) is None or d.name not in DTYPES:
        raise t.error(f"{what} needs dtype=pl.DT_* , not {dtype!r}")
    if d.kind == "bool":
        raise t.error(f"{what}: registers hold numbers, not {d.api}")
    return d


def lanes_of(dt) -> int:
    return REG_BYTES // dt.itemsize


# -- offsets and pointers ---------------------------------------------------------------------

def _stride(tile: Tile) -> int:
    return tile.stride if tile.stride is not None else tile.type.shape[1]


def _offset_expr(t, off, tile: Tile):
    if off is None:
        return 0
    if isinstance(off, (list, tuple)):
        if len(off) != 2:
            raise t.error(f"an offset list is [row, col], not {off!r}")
        r, c = (expr_of(x) for x in off)
        if r is None or c is None:
            raise t.error(f"offset [row, col] must be integer scalars, not {off!r}")
        return E.add(E.mul(r, _stride(tile)), c)
    e = expr_of(off)
    if e is None:
        raise t.error(f"an offset must be an int, a runtime integer scalar or [row, col], not "
                      f"{off!r} (AddrReg offsets are not built)")
    return e


def _ptr(t, x, what: str) -> TilePtr:
    if isinstance(x, TilePtr):
        ptr = x
    elif isinstance(x, Tile):
        ptr = TilePtr(x, 0)
    else:
        raise t.error(f"{what} must be a Vec tile (or tile + offset), not {x!r}")
    if ptr.tile.type.space != "ub":
        raise t.error(f"{what}: tile {ptr.tile.name} is in {ptr.tile.type.memory.name}; "
                      f"registers load from and store to Vec tiles")
    return ptr


def _static_check(t, what: str, tile: Tile, off, nbytes: int, aligned: bool) -> None:
    """Bounds and alignment known when traced (an int offset); the rest at run time."""
    if not isinstance(off, int):
        return
    isz = tile.type.dtype.itemsize
    extent = ((tile.type.shape[0] - 1) * _stride(tile) + tile.type.shape[1]) * isz
    if off < 0 or off * isz + nbytes > extent:
        raise t.error(f"{what} of {nbytes} bytes at element {off} of tile {tile.name} runs "
                      f"past its {extent} bytes")
    if aligned and (off * isz) % 32:
        raise t.error(f"{what} at element {off} of tile {tile.name} is not 32-byte aligned "
                      f"(use vf.load_unalign / vf.store_unalign)")


def _refuse(t, what: str, **given) -> None:
    for k, v in given.items():
        if v not in (None, False):
            raise t.error(f"{what} {k}= is not built in pypto (see libpypto/prolang/vf.py)")
