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

from .errors import CompileError, InputError, LimitError, PyptoError, UsageError
from .ir.core import VERSION, Document, level_index
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
        except LimitError as exc:
            raise LimitError(f"{source}: {exc}") from None
        except text.TextError as exc:
            raise InputError(f"{source}: {exc}") from None
        except ValueError as exc:
            raise InputError(f"{source}: {exc}") from None
        serde.check_version(list(doc.version), source)
    if tuple(doc.version) < VERSION:         # an older minor: brought up to this one
        _upgrade(doc)
    try:
        verify_or_raise(doc, f"in {source}")
    except PyptoError as exc:
        raise InputError(str(exc)) from None
    doc.source = source
    return doc


def _upgrade(doc: Document) -> None:
    """1.0 -> 1.1: the target record is made whole (1.0 kept name, align, buffers and
    mixed_programs only)."""
    if "target" in doc.attrs:
        from .targets import upgrade_record
        doc.attrs["target"] = upgrade_record(doc.attrs["target"])
    doc.version = VERSION


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
    from .ir.files import read_bytes
    return parse_ir(read_bytes(path), os.path.basename(path))


def dump_ir(doc: Document, text: bool = False, full: bool = False) -> bytes:
    """The bytes of a document: msgpack, or the text form with text=True (verified first);
    full=True lists every row of the text form's tables (the data is complete either way)."""
    from .ir import serde
    from .ir import text as textmod
    verify_or_raise(doc, "before writing")
    return textmod.print_doc(doc, full).encode() if text else serde.dumps(doc)


def write_ir(doc: Document, path: str, text: bool = False, full: bool = False) -> None:
    from .ir.files import atomic_write
    atomic_write(path, dump_ir(doc, text, full))


# -- trace ----------------------------------------------------------------------------------

@contextmanager
def deadline(what: str):
    """Stop an op file that runs too long at trace time (an endless loop): after
    $PYPTO_TRACE_TIMEOUT seconds (default 60) of the process's CPU time (ITIMER_PROF: the
    same point of an endless loop on a busy machine as on an idle one; a wall-clock limit
    fired in whatever ran first under load) raise a CompileError at the line it was on."""
    seconds = float(os.environ.get("PYPTO_TRACE_TIMEOUT", "60") or 0)
    if seconds <= 0 or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer") or not hasattr(signal, "SIGPROF"):
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

    old = signal.signal(signal.SIGPROF, on_alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


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
          bind: dict | None = None, target=None) -> Document:
    """Trace the @pypto.jit kernel of an op file into its Tensor Graph.

    target: check tile shapes against this target (a name, a file or a Target) and record it
    in the document for the later stages; by default they are checked against the host."""
    from .frontend.kernel import find_kernels
    if path == "-":
        raise UsageError("pypto-trace imports its op file, so it needs a path (a .py file), "
                         "not stdin")
    if not path.endswith(".py"):
        raise UsageError(f"{path}: pypto-trace takes an op file (.py); IR files go to the later "
                         f"tools (pypto-lower, pypto-run, ...)")
    with deadline(f"importing {os.path.basename(path)}"):
        module = load_op_file(path)
    kernels = find_kernels(module) + _pro_kernels(module)
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
        if _is_pro(k):
            doc = pro_trace(k, bind, consts, target)
            doc.golden = getattr(module, f"reference_{k.name}", None) or \
                getattr(module, "reference", None)
            return doc
        return k.trace(consts or {}, bind or {}, target_for(None, target) if target else None)


# -- bringing forward -----------------------------------------------------------------------

def _require_at_most(doc: Document, level: str, tool: str) -> None:
    if level_index(doc.level) > level_index(level):
        where = f"{doc.source}: " if getattr(doc, "source", None) else ""
        raise InputError(f"{where}got a '{doc.level}' file, past what {tool} makes "
                         f"(try {NEXT_TOOL.get(doc.level, 'pypto-prof')})")


def lower(doc: Document, pipeline: str | None = None, target=None, instrument=None) -> Document:
    """Run a pass pipeline (default: the rest of the standard lowering to exec)."""
    from .passes.pipeline import default_pipeline, parse_pipeline, run_pipeline
    _require_at_most(doc, "exec", "pypto-lower")
    if is_pro(doc):     # a Pro kernel is written at the block level: verified, passed through
        verify_or_raise(doc, "given to pypto-lower")
        return doc
    tgt = target_for(doc, target)
    specs = parse_pipeline(pipeline) if pipeline else default_pipeline(doc.level, "exec")
    return run_pipeline(doc, specs, tgt, instrument)


def instrument(**flags):
    """The pass-pipeline instrumentation for pypto-lower's flags (pass names checked)."""
    from .passes.pipeline import Instrument
    return Instrument(**flags)


def pipeline_text(doc: Document | None, passes: str | None) -> str:
    """The pipeline lower() would run on doc (None: a tensor graph), as pasteable text."""
    from .passes.pipeline import default_pipeline, parse_pipeline
    specs = parse_pipeline(passes) if passes else default_pipeline(
        doc.level if doc is not None else "tensor", "exec")
    return ",".join(str(s) for s in specs)


def describe_passes() -> str:
    """The table of registered passes (pypto-lower --list-passes)."""
    from .passes.pipeline import describe_all
    return describe_all()


def target_for(doc: Document | None, target=None):
    """The target to work for: --target (a name or a file) wins, then the record the
    document carries, then the host."""
    from .targets import Target, load_target
    if isinstance(target, Target):
        return target
    if target:
        return load_target(target)
    rec = doc.attrs.get("target") if doc is not None else None
    where = (doc.source or "the input") if doc is not None else "the input"
    return Target.from_record(rec, where) if rec else load_target("host")


def to_exec(doc: Document, target=None) -> Document:
    if level_index(doc.level) < level_index("exec"):
        doc = lower(doc, None, target)
    return doc


def schedule(doc: Document, target=None, bind: dict | None = None) -> Document:
    """Place tasks on the target's cores (instances and timeline when sizes are bound)."""
    from .analysis.bind import schedule_sizes
    from .sched import schedule as sched
    _require_at_most(doc, "sched", "pypto-sched")
    tgt = target_for(doc, target)
    if is_pro(doc):     # task order only: a Pro kernel's launch size is its block_dim
        return sched(_strip(doc, "exec", ("schedule",)) if doc.level == "sched" else doc,
                     tgt, None)
    doc = to_exec(doc, tgt)
    if doc.level in ("sched",):
        doc = _strip(doc, "exec", ("schedule",))
    return sched(doc, tgt, schedule_sizes(doc, bind), _instance_costs(tgt))


def _instance_costs(tgt):
    """pypto-sched's instance costs: the simulator's time of each alone (sim/alone.py)
    for a target the simulator takes; None (the scheduler's own sum of pipes) otherwise."""
    import functools

    from .targets.costs import Costs
    try:
        Costs(tgt)
    except PyptoError:
        return None
    from .sim.alone import instance_costs
    return functools.partial(instance_costs, target=tgt)


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


def run(doc: Document, backend: str | None = None, target=None, trust_code: bool = False,
        **opts) -> Document:
    """Compile and run on the host, verify against numpy; returns the run record.

    backend: c or numpy (default: the code's own, else c); without a C compiler the numpy
    backend runs instead, with a notice.
    trust_code: a code-level document carries C source that is compiled and run, like a
    shared library. By default it runs only if it is exactly what pypto-emit makes of the
    document's programs; trust_code=True runs it as it is (hand-edited C)."""
    from .runtime import code_op, resolve_backend, run_code
    _require_at_most(doc, "code", "pypto-run")
    sim = simulated_target(target)
    if is_pro(doc):
        rec = _run_pro(doc, backend, target, trust_code, dict(opts))
        return _simulate(doc, rec, sim, opts) if sim else rec
    have = code_op(doc).attrs["backend"] if doc.level == "code" else None
    want, notice = resolve_backend(backend or have or "c")
    if want != have:
        doc = emit(doc, want, target)
    elif want == "c" and not trust_code:
        _check_source(doc)
    rec = run_code(doc, target=target, notice=notice, **opts)
    return _simulate(doc, rec, sim, opts) if sim else rec


def simulated_target(target):
    """The Target a run is also simulated on: --target given and not the host (a name, a
    file or a Target, e.g. with --target-set overrides); None otherwise."""
    if target is None:
        return None
    from .targets.costs import Costs
    tgt = target_for(None, target)
    if tgt.name == "host":
        return None
    Costs(tgt)              # a description the simulator cannot use fails before the run
    return tgt


def simulate(doc: Document, target, env: dict, data: dict | None = None,
             block_dim: int | None = None) -> dict:
    """Time one run of doc on a target with the pipe-level simulator (libpypto.sim): the
    record pypto-run --target keeps as its run op's `sim` attribute."""
    from .sim import simulate as sim
    return sim(doc, target_for(doc, target), env, data, block_dim)


def _simulate(doc: Document, rec: Document, target, opts: dict) -> Document:
    """The run record with the simulated timeline of the same run on target."""
    from .analysis.expand import reads_of
    a = rec.body[0].attrs
    env = dict(a["bindings"])
    data = None
    if not is_pro(doc) and reads_of(doc):     # loop bounds read from the inputs
        from .runtime import data as D
        given = dict(opts.get("inputs") or {})
        data = D.prepare(doc, given, env, opts.get("seed", 0))
    a["sim"] = simulate(doc, target, env, data, opts.get("block_dim") if is_pro(doc) else None)
    a["environment"]["target"] = target.name
    return rec


def _check_source(doc: Document) -> None:
    """Refuse C source that is not what the emitter makes of the document's programs."""
    from .runtime import code_op
    mine = code_op(emit(doc, "c")).attrs["source"]
    if code_op(doc).attrs["source"] != mine:
        where = f"{doc.source}: " if doc.source else ""
        raise InputError(f"{where}the C source differs from what pypto-emit makes of the "
                         f"file's programs; pypto-run compiles and runs that source, so it only "
                         f"does with --trust-code (re-emit with pypto-emit otherwise)")


def read_arrays(doc: Document, npz: str | None, npy: dict) -> dict:
    """Parameter arrays for a run: an .npz by parameter name, and NAME -> .npy paths."""
    from .runtime.data import read_arrays as read
    return read(doc, npz, npy)


def profile(doc: Document, **opts):
    """Tables and a Chrome trace from a run record (running first if given an earlier level)."""
    from .prof import profile as prof
    if doc.level != "run":
        doc = run(doc)
    return prof(doc, **opts)


# -- Pro mode ---------------------------------------------------------------------------------

PRO_ARCH_TARGET = {"a2": "a2", "a3": "a3", "a5": "950", "950": "950"}


def pro_trace(k, static: dict | None = None, key: dict | None = None,
              target=None, dtypes: dict | None = None) -> Document:
    """A Pro kernel (libpypto.prolang.ProKernel) traced into its block-level document for
    STATIC sizes, TilingKey values and datatype= dtypes (without `dtypes`, the `key` entries
    that name datatype parameters: pypto-trace --const x=f16), its buffer plan checked
    against the kernel's arch (default a2) or `target` (--target: a name or a file),
    verified."""
    from .prolang.datatype import split_consts
    from .targets import load_target
    if dtypes is None:
        key, dtypes = split_consts(k, key or {})
    target = target_for(None, target) if target else \
        load_target(PRO_ARCH_TARGET[k.options["arch"]])
    from .prolang.dsl import BIAS_BYTES
    buffers = dict(target["buffers"])
    buffers.setdefault("bias", BIAS_BYTES.get(target["name"], 4096))
    if target["name"] == "950":         # the MX scale buffers (prolang/ops_more.py)
        from .prolang.dsl import SCALE_BYTES
        buffers.setdefault("scale_left", SCALE_BYTES)
        buffers.setdefault("scale_right", SCALE_BYTES)
    doc = k.trace(static or {}, key or {}, buffers, dtypes)
    doc.attrs["target"] = target.record()
    verify_or_raise(doc, "made by the Pro front end")
    return doc


def pro_launch(doc: Document, arrays: dict, scalars: dict, block_dim: int,
               threads: int | None = None, check: bool = True, backend: str = "numpy",
               debug=None) -> dict:
    """Run a Pro kernel's document on the host: arrays by parameter name (written in
    place), scalars by program scalar name (DYNAMIC dims are taken from the arrays).
    backend "numpy": the Pro runner (libpypto.runtime.pro_exec), with the race checker
    when check; "c": the checker first (the Pro runner on copies, when check), then the
    kernel's C (codegen/pro_c.py; the document must be code-level with C, see pro_code).
    debug: a runtime.pro_debug.Debug that takes the printf and dump_data records."""
    from .runtime.pro_debug import flushing, rehearsed
    from .runtime.pro_exec import run as pro_run
    from .targets import host_cpus
    env = dict(scalars)
    for op in doc.body:
        if op.name == "gm":
            for axis, d in enumerate(op.result.type.shape):
                if not isinstance(d, int):
                    env[str(d)] = int(arrays[op.attrs["param"]].shape[axis])
    threads = threads or host_cpus()
    if backend != "c":
        return flushing(debug, pro_run, doc, arrays, env, block_dim, threads, check,
                        debug=debug)
    from .runtime import code_op
    from .runtime.pro_native import ProNative
    if check:
        rehearsed(debug, pro_run, doc, {k: v.copy() for k, v in arrays.items()}, env,
                  block_dim, threads, True)
    native = getattr(doc, "native", None)
    if native is None:
        native = doc.native = ProNative(doc, code_op(doc).attrs["source"])
    return {"clusters": block_dim, "wall_s": flushing(debug, native, arrays, env, block_dim,
                                                      threads, debug=debug)}


def pro_code(doc: Document) -> Document:
    """A Pro document brought to the code level with its C (pypto-emit's library call)."""
    return emit(doc, "c")


def _run_pro(doc: Document, backend, target, trust_code: bool, opts: dict) -> Document:
    """A Pro kernel: its C (emitted unless the document carries it) compared with the Pro
    runner, or the Pro runner alone (backend numpy, or no C compiler)."""
    from .runtime import code_op, resolve_backend
    from .runtime.pro_run import run_record
    from .runtime.compiler import _SANITIZE
    if _SANITIZE.get():
        raise UsageError("--sanitize does not take Pro kernels yet (their C runs in process)")
    golden = getattr(doc, "golden", None)
    pro = {k: opts.pop(k) for k in ("block_dim", "expect", "check", "repeat") if k in opts}
    have = code_op(doc).attrs["backend"] if doc.level == "code" else None
    want, notice = resolve_backend(backend or have or "c")
    if want == "c" and have != "c":
        doc = emit(doc, "c", target)
    elif want == "c" and not trust_code:
        _check_source(doc)
    return run_record(doc, golden=golden, notice=notice, backend=want, **pro, **opts)


def is_pro(doc: Document) -> bool:
    return "pro" in doc.attrs


def _pro_kernels(module) -> list:
    from .prolang import ProKernel
    return [v for v in vars(module).values() if isinstance(v, ProKernel)]


def _is_pro(k) -> bool:
    from .prolang import ProKernel
    return isinstance(k, ProKernel)


# -- pypto-run --check-levels and --dump-tensors -----------------------------------------

def check_levels(doc: Document, inputs: dict | None = None, bind: dict | None = None,
                 seed: int = 0, target=None, dump: str | None = None) -> list[dict]:
    """Per-level numeric verification (the reference's pass verify). The tensor graph doc
    carries is interpreted on the run's data; then it is lowered again pass by pass, and the
    result after each pass is run on numpy at its own level (and doc itself, when it was
    given below the tensor level) and compared with the tensor-level outputs. Rows: level,
    after (the pass), verdict, max_abs_err, mismatches and, at the first divergence, where:
    the instruction that last wrote the first wrong element and its op file line. Later
    levels are not checked once one diverges. dump: write every tensor-level value to this
    directory (runtime.levels.tensor_dumper)."""
    from .analysis.bind import run_sizes
    from .passes.pipeline import Instrument
    from .runtime import data as D
    from .runtime.interp import run_tensor
    from .runtime.levels import compare_outputs, culprit, level_outputs, tensor_dumper
    if is_pro(doc):
        raise UsageError("--check-levels and --dump-tensors apply to Tensor-mode kernels "
                         "(a Pro kernel is written at the block level)")
    tensor = _source_doc(doc)
    env = run_sizes(doc, dict(inputs or {}), bind)
    arrays = D.prepare(doc, dict(inputs or {}), env, seed)
    mags = D.magnitudes(tensor, {k: v.copy() for k, v in arrays.items()}, env)
    dumper, count = tensor_dumper(dump) if dump else (None, None)
    want = run_tensor(tensor, {k: v.copy() for k, v in arrays.items()}, env, dumper,
                      probe_handler(dump))
    rows = [{"level": "tensor", "after": "trace", "verdict": "reference", "max_abs_err": 0.0,
             "mismatches": 0, "dumped": count() if count else None}]
    rows += golden_rows(tensor, want, mags)
    stages: list = []
    lower(tensor, _recorded_pipeline(doc), target, Instrument(
        observe=lambda name, d: stages.append((name, d))))
    if doc.level != "tensor":
        stages.append((f"(the given {doc.level} file)", doc))
    for name, d in stages:
        got, _ = level_outputs(d, arrays, env)
        checks = compare_outputs(tensor, got, want, mags)
        bad = [c for c in checks if not c["ok"]]
        rows.append({"level": d.level, "after": name, "verdict": "fail" if bad else "pass",
                     "max_abs_err": max((c["max_abs_err"] for c in checks), default=0.0),
                     "mismatches": sum(c["mismatches"] for c in checks)})
        if bad:
            rows[-1].update(check=bad[0], where=culprit(d, arrays, env, bad[0]))
            break
    return rows


def probe_handler(directory: str | None):
    """What pass_verify_print / pass_verify_save do when the tensor graph is interpreted:
    print to stderr; save DIR/<name>.npy (frontend/verify.py: the name's characters are
    checked there; nothing else reaches the path), or say once that no --dump-tensors
    directory was given."""
    import io
    import os
    import sys
    import numpy as np
    from .frontend.verify import _save_name
    from .ir import expr as E
    from .ir.files import atomic_write
    said: set = set()

    def probe(op, tensors, env) -> None:
        a = op.attrs
        where = f"{op.loc.file}:{op.loc.line}" if op.loc is not None else "?"
        if a["kind"] == "print":
            parts = [a["texts"][i] if k == "text" else str(E.evaluate(a["exprs"][i], env))
                     if k == "expr" else np.array2string(tensors[i], threshold=64)
                     for k, i in a["order"]]
            sys.stderr.write(f"pass_verify_print {where}: {' '.join(parts)}\n")
        elif directory:
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(tensors[0]), allow_pickle=False)
            os.makedirs(directory, exist_ok=True)
            atomic_write(os.path.join(directory, _save_name(op, env) + ".npy"), buf.getvalue())
        elif where not in said:
            said.add(where)
            sys.stderr.write(f"pass_verify_save {where}: not saved (give --dump-tensors DIR)\n")
    return probe


def golden_rows(tensor: Document, want: dict, mags: dict) -> list:
    """A row comparing the tensor-level outputs with set_verify_golden_data's goldens (by
    parameter position), when some were set."""
    from .frontend.verify import _golden_data
    from .runtime.data import compare
    goldens = _golden_data()
    if not goldens:
        return []
    params = list(tensor.attrs.get("params", []))
    gold = {params[i]: g for i, g in goldens.items() if i < len(params)}
    checks = [compare(n, want[n], g, mags[n]) for n, g in gold.items() if n in want]
    bad = [c for c in checks if not c["ok"]]
    return [{"level": "tensor", "after": "golden", "verdict": "fail" if bad else "pass",
             "max_abs_err": max((c["max_abs_err"] for c in checks), default=0.0),
             "mismatches": sum(c["mismatches"] for c in checks)}]


def _source_doc(doc: Document) -> Document:
    """The tensor-level document doc was lowered from (its `source` region)."""
    if doc.level == "tensor":
        return doc
    src = next((op for op in doc.body if op.name == "source"), None)
    if src is None:
        raise InputError(f"this {doc.level}-level file carries no tensor graph (`source`) "
                         f"to check the levels against")
    out = Document("tensor", list(src.regions[0]))
    out.attrs = {k: v for k, v in doc.attrs.items()}
    return out


def _recorded_pipeline(doc: Document) -> str | None:
    """The pipeline pypto-lower recorded when it made doc (None: the default one)."""
    for p in getattr(doc, "producer", None) or []:
        if p.get("tool") == "pypto-lower" and (p.get("options") or {}).get("pipeline"):
            return p["options"]["pipeline"]
    return None
