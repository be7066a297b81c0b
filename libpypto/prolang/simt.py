"""`pl.simt`: SIMT thread blocks in Pro mode, in the reference's form (pypto_pro.language
`_simt_api.py`, `ir/op/simt_ops.py`).

    @pl.simt.function(max_threads=256)
    def hist(out: pl.Tensor[[1, 64], pl.DT_INT32], x: pl.Tensor[[8192], pl.DT_INT32], n: pl.DT_INT32):
        tid = pl.simt.linear_thread_idx()
        base = pl.simt.block_idx().x * pl.simt.block_dim().x
        for k in pl.range(base + tid, n, pl.simt.grid_dim().x * pl.simt.block_dim().x):
            pl.simt.atomic_add(out, [0, x[k] % 64], 1)

    with pl.section_vector():
        pl.simt.launch(hist, threads=256, args=(out, x, n))

A launch is one block-level instruction on the V pipe (ir/simt_ops.py: `simt_launch`, its
per-thread body a small register machine in an attribute, printed by `pypto-trace -S`).
The function body is parsed for control flow (rewrite.py, with a final `return` allowed
in a callee) and traced once on per-thread values (SVal): each arithmetic, comparison,
element load or store, atomic, branch and loop records one body instruction.

Which reference SIMT APIs exist here:
- `pl.simt.function(fn)` (a callee helper, inlined where it is called) and
  `pl.simt.function(max_threads=N)` (launchable; 1 <= N <= 2048)
- `pl.simt.launch(fn, threads=N | (x, y) | (x, y, z), args=(...))` from a vector section
  (not nested, not from a SIMT function); threads compile-time, product <= max_threads
- `thread_idx()`, `block_dim()`, `block_idx()`, `grid_dim()` (.x .y .z), `linear_thread_idx()`
  (x-major), `warp_size()` (32)
- arguments: Vec tiles (`t[r, c]` load and store; `t.valid_shape`), GM tensors (`x[i, ...]`,
  `x.shape`), integer and float scalars
- and beyond the reference (which has no SIMT atomics): `pl.simt.atomic_add / atomic_sub /
  atomic_max / atomic_min / atomic_exch / atomic_cas / atomic_and / atomic_or / atomic_xor
  (buf, index, value[, ...])` on GM and UB elements, each returning the old value;
  `pl.simt.min / max(a, b)` (also `pl.min`/`pl.max` on SIMT values), `v.astype(pl.DT_*)`.
Atomics work on int8-int64, uint8-uint32 and float32 elements (and/or/xor: integers).
The reference's auto-mutex around a launch is here as for any V instruction on a tile-group
slot (@pl.jit(auto_mutex=True)). Not here: warp-level primitives
(the reference has none either), `break`/`continue`/`while`, values carried across
iterations of a SIMT `pl.range` loop (as in a kernel body: accumulate in memory), a
`return` anywhere but the end of a callee, tile subviews inside a SIMT function.

Semantics (both executions, pro_simt.py and pro_simt_c.py, agree bit for bit):
- a thread block runs in lockstep, one body instruction at a time over all its threads
  (numpy arrays, or one C loop over the threads), a divergent `if` as two masked arms and a
  per-thread `pl.range` loop while any thread still iterates; values are int64 (integer
  dtypes, comparisons 0/1) or float32 (float dtypes; f16/bf16 elements load widened and
  store rounded); int + float is float; `/` is float division (`//` and `%` are Python's
  floor forms on ints, a division by zero is a run-time error); integer arithmetic wraps;
  shifts use the count's low 6 bits; `a and b`, `a or b`, `not a` give 0/1 and evaluate `b`
  only on the threads that need it; `astype` to an int truncates (NaN 0, saturating).
- an element index outside a tile's static shape or a tensor's shape is a run-time error
  (in either execution), never a stray access.
- an atomic on one instruction is applied thread after thread in linear thread order, so
  the old values are exact and fixed; across blocks, integer add/sub/max/min/and/or/xor
  whose old value is unused commute (any order, any thread count: exact) as long as the
  kinds on one tensor commute with each other (add with sub, or one of the others); any
  other GM atomic (its result used, exch, cas, a float, or add and max on one tensor)
  makes the launch `serial` (simt_ops.gm_order_matters): the clusters
  run one after the other in cluster order (pro_exec.serial), as atomic-add stores do.
- the race checker records the elements (GM) and bytes (UB) a launch actually touched as
  reads, writes and atomic updates on V; atomics of different blocks do not race with each
  other, they do race with plain accesses.
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import CompileError
from ..ir import simt_ops as S
from ..ir.core import Loc
from ..ir.types import DType
from . import dsl
from .dsl import Scalar, expr_of
from .rewrite import _Rewriter, rewrite
from .state import Branch, current

_BUILD: list = []        # the SIMT body being traced (a stack: callees share their launch's)


class Dim3:
    """thread_idx() / block_dim() / ...: .x .y .z."""

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __repr__(self) -> str:
        return f"Dim3({self.x!r}, {self.y!r}, {self.z!r})"


class Tile:
    """pl.Tile[[rows, cols], dtype]: the annotation of a tile parameter of a SIMT function
    (as in the reference; recorded, not checked: the argument's own type is used)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __class_getitem__(cls, item):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("pl.Tile takes a shape and a dtype: pl.Tile[[1, 256], pl.DT_FP32]")
        return cls(*item)

    def __repr__(self) -> str:
        return f"pl.Tile[{self.shape!r}, {self.dtype!r}]"


class SimtFunction:
    """@pl.simt.function: launchable with max_threads, else a callee helper."""

    def __init__(self, fn, max_threads):
        if max_threads is not None and (not isinstance(max_threads, int) or
                                        isinstance(max_threads, bool) or
                                        not 1 <= max_threads <= S.MAX_THREADS):
            raise CompileError(f"@pl.simt.function(max_threads={max_threads!r}): the launch "
                               f"bound must be an int in [1, {S.MAX_THREADS}]")
        self.fn, self.max_threads, self.name = fn, max_threads, fn.__name__
        self._rewritten = None

    def body(self):
        if self._rewritten is None:
            helpers = {"__pl_branch": _branch, "__pl_ifexp": _ifexp, "__pl_logic": _logic}
            t = current()
            self._rewritten, _ = rewrite(self.fn, t.kernel.file, helpers, {},
                                         rewriter=_SimtRewriter)
        return self._rewritten

    def __call__(self, *args):
        b = _builder(f"calling SIMT function {self.name}")
        if self in b.calls:
            raise _err(f"SIMT function {self.name} calls itself (recursion is not supported)")
        b.calls.append(self)
        try:
            return self.body()(*args)
        except RecursionError:          # a direct self-call binds the plain function
            raise _err(f"SIMT function {self.name} calls itself (recursion is not "
                       f"supported)") from None
        finally:
            b.calls.pop()


def function(fn=None, *, max_threads=None):
    """@pl.simt.function or @pl.simt.function(max_threads=N)."""
    if fn is None:
        return lambda f: SimtFunction(f, max_threads)
    return SimtFunction(fn, max_threads)


class _SimtRewriter(_Rewriter):
    """The kernel rewrite, plus a callee's `return value` as its last statement."""

    last = None

    def visit_FunctionDef(self, node):
        if self.last is None:
            self.last = node.body[-1] if node.body else None
        self.generic_visit(node)
        return node

    def visit_Return(self, node):
        if node is not self.last:     # an early return would end the trace, not a thread
            raise CompileError("a SIMT function returns only as its last statement (use "
                               "if/else for the threads that stop early)",
                               Loc(self.file, node.lineno))
        return node


# -- the body under construction ------------------------------------------------------------

class _Builder:
    def __init__(self, name: str, threads: list):
        self.name, self.threads = name, threads
        self.regs: list = []
        self.body: list = []
        self.stack = [self.body]
        self.bufs: list = []           # operands: Tile / TensorView objects
        self.scalars: list = []        # block-level expressions
        self.scalar_regs: dict = {}    # (expression text, class) -> its register
        self.bools: set = set()        # registers that hold 0/1 (comparisons)
        self.calls: list = []

    def reg(self, cls: str) -> int:
        self.regs.append(cls)
        return len(self.regs) - 1

    def emit(self, ins: list) -> None:
        self.stack[-1].append(ins)

    def new(self, cls: str, *ins) -> "SVal":
        d = self.reg(cls)
        self.emit([ins[0], d, *ins[1:]])
        return SVal(d, cls)

    def scalar(self, e, cls: str) -> "SVal":
        """A block-level value, read once per launch (in the body's first instructions)."""
        from ..ir import expr as E
        key = (E.to_str(e) if isinstance(e, E.Expr) else repr(e), cls)
        if key not in self.scalar_regs:
            self.scalars.append(e)
            d = self.reg(cls)
            self.body.insert(len(self.scalar_regs), ["scalar", d, len(self.scalars) - 1])
            self.scalar_regs[key] = d
        return SVal(self.scalar_regs[key], cls)

    def buffer(self, obj) -> int:
        for k, o in enumerate(self.bufs):
            if o is obj:
                return k
        self.bufs.append(obj)
        return len(self.bufs) - 1


def active() -> bool:
    """Is a SIMT function body being traced?"""
    return bool(_BUILD)


def _err(msg: str) -> CompileError:
    try:
        return current().error(msg)
    except CompileError:
        return CompileError(msg)


def _builder(what: str) -> _Builder:
    if not _BUILD:
        raise _err(f"{what} can only be used inside a SIMT function (@pl.simt.function, run "
                   f"by pl.simt.launch)")
    return _BUILD[-1]


class SVal:
    """A per-thread value: register `r` of class "i" (int64) or "f" (float32)."""

    __slots__ = ("r", "cls")

    def __init__(self, r: int, cls: str):
        self.r, self.cls = r, cls

    def __repr__(self) -> str:
        return f"SVal(r{self.r}: {'int' if self.cls == 'i' else 'float'})"

    def __bool__(self):
        raise _err("a per-thread SIMT value used as a Python truth value outside an `if` "
                   "test (use if/else, `a if c else b` or pl.simt.min/max)")

    __hash__ = object.__hash__

    def astype(self, dtype):
        """The value converted to dtype's class: int -> float, float -> int (truncated)."""
        if not isinstance(dtype, DType):
            raise _err(f"astype takes a pl.DT_* dtype, not {dtype!r}")
        want = "f" if dtype.kind == "float" else "i"
        return _as(self, want)

    def _b(self, o, op, rev=False):
        a, b = _val(self), _val(o)
        if b is None:
            return NotImplemented
        return _bin(op, b, a) if rev else _bin(op, a, b)

    def __add__(self, o): return self._b(o, "add")
    def __radd__(self, o): return self._b(o, "add", True)
    def __sub__(self, o): return self._b(o, "sub")
    def __rsub__(self, o): return self._b(o, "sub", True)
    def __mul__(self, o): return self._b(o, "mul")
    def __rmul__(self, o): return self._b(o, "mul", True)
    def __truediv__(self, o): return self._b(o, "div")
    def __rtruediv__(self, o): return self._b(o, "div", True)
    def __floordiv__(self, o): return self._b(o, "floordiv")
    def __rfloordiv__(self, o): return self._b(o, "floordiv", True)
    def __mod__(self, o): return self._b(o, "mod")
    def __rmod__(self, o): return self._b(o, "mod", True)
    def __and__(self, o): return self._b(o, "and")
    def __rand__(self, o): return self._b(o, "and", True)
    def __or__(self, o): return self._b(o, "or")
    def __ror__(self, o): return self._b(o, "or", True)
    def __xor__(self, o): return self._b(o, "xor")
    def __rxor__(self, o): return self._b(o, "xor", True)
    def __lshift__(self, o): return self._b(o, "shl")
    def __rlshift__(self, o): return self._b(o, "shl", True)
    def __rshift__(self, o): return self._b(o, "shr")
    def __rrshift__(self, o): return self._b(o, "shr", True)
    def __lt__(self, o): return self._b(o, "lt")
    def __le__(self, o): return self._b(o, "le")
    def __gt__(self, o): return self._b(o, "gt")
    def __ge__(self, o): return self._b(o, "ge")
    def __eq__(self, o): return self._b(o, "eq")      # noqa: PLE0307
    def __ne__(self, o): return self._b(o, "ne")

    def __neg__(self):
        return _builder("a SIMT value").new(self.cls, "un", "neg", self.r)

    def __abs__(self):
        return _builder("a SIMT value").new(self.cls, "un", "abs", self.r)

    def __invert__(self):
        if self.cls != "i":
            raise _err("~ takes an integer SIMT value")
        return _builder("a SIMT value").new("i", "un", "inv", self.r)


def _val(x):
    """x as an SVal: SVals, Python numbers and block-level runtime scalars (None if not)."""
    if isinstance(x, SVal):
        return x
    if isinstance(x, (bool, int, np.integer)):
        return _builder("a SIMT value").new("i", "const", int(x))
    if isinstance(x, (float, np.floating)):
        return _builder("a SIMT value").new("f", "const", float(np.float32(x)))
    if isinstance(x, Scalar):
        return _scalar_of(_builder("a SIMT value"), x)
    return None


def _scalar_of(b: _Builder, x: Scalar) -> SVal:
    from ..ir import expr as E
    floats = {n for n, d in getattr(current(), "scalar_dtypes", {}).items()
              if d.startswith(("f", "bf"))}
    e = expr_of(x)
    cls = "f" if isinstance(e, E.Expr) and E.free_symbols(e) & floats else "i"
    return b.scalar(e, cls)


def _need(x, what: str) -> SVal:
    v = _val(x)
    if v is None:
        raise _err(f"{what} must be a number or a SIMT value, not {x!r}")
    return v


def _as(v: SVal, cls: str) -> SVal:
    if v.cls == cls:
        return v
    return _builder("a SIMT value").new(cls, "un", "itof" if cls == "f" else "ftoi", v.r)


def _bin(op: str, a: SVal, b: SVal) -> SVal:
    bld = _builder("a SIMT value")
    if op == "div" or "f" in (a.cls, b.cls):
        if op in ("floordiv", "mod"):
            raise _err(f"SIMT {'//' if op == 'floordiv' else '%'} takes integers (floats: "
                       f"use /)")
        if op in ("and", "or", "xor", "shl", "shr"):
            raise _err(f"SIMT bitwise {op} takes integers, not floats")
        a, b = _as(a, "f"), _as(b, "f")
    out = "i" if op in S.COMPARE else a.cls
    v = bld.new(out, "bin", op, a.r, b.r)
    if op in S.COMPARE:
        bld.bools.add(v.r)
    return v


def _truth(v: SVal) -> SVal:
    """0/1: is v non-zero."""
    if v.r in _builder("a SIMT condition").bools:
        return v
    return _bin("ne", v, _val(0 if v.cls == "i" else 0.0))


def minmax(kind: str, a, b):
    """pl.min / pl.max / pl.simt.min / pl.simt.max on SIMT values."""
    return _bin(kind, *_unify(_need(a, f"pl.{kind}"), _need(b, f"pl.{kind}")))


def min(a, b):       # noqa: A001 -- pl.simt.min
    return minmax("min", a, b)


def max(a, b):       # noqa: A001 -- pl.simt.max
    return minmax("max", a, b)


def _unify(a: SVal, b: SVal) -> tuple:
    if a.cls != b.cls:
        return _as(a, "f"), _as(b, "f")
    return a, b


# -- thread context -------------------------------------------------------------------------

def thread_idx() -> Dim3:
    """The thread's coordinates in its block (.x fastest)."""
    b = _builder("pl.simt.thread_idx()")
    return Dim3(*(b.new("i", "ctx", k) for k in ("tx", "ty", "tz")))


def linear_thread_idx() -> SVal:
    """x + y * block_dim.x + z * block_dim.x * block_dim.y."""
    return _builder("pl.simt.linear_thread_idx()").new("i", "ctx", "tid")


def block_dim() -> Dim3:
    """The launch's thread dims (compile-time ints)."""
    return Dim3(*_builder("pl.simt.block_dim()").threads)


def block_idx() -> Dim3:
    """.x: the vector core's block index (pl.get_block_idx()); .y = .z = 0."""
    from ..ir import expr as E
    return Dim3(_builder("pl.simt.block_idx()").scalar(E.sym("g0"), "i"), 0, 0)


def grid_dim() -> Dim3:
    """.x: the number of vector cores of the launch (block_num, times 2 in a mixed kernel);
    .y = .z = 1."""
    from . import state
    from ..ir import expr as E
    b = _builder("pl.simt.grid_dim()")
    n = E.mul(E.sym(state.BLOCK_NUM), state.get_subblock_num())
    return Dim3(b.scalar(n, "i"), 1, 1)


def warp_size() -> int:
    """The SIMT warp size of the target (32)."""
    _builder("pl.simt.warp_size()")
    return S.WARP_SIZE


# -- control flow ---------------------------------------------------------------------------

class _Branch(Branch):
    """A divergent `if` on a per-thread condition (state.Branch's bookkeeping of the arms'
    names): the arms record into the two regions of one ["if"]; names they assign merge
    with a select."""

    def __init__(self, cond: SVal, before: dict, names: tuple):
        self.b = _builder("a SIMT if")
        self.c = _truth(cond)
        self.names = names
        self.before = {n: before[n] for n in names if n in before}
        self.arms: list = []

    def __iter__(self):
        then, other = [], []
        self.b.emit(["if", self.c.r, then, other])
        for region, arm in ((then, True), (other, False)):
            self.b.stack.append(region)
            try:
                yield arm
            finally:
                self.b.stack.pop()

    def merged(self, name: str):
        vals = [a[name] for a in self.arms if name in a]
        if len(vals) == 1 or vals[0] is vals[1]:
            return vals[0]
        a, b = (_val(v) for v in vals)
        if a is None or b is None:
            if type(vals[0]) is type(vals[1]) and vals[0] == vals[1]:
                return vals[0]
            raise _err(f"variable {name!r} gets different non-numeric values in the two arms "
                       f"of a SIMT if")
        a, b = _unify(a, b)
        return self.b.new(a.cls, "sel", self.c.r, a.r, b.r)


def _branch(cond, before=None, names=()):
    if isinstance(cond, Scalar) and _BUILD:
        cond = _val(cond)
    if isinstance(cond, SVal):
        return _Branch(cond, before or {}, names)
    from .state import branch
    return branch(cond, before, names)


def _arms(c: SVal, then_fn, else_fn) -> SVal:
    """then_fn() on the threads where c, else_fn() on the others, merged."""
    b = _builder("a SIMT conditional")
    then, other = [], []
    b.emit(["if", c.r, then, other])
    vals = []
    for region, fn in ((then, then_fn), (other, else_fn)):
        b.stack.append(region)
        try:
            vals.append(_need(fn(), "a SIMT conditional's value"))
        finally:
            b.stack.pop()
    x, y = vals
    if x.cls != y.cls:      # convert inside the arm that computed the int
        for i, region in ((0, then), (1, other)):
            if vals[i].cls == "i":
                b.stack.append(region)
                vals[i] = _as(vals[i], "f")
                b.stack.pop()
        x, y = vals
    return b.new(x.cls, "sel", c.r, x.r, y.r)


def _ifexp(cond, then_fn, else_fn):
    c = _val(cond) if isinstance(cond, (SVal, Scalar)) and _BUILD else None
    if c is None:
        from .state import ifexp
        return ifexp(cond, then_fn, else_fn)
    return _arms(_truth(c), then_fn, else_fn)


def _logic(kind: str, *thunks):
    """and / or / not: on SIMT values 0/1, the later operands evaluated only on the threads
    that need them; on Python values Python's own."""
    first = thunks[0]()
    if isinstance(first, Scalar) and _BUILD:
        first = _val(first)
    if not isinstance(first, SVal):
        if kind == "not":
            return not first
        if len(thunks) == 1 or (kind == "and") != bool(first):
            return first
        return _logic(kind, *thunks[1:])
    if kind == "not":
        return _bin("eq", first, _val(0 if first.cls == "i" else 0.0))
    out = _truth(first)
    zero, one = (lambda: 0), (lambda: 1)
    for th in thunks[1:]:
        rest = (lambda th=th: _truth(_need(th(), f"`{kind}`")))
        out = _arms(out, rest, zero) if kind == "and" else _arms(out, one, rest)
    return out


def range_(start, stop=None, step=1):
    """pl.range inside a SIMT function: a per-thread loop (traced once)."""
    b = _builder("pl.range")
    if stop is None:
        start, stop = 0, start
    regs = [_need(v, "pl.range bounds") for v in (start, stop, step)]
    if any(r.cls != "i" for r in regs):
        raise _err("pl.range bounds in a SIMT function must be integers")
    if isinstance(step, int) and step <= 0:
        raise _err(f"pl.range step must be positive, not {step}")
    v = b.reg("i")
    body: list = []
    b.emit(["for", v, regs[0].r, regs[1].r, regs[2].r, body])
    b.stack.append(body)
    try:
        yield SVal(v, "i")
    finally:
        b.stack.pop()


# -- memory ---------------------------------------------------------------------------------

class SimtBuf:
    """A tile or tensor argument inside a SIMT function: `buf[i, j]` loads one element,
    `buf[i, j] = v` stores one (an index outside the shape is a run-time error)."""

    def __init__(self, obj, kind: str):
        self.obj, self.kind = obj, kind
        self.dtype = obj.type.dtype if kind == "tile" else obj.dtype
        self.rank = 2 if kind == "tile" else len(obj.dims)
        self.cls = "f" if self.dtype.kind == "float" else "i"

    def __repr__(self) -> str:
        return f"SimtBuf({self.obj!r})"

    def index(self, idx) -> list:
        idx = list(idx) if isinstance(idx, (tuple, list)) else [idx]
        if len(idx) != self.rank:
            raise _err(f"{self.obj.name} has {self.rank} dims: index it with {self.rank} "
                       f"indices, not {len(idx)}")
        regs = [_need(i, f"an index of {self.obj.name}") for i in idx]
        if any(r.cls != "i" for r in regs):
            raise _err(f"an index of {self.obj.name} must be an integer")
        return [r.r for r in regs]

    def value(self, v, what: str) -> SVal:
        v = _need(v, what)
        if v.cls == "f" and self.cls == "i":
            raise _err(f"{what}: a float value into the {self.dtype} elements of "
                       f"{self.obj.name} (convert it with .astype(pl.{self.dtype.api}))")
        return _as(v, self.cls)

    def __getitem__(self, idx) -> SVal:
        b = _builder(f"an element of {self.obj.name}")
        return b.new(self.cls, "ld", b.buffer(self.obj), self.index(idx))

    def __setitem__(self, idx, v) -> None:
        b = _builder(f"an element of {self.obj.name}")
        regs = self.index(idx)
        b.emit(["st", b.buffer(self.obj), regs, self.value(v, "a SIMT store").r])

    def _dims(self, dims) -> list:
        b = _builder(f"the shape of {self.obj.name}")
        return [d if isinstance(d, int) else b.scalar(expr_of(d) if isinstance(d, Scalar)
                                                      else d, "i") for d in dims]

    @property
    def valid_shape(self) -> list:
        """A tile's valid shape (ints, or per-launch values set by pl.set_validshape)."""
        if self.kind != "tile":
            raise _err(f"{self.obj.name} is a tensor: use .shape")
        return self._dims(self.obj.valid)

    @property
    def shape(self) -> list:
        return self._dims(self.obj.type.shape if self.kind == "tile" else self.obj.dims)


def _atomic(kind: str, buf, index, value, compare=None) -> SVal:
    b = _builder(f"pl.simt.atomic_{kind}")
    if not isinstance(buf, SimtBuf):
        raise _err(f"pl.simt.atomic_{kind} updates an element of a tile or tensor argument, "
                   f"not {buf!r}")
    if buf.dtype.name not in S.ATOMIC_DTYPES or (buf.cls == "f" and
                                                  kind in S.INT_ONLY_ATOMICS):
        raise _err(f"pl.simt.atomic_{kind} on {buf.dtype} elements of {buf.obj.name} is not "
                   f"supported (integers and float32; and/or/xor integers only)")
    regs = buf.index(index)
    v = buf.value(value, f"pl.simt.atomic_{kind}")
    cmp = buf.value(compare, "pl.simt.atomic_cas compare").r if kind == "cas" else -1
    d = b.reg(buf.cls)
    b.emit(["atom", d, kind, b.buffer(buf.obj), regs, v.r, cmp])
    return SVal(d, buf.cls)


def _atomic_fn(kind: str):
    def fn(buf, index, value):
        return _atomic(kind, buf, index, value)
    fn.__name__ = f"atomic_{kind}"
    fn.__doc__ = (f"pl.simt.atomic_{kind}(buf, index, value): one element of a GM tensor or "
                  f"Vec tile updated atomically; returns its old value.")
    return fn


def atomic_cas(buf, index, compare, value):
    """pl.simt.atomic_cas(buf, index, compare, value): the element becomes value if it
    equals compare; returns the old value."""
    return _atomic("cas", buf, index, value, compare)


atomic_add, atomic_sub, atomic_max, atomic_min, atomic_exch, atomic_and, atomic_or, \
    atomic_xor = (_atomic_fn(k) for k in ("add", "sub", "max", "min", "exch", "and", "or",
                                          "xor"))


# -- launch ---------------------------------------------------------------------------------

def launch(callee, *, threads, args):
    """pl.simt.launch(fn, threads=N | (x, y) | (x, y, z), args=(...)): run fn on every thread
    of a block of this vector core (one V instruction)."""
    from .state import _core
    t = current()
    if _BUILD:
        raise t.error("nested pl.simt.launch() is not supported")
    if _core(t) != "vector":
        raise t.error("pl.simt.launch() must appear inside 'with pl.section_vector():' (SIMT "
                      "functions run on the vector cores)")
    if not isinstance(callee, SimtFunction) or callee.max_threads is None:
        raise t.error(f"{getattr(callee, '__name__', callee)!r} is not a launchable "
                      f"@pl.simt.function(max_threads=...)")
    dims = _threads(t, threads)
    n = dims[0] * dims[1] * dims[2]
    if n > callee.max_threads:
        raise t.error(f"pl.simt.launch of {callee.name}: threads {n} exceed its max_threads "
                      f"{callee.max_threads}")
    if not isinstance(args, tuple):
        raise t.error("pl.simt.launch() args must be a tuple (args=(out, n), with a trailing "
                      "comma for one argument)")
    nparams = callee.fn.__code__.co_argcount
    if len(args) != nparams:
        raise t.error(f"SIMT function {callee.name} takes {nparams} arguments, "
                      f"not {len(args)}")
    b = _Builder(callee.name, dims)
    _BUILD.append(b)
    try:
        rv = callee.body()(*[_arg(t, b, a) for a in args])
    finally:
        _BUILD.pop()
    if rv is not None:
        raise t.error(f"a launched SIMT function returns nothing ({callee.name} returns "
                      f"{rv!r})")
    _prune(b.body)
    from .ops import emit
    op = emit("simt_launch", b.bufs, {"fn": callee.name, "threads": dims,
                                      "max_threads": callee.max_threads,
                                      "scalars": b.scalars, "regs": b.regs, "body": b.body})
    if S.gm_order_matters(op):
        op.attrs["serial"] = True
    return op


def _threads(t, threads) -> list:
    dims = list(threads) if isinstance(threads, (tuple, list)) else [threads]
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or isinstance(d, bool) or d < 1
                                      for d in dims):
        raise t.error(f"pl.simt.launch threads= must be one to three positive compile-time "
                      f"ints, not {threads!r}")
    dims += [1] * (3 - len(dims))
    if dims[0] * dims[1] * dims[2] > S.MAX_THREADS:
        raise t.error(f"pl.simt.launch: {dims[0] * dims[1] * dims[2]} threads exceed the "
                      f"hardware's {S.MAX_THREADS}")
    return dims


def _arg(t, b: _Builder, a):
    from .ops import TensorView
    from .tiles import Tile
    if isinstance(a, Tile):
        if a.type.space != "ub":
            raise t.error(f"a SIMT tile argument must be a Vec tile, not {a.name} in "
                          f"{a.type.memory.name}")
        return SimtBuf(a, "tile")
    if isinstance(a, TensorView):
        return SimtBuf(a, "tensor")
    v = _val(a)
    if v is None:
        raise t.error(f"a SIMT argument must be a Vec tile, a tensor or a scalar, not {a!r}")
    return v


def _reads(i) -> list:
    k = i[0]
    if k == "bin":
        return i[3:5]
    if k in ("un", "mov"):
        return [i[-1]]
    if k == "sel":
        return i[2:5]
    if k == "ld":
        return i[3]
    if k == "st":
        return i[2] + [i[3]]
    if k == "atom":
        return i[4] + [i[5], i[6]]
    if k == "if":
        return [i[1]]
    if k == "for":
        return i[2:5]
    return []


def _prune(body) -> None:
    """An atomic whose old value nothing reads gets d = -1 (its blocks may then commute)."""
    used = {r for i in S.walk(body) for r in _reads(i)}
    for i in S.walk(body):
        if i[0] == "atom" and i[1] not in used:
            i[1] = -1


dsl.SIMT = sys.modules[__name__]     # pl.min / pl.max / pl.range consult active() (dsl.py)
