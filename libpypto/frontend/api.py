"""The rest of the reference's Tensor-mode surface that is not an op of its own: scalar
min/max, ceildiv, bytes_of, set_matrix_size, get_cube_tile_shapes, and the precision_type=
keyword of div, fmod, remainder, pow, exp, sqrt, rsqrt, log, log2, log10, reciprocal.

precision_type: pypto computes these in fp32 with libm-grade functions, which is what the
reference's HIGH_PRECISION asks for; INTRINSIC (the chip's faster approximation) is accepted
and gives the same, more precise, numbers (docs/parity.md).
"""
from __future__ import annotations

import builtins

from ..ir import expr as E
from ..ir.types import DType
from . import composites, ops
from .enums import PrecisionType, member
from .tensor import SymScalar, TraceTensor, builder, scalar_expr


def _precise(name: str, arity: int):
    base = getattr(ops, name)

    def fn(*args, precision_type=None):
        if len(args) == arity + 1 and precision_type is None:      # positional, as the docs
            *args, precision_type = args
        if precision_type is not None:
            member(PrecisionType, precision_type, f"{name} precision_type")
        return base(*args)
    fn.__name__ = name
    fn.__doc__ = (base.__doc__ or "") + " precision_type= is accepted (computed at full " \
                                        "fp32 precision either way)."
    return fn


for _n, _a in (("div", 2), ("fmod", 2), ("remainder", 2), ("pow", 2), ("exp", 1),
               ("sqrt", 1), ("rsqrt", 1), ("log", 1), ("log2", 1), ("log10", 1),
               ("reciprocal", 1)):
    globals()[_n] = _precise(_n, _a)


def _sym_or_int(e):
    return e if isinstance(e, int) else SymScalar(e)


def min(a, b):  # noqa: A001 -- the reference's name
    """The smaller of two scalars (ints or symbolic scalars: a symbolic scalar); with a
    tensor operand, the elementwise minimum."""
    if isinstance(a, TraceTensor) or isinstance(b, TraceTensor):
        return ops.minimum(a, b)
    ea, eb = scalar_expr(a), scalar_expr(b)
    if ea is None or eb is None:
        return builtins.min(a, b)
    return _sym_or_int(E.minimum(ea, eb))


def max(a, b):  # noqa: A001
    """The larger of two scalars (a symbolic scalar); with a tensor, the elementwise maximum."""
    if isinstance(a, TraceTensor) or isinstance(b, TraceTensor):
        return ops.maximum(a, b)
    ea, eb = scalar_expr(a), scalar_expr(b)
    if ea is None or eb is None:
        return builtins.max(a, b)
    return _sym_or_int(E.maximum(ea, eb))


def ceildiv(a, b):
    """ceil(a / b) of ints or symbolic scalars."""
    ea, eb = scalar_expr(a), scalar_expr(b)
    if ea is None or eb is None:
        raise builder().error("ceildiv takes ints or symbolic scalars")
    return _sym_or_int(E.cdiv(ea, eb))


def bytes_of(dtype: DType) -> int:
    """Bytes per element of a dtype."""
    if not isinstance(dtype, DType):
        raise TypeError(f"bytes_of takes a pypto dtype, not {dtype!r}")
    return dtype.itemsize


def set_matrix_size(size) -> None:
    """[m, k, n] of the next matmul whose operand is a reshaped NZ tensor (the reference's
    layout hint). pypto stores every tensor ND, so the sizes change nothing; they are
    checked to be three sizes."""
    if not isinstance(size, (list, tuple)) or len(size) != 3 or \
            any(scalar_expr(v) is None for v in size):
        raise builder().error(f"set_matrix_size takes [m, k, n], got {size!r}")


def get_cube_tile_shapes():
    """The cube tiles in force: ([m L0, m L1], [k L0, k L1], [n L0, n L1]) (None before any
    set_cube_tile_shapes)."""
    t = builder().cube_tile
    return None if t is None else tuple(list(p) for p in t)


# -- in-place forms and moves -----------------------------------------------------------------

def move(dst, src) -> None:
    """dst.move(src) (and `dst[:] = src`): dst now holds src. A parameter or local tensor (or
    a view of one) is written with assemble; a computed value is rebound to src. A computed
    value from outside the pypto.loop being traced is carried across its iterations, as the
    reference's tensor slots do (`state = states[b]` before the loop, `state[:] = new` in
    it): see _carry."""
    b = builder()
    if not isinstance(dst, TraceTensor) or not isinstance(src, TraceTensor):
        raise b.error("move takes two tensors")
    if dst.memory is not None or dst.base is not None:
        ops.assemble(src, [0] * src.ndim, dst)
    elif len(dst.scope) < len(b.loops) and tuple(b.loops[:len(dst.scope)]) == dst.scope:
        _carry(b, dst, src)
    else:
        dst.value, dst.valid, dst.scope = src.value, src.valid, src.scope


def _carry(b, dst, src) -> None:
    """Make dst, a computed value defined outside the loop L being traced (the outermost loop
    entered since), a loop-carried tensor: a local made before L, written with dst's value
    there; every op of L traced so far that read dst reads the local instead (the next
    iteration sees this write); src is written into it and dst names the local from now on
    (after L it holds the last iteration's value)."""
    if dst.valid is not None:
        raise b.error("moving into a view with valid_shape from inside a pypto.loop: make a "
                      "pypto.tensor before the loop and assemble into it")
    depth = len(dst.scope)
    loop, parent = b.loops[depth], b.regions[depth]
    inner, b.loops[depth:] = b.loops[depth:], []
    pre: list = []
    b.regions.append(pre)
    try:
        n = b.carries[loop.attrs["var"]] = b.carries.get(loop.attrs["var"], -1) + 1
        local = ops.tensor(dst.type.shape, dst.dtype, f"carry_{loop.attrs['var']}_{n}")
        ops.assemble(dst, [0] * dst.ndim, local)
    finally:
        b.regions.pop()
        b.loops.extend(inner)
    _replace_operand(loop.regions, dst.value, local.value)
    for op in pre:              # at L's line: the same on every traced path
        op.loc = loop.loc
    i = next(i for i, op in enumerate(parent) if op is loop)
    parent[i:i] = pre
    local.scope = dst.scope
    ops.assemble(src, [0] * src.ndim, local)
    dst.value, dst.memory, dst.scope = local.value, local.memory, local.scope


def _replace_operand(regions, old, new) -> None:
    for region in regions:
        for op in region:
            op.operands = [new if v is old else v for v in op.operands]
            _replace_operand(op.regions, old, new)


def _inplace(name: str, fn):
    def f(x, *args, **kwargs):
        move(x, fn(x, *args, **kwargs))
        return x
    f.__name__ = name
    f.__doc__ = f"In-place {fn.__name__}: x.move({fn.__name__}(x, ...)); returns x."
    return f


def axpy(y, x, alpha=1.0):
    """y + alpha * x."""
    return ops.add(y, ops.mul(x, alpha) if alpha != 1 else x)


tril_ = _inplace("tril_", ops.tril)
triu_ = _inplace("triu_", ops.triu)
axpy_ = _inplace("axpy_", axpy)


def scatter_(input, dim: int, index, src, *, reduce=None):  # noqa: A002
    """In-place scatter (torch.scatter_): input.move(scatter(input, ...)); returns input."""
    move(input, ops.scatter(input, dim, index, src, reduce))
    return input


def index_add_(input, dim: int, index, source, *, alpha=1):  # noqa: A002
    """In-place index_add: input.move(index_add(input, ...)); returns input."""
    move(input, ops.index_add(input, dim, index, source, alpha))
    return input


def fill_(x, value):
    """x.move(full(x.shape, value, x.dtype)); returns x."""
    move(x, ops.full(x.type.shape, value, x.dtype))
    return x


def scatter_update(input, dim: int, index, src):  # noqa: A002
    """Rows of src written into a copy of input at the rows index names (KV-cache writes):
    2-D input [N, H], index [B, S], src [B*S, H]: out[index.flat[k], :] = src[k, :]; 4-D
    input [blocks, block_size, 1, H], src [B, S, 1, H]: the row index.flat[k] of the
    flattened [blocks*block_size, H] cache gets src's row k. Indices wrap modulo the rows,
    and a repeated index keeps the last write (scatter's rules)."""
    b = builder()
    if index.ndim != 2 or input.ndim not in (2, 4) or src.ndim != input.ndim:
        raise b.error("scatter_update takes a 2-D index and a 2-D or 4-D input and src")
    if dim not in (-2, input.ndim - 2):
        raise b.error(f"scatter_update: dim must be -2 (the reference's page: keep the "
                      f"default), not {dim!r}")
    h = input.dim(input.ndim - 1)
    rows = E.mul(input.dim(0), input.dim(1)) if input.ndim == 4 else input.dim(0)
    n = E.mul(index.dim(0), index.dim(1))
    flat_in = ops.reshape(input, [rows, h]) if input.ndim == 4 else input
    flat_src = ops.reshape(src, [n, h]) if src.ndim == 4 else src
    idx = ops.expand_clone(ops.reshape(index, [n, 1]), [n, h])
    out = ops.scatter(flat_in, 0, idx, flat_src)
    return ops.reshape(out, list(input.type.shape)) if input.ndim == 4 else out


class Element:
    """pypto.Element(dtype, value) / Element(value, dtype): a typed scalar; ops take it
    where they take a number (its value, converted to the tensor's dtype)."""

    _pypto_element = True

    def __init__(self, a, b):
        dtype, value = (a, b) if isinstance(a, DType) else (b, a)
        if not isinstance(dtype, DType):
            raise TypeError("Element takes a pypto dtype and a value")
        self.dtype, self.value = dtype, value

    def item(self):
        return int(self.value) if self.dtype.kind != "float" else float(self.value)

    def __repr__(self) -> str:
        return f"Element({self.dtype!r}, {self.value!r})"


def from_torch(t, name: str = "", dynamic_axis=None, **kwargs):
    """A CPU torch tensor (or any array) as the numpy array pypto kernels take: it shares
    the memory, so a kernel's writes land in t. name only names it (the reference's dumps);
    dynamic_axis, the reference's way of marking DYNAMIC dims, and any other keyword warn:
    pypto reads DYNAMIC dims from the kernel's annotation."""
    import numpy as np
    from .tensor import unsupported
    given = (["dynamic_axis"] if dynamic_axis is not None else []) + sorted(kwargs)
    if given:
        unsupported(f"from_torch({', '.join(k + '=' for k in given)})",
                    "pypto takes DYNAMIC dims from the kernel's annotation")
    if hasattr(t, "detach"):
        t = t.detach()
    return np.asarray(t)


def index_add_ub(input, dim: int, index, source, *, alpha=1):  # noqa: A002
    """The reference's UB-resident index_add: the same values as index_add."""
    return ops.index_add(input, dim, index, source, alpha)


def index_add__ub(input, dim: int, index, source, *, alpha=1):  # noqa: A002
    """The reference's UB-resident index_add_: the same values as index_add_."""
    return index_add_(input, dim, index, source, alpha=alpha)


def atomic_add(src, offsets, dst) -> None:
    """dst[offsets : offsets + src.shape] += src (the reference accumulates atomically across
    parallel tasks; pypto's iterations run in order, so a read, an add and an assemble give
    the same values)."""
    b = builder()
    if not isinstance(dst, TraceTensor) or not isinstance(src, TraceTensor):
        raise b.error("atomic_add takes a source and a destination tensor")
    cur = ops.view(dst, list(src.type.shape), offsets)
    ops.assemble(ops.add(cur, src), offsets, dst)


def fillpad(x, mode: str = "constant", value=0):
    """x with every element outside its valid region (view(..., valid_shape=)) set to value;
    only mode 'constant', as in the reference."""
    b = builder()
    if mode != "constant":
        raise b.error(f"fillpad: mode {mode!r} is not supported (only 'constant')")
    if x.valid is None:
        return composites.clone(x)
    # a local filled with value, then x's valid region written over it (assemble writes
    # only the valid region), read back whole
    t = ops.tensor(list(x.type.shape), x.dtype)
    ops.assemble(ops.full(list(x.type.shape), value, x.dtype), [0] * x.ndim, t)
    ops.assemble(x, [0] * x.ndim, t)
    return ops.view(t, list(x.type.shape), [0] * x.ndim)


def set_cache_policy(x, policy, value: bool) -> None:
    """An L2 cache hint of the reference: checked, no effect on the host."""
    from .enums import CachePolicy
    member(CachePolicy, policy, "set_cache_policy")
    x._cache_policy = {**getattr(x, "_cache_policy", {}), policy: bool(value)}


def get_cache_policy(x, policy) -> bool:
    return getattr(x, "_cache_policy", {}).get(policy, False)
