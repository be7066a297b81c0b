"""The op catalogue as op files see it (pypto.exp, pypto.softmax, ...), and the tensor methods
and Python operators of traced tensors (x.exp(), x + y, y[:] = ...), installed on import.
"""
from __future__ import annotations

import inspect

from ..ir import ops as O
from ..ir.types import DTYPES
from . import (api, composites, conv, int4, mm, mx, numpy_guard, ops, quant, rng, shuffle, sorts,
               verify)
from .enums import TileOpFormat
from .tensor import SymScalar, TraceTensor, _b, fmt_shape, read_scalar, scalar_expr, slice_key


def _catalogue() -> dict:
    """Every public function the two modules define (the generated elementwise ones too)."""
    out = {}
    for m in (ops, mm, mx, conv, sorts, composites, api, shuffle, rng, verify, int4):            # later modules wrap earlier ones (api)
        for n, v in vars(m).items():
            if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == m.__name__:
                out[n] = v
    out["abs"] = ops.abs_
    out["quantize"], out["dequantize"] = quant.quantize, quant.dequantize
    return out


CATALOGUE = _catalogue()       # pypto.<name> for every name here


def api_matmul(a, b, out_dtype, *, a_trans=False, b_trans=False, c_matrix_nz=False,
               extend_params=None):
    return mm.matmul(a, b, out_dtype, a_trans=a_trans, b_trans=b_trans,
                      c_matrix_nz=c_matrix_nz, extend_params=extend_params)

# tensor methods: x.exp(), x.sum(-1), x.reshape([...]), ...
METHODS = {n: getattr(ops, n) for n in list(O.UNARY) + list(O.BINARY) if hasattr(ops, n)}
METHODS.update({"abs": ops.abs_, "add": ops.add, "sub": ops.sub, "sum": ops.sum,
                "prod": ops.prod, "amax": ops.amax, "amin": ops.amin, "mean": composites.mean,
                "var": composites.var, "argmax": ops.argmax, "argmin": ops.argmin,
                "cumsum": ops.cumsum, "cumprod": ops.cumprod, "cast": int4.cast,
                "reshape": ops.reshape, "view": shuffle.view, "transpose": composites.transpose,
                "permute": ops.permute, "unsqueeze": composites.unsqueeze,
                "clone": composites.clone, "expand_clone": ops.expand_clone,
                "softmax": composites.softmax, "silu": composites.silu, "gelu": composites.gelu,
                "topk": sorts.topk, "sort": sorts.sort, "argsort": sorts.argsort, "gather": ops.gather,
                "index_select": ops.index_select, "scatter": ops.scatter,
                "index_add": ops.index_add, "tril": ops.tril, "triu": ops.triu,
                "clip": composites.clip, "where": lambda x, c, y: ops.where(c, x, y),
                "round": composites.round, "max": ops.amax, "min": ops.amin, "to": int4.cast,
                "astype": int4.cast, "move": api.move, "concat": composites.concat,
                "matmul": api_matmul, "scatter_": api.scatter_, "scatter_update":
                api.scatter_update, "tril_": api.tril_, "triu_": api.triu_,
                "index_add_": api.index_add_, "axpy_": api.axpy_, "fill_": api.fill_,
                "assemble": lambda s, src, offsets: ops.assemble(src, offsets, s),
                "greater": ops.gt, "hypot": ops.hypot, "prelu": composites.prelu,
                "sigmoid": CATALOGUE["sigmoid"], "relu": CATALOGUE["relu"],
                "lrelu": composites.lrelu, "set_cache_policy": api.set_cache_policy,
                "get_cache_policy": api.get_cache_policy})
METHODS.update({n: CATALOGUE[n] for n in ("div", "fmod", "remainder", "exp", "sqrt", "rsqrt",
                                          "log", "log2", "log10", "reciprocal")})

_OPERATORS = {"__add__": ("add", False), "__radd__": ("add", True), "__sub__": ("sub", False),
              "__rsub__": ("sub", True), "__mul__": ("mul", False), "__rmul__": ("mul", True),
              "__truediv__": ("div", False), "__rtruediv__": ("div", True),
              "__floordiv__": ("floor_div", False), "__rfloordiv__": ("floor_div", True),
              "__mod__": ("remainder", False), "__rmod__": ("remainder", True),
              "__pow__": ("pow", False), "__rpow__": ("pow", True),
              "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True),
              "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True),
              "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", True),
              "__lshift__": ("bitwise_left_shift", False),
              "__rshift__": ("bitwise_right_shift", False),
              "__lt__": ("lt", False), "__le__": ("le", False), "__gt__": ("gt", False),
              "__ge__": ("ge", False), "__eq__": ("eq", False), "__ne__": ("ne", False)}


def _binop(name: str, swap: bool):
    fn = getattr(ops, name)
    return (lambda s, o: fn(o, s)) if swap else (lambda s, o: fn(s, o))


def _getattr(self, name):
    # tensor methods mirror the functions: x.exp(), x.sum(-1), x.transpose(0, 1), ...
    fn = METHODS.get(name)
    if fn is None:
        raise AttributeError(f"pypto tensors have no attribute {name!r}")
    return lambda *a, **k: fn(self, *a, **k)


def _getitem(self, key):
    """t[key]: with an index per dim on an integer input, the element read at run time;
    otherwise a view. Integer (or symbolic) indices mixed with slices, or fewer keys than
    dims, select that position and drop the dim, as the reference's Tensor does: a view
    with 1 there, reshaped without it (`states[b, h]` of [B, N, D, D] is [D, D])."""
    idx = key if isinstance(key, tuple) else (key,)
    if len(idx) == self.ndim and \
            all(scalar_expr(i) is not None and not isinstance(i, bool) for i in idx):
        return read_scalar(self, list(idx))
    ints: list = []
    offsets, shape = slice_key(self, key, ints=ints)
    v = ops.view(self, shape, offsets)
    if not any(ints):
        return v
    keep = [s for s, i in zip(shape, ints) if not i]
    return ops.reshape(v, keep)


def _setitem(self, key, value):
    """t[key] = value: assemble value at the slice's offsets. A slice with a start and no
    stop (`out[i*32:, 0:] = t`) takes its extent from the value, as in the reference: the
    value is assembled at that offset (its valid region, for a view with valid_shape); a
    bare `:` is the whole dim and must match. An integer (or symbolic) index writes at that
    position of a dim the value does not have (`out[i0:i1, h] = x` with x of rank 2 into a
    rank-3 out): the value is reshaped with a 1 there, as the reference does."""
    b = _b()
    if _whole(key) and self.memory is None and self.base is None \
            and isinstance(value, TraceTensor):
        return api.move(self, value)     # the reference: x[:] = v on a computed x is x.move(v)
    open_ends: list = []
    ints: list = []
    offsets, shape = slice_key(self, key, open_ends, ints)
    if isinstance(value, TraceTensor) and any(ints):
        value = _with_unit_dims(value, ints, b, self)
    if isinstance(value, TraceTensor) and value.ndim == len(shape):
        shape = [value.type.shape[i] if o else s for i, (s, o) in enumerate(zip(shape, open_ends))]
    if not isinstance(value, TraceTensor):
        if scalar_expr(value) is None and not isinstance(value, float):
            raise b.error(f"only tensors and scalars can be written into "
                          f"{self.memory or 'a tensor'} (got {type(value).__name__})")
        value = ops.full(shape, value, self.dtype)
    if value.ndim != len(shape):
        raise b.error(f"cannot write a rank-{value.ndim} tensor into a rank-{len(shape)} "
                      f"region of {self.memory or 'a tensor'}")
    for i, (d, s) in enumerate(zip(value.type.shape, shape)):
        b.same(d, s, f"writing {value.type} into region {fmt_shape(shape)} of "
                     f"{self.memory or 'a tensor'}: dim {i} differs")
    ops.assemble(value, offsets, self)


def _whole(key) -> bool:
    """key is `:` or a tuple of bare `:` (the reference's empty slice)."""
    keys = key if isinstance(key, tuple) else (key,)
    return bool(keys) and all(isinstance(k, slice) and k == slice(None) for k in keys)


def _with_unit_dims(value, ints, b, dst):
    """value reshaped with a 1 at each integer-indexed dim (its valid region kept)."""
    n = ints.count(False)
    if value.ndim != n:
        raise b.error(f"writing a rank-{value.ndim} tensor into {dst.memory or 'a tensor'} "
                      f"at a key with {n} slice(s): the ranks must match")
    dims = iter(value.type.shape)
    shape = [1 if i else next(dims) for i in ints]
    valid = None
    if value.valid is not None:
        vs = iter(value.valid)
        valid = [1 if i else next(vs) for i in ints]
    return ops.reshape(value, shape, valid_shape=valid)


def _matmul_operator(s, o):
    """`a @ b` as the reference's Tensor.__matmul__: pypto.matmul with out_dtype the right
    operand's dtype (fp16, bf16, fp32), int32 for int8; other dtypes are an error."""
    dt = getattr(o, "dtype", None)
    if dt is not None and dt.name in ("f16", "bf16", "f32"):
        return mm.matmul(s, o, dt)
    if dt is not None and dt.name == "i8":
        return mm.matmul(s, o, DTYPES["i32"])
    raise _b().error(f"a @ b takes fp16, bf16, fp32 or int8 tensors (as the reference), not "
                     f"{dt if dt is not None else type(o).__name__}; use pypto.matmul(a, b, "
                     f"out_dtype)")


def _install() -> None:
    for dunder, (name, swap) in _OPERATORS.items():
        setattr(TraceTensor, dunder, _binop(name, swap))
    TraceTensor.__neg__ = lambda s: ops.neg(s)
    TraceTensor.__abs__ = lambda s: ops.abs_(s)
    TraceTensor.__invert__ = lambda s: ops.bitwise_not(s)
    TraceTensor.__hash__ = object.__hash__
    TraceTensor.__matmul__ = _matmul_operator
    TraceTensor.__getattr__ = _getattr
    TraceTensor.__getitem__ = _getitem
    TraceTensor.__setitem__ = _setitem
    numpy_guard.install(TraceTensor, CATALOGUE)
    TraceTensor.name = property(_name)
    TraceTensor.id = property(lambda s: id(s.value))
    TraceTensor.format = property(lambda s: TileOpFormat.TILEOP_ND)
    TraceTensor.valid_shape = property(lambda s: s.shape if s.valid is None else tuple(
        v if isinstance(v, int) else SymScalar(v) for v in s.valid))


def _name(self) -> str:
    """A parameter's or local tensor's name; a computed value's IR name, if any."""
    return self.memory or self.value.name or ""


_install()
