"""The in-process JIT: call a kernel with arrays, compile once per signature, run in place.

    @pypto.jit
    def softmax(x: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32], y: ...): ...
    softmax(x, y)

The signature is what changes the compiled artifact: parameter dtypes, the sizes of STATIC
dims, the constant parameters, the backend, the target and the pypto version. DYNAMIC and
named dims are not part of it: one artifact serves every size. Tracing, lowering, emitting
and loading go through exactly the tools' library calls (driver.lower, schedule, emit and
runtime.load); compiled C is also cached on disk by content.

Calls are cached too (the call-plan cache, per kernel): a call whose tensors are all
C-contiguous, aligned numpy arrays is keyed by their shapes, dtypes and read-only flags, the
constants and the options that pick the artifact. The plan used last is tried first, in one
foreign call with the arrays themselves (runtime/executable.py FastCall, rt.c pypto_fast):
the C checks that every argument is a numpy array of exactly that plan's rank, sizes, dtype
and flags, reads the data pointers and launches; any difference sends the call on to the
key's lookup below. The first call of a key takes the full
path (resolve, check, compile or find the artifact, bind the sizes, expand the task
instances, check every GM access, build the tables) and keeps the plan's launcher; a later
call of the same key only reads the arrays' data pointers and makes one foreign call
(runtime/executable.py Launcher, rt.c pypto_launch): no binding, no expansion, no access
check (they depend on nothing but the key) and no Python per task. Anything else (another
shape, dtype or constant, a view, a read-only array, an array-like) misses the cache and
takes the full path with its checks and errors. A run whose estimated work is tiny
(Plan.tiny) runs on the calling thread alone, holding the GIL.
"""
from __future__ import annotations

import ctypes
import sys
import types

import numpy as np

from .analysis.bind import check_array
from .errors import PyptoError, UsageError
from .frontend.kernel import Kernel
from .frontend.tensor import STATIC


class JitKernel(Kernel):
    """A traceable kernel that also runs when called with arrays."""

    _last_launch = None
    _fast = None                         # the last call plan's FastCall

    def __init__(self, fn, **options):
        super().__init__(fn, **options)
        self._calls: dict = {}           # call-plan cache (call_kernel)
        self._ntensors = len(self.tensor_params)

    def __call__(self, *args, **kwargs):
        # the call-plan cache's hit, inline (call_kernel is the whole story)
        fast = self._fast
        if fast is not None and not kwargs and len(args) == fast.nargs:
            la = fast.launcher
            if fast.run(args, 1 if fast.tiny else self.options.get("threads")
                        or fast.cpus) == 0:
                self._last_launch = la
                return None
        sig = _call_signature(self, args, kwargs)
        if sig is not None:
            entry = self._calls.get(sig[0])
            if entry is not None:
                entry.run(self, sig[1], None)
                return None
        return call_kernel(self, args, kwargs, sig=sig)

    @property
    def last_run(self):
        """The timeline of the latest call (task starts, ends, cores, wall time), read from
        the plan it ran; valid until that plan runs again."""
        la = self._last_launch
        return la.timing() if la is not None else self.__dict__.get("_last_run")

    @last_run.setter
    def last_run(self, value) -> None:
        self._last_launch = None
        self.__dict__["_last_run"] = value


OWN_OPTIONS = ("backend", "target", "threads")


def jit(fn=None, **options):
    """Decorator: @pypto.jit or @pypto.jit(backend=..., target=..., threads=...), also as
    pypto.frontend.jit. The reference's options (host_options, codegen_options,
    pass_options, runtime_options, verify_options, debug_options, new_ir,
    create_new_logical_tensor) are accepted: runtime_options run_mode and new_ir are
    honoured, every other key is a one-line warning naming it (frontend/config.py); an
    unknown keyword is an error."""
    if fn is None:
        return lambda f: jit(f, **options)
    return JitKernel(fn, **_own_options(fn, options))


def _own_options(fn, options: dict) -> dict:
    from .frontend.config import GROUPS, check_options
    from .ir.core import Loc
    import os
    code = getattr(fn, "__code__", None)
    loc = Loc(os.path.basename(code.co_filename), code.co_firstlineno) if code else None
    unknown = set(options) - set(OWN_OPTIONS) - set(GROUPS) - {"new_ir",
                                                                "create_new_logical_tensor"}
    if unknown:
        raise TypeError(f"jit() got unexpected keyword argument(s) "
                        f"{', '.join(sorted(unknown))} (pypto's own: {', '.join(OWN_OPTIONS)})")
    check_options(f"jit({getattr(fn, '__name__', '?')})",
                  {g: options[g] for g in GROUPS if g in options and g != "pass_options"}, loc)
    own = {k: v for k, v in options.items() if k in OWN_OPTIONS}
    if options.get("pass_options"):      # mapped onto pypto-lower's (frontend/passopts.py)
        from .frontend.passopts import jit_options
        own["pass_settings"] = jit_options(options["pass_options"], loc)
    return own


class Compiled:
    """One signature's artifacts: the traced document and, made when a call first needs
    them, two versions of its code-level document and executable: the one whose named
    sizes fit their tiles (analysis/versions.py: the reductions fuse as static ones do)
    for calls whose sizes fit, the general one for any other call."""

    def __init__(self, k: Kernel, consts: dict, static: dict, backend: str):
        from .analysis.versions import tile_bounds
        from .driver import target_for
        from .runtime import resolve_backend
        self.backend, _ = resolve_backend(backend)
        self.target = target_for(None, k.options.get("target"))
        self.source = k.trace(consts, static, self.target)
        self.bounds = tile_bounds(self.source)
        self.versions: dict = {}
        self.compiles = 0
        self.last: tuple | None = None    # (document, executable) of the last call

    @property
    def doc(self):
        """The code-level document the last call ran."""
        return self.last[0]

    @property
    def exe(self):
        return self.last[1]

    def version(self, tensors: dict) -> tuple:
        """(code-level document, executable) for a call on these arrays."""
        from .analysis.bind import bind
        from .analysis.versions import fits
        bounded = bool(self.bounds) and fits(self.bounds, bind(self.source, tensors))
        v = self.versions.get(bounded)
        if v is None:
            v = self.versions[bounded] = self._build(bounded)
        self.last = v
        return v

    def _build(self, bounded: bool) -> tuple:
        from .analysis.versions import assume
        from .driver import emit, lower, schedule
        from .runtime import load
        src = assume(self.source, self.bounds) if bounded else self.source
        doc = emit(schedule(lower(src, None, self.target), self.target), self.backend)
        self.compiles += 1
        return doc, load(doc)


def call_kernel(k: Kernel, args: tuple, kwargs: dict, threads: int | None = None,
                sig=False) -> None:
    """Compile k for the signature of args (once), run it, write the outputs in place.

    A call whose signature (_call_signature) has a call plan runs it: one foreign call.
    Any other takes the full path (_slow_call), which caches the call plan it made."""
    if sig is False:
        fast = getattr(k, "_fast", None)
        if fast is not None and not kwargs and len(args) == fast.nargs:
            if fast.run(args, 1 if fast.tiny else threads or k.options.get("threads")
                        or fast.cpus) == 0:
                k._last_launch = fast.launcher
                return
        sig = _call_signature(k, args, kwargs)
        if sig is not None:
            entry = k._calls.get(sig[0])
            if entry is not None:
                entry.run(k, sig[1], threads)
                return
    entry = _slow_call(k, args, kwargs, threads)
    if sig is not None and entry is not None:
        if len(k._calls) >= MAX_CALL_PLANS:
            k._calls.clear()
        k._calls[sig[0]] = entry


# the call-plan cache: calls whose tensors are all C-contiguous, aligned numpy arrays (what
# the full path runs on without a copy); a read-only one is marked in the key, and only a
# successful full call (where it was an input: a read-only output is refused) makes an entry
MAX_CALL_PLANS = 64
_ndarray = np.ndarray
_addressof = ctypes.addressof
_buffer_of = (ctypes.c_char * 0).from_buffer     # the data pointer at a third of a.ctypes.data
_NO_BUFFER: set = set()                           # dtypes the buffer protocol refuses


def _call_signature(k: Kernel, args: tuple, kwargs: dict):
    """(key, data pointers) of a call the call-plan cache can serve, else None.

    The key holds every tensor argument's shape and dtype, the constants (by repr, as the
    artifact cache does) and the options that pick the artifact; the sizes bound from the
    shapes, the plan (task instances, dependency tables) and its GM access check are a
    function of exactly these, so an entry found under the key needs none of them again. A
    different shape, dtype, rank or constant is a different key and takes the full path,
    which raises the errors of a bad call."""
    nt = k._ntensors
    if len(args) < nt:
        return None
    key = []
    ptrs = []
    for a in args[:nt]:
        if type(a) is not _ndarray:
            return None
        f = a.flags
        if f.carray:
            key += (a.shape, a.dtype)
            if _NO_BUFFER and a.dtype in _NO_BUFFER:
                ptrs.append(a.ctypes.data)
            else:
                try:
                    ptrs.append(_addressof(_buffer_of(a)))
                except ValueError:            # a dtype numpy cannot export (ml_dtypes')
                    _NO_BUFFER.add(a.dtype)
                    ptrs.append(a.ctypes.data)
        elif f.c_contiguous and f.aligned:     # read-only: an input, if the full path took it
            key += (a.shape, a.dtype, "read-only")
            ptrs.append(a.ctypes.data)
        else:
            return None
    if len(args) > nt or kwargs:
        key.append(repr(args[nt:]))
        key.append(repr(sorted(kwargs.items())))
    opts = k.options
    key.append(opts.get("backend"))
    key.append(opts.get("target"))
    return tuple(key), ptrs


class _CallPlan:
    """A cached call: the plan's launcher and the argument order of its parameters."""

    __slots__ = ("launcher", "order", "tiny", "cpus", "fast")

    def __init__(self, launcher, names: list, tiny: bool, cpus: int, fast=None):
        self.launcher = launcher
        order = [names.index(n) for n in launcher.params]
        self.order = None if order == list(range(len(names))) else order
        self.tiny = tiny
        self.cpus = cpus                 # the default thread count, read when the plan is made
        self.fast = fast                 # its FastCall (None where the call cannot take one)
        if fast is not None:
            fast.tiny, fast.cpus = tiny, cpus

    def run(self, k: Kernel, ptrs: list, threads: int | None) -> None:
        la = self.launcher
        if self.order is not None:
            ptrs = [ptrs[i] for i in self.order]
        la.run(ptrs, 1 if self.tiny else threads or k.options.get("threads") or self.cpus)
        k._last_launch = la
        k._fast = self.fast


def _slow_call(k: Kernel, args: tuple, kwargs: dict, threads: int | None):
    """The full call: resolve, check, compile (once per signature), bind, plan, run. Returns
    the call plan to cache when the native backend ran it, else None."""
    from .errors import RELEASE
    from .analysis.bind import run_sizes
    from .targets import host_cpus
    kk = _resolve(k, args)             # k itself unless a spec takes the argument's shape
    tensors = _tensor_args(kk, args)
    consts = _const_args(k, args[len(k.tensor_params):], kwargs)
    static = {f"{name}_{axis}": int(tensors[name].shape[axis])
              for name, spec in kk.tensor_params
              for axis, d in enumerate(spec.shape) if d is STATIC}
    backend = k.options.get("backend") or "c"
    key = (tuple((n, str(a.dtype)) for n, a in tensors.items()),
           tuple(sorted(static.items())), tuple(sorted((n, repr(v)) for n, v in consts.items())),
           backend, k.options.get("target"), RELEASE)
    comp = k._cache.get(key)
    if comp is None:
        comp = k._cache[key] = Compiled(kk, consts, static, backend)
    before = comp.compiles
    doc, exe = comp.version(tensors)
    k.compiles += comp.compiles - before
    work = _work_arrays(k, doc, tensors)
    plan = exe.plan(run_sizes(doc, work), work)
    launcher = getattr(exe, "launcher", lambda p: None)(plan)
    tiny = plan.tiny
    nthreads = 1 if tiny else (threads or k.options.get("threads") or host_cpus())
    if launcher is None:
        k.last_run = exe(plan, work, nthreads)
    else:
        launcher.run([work[n].ctypes.data for n in launcher.params], nthreads)
        k._last_launch = launcher
    for n, a in tensors.items():
        if work[n] is not a:
            a[...] = work[n]
    if launcher is None or exe.read_params():
        return None         # a plan made from data read at run time is not the key's alone
    from .runtime.executable import FastCall
    arrays = list(tensors.values())
    fast = None
    if all(work[n] is a for n, a in tensors.items()):       # arrays run on as they are
        fast = FastCall.make(exe.fast_gil if tiny else exe.fast, launcher, arrays,
                             list(tensors))
    entry = _CallPlan(launcher, list(tensors), tiny, host_cpus(), fast)
    k._fast = fast
    return entry


def _work_arrays(k: Kernel, doc, tensors: dict) -> dict:
    """C-contiguous buffers to run on: the caller's arrays where they are, else copies (an
    output's copy is written back after the run). An output must be writeable."""
    from .analysis.bind import param_roles
    roles = param_roles(doc)
    work = {}
    for n, a in tensors.items():
        out = roles.get(n) == "output"
        if out and not a.flags.writeable:
            raise PyptoError(f"{k.name}(): cannot write output {n} into a read-only array")
        work[n] = a if a.flags.c_contiguous else np.array(a, order="C", copy=True)
    return work


def _resolve(k: Kernel, args: tuple) -> Kernel:
    """Specs that take their shape or dtype from the argument, made concrete (the cache key
    holds the dtypes and the STATIC sizes, so one artifact per shape)."""
    if not any(s.open for _, s in k.tensor_params):
        return k
    from .ir.types import from_numpy
    found = {}
    for (name, _), a in zip(k.tensor_params, args):
        arr = _as_array(a, name)
        try:
            found[name] = (arr.ndim, from_numpy(arr.dtype))
        except ValueError as exc:
            raise UsageError(f"{k.name}(): {name}: {exc}") from None
    try:
        return k.resolved(found)
    except TypeError as exc:
        raise UsageError(f"{k.name}(): {exc}") from None


def _tensor_args(k: Kernel, args: tuple) -> dict:
    nt = len(k.tensor_params)
    if len(args) < nt:
        missing = ", ".join(n for n, _ in k.tensor_params[len(args):])
        raise UsageError(f"{k.name}() missing tensor argument(s): {missing}")
    tensors = {}
    for (name, spec), a in zip(k.tensor_params, args[:nt]):
        arr = _as_array(a, name)
        check_array(k.name, name, arr, spec.dtype, len(spec.shape))
        tensors[name] = arr
    return tensors


def _const_args(k: Kernel, rest: tuple, kwargs: dict) -> dict:
    consts = {p.name: v for p, v in zip(k.const_params, rest)}
    for name, v in kwargs.items():
        if name in consts:
            raise UsageError(f"{k.name}(): {name} given twice")
        consts[name] = v
    return consts


def _as_array(a, name: str):
    import numpy as np
    if isinstance(a, np.ndarray):
        return a
    try:
        return np.asarray(a)
    except Exception as exc:
        raise UsageError(f"argument {name}: cannot view {type(a).__name__} as an array "
                         f"({exc})") from None


class _CallableModule(types.ModuleType):
    """Importing libpypto.jit makes `libpypto.jit` name this module (Python sets a package's
    attribute to its submodule), where op files expect the decorator: calling the module is
    calling jit(), so `@pypto.jit` works either way."""

    def __call__(self, fn=None, **options):
        return jit(fn, **options)


sys.modules[__name__].__class__ = _CallableModule
