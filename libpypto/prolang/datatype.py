"""dtype specialisation: `@pl.jit(datatype={param: var})` (reference section 2.2; the real
`pypto_pro.runtime.jit` `_validate_datatype_*`).

    @pl.jit(datatype={"x": "T", "y": "T", "out": "T"})
    def vadd(x: pl.Tensor[[pl.DYNAMIC, 64], "T"], y: pl.Tensor[[pl.DYNAMIC, 64], "T"],
             out: pl.Tensor[[pl.DYNAMIC, 64], "T"]):
        tt = pl.TileType([16, 64], T, pl.MemorySpace.Vec)     # T: a pl.DT_* constant here
        ...
    vadd[None, 4, {"x": pl.DT_FP16, "y": pl.DT_FP16, "out": pl.DT_FP16}](x, y, out)

Choices (also in docs/pro.md):
- The schema maps parameter names to dtype variable names (identifiers that are neither a
  parameter nor a TilingKey field). Several parameters may share a variable; the launch must
  then give them one dtype.
- pypto has no `pl.Ptr` yet, so a datatype parameter is a `pl.Tensor` whose annotation names
  its variable as its dtype: `pl.Tensor[[dims], "T"]` (a string), or the bare name T under
  `from __future__ import annotations`. A concrete dtype on a datatype parameter, or a
  variable on a parameter the schema does not list, is an error.
- The launch gives a dtype dict, `{param: pl.DT_*}`, as the bracket's third item
  (`k[stream, block_dim, dtypes]`), or fourth after the TilingKey dict
  (`k[stream, block_dim, key, dtypes]`), as in the reference; `k(...)` is refused. The arrays
  must have those dtypes. In the body each variable is a compile-time constant (a pl.DT_*
  dtype): TileTypes may use it and `if T == pl.DT_FP16:` keeps only the arm taken.
- The compile cache is keyed on the dtype dict too: each dtype combination compiles once.
- pypto-trace: `--const x=f16` sets a datatype parameter's dtype (names as f16, fp16 or
  DT_FP16), the other --const values are TilingKey fields.
"""
from __future__ import annotations

from ..errors import CompileError
from .dsl import DTypeVar, TensorSpec, dtype_named


def schema(datatype) -> dict | None:
    """The decorator's datatype mapping, checked on its own."""
    if datatype is None:
        return None
    if not isinstance(datatype, dict) or not datatype:
        raise CompileError(f"@pl.jit datatype= must be a non-empty dict {{param name: dtype "
                           f"variable name}}, not {datatype!r}")
    for p, v in datatype.items():
        if not isinstance(p, str) or not p:
            raise CompileError(f"@pl.jit datatype=: parameter names must be strings, not {p!r}")
        if not isinstance(v, str) or not v.isidentifier():
            raise CompileError(f"@pl.jit datatype=: the variable of parameter {p!r} must be a "
                               f"Python identifier, not {v!r}")
    return dict(datatype)


def check_context(k, params: list) -> None:
    """The schema against the kernel's parameters and TilingKey fields, and the annotations
    against the schema."""
    spec = k.datatype
    names = {p.name for p in params}
    fields = {n for n, _ in k.key_fields}
    if spec is None:
        for p in params:
            if p.kind == "tensor" and isinstance(p.spec.dtype, DTypeVar):
                raise CompileError(f"kernel {k.name}: parameter {p.name} has dtype variable "
                                   f"{p.spec.dtype.name}, but the kernel has no datatype=")
        return
    missing = sorted(set(spec) - names)
    if missing:
        raise CompileError(f"kernel {k.name}: datatype= names {missing}, which are not "
                           f"parameters")
    for what, clash in (("parameters", names), ("TilingKey fields", fields)):
        bad = sorted(set(spec.values()) & clash)
        if bad:
            raise CompileError(f"kernel {k.name}: datatype variables {bad} clash with "
                               f"{what}")
    for p in params:
        _check_param(k, p, spec)


def _check_param(k, p, spec: dict) -> None:
    var = spec.get(p.name)
    dt = p.spec.dtype if isinstance(p.spec, TensorSpec) else None
    if var is not None and p.kind != "tensor":
        raise CompileError(f"kernel {k.name}: datatype parameter {p.name} must be a "
                           f"pl.Tensor (scalars and TilingData have fixed types)")
    if var is not None and not (isinstance(dt, DTypeVar) and dt.name == var):
        raise CompileError(f"kernel {k.name}: parameter {p.name} is in datatype= with "
                           f"variable {var}: annotate it pl.Tensor[[...], {var!r}]")
    if var is None and isinstance(dt, DTypeVar):
        raise CompileError(f"kernel {k.name}: parameter {p.name} has dtype variable {dt.name} "
                           f"but datatype= does not list {p.name!r}")


def launch_consts(k, dtypes) -> dict:
    """{variable: pl.DT_*} of one launch's dtype dict (checked: every parameter of the
    schema, a dtype, shared variables agreeing); {} for a kernel without datatype=."""
    spec = k.datatype
    if spec is None:
        if dtypes:
            raise CompileError(f"{k.name} has no datatype=, but the launch gives a dtype dict "
                               f"{dtypes!r}")
        return {}
    if not isinstance(dtypes, dict):
        form = "[stream, block_dim, key, dtypes]" if k.key_fields else \
            "[stream, block_dim, dtypes]"
        raise CompileError(f"{k.name} has datatype=: launch it as {k.name}{form} with dtypes "
                           f"a dict {{param: pl.DT_*}} of {sorted(spec)}")
    missing, extra = sorted(set(spec) - set(dtypes)), sorted(set(dtypes) - set(spec))
    if missing:
        raise CompileError(f"{k.name}: no dtype for datatype parameter(s) {missing} (the launch "
                           f"dict {{param: pl.DT_*}}; pypto-trace --const {missing[0]}=f16)")
    if extra:
        raise CompileError(f"{k.name}: the dtype dict names {extra}, which datatype= does not "
                           f"list (it lists {sorted(spec)})")
    out: dict = {}
    for p, var in spec.items():
        dt = dtype_named(dtypes[p])
        if dt is None:
            raise CompileError(f"{k.name}: dtype of {p} must be a pl.DT_* dtype (or a name "
                               f"such as 'f16'), not {dtypes[p]!r}")
        if out.get(var, dt) != dt:
            raise CompileError(f"{k.name}: parameters sharing datatype variable {var} get "
                               f"different dtypes ({out[var]} and {dt})")
        out[var] = dt
    return out


def resolve(spec, consts: dict):
    """A parameter annotation's dtype with the datatype variables bound."""
    dt = spec.dtype
    return consts[dt.name] if isinstance(dt, DTypeVar) else dt


def split_consts(k, consts: dict) -> tuple:
    """pypto-trace's --const values: (TilingKey dict, dtype dict)."""
    spec = k.datatype or {}
    key = {n: v for n, v in consts.items() if n not in spec}
    dts = {n: v for n, v in consts.items() if n in spec}
    return key, (dts if spec else None)
