"""The in-process JIT: call a kernel with arrays, compile once per signature, run in place.

The signature is what changes the compiled artifact: parameter dtypes, the sizes of STATIC
dims, the constant parameters, the backend and the pypto version. DYNAMIC and named dims are
not part of it: one artifact serves every size. Tracing, lowering, emitting and compiling go
through exactly the tools' library calls; compiled C is also cached on disk by content.
"""
from __future__ import annotations

import numpy as np

from ..errors import PyptoError, UsageError, warn


class Compiled:
    """One signature's artifact: the code-level document and its executable."""

    def __init__(self, doc, backend: str):
        from ..runtime.compiler import compile_shared, runtime_source
        from ..runtime.executable import NativeExecutable, NumpyExecutable
        self.doc = doc
        code = next(op for op in doc.body if op.name == "code")
        if backend == "c":
            lib, _ = compile_shared(code.attrs["source"] + "\n" + runtime_source())
            self.exe = NativeExecutable(doc, lib)
        else:
            self.exe = NumpyExecutable(doc, code.attrs["source"])


def _as_array(a, name: str) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    try:
        return np.asarray(a)
    except Exception as exc:
        raise UsageError(f"argument {name}: cannot view {type(a).__name__} as an array "
                         f"({exc})") from None


def call_kernel(k, args: tuple, kwargs: dict, threads: int | None = None):
    from .. import __version__
    from ..driver import emit, lower, schedule
    from ..runtime.compiler import find_cc
    from ..runtime.data import bind
    from ..targets import host_cpus
    nt = len(k.tensor_params)
    if len(args) < nt:
        missing = ", ".join(n for n, _ in k.tensor_params[len(args):])
        raise UsageError(f"{k.name}() missing tensor argument(s): {missing}")
    tensors = {}
    for (name, spec), a in zip(k.tensor_params, args[:nt]):
        arr = _as_array(a, name)
        if arr.dtype != spec.dtype.np:
            raise UsageError(f"{k.name}(): {name} has dtype {arr.dtype}, the kernel declares "
                             f"{spec.dtype.np_name}")
        if arr.ndim != len(spec.shape):
            raise UsageError(f"{k.name}(): {name} has {arr.ndim} dims, the kernel declares "
                             f"{len(spec.shape)}")
        tensors[name] = arr
    consts = {}
    for p, v in zip(k.const_params, args[nt:]):
        consts[p.name] = v
    for name, v in kwargs.items():
        if name in consts:
            raise UsageError(f"{k.name}(): {name} given twice")
        consts[name] = v
    static = {}
    from .tensor import STATIC
    for name, spec in k.tensor_params:
        for axis, d in enumerate(spec.shape):
            if d is STATIC:
                static[f"{name}_{axis}"] = int(tensors[name].shape[axis])
    backend = k.options.get("backend") or ("c" if find_cc() else "numpy")
    if backend == "c" and find_cc() is None:
        warn("no C compiler found: running the numpy backend instead")
        backend = "numpy"
    key = (tuple((n, str(a.dtype)) for n, a in tensors.items()),
           tuple(sorted(static.items())), tuple(sorted((n, repr(v)) for n, v in consts.items())),
           backend, k.options.get("target"), __version__)
    comp = k._cache.get(key)
    if comp is None:
        doc = k.trace(consts, static)
        doc = emit(schedule(lower(doc, None, k.options.get("target")), k.options.get("target")),
                   backend)
        comp = k._cache[key] = Compiled(doc, backend)
        k.compiles += 1
    # contiguous buffers to run on; outputs are copied back where the caller's were not
    work = {n: (a if a.flags.c_contiguous and a.flags.writeable else np.ascontiguousarray(a))
            for n, a in tensors.items()}
    env = bind(comp.doc, work, {})
    plan = comp.exe.plan(env)
    timing = comp.exe(plan, work, threads or k.options.get("threads") or host_cpus())
    for n, a in tensors.items():
        if work[n] is not a:
            try:
                a[...] = work[n]
            except ValueError:
                raise PyptoError(f"{k.name}(): cannot write output {n} back into a read-only "
                                 f"array") from None
    k.last_run = timing
    return None
