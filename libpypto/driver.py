"""The library behind the tools: one function per tool, and bringing documents forward.

trace(op file) -> tensor; lower(tensor|tile|block) -> exec; schedule(.. exec) -> sched;
emit(.. sched) -> code; run(.. code) -> run record; profile(run) -> report. Each accepts its
own level or any earlier one (an op file included) and brings it forward with defaults.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
from contextlib import contextmanager

from .errors import CompileError, InputError, PyptoError, UsageError
from .ir.core import Document, level_index
from .ir.verify import verify_or_raise

NEXT_TOOL = {"tensor": "pypto-lower", "tile": "pypto-lower", "block": "pypto-lower",
             "exec": "pypto-sched", "sched": "pypto-emit", "code": "pypto-run",
             "run": "pypto-prof"}


# -- reading and writing --------------------------------------------------------------------

def parse_ir(data: bytes, source: str = "<input>") -> Document:
    """A document from msgpack or text bytes (verified)."""
    from .ir import serde, text
    if not data:
        raise InputError(f"{source}: empty input")
    head = data[:1][0]
    if 0x80 <= head <= 0x8F or head in (0xDE, 0xDF):
        doc = serde.loads(data, source)
    else:
        try:
            s = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{source}: not a pypto IR file (binary data that is not msgpack)") \
                from None
        if not _looks_like_text_ir(s):
            raise InputError(f"{source}: not a pypto IR file (expected msgpack, the text form "
                             f"'pypto-ir ...' or an op file ending in .py)")
        try:
            doc = text.parse_doc(s)
        except text.TextError as exc:
            raise InputError(f"{source}: {exc}") from None
        except ValueError as exc:
            raise InputError(f"{source}: {exc}") from None
        serde.check_version(list(doc.version), source)
    try:
        verify_or_raise(doc, f"in {source}")
    except PyptoError as exc:
        raise InputError(str(exc)) from None
    doc.source = source
    return doc


def _looks_like_text_ir(s: str) -> bool:
    for line in s.splitlines():
        t = line.strip()
        if t and not t.startswith("#"):
            return t.startswith("pypto-ir")
    return False


def read_ir(path: str, **trace_opts) -> Document:
    """Read an IR file (msgpack or text) or trace an op file (.py)."""
    if path.endswith(".py"):
        return trace(path, **trace_opts)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    return parse_ir(data, os.path.basename(path))


def dump_ir(doc: Document, text: bool = False) -> bytes:
    """The bytes of a document: msgpack, or the text form with text=True (verified first)."""
    from .ir import serde
    from .ir import text as textmod
    verify_or_raise(doc, "before writing")
    return textmod.print_doc(doc).encode() if text else serde.dumps(doc)


def write_ir(doc: Document, path: str, text: bool = False) -> None:
    from .cli.io import atomic_write
    atomic_write(path, dump_ir(doc, text))


# -- trace ----------------------------------------------------------------------------------

@contextmanager
def deadline(what: str):
    """Stop an op file that runs too long at trace time (an endless loop): after
    $PYPTO_TRACE_TIMEOUT seconds (default 60) raise a CompileError at the line it was on."""
    seconds = float(os.environ.get("PYPTO_TRACE_TIMEOUT", "60") or 0)
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        loc = None
        pkg = os.path.dirname(os.path.abspath(__file__))
        f = frame
        while f is not None:
            fn = os.path.abspath(f.f_code.co_filename)
            if not fn.startswith(pkg + os.sep):
                loc = _loc(os.path.basename(fn), f.f_lineno)
                break
            f = f.f_back
        raise CompileError(f"{what} did not finish within {seconds:g} s (an endless loop?); "
                           f"set PYPTO_TRACE_TIMEOUT to allow longer", loc)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def load_op_file(path: str):
    """Import an op file as a fresh module; errors become one-line CompileErrors."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory")
    name = "pypto_opfile_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"{path}: cannot import as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise CompileError(f"syntax error: {exc.msg}",
                           _loc(os.path.basename(path), exc.lineno)) from None
    except ImportError as exc:
        raise CompileError(f"import failed: {exc}", _exc_loc(exc, path)) from None
    except PyptoError:
        raise
    except Exception as exc:
        raise CompileError(f"op file raised {type(exc).__name__}: {exc}",
                           _exc_loc(exc, path)) from None
    finally:
        sys.modules.pop(name, None)
    return module


def _loc(file, line):
    from .ir.core import Loc
    return Loc(file, line or 0)


def _exc_loc(exc: BaseException, path: str):
    target = os.path.abspath(path)
    tb, line = exc.__traceback__, None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == target:
            line = tb.tb_lineno
        tb = tb.tb_next
    return _loc(os.path.basename(path), line) if line else None


def trace(path: str, kernel: str | None = None, consts: dict | None = None,
          bind: dict | None = None) -> Document:
    """Trace the @pypto.jit kernel of an op file into its Tensor Graph."""
    from .frontend.tensor import find_kernels
    if path == "-":
        raise UsageError("pypto-trace imports its op file, so it needs a path (a .py file), "
                         "not stdin")
    if not path.endswith(".py"):
        raise UsageError(f"{path}: pypto-trace takes an op file (.py); IR files go to the later "
                         f"tools (pypto-lower, pypto-run, ...)")
    with deadline(f"importing {os.path.basename(path)}"):
        module = load_op_file(path)
    kernels = find_kernels(module)
    if not kernels:
        raise CompileError(f"{os.path.basename(path)} defines no @pypto.jit kernel")
    if kernel is None:
        if len(kernels) > 1:
            names = ", ".join(k.name for k in kernels)
            raise UsageError(f"{os.path.basename(path)} defines several kernels ({names}); "
                             f"pick one with pypto-trace --kernel NAME")
        k = kernels[0]
    else:
        found = [k for k in kernels if k.name == kernel]
        if not found:
            names = ", ".join(k.name for k in kernels)
            raise UsageError(f"no kernel {kernel!r} in {os.path.basename(path)} (kernels: {names})")
        k = found[0]
    with deadline(f"tracing {k.name}"):
        return k.trace(consts or {}, bind or {})


# -- bringing forward -----------------------------------------------------------------------

def _require_at_most(doc: Document, level: str, tool: str) -> None:
    if level_index(doc.level) > level_index(level):
        where = f"{doc.source}: " if getattr(doc, "source", None) else ""
        raise InputError(f"{where}got a '{doc.level}' file, past what {tool} makes "
                         f"(try {NEXT_TOOL.get(doc.level, 'pypto-prof')})")


def lower(doc: Document, pipeline: str | None = None, target=None, instrument=None) -> Document:
    """Run a pass pipeline (default: the rest of the standard lowering to exec)."""
    from .passes.pipeline import default_pipeline, parse_pipeline, run_pipeline
    from .targets import load_target
    _require_at_most(doc, "exec", "pypto-lower")
    tgt = target if hasattr(target, "data") else load_target(target or doc_target(doc))
    specs = parse_pipeline(pipeline) if pipeline else default_pipeline(doc.level, "exec")
    return run_pipeline(doc, specs, tgt, instrument)


def doc_target(doc: Document) -> str | None:
    return doc.attrs.get("target", {}).get("name")


def to_exec(doc: Document, target=None) -> Document:
    if level_index(doc.level) < level_index("exec"):
        doc = lower(doc, None, target)
    return doc


def schedule(doc: Document, target=None, bind: dict | None = None) -> Document:
    """Place tasks on the target's cores (instances and timeline when sizes are bound)."""
    from .sched import schedule as sched
    from .targets import load_target
    _require_at_most(doc, "sched", "pypto-sched")
    tgt = load_target(target or doc_target(doc))
    doc = to_exec(doc, tgt)
    if doc.level in ("sched",):
        doc = _strip(doc, "exec", ("schedule",))
    env = _env_for(doc, bind)
    return sched(doc, tgt, env)


def _env_for(doc: Document, bind: dict | None) -> dict | None:
    if not bind and not all(i.get("kind") == "static" for i in doc.attrs.get("symbols", {}).values()):
        return None
    from .runtime.data import bind as bind_symbols
    return bind_symbols(doc, {}, bind or {})


def _strip(doc: Document, level: str, names: tuple) -> Document:
    from .ir.core import copy_doc
    out = copy_doc(doc, level)
    out.body = [op for op in out.body if op.name not in names]
    return out


def emit(doc: Document, backend: str = "c", target=None) -> Document:
    """Emit the PTO listing and the program source for a backend (c or numpy)."""
    from .codegen import emit as emit_code
    _require_at_most(doc, "code", "pypto-emit")
    if backend not in ("c", "numpy"):
        raise UsageError(f"unknown backend {backend!r} (known: c, numpy)")
    if level_index(doc.level) < level_index("sched"):
        doc = schedule(doc, target)
    if doc.level == "code":
        doc = _strip(doc, "sched", ("code",))
    return emit_code(doc, backend)


def run(doc: Document, **opts) -> Document:
    """Compile and run on the host, verify against numpy; returns the run record."""
    from .runtime import run_code
    _require_at_most(doc, "code", "pypto-run")
    backend = opts.get("backend")
    if level_index(doc.level) < level_index("code"):
        doc = emit(doc, backend or "c", opts.get("target"))
    return run_code(doc, **opts)


def profile(doc: Document, **opts):
    """Tables and a Chrome trace from a run record (running first if given an earlier level)."""
    from .prof import profile as prof
    if doc.level != "run":
        doc = run(doc)
    return prof(doc, **opts)
