"""A Pro kernel: its signature and its trace into a block-level document (DESIGN.md section 4).

Parameters (reference section 1.2), in order: GM tensors `pl.Tensor[[dims], dtype]`,
runtime scalars annotated with a dtype (`n: pl.DT_INT32`), and at most one TilingData
dataclass, last. A TilingKey class (`@pl.jit(tiling_key=Key)`) has `pl.TilingKeyField`
attributes, in class order; each field's launch value is a compile-time constant named by
the field in the body, and `is_valid(self, key)` (key: the dict of values) may refuse
combinations. `@pl.jit(datatype={param: var})` (datatype.py) makes tensor dtypes launch-time
constants, bound in the body like TilingKey fields.

The document (level "exec", so every later tool takes it; `pypto-lower` verifies it and
passes it through): a `source` holding only the tensor params, a `gm` per tensor, one
`program` per section (core "vector" or "cube", grid rank 1: g0 is the block index) whose
body is the traced tile instructions and sync instructions, and one `task` per program over
the block grid (block_num for a cube or vector-only program, 2 * block_num for the vector
program of a mixed kernel). Program scalars, in order: block_num, the DYNAMIC dims
(x_0 ...), the scalar parameters, the TilingData fields (<param>_<field>). The module
attribute `pro` says how to launch it: mixed, the scalars and their dtypes, the buffer sizes
the plan was checked against, the TilingKey values.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import os


from ..errors import CompileError, PyptoError
from ..ir import expr as E
from ..ir.core import Document, Loc, make
from ..ir.simt_ops import written as simt_written
from ..ir.types import DType, TensorType
from . import datatype as dtv
from . import pipeline as pipe
from . import state
from .dsl import STATIC, DYNAMIC, DTypeVar, Scalar, TensorSpec, TilingKeyField
from .ops import TensorView
from .rewrite import rewrite
from .sugar import ELEM, ArrayView, array_field
from .tiles import check_overlaps

ARCHS = {"a2": "a2", "a3": "a3", "a5": "950", "950": "950"}


class Param:
    def __init__(self, name: str, kind: str, spec, index: int):
        self.name, self.kind, self.spec, self.index = name, kind, spec, index


class ProKernel:
    """The traceable part of @pl.jit: signature, TilingKey and the trace."""

    def __init__(self, fn, auto_mutex=True, tiling_key=None, datatype=None, name=None,
                 arch=None, pipeline=None, compile_timeout=None):
        self.fn = fn
        self.name = name or fn.__name__
        self.file = os.path.basename(fn.__code__.co_filename)
        if arch is not None and arch not in ARCHS:
            raise CompileError(f"@pl.jit arch={arch!r}: use a2, a3 or a5 (the 950)")
        if pipeline is not None:
            pipe.check_config(pipeline)
        self.pipeline = pipeline        # pl.pipeline.PipelineConfig (pipeline.py) or None
        self.datatype = dtv.schema(datatype)
        self.options = {"auto_mutex": bool(auto_mutex), "arch": arch or "a2",
                        "name": self.name}
        self.key_class = tiling_key
        self.key_fields = _key_fields(tiling_key) if tiling_key is not None else []
        self._params = None

    @property
    def params(self) -> list:
        if self._params is None:
            params = _signature(self.fn, self.datatype)
            dtv.check_context(self, params)
            self._params = params
        return self._params

    @property
    def tensors(self) -> list:
        return [p for p in self.params if p.kind == "tensor"]

    def check_key(self, key: dict | None) -> dict:
        """The launch's TilingKey dict, checked: every field, a listed value, is_valid."""
        try:
            return self._check_key(key)
        except CompileError as exc:
            exc.loc = exc.loc or Loc(self.file, self.fn.__code__.co_firstlineno)
            raise

    def _check_key(self, key: dict | None) -> dict:
        if not self.key_fields:
            if key:
                raise CompileError(f"{self.name} has no tiling_key, but the launch gives {key}")
            return {}
        key = dict(key or {})
        names = [n for n, _ in self.key_fields]
        for n in key:
            if n not in names:
                raise CompileError(f"{self.name}: unknown TilingKey field {n!r} (fields: "
                                   f"{', '.join(names)})")
        for n, f in self.key_fields:
            if n not in key:
                raise CompileError(f"{self.name}: the launch must give TilingKey field {n!r}")
            if key[n] not in f.values:
                raise CompileError(f"{self.name}: TilingKey {n}={key[n]!r} is not one of "
                                   f"{f.values}")
        valid = getattr(self.key_class, "is_valid", None)
        if valid is not None and not valid(self.key_class(), key):
            raise CompileError(f"{self.name}: TilingKey {key} is refused by "
                               f"{self.key_class.__name__}.is_valid")
        return key

    def check_dtypes(self, dtypes) -> dict:
        """A launch's dtype dict, checked: {datatype variable: pl.DT_*} (datatype.py)."""
        try:
            self.params
            return dtv.launch_consts(self, dtypes)
        except CompileError as exc:
            exc.loc = exc.loc or Loc(self.file, self.fn.__code__.co_firstlineno)
            raise

    def trace(self, static: dict, key: dict, target_buffers: dict,
              dtypes: dict | None = None) -> Document:
        """The block-level document for STATIC sizes `static` ({param_axis: n}), the
        TilingKey values `key` and the datatype= launch dict `dtypes` ({param: pl.DT_*})."""
        key = self.check_key(key)
        dts = self.check_dtypes(dtypes)
        sections = _sections(self.fn)
        t = state.Trace(self, _source_file(self.fn), target_buffers,
                        {"vector", "cube"} <= sections, bool(sections),
                        self.options["auto_mutex"])
        t.dtypes = dts
        t.pipeline = self.pipeline
        t.pipeline_loop, t.acc_to_vec = pipe.loop, pipe.acc_to_vec     # (state.py, ops.py)
        args, scalars = self._trace_args(static, dts)
        t.scalar_dtypes = dict(scalars)
        helpers = {"__pl_branch": state.branch, "__pl_ifexp": state.ifexp,
                   "__pl_logic": state.logical}
        fn, t.source_file = rewrite(self.fn, self.file, helpers, {**key, **dts})
        t.rewrite_env = (helpers, {**key, **dts})      # for pipeline stages (pipeline.py)
        state._STATE.append(t)
        try:
            fn(*args)
            check_overlaps(t)
        except PyptoError as exc:
            if exc.loc is None:
                exc.loc = _user_line(t, exc)
            raise
        except Exception as exc:
            raise CompileError(f"{type(exc).__name__}: {exc}", _user_line(t, exc)) from None
        finally:
            state._STATE.pop()
        if not t.programs:
            raise CompileError(f"kernel {self.name} has no tile instructions", None)
        for sp in ("bias", "scale_left", "scale_right"):    # only the buffers a kernel uses
            if not any(x.type.space == sp for x in t.tiles):
                target_buffers = {s: n for s, n in target_buffers.items() if s != sp}
        doc = _document(self, t, scalars, key, target_buffers)
        for p in self.tensors:              # STATIC sizes: symbols with their value
            for axis, d in enumerate(p.spec.shape):
                sym = f"{p.name}_{axis}"
                if d is STATIC:
                    doc.attrs["symbols"][sym] = {"kind": "static", "dims": [[p.name, axis]],
                                                 "value": int(static[sym])}
        return doc

    def _trace_args(self, static: dict, dts: dict) -> tuple:
        args, scalars = [], [(state.BLOCK_NUM, "i64")]
        for p in self.params:
            if p.kind == "tensor":
                dims = []
                for axis, d in enumerate(p.spec.shape):
                    sym = f"{p.name}_{axis}"
                    if d is DYNAMIC:
                        dims.append(E.sym(sym))
                        scalars.append((sym, "i64"))
                    elif d is STATIC:
                        if sym not in static:
                            raise CompileError(f"{self.name}: STATIC dim {sym} needs a size "
                                               f"(--bind {sym}=N)")
                        dims.append(int(static[sym]))
                    else:
                        dims.append(d)
                args.append(TensorView(p.name, dtv.resolve(p.spec, dts), dims, p.index))
            elif p.kind == "scalar":
                scalars.append((p.name, p.spec.name))
                args.append(Scalar(E.sym(p.name)))
            else:
                fields = {}
                for f in dataclasses.fields(p.spec):
                    sym = f"{p.name}_{f.name}"
                    arr = _array_field(self, f)
                    if arr is not None:     # pl.Array[int, N] / int[N]: N scalars (sugar.py)
                        syms = [f"{sym}_{i}" for i in range(arr.n)]
                        scalars += [(s, ELEM[arr.elem]) for s in syms]
                        fields[f.name] = ArrayView(f"{p.name}.{f.name}",
                                                   [Scalar(E.sym(s)) for s in syms])
                        continue
                    scalars.append((sym, _field_dtype(self, f)))
                    fields[f.name] = Scalar(E.sym(sym))
                args.append(_TilingView(p.spec.__name__, fields))
        return args, scalars


class _TilingView:
    def __init__(self, cls: str, fields: dict):
        self.__dict__.update(fields)
        self._cls = cls


def _array_field(k, f):
    try:
        return array_field(f.type)
    except CompileError as exc:
        raise CompileError(f"{k.name}: TilingData field {f.name}: {exc}") from None


def _field_dtype(k, f) -> str:
    ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    kinds = {"int": "i64", "bool": "i64", "float": "f32"}
    if ann not in kinds:
        raise CompileError(f"{k.name}: TilingData field {f.name}: {ann} is not int, float or "
                           f"bool (or an array: pl.Array[int, N], int[N])")
    return kinds[ann]


def _key_fields(cls) -> list:
    fields = [(n, v) for n, v in vars(cls).items() if isinstance(v, TilingKeyField)]
    if not fields:
        raise CompileError(f"tiling_key {cls.__name__} has no pl.TilingKeyField attributes")
    if sum(f.bits for _, f in fields) > 64:
        raise CompileError(f"tiling_key {cls.__name__}: more than 64 bits")
    return fields


def _signature(fn, datatype=None) -> list:
    names_ = {v: DTypeVar(v) for v in (datatype or {}).values()}
    try:
        ann = inspect.get_annotations(fn, eval_str=True, locals=names_)
    except Exception as exc:
        raise CompileError(f"kernel {fn.__name__}: cannot read its annotations ({exc})") from None
    out = []
    names = list(inspect.signature(fn).parameters)
    for i, name in enumerate(names):
        a = ann.get(name)
        if isinstance(a, DTypeVar):
            raise CompileError(f"kernel {fn.__name__}: scalar parameter {name} cannot take a "
                               f"datatype variable (scalars have fixed dtypes)")
        if isinstance(a, TensorSpec):
            kind = "tensor"
        elif isinstance(a, DType):
            kind = "scalar"
        elif dataclasses.is_dataclass(a) and isinstance(a, type):
            if i != len(names) - 1:
                raise CompileError(f"kernel {fn.__name__}: the TilingData parameter {name} must "
                                   f"be the last")
            kind = "tiling"
        else:
            raise CompileError(f"kernel {fn.__name__}: parameter {name} needs an annotation: "
                               f"pl.Tensor[[dims], dtype], a dtype (a runtime scalar) or a "
                               f"TilingData dataclass")
        out.append(Param(name, kind, a, sum(1 for p in out if p.kind == "tensor")))
    return out


def _sections(fn) -> set:
    try:
        tree = ast.parse(_dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    out = set()
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else None
        if name in ("section_vector", "section_cube"):
            out.add(name.removeprefix("section_"))
    return out


def _dedent(src: str) -> str:
    import textwrap
    return textwrap.dedent(src)


def _source_file(fn) -> str:
    return inspect.getsourcefile(fn) or fn.__code__.co_filename


def _user_line(t, exc) -> Loc | None:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == t.source_file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return Loc(t.kernel.file, line) if line else None


def _document(k: ProKernel, t, scalars: list, key: dict, buffers: dict) -> Document:
    names = [s for s, _ in scalars]
    written = set()
    for prog in t.programs.values():
        for top in prog.body:
            for op in top.walk():
                if op.name == "tstore":
                    written.add(op.operands[1].name)
                elif op.name == "simt_launch":
                    written.update(simt_written(op))
    params, gms = [], []
    for p in k.tensors:
        shape = _shape_of(p, t)
        role = "output" if p.name in written else "input"
        dt = dtv.resolve(p.spec, t.dtypes)
        params.append(make("param", (), (TensorType(dt, shape),),
                           {"index": p.index, "role": role}, names=[p.name]))
        gms.append(make("gm", (), (TensorType(dt, shape),),
                        {"index": p.index, "param": p.name, "role": role}, names=[p.name]))
    body = [make("source", regions=[params])] + gms
    for i, core in enumerate(c for c in ("cube", "vector") if c in t.programs):
        prog = t.programs[core]
        body.append(_program(k, prog, f"p{i}", names, t))
        grid = E.mul(2, E.sym(state.BLOCK_NUM)) if t.mixed and core == "vector" else \
            E.sym(state.BLOCK_NUM)
        body.append(make("task", gms and [g.result for g in gms], (), {
            "program": f"p{i}", "block": core, "grid": [grid],
            "scalars": [E.sym(n) for n in names], "reads": [], "writes": [],
            "ops": _op_names(prog), "after": []}, loc=None))
    symbols = {n: {"kind": "dynamic" if n in _dyn(k) else "named",
                   "dims": [list(_dyn(k)[n])] if n in _dyn(k) else []} for n in names}
    attrs = {"kernel": k.name, "file": k.file, "params": [p.name for p in k.tensors],
             "symbols": symbols, "constraints": [], "consts": dict(key),
             "pro": {"mixed": t.mixed, "scalars": [[n, d] for n, d in scalars],
                     "buffers": dict(buffers), "options": dict(k.options),
                     "tiling_key": dict(key)}}
    if k.datatype:
        attrs["pro"]["datatype"] = {p: dtv.resolve(q.spec, t.dtypes).name
                                    for q in k.tensors for p in [q.name] if p in k.datatype}
    return Document("exec", body, attrs)


def _dyn(k) -> dict:
    return {f"{p.name}_{a}": (p.name, a) for p in k.tensors
            for a, d in enumerate(p.spec.shape) if d is DYNAMIC}


def _shape_of(p, t) -> tuple:
    for prog in t.programs.values():
        if p.name in prog.args:
            return tuple(prog.args[p.name].result.type.shape)
    return tuple(E.sym(f"{p.name}_{a}") if d is DYNAMIC else d for a, d in
                 enumerate(p.spec.shape))


def _program(k, prog, name: str, scalars: list, t):
    tensors = k.tensors
    args = []
    for p in tensors:
        op = prog.args.get(p.name)
        if op is None:
            view = TensorView(p.name, dtv.resolve(p.spec, t.dtypes), list(_shape_of(p, t)),
                              p.index)
            op = make("arg", (), (view.ir_type(),), {"index": p.index}, names=[p.name])
        args.append(op)
    region = args + prog.hoisted + prog.body
    return make("program", regions=[region], attrs={
        "name": name, "core": prog.core, "grid_rank": 1, "scalars": list(scalars),
        "buffers": {}, "ops": _op_names(prog)}, loc=(region[len(args)].loc
                                                    if len(region) > len(args) else None))


def _op_names(prog) -> list:
    seen = []
    for top in prog.body:
        for op in top.walk():
            if op.name not in seen and op.name not in ("for", "if", "tile"):
                seen.append(op.name)
    return seen



