"""Pro-mode trace state: the kernel being traced, one program builder per section, runtime
loops and branches, and the op file line of everything.

A Pro kernel body runs once on tracer objects (after the AST rewrite of rewrite.py turns its
`if` statements into branch recorders). `pl.range` records a runtime `for` of the program
with a symbolic variable (traced once, never unrolled); a Python `range` unrolls. An `if` on
a runtime scalar records an `if` with both arms; an `if` on a compile-time value (a TilingKey
field, a static shape) keeps only the arm taken (dead branches are removed).

Tile group slots are chosen at run time: the number of `.next()` calls made so far is an
expression (`count`) over the loop variables, kept in closed form: inside a loop it is
`base + iteration * P + calls so far in this iteration`, P (the calls per iteration) being a
placeholder symbol until the body is traced, then substituted. Branches that call `.next()`
a different number of times merge with a select. The counters are per core: a section's
calls advance only its core's counter (enter_counts / exit_counts), calls outside the
sections every core's.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

from ..errors import CompileError
from ..ir import expr as E
from ..ir.core import Loc, make
from . import dsl
from .dsl import Scalar, expr_of, wrap

_STATE: list = []          # the trace in progress (a stack: traces do not nest in practice)


def current():
    if not _STATE:
        raise CompileError("this pl.* function works only inside a @pl.jit kernel body while "
                           "it is traced")
    return _STATE[-1]


class Program:
    """The block-level program of one section: a core kind and an op list under construction."""

    def __init__(self, core: str):
        self.core = core
        self.body: list = []
        self.stack = [self.body]
        self.args: dict = {}          # param name -> arg value
        self.hoisted: list = []       # tile ops of make_tile tiles, first in the program
        self.values: dict = {}        # make_tile tile -> its tile value here
        self.nloops = 0

    def emit(self, op) -> None:
        self.stack[-1].append(op)


class Trace:
    def __init__(self, kernel, source_file: str, capacity: dict, mixed: bool,
                 sections: bool, auto_mutex: bool):
        self.kernel = kernel
        self.source_file = source_file
        self.capacity = capacity         # space -> bytes (the target's buffers)
        self.mixed, self.sections = mixed, sections
        self.auto_mutex = auto_mutex
        self.programs: dict[str, Program] = {}
        self.section: str | None = None
        self.groups: list = []
        self.tiles: list = []            # every make_tile tile and tile group, for the checks
        self.uses: dict = {}             # (core, object) -> [first, last] trace position
        self.pos = 0
        self.nsyms = 0
        self.loops: list = []            # open pl.range loops (placeholders per group)
        self.loc_hook = None             # inside a vector function: its lines (vf_api.py)

    # -- where ------------------------------------------------------------------------------
    def loc(self) -> Loc | None:
        """The line of the kernel body being traced (a helper function the body calls is
        named by its call in the body), else the innermost line of the op file."""
        if self.loc_hook is not None:
            return self.loc_hook()
        f, inner = sys._getframe(1), None
        while f is not None:
            if f.f_code.co_filename == self.source_file:
                if f.f_code.co_name == self.kernel.fn.__name__:
                    return Loc(self.kernel.file, f.f_lineno)
                inner = inner or Loc(self.kernel.file, f.f_lineno)
            f = f.f_back
        return inner

    def error(self, msg: str) -> CompileError:
        return CompileError(msg, self.loc())

    def program(self, what: str = "this op") -> Program:
        core = self.section
        if core is None:
            if self.sections:
                raise self.error(f"{what} outside pl.section_vector() / pl.section_cube(): put "
                                 f"it inside the section whose core runs it")
            core = "vector"
        if core not in self.programs:
            self.programs[core] = Program(core)
        return self.programs[core]

    def fresh(self, prefix: str) -> str:
        self.nsyms += 1
        return f"{prefix}{self.nsyms}"

    def emit(self, name, operands=(), attrs=None, regions=None):
        op = make(name, operands, (), attrs or {}, regions, self.loc())
        self.program(name).emit(op)
        self.pos += 1
        return op

    def use(self, core: str, obj) -> None:
        span = self.uses.setdefault((core, obj), [self.pos, self.pos])
        span[1] = self.pos


# -- sections ---------------------------------------------------------------------------------

@contextmanager
def _section(core: str):
    t = current()
    if t.section is not None:
        raise t.error("sections do not nest")
    t.section = core
    shared = enter_counts(t, core)
    try:
        yield
    finally:
        t.section = None
        exit_counts(t, core, shared)


def enter_counts(t, core: str) -> dict:
    """Tile group slot counters are per core: a section's .next() calls advance its own core's
    counter (the other core never runs that code), calls outside the sections every core's.
    Entering a section adds the core's own calls so far; returns the shared counts."""
    shared = {g: g.count for g in t.groups}
    own = getattr(t, "core_counts", {})
    for g in t.groups:
        if (core, g) in own:
            g.count = E.add(g.count, own[(core, g)])
    return shared


def exit_counts(t, core: str, shared: dict) -> None:
    own = t.__dict__.setdefault("core_counts", {})
    for g in t.groups:
        base = shared.get(g, 0)
        own[(core, g)] = E.sub(g.count, base)
        g.count = base


def section_vector():
    """with pl.section_vector(): code for the vector cores (AIV)."""
    return _section("vector")


def section_cube():
    """with pl.section_cube(): code for the cube core (AIC)."""
    return _section("cube")


# -- block index ----------------------------------------------------------------------------

BLOCK_NUM = "block_num"


def _core(t) -> str:
    return t.section or ("vector" if not t.sections else "")


def get_block_idx():
    """The block index: on a vector core of a mixed kernel cluster * 2 + subblock, else the
    cluster (the task) index."""
    current()
    return Scalar(E.sym("g0"))


def get_block_num():
    """block_dim of the launch (in both sections of a mixed kernel)."""
    current()
    return Scalar(E.sym(BLOCK_NUM))


def get_subblock_idx():
    """0 or 1 on the two vector cores of a mixed kernel's cluster, else 0."""
    t = current()
    if t.section is None and getattr(t, "pipeline", None) is not None:
        return Scalar(E.sym("pipe_sbi"))    # per core in a pipelined loop (pipeline.py)
    return Scalar(E.mod(E.sym("g0"), 2)) if t.mixed and _core(t) == "vector" else 0


def get_subblock_num():
    """2 on a vector core of a mixed kernel, else 1."""
    t = current()
    if t.section is None and getattr(t, "pipeline", None) is not None:
        return Scalar(E.sym("pipe_sbn"))    # per core in a pipelined loop (pipeline.py)
    return 2 if t.mixed and _core(t) == "vector" else 1


# -- loops and branches -----------------------------------------------------------------------

def range_(start, stop=None, step=1):
    """pl.range(stop) / pl.range(start, stop, step): a runtime loop, traced once."""
    t = current()
    simt = dsl.SIMT
    if simt is not None and simt.active():      # a per-thread loop in a SIMT function
        return simt.range_(start, stop, step)
    if stop is None:
        start, stop = 0, start
    bounds = [expr_of(x) for x in (start, stop, step)]
    if any(b is None for b in bounds):
        raise t.error(f"pl.range bounds must be integer scalars, not {start!r}, {stop!r}, "
                      f"{step!r}")
    if isinstance(bounds[2], int) and bounds[2] <= 0:
        raise t.error(f"pl.range step must be positive, not {bounds[2]}")
    if t.section is None and getattr(t, "pipeline", None) is not None:
        return t.pipeline_loop(t, *bounds)  # a pipelined loop (pipeline.py, set by kernel.py)
    return _loop(t, *bounds)


def _loop(t, start, stop, step):
    prog = t.program("pl.range")
    var = f"i{prog.nloops}"
    prog.nloops += 1
    region: list = []
    op = make("for", (), (), {"var": var, "start": start, "stop": stop, "step": step},
              [region], t.loc())
    prog.emit(op)
    it = E.floordiv(E.sub(E.sym(var), start), step)
    saved = {}
    for g in t.groups:
        ph = E.sym(t.fresh("P_"))
        saved[g] = (g.count, ph)
        g.count = E.add(g.count, E.mul(it, ph))
    prog.stack.append(region)
    try:
        yield Scalar(E.sym(var))
    finally:
        prog.stack.pop()
    trips = E.maximum(0, E.cdiv(E.sub(stop, start), step))
    env = {}
    for g, (base, ph) in saved.items():
        per = E.sub(g.count, E.add(base, E.mul(it, ph)))
        if E.free_symbols(per) & {var}:
            raise t.error(f"tile group {g.name}: the number of .next() calls per iteration "
                          f"of this loop depends on the iteration")
        env[ph.args[0]] = per
        g.count = E.add(base, E.mul(trips, per))
    _substitute(region, env)


def _substitute(ops, env) -> None:
    if not env:
        return
    for op in ops:
        op.attrs = E.substitute_attrs(op.attrs, env)
        for r in op.regions:
            _substitute(r, env)


class Branch:
    """An `if` after the rewrite (rewrite.py): iterating yields True for the then arm, then
    False for the else arm of a runtime condition (recording an `if` with both), or only the
    arm taken of a compile-time one. The Python variables the arms assign (`names`) start
    each arm with their values from before the `if`, and are merged after it: equal values
    stay, two integer scalars become a select on the condition, anything else that differs
    is an error (a tile chosen at run time needs a tile group). Tile valid shapes and group
    counters set in the arms merge the same way."""

    def __init__(self, cond, before: dict, names: tuple):
        self.cond, self.names = cond, names
        self.before = {n: before[n] for n in names if n in before}
        self.arms: list = []
        self.c = None

    def __iter__(self):
        cond = self.cond
        if not isinstance(cond, Scalar) or isinstance(cond.e, int):
            yield bool(cond.e if isinstance(cond, Scalar) else cond)
            return
        yield from self._runtime(current(), cond.e)

    def _runtime(self, t, c):
        self.c = c
        prog = t.program("a runtime if")
        then, other = [], []
        prog.emit(make("if", (), (), {"cond": c}, [then, other], t.loc()))
        state0 = _tile_state(t)
        for region, arm in ((then, True), (other, False)):
            _set_tile_state(t, state0)
            prog.stack.append(region)
            try:
                yield arm
            finally:
                prog.stack.pop()
            if arm:
                state1 = _tile_state(t)
        _merge_tile_state(t, c, state1, _tile_state(t))

    def done(self, local: dict) -> None:
        self.arms.append({n: local[n] for n in self.names if n in local})

    def had(self, name: str) -> bool:
        return name in self.before

    def value_before(self, name: str):
        return self.before[name]

    def has(self, name: str) -> bool:
        return any(name in a for a in self.arms)

    def merged(self, name: str):
        vals = [a[name] for a in self.arms if name in a]
        if len(vals) == 1 or vals[0] is vals[1]:
            return vals[0]
        a, b = vals
        ea, eb = expr_of(a), expr_of(b)
        if ea is not None and eb is not None:
            return a if ea == eb else wrap(E.select(self.c, ea, eb))
        if type(a) is type(b) and a == b:
            return a
        raise current().error(f"variable {name!r} gets different values in the two arms of "
                              f"a runtime if ({a!r} and {b!r}); only integer scalars merge "
                              f"(a tile chosen at run time needs a tile group)")


def _valid_of(x) -> list:
    """A make_tile tile keeps its valid shape in _valid, a tile group in valid."""
    return list(x._valid) if hasattr(x, "_valid") else list(x.valid)


def _tile_state(t) -> dict:
    out = {g: ("count", g.count) for g in t.groups}
    out.update({(x, "valid"): _valid_of(x) for x in t.tiles})
    return out


def _set_tile_state(t, st: dict) -> None:
    for k, v in st.items():
        if isinstance(k, tuple):
            _set_valid(k[0], v)
        else:
            k.count = v[1]


def _set_valid(x, v) -> None:
    if hasattr(x, "_valid"):
        x._valid = list(v)
    else:
        x.valid = list(v)


def _merge_tile_state(t, c, a: dict, b: dict) -> None:
    for k in b:
        va, vb = a.get(k), b[k]
        if isinstance(k, tuple):
            if va is not None and vb is not None and va != vb:
                _set_valid(k[0], [x if x == y else E.select(c, x, y) for x, y in zip(va, vb)])
        elif va is not None and va[1] != vb[1]:
            k.count = E.select(c, va[1], vb[1])


def branch(cond, before: dict | None = None, names: tuple = ()):
    return Branch(cond, before or {}, names)


def ifexp(cond, then_fn, else_fn):
    """`a if cond else b` after the rewrite: a select for runtime scalars; phases (equal
    meaning on the host) pass through."""
    c = expr_of(cond)
    if c is None or isinstance(c, int):
        return then_fn() if (bool(cond) if c is None else c) else else_fn()
    a, b = then_fn(), else_fn()
    ea, eb = expr_of(a), expr_of(b)
    if ea is not None and eb is not None:
        return wrap(E.select(c, ea, eb))
    if type(a) is type(b) and type(a).__name__ in ("AccPhase", "STPhase"):
        return a           # recorded only: the host accumulator is exact in either phase
    raise current().error("a conditional expression on a runtime value must choose between "
                          "two integer scalars")


def logical(kind: str, *thunks):
    """`a and b` / `a or b` / `not a` in a kernel, on runtime scalars too."""
    if kind == "not":
        v = thunks[0]()
        e = expr_of(v)
        return (not v) if e is None or isinstance(e, int) and not isinstance(v, Scalar) \
            else wrap(E.logical_not(e))
    out = thunks[0]()
    for th in thunks[1:]:
        e = expr_of(out)
        if e is None or (isinstance(e, int) and not isinstance(out, Scalar)):
            if (kind == "and") != bool(out):
                return out
            out = th()
            continue
        nxt = expr_of(th())
        fn = E.logical_and if kind == "and" else E.logical_or
        out = wrap(fn(e, nxt if nxt is not None else 1))
    return out
