"""pypto.conv: 1-D, 2-D and 3-D convolution (NCL / NCHW / NCDHW input, weight [Cout,
Cin / groups, *K]) as a composite of pad, views, reshapes and matmuls, so its lowering,
numpy meaning and C come from those ops.

out[n, co, o] = sum over ci, k of weight[co, ci, k] * xpad[n, g(co) * Cg + ci, o * stride +
k * dilation] (+ bias[co]), xpad the input with paddings [before, after] per spatial dim
(depth, height, width order, as the page), out size (in + before + after - dilation *
(K - 1) - 1) // stride + 1. For each group and kernel offset k, the strided input window is
a view (a stride s becomes a reshape of the window to [..., out, s] and the view of column 0)
reshaped to [N, Cg, out elements], and weight[:, :, k] @ window (fp32 accumulation, a
batched matmul over N) is added to the fp32 sum; the groups are concatenated over channels,
then bias_tensor (extend_params; 'bias' too, as the reference's docstring spells it) and
relu_type (ConvReLuType.RELU: max(x, 0) after the bias) apply, then the cast to out_dtype.

As the page: fp16, bf16, fp32 input and weight of one dtype, out_dtype of the same family,
strides and dilations in [1, 63], paddings in [0, 255] and below the kernel size, groups
dividing Cin and Cout; transposed=True, output_paddings, scale and scale_tensor are errors.
Static shapes. The page's set_conv_tile_shapes is accepted and changes nothing: the
matmuls' cube tiles and the copies' vec tiles are chosen here from the sizes (the reference
needs them for its L1 / L0 buffers). The cost is one matmul per kernel offset and group.
"""
from __future__ import annotations

import contextlib
import enum
import math

from ..ir.types import F32, DType
from .composites import concat, pad
from .mm import matmul
from .ops import _b, _tensor, add, cast, maximum, reshape, view


class ConvReLuType(enum.Enum):
    """conv's fused activation (extend_params relu_type)."""
    NO_RELU = "no_relu"
    RELU = "relu"


_CONV_TILES: dict = {}


def set_conv_tile_shapes(tile_l1_info=None, tile_l0_info=None) -> None:
    """The reference's conv L1 / L0 tiles: recorded; pypto's conv picks its own tiles."""
    _CONV_TILES.update({"l1": tile_l1_info, "l0": tile_l0_info})


def get_conv_tile_shapes():
    return (_CONV_TILES.get("l1"), _CONV_TILES.get("l0")) if _CONV_TILES else None


@contextlib.contextmanager
def _tiles(b, shape):
    """A vec tile for a copy of shape: whole trailing rows (up to 64), one row of the rest."""
    saved = b.vec_tile
    b.vec_tile = [1] * (len(shape) - 2) + [min(shape[-2], 16), min(shape[-1], 64)] \
        if len(shape) > 1 else [min(shape[0], 64)]
    try:
        yield
    finally:
        b.vec_tile = saved


def _cube(v: int) -> list:
    t = min(64, -(-v // 16) * 16)
    return [t, t]


def _check(b, x, w, out_dtype, strides, paddings, dilations, groups, transposed,
           output_paddings, extend):
    nd = x.ndim - 2
    if x.ndim not in (3, 4, 5) or w.ndim != x.ndim:
        raise b.error(f"conv takes a 3-D, 4-D or 5-D input and a weight of its rank, not "
                      f"{x.type} and {w.type}")
    if not all(isinstance(d, int) for d in list(x.type.shape) + list(w.type.shape)):
        raise b.error("conv takes static shapes")
    if x.dtype != w.dtype or x.dtype.name not in ("f16", "bf16", "f32"):
        raise b.error(f"conv: input and weight are fp16, bf16 or fp32 of one dtype, not "
                      f"{x.dtype} and {w.dtype}")
    if not isinstance(out_dtype, DType) or out_dtype.name not in ("f16", "bf16", "f32"):
        raise b.error(f"conv: out_dtype must be DT_FP16, DT_BF16 or DT_FP32, not {out_dtype!r}")
    if transposed or output_paddings:
        raise b.error("conv: transposed convolution is not supported (nor by the reference)")
    for name, v, n, lo, hi in (("strides", strides, nd, 1, 63), ("dilations", dilations, nd,
                                                                     1, 63),
                               ("paddings", paddings, 2 * nd, 0, 255)):
        if not isinstance(v, (list, tuple)) or len(v) != n or \
                not all(isinstance(i, int) and lo <= i <= hi for i in v):
            raise b.error(f"conv: {name} must be {n} ints in [{lo}, {hi}], not {v!r}")
    cin, cout, ks = x.type.shape[1], w.type.shape[0], list(w.type.shape[2:])
    if not isinstance(groups, int) or groups < 1 or cin % groups or cout % groups or \
            w.type.shape[1] * groups != cin:
        raise b.error(f"conv: groups {groups!r} must divide Cin {cin} and Cout {cout}, with "
                      f"weight's Cin {w.type.shape[1]} * groups == {cin}")
    if any(p >= k for p, k in zip(paddings, [k for k in ks for _ in (0, 1)])):
        raise b.error(f"conv: each padding must be below its kernel size {ks}")
    bad = sorted(set(extend) - {"bias_tensor", "bias", "relu_type"})
    if bad:
        raise b.error(f"conv: extend_params {bad} are not supported (bias_tensor, relu_type)")


def _window(b, xp, k: list, strides, dilations, out: list):
    """xp [R, *S] -> [R, prod(out)]: the input positions o * s + k * d of offset k."""
    rows = xp.type.shape[0]
    size = [o * s for o, s in zip(out, strides)]
    with _tiles(b, [rows] + size):
        v = view(xp, [rows] + size, [0] + [kk * d for kk, d in zip(k, dilations)])
        if any(s > 1 for s in strides):
            split = [rows] + [x for o, s in zip(out, strides) for x in (o, s)]
            with _tiles(b, split):
                v = view(reshape(v, split), [rows] + [x for o in out for x in (o, 1)],
                         [0] * len(split))
        return reshape(v, [rows, math.prod(out)])


def conv(input_conv, weight, out_dtype: DType, strides, paddings, dilations, *,
         groups: int = 1, transposed: bool = False, output_paddings=(), extend_params=None):
    """Convolution of input_conv by weight (see the module docstring)."""
    b = _b()
    x, w = _tensor(input_conv, b, "conv"), _tensor(weight, b, "conv")
    extend = dict(extend_params or {})
    _check(b, x, w, out_dtype, strides, paddings, dilations, groups, transposed,
           output_paddings, extend)
    n, cin, cout = x.type.shape[0], x.type.shape[1], w.type.shape[0]
    spatial, ks = list(x.type.shape[2:]), list(w.type.shape[2:])
    out = [(s + paddings[2 * i] + paddings[2 * i + 1] - dilations[i] * (k - 1) - 1)
           // strides[i] + 1 for i, (s, k) in enumerate(zip(spatial, ks))]
    if min(out) < 1:
        raise b.error(f"conv: the output would be empty ({out})")
    # padded, with room for the last window of every stride, as [N * Cin, *S]
    need = [max(p + s + q, (o - 1) * st + (k - 1) * dl + 1 + st - 1)
            for s, p, q, o, st, k, dl in zip(spatial, paddings[::2], paddings[1::2], out,
                                              strides, ks, dilations)]
    flat = [n * cin] + spatial
    with _tiles(b, flat):
        xp = reshape(x, flat)
        pads = []
        for i in range(len(spatial) - 1, -1, -1):
            pads += [paddings[2 * i], need[i] - spatial[i] - paddings[2 * i]]
        if any(pads):
            with _tiles(b, [n * cin] + need):
                xp = pad(xp, pads)
    cg, og, p = cin // groups, cout // groups, math.prod(out)
    saved, b.cube_tile = b.cube_tile, [_cube(og), _cube(cg), _cube(p)]
    try:
        parts = []
        for g in range(groups):
            acc = None
            for k in _offsets(ks):
                win = _window(b, xp, k, strides, dilations, out)
                with _tiles(b, [n, cg, p]):
                    win = reshape(win, [n, cin, p])
                    if groups > 1:
                        win = view(win, [n, cg, p], [0, g * cg, 0])
                with _tiles(b, [og, cg]):
                    wk = reshape(view(w, [og, cg] + [1] * len(ks), [g * og, 0] + k), [og, cg])
                with _tiles(b, [n, og, p]):
                    term = matmul(wk, win, F32)
                    acc = term if acc is None else add(acc, term)
            parts.append(acc)
    finally:
        b.cube_tile = saved
    with _tiles(b, [n, cout, p]):
        y = _epilogue(b, parts[0] if groups == 1 else concat(parts, 1), extend, cout, out_dtype)
        return reshape(y, [n, cout] + out)


def _epilogue(b, y, extend: dict, cout: int, out_dtype):
    """The bias, the ReLU and the cast of the fp32 sums [N, Cout, P]."""
    bias = extend.get("bias_tensor", extend.get("bias"))
    if bias is not None:
        bias = _tensor(bias, b, "conv bias")
        if bias.ndim != 1 or bias.type.shape[0] != cout:
            raise b.error(f"conv: bias_tensor must be [{cout}], not {bias.type}")
        y = add(y, reshape(cast(bias, F32) if bias.dtype != F32 else bias, [1, cout, 1]))
    if extend.get("relu_type") is not None and _relu(b, extend["relu_type"]) is ConvReLuType.RELU:
        y = maximum(y, 0.0)
    return y if out_dtype == F32 else cast(y, out_dtype)


def _relu(b, v):
    from .enums import ReLuType, member
    if isinstance(v, ReLuType):
        return ConvReLuType.RELU if v is ReLuType.RELU else ConvReLuType.NO_RELU
    return member(ConvReLuType, v, "conv relu_type")


def _offsets(ks: list) -> list:
    out = [[]]
    for k in ks:
        out = [o + [i] for o in out for i in range(k)]
    return out
