"""The Tensor-mode primitives as traced functions (pypto.exp, pypto.matmul, ...): each emits
one tensor-level op (composites.py builds the rest from these; catalogue.py is the namespace
op files see).
"""
from __future__ import annotations

import builtins
import math

from ..ir import expr as E
from ..ir import ops as O
from ..ir.tensor_ops import INDEX, aligned_problem
from ..ir.types import BOOL, DTYPES, F32, I64, STORAGE_ONLY, DType, TensorType
from .enums import CastMode, SaturationMode, member
from .tensor import SymScalar, TraceTensor, builder, fmt_shape, scalar_expr, unsupported

_b = builder


# -- helpers --------------------------------------------------------------------------------

def _tensor(x, b, what: str) -> TraceTensor:
    if not isinstance(x, TraceTensor):
        if type(x).__name__ == "Int4Tensor":
            raise b.error(f"{what} does not take DT_INT4 tensors: they take cast (to a float "
                          f"dtype), view and assemble (frontend/int4.py)")
        raise b.error(f"{what} expects a tensor, got {type(x).__name__}")
    stack = b.loops
    if x.scope and tuple(stack[:len(x.scope)]) != x.scope:
        raise b.error(f"{what}: this tensor was computed inside a pypto.loop body and is used "
                      f"after the loop; write it into a tensor with assemble inside the loop "
                      f"and read that tensor instead")
    if x.memory is not None:
        b.note_access(x if x.base is None else x.base, "read")
    elif x.base is not None:
        b.note_access(x.base, "read")
    return x


def _tile(b, rank: int, dt: DType, shape, opname: str, strict: bool = True) -> list:
    tile = b.vec_tile
    if tile is None:
        raise b.error(f"{opname}: no vector tile shape in force; call "
                      f"pypto.set_vec_tile_shapes(...) before this op")
    if len(tile) > rank:             # as the reference: the trailing dims (a 1-D gamma
        tile = list(tile)[len(tile) - rank:]      # under set_vec_tile_shapes(8, 256))
    elif len(tile) < rank:
        if strict:
            raise b.error(f"{opname}: tile shape {tuple(tile)} has rank {len(tile)} but the "
                          f"operand has rank {rank}; give one tile size per dim")
        tile = ([1] * rank + list(tile))[-rank:] if rank else []
    problem = aligned_problem(tile, shape, dt, b.target.align)
    if problem:
        raise b.error(problem)
    return list(tile)


def _broadcast(b, shapes: list, what: str) -> list:
    n = max(len(s) for s in shapes)
    out = []
    for i in range(n):
        dim = 1
        for s in shapes:
            j = i - (n - len(s))
            if j < 0:
                continue
            x = b.norm(s[j])
            if x == 1:
                continue
            if dim == 1:
                dim = x
            elif dim != x:
                dim = b.same(dim, x, f"{what}: shapes " + " and ".join(fmt_shape(s) for s in shapes)
                             + f" do not broadcast in dim {i}")
        out.append(dim)
    return out


def _scalar_value(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, SymScalar):
        return v.e
    if (type(v).__module__ == "numpy" or getattr(v, "_pypto_element", False)) and \
            hasattr(v, "item"):
        return v.item()          # numpy scalars, pypto.Element
    return None


def _norm_shape(b, shape) -> tuple:
    return tuple(b.norm(d) for d in shape)


def _result(op, valid=None) -> TraceTensor:
    return TraceTensor(op.result, valid=valid)


def _ew(name: str, *args, strict: bool = True) -> TraceTensor:
    """An elementwise catalogue op on tensors (one operand of a binary op may be a scalar)."""
    b = _b()
    d = O.ELEMENTWISE[name]
    for a in args:
        if type(a).__name__ == "Int4Tensor":
            _tensor(a, b, name)                   # the error saying what int4 takes
    tensors = [a for a in args if isinstance(a, TraceTensor)]
    if not tensors:
        raise b.error(f"{name} needs at least one tensor operand")
    for t in tensors:
        _tensor(t, b, name)
    attrs: dict = {}
    if len(tensors) < len(args):
        if d.arity != 2:
            args = [a if isinstance(a, TraceTensor) else full_like(tensors[0], a) for a in args]
            tensors = list(args)
        else:
            side = "rhs" if isinstance(args[0], TraceTensor) else "lhs"
            s = args[1] if side == "rhs" else args[0]
            sv = _scalar_value(s)
            if sv is None:
                raise b.error(f"{name}: cannot combine a tensor with {type(s).__name__}")
            if tensors[0].dtype.kind in ("int", "bool") and isinstance(sv, float):
                if not float(sv).is_integer():
                    raise b.error(f"{name}: an {tensors[0].dtype} tensor with the float scalar "
                                  f"{sv}; cast the tensor to a float dtype first")
                sv = int(sv)
            attrs = {"scalar": sv, "scalar_side": side}
    data = tensors[1:] if name == "where" else tensors
    dts = {t.dtype for t in data}
    if len(dts) > 1:
        raise b.error(f"{name}: dtype mismatch " + " vs ".join(str(t.dtype) for t in data)
                      + "; convert with pypto.cast(t, dtype)")
    dt = data[0].dtype
    if dt.kind not in d.kinds:
        raise b.error(f"{name} takes {' or '.join(d.kinds)} tensors, not {dt}")
    if name != "copy":
        _arith(b, dt, name)
    shape = _broadcast(b, [t.type.shape for t in tensors], name)
    out_dt = BOOL if d.out == "bool" else dt
    attrs["tile"] = _tile(b, len(shape), dt, shape, name, strict)
    op = b.emit(name, [t.value for t in tensors], [TensorType(out_dt, _norm_shape(b, shape))], attrs)
    valid = next((t.valid for t in tensors if t.valid is not None and t.ndim == len(shape)), None)
    return _result(op, valid)


def _arith(b, dt: DType, what: str) -> None:
    """fp8 and E8M0 tensors hold values only (as in the reference): no arithmetic on them."""
    if dt.name in STORAGE_ONLY:
        raise b.error(f"{what} does not take {dt.api} tensors: fp8 and E8M0 values are cast "
                      f"(pypto.cast(x, pypto.DT_FP32)), moved, and multiplied by matmul and "
                      f"scaled_mm, not computed on")


def _dims(b, x: TraceTensor, dim, what: str) -> list:
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    out = []
    for d in dims:
        if not isinstance(d, int) or not -x.ndim <= d < x.ndim:
            raise b.error(f"{what}: dim {d!r} out of range for a rank-{x.ndim} tensor")
        out.append(d % x.ndim)
    return sorted(set(out))


def _reduce(name: str, x, dim, keepdim: bool, out_dtype: DType | None = None) -> TraceTensor:
    b = _b()
    x = _tensor(x, b, name)
    _arith(b, x.dtype, name)
    dims = _dims(b, x, dim, name)
    if not keepdim and len(dims) == x.ndim:
        raise b.error(f"{name} over every dim without keepdim gives a rank-0 tensor, which pypto "
                      f"does not support; pass keepdim=True")
    tile = _tile(b, x.ndim, x.dtype, x.type.shape, name)
    shape = [1 if i in dims else b.norm(s) for i, s in enumerate(x.type.shape)]
    if not keepdim:
        shape = [s for i, s in enumerate(shape) if i not in dims]
    op = b.emit(name, [x.value], [TensorType(out_dtype or x.dtype, tuple(shape))],
                {"dims": dims, "keepdim": bool(keepdim), "tile": tile})
    return _result(op)


# -- tiling ---------------------------------------------------------------------------------

def set_vec_tile_shapes(*dims) -> None:
    """The tile shape of the vector ops traced after this call (one size per dim)."""
    b = _b()
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise b.error(f"set_vec_tile_shapes takes positive ints, got {dims!r}")
    b.vec_tile = list(dims)


def get_vec_tile_shapes() -> tuple:
    return tuple(_b().vec_tile or ())


def set_cube_tile_shapes(m, k, n, enable_split_k: bool = False) -> None:
    """Cube tiles for the matmuls traced after this call: each an int or [L0, L1]."""
    b = _b()
    out = []
    for name, v in (("m", m), ("k", k), ("n", n)):
        pair = [v, v] if isinstance(v, int) else list(v)
        if len(pair) != 2 or not all(isinstance(x, int) and x > 0 for x in pair):
            raise b.error(f"set_cube_tile_shapes: {name} must be an int or [L0, L1], got {v!r}")
        if pair[1] % pair[0]:
            raise b.error(f"set_cube_tile_shapes: {name} L0 size {pair[0]} must divide its L1 "
                          f"size {pair[1]}")
        out.append(pair)
    b.cube_tile = out
    b.split_k = bool(enable_split_k)          # frontend/splitk.py


def symbolic_scalar(v) -> SymScalar:
    e = scalar_expr(v)
    if e is None:
        raise _b().error("symbolic_scalar takes an int or a symbolic scalar")
    return SymScalar(e)


# -- elementwise ----------------------------------------------------------------------------

def _unary_fn(name):
    def fn(x):
        return _ew(name, x)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} (catalogue: {O.UNARY[name].pto})."
    return fn


def _binary_fn(name):
    def fn(a, b):
        return _ew(name, a, b)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting (catalogue: {O.BINARY[name].pto})."
    return fn


for _n in O.UNARY:
    if _n not in ("copy",):
        globals()[_n] = _unary_fn(_n)
for _n in O.BINARY:
    if _n not in ("add", "sub"):
        globals()[_n] = _binary_fn(_n)
abs_ = globals()["abs"]
greater = globals()["gt"]


def add(a, b, alpha=1):
    """a + alpha * b."""
    return _ew("add", a, b if alpha == 1 else mul(b, alpha))


def sub(a, b, alpha=1):
    """a - alpha * b."""
    return _ew("sub", a, b if alpha == 1 else mul(b, alpha))


def where(condition, input, other):  # noqa: A002 -- the reference's names
    """Select input where condition is true, else other (scalars broadcast)."""
    b = _b()
    x, y = input, other
    if not isinstance(condition, TraceTensor):
        raise b.error("where: the condition must be a tensor")
    if not isinstance(x, TraceTensor) and not isinstance(y, TraceTensor):
        dt = F32 if any(isinstance(_scalar_value(v), float) for v in (x, y)) else I64
        x = full([1] * condition.ndim, x, dt)
    ref = x if isinstance(x, TraceTensor) else y
    x = x if isinstance(x, TraceTensor) else full_like(ref, x)
    y = y if isinstance(y, TraceTensor) else full_like(ref, y)
    return _ew("where", condition, x, y)


# -- reductions and scans -------------------------------------------------------------------

def sum(x, dim=None, keepdim: bool = False):  # noqa: A001
    return _reduce("sum", x, dim, keepdim)


def prod(x, dim=None, keepdim: bool = False):
    return _reduce("prod", x, dim, keepdim)


def amax(x, dim=None, keepdim: bool = False):
    return _reduce("amax", x, dim, keepdim)


def amin(x, dim=None, keepdim: bool = False):
    return _reduce("amin", x, dim, keepdim)


def _arg_reduce(name: str, x, dim, keepdim: bool):
    b = _b()
    if dim is None or not isinstance(dim, int):
        raise b.error(f"{name} takes one dim")
    return _reduce(name, x, dim, keepdim, INDEX)


def argmax(x, dim=None, keepdim: bool = False):
    """Index of the largest element along dim (the first one on ties), int32 as in the
    reference."""
    return _arg_reduce("argmax", x, dim, keepdim)


def argmin(x, dim=None, keepdim: bool = False):
    return _arg_reduce("argmin", x, dim, keepdim)


def _scan(name: str, x, dim: int):
    b = _b()
    x = _tensor(x, b, name)
    _arith(b, x.dtype, name)
    d = _dims(b, x, dim, name)[0]
    tile = _tile(b, x.ndim, x.dtype, x.type.shape, name)
    op = b.emit(name, [x.value], [TensorType(x.dtype, _norm_shape(b, x.type.shape))],
                {"dim": d, "tile": tile})
    return _result(op)


def cumsum(x, dim: int):
    return _scan("cumsum", x, dim)


def cumprod(x, dim: int):
    return _scan("cumprod", x, dim)


# -- cast ------------------------------------------------------------------------------------

def _cast_mode(b, x, dtype: DType, mode, satmode) -> tuple:
    """(IR mode, sat) of a cast; CAST_ODD off fp32 -> fp16 falls back to the default as in
    the reference, with a warning."""
    m = member(CastMode, CastMode.CAST_NONE if mode is None else mode, "cast mode").value
    sat = member(SaturationMode, SaturationMode.OFF if satmode is None else satmode,
                 "cast satmode").value
    if m == "odd" and not (x.dtype.name == "f32" and dtype.name == "f16"):
        unsupported(f"CAST_ODD for {x.dtype} -> {dtype}",
                    "the reference rounds only fp32 -> fp16 to odd and uses the default mode "
                    "for other pairs, as pypto does")
        m = None
    return m, sat


def cast(x, dtype: DType, mode=None, satmode=None, strict: bool = True):
    """Convert to dtype with a CastMode rounding and a SaturationMode (runtime/cast.py).
    mode None or CAST_NONE is the reference's default for the pair of dtypes: CAST_TRUNC
    from a float to an integer, CAST_RINT otherwise. A cast to the same dtype without a
    mode returns x itself; with a mode, a float is rounded to an integral value in it.
    satmode OFF (default) wraps out-of-range integers modulo 2**bits, ON clamps them."""
    b = _b()
    x = _tensor(x, b, "cast")
    if not isinstance(dtype, DType):
        raise b.error(f"cast: bad dtype {dtype!r}; use pypto.DT_FP16 and friends")
    m, sat = _cast_mode(b, x, dtype, mode, satmode)
    if dtype == x.dtype and (m is None or not dtype.is_float):
        return x
    if dtype.name == "e8m0" or (dtype == x.dtype and dtype.name in STORAGE_ONLY):
        raise b.error(f"cast to {dtype.api} is not defined (the reference has none; "
                      f"quant_mx makes E8M0 scales)" if dtype.name == "e8m0" else
                      f"cast: {dtype.api} to itself with a rounding mode is not defined")
    if m is None:
        m = "trunc" if x.dtype.is_float and dtype.kind == "int" else "rint"
    small = x.dtype if x.dtype.itemsize <= dtype.itemsize else dtype
    tile = _tile(b, x.ndim, small, x.type.shape, "cast", strict)
    attrs = {"dtype": dtype.name, "tile": tile}
    if (x.dtype.is_float or dtype.is_float) and dtype.kind != "bool":
        attrs["mode"] = m                 # recorded where a value can round
    if sat:
        attrs["sat"] = True
    op = b.emit("cast", [x.value], [TensorType(dtype, _norm_shape(b, x.type.shape))], attrs)
    return _result(op, x.valid)


# -- views, writes and shapes ---------------------------------------------------------------

def _dim_arg(v, b, what: str) -> E.Ex:
    e = scalar_expr(v)
    if e is None:
        raise b.error(f"{what} must be an int or a symbolic scalar, not {type(v).__name__}")
    return b.norm(e)


def _derived_valid(t, shape, offsets):
    """The valid shape of a view given none, as the reference derives it: per dim the
    source's valid size less the offset, clamped to [0, size]; None when that is the whole
    view."""
    if t.valid is None:
        return None
    valid = [E.maximum(0, E.minimum(s, E.sub(v, o)))
             for v, o, s in zip(t.valid, offsets, shape)]
    return None if all(v == s for v, s in zip(valid, shape)) else valid


def view(t, shape, offsets, valid_shape=None):
    """A sub-tensor (no copy); valid_shape marks the part that holds data (tails)."""
    b = _b()
    t = _tensor(t, b, "view")
    shape = [_dim_arg(s, b, "view shape") for s in shape]
    offsets = [_dim_arg(o, b, "view offset") for o in offsets]
    if len(shape) != t.ndim or len(offsets) != t.ndim:
        raise b.error(f"view of a rank-{t.ndim} tensor needs {t.ndim} sizes and offsets")
    for i, (o, s, d) in enumerate(zip(offsets, shape, t.type.shape)):
        end = E.add(o, s)
        if isinstance(end, int) and isinstance(d, int) and end > d and valid_shape is None:
            raise b.error(f"view [{E.to_str(o)}:{E.to_str(end)}] is out of bounds in dim {i} "
                          f"(size {d}); pass valid_shape= for a tail")
    attrs = {"offsets": offsets, "shape": shape}
    valid = _derived_valid(t, shape, offsets) if valid_shape is None else None
    if valid is not None:
        attrs["valid"] = valid
    if valid_shape is not None:
        valid = [_dim_arg(v, b, "valid_shape") for v in valid_shape]
        if len(valid) != t.ndim:
            raise b.error(f"valid_shape needs {t.ndim} entries")
        attrs["valid"] = valid
    op = b.emit("view", [t.value], [TensorType(t.dtype, tuple(shape))], attrs)
    base = t if t.memory is not None else t.base
    base_offs = offsets if t.memory is not None else (
        [E.add(x, y) for x, y in zip(t.base_offsets, offsets)] if t.base is not None else None)
    return TraceTensor(op.result, valid=valid, base=base, base_offsets=base_offs)


def assemble(src, offsets, dst=None, parallel: bool = False) -> None:
    """Write src into dst (a parameter, a local tensor, or a view of one) at offsets; or,
    as the reference's second form, assemble([(src, offsets), ...], dst). parallel=True (the
    reference may write non-overlapping regions in parallel) changes no value: pypto orders
    writes by their dependences."""
    b = _b()
    if isinstance(src, (list, tuple)) and isinstance(offsets, TraceTensor):
        for s_, o in src:                      # assemble([(src, offsets), ...], dst)
            assemble(s_, o, offsets)
        return None
    src = _tensor(src, b, "assemble")
    offsets = [_dim_arg(o, b, "assemble offset") for o in offsets]
    if not isinstance(dst, TraceTensor) or (dst.memory is None and dst.base is None):
        raise b.error("assemble writes into a kernel parameter or a pypto.tensor local (or a "
                      "view of one)")
    if dst.memory is None:
        offsets = [E.add(x, y) for x, y in zip(dst.base_offsets, offsets)]
        target = dst.base
    else:
        target = dst
    if len(offsets) != target.ndim or src.ndim != target.ndim:
        raise b.error(f"assemble: a rank-{src.ndim} source into a rank-{target.ndim} destination "
                      f"with {len(offsets)} offsets")
    if src.dtype != target.dtype:
        raise b.error(f"assemble: source dtype {src.dtype} differs from {target.memory}'s "
                      f"{target.dtype}; cast it first")
    for i, (o, s, d) in enumerate(zip(offsets, src.type.shape, target.type.shape)):
        end = E.add(o, s)
        if isinstance(end, int) and isinstance(d, int) and end > d and src.valid is None:
            raise b.error(f"assemble writes [{E.to_str(o)}:{end}] in dim {i} of {target.memory}, "
                          f"which has size {d}")
    b.note_access(target, "write")
    attrs = {"offsets": offsets}
    if b.vec_tile is not None and len(b.vec_tile) == src.ndim:
        attrs["tile"] = list(b.vec_tile)
    b.emit("assemble", [src.value, target.value], [], attrs)


def _with_valid(r, valid_shape):
    """r with valid_shape marking its valid region, exactly as a view with valid_shape does
    (reshape, expand_clone and full take the keyword, as in the reference)."""
    if valid_shape is None:
        return r
    return view(r, list(r.type.shape), [0] * r.ndim, valid_shape=valid_shape)


def reshape(t, shape, valid_shape=None, inplace: bool = False):
    """Same elements in a new shape (row-major); one entry may be -1. valid_shape marks the
    result's valid region (as view does); inplace changes nothing here (a reshape is
    metadata either way)."""
    b = _b()
    t = _tensor(t, b, "reshape")
    dims = [_dim_arg(s, b, "reshape shape") for s in shape]
    total = t.type.numel()
    if dims.count(-1) > 1:
        raise b.error("reshape: at most one -1")
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known = E.mul(known, d)
        dims[dims.index(-1)] = E.floordiv(total, known)
    prod_ = 1
    for d in dims:
        prod_ = E.mul(prod_, d)
    _same_count(b, prod_, b.norm(total))
    prod_, total = b.norm(prod_), b.norm(total)
    dims, prod_ = _count_checked(b, t, dims, prod_, total)
    if prod_ != total and isinstance(E.sub(prod_, total), int):
        raise b.error(f"reshape {fmt_shape(t.type.shape)} -> {fmt_shape(dims)}: element counts "
                      f"differ")
    op = b.emit("reshape", [t.value], [TensorType(t.dtype, tuple(dims))], {"shape": dims})
    return _with_valid(_result(op), valid_shape)


def _same_count(b, a, c) -> None:
    """Element counts c*x and c*y of one reshape (v [v_0, 16, 1, 64] to [k_0*16, 64]): the
    symbols x and y are the same size, as two equal dims are."""
    if isinstance(a, int) or isinstance(c, int) or a == c:
        return
    ka, xa = E._split_coeff(a)
    kc, xc = E._split_coeff(c)
    if ka == kc and xa.op == "sym" and xc.op == "sym":
        b.same(xa, xc, "reshape element counts")


def _count_checked(b, t, dims: list, prod_, total) -> tuple:
    """Where the element counts differ in form only (b*(n // b)*4 rows of q [n, 4, 64]), the
    one symbolic dim becomes what the input's count gives (n*4), and a check at run time
    makes sure the two agree: a reshape keeps its element count."""
    sym = [i for i, d in enumerate(dims) if not isinstance(d, int)]
    if prod_ == total or isinstance(total, int) or len(sym) != 1:
        return dims, prod_
    rest = 1
    for d in dims:
        rest = rest if not isinstance(d, int) else rest * d
    derived = E.floordiv(total, rest)
    if E.mul(derived, rest) != total:
        return dims, prod_
    i = sym[0]
    b.emit("check", attrs={"cond": E.eq(dims[i], derived),
                           "what": f"reshape {fmt_shape(t.type.shape)} -> {fmt_shape(dims)}: "
                                   f"dim {i} must be {E.to_str(derived)}",
                           "why": "the element counts differ"})
    dims = dims[:i] + [derived] + dims[i + 1:]
    return dims, total


def permute(t, dims=None, perm=None):
    """The dims of t in the order dims (the reference's name; perm= as pypto spelt it)."""
    b = _b()
    perm = dims if dims is not None else perm
    if perm is None:
        raise b.error("permute needs dims")
    t = _tensor(t, b, "permute")
    perm = [p % t.ndim for p in perm]
    if sorted(perm) != list(range(t.ndim)):
        raise b.error(f"permute: {perm} is not a permutation of {t.ndim} dims")
    shape = [b.norm(t.type.shape[p]) for p in perm]
    tile = _tile(b, t.ndim, t.dtype, shape, "permute")
    op = b.emit("permute", [t.value], [TensorType(t.dtype, tuple(shape))],
                {"perm": perm, "tile": tile})
    return _result(op)


def expand_clone(t, shape, valid_shape=None):
    """Materialise a broadcast of t to shape (valid_shape: as view's)."""
    b = _b()
    t = _tensor(t, b, "expand_clone")
    dims = [_dim_arg(s, b, "expand_clone shape") for s in shape]
    _broadcast(b, [t.type.shape, dims], "expand_clone")
    tile = _tile(b, len(dims), t.dtype, dims, "expand_clone")
    op = b.emit("copy", [t.value], [TensorType(t.dtype, tuple(dims))], {"tile": tile})
    return _with_valid(_result(op), valid_shape)


def tensor(shape, dtype: DType, name: str | None = None):
    """A local tensor (uninitialised, like torch.empty): write it with assemble first."""
    b = _b()
    dims = tuple(_dim_arg(s, b, "tensor shape") for s in shape)
    if name is None:
        name = f"local{b.nlocals}"
        b.nlocals += 1
    if not name.isidentifier():
        raise b.error(f"tensor name {name!r} must be an identifier")
    op = b.emit("tensor", [], [TensorType(dtype, dims)], {})
    op.results[0].name = name
    return TraceTensor(op.result, memory=name)


def _tri(name: str, x, diagonal: int):
    b = _b()
    x = _tensor(x, b, name)
    if x.ndim < 2:
        raise b.error(f"{name} needs at least 2 dims")
    tile = _tile(b, x.ndim, x.dtype, x.type.shape, name)
    op = b.emit(name, [x.value], [TensorType(x.dtype, _norm_shape(b, x.type.shape))],
                {"diagonal": int(diagonal), "tile": tile})
    return _result(op)


def tril(x, diagonal: int = 0):
    return _tri("tril", x, diagonal)


def triu(x, diagonal: int = 0):
    return _tri("triu", x, diagonal)


# -- indexing -------------------------------------------------------------------------------

def _index_tensor(b, idx, what: str) -> TraceTensor:
    idx = _tensor(idx, b, what)
    if idx.dtype.kind != "int":
        raise b.error(f"{what}: indices must be an integer tensor, not {idx.dtype}")
    return idx


def gather(x, dim: int, index):
    """out[i][j] = x[index[i][j]][j] along dim (torch.gather); indices wrap modulo the dim."""
    b = _b()
    x = _tensor(x, b, "gather")
    index = _index_tensor(b, index, "gather")
    d = _dims(b, x, dim, "gather")[0]
    if index.ndim != x.ndim:
        raise b.error(f"gather: index has rank {index.ndim}, x has rank {x.ndim}")
    tile = _tile(b, index.ndim, index.dtype, index.type.shape, "gather")
    op = b.emit("gather", [x.value, index.value],
                [TensorType(x.dtype, _norm_shape(b, index.type.shape))], {"dim": d, "tile": tile})
    return _result(op)


def index_select(x, dim: int, index):
    """Slices of x along dim picked by a 1-D index; indices wrap modulo the dim."""
    b = _b()
    x = _tensor(x, b, "index_select")
    index = _index_tensor(b, index, "index_select")
    if index.ndim != 1:
        raise b.error("index_select: the index must be 1-D")
    d = _dims(b, x, dim, "index_select")[0]
    shape = list(_norm_shape(b, x.type.shape))
    shape[d] = index.dim(0)
    tile = _tile(b, x.ndim, x.dtype, shape, "index_select")
    op = b.emit("index_select", [x.value, index.value], [TensorType(x.dtype, tuple(shape))],
                {"dim": d, "tile": tile})
    return _result(op)


def scatter(x, dim: int, index, src, reduce: str | None = None):
    """A copy of x with src written at index along dim (torch.scatter); duplicates: the last
    write in row-major order wins; reduce='add' or 'multiply' accumulates instead."""
    b = _b()
    x = _tensor(x, b, "scatter")
    index = _index_tensor(b, index, "scatter")
    d = _dims(b, x, dim, "scatter")[0]
    if reduce not in (None, "add", "multiply"):
        raise b.error(f"scatter: reduce must be None, 'add' or 'multiply', not {reduce!r}")
    if index.ndim != x.ndim:
        raise b.error(f"scatter: index has rank {index.ndim}, x has rank {x.ndim}")
    operands = [x.value, index.value]
    attrs = {"dim": d, "reduce": reduce or "none"}
    if isinstance(src, TraceTensor):
        src = _tensor(src, b, "scatter")
        if src.dtype != x.dtype:
            raise b.error(f"scatter: src dtype {src.dtype} differs from x's {x.dtype}")
        operands.append(src.value)
    else:
        v = _scalar_value(src)
        if v is None:
            raise b.error("scatter: src must be a tensor or a scalar")
        attrs["value"] = v
    attrs["tile"] = _tile(b, x.ndim, x.dtype, x.type.shape, "scatter", strict=False)
    op = b.emit("scatter", operands, [TensorType(x.dtype, _norm_shape(b, x.type.shape))], attrs)
    return _result(op)


def index_add(x, dim: int, index, source, alpha=1):
    """A copy of x with alpha * source added at the 1-D index along dim (in index order)."""
    b = _b()
    x = _tensor(x, b, "index_add")
    index = _index_tensor(b, index, "index_add")
    source = _tensor(source, b, "index_add")
    d = _dims(b, x, dim, "index_add")[0]
    if index.ndim != 1:
        raise b.error("index_add: the index must be 1-D")
    if source.dtype != x.dtype:
        raise b.error(f"index_add: source dtype {source.dtype} differs from x's {x.dtype}")
    attrs = {"dim": d, "alpha": alpha,
             "tile": _tile(b, x.ndim, x.dtype, x.type.shape, "index_add", strict=False)}
    op = b.emit("index_add", [x.value, index.value, source.value],
                [TensorType(x.dtype, _norm_shape(b, x.type.shape))], attrs)
    return _result(op)


# -- creation -------------------------------------------------------------------------------

def full(size, fill_value, dtype: DType = F32, valid_shape=None, strict: bool = False):
    """A tensor of `size` filled with a scalar."""
    b = _b()
    dims = tuple(_dim_arg(s, b, "full size") for s in size)
    v = _scalar_value(fill_value)
    if v is None:
        raise b.error(f"full: fill value must be a number, not {type(fill_value).__name__}")
    tile = _tile(b, len(dims), dtype, dims, "full", strict=strict)
    op = b.emit("full", [], [TensorType(dtype, dims)], {"value": v, "tile": tile})
    return _with_valid(_result(op), valid_shape)


def full_like(t, value):
    return full([1] * t.ndim, value, t.dtype)


def arange(start, end=None, step=1, dtype: DType | None = None):
    """1-D [start, end) in steps of step (int64 for ints, float32 otherwise)."""
    b = _b()
    if end is None:
        start, end = 0, start
    for v in (start, end, step):
        if _scalar_value(v) is None:
            raise b.error("arange bounds must be numbers or symbolic scalars")
    s0, s1, st = _scalar_value(start), _scalar_value(end), _scalar_value(step)
    if dtype is None:
        dtype = F32 if any(isinstance(v, float) for v in (s0, s1, st)) else I64
    if any(isinstance(v, float) for v in (s0, s1, st)):
        if not all(isinstance(v, (int, float)) for v in (s0, s1, st)):
            raise b.error("arange with float bounds needs constant bounds")
        n = builtins.max(0, math.ceil((s1 - s0) / st))
    else:
        n = E.cdiv(E.sub(s1, s0), st)
    tile = _tile(b, 1, dtype, [n], "arange", strict=False)
    op = b.emit("arange", [], [TensorType(dtype, (n,))],
                {"start": s0, "step": st, "tile": tile})
    return _result(op)
