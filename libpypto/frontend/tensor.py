"""Tensor-mode tracing state: the per-path builder, symbolic scalars, loops, traced tensors.

The kernel runs on tracer tensors. Every op a tracer sees becomes a tensor-level op with the
op file's line and the tile shapes in force; writes to parameters and local tensors become
`assemble` ops. Symbolic dims are Exprs; when two symbolic dims must agree (broadcasting,
assembling) they are unified and the constraint is kept for the runtime to check.

Control flow: `for i in pypto.loop(n)` records a loop region traced once with a symbolic
index. A Python `if` on a symbolic condition is a runtime branch: the kernel is traced once per
combination of branch outcomes (a "path"), and the paths are merged back into one graph with
`if` regions at the points where they part.
"""
from __future__ import annotations

import os
import sys

from ..errors import CompileError, warn
from ..ir import expr as E
from ..ir.core import Loc, Op, Value
from ..ir.symops import SymOps, int_expr
from ..ir.types import DType, TensorType, dtype as _dtype

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_PATHS = 256


class _DimMarker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pypto.{self.name}"


DYNAMIC = _DimMarker("DYNAMIC")
DYN = DYNAMIC
STATIC = _DimMarker("STATIC")


class TensorSpec:
    """A parameter annotation: Tensor[[dims], dtype] or Tensor([dims], dtype).

    As in the reference, the shape may come from the argument: `Tensor()` (shape and dtype),
    `Tensor([], dtype)` (every dim) and `Tensor([d0, ...], dtype)` (the dims the Ellipsis
    stands for). Such dims are STATIC: specialised per value (resolve() makes the spec of a
    call's argument); tracing without arguments (an op file on the command line) needs them
    written out."""

    def __init__(self, shape=None, dtype: DType | None = None):
        if shape is not None and not isinstance(shape, (list, tuple)):
            raise TypeError("Tensor[...] takes a list of dims and a dtype: Tensor[[N, 64], DT_FP32]")
        for d in shape or ():
            if not (isinstance(d, (int, str)) or d is DYNAMIC or d is STATIC or d is Ellipsis):
                raise TypeError(f"bad dim {d!r}: use an int, pypto.DYNAMIC, pypto.STATIC or a name")
        if shape is not None and list(shape).count(Ellipsis) > 1:
            raise TypeError("Tensor([...]): at most one ... in a shape")
        if dtype is not None and not isinstance(dtype, DType):
            raise TypeError(f"bad dtype {dtype!r}: use pypto.DT_FP32 and friends")
        self.shape = None if shape is None or len(shape) == 0 else list(shape)
        self.dtype = dtype

    @property
    def open(self) -> bool:
        """True when the shape or dtype comes from the argument."""
        return self.shape is None or Ellipsis in self.shape or self.dtype is None

    def resolve(self, ndim: int, dtype: DType) -> "TensorSpec":
        """The spec for an argument of ndim dims and dtype: open dims become STATIC."""
        if not self.open:
            return self
        shape = self.shape if self.shape is not None else [Ellipsis]
        fixed = [d for d in shape if d is not Ellipsis]
        if len(fixed) > ndim:
            raise TypeError(f"{self!r} has more dims than the {ndim}-D argument")
        if Ellipsis in shape:
            i = shape.index(Ellipsis)
            shape = shape[:i] + [STATIC] * (ndim - len(fixed)) + shape[i + 1:]
        return TensorSpec(shape, self.dtype or dtype)

    def __repr__(self) -> str:
        return f"Tensor[{self.shape!r}, {self.dtype!r}]"


class Tensor:
    """Annotation factory: ``pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32]``."""

    def __class_getitem__(cls, item):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("Tensor[...] takes a list of dims and a dtype: Tensor[[N, 64], DT_FP32]")
        return TensorSpec(*item)

    def __new__(cls, shape=None, dtype=None):
        return TensorSpec(shape, dtype)


# -- trace state ----------------------------------------------------------------------------

class _Builder:
    """Collects the ops of one path while a kernel traces (one per path)."""

    def __init__(self, op_file: str, decisions: list, target):
        self.op_file = op_file
        self.target = target                    # the tile checks' machine (a Target)
        self.regions: list[list[Op]] = [[]]
        self.loops: list[Op] = []              # enclosing loop ops, outermost first
        self.loop_info: dict[str, dict] = {}   # loop var -> its attrs
        self.vec_tile: list | None = None
        self.cube_tile: list | None = None
        self.split_k = False                    # set_cube_tile_shapes(enable_split_k=)
        self.subst: dict[str, E.Ex] = {}
        self.constraints: list = []
        self.access: dict[str, tuple] = {}     # memory name -> (first access, loc, in loop)
        self.written: set[str] = set()
        self.decisions = decisions
        self.nbranch = 0
        self.nloops = 0
        self.nlocals = 0
        self.read_vars: set[str] = set()       # variables of data-dependent reads
        self.carries: dict[str, int] = {}      # loop var -> loop-carried locals made (move)
        self.label: str | None = None          # set_semantic_label's current label
        self.scope: list | None = None         # sg_set_scope's [id, cross] (passopts.py)
        self.scopes: dict = {}                 # scope id -> its [id, cross]
        self.pass_options: list = []           # pass options set in the kernel (passopts)
        self.print_after: list = []            # passes whose result to print (KEY_DUMP_GRAPH)

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

    def emit(self, name: str, operands=(), result_types=(), attrs=None, regions=None) -> Op:
        results = [Value(t) for t in result_types]
        attrs = dict(attrs or {})
        if self.label is not None:
            attrs["label"] = self.label
        if self.scope is not None:
            attrs["scope"] = list(self.scope)
        op = Op(name, list(operands), results, attrs, list(regions or []), self.loc())
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
        if isinstance(b, E.Expr) and b.op == "sym" and not self.bound_var(b.args[0]):
            drop, keep = b, a
        elif isinstance(a, E.Expr) and a.op == "sym" and not self.bound_var(a.args[0]):
            drop, keep = a, b
        else:
            raise self.error(f"{what}: cannot show {E.to_str(a)} == {E.to_str(b)}")
        self.subst[drop.args[0]] = keep
        for k, v in list(self.subst.items()):
            self.subst[k] = E.substitute(v, self.subst)
        self.constraints.append([drop.args[0], keep])
        return keep

    def bound_var(self, name: str) -> bool:
        """A loop index or a read's variable: a value per iteration, never unified away."""
        return name in self.loop_info or name in self.read_vars

    def note_access(self, t: "TraceTensor", mode: str) -> None:
        name = t.memory
        if name is None:
            return
        loc = self.loc()
        first = self.access.setdefault(name, (mode, loc, bool(self.loops)))
        if mode == "write":
            if first[0] == "read" and t.is_param:
                where = f" (read at line {first[1].line})" if first[1] else ""
                raise CompileError(f"writing input '{name}'{where}: a parameter read before it "
                                   f"is written is an input; write results into an output "
                                   f"parameter instead", loc)
            self.written.add(name)
        elif first[0] == "read" and not t.is_param and not first[2]:
            raise CompileError(f"reading local tensor '{name}' before anything is written into "
                               f"it (its contents are undefined); assemble into it first", loc)

    # control flow
    def decide(self, cond: E.Ex) -> bool:
        """The outcome of a runtime branch on this path (recorded as a branch marker)."""
        i = self.nbranch
        self.nbranch += 1
        if i < len(self.decisions):
            taken = self.decisions[i]
        else:
            taken = True
            self.decisions.append(True)
        self.emit("branch", attrs={"cond": cond, "taken": taken, "id": i})
        return taken


_current: list[_Builder] = []


def _b() -> _Builder:
    if not _current:
        raise CompileError("pypto ops can only be used inside a @pypto.jit kernel while it traces")
    return _current[-1]


def builder() -> _Builder:
    return _b()


_WARNED: set = set()


def new_trace() -> None:
    """Warnings are once per op-file line and message within one trace (all its paths)."""
    _WARNED.clear()


def unsupported(what: str, note: str = "", error: bool = False) -> None:
    """A keyword or option of the reference that pypto does not implement: an error, or one
    warning per op-file line (never silently dropped)."""
    b = _current[-1] if _current else None
    msg = f"{what} is not implemented by pypto" + (f": {note}" if note else "")
    if error:
        raise (b.error(msg) if b else CompileError(msg))
    loc = b.loc() if b else None
    key = (msg, str(loc))
    if key not in _WARNED:
        _WARNED.add(key)
        warn(msg + " (ignored)", loc)


# -- symbolic scalars -----------------------------------------------------------------------

class SymScalar(SymOps):
    """A symbolic integer at trace time (x.shape[i] on a symbolic dim, loop indices)."""

    __slots__ = ("e",)

    def __init__(self, e: E.Ex):
        self.e = e

    def __repr__(self) -> str:
        return f"SymScalar({E.to_str(self.e)})"

    def _operand(self, other):
        return scalar_expr(other)

    def _result(self, e):
        return e if isinstance(e, int) else SymScalar(e)

    def _unary(self, e):
        return SymScalar(e)

    def min(self, o):
        r = E.minimum(self.e, scalar_expr(o))
        return r if isinstance(r, int) else SymScalar(r)

    def max(self, o):
        r = E.maximum(self.e, scalar_expr(o))
        return r if isinstance(r, int) else SymScalar(r)

    # the reference's SymbolicScalar queries
    def is_concrete(self) -> bool:
        """True when the value is known at trace time (an int)."""
        return isinstance(self.e, int)

    is_immediate = is_concrete

    def concrete(self) -> int:
        if not isinstance(self.e, int):
            raise _b().error(f"{E.to_str(self.e)} is only known at run time")
        return self.e

    def is_symbol(self) -> bool:
        """A bare symbol (a dim or a loop index), not an expression of one."""
        return isinstance(self.e, E.Expr) and self.e.op == "sym"

    def is_expression(self) -> bool:
        return isinstance(self.e, E.Expr) and self.e.op != "sym"

    def as_variable(self) -> "SymScalar":
        """The reference names an expression as a runtime variable; here it is the same
        scalar (expressions are evaluated where they are used)."""
        return self

    def __index__(self):
        raise _b().error(f"symbolic value {E.to_str(self.e)} used where a Python int is needed "
                         f"(its value is only known at run time)")

    __int__ = __index__

    def __float__(self):
        raise _b().error(f"symbolic value {E.to_str(self.e)} used where a Python float is needed")

    def __bool__(self):
        return _b().decide(self.e)


def scalar_expr(v) -> E.Ex | None:
    return int_expr(v, SymScalar)


def read_scalar(t: "TraceTensor", index: list) -> SymScalar:
    """`t[i, j]` with one integer or symbolic index per dim on an integer input parameter:
    the element, read when the kernel runs (the reference's data-dependent scalars, e.g.
    `kv_act_seqs[b]` or `block_table[b, j]`), usable as a loop bound, an offset or a valid
    size, or in a condition. The runtime reads it per loop iteration from the caller's array
    before any task that uses it is launched; an index outside the tensor is an error."""
    b = _b()
    if not t.is_param or t.base is not None or t.dtype.kind != "int":
        raise b.error(f"{t.memory or 'this tensor'}[...] with an index per dim reads one "
                      f"element at run time, which works on the kernel's integer input "
                      f"parameters only (this is {t.type}); use pypto.view for a sub-tensor")
    if t.memory in b.written:
        raise b.error(f"reading {t.memory}[...] after the kernel writes {t.memory}: a tensor "
                      f"read at run time must be an input")
    exprs = [b.norm(scalar_expr(i)) for i in index]
    b.note_access(t, "read")
    var = f"r{len(b.read_vars)}"
    b.read_vars.add(var)
    b.emit("read", attrs={"param": t.memory, "index": exprs, "var": var})
    return SymScalar(E.sym(var))


def _dim_out(e: E.Ex):
    return e if isinstance(e, int) else SymScalar(e)


def cond(c) -> bool:
    """`if pypto.cond(expr):` -- a runtime branch on a symbolic condition (a plain bool passes)."""
    if isinstance(c, SymScalar):
        return bool(c)
    if isinstance(c, (bool, int)):
        return bool(c)
    raise _b().error(f"pypto.cond takes a symbolic condition or a bool, not {type(c).__name__}")


# -- loops ----------------------------------------------------------------------------------

def loop(*args, name: str | None = None, idx_name: str | None = None, **options):
    """`for i in pypto.loop(stop)` / `pypto.loop(start, stop, step=1)`: a loop region, traced
    once with a symbolic index; the runtime runs it for the bound sizes. idx_name only names
    the index in the reference's dumps; the reference's scheduling options
    (submit_before_loop, parallel, unroll_list) are warned about, never silently dropped."""
    b = _b()
    _loop_options("pypto.loop", options)
    start, stop, step = _loop_bounds(b, args)
    return _loop_gen(b, start, stop, step, name)


def _loop_bounds(b, args) -> tuple:
    if not 1 <= len(args) <= 3:
        raise b.error("pypto.loop takes (stop) or (start, stop[, step])")
    vals = []
    for a in args:
        e = scalar_expr(a)
        if e is None:
            raise b.error(f"pypto.loop bounds must be ints or symbolic scalars, not "
                          f"{type(a).__name__}")
        vals.append(b.norm(e))
    if len(vals) == 1:
        return 0, vals[0], 1
    if len(vals) == 2:
        return vals[0], vals[1], 1
    if not (isinstance(vals[2], int) and vals[2] > 0):
        raise b.error("pypto.loop step must be a positive int")
    return vals[0], vals[1], vals[2]


def _loop_gen(b: _Builder, start, stop, step, name=None, factor: int | None = None):
    var = f"i{b.nloops}"
    b.nloops += 1
    attrs = {"var": var, "start": start, "stop": stop, "step": step}
    if name:
        attrs["name"] = name
    if factor is not None:
        attrs["unroll"] = factor
    op = b.emit("loop", attrs=attrs, regions=[[]])
    b.loop_info[var] = attrs
    b.regions.append(op.regions[0])
    b.loops.append(op)
    try:
        yield SymScalar(E.sym(var))
    finally:
        b.loops.pop()
        b.regions.pop()


def _loop_options(what: str, options: dict) -> None:
    known = {"submit_before_loop", "parallel", "unroll_list", "idx_name"}
    bad = sorted(set(options) - known)
    if bad:
        raise _b().error(f"{what}: unknown keyword(s) {', '.join(bad)}")
    set_ = sorted(k for k, v in options.items() if v not in (None, False) and k != "idx_name")
    if set_:
        unsupported(f"{what}({', '.join(k + '=' for k in set_)})",
                    "the reference's task-scheduling options; iterations run in order")


def loop_unroll(start, stop=None, step: int = 1, unroll_list=(4,), name=None, **options):
    """Yields (idx, factor): one loop per factor, largest first, each iteration covering
    factor * step indices, then a remainder loop with factor 1."""
    b = _b()
    _loop_options("pypto.loop_unroll", options)
    if stop is None:
        start, stop = 0, start
    start, stop, step = _loop_bounds(b, (start, stop, step))
    factors = sorted({int(f) for f in unroll_list if int(f) > 1}, reverse=True) + [1]
    lo = start
    for f in factors:
        span = f * step
        count = E.floordiv(E.sub(stop, lo), span) if f > 1 else E.cdiv(E.sub(stop, lo), step)
        hi = E.add(lo, E.mul(count, span))
        for idx in _loop_gen(b, lo, hi, span, name, factor=f):
            yield idx, f
        lo = hi


def _loop_of(b: _Builder, idx) -> dict:
    e = scalar_expr(idx)
    if not (isinstance(e, E.Expr) and e.op == "sym" and e.args[0] in b.loop_info):
        raise b.error("is_loop_begin / is_loop_end take the index of an enclosing pypto.loop")
    return b.loop_info[e.args[0]]


def is_loop_begin(idx) -> SymScalar:
    b = _b()
    info = _loop_of(b, idx)
    return SymScalar(E.eq(scalar_expr(idx), info["start"]))


def is_loop_end(idx) -> SymScalar:
    b = _b()
    info = _loop_of(b, idx)
    n = E.cdiv(E.sub(info["stop"], info["start"]), info["step"])
    last = E.add(info["start"], E.mul(E.sub(n, 1), info["step"]))
    return SymScalar(E.eq(scalar_expr(idx), last))


# -- tracer tensors -------------------------------------------------------------------------

class TraceTensor:
    """A tensor value while a kernel traces. Parameters and locals are memory: reads see
    earlier writes; `base` and `base_offsets` place a view of memory inside it."""

    __array_priority__ = 1000    # make numpy scalars defer to our operators

    def __init__(self, value: Value, memory: str | None = None, valid=None, is_param=False,
                 base: "TraceTensor | None" = None, base_offsets=None):
        self.value = value
        self.memory = memory
        self.is_param = is_param
        self.valid = valid
        self.base = base
        self.base_offsets = base_offsets
        self.scope = tuple(_current[-1].loops) if _current else ()

    @property
    def param(self) -> str | None:
        return self.memory if self.is_param else None

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

    @property
    def dim(self) -> "_Rank":
        """The rank, as the reference's `x.dim` property; called, `x.dim(i)` is the size of
        dim i (an int or an Expr), as pypto's own code uses it."""
        return _Rank(self)

    def __repr__(self) -> str:
        return f"<traced tensor {self.value.type}{' ' + self.memory if self.memory else ''}>"

    def __bool__(self):
        raise _b().error("a tensor has no truth value at trace time; compare symbolic scalars "
                         "(x.shape[0] > 4) for runtime branches")

    def __len__(self):
        d = self.dim(0)
        if isinstance(d, int):
            return d
        raise _b().error("len() of a tensor with a symbolic first dim; use x.shape[0]")

    def __iter__(self):
        raise _b().error("iterating over a tensor is not supported; slice it or use pypto.loop")


class _Rank(int):
    """A tensor's rank that, called with a dim, gives that dim's size."""

    def __new__(cls, t: "TraceTensor"):
        r = int.__new__(cls, t.value.type.rank)
        r._t = t
        return r

    def __call__(self, i: int) -> E.Ex:
        return _b().norm(self._t.value.type.shape[i])


def fmt_shape(shape) -> str:
    return "[" + ", ".join(E.to_str(d) for d in shape) + "]"


def slice_key(t: TraceTensor, key, open_ends: list | None = None,
              ints: list | None = None) -> tuple[list, list]:
    """(offsets, shape) of t[key]; open_ends, if given, gets a bool per dim: the slice has a
    start and no stop (`t[i:, 0:]`; a bare `:` is the whole dim). An integer or symbolic
    index i is the slice i:i+1 (negative ints count from the end); ints gets a bool per dim:
    indexed by an integer (the caller drops that dim, as the reference's Tensor does). Without
    ints, an integer index is an error."""
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
            if ints is None or isinstance(k, bool) or scalar_expr(k) is None:
                raise b.error("tensor indexing is not supported; use slices such as "
                              "x[i:i+1, :], integers or symbolic scalars (or pypto.view)")
            k = _int_as_slice(k, dim, b)
        if k.step not in (None, 1):
            raise b.error("slices with a step are not supported")
        lo = 0 if k.start is None else _index(k.start, dim, b)
        hi = dim if k.stop is None else _index(k.stop, dim, b)
        if open_ends is not None:
            open_ends.append(k.start is not None and k.stop is None)
        offsets.append(lo)
        shape.append(E.sub(hi, lo))
    if ints is not None:
        ints[:] = [not isinstance(k, slice) for k in key]
    return offsets, shape


def _int_as_slice(k, dim, b) -> slice:
    """Index k of a dim of size dim as the slice k:k+1 (a negative int counts from the end;
    a static one out of range is an error)."""
    e = _index(k, dim, b)
    if isinstance(e, int) and isinstance(dim, int) and not 0 <= e < dim:
        raise b.error(f"index {k} is out of range for a dim of size {dim}")
    return slice(e, E.add(e, 1))


def _index(v, dim, b) -> E.Ex:
    e = scalar_expr(v)
    if e is None:
        raise b.error(f"slice bound must be an int or a symbolic scalar, not {type(v).__name__}")
    if isinstance(e, int) and e < 0:
        e = E.add(dim, e)
    return b.norm(e)


DT_FP32, DT_FP16, DT_BF16 = _dtype("f32"), _dtype("f16"), _dtype("bf16")
DT_INT8, DT_INT16, DT_INT32, DT_INT64 = _dtype("i8"), _dtype("i16"), _dtype("i32"), _dtype("i64")
DT_UINT8, DT_BOOL = _dtype("u8"), _dtype("bool")
DT_UINT16, DT_UINT32, DT_UINT64 = _dtype("u16"), _dtype("u32"), _dtype("u64")
# fp8 (ml_dtypes float8_e4m3fn, float8_e5m2) and the MX scales' E8M0 (float8_e8m0fnu)
DT_FP8E4M3 = DT_FP8E4M3FN = _dtype("f8e4m3")
DT_FP8E5M2, DT_FP8E8M0 = _dtype("f8e5m2"), _dtype("e8m0")
