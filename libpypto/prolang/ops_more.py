"""More Pro-mode instructions (issue 9 item 4): MX matmul with E8M0 block scales,
quant / dequant, the vector gather / scatter, sort32 / mrgsort, histogram, argmax / argmin
and the fused vector forms. Names and argument orders are the reference's
(`pypto_pro.language._api`); the instructions are in libpypto/ir/tile_ops_more.py, the Pro
runner's numpy in runtime/pro_exec_more.py, their C in codegen/pro_c_more.py.

Reference tile API parity (docs/zh/pypto_pro/api/SIMD-API/operation/), for the README:

  here:    load load_tile store store_tile (atomic=AtomicAdd is the reference's store_atomic)
           move insert subview set_validshape; add sub mul div maximum minimum and_ or_
           eq ne lt le gt ge select expands neg abs exp log sqrt rsqrt recip relu cast
           sum max min expand_{add,sub,mul,div,max,min}; matmul matmul_acc (bias);
           matmul_mx matmul_mx_acc quant dequant gather scatter sort32 mrgsort histogram
           argmax argmin fillpad add_relu sub_relu addc mul_add_dst fused_mul_add
           fused_mul_add_relu axpy shl shr xor add_relu_cast sub_relu_cast mul_cast
  missing: gatherb gathermask mrgsort2 partadd partmax partmin partmul transpose
           getval setval set_stride fill_index set_mask_count set_mask_norm set_vec_mask
           reset_mask ssbuf_load ssbuf_store dcci set_mm_layout_transform (recorded only),
           FP4 (DT_FP4E2M1 / DT_FP4E1M2) operands of matmul_mx, the Scaling space

Choices where the reference is silent or the host differs:
- matmul_mx: the 950's (arch="a5") MX matmul. lhs [M, K] in Left and rhs [K, N] in Right
  are DT_FP8E4M3FN or DT_FP8E5M2 (either on each side), scale_a [M, K/32] in ScaleLeft and
  scale_b [K/32, N] in ScaleRight are DT_FP8E8M0 (2**(e - 127)), K a multiple of 64, the
  accumulator fp32 in Acc. Each product lhs*2**sa * rhs*2**sb is exact in float64; the sum
  over k runs in order in float64 and is rounded to fp32 once (matmul_mx_acc adds the fp32
  accumulator to the float64 sum before that rounding). The hardware's internal precision
  is not documented; this is exact up to the one rounding. An E8M0 NaN (0xFF) scale gives
  NaN. The scale's address must be its data tile's address >> 4 (the instruction finds its
  scales there): checked at trace time for compile-time addresses, at run time otherwise.
- the ScaleLeft / ScaleRight spaces exist on the 950 only: 4 KiB each, 32-byte aligned,
  default layouts ZZ / NN. A scale reaches them as in the reference: pl.load of the packed
  GM tensor ([M, G/2, 2] for A, [G/2, N, 2] for B, G = K/32) into a ZZ / NN E8M0 Mat tile
  with order=[0, 1] (Mat tile [m, g] = x[m, g // 2, g % 2] for ZZ, [g, n] = x[g // 2, n,
  g % 2] for NN), then pl.move Mat -> ScaleLeft / ScaleRight (MTE1).
- fp8 and E8M0 tiles only move (load, store, move, insert) and feed matmul_mx: vector
  compute on them (cast included) is refused.
- quant(out, src, scale, mode=, offset=): SYM: int8 out = sat(rint(src * scale)); ASYM:
  uint8 out = sat(rint(rint(src * scale) + offset)); src*scale in fp32, rint is round half
  to even, scale and offset [R, 1] DN fp32 tiles (one per row). dequant(out, src, scale,
  offset): fp32 out = (src - offset) * scale, each step rounded to fp32. Both on V, as the
  reference's quantization pages say (the FIX-path quantisation is pl.store's scale=).
- gather(out, src, idx, tmp, offset=): out_flat[i] = src_flat[idx_flat[i] + offset] over
  out's valid region (flat: row-major over src's static shape); an index outside src is a
  run-time error (the reference leaves it undefined). scatter(out, src, idx):
  out_flat[idx[i, j]] = src[i, j] over src's valid region in row-major order (on a
  conflict the last write wins; the reference leaves it undefined); outside is an error.
- sort32(dst, src, idx, tmp=None): each row's valid columns in groups of 32 (the last may
  be shorter: then tmp is required, as in the reference), each group sorted descending
  (stable: equal values keep their order; NaN sorts last) into 8-byte records (value,
  uint32 index): fp32 [v, idx bits], fp16 [v, 0, idx low half, idx high half]. idx: a
  [1, C] uint32 tile shared by every row, or [R, C].
- mrgsort(dst, src, block_len=): a [1, N] tile of records in sorted runs of block_len
  storage elements; each 4 consecutive runs merge into one descending run (ties: the
  earlier run first), as TMRGSORT's four-list merge.
- histogram(dst, src, idx, is_msb=): src uint16 [R, C], dst uint32 [R, >= 256], idx uint8
  [R, 1] DN. Each row's counts are cumulative, as the reference's example output shows:
  dst[r, b] = #{j : byte(src[r, j]) <= b} with byte the high byte (is_msb=True) or the
  low byte of the elements whose high byte equals idx[r] (is_msb=False). uint32 sources
  are not built.
- argmax / argmin(out, src, tmp, dim=): index of the first largest / smallest of each row
  (dim=0, out [R, 1] DN) or column (dim=1, out [1, C]) into an int32 / uint32 tile; NaN
  counts as largest for argmax and smallest for argmin (the first NaN wins).
- fillpad(out, src, mode=): out = src inside src's valid region, out's TileType pad= value
  elsewhere in out (TilePad.zero 0; max / min: +-inf for floats, the dtype's extremes for
  integers); NORMAL (two tiles of one shape), EXPAND (out larger), INPLACE (one tile). Vec
  tiles only (the reference's Mat form is not built).
- fused forms compute in fp32 (int64 for integers) and round once into out: add_relu
  relu(a + b), sub_relu, addc a + b + c, mul_add_dst out = a * b + out, fused_mul_add
  out = a * out + b, fused_mul_add_relu out = relu(out * a + b), axpy out = alpha * src +
  out (the product rounded to fp32 before the add: no contraction into an FMA), shl / shr
  (integers: shift by the rhs tile, shr arithmetic for signed dtypes, logical for unsigned),
  xor (tmp checked, unused), add_relu_cast / sub_relu_cast / mul_cast(out, lhs, rhs,
  target_type=): the result converted to out's dtype (target_type must be it).
"""
from __future__ import annotations

from ..ir.tile_ops_more import FUSED
from ..ir.types import BOOL
from .dsl import TileLayout
from .ops import MORE, SPACE_NAME, _box, _scalar_attr, _tile, _vector, emit, no_fp8
from .state import current
from .tiles import Tile

MX_DATA = ("f8e4m3", "f8e5m2")


def _a5(t, what: str) -> None:
    if t.kernel.options.get("arch") != "a5":
        raise t.error(f"{what} exists on the 950 only: give the kernel @pl.jit(arch=\"a5\")")


# -- MX scales: load and move -----------------------------------------------------------------

def load_scale(t, dst, src, offsets, order):
    """pl.load of a packed E8M0 scale tensor into a ZZ / NN Mat tile (called by ops.load)."""
    _a5(t, "an MX scale load")
    lay = dst.type.layout.name
    if src.dtype.name != "e8m0" or len(src.dims) != 3 or src.dims[2] != 2 or \
            list(order or []) != [0, 1]:
        raise t.error(f"an MX scale load into a {lay} Mat tile takes a [.., .., 2] DT_FP8E8M0 "
                      f"tensor with order=[0, 1], not {src.dtype} {list(src.dims)} "
                      f"order={order!r}")
    offs, _ = _box(t, dst, src, offsets, "load", [0, 1])
    r, c = dst.valid
    if any(not isinstance(v, int) or v % 2 for v in ((c,) if lay == "ZZ" else (r,))):
        raise t.error(f"an MX scale tile's groups come in pairs: the {lay} tile's "
                      f"{'columns' if lay == 'ZZ' else 'rows'} must be even")
    valid = [r, c // 2, 2] if lay == "ZZ" else [r // 2, c, 2]
    return emit("tload", [dst, src], {"offsets": offs, "valid": valid, "mx": lay})


def move_scale(t, dst, src):
    """pl.move Mat -> ScaleLeft / ScaleRight (MTE1): a whole E8M0 tile (ops.move)."""
    _a5(t, "ScaleLeft / ScaleRight")
    if src.type.space != "l1" or src.type.dtype.name != "e8m0" or \
            dst.type.shape != src.type.shape:
        raise t.error(f"move into {SPACE_NAME.get(dst.type.space, dst.type.space)} takes a "
                      f"whole DT_FP8E8M0 Mat tile of its shape, not {src.type.dtype} "
                      f"{list(src.type.shape)} in {SPACE_NAME.get(src.type.space)}")
    return emit("tmov", [dst, src], {"valid": list(dst.valid)})


# -- MX matmul ---------------------------------------------------------------------------------

MORE.update(load_scale=load_scale, move_scale=move_scale)


def _mx(t, what, dst, lhs, rhs, sa, sb) -> None:
    _a5(t, what)
    for x, sp in ((dst, "l0c"), (lhs, "l0a"), (rhs, "l0b"), (sa, "scale_left"),
                  (sb, "scale_right")):
        if x.type.space != sp:
            raise t.error(f"{what}: tile {x.name} is in {SPACE_NAME[x.type.space]}, it must be "
                          f"in {SPACE_NAME[sp]}")
    (m, k), (k2, n) = lhs.type.shape, rhs.type.shape
    if k != k2 or tuple(dst.type.shape) != (m, n) or k % 64:
        raise t.error(f"{what}: shapes do not chain (K a multiple of 64): {[m, k]} x "
                      f"{[k2, n]} into {list(dst.type.shape)}")
    if lhs.type.dtype.name not in MX_DATA or rhs.type.dtype.name not in MX_DATA or \
            dst.type.dtype.name != "f32":
        raise t.error(f"{what}: {lhs.type.dtype} x {rhs.type.dtype} into {dst.type.dtype} "
                      f"(MXFP8 takes DT_FP8E4M3FN / DT_FP8E5M2 into DT_FP32; FP4 is not built)")
    for s, want, name in ((sa, (m, k // 32), "scale_a"), (sb, (k // 32, n), "scale_b")):
        if s.type.dtype.name != "e8m0" or tuple(s.type.shape) != want:
            raise t.error(f"{what}: {name} must be a {list(want)} DT_FP8E8M0 tile (one scale "
                          f"per 32 of K), not {s.type.dtype} {list(s.type.shape)}")
    for s, d, name in ((sa, lhs, "scale_a"), (sb, rhs, "scale_b")):
        if isinstance(s.addr, int) and isinstance(d.addr, int) and s.addr != d.addr >> 4:
            raise t.error(f"{what}: {name} tile {s.name} is at {s.addr:#x}, but the "
                          f"instruction reads the scales of {d.name} (at {d.addr:#x}) at "
                          f"{d.addr >> 4:#x} (address >> 4): place it there")


def matmul_mx(dst_tile, lhs_tile, rhs_tile, scale_a, scale_b, *, phase=None):
    """pl.matmul_mx(dst, lhs, rhs, scale_a, scale_b, phase=): dst = dequant(lhs, scale_a) @
    dequant(rhs, scale_b) (M pipe; see the module docstring)."""
    t = current()
    ops = [_tile(t, v, "matmul_mx operand") for v in (dst_tile, lhs_tile, rhs_tile, scale_a,
                                                      scale_b)]
    _mx(t, "pl.matmul_mx", *ops)
    return emit("tmatmul_mx", ops, {"init": 1, "k_valid": ops[1].valid[1],
                                    "valid": [ops[1].valid[0], ops[2].valid[1]]})


def matmul_mx_acc(dst_tile, acc_tile, lhs_tile, rhs_tile, scale_a, scale_b, *, phase=None):
    """pl.matmul_mx_acc(dst, acc, lhs, rhs, scale_a, scale_b, phase=): dst = acc + the MX
    product; dst and acc are one tile (in place)."""
    t = current()
    dst, acc = _tile(t, dst_tile, "matmul_mx_acc dst"), _tile(t, acc_tile, "matmul_mx_acc acc")
    if acc.owner is not dst.owner or acc.addr != dst.addr:
        raise t.error("matmul_mx_acc accumulates in place: dst and acc must be the same tile")
    ops = [dst] + [_tile(t, v, "matmul_mx_acc operand")
                   for v in (lhs_tile, rhs_tile, scale_a, scale_b)]
    _mx(t, "pl.matmul_mx_acc", *ops)
    return emit("tmatmul_mx", ops, {"init": 0, "k_valid": ops[1].valid[1],
                                    "valid": [ops[1].valid[0], ops[2].valid[1]]})


# -- quantization ------------------------------------------------------------------------------

def _rows_param(t, what, p, out, name):
    p = _tile(t, p, f"{what} {name}")
    if p.type.space != "ub" or p.type.dtype.name != "f32" or \
            tuple(p.type.shape) != (out.type.shape[0], 1):
        raise t.error(f"{what}: {name} must be an [{out.type.shape[0]}, 1] DT_FP32 Vec tile "
                      f"(one per row, layout=pl.DN), not {p.type.dtype} {list(p.type.shape)}")
    return p


def quant(out, src, scale, *, mode=None, offset=None):
    """pl.quant(out, src, scale, mode=pl.QuantMode.SYM, offset=None) (V)."""
    from .dsl import QuantMode
    t = current()
    out, src = _tile(t, out, "quant out"), _tile(t, src, "quant src")
    mode = QuantMode.SYM if mode is None else mode
    if not isinstance(mode, QuantMode):
        raise t.error(f"pl.quant mode= must be pl.QuantMode.SYM or ASYM, not {mode!r}")
    want = "i8" if mode is QuantMode.SYM else "u8"
    _vector(t, "pl.quant", [out, src], same_dtype=False)
    if src.type.dtype.name != "f32" or out.type.dtype.name != want:
        raise t.error(f"pl.quant {mode.name} takes a DT_FP32 src into a "
                      f"{'DT_INT8' if want == 'i8' else 'DT_UINT8'} out, not "
                      f"{src.type.dtype} -> {out.type.dtype}")
    ops = [out, src, _rows_param(t, "pl.quant", scale, out, "scale")]
    if mode is QuantMode.ASYM:
        if offset is None:
            raise t.error("pl.quant mode=pl.QuantMode.ASYM needs offset=")
        ops.append(_rows_param(t, "pl.quant", offset, out, "offset"))
    return emit("tquant", ops, {"mode": mode.name.lower(), "valid": list(out.valid)})


def dequant(out, src, scale, offset):
    """pl.dequant(out, src, scale, offset): fp32 out = (src - offset) * scale (V)."""
    t = current()
    out, src = _tile(t, out, "dequant out"), _tile(t, src, "dequant src")
    _vector(t, "pl.dequant", [out, src], same_dtype=False)
    if out.type.dtype.name != "f32" or src.type.dtype.name not in ("i8", "i16"):
        raise t.error(f"pl.dequant takes a DT_INT8 / DT_INT16 src into a DT_FP32 out, not "
                      f"{src.type.dtype} -> {out.type.dtype}")
    return emit("tdequant", [out, src, _rows_param(t, "pl.dequant", scale, out, "scale"),
                             _rows_param(t, "pl.dequant", offset, out, "offset")],
                {"valid": list(out.valid)})


# -- gather / scatter / sort / histogram -------------------------------------------------------

def _vec(t, what, *pairs):
    tiles = [_tile(t, v, f"{what} {n}") for v, n in pairs]
    for x in tiles:
        if x.type.space != "ub":
            raise t.error(f"{what} is a vector op: tile {x.name} is in "
                          f"{SPACE_NAME[x.type.space]}, not Vec")
    no_fp8(t, what, tiles)
    return tiles


def _int_dtype(t, what, x, names) -> None:
    if x.type.dtype.name not in names:
        raise t.error(f"{what}: tile {x.name} must be {' or '.join(names)}, not "
                      f"{x.type.dtype}")


def gather(out, src, idx, tmp, *, cmp_mode=0, offset=0):
    """pl.gather(out, src, idx, tmp, cmp_mode=0, offset=0): out_flat[i] =
    src_flat[idx[i] + offset] (V)."""
    t = current()
    out, src, idx, tmp = _vec(t, "pl.gather", (out, "out"), (src, "src"), (idx, "idx"),
                              (tmp, "tmp"))
    if out.type.dtype != src.type.dtype:
        raise t.error(f"pl.gather of {src.type.dtype} into {out.type.dtype}")
    _int_dtype(t, "pl.gather idx", idx, ("i16", "u16", "i32", "u32"))
    if idx.type.shape != out.type.shape or tmp.type.shape != idx.type.shape or \
            tmp.type.dtype != idx.type.dtype:
        raise t.error("pl.gather: idx has out's shape, tmp idx's shape and dtype")
    if cmp_mode != 0 or not isinstance(offset, int) or isinstance(offset, bool):
        raise t.error(f"pl.gather: cmp_mode must be 0 (compare modes are not built) and "
                      f"offset an int, not {cmp_mode!r} / {offset!r}")
    return emit("tvgather", [out, src, idx, tmp], {"offset": offset, "valid": list(out.valid)})


SCATTER_IDX = {1: ("i16", "u16"), 2: ("i16", "u16"), 4: ("i32", "u32"), 8: ("i32", "u32")}


def scatter(out, src, idx):
    """pl.scatter(out, src, idx): out_flat[idx[i, j]] = src[i, j] (V)."""
    t = current()
    out, src, idx = _vec(t, "pl.scatter", (out, "out"), (src, "src"), (idx, "idx"))
    if out.type.dtype != src.type.dtype or src.type.dtype == BOOL:
        raise t.error(f"pl.scatter of {src.type.dtype} into {out.type.dtype}")
    _int_dtype(t, "pl.scatter idx", idx, SCATTER_IDX[src.type.dtype.itemsize])
    if idx.type.shape != src.type.shape:
        raise t.error("pl.scatter: idx has src's shape")
    return emit("tvscatter", [out, src, idx], {"valid": list(src.valid)})


def sort32(dst, src, idx, tmp=None):
    """pl.sort32(dst, src, idx, tmp=None): 32-element groups sorted descending into
    (value, index) records (V)."""
    t = current()
    pairs = [(dst, "dst"), (src, "src"), (idx, "idx")] + ([(tmp, "tmp")] if tmp else [])
    tiles = _vec(t, "pl.sort32", *pairs)
    dst, src, idx = tiles[:3]
    dt = src.type.dtype.name
    if dt not in ("f32", "f16") or dst.type.dtype != src.type.dtype:
        raise t.error(f"pl.sort32 sorts DT_FP32 / DT_FP16 into the same dtype, not {dt} -> "
                      f"{dst.type.dtype}")
    _int_dtype(t, "pl.sort32 idx", idx, ("u32",))
    (r, c), w = src.type.shape, (2 if dt == "f32" else 4)
    if tuple(dst.type.shape) != (r, c * w) or idx.type.shape[1] != c or \
            idx.type.shape[0] not in (1, r):
        raise t.error(f"pl.sort32: a {[r, c]} src writes a {[r, c * w]} dst (8-byte records) "
                      f"with a [1 or {r}, {c}] idx")
    vc = src.valid[1]
    if tmp is None and (not isinstance(vc, int) or vc % 32):
        raise t.error("pl.sort32: src's valid columns are not a multiple of 32: pass tmp "
                      "for the last group")
    return emit("tsort32", tiles, {"valid": list(src.valid)})


def mrgsort(dst, src, *, block_len):
    """pl.mrgsort(dst, src, block_len=): merge each 4 sorted runs of block_len storage
    elements (V)."""
    t = current()
    dst, src = _vec(t, "pl.mrgsort", (dst, "dst"), (src, "src"))
    dt = src.type.dtype.name
    w = {"f32": 2, "f16": 4}.get(dt)
    if w is None or dst.type.dtype != src.type.dtype or dst.type.shape != src.type.shape or \
            src.type.shape[0] != 1:
        raise t.error("pl.mrgsort merges a [1, N] DT_FP32 / DT_FP16 record tile into one of "
                      "its shape and dtype")
    n = src.type.shape[1]
    if not isinstance(block_len, int) or block_len <= 0 or block_len % w or n % block_len:
        raise t.error(f"pl.mrgsort block_len={block_len!r}: a whole number of {w}-element "
                      f"records dividing {n}")
    return emit("tmrgsort", [dst, src], {"block_len": block_len, "valid": [1, n]})


def histogram(dst, src, idx, *, is_msb):
    """pl.histogram(dst, src, idx, is_msb=): cumulative byte counts per row (V)."""
    t = current()
    dst, src, idx = _vec(t, "pl.histogram", (dst, "dst"), (src, "src"), (idx, "idx"))
    r = src.type.shape[0]
    if src.type.dtype.name != "u16" or dst.type.dtype.name != "u32" or \
            idx.type.dtype.name != "u8":
        raise t.error("pl.histogram takes a DT_UINT16 src, a DT_UINT32 dst and a DT_UINT8 "
                      "idx (DT_UINT32 sources are not built)")
    if dst.type.shape[0] != r or dst.type.shape[1] < 256 or tuple(idx.type.shape) != (r, 1):
        raise t.error(f"pl.histogram: dst is [{r}, >= 256], idx [{r}, 1] (layout=pl.DN)")
    if not isinstance(is_msb, bool):
        raise t.error(f"pl.histogram is_msb= must be True or False, not {is_msb!r}")
    return emit("thistogram", [dst, src, idx], {"msb": is_msb, "valid": list(src.valid)})


def fillpad(out, src, *, mode=None):
    """pl.fillpad(out, src, mode=pl.FillPadMode.NORMAL): out = src inside src's valid region
    and out's pad value (its TileType's pad=) everywhere else of out (V)."""
    from .dsl import FillPadMode, TilePad
    t = current()
    out, src = _vec(t, "pl.fillpad", (out, "out"), (src, "src"))
    mode = FillPadMode.NORMAL if mode is None else mode
    if not isinstance(mode, FillPadMode):
        raise t.error(f"pl.fillpad mode= must be a pl.FillPadMode, not {mode!r}")
    pad = out.type.pad
    if not isinstance(pad, TilePad) or pad is TilePad.null:
        raise t.error(f"pl.fillpad: out tile {out.name} needs a pad= (pl.TilePad.zero, max or "
                      f"min) in its TileType, not {pad!r}")
    if out.type.dtype != src.type.dtype or out.type.dtype.itemsize == 8:
        raise t.error(f"pl.fillpad of {src.type.dtype} into {out.type.dtype} (one b8 / b16 / "
                      f"b32 dtype)")
    same = out.owner is src.owner and out.addr == src.addr
    s, o = src.type.shape, out.type.shape
    ok = {FillPadMode.NORMAL: s == o and not same, FillPadMode.INPLACE: s == o and same,
          FillPadMode.EXPAND: all(a <= b for a, b in zip(s, o)) and not same}[mode]
    if not ok:
        raise t.error(f"pl.fillpad mode={mode.name}: NORMAL takes two tiles of one shape, "
                      f"INPLACE one tile, EXPAND a source no larger than out")
    return emit("tfillpad", [out, src], {"pad": pad.value, "valid": list(src.valid)})


def _arg(kind):
    def op(out, src, tmp, *, dim=0):
        t = current()
        out, src, tmp = _vec(t, f"pl.{kind}", (out, "out"), (src, "src"), (tmp, "tmp"))
        R, C = src.type.shape
        want = [R, 1] if dim == 0 else [1, C]
        if dim not in (0, 1) or list(out.type.shape) != want:
            raise t.error(f"pl.{kind} dim={dim!r} of a {[R, C]} tile writes a {want} tile")
        if dim == 0 and out.type.layout != TileLayout.DN:
            raise t.error(f"pl.{kind} dim=0 writes an [R, 1] tile with layout=pl.DN")
        _int_dtype(t, f"pl.{kind} out", out, ("i32", "u32"))
        if tmp.type.shape != src.type.shape or tmp.type.dtype != src.type.dtype:
            raise t.error(f"pl.{kind} tmp must have src's shape and dtype")
        return emit("t" + kind, [out, src], {"dim": dim, "valid": list(src.valid)})
    op.__name__ = kind
    op.__doc__ = f"pl.{kind}(out, src, tmp, dim=0): index of each row's (dim=0) {kind[3:]}."
    return op


argmax, argmin = _arg("argmax"), _arg("argmin")


def _fused(kind: str, n: int):
    def op(out, *args, target_type=None, mode=None):
        t = current()
        want = {"axpy": 2, "xor": 3}.get(kind, n)
        if len(args) != want:
            raise t.error(f"pl.{kind} takes {want} operands after out, not {len(args)}")
        srcs = args[:n]
        if kind == "xor":
            _vec(t, "pl.xor", (args[2], "tmp"))     # the hardware's workspace (unused)
        tiles = _vec(t, f"pl.{kind}", (out, "out"), *((s, "src") for s in srcs))
        cast = kind.endswith("cast")
        _vector(t, f"pl.{kind}", tiles[1:])
        _vector(t, f"pl.{kind}", tiles, same_dtype=not cast)
        if cast and target_type is not None and target_type != tiles[0].type.dtype:
            raise t.error(f"pl.{kind} target_type={target_type!r} must be out's dtype "
                          f"({tiles[0].type.dtype})")
        if kind in ("shl", "shr", "xor") and tiles[0].type.dtype.kind != "int":
            raise t.error(f"pl.{kind} takes integer tiles, not {tiles[0].type.dtype}")
        attrs = {"valid": list(tiles[0].valid)}
        if kind == "axpy":
            if isinstance(args[1], Tile):
                raise t.error("pl.axpy(out, src, alpha): alpha is a number or a scalar")
            attrs["alpha"] = _scalar_attr(t, args[1], "pl.axpy")
        return emit("t" + kind, tiles, attrs)
    op.__name__ = kind
    op.__doc__ = f"pl.{kind}: a fused vector form (module docstring)."
    return op


for _k, (_n, _) in FUSED.items():
    globals()[_k] = _fused(_k, _n)

__all__ = ["matmul_mx", "matmul_mx_acc", "quant", "dequant", "gather", "scatter", "sort32",
           "mrgsort", "histogram", "argmax", "argmin", "fillpad", *FUSED]
