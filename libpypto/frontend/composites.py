"""Composite ops written in terms of the primitives (softmax, rms_norm, gelu, var, concat,
one_hot, ...): their lowering and their numpy meaning come for free, and `pypto-trace -S`
shows what they are made of.
"""
from __future__ import annotations

import math

from ..ir import expr as E
from ..ir.types import F32, I64, DType
from .ops import (_b, _dims, _ew, _tensor, add, amax, arange, assemble, cast, div, eq, erf, exp,
                  floor_div, full, lt, maximum, minimum, mul, neg, permute, reshape, rint, rsqrt,
                  sigmoid, sub, sum, tanh, tensor, where)
from .tensor import SymScalar


def clip(x, min=None, max=None):  # noqa: A002 -- the reference API's names
    """Clamp into [min, max]; bounds are scalars or tensors."""
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def ceil_div(a, b):
    return neg(floor_div(neg(a), b))


def round(x, decimals: int = 0):  # noqa: A001
    """Round half to even at `decimals` places, as numpy.round."""
    if decimals == 0:
        return rint(x)
    scale = 10.0 ** decimals
    return div(rint(mul(x, scale)), scale)


def lrelu(x, negative_slope: float = 0.01):
    return where(lt(x, 0), mul(x, negative_slope), x)


def prelu(x, weight):
    """Per-channel slope along dim 1 (the last dim of a 2-D input)."""
    if x.ndim > 2:
        weight = reshape(weight, [weight.shape[0]] + [1] * (x.ndim - 2))
    return where(lt(x, 0), mul(x, weight), x)


def silu(x):
    return mul(x, sigmoid(x))


def gelu(x, approximate: str = "none"):
    """GELU: 0.5 x (1 + erf(x / sqrt 2)), or the tanh form with approximate='tanh'."""
    if approximate == "tanh":
        inner = mul(add(x, mul(mul(mul(x, x), x), 0.044715)), math.sqrt(2.0 / math.pi))
        return mul(mul(x, 0.5), add(tanh(inner), 1.0))
    if approximate != "none":
        raise _b().error(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
    return mul(mul(x, 0.5), add(erf(mul(x, 1.0 / math.sqrt(2.0))), 1.0))


def softmax(x, dim: int = -1):
    m = amax(x, dim, keepdim=True)
    e = exp(sub(x, m))
    return div(e, sum(e, dim, keepdim=True))


def expand_exp_dif(a, b):
    return exp(sub(a, b))


def rms_norm(x, gamma=None, eps: float = 1e-6):
    """x / sqrt(mean(x^2, last dim) + eps) * gamma."""
    y = mul(x, rsqrt(add(mean(mul(x, x), -1, keepdim=True), eps)))
    return y if gamma is None else mul(y, gamma)


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dim (biased variance)."""
    m = mean(x, -1, keepdim=True)
    c = sub(x, m)
    y = mul(c, rsqrt(add(mean(mul(c, c), -1, keepdim=True), eps)))
    if gamma is not None:
        y = mul(y, gamma)
    if beta is not None:
        y = add(y, beta)
    return y


def _count(x, dims) -> E.Ex:
    n = 1
    for d in dims:
        n = E.mul(n, x.dim(d))
    return n


def mean(x, dim=None, keepdim: bool = False):
    b = _b()
    dims = _dims(b, x, dim, "mean")
    n = _count(x, dims)
    s = sum(x, dims, keepdim)
    return div(s, n if isinstance(n, int) else SymScalar(n))


def var(x, dim=None, correction: int = 1, keepdim: bool = False):
    b = _b()
    dims = _dims(b, x, dim, "var")
    c = sub(x, mean(x, dims, keepdim=True))
    n = E.sub(_count(x, dims), correction)
    s = sum(mul(c, c), dims, keepdim)
    return div(s, n if isinstance(n, int) else SymScalar(n))


def unsqueeze(t, dim: int):
    shape = list(t.type.shape)
    dim = dim % (len(shape) + 1)
    return reshape(t, shape[:dim] + [1] + shape[dim:])


def transpose(t, dim0, dim1=None):
    """Swap two dims (or, given a list, permute)."""
    if dim1 is None:
        return permute(t, list(dim0))
    perm = list(range(t.ndim))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return permute(t, perm)


def clone(t):
    return _ew("copy", t)


def concat(tensors, dim: int = 0):
    """Concatenate along dim (assembled into a local tensor)."""
    b = _b()
    ts = [_tensor(t, b, "concat") for t in tensors]
    if not ts:
        raise b.error("concat of nothing")
    d = _dims(b, ts[0], dim, "concat")[0]
    shape = list(ts[0].type.shape)
    total = 0
    for t in ts:
        if t.ndim != len(shape):
            raise b.error("concat: ranks differ")
        for i in range(len(shape)):
            if i != d:
                b.same(shape[i], t.type.shape[i], f"concat: dim {i} differs")
        total = E.add(total, t.dim(d))
    shape[d] = total
    out = tensor(shape, ts[0].dtype)
    off = 0
    for t in ts:
        assemble(t, [off if i == d else 0 for i in range(len(shape))], out)
        off = E.add(off, t.dim(d))
    return out


def pad(x, padding, mode: str = "constant", value: float = 0.0):
    """torch.nn.functional.pad, constant mode: padding = (last_lo, last_hi, prev_lo, prev_hi,
    ...)."""
    b = _b()
    pad = padding
    if mode != "constant":
        raise b.error(f"pad: only mode='constant' is supported, not {mode!r}")
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise b.error("pad: give (lo, hi) pairs for at most every dim, last dim first")
    shape, offs = list(x.type.shape), [0] * x.ndim
    for j in range(len(pad) // 2):
        d = x.ndim - 1 - j
        lo, hi = int(pad[2 * j]), int(pad[2 * j + 1])
        shape[d] = E.add(E.add(shape[d], lo), hi)
        offs[d] = lo
    out = tensor(shape, x.dtype)
    assemble(full(shape, value, x.dtype, strict=False), [0] * x.ndim, out)
    assemble(x, offs, out)
    return out


def one_hot(x, num_classes: int):
    """int64 one-hot encoding along a new last dim."""
    xi = unsqueeze(cast(x, I64, strict=False) if x.dtype != I64 else x, -1)
    classes = arange(num_classes, dtype=I64)
    return cast(eq(xi, classes), I64, strict=False)


def zeros(size, dtype: DType = F32):
    return full(size, 0, dtype)


def ones(size, dtype: DType = F32):
    return full(size, 1, dtype)
