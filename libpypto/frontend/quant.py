"""Quantisation and the online-softmax building blocks, as composites of the primitives
(their lowering, numpy meaning and C come from the ops they are made of).

quantize(x, scale, otype, axis, zero_points) -- the reference's `pypto.quantize`: fp32 to
int8 (symmetric) or uint8 (asymmetric, with zero_points). scale (and zero_points) have one
dim fewer than x (the `axis` dim left out) or x's rank with that dim 1; they broadcast along
`axis` (-1 or -2, the reference's two). The result is round(x * scale - zero_points), nearest
even, saturated to otype's range. The reference's page writes `+ zero_points` in its formula
but its worked example (1.1 with zero point -5.0 gives 6) subtracts; pypto follows the
example, which also makes dequantize (below, `+ zero_points`) its inverse.

dequantize(x, scale, otype, axis, zero_points) -- int8/int16 to fp32: (x + zero_points) *
scale, the page's formula and example.

experimental.online_softmax(scores, scale) -> (exp bf16, column max [1, q], column sum
[1, q]) and experimental.online_softmax_update(previous max, sum, output, current max, sum,
output) -> (max, sum, output): one block of a column-wise online softmax (scores is
[k_len, q_len]; statistics per column) and the merge of two blocks' states, as the
reference's experimental pages define them. The sum is of the fp32 exponentials; the bf16
copy is the cast of the same values.
"""
from __future__ import annotations

from ..ir.types import BF16, F32, DType
from .enums import CastMode, SaturationMode
from .mm import matmul
from .paged import gather_in_l1, gather_in_ub
from .ops import _b, _tensor, add, amax, cast, exp, maximum, mul, permute, reshape, sub, sum


def _along(b, x, t, axis: int, what: str):
    """t (a scale or zero point) shaped to broadcast against x along axis."""
    t = _tensor(t, b, what)
    ax = axis % x.ndim if -x.ndim <= axis < x.ndim else None
    if ax is None or ax < x.ndim - 2:
        raise b.error(f"{what}: axis {axis} must be one of the last two dims (-1 or -2)")
    if t.ndim == x.ndim:
        return t
    if t.ndim != x.ndim - 1:
        raise b.error(f"{what} has rank {t.ndim}; it needs rank {x.ndim - 1} (x's dims "
                      f"without axis {axis}) or {x.ndim}")
    shape = list(t.type.shape)
    shape.insert(ax, 1)
    return reshape(t, shape)


def quantize(input, scale, otype: DType, axis: int = -1, zero_points=None):  # noqa: A002
    """fp32 -> int8 round(x * scale) or uint8 round(x * scale - zero_points), saturated."""
    b = _b()
    x = _tensor(input, b, "quantize")
    if x.dtype != F32:
        raise b.error(f"quantize takes fp32 input, not {x.dtype}")
    if otype.name not in ("i8", "u8"):
        raise b.error(f"quantize: otype must be DT_INT8 or DT_UINT8, not {otype!r}")
    y = mul(x, _along(b, x, scale, axis, "quantize scale"))
    if zero_points is not None:
        y = sub(y, _along(b, x, zero_points, axis, "quantize zero_points"))
    return cast(y, otype, CastMode.CAST_RINT, SaturationMode.ON)


def dequantize(input, scale, otype: DType = F32, axis: int = -1,  # noqa: A002
               zero_points=None):
    """int8/int16 -> fp32 (x + zero_points) * scale."""
    b = _b()
    x = _tensor(input, b, "dequantize")
    if x.dtype.name not in ("i8", "i16"):
        raise b.error(f"dequantize takes int8 or int16 input, not {x.dtype}")
    if otype != F32:
        raise b.error(f"dequantize: otype must be DT_FP32, not {otype!r}")
    y = cast(x, F32)
    if zero_points is not None:
        y = add(y, _along(b, x, zero_points, axis, "dequantize zero_points"))
    return mul(y, _along(b, x, scale, axis, "dequantize scale"))


def online_softmax(scores, scale: float):
    """One block: (exp(scores * scale - column max) in bf16, column max, column sum)."""
    b = _b()
    s = _tensor(scores, b, "online_softmax")
    if s.dtype != F32 or s.ndim != 2:
        raise b.error(f"online_softmax takes 2-D fp32 scores [k_len, q_len], not {s.type}")
    s = mul(s, float(scale))
    m = amax(s, 0, keepdim=True)
    e = exp(sub(s, m))
    return cast(e, BF16), m, sum(e, 0, keepdim=True)


def online_softmax_update(previous_max, previous_sum, previous_output, current_max,
                          current_sum, current_output):
    """Merge two blocks' (max, sum, unnormalised output) column states."""
    m = maximum(previous_max, current_max)
    a = exp(sub(previous_max, m))
    c = exp(sub(current_max, m))
    return (m, add(mul(previous_sum, a), mul(current_sum, c)),
            add(mul(previous_output, a), mul(current_output, c)))


def transposed_batchmatmul(tensor_a, tensor_b, out_dtype: DType):
    """(M, B, K) x (B, K, N) -> (M, B, N): a permuted to (B, M, K), a batched matmul with
    fp32 accumulation, the result permuted back (the reference's experimental op; its fp16
    and bf16 operands and outputs, fp32 here too)."""
    b = _b()
    a, w = _tensor(tensor_a, b, "transposed_batchmatmul"), _tensor(tensor_b, b,
                                                                   "transposed_batchmatmul")
    if a.ndim != 3 or w.ndim != 3:
        raise b.error(f"transposed_batchmatmul takes a (M, B, K) and b (B, K, N), not "
                      f"{a.type} and {w.type}")
    return permute(matmul(permute(a, [1, 0, 2]), w, out_dtype), [1, 0, 2])


def set_operation_options(**kv) -> None:
    """The reference's experimental per-op options (combine_axis, ...): a warning naming
    each (they tune its device lowering)."""
    from .config import check_options
    check_options("experimental.set_operation_options", {"operation_options": kv})
    _OPERATION_OPTIONS.update(kv)


def get_operation_options() -> dict:
    return dict(_OPERATION_OPTIONS)


_OPERATION_OPTIONS: dict = {}


class _Experimental:
    """`pypto.experimental`: the reference's experimental namespace, as far as it exists."""

    gather_in_l1 = staticmethod(gather_in_l1)
    gather_in_ub = staticmethod(gather_in_ub)
    online_softmax = staticmethod(online_softmax)
    online_softmax_update = staticmethod(online_softmax_update)
    transposed_batchmatmul = staticmethod(transposed_batchmatmul)
    set_operation_options = staticmethod(set_operation_options)
    get_operation_options = staticmethod(get_operation_options)

    def __getattr__(self, name: str):
        raise AttributeError(f"pypto.experimental has no {name!r} (pypto has: gather_in_l1, "
                             f"gather_in_ub, online_softmax, online_softmax_update, "
                             f"transposed_batchmatmul, set_operation_options, "
                             f"get_operation_options)")


experimental = _Experimental()
