"""Tensor-mode frontend: trace a @pypto.jit kernel into a Tensor Graph document.

The kernel runs once on tracer tensors. Every op a tracer sees becomes a tensor-level op with
the op file's line and the tile shapes in force; writes to parameters become `assemble` ops.
Symbolic dims are Exprs; when two symbolic dims must agree (broadcasting, assembling) they are
unified and the constraint is kept for the runtime to check against real arrays.
"""
from __future__ import annotations

import dis
import inspect
import os
import sys

from .. import errors
from ..errors import CompileError
from ..ir import expr as E
from ..ir import ops as O
from ..ir.core import Document, Loc, Op, Value
from ..ir.types import DType, TensorType, dtype as _dtype

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _DimMarker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pypto.{self.name}"


DYNAMIC = _DimMarker("DYNAMIC")
DYN = DYNAMIC
STATIC = _DimMarker("STATIC")


class TensorSpec:
    """A parameter annotation: Tensor[[dims], dtype]."""

    def __init__(self, shape, dtype: DType):
        if not isinstance(shape, (list, tuple)):
            raise TypeError("Tensor[...] takes a list of dims and a dtype: Tensor[[N, 64], DT_FP32]")
        for d in shape:
            if not (isinstance(d, (int, str)) or d is DYNAMIC or d is STATIC):
                raise TypeError(f"bad dim {d!r}: use an int, pypto.DYNAMIC, pypto.STATIC or a name")
        if not isinstance(dtype, DType):
            raise TypeError(f"bad dtype {dtype!r}: use pypto.DT_FP32 and friends")
        self.shape, self.dtype = list(shape), dtype

    def __repr__(self) -> str:
        return f"Tensor[{self.shape!r}, {self.dtype!r}]"


class Tensor:
    """Annotation factory: ``pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32]``."""

    def __class_getitem__(cls, item):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("Tensor[...] takes a list of dims and a dtype: Tensor[[N, 64], DT_FP32]")
        return TensorSpec(*item)

    def __new__(cls, shape, dtype):
        return TensorSpec(shape, dtype)


# -- trace state ----------------------------------------------------------------------------

class _Builder:
    """Collects ops while a kernel traces; one per trace (not thread safe by design)."""

    def __init__(self, op_file: str):
        self.op_file = op_file
        self.regions: list[list[Op]] = [[]]
        self.vec_tile: list | None = None
        self.cube_tile: list | None = None
        self.subst: dict[str, E.Ex] = {}
        self.constraints: list = []
        self.access: dict[str, tuple] = {}      # param name -> ("read"|"write", loc) of 1st access
        self.written: set[str] = set()

    # locations: the innermost frame in the user's file
    def loc(self) -> Loc | None:
        f = sys._getframe(1)
        while f is not None:
            fn = os.path.abspath(f.f_code.co_filename)
            if not fn.startswith(_PKG_DIR + os.sep):
                return Loc(os.path.basename(fn), f.f_lineno)
            f = f.f_back
        return None

    def error(self, msg: str) -> CompileError:
        return CompileError(msg, self.loc())

    def emit(self, name: str, operands=(), result_types=(), attrs=None) -> Op:
        results = [Value(t) for t in result_types]
        op = Op(name, list(operands), results, dict(attrs or {}), [], self.loc())
        self.regions[-1].append(op)
        return op

    # symbolic dims
    def norm(self, e: E.Ex) -> E.Ex:
        return E.substitute(e, self.subst) if self.subst and isinstance(e, E.Expr) else e

    def same(self, a: E.Ex, b: E.Ex, what: str) -> E.Ex:
        """Require two dims to be equal; unify symbols (checked again when sizes are bound)."""
        a, b = self.norm(a), self.norm(b)
        if a == b:
            return a
        if isinstance(a, int) and isinstance(b, int):
            raise self.error(f"{what}: {a} != {b}")
        # eliminate a bare symbol (preferably the later operand's) in favour of the other side
        if isinstance(b, E.Expr) and b.op == "sym":
            drop, keep = b, a
        elif isinstance(a, E.Expr) and a.op == "sym":
            drop, keep = a, b
        else:
            raise self.error(f"{what}: cannot show {E.to_str(a)} == {E.to_str(b)}")
        self.subst[drop.args[0]] = keep
        for k, v in list(self.subst.items()):
            self.subst[k] = E.substitute(v, self.subst)
        self.constraints.append([drop.args[0], keep])
        return keep

    def note_access(self, t: "TraceTensor", mode: str) -> None:
        if t.param is None:
            return
        loc = self.loc()
        first = self.access.setdefault(t.param, (mode, loc))
        if mode == "write":
            if first[0] == "read":
                where = f" (read at line {first[1].line})" if first[1] else ""
                raise CompileError(f"writing input '{t.param}'{where}: a parameter read before it "
                                   f"is written is an input; write results into an output "
                                   f"parameter instead", loc)
            self.written.add(t.param)


_current: list[_Builder] = []


def _b() -> _Builder:
    if not _current:
        raise CompileError("pypto ops can only be used inside a @pypto.jit kernel while it traces")
    return _current[-1]


# -- symbolic scalars -----------------------------------------------------------------------

class SymScalar:
    """A symbolic integer at trace time (x.shape[i] on a symbolic dim, loop indices)."""

    __slots__ = ("e",)

    def __init__(self, e: E.Ex):
        self.e = e

    def __repr__(self) -> str:
        return f"SymScalar({E.to_str(self.e)})"

    def _bin(self, other, fn, swap=False):
        o = _scalar_expr(other)
        if o is None:
            return NotImplemented
        r = fn(o, self.e) if swap else fn(self.e, o)
        return r if isinstance(r, int) else SymScalar(r)

    def __add__(self, o): return self._bin(o, E.add)
    def __radd__(self, o): return self._bin(o, E.add, True)
    def __sub__(self, o): return self._bin(o, E.sub)
    def __rsub__(self, o): return self._bin(o, E.sub, True)
    def __mul__(self, o): return self._bin(o, E.mul)
    def __rmul__(self, o): return self._bin(o, E.mul, True)
    def __floordiv__(self, o): return self._bin(o, E.floordiv)
    def __rfloordiv__(self, o): return self._bin(o, E.floordiv, True)
    def __mod__(self, o): return self._bin(o, E.mod)
    def __rmod__(self, o): return self._bin(o, E.mod, True)
    def __neg__(self): return SymScalar(E.mul(self.e, -1))
    def __lt__(self, o): return self._bin(o, E.lt)
    def __le__(self, o): return self._bin(o, E.le)
    def __gt__(self, o): return self._bin(o, E.lt, True)
    def __ge__(self, o): return self._bin(o, E.le, True)
    def __eq__(self, o): return self._bin(o, E.eq)
    def __ne__(self, o): return self._bin(o, E.ne)
    __hash__ = None

    def min(self, o):
        r = E.minimum(self.e, _scalar_expr(o))
        return r if isinstance(r, int) else SymScalar(r)

    def max(self, o):
        r = E.maximum(self.e, _scalar_expr(o))
        return r if isinstance(r, int) else SymScalar(r)

    def __index__(self):
        raise _b().error(f"symbolic value {E.to_str(self.e)} used where a Python int is needed "
                         f"(its size is only known at run time)")

    __int__ = __index__

    def __bool__(self):
        raise _b().error(f"symbolic condition {E.to_str(self.e)} used as a Python bool: its value "
                         f"is only known at run time")


def _scalar_expr(v) -> E.Ex | None:
    if isinstance(v, SymScalar):
        return v.e
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if hasattr(v, "__index__") and not isinstance(v, float) and type(v).__name__.startswith("int"):
        return int(v)
    return None


def _dim_out(e: E.Ex):
    return e if isinstance(e, int) else SymScalar(e)


# -- tracer tensors -------------------------------------------------------------------------

class TraceTensor:
    """A tensor value while a kernel traces. Parameters are memory: reads see earlier writes."""

    __array_priority__ = 1000    # make numpy scalars defer to our operators

    def __init__(self, value: Value, param: str | None = None, valid=None):
        self.value = value
        self.param = param
        self.valid = valid

    @property
    def type(self) -> TensorType:
        return self.value.type

    @property
    def dtype(self) -> DType:
        return self.value.type.dtype

    @property
    def shape(self) -> tuple:
        b = _b()
        return tuple(_dim_out(b.norm(d)) for d in self.value.type.shape)

    @property
    def ndim(self) -> int:
        return self.value.type.rank

    def dim(self, i: int) -> E.Ex:
        return _b().norm(self.value.type.shape[i])

    def __repr__(self) -> str:
        return f"<traced tensor {self.value.type}{' ' + self.param if self.param else ''}>"

    def __bool__(self):
        raise _b().error("a tensor has no truth value at trace time")

    def __len__(self):
        d = self.dim(0)
        if isinstance(d, int):
            return d
        raise _b().error("len() of a tensor with a symbolic first dim; use x.shape[0]")

    def __iter__(self):
        raise _b().error("iterating over a tensor is not supported; slice it or use pypto.loop")

    # arithmetic
    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __truediv__(self, o): return div(self, o)
    def __rtruediv__(self, o): return div(o, self)
    def __neg__(self): return neg(self)
    def __matmul__(self, o):
        raise _b().error("use pypto.matmul(a, b, out_dtype) rather than @ (the output dtype is "
                         "part of a matmul)")

    # methods mirroring the functions
    def exp(self): return exp(self)
    def log(self): return log(self)
    def sqrt(self): return sqrt(self)
    def rsqrt(self): return rsqrt(self)
    def abs(self): return abs_(self)
    def sum(self, dim=None, keepdim=False): return sum(self, dim, keepdim)
    def amax(self, dim=None, keepdim=False): return amax(self, dim, keepdim)
    def amin(self, dim=None, keepdim=False): return amin(self, dim, keepdim)
    def cast(self, dtype): return cast(self, dtype)

    # views and writes
    def __getitem__(self, key):
        offsets, shape = _slice_key(self, key)
        return view(self, shape, offsets)

    def __setitem__(self, key, value):
        offsets, shape = _slice_key(self, key)
        b = _b()
        if not isinstance(value, TraceTensor):
            raise b.error(f"only tensors can be written into {self.param or 'a tensor'} "
                          f"(got {type(value).__name__})")
        if value.ndim != len(shape):
            raise b.error(f"cannot write a rank-{value.ndim} tensor into a rank-{len(shape)} "
                          f"region of {self.param or 'a tensor'}")
        for i, (d, s) in enumerate(zip(value.type.shape, shape)):
            b.same(d, s, f"writing {value.type} into region {_fmt_shape(shape)} of "
                         f"{self.param or 'a tensor'}: dim {i} differs")
        assemble(value, offsets, self)


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(E.to_str(d) for d in shape) + "]"


def _slice_key(t: TraceTensor, key) -> tuple[list, list]:
    b = _b()
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = t.ndim - (len(key) - 1)
        key = key[:i] + (slice(None),) * fill + key[i + 1:]
    if len(key) > t.ndim:
        raise b.error(f"too many indices ({len(key)}) for a rank-{t.ndim} tensor")
    key = key + (slice(None),) * (t.ndim - len(key))
    offsets, shape = [], []
    for i, k in enumerate(key):
        dim = t.dim(i)
        if not isinstance(k, slice):
            raise b.error("integer and tensor indexing are not supported; use slices "
                          "such as x[i:i+1, :]")
        if k.step not in (None, 1):
            raise b.error("slices with a step are not supported")
        lo = 0 if k.start is None else _index(k.start, dim, b)
        hi = dim if k.stop is None else _index(k.stop, dim, b)
        offsets.append(lo)
        shape.append(E.sub(hi, lo))
    return offsets, shape


def _index(v, dim, b) -> E.Ex:
    e = _scalar_expr(v)
    if e is None:
        raise b.error(f"slice bound must be an int or a symbolic scalar, not {type(v).__name__}")
    if isinstance(e, int) and e < 0:
        e = E.add(dim, e)
    return e


# -- op helpers -----------------------------------------------------------------------------

def _as_tensor(x, b: _Builder, what: str) -> TraceTensor:
    if isinstance(x, TraceTensor):
        if x.param is not None:
            b.note_access(x, "read")
        return x
    raise b.error(f"{what} expects a tensor, got {type(x).__name__}")


def _check_tile(b: _Builder, rank: int, dt: DType, shape, opname: str) -> list:
    tile = b.vec_tile
    if tile is None:
        raise b.error(f"{opname}: no vector tile shape in force; call "
                      f"pypto.set_vec_tile_shapes(...) before this op")
    if len(tile) != rank:
        raise b.error(f"{opname}: tile shape {tuple(tile)} has rank {len(tile)} but the operand "
                      f"has rank {rank}; give one tile size per dim")
    last, full = tile[-1], shape[-1] if shape else None
    if last * dt.itemsize % 32 and not (isinstance(full, int) and last >= full):
        per = 32 // dt.itemsize if 32 % dt.itemsize == 0 else 32
        raise b.error(f"tile shape {tuple(tile)} is not 32-byte aligned in dim {rank - 1} "
                      f"({last} x {dt.itemsize} B = {last * dt.itemsize} B); use a multiple of "
                      f"{per} elements for {dt}")
    return list(tile)


def _broadcast(b: _Builder, sa, sb, what: str) -> list:
    out = []
    n = max(len(sa), len(sb))
    pa = [1] * (n - len(sa)) + list(sa)
    pb = [1] * (n - len(sb)) + list(sb)
    for i, (x, y) in enumerate(zip(pa, pb)):
        x, y = b.norm(x), b.norm(y)
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        else:
            out.append(b.same(x, y, f"{what}: shapes {_fmt_shape(sa)} and {_fmt_shape(sb)} do "
                                    f"not broadcast in dim {i}"))
    return out


def _scalar_attr(v, b: _Builder):
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, SymScalar):
        return v.e
    if type(v).__module__ == "numpy" and hasattr(v, "item"):
        return v.item()
    return None


def _unary(name: str, x) -> TraceTensor:
    b = _b()
    x = _as_tensor(x, b, name)
    d = O.UNARY[name]
    if x.dtype.kind not in d.kinds:
        raise b.error(f"{name} takes {' or '.join(d.kinds)} tensors, not {x.dtype}")
    tile = _check_tile(b, x.ndim, x.dtype, x.type.shape, name)
    op = b.emit(name, [x.value], [TensorType(x.dtype, tuple(b.norm(s) for s in x.type.shape))],
                {"tile": tile})
    return TraceTensor(op.result, valid=x.valid)


def _binary(name: str, x, y) -> TraceTensor:
    b = _b()
    d = O.BINARY[name]
    if not isinstance(x, TraceTensor) and not isinstance(y, TraceTensor):
        raise b.error(f"{name} needs at least one tensor operand")
    if isinstance(x, TraceTensor) and isinstance(y, TraceTensor):
        _as_tensor(x, b, name), _as_tensor(y, b, name)
        if x.dtype != y.dtype:
            raise b.error(f"{name}: dtype mismatch {x.dtype} vs {y.dtype}; convert one with "
                          f"pypto.cast(t, dtype)")
        shape = _broadcast(b, x.type.shape, y.type.shape, name)
        dt, operands, attrs = x.dtype, [x.value, y.value], {}
        valid = x.valid or y.valid
    else:
        t, s, side = (x, y, "rhs") if isinstance(x, TraceTensor) else (y, x, "lhs")
        _as_tensor(t, b, name)
        sv = _scalar_attr(s, b)
        if sv is None:
            raise b.error(f"{name}: cannot combine a tensor with {type(s).__name__}")
        shape, dt, operands = list(t.type.shape), t.dtype, [t.value]
        attrs = {"scalar": sv, "scalar_side": side}
        valid = t.valid
    if dt.kind not in d.kinds:
        raise b.error(f"{name} takes {' or '.join(d.kinds)} tensors, not {dt}")
    attrs["tile"] = _check_tile(b, len(shape), dt, shape, name)
    op = b.emit(name, operands, [TensorType(dt, tuple(b.norm(s) for s in shape))], attrs)
    return TraceTensor(op.result, valid=valid)


def _reduce(name: str, x, dim, keepdim: bool) -> TraceTensor:
    b = _b()
    x = _as_tensor(x, b, name)
    if dim is None:
        dims = list(range(x.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    norm = []
    for d in dims:
        if not isinstance(d, int) or not -x.ndim <= d < x.ndim:
            raise b.error(f"{name}: dim {d!r} out of range for a rank-{x.ndim} tensor")
        norm.append(d % x.ndim)
    norm = sorted(set(norm))
    tile = _check_tile(b, x.ndim, x.dtype, x.type.shape, name)
    shape = [1 if i in norm else b.norm(s) for i, s in enumerate(x.type.shape)]
    if not keepdim:
        shape = [s for i, s in enumerate(shape) if i not in norm]
    op = b.emit(name, [x.value], [TensorType(x.dtype, tuple(shape))],
                {"dims": norm, "keepdim": bool(keepdim), "tile": tile})
    return TraceTensor(op.result)


# -- public ops -----------------------------------------------------------------------------

def add(a, b): return _binary("add", a, b)
def sub(a, b): return _binary("sub", a, b)
def mul(a, b): return _binary("mul", a, b)
def div(a, b): return _binary("div", a, b)
def maximum(a, b): return _binary("maximum", a, b)
def minimum(a, b): return _binary("minimum", a, b)
def neg(x): return _unary("neg", x)
def exp(x): return _unary("exp", x)
def log(x): return _unary("log", x)
def sqrt(x): return _unary("sqrt", x)
def rsqrt(x): return _unary("rsqrt", x)
def abs_(x): return _unary("abs", x)
def tanh(x): return _unary("tanh", x)
def sigmoid(x): return _unary("sigmoid", x)
def relu(x): return _unary("relu", x)
def sum(x, dim=None, keepdim=False): return _reduce("sum", x, dim, keepdim)  # noqa: A001
def amax(x, dim=None, keepdim=False): return _reduce("amax", x, dim, keepdim)
def amin(x, dim=None, keepdim=False): return _reduce("amin", x, dim, keepdim)


def cast(x, dtype: DType) -> TraceTensor:
    b = _b()
    x = _as_tensor(x, b, "cast")
    if not isinstance(dtype, DType):
        raise b.error(f"cast: bad dtype {dtype!r}; use pypto.DT_FP16 and friends")
    # the tile must be aligned for both the source and the destination element size
    small = x.dtype if x.dtype.itemsize <= dtype.itemsize else dtype
    tile = _check_tile(b, x.ndim, small, x.type.shape, "cast")
    op = b.emit("cast", [x.value], [TensorType(dtype, tuple(b.norm(s) for s in x.type.shape))],
                {"dtype": dtype.name, "tile": tile})
    return TraceTensor(op.result, valid=x.valid)


def matmul(a, b_, out_dtype: DType, a_trans: bool = False, b_trans: bool = False) -> TraceTensor:
    b = _b()
    a = _as_tensor(a, b, "matmul")
    b_ = _as_tensor(b_, b, "matmul")
    if a.ndim != 2 or b_.ndim != 2:
        raise b.error(f"matmul takes 2-D operands here, got ranks {a.ndim} and {b_.ndim}")
    if a_trans or b_trans:
        raise b.error("matmul with a_trans/b_trans is not supported yet")
    if a.dtype != b_.dtype:
        raise b.error(f"matmul: operand dtypes differ ({a.dtype} vs {b_.dtype})")
    if not isinstance(out_dtype, DType):
        raise b.error(f"matmul: out_dtype must be a pypto dtype, got {out_dtype!r}")
    if b.cube_tile is None:
        raise b.error("matmul needs cube tile shapes: call pypto.set_cube_tile_shapes(m, k, n) "
                      "before it")
    m, k = a.type.shape
    k2, n = b_.type.shape
    b.same(k, k2, f"matmul: inner dims differ ({_fmt_shape(a.type.shape)} @ "
                  f"{_fmt_shape(b_.type.shape)})")
    op = b.emit("matmul", [a.value, b_.value], [TensorType(out_dtype, (b.norm(m), b.norm(n)))],
                {"out_dtype": out_dtype.name, "cube": [list(t) for t in b.cube_tile]})
    return TraceTensor(op.result)


def view(t, shape, offsets, valid_shape=None) -> TraceTensor:
    b = _b()
    t = _as_tensor(t, b, "view")
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
    valid = None
    if valid_shape is not None:
        valid = [_dim_arg(v, b, "valid_shape") for v in valid_shape]
        if len(valid) != t.ndim:
            raise b.error(f"valid_shape needs {t.ndim} entries")
        attrs["valid"] = valid
    op = b.emit("view", [t.value], [TensorType(t.dtype, tuple(shape))], attrs)
    return TraceTensor(op.result, valid=valid)


def _dim_arg(v, b: _Builder, what: str) -> E.Ex:
    e = _scalar_expr(v)
    if e is None:
        raise b.error(f"{what} must be an int or a symbolic scalar, not {type(v).__name__}")
    return b.norm(e)


def assemble(src, offsets, dst) -> None:
    b = _b()
    src = _as_tensor(src, b, "assemble")
    if not isinstance(dst, TraceTensor) or dst.param is None:
        raise b.error("assemble writes into a kernel parameter (an output tensor)")
    offsets = [_dim_arg(o, b, "assemble offset") for o in offsets]
    if len(offsets) != dst.ndim or src.ndim != dst.ndim:
        raise b.error(f"assemble: a rank-{src.ndim} source into a rank-{dst.ndim} destination "
                      f"with {len(offsets)} offsets")
    if src.dtype != dst.dtype:
        raise b.error(f"assemble: source dtype {src.dtype} differs from {dst.param}'s {dst.dtype}; "
                      f"cast it first")
    for i, (o, s, d) in enumerate(zip(offsets, src.type.shape, dst.type.shape)):
        end = E.add(o, s)
        if isinstance(end, int) and isinstance(d, int) and end > d and src.valid is None:
            raise b.error(f"assemble writes [{E.to_str(o)}:{end}] in dim {i} of {dst.param}, "
                          f"which has size {d}")
    b.note_access(dst, "write")
    attrs = {"offsets": offsets}
    if b.vec_tile is not None and len(b.vec_tile) == src.ndim:
        attrs["tile"] = list(b.vec_tile)
    b.emit("assemble", [src.value, dst.value], [], attrs)


def set_vec_tile_shapes(*dims) -> None:
    b = _b()
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise b.error(f"set_vec_tile_shapes takes positive ints, got {dims!r}")
    b.vec_tile = list(dims)


def get_vec_tile_shapes() -> tuple:
    return tuple(_b().vec_tile or ())


def set_cube_tile_shapes(m, k, n, enable_split_k: bool = False) -> None:
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
    if enable_split_k:
        raise b.error("set_cube_tile_shapes: enable_split_k is not supported yet")
    b.cube_tile = out


# -- kernels --------------------------------------------------------------------------------

class Kernel:
    """A @pypto.jit kernel: traceable into a Tensor Graph, callable with numpy arrays."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = dict(options)     # backend, target, threads
        self.compiles = 0                # artifacts built so far (tests check the cache)
        self.last_run = None
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        sig = inspect.signature(fn)
        self.tensor_params: list[tuple[str, TensorSpec]] = []
        self.const_params: list[inspect.Parameter] = []
        for p in sig.parameters.values():
            ann = p.annotation
            if isinstance(ann, TensorSpec):
                if self.const_params:
                    raise TypeError(f"{self.name}: tensor parameter {p.name!r} after a "
                                    f"non-tensor parameter; tensors come first")
                self.tensor_params.append((p.name, ann))
            else:
                self.const_params.append(p)
        self._cache: dict = {}

    def __repr__(self) -> str:
        return f"<pypto kernel {self.name}>"

    def trace(self, consts: dict | None = None, static: dict | None = None) -> Document:
        return trace_kernel(self, consts or {}, static or {})

    def __call__(self, *args, **kwargs):
        from .jit import call_kernel
        return call_kernel(self, args, kwargs)


def jit(fn=None, **options):
    """Decorator: @pypto.jit or @pypto.jit(...) marks a Tensor-mode kernel."""
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn)


def trace_kernel(k: Kernel, consts: dict, static: dict) -> Document:
    """Run the kernel on tracer tensors and return its Tensor Graph document."""
    op_file = os.path.basename(inspect.getsourcefile(k.fn) or "<unknown>")
    b = _Builder(op_file)
    args, symbols, params = [], {}, []
    for idx, (pname, spec) in enumerate(k.tensor_params):
        shape = []
        for axis, d in enumerate(spec.shape):
            if isinstance(d, int):
                shape.append(d)
                continue
            sname = d if isinstance(d, str) else f"{pname}_{axis}"
            if d is STATIC:
                if sname not in static:
                    raise CompileError(f"{pname} dim {axis} is STATIC: give its size "
                                       f"(--bind {sname}=N)")
                shape.append(int(static[sname]))
                symbols.setdefault(sname, {"kind": "static", "value": int(static[sname]),
                                           "dims": []})["dims"].append([pname, axis])
                continue
            kind = "named" if isinstance(d, str) else "dynamic"
            symbols.setdefault(sname, {"kind": kind, "dims": []})["dims"].append([pname, axis])
            shape.append(E.sym(sname))
        v = Value(TensorType(spec.dtype, tuple(shape)), pname)
        op = Op("param", [], [v], {"index": idx}, [], None)
        b.regions[0].append(op)
        params.append(op)
        args.append(TraceTensor(v, param=pname))
    const_vals = _bind_consts(k, consts)
    _current.append(b)
    try:
        k.fn(*args, **const_vals)
    except CompileError:
        raise
    except RecursionError:
        raise CompileError(f"{k.name}: tracing recursed too deeply") from None
    except errors.PyptoError:
        raise
    except Exception as exc:
        raise CompileError(f"{k.name} raised {type(exc).__name__} while tracing: {exc}",
                           _user_loc(exc)) from None
    finally:
        _current.pop()
    for p in params:
        name = p.result.name
        p.attrs["role"] = "output" if name in b.written else "input"
    _warn_rebound(k, b)
    doc = Document("tensor", b.regions[0])
    _normalise(doc, b)
    doc.attrs = {"kernel": k.name, "file": op_file,
                 "params": [p.result.name for p in params],
                 "symbols": symbols, "constraints": b.constraints,
                 "consts": {n: v for n, v in const_vals.items() if _is_plain(v)}}
    return doc


def _is_plain(v) -> bool:
    return isinstance(v, (int, float, str, bool)) or v is None


def _bind_consts(k: Kernel, consts: dict) -> dict:
    out = {}
    known = {p.name for p in k.const_params}
    for name in consts:
        if name not in known:
            raise errors.UsageError(f"{k.name} has no constant parameter {name!r} "
                                    f"(constants: {', '.join(sorted(known)) or 'none'})")
    for p in k.const_params:
        if p.name in consts:
            out[p.name] = consts[p.name]
        elif p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
        else:
            raise errors.UsageError(f"{k.name}: constant parameter {p.name!r} has no default; "
                                    f"give it with --const {p.name}=VALUE")
    return out


def _user_loc(exc: BaseException) -> Loc | None:
    tb, loc = exc.__traceback__, None
    while tb is not None:
        fn = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not fn.startswith(_PKG_DIR + os.sep):
            loc = Loc(os.path.basename(fn), tb.tb_lineno)
        tb = tb.tb_next
    return loc


def _warn_rebound(k: Kernel, b: _Builder) -> None:
    """Warn about `y = expr` on a tensor parameter: it rebinds the name and writes nothing."""
    names = {n for n, _ in k.tensor_params}
    line = None
    for ins in dis.get_instructions(k.fn):
        if ins.starts_line is not None:
            line = ins.starts_line
        if ins.opname in ("STORE_FAST", "STORE_NAME") and ins.argval in names \
                and ins.argval not in b.written:
            errors.warn(f"assigning to parameter '{ins.argval}' rebinds the name and writes "
                        f"nothing; write into it with {ins.argval}[:] = ...",
                        Loc(b.op_file, line) if line else None)


def _normalise(doc: Document, b: _Builder) -> None:
    """Apply the final symbol unification to every type and attribute."""
    if not b.subst:
        return
    for op in doc.walk():
        for v in op.results:
            t = v.type
            if isinstance(t, TensorType):
                v.type = TensorType(t.dtype, tuple(b.norm(d) for d in t.shape))
        op.attrs = _subst_attr(op.attrs, b)


def _subst_attr(a, b):
    if isinstance(a, dict):
        return {k: _subst_attr(v, b) for k, v in a.items()}
    if isinstance(a, list):
        return [_subst_attr(v, b) for v in a]
    return b.norm(a) if isinstance(a, E.Expr) else a


def find_kernels(module) -> list[Kernel]:
    return [v for v in vars(module).values() if isinstance(v, Kernel)]


DT_FP32, DT_FP16, DT_BF16 = _dtype("f32"), _dtype("f16"), _dtype("bf16")
DT_INT8, DT_INT16, DT_INT32, DT_INT64 = _dtype("i8"), _dtype("i16"), _dtype("i32"), _dtype("i64")
DT_UINT8, DT_BOOL = _dtype("u8"), _dtype("bool")

