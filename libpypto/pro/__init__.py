"""Pro mode: `import libpypto.pro as pl` (DESIGN.md section 4). The language
(libpypto.prolang, every name re-exported here) and `pl.jit`: launch, compile cache, run.

    @pl.jit                                   # or @pl.jit(auto_mutex=True, tiling_key=Key,
    def vadd(x: pl.Tensor[[pl.DYNAMIC, 1024], pl.DT_FP32], ...):  #  name=..., arch="a2")
        ...
    vadd[8](x, y, z)                   # block_dim 8
    vadd[None, 8](x, y, z)             # [stream, block_dim]; stream is accepted, may be None
    attn[None, 4, {"Causal": 1}](...)  # [stream, block_dim, TilingKey values]
    vadd(x, y, z)                      # block_dim 1
    k[None, 4, {"x": pl.DT_FP16}](...) # @pl.jit(datatype=...): [stream, block_dim, dtypes]
    k[None, 4, key, dtypes](...)       #   with a TilingKey too (prolang/datatype.py)

Arguments: numpy arrays (anything numpy.asarray takes) for the tensors, in order; Python
numbers for the runtime scalars; a TilingData instance last. Launch is synchronous on the
host (results are in the arrays when the call returns).

The compile cache (per kernel, in-process) is keyed on the tensors' dtypes, the STATIC
sizes, the TilingKey values, the datatype= dtype dict, the jit options and the pypto
version; DYNAMIC dims, scalars, TilingData and block_dim are runtime values and never
recompile. `kernel.compiles` counts
compiles, `kernel.last_doc` is the last launch's block-level document. The race and sync
checker runs on every launch (`kernel.check = False`, or `check=False` on
`kernel.launch(...)`, skips it). `kernel.backend = "c"` runs the kernel's C (compiled once
per signature, after the checker has run the Pro runner on copies) instead of the Pro
runner (numpy, the default). A kernel with debug instructions (pl.printf, pl.dump_data;
runtime/pro_debug.py) prints to sys.stdout and writes its dumps to `kernel.dump_dir`
(default the current directory); a failing pl.pto_assert raises ProAssertError.
"""
from __future__ import annotations

import dataclasses

from ..analysis.bind import check_array
from ..errors import RELEASE, UsageError
from .. import prolang as _lang
from ..prolang import ProKernel
from ..prolang.datatype import resolve
from ..prolang.dsl import DYNAMIC, STATIC, dtype_named
from ..prolang.sugar import array_field


class JitKernel(ProKernel):
    """A Pro kernel you can launch."""

    def __init__(self, fn, **options):
        super().__init__(fn, **options)
        self._cache: dict = {}
        self.compiles = 0
        self.check = True
        self.threads = None
        self.last_doc = None
        self.backend = "numpy"
        self._dtypes = ()
        self.dump_dir = None        # pl.dump_data's directory (None: the current one)

    def __getitem__(self, item):
        item = item if isinstance(item, tuple) else (item,)
        if len(item) == 1:
            return _Launch(self, None, item[0], None, None)
        if len(item) == 2:
            return _Launch(self, item[0], item[1], None, None)
        if len(item) == 3 and self.datatype and not self.key_fields:
            return _Launch(self, item[0], item[1], None, item[2])
        if len(item) == 3 or (len(item) == 4 and self.datatype):
            return _Launch(self, item[0], item[1], item[2], item[3] if len(item) == 4 else None)
        raise UsageError(f"{self.name}[...] takes [block_dim], [stream, block_dim], "
                         f"[stream, block_dim, tiling_key_dict or dtype_dict] or "
                         f"[stream, block_dim, tiling_key_dict, dtype_dict], not {len(item)} "
                         f"items")

    def __call__(self, *args):
        return self.launch(args, 1)

    def compile(self, static: dict, key: dict, dtypes: dict | None = None):
        """The document for one signature (cached)."""
        from ..driver import pro_trace
        dts = tuple(sorted((p, getattr(dtype_named(d), "name", str(d)))
                           for p, d in (dtypes or {}).items()))     # "f16" == pl.DT_FP16
        ck = (tuple(sorted(static.items())), tuple(sorted(key.items())),
              tuple(sorted(self.options.items())), RELEASE, self._dtypes, dts)
        ck = ck + (self.backend,)
        doc = self._cache.get(ck)
        if doc is None:
            doc = pro_trace(self, static, key, dtypes=dtypes)
            if self.backend == "c":
                from ..driver import pro_code
                doc = pro_code(doc)
            self._cache[ck] = doc
            self.compiles += 1
        return doc

    def launch(self, args: tuple, block_dim, key: dict | None = None, check: bool | None = None,
               dtypes: dict | None = None):
        from ..driver import pro_launch
        from ..ir.core import Loc
        where = Loc(self.file, self.fn.__code__.co_firstlineno)   # launch errors name the def
        if not isinstance(block_dim, int) or isinstance(block_dim, bool) or block_dim < 1:
            raise UsageError(f"{self.name}: block_dim must be an int >= 1, not {block_dim!r}",
                             where)
        consts = self.check_dtypes(dtypes)
        try:
            arrays, scalars, static = bind_args(self, args, consts)
        except UsageError as exc:
            exc.loc = exc.loc or where
            raise
        key = self.check_key(key)
        self._dtypes = tuple((n, str(a.dtype)) for n, a in arrays.items())
        doc = self.compile(static, key, dtypes if self.datatype else None)
        self.last_doc = doc
        work = {n: _contiguous(a) for n, a in arrays.items()}
        out = pro_launch(doc, work, scalars, block_dim, self.threads,
                         self.check if check is None else check, self.backend,
                         _debug(doc, self.dump_dir))
        for n, a in arrays.items():
            if work[n] is not a:
                a[...] = work[n]
        return out


class _Launch:
    def __init__(self, k: JitKernel, stream, block_dim, key, dtypes):
        self.k, self.stream, self.block_dim, self.key = k, stream, block_dim, key
        self.dtypes = dtypes
        if key is not None and not isinstance(key, dict):
            raise UsageError(f"{k.name}[stream, block_dim, key]: the key must be a dict of "
                             f"TilingKey field values, not {key!r}")

    def __call__(self, *args):
        return self.k.launch(args, self.block_dim, self.key, dtypes=self.dtypes)


def jit(fn=None, **options):
    """@pl.jit or @pl.jit(auto_mutex=True, tiling_key=None, datatype=None, name=None,
    arch=None, pipeline=None)."""
    if fn is None:
        return lambda f: JitKernel(f, **options)
    return JitKernel(fn)


def bind_args(k: ProKernel, args: tuple, consts: dict | None = None) -> tuple:
    """(arrays by name, program scalars by name, STATIC sizes) of a launch's arguments;
    consts: the datatype= variables' dtypes (the tensors must have them)."""
    import numpy as np
    params = k.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise UsageError(f"{k.name}() takes {len(params)} arguments ({names}), not {len(args)}")
    arrays, scalars, static = {}, {}, {}
    for p, a in zip(params, args):
        if p.kind == "tensor":
            arr = a if isinstance(a, np.ndarray) else np.asarray(a)
            _check_tensor(k, p, arr, consts or {})
            arrays[p.name] = arr
            for axis, d in enumerate(p.spec.shape):
                if d is STATIC:
                    static[f"{p.name}_{axis}"] = int(arr.shape[axis])
        elif p.kind == "scalar":
            scalars[p.name] = _scalar(k, p, a)
        else:
            if not isinstance(a, p.spec):
                raise UsageError(f"{k.name}(): {p.name} must be a {p.spec.__name__} instance")
            for f in dataclasses.fields(a):
                v = getattr(a, f.name)
                spec = array_field(f.type)
                if spec is not None:        # an array field: one scalar per element
                    scalars.update(_array_values(k, p.name, f.name, spec, v))
                    continue
                scalars[f"{p.name}_{f.name}"] = float(v) if isinstance(v, float) else int(v)
    return arrays, scalars, static


def _array_values(k, param: str, field: str, spec, v) -> dict:
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != spec.n:
        raise UsageError(f"{k.name}(): {param}.{field} must be a sequence of {spec.n} "
                         f"{spec.elem}s, not {v!r}")
    cast = float if spec.elem == "float" else int
    return {f"{param}_{field}_{i}": cast(x) for i, x in enumerate(v)}


def _check_tensor(k, p, arr, consts: dict) -> None:
    spec = p.spec
    check_array(k.name, p.name, arr, resolve(spec, consts), len(spec.shape))
    for axis, (d, n) in enumerate(zip(spec.shape, arr.shape)):
        if isinstance(d, int) and d != n:
            raise UsageError(f"{k.name}(): {p.name} dim {axis} is {n}, the kernel declares {d}")
        if d is DYNAMIC and n < 1:
            raise UsageError(f"{k.name}(): {p.name} dim {axis} is empty")


def _scalar(k, p, a):
    if p.spec.is_float:
        if not isinstance(a, (int, float)) or isinstance(a, bool):
            raise UsageError(f"{k.name}(): scalar {p.name} must be a number, not {a!r}")
        return float(a)
    if not isinstance(a, int) and not (hasattr(a, "__index__") and not isinstance(a, float)):
        raise UsageError(f"{k.name}(): scalar {p.name} ({p.spec.api}) must be an int, not {a!r}")
    return int(a)


def _debug(doc, dump_dir):
    """printf to sys.stdout, dump_data into dump_dir (default the current directory), for a
    kernel with debug instructions (runtime/pro_debug.py)."""
    import sys
    from ..ir.debug_ops import debug_ops
    from ..runtime.pro_debug import Debug
    if not debug_ops(doc):
        return None
    return Debug(sys.stdout.write, dump_dir or ".")


def _contiguous(a):
    import numpy as np
    return a if a.flags.c_contiguous and a.flags.writeable else np.ascontiguousarray(a)


globals().update({_n: getattr(_lang, _n) for _n in _lang.__all__})   # the language, as pl.*
__all__ = list(_lang.__all__) + ["jit", "JitKernel"]
