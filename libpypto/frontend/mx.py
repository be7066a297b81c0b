"""The MX (microscaling) ops of the reference: quant_mx and scaled_mm, as composites of the
primitives (cast, amax, bitcast, integer ops, matmul), so their lowering, numpy meaning and
C come from the ops they are made of.

quant_mx(input, quant_dtype=DT_FP8E4M3, mode=ROUND_DOWN, axis=-1, performance_mode=True)
-> (quantized, scale): fp16 / bf16 / fp32 input, groups of 32 consecutive elements along
axis (-1 or -2) share one E8M0 exponent e (scale 2**(e - 127)); the page's scale shapes:
[*shape[:-1], n / 64, 2] for axis -1 (the last dim holds two groups' exponents of each
64-element block), [*shape[:-2], m / 64, shape[-1], 2] for axis -2. Per group, with amax the
largest |x| in fp32 and E its fp32 biased exponent field:
- ROUND_DOWN (OCP MX 1.0): e = clip(E - 8, 0, 254) (8 = e4m3's largest power of two; an
  infinite amax takes this path, a NaN one gives e = 255);
- ROUND_UP (NV): the smallest e with amax <= 448 * 2**(e - 127), clipped to [0, 254]: E - 8,
  plus one when amax's significand is past 1.75 (448 = 1.75 * 2**8); inf gives 254, NaN 255;
- quantized = the saturating round-to-nearest-even e4m3 of x * 2**(127 - e) (in fp32).
This is the reference's definition as its tests compute it (framework/tests/st golden: the
OCP floor exponent, the NV ceil(log2(amax / max)), the e4m3 encoding with saturation).
Choices and limits: the quantised axis is static and a multiple of 64 (the reference needs
it too: 64-element blocks, its views 256-byte aligned); DT_FP4_E2M1X2 is not built (pypto
has no fp4); performance_mode changes nothing (the reference: a layout of its device code).

scaled_mm(mat_a, mat_b, out_dtype, scale_a, scale_b, *, a_trans, b_trans, scale_a_trans,
scale_b_trans, c_matrix_nz, extend_params) -> (mat_a * scale_a) @ (mat_b * scale_b): fp8
(e4m3 or e5m2, mixed) operands, E8M0 scales per 32 elements of K, the page's scale shapes
(scale_a [M, ceil(K/64), 2], transposed [ceil(K/64), M, 2]; scale_b [ceil(K/64), N, 2],
transposed [N, ceil(K/64), 2]). Each operand is dequantised exactly into bf16 (an fp8
value times a power of two has at most 4 significant bits, and bf16 has fp32's exponent
range; only a product in bf16's subnormal range, below 2**-126, rounds), then a bf16 matmul
with fp32 accumulation, an optional bias_tensor, the cast to out_dtype (fp16, bf16, fp32).
2-D operands; K a multiple of 32; relu_type, scale and scale_tensor (the reference's
fixpipe quantisation) are errors, c_matrix_nz warns (pypto writes ND).
"""
from __future__ import annotations

import contextlib
import enum

from ..ir.types import BF16, DTYPES, F32, I32, DType
from .composites import clip
from .enums import CastMode, SaturationMode, member
from .mm import matmul
from .ops import (_b, _tensor, _tile, abs_, amax, bitwise_and, bitwise_right_shift, cast,
                  expand_clone, gt, isnan, mul, permute, reshape, sub, view, where)
from .shuffle import _bitcast
from .tensor import unsupported

U8, E8M0 = DTYPES["u8"], DTYPES["e8m0"]


class DequantScaleRoundingMode(enum.Enum):
    """quant_mx's shared-exponent rounding: ROUND_DOWN the OCP MX floor, ROUND_UP the NV
    ceiling (frontend/mx.py)."""
    ROUND_DOWN = "down"
    ROUND_UP = "up"


ROUND_DOWN, ROUND_UP = DequantScaleRoundingMode.ROUND_DOWN, DequantScaleRoundingMode.ROUND_UP


@contextlib.contextmanager
def _tiles(b, tile):
    saved, b.vec_tile = b.vec_tile, list(tile)
    try:
        yield
    finally:
        b.vec_tile = saved


def _exponents(amax_, up: bool):
    """The E8M0 exponent (int32, 0..255) of each group's fp32 amax (see the docstring)."""
    bits = _bitcast(_b(), amax_, I32, "quant_mx")
    biased = bitwise_and(bitwise_right_shift(bits, 23), 255)
    e = sub(biased, 8)
    if up:
        e = e + cast(gt(bitwise_and(bits, 0x7FFFFF), 0x600000), I32)
    e = clip(e, 0, 254)
    if up:                                  # an infinite amax: 254 (its exponent path: 247)
        e = where(biased == 255, 254, e)
    return where(isnan(amax_), 255, e)


def _reciprocal(e):
    """2**(127 - e) as fp32 bits: (254 - e) << 23, 2**-127 (subnormal) for 254, NaN for 255."""
    bits = where(e == 255, 0x7FC00000, where(e == 254, 0x400000, (254 - e) * (1 << 23)))
    return _bitcast(_b(), bits, F32, "quant_mx")


def quant_mx(input, quant_dtype: DType = None, mode=ROUND_DOWN, axis: int = -1,  # noqa: A002
             performance_mode: bool = True):
    """(quantized e4m3, E8M0 scale) of input: groups of 32 along axis share an exponent."""
    b = _b()
    x = _tensor(input, b, "quant_mx")
    quant_dtype = DTYPES["f8e4m3"] if quant_dtype is None else quant_dtype
    up = member(DequantScaleRoundingMode, mode, "quant_mx mode") is ROUND_UP
    if not isinstance(performance_mode, bool):
        raise b.error(f"quant_mx: performance_mode is True or False, not {performance_mode!r}")
    if x.dtype.name not in ("f16", "bf16", "f32") or not 1 <= x.ndim <= 4:
        raise b.error(f"quant_mx takes a 1-D to 4-D fp16, bf16 or fp32 tensor, not {x.type}")
    if quant_dtype.name != "f8e4m3":
        raise b.error(f"quant_mx: quant_dtype {quant_dtype!r} is not supported (DT_FP8E4M3; "
                      f"pypto has no fp4)")
    ax = axis % x.ndim if -x.ndim <= axis < x.ndim else None
    if ax is None or ax < x.ndim - 2 or (ax == x.ndim - 2 and x.ndim < 2):
        raise b.error(f"quant_mx: axis {axis} must be the last or second-last dim")
    n = x.type.shape[ax]
    if not isinstance(n, int) or n % 64:
        raise b.error(f"quant_mx: the quantised dim ({n}) must be static and a multiple of 64 "
                      f"(64-element scale blocks)")
    tile = _tile(b, x.ndim, x.dtype, x.type.shape, "quant_mx")
    xf = x if x.dtype == F32 else cast(x, F32)
    lead, last = list(x.type.shape[:ax]), ax == x.ndim - 1
    groups = lead + ([n // 32, 32] if last else [n // 32, 32, x.type.shape[-1]])
    gtile = tile[:ax] + [max(1, tile[ax] // 32), 32] + ([] if last else [tile[-1]])
    with _tiles(b, gtile):
        xg = reshape(xf, groups)
        a = amax(abs_(xg), ax + 1, keepdim=True)
        with _tiles(b, gtile[:ax + 1] + [1] + gtile[ax + 2:]):
            e = _exponents(a, up)
            r = _reciprocal(e)
            s = _bitcast(b, cast(e, U8), E8M0, "quant_mx")
        q = cast(mul(xg, r), quant_dtype, CastMode.CAST_RINT, SaturationMode.ON)
        q = reshape(q, list(x.type.shape))
    if last:
        return q, reshape(s, lead + [n // 64, 2])
    c = x.type.shape[-1]
    with _tiles(b, tile[:ax] + [1, 2, tile[-1]]):
        s = reshape(s, lead + [n // 64, 2, c])
        return q, permute(s, list(range(ax + 1)) + [ax + 2, ax + 1])


def _scales(b, s, rows: int, k: int, trans: bool, k_first: bool, tile_rows: int):
    """An E8M0 scale tensor as the bf16 [rows, K] (k_first: [K, rows]) factor of an operand:
    s is [rows, K/64, 2] (k_first: [K/64, rows, 2]), or that with its first two dims swapped
    when trans."""
    s = _tensor(s, b, "scaled_mm scale")
    kb = -(-k // 64)
    want = [kb, rows, 2] if trans != k_first else [rows, kb, 2]
    if s.dtype != E8M0 or list(s.type.shape) != want:
        raise b.error(f"scaled_mm: a scale must be a DT_FP8E8M0 tensor of shape {want}, not "
                      f"{s.type}")
    g = k // 32
    with _tiles(b, [1, 1, 2]):
        if trans != k_first:
            s = permute(s, [1, 0, 2])                 # [rows, K/64, 2]
    with _tiles(b, [tile_rows, kb, 2]):
        s = cast(s, F32)
    with _tiles(b, [tile_rows, 2 * kb]):
        f = view(reshape(s, [rows, 2 * kb]), [rows, g], [0, 0])
    with _tiles(b, [tile_rows, g, 32]):
        f = reshape(expand_clone(reshape(f, [rows, g, 1]), [rows, g, 32]), [rows, k])
    if k_first:
        with _tiles(b, [32, tile_rows]):
            f = permute(f, [1, 0])
    return f


def _dequant(b, m, f, trans_to, tile):
    """fp8 operand m (in the layout the matmul needs: permuted when trans_to) times its
    bf16 factor f, exactly, in bf16."""
    with _tiles(b, tile):
        if trans_to:
            m = permute(m, [1, 0])
        return cast(mul(cast(m, F32), f), BF16)


def scaled_mm(mat_a, mat_b, out_dtype: DType, scale_a, scale_b, *, a_trans: bool = False,
              b_trans: bool = False, scale_a_trans: bool = False, scale_b_trans: bool = False,
              c_matrix_nz: bool = False, extend_params: dict | None = None):
    """(mat_a * scale_a) @ (mat_b * scale_b) with MX (per-32-of-K, E8M0) scales."""
    b = _b()
    a, w = _tensor(mat_a, b, "scaled_mm"), _tensor(mat_b, b, "scaled_mm")
    for t in (a, w):
        if t.dtype.name not in ("f8e4m3", "f8e5m2") or t.ndim != 2:
            raise b.error(f"scaled_mm takes 2-D DT_FP8E4M3 / DT_FP8E5M2 matrices, not {t.type}")
    if not isinstance(out_dtype, DType) or out_dtype.name not in ("f16", "bf16", "f32"):
        raise b.error(f"scaled_mm: out_dtype must be DT_FP16, DT_BF16 or DT_FP32, not "
                      f"{out_dtype!r} (the reference's int8 output quantises in its fixpipe)")
    extend = dict(extend_params or {})
    bad = sorted(set(extend) - {"bias_tensor"})
    if bad:
        raise b.error(f"scaled_mm: extend_params {bad} are not supported (supported: "
                      f"bias_tensor)")
    if c_matrix_nz:
        unsupported("scaled_mm(c_matrix_nz=True)", "pypto writes the result ND (row-major)")
    (m, k), (k2, n) = (a.type.shape[::-1] if a_trans else a.type.shape), \
        (w.type.shape[::-1] if b_trans else w.type.shape)
    if not all(isinstance(d, int) for d in (m, k, k2, n)) or k != k2 or k % 32:
        raise b.error(f"scaled_mm: static [M, K] @ [K, N] with K a multiple of 32, not "
                      f"{a.type}{'^T' if a_trans else ''} @ {w.type}{'^T' if b_trans else ''}")
    if b.cube_tile is None:
        raise b.error("scaled_mm needs cube tile shapes: call pypto.set_cube_tile_shapes(m, k, "
                      "n) before it")
    (_, ml1), (_, kl1), (_, nl1) = b.cube_tile
    tk = min(k, -(-kl1 // 32) * 32)
    fa = _scales(b, scale_a, m, k, scale_a_trans, False, min(m, ml1))
    fb = _scales(b, scale_b, n, k, scale_b_trans, True, min(n, nl1))
    da = _dequant(b, a, fa, a_trans, [min(m, ml1), tk])
    db = _dequant(b, w, fb, b_trans, [tk, min(n, -(-nl1 // 16) * 16)])
    tn = min(n, -(-nl1 // 16) * 16)
    with _tiles(b, b.vec_tile or [min(m, ml1), tn]):      # the bias add and the cast
        return matmul(da, db, out_dtype, extend_params=extend or None)
