"""Host execution: load a code-level document, run it, verify it against numpy.

load(doc) is the one way from a code document to something that runs (the CLI's run and the
JIT both use it); run_code(doc, ...) is a whole `pypto-run`: sizes, data, runs, verdict,
run record.
"""
from __future__ import annotations

import hashlib
import platform

from ..errors import UsageError, warn
from ..ir.core import Document, Op


def code_op(doc: Document) -> Op:
    return next(op for op in doc.body if op.name == "code")


def resolve_backend(want: str) -> tuple[str, str | None]:
    """The backend to run a request for `want` on, and a notice when it had to change (no C
    compiler: the numpy backend instead)."""
    from .compiler import find_cc
    if want == "c" and find_cc() is None:
        notice = "no C compiler found: running the numpy backend instead"
        warn(notice)
        return "numpy", notice
    return want, None


def load(doc: Document):
    """The executable of a code-level document: its C compiled (cached by content) and
    loaded, or its numpy programs; plans per binding are kept on it."""
    import time

    from .compiler import compile_shared, runtime_source
    from .executable import NativeExecutable, NumpyExecutable
    code = code_op(doc)
    if code.attrs["backend"] != "c":
        return NumpyExecutable(doc)
    t0 = time.perf_counter()
    lib, cached = compile_shared(code.attrs["source"] + "\n" + runtime_source())
    exe = NativeExecutable(doc, lib)
    exe.compile_info = {"cached": cached, "seconds": round(time.perf_counter() - t0, 3)}
    return exe


def run_code(doc: Document, inputs: dict | None = None, bind: dict | None = None,
             seed: int = 0, threads: int | None = None, verify: bool = True,
             outputs_path: str | None = None, target=None, keep_data: bool = True,
             repeat: int = 1, notice: str | None = None, check: bool = False) -> Document:
    """Run a code-level document on the host and return the run record.

    repeat: run it this many times (a kernel's outputs do not depend on their old content,
    so repeats give the same bits); the record keeps the last timeline and every wall time.
    check: first walk sampled instances of the programs that carry their own sync through
    the race and sync checker (runtime/tensor_check.py; a race is a SyncError).
    """
    from ..analysis.bind import param_roles, run_sizes
    from ..targets import host_cpus
    from . import data as D
    given = dict(inputs or {})
    roles = param_roles(doc)
    for name in given:
        if name not in roles:
            raise UsageError(f"input {name!r} is not a parameter of {doc.attrs.get('kernel')} "
                             f"(parameters: {', '.join(roles)})")
    env = run_sizes(doc, given, bind)
    arrays = D.prepare(doc, given, env, seed)
    reference = {k: v.copy() for k, v in arrays.items()} if verify else None
    nthreads = threads or host_cpus()
    exe = load(doc)
    plan = exe.plan(env, arrays)
    sync_check = _sync_check(doc, plan.exp) if check else None
    walls = []
    for _ in range(max(1, repeat)):
        timing = exe(plan, arrays, nthreads)
        walls.append(timing["wall_s"])
    checks = _verify(doc, arrays, reference, env, roles) if verify else []
    verdict = "unchecked" if not verify else ("pass" if all(c["ok"] for c in checks) else "fail")
    outputs = _outputs(arrays, roles, outputs_path, keep_data)
    attrs = {"verdict": verdict, "backend": code_op(doc).attrs["backend"], "threads": nthreads,
             "wall_s": timing["wall_s"], "walls_s": walls,
             "bindings": dict(sorted(env.items())),
             "outputs": outputs, "checks": checks, "events": _events(plan, timing),
             "tasks": _tasks(plan.exp), "compile": getattr(exe, "compile_info", {}),
             "notice": notice or "", "environment": _environment(target)}
    if sync_check is not None:
        attrs["sync_check"] = sync_check
    return Document("run", [Op("run", [], [], attrs, [], None)], dict(doc.attrs),
                    list(doc.producer))


def _sync_check(doc, exp) -> dict:
    from .tensor_check import check_expansion
    align = int((doc.attrs.get("target") or {}).get("align_bytes", 32))
    return check_expansion(exp, align)


def _verify(doc, arrays: dict, reference: dict, env: dict, roles: dict) -> list:
    from . import data as D
    from .interp import run_tensor
    mags = D.magnitudes(doc, reference, env)
    run_tensor(doc, reference, env)
    return [D.compare(name, arrays[name], reference[name], mags[name])
            for name, role in roles.items() if role == "output"]


def _outputs(arrays: dict, roles: dict, outputs_path: str | None, keep_data: bool) -> list:
    """The record's entry per output (data, or where it was written), saving the npz."""
    import numpy as np
    outputs = []
    for name, role in roles.items():
        if role != "output":
            continue
        a = np.ascontiguousarray(arrays[name])
        entry = {"name": name, "dtype": str(a.dtype), "shape": list(a.shape),
                 "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
        if outputs_path:
            entry["path"] = outputs_path
        elif keep_data:
            entry["data"] = a.tobytes()
        outputs.append(entry)
    if outputs_path:
        save_npz(outputs_path, {o["name"]: arrays[o["name"]] for o in outputs})
    return outputs


def _events(plan, timing) -> list:
    """[task, instance in launch, core, start ns, end ns] per task instance."""
    return [[*plan.instance(i), int(timing["core"][i]), int(timing["start_ns"][i]),
             int(timing["end_ns"][i])] for i in range(plan.exp.n)]


def _tasks(exp) -> list:
    """Per task op: its program, ops, block, GM bytes, FLOPs and source line."""
    from ..analysis.work import task_work
    programs = {p.attrs["name"]: p for p in exp.programs}
    launches_of: dict = {}
    for lc in exp.launches:
        launches_of.setdefault(lc.task, []).append(lc)
    tasks = []
    for ti, t in enumerate(exp.tasks):
        nbytes = flops = 0
        for lc in launches_of.get(ti, []):
            b_, f_ = task_work(programs[t.attrs["program"]], lc.scalars)
            nbytes, flops = nbytes + b_, flops + f_
        tasks.append({"program": t.attrs["program"], "ops": t.attrs.get("ops", []),
                      "block": t.attrs.get("block", ""), "bytes": nbytes, "flops": flops,
                      "loc": str(t.loc) if t.loc else ""})
        if t.attrs.get("labels"):
            tasks[-1]["labels"] = list(t.attrs["labels"])
    return tasks


def _environment(target) -> dict:
    import numpy as np

    from ..targets import host_cpus
    return {"machine": platform.machine(), "cpus": host_cpus(),
            "python": platform.python_version(), "numpy": np.__version__,
            "target": getattr(target, "name", None) or target or "host"}


def save_npz(path: str, arrays: dict) -> None:
    import io

    import numpy as np

    from ..ir.files import atomic_write
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(path, buf.getvalue())
