"""Kernels: a function with tensor parameter annotations, traced into a Tensor Graph.

Tracing runs the function once per path of runtime branches (see tensor.py) and merges the
paths into one document with `if` regions where they part.
"""
from __future__ import annotations

import dis
import inspect
import linecache
import os

from .. import errors
from ..errors import CompileError
from ..ir import expr as E
from ..ir.core import Document, Loc, Op, Value
from ..ir.types import TensorType
from . import catalogue  # noqa: F401 -- installs the traced tensors' operators and methods
from . import int4, passopts
from .tensor import (MAX_PATHS, STATIC, TensorSpec, TraceTensor, _Builder, _current, _PKG_DIR,
                     new_trace)


# -- kernels --------------------------------------------------------------------------------

class Kernel:
    """A kernel function with its parameter annotations, traceable into a Tensor Graph.
    @pypto.jit makes one (libpypto.jit.JitKernel, which also runs when called)."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = dict(options)     # backend, target, threads
        self.compiles = 0                # artifacts built so far (tests check the cache)
        self.last_run = None
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        sig = inspect.signature(fn)
        if any(isinstance(p.annotation, str) for p in sig.parameters.values()):
            # `from __future__ import annotations` turns annotations into strings
            try:
                sig = inspect.signature(fn, eval_str=True)
            except Exception as exc:
                raise TypeError(f"{self.name}: cannot evaluate the parameter annotations "
                                f"({type(exc).__name__}: {exc}); with `from __future__ import "
                                f"annotations` they must only use module-level names") from None
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

    def resolved(self, args: dict) -> "Kernel":
        """This kernel with the parameter specs that take their shape or dtype from the
        argument (Tensor(), Tensor([], dt), [d, ...]) made concrete for args
        (name -> (ndim, DType)); itself when none does."""
        if not any(s.open for _, s in self.tensor_params):
            return self
        import copy
        k = copy.copy(self)
        k.tensor_params = [(n, s.resolve(*args[n]) if n in args else s)
                           for n, s in self.tensor_params]
        return k

    def trace(self, consts: dict | None = None, static: dict | None = None,
              target=None) -> Document:
        """The Tensor Graph for these constants and STATIC sizes. Tile checks are made
        against target (a Target; default: the host), which the document then records."""
        return trace_kernel(self, consts or {}, static or {}, target)


def trace_kernel(k: Kernel, consts: dict, static: dict, target=None) -> Document:
    """Trace every path of the kernel and merge them into one Tensor Graph document."""
    from ..targets import load_target
    machine = target or load_target("host")
    new_trace()
    op_file = os.path.basename(inspect.getsourcefile(k.fn) or "<unknown>")
    const_vals = _bind_consts(k, consts)
    static = _complete_static(k, op_file, const_vals, static, machine)
    before = _settings_before(k)
    decisions: list = []
    merged, first = None, None
    npaths = 0
    while True:
        b = _trace_path(k, op_file, const_vals, static, list(decisions), machine,
                        scope=before["scope"])
        npaths += 1
        if first is None:
            first, merged = b, b.regions[0]
        else:
            _merge_region(merged, b.regions[0], {})
            first.written |= b.written
            first.constraints += [c for c in b.constraints if c not in first.constraints]
            first.pass_options += [e for e in b.pass_options if e not in first.pass_options]
            first.print_after += [p for p in b.print_after if p not in first.print_after]
            first.subst.update(b.subst)
        d = list(b.decisions)
        while d and d[-1] is False:
            d.pop()
        if not d:
            break
        d[-1] = False
        decisions = d
        if npaths >= MAX_PATHS:
            raise CompileError(f"{k.name}: more than {MAX_PATHS} runtime branch combinations; "
                               f"reduce the number of symbolic `if`s or unroll factors")
    _check_no_markers(merged)
    _unique_locals(merged)
    b = first
    for p in merged:
        if p.name == "param":
            p.attrs["role"] = "output" if p.result.name in b.written else "input"
    _warn_rebound(k, b)
    doc = Document("tensor", merged)
    _normalise(doc, b)
    doc.attrs = {"kernel": k.name, "file": op_file,
                 "params": [n for n, _ in k.tensor_params],
                 "symbols": b.symbols, "constraints": b.constraints,
                 "consts": {n: v for n, v in const_vals.items() if _is_plain(v)},
                 **passopts.module_attrs(before, b)}
    if target is not None:
        doc.attrs["target"] = target.record()
    lines = source_lines(doc, inspect.getsourcefile(k.fn))
    if lines:
        doc.attrs["lines"] = lines
    return doc


MAX_LINE = 200      # characters of an op file line kept for the comments of generated code


def source_lines(doc: Document, path: str | None) -> list:
    """[[file, line, text], ...] of the op file's lines that ops of doc are located at, for
    the comments of the listing and the generated code (stripped, at most MAX_LINE long)."""
    if not path:
        return []
    name = os.path.basename(path)
    wanted = sorted({op.loc.line for op in doc.walk()
                     if op.loc is not None and op.loc.file == name and op.loc.line > 0})
    text = linecache.getlines(path)
    return [[name, n, text[n - 1].strip()[:MAX_LINE]] for n in wanted
            if n <= len(text) and text[n - 1].strip()]


def _complete_static(k: Kernel, op_file: str, const_vals: dict, static: dict, target) -> dict:
    """static with the sizes of the STATIC dims it lacks that the kernel's own shape rules
    fix: a probe trace takes them as symbols, and where the trace equates one with a known
    size (y_1 with x_1 through `y[:] = x + x`), that size is the dim's. A dim left open is
    the usual "give its size" error."""
    missing = [f"{pname}_{axis}" for pname, spec in k.tensor_params
               for axis, d in enumerate(spec.shape or ())
               if d is STATIC and f"{pname}_{axis}" not in static]
    if not missing:
        return static
    try:
        b = _trace_path(k, op_file, const_vals, static, [], target, open_static=True)
    except errors.PyptoError:
        b = None
    found = dict(static)
    for sname in missing:
        v = b.norm(E.sym(sname)) if b is not None else None
        if not isinstance(v, int):
            pname, axis = sname.rsplit("_", 1)
            raise CompileError(f"{pname} dim {axis} is STATIC: give its size (--bind {sname}=N)")
        found[sname] = v
    new_trace()
    return found


def _settings_before(k: Kernel) -> dict:
    """The pass settings in force when k starts to trace: those made outside any kernel,
    then the jit's pass_options= (frontend/passopts.py)."""
    out = passopts.snapshot()
    own = k.options.get("pass_settings")
    if own:
        out = {"entries": out["entries"] + own["entries"],
               "print_after": out["print_after"] + own["print_after"],
               "scope": own["scope"] if own["scope"] is not None else out["scope"]}
    return out


def _trace_path(k: Kernel, op_file: str, const_vals: dict, static: dict, decisions: list,
                target, open_static: bool = False, scope=None):
    b = _Builder(op_file, decisions, target)
    b.scope = scope
    args, symbols = [], {}
    lines = _param_lines(k.fn)
    for idx, (pname, spec) in enumerate(k.tensor_params):
        if spec.open:
            raise CompileError(f"{k.name}: parameter {pname} takes its shape or dtype from the "
                               f"argument ({spec!r}); call the kernel with arrays, or write "
                               f"the dims out (pypto.STATIC for a size given per call)",
                               Loc(op_file, lines[pname]))
        shape = []
        for axis, d in enumerate(spec.shape):
            if isinstance(d, int):
                shape.append(d)
                continue
            sname = d if isinstance(d, str) else f"{pname}_{axis}"
            if d is STATIC and not (open_static and sname not in static):
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
        ploc = Loc(op_file, lines[pname])
        packed = spec.dtype is int4.INT4              # its bytes (frontend/int4.py)
        v = Value(int4._param(pname, shape, ploc) if packed else
                  TensorType(spec.dtype, tuple(shape)), pname)
        b.regions[0].append(Op("param", [], [v], {"index": idx}, [], ploc))
        t = TraceTensor(v, memory=pname, is_param=True)
        args.append(int4.Int4Tensor(t) if packed else t)
    b.symbols = symbols
    _current.append(b)
    try:
        k.fn(*args, **const_vals)
    except errors.PyptoError:
        raise
    except RecursionError:
        raise CompileError(f"{k.name}: tracing recursed too deeply") from None
    except Exception as exc:
        raise CompileError(f"{k.name} raised {type(exc).__name__} while tracing: {exc}",
                           _user_loc(exc)) from None
    finally:
        _current.pop()
    return b


def _param_lines(fn) -> dict:
    """Line of each parameter in the def (the function's first line where unknown)."""
    import ast
    import textwrap
    first = fn.__code__.co_firstlineno
    out = {n: first for n in fn.__code__.co_varnames[:fn.__code__.co_argcount]}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__:
            for a in node.args.args:
                out[a.arg] = first + a.lineno - 1
            break
    return out


# -- merging paths --------------------------------------------------------------------------

def _same_op(a: Op, b: Op, vm: dict) -> bool:
    if a.name != b.name or a.loc != b.loc or len(a.operands) != len(b.operands):
        return False
    if [vm.get(v, v) for v in b.operands] != a.operands:
        return False
    if [r.type for r in a.results] != [r.type for r in b.results]:
        return False
    if [r.name for r in a.results] != [r.name for r in b.results]:
        return False
    return a.attrs == b.attrs


def _remap(ops: list, vm: dict) -> list:
    for top in ops:
        for op in top.walk():
            op.operands = [vm.get(v, v) for v in op.operands]
    return ops


def _merge_region(a_ops: list, b_ops: list, vm: dict) -> None:
    """Merge path b into the merged graph a (a region list, edited in place)."""
    i = 0
    while i < len(b_ops):
        bo = b_ops[i]
        if i >= len(a_ops):
            a_ops.extend(_remap(b_ops[i:], vm))
            return
        ao = a_ops[i]
        if bo.name == "branch" and ao.name == "if" and ao.attrs["cond"] == bo.attrs["cond"] \
                and ao.attrs.get("id") == bo.attrs["id"]:
            side = ao.regions[0 if bo.attrs["taken"] else 1]
            _merge_region(side, b_ops[i + 1:], vm)
            return
        if bo.name == "branch" and ao.name == "branch" and ao.attrs["id"] == bo.attrs["id"]:
            if ao.attrs["taken"] == bo.attrs["taken"]:
                i += 1
                continue
            rest_a, rest_b = a_ops[i + 1:], _remap(b_ops[i + 1:], vm)
            then, other = (rest_a, rest_b) if ao.attrs["taken"] else (rest_b, rest_a)
            a_ops[i:] = [Op("if", [], [], {"cond": ao.attrs["cond"], "id": ao.attrs["id"]},
                            [then, other], ao.loc)]
            return
        if not _same_op(ao, bo, vm):
            raise CompileError(f"the traced paths of the kernel differ at {bo.name} (line "
                               f"{bo.loc.line if bo.loc else '?'}) without a runtime branch "
                               f"before it: does the kernel depend on state outside the "
                               f"trace (a counter, randomness)?", bo.loc)
        for ra, rb in zip(ao.results, bo.results):
            vm[rb] = ra
        for ra, rb in zip(ao.regions, bo.regions):
            _merge_region(ra, rb, vm)
        i += 1


def _unique_locals(ops: list) -> None:
    """Locals are numbered per traced path, so two branches' different locals can share a
    name (a branch that makes more of them first); the later ones get a suffix, since the
    levels below keep a local's memory by name."""
    seen: set = set()
    for top in ops:
        for op in top.walk():
            if op.name != "tensor":
                continue
            name, k = op.result.name, 1
            while op.result.name in seen:
                op.result.name = f"{name}_{k}"
                k += 1
            seen.add(op.result.name)


def _check_no_markers(ops: list) -> None:
    for top in ops:
        for op in top.walk():
            if op.name == "branch":
                raise CompileError("internal error: a runtime branch was not resolved", op.loc)
            if op.name == "if":
                op.attrs.pop("id", None)


# -- finishing ------------------------------------------------------------------------------

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
    """`y = expr` on a tensor parameter rebinds the name and writes nothing: a warning, or
    the error at that line when the kernel then writes no output at all."""
    rebound = _rebinds(k, b)
    if not b.written:
        if rebound:
            name, line = rebound[0]
            raise CompileError(f"{k.name} writes no output: assigning to parameter '{name}' "
                               f"rebinds the name and writes nothing; write into it with "
                               f"{name}[:] = ...", Loc(b.op_file, line) if line else None)
        raise CompileError(f"{k.name} writes no output: write a result into an output "
                           f"parameter with out[:] = ... or pypto.assemble(value, offsets, "
                           f"out)", Loc(b.op_file, _def_line(k.fn)))
    for name, line in rebound:
        errors.warn(f"assigning to parameter '{name}' rebinds the name and writes "
                    f"nothing; write into it with {name}[:] = ...",
                    Loc(b.op_file, line) if line else None)


def _def_line(fn) -> int:
    """The line of fn's `def` (co_firstlineno is its first decorator's)."""
    try:
        src, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return fn.__code__.co_firstlineno
    return next((start + i for i, ln in enumerate(src) if ln.lstrip().startswith("def ")),
                start)


def _rebinds(k: Kernel, b: _Builder) -> list:
    """(name, line) of each assignment to a tensor parameter the kernel never writes."""
    names = {n for n, _ in k.tensor_params}
    line, out = None, []
    for ins in dis.get_instructions(k.fn):
        if ins.starts_line is not None:
            line = ins.starts_line
        if ins.opname in ("STORE_FAST", "STORE_NAME") and ins.argval in names \
                and ins.argval not in b.written:
            out.append((ins.argval, line))
    return out


def _normalise(doc: Document, b: _Builder) -> None:
    """Apply the final symbol unification to every type and attribute."""
    if not b.subst:
        return
    for op in doc.walk():
        for v in op.results:
            t = v.type
            if isinstance(t, TensorType):
                v.type = TensorType(t.dtype, tuple(b.norm(d) for d in t.shape))
        op.attrs = E.substitute_attrs(op.attrs, b.subst)


def find_kernels(module) -> list[Kernel]:
    return [v for v in vars(module).values() if isinstance(v, Kernel)]


