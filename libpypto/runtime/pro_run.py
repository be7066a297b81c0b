"""pypto-run for a Pro kernel: data, the run on the Pro runner, the checks, the run record.

A Pro kernel has no Tensor Graph to check against. What is checked, and said in the report:
- `golden`: a user reference, a numpy function of the op file (`reference`, or
  `reference_<kernel>`), called with the inputs (and scalars) its signature names, giving
  the outputs by name; or `expect`, an .npz of the outputs by name;
- `rerun`: the kernel run a second time on one thread, from the same inputs, must give
  the same bits (results do not depend on the thread count).
Both compare with the verification tolerance of libpypto.runtime.data (exact for ints).
The race and sync checker runs unless check=False.
"""
from __future__ import annotations

import inspect
import time
from platform import machine, python_version

from ..errors import PyptoError, UsageError
from ..ir.core import Document, Op
from . import data as D
from .pro_debug import flushing, rehearsed
from .pro_exec import run as pro_run


def scalar_names(doc) -> list:
    """The program scalars a run must be given (block_num and DYNAMIC dims excluded)."""
    syms = doc.attrs.get("symbols", {})
    return [n for n, _ in doc.attrs["pro"]["scalars"]
            if n != "block_num" and syms.get(n, {}).get("kind") != "dynamic"]


def run_record(doc, inputs=None, bind=None, seed=0, threads=None, verify=True,
               outputs_path=None, block_dim=1, expect=None, golden=None, check=True,
               notice=None, backend="numpy", repeat=1, debug=None) -> Document:
    """Run a Pro document. backend "c": its C (a code-level document's source) runs and is
    compared with the Pro runner (numpy, with the checker); "numpy": the Pro runner only.
    debug: a pro_debug.Debug taking the reported execution's printf and dump_data records
    (the C's printed text must equal the Pro runner's)."""
    from ..analysis.bind import param_roles
    from ..targets import host_cpus
    from . import _outputs
    given, bind = dict(inputs or {}), dict(bind or {})
    roles = param_roles(doc)
    for name in given:
        if name not in roles:
            raise UsageError(f"input {name!r} is not a parameter of {doc.attrs['kernel']}")
    env = _sizes(doc, given, bind)
    scalars = _scalars(doc, bind)
    arrays = D.prepare(doc, given, env, seed)
    start = {k: v.copy() for k, v in arrays.items()}
    run = _Runs(doc, start, {**env, **scalars}, block_dim, threads or host_cpus(), check,
                backend)
    run.debug = debug
    arrays, wall = run.main()
    walls = [wall] + [run.again() for _ in range(max(1, repeat) - 1)]
    checks, what = _checks(run, arrays, env, scalars, roles, expect, golden) if verify \
        else ([], [])
    verdict = "unchecked" if not checks else \
        ("pass" if all(c["ok"] for c in checks) else "fail")
    said = f"checked against {' and '.join(what)}" if what else "not checked"
    how = "its C" if backend == "c" else "the Pro runner"
    attrs = {"verdict": verdict, "backend": backend, "threads": run.threads,
             "wall_s": walls[-1], "walls_s": walls, "bindings": dict(sorted({**env, **{
                 k: v for k, v in scalars.items() if isinstance(v, int)},
                 "block_num": block_dim}.items())),
             "outputs": _outputs(arrays, roles, outputs_path, True), "checks": checks,
             "events": run.events, "tasks": run.tasks(), "compile": run.compile_info,
             "notice": (notice + "; " if notice else "") +
             f"Pro kernel, {how}, block_dim {block_dim}, "
             f"{'race checker on' if check else 'race checker off'}; {said}",
             "environment": {"machine": machine(), "cpus": host_cpus(),
                             "python": python_version(), "target": "host"}}
    return Document("run", [Op("run", [], [], attrs, [], None)], dict(doc.attrs),
                    list(doc.producer))


class _Runs:
    """The executions of one launch, each from a copy of the same starting arrays."""

    def __init__(self, doc, start, env, block_dim, threads, check, backend):
        self.doc, self.start, self.env = doc, start, env
        self.block_dim, self.threads, self.check, self.backend = (block_dim, threads, check,
                                                                 backend)
        self.compile_info: dict = {}
        self.native = None
        self.numpy_out = None
        self.events: list = []        # the reported execution's, [0, task, worker, s, e]
        self.work: dict = {}          # the Pro runner's GM bytes and flops
        self.debug = None             # pro_debug.Debug of the reported execution

    def _compile(self) -> None:
        """The C, compiled once the Pro runner has run: a race it finds costs no compile."""
        from . import code_op
        from .pro_native import ProNative
        self.native = ProNative(self.doc, code_op(self.doc).attrs["source"])
        self.compile_info = self.native.compile_info

    def fresh(self) -> dict:
        return {k: v.copy() for k, v in self.start.items()}

    def pro_runner(self, threads: int, check: bool, debug=None) -> dict:
        out = self.fresh()
        got = flushing(debug, pro_run, self.doc, out, self.env, self.block_dim, threads,
                       check, debug=debug)
        self.work = {"bytes": got["bytes"], "flops": got["flops"]}
        self.runner_events = got["events"]
        return out

    def tasks(self) -> list:
        """The run's one task op for pypto-prof: a cluster (its cores' programs), or with a
        grid-wide sync a worker's share of the clusters (all resident, interleaved; the
        Pro runner has one share)."""
        from ..ir.pro_ops import grid_wide
        progs = [op for op in self.doc.body if op.name == "program"]
        return [{"program": "grid_share" if grid_wide(self.doc) else "cluster",
                 "ops": [p.attrs["core"] for p in progs], "block": "",
                 "bytes": self.work.get("bytes", 0), "flops": self.work.get("flops", 0),
                 "loc": str(progs[0].loc) if progs and progs[0].loc else ""}]

    def main(self) -> tuple:
        """The outputs reported, and their wall time. With C, the Pro runner (and its
        checker) runs first: a race is found before any C is compiled or runs."""
        if self.backend != "c":
            t0 = time.perf_counter()
            out = self.pro_runner(self.threads, self.check, self.debug)
            self.events = self.runner_events
            return out, time.perf_counter() - t0
        self.numpy_out, printed = rehearsed(self.debug, self.pro_runner, self.threads,
                                            self.check)
        self._compile()
        out = self.fresh()
        wall = flushing(self.debug, self.native, out, self.env, self.block_dim, self.threads,
                        debug=self.debug)
        if printed is not None and printed != self.debug.printed:
            raise PyptoError("the printf output of the C differs from the Pro runner's")
        self.events = self.native.last_events
        return out, wall

    def again(self) -> float:
        """One more run of the reported execution (--repeat), without the checker: its wall
        time (the outputs are the same bits)."""
        out = self.fresh()
        if self.native is not None:
            return self.native(out, self.env, self.block_dim, self.threads)
        t0 = time.perf_counter()
        pro_run(self.doc, out, self.env, self.block_dim, self.threads, False)
        return time.perf_counter() - t0

    def rerun(self) -> dict:
        if self.native is None:
            return self.pro_runner(1, False)
        out = self.fresh()
        self.native(out, self.env, self.block_dim, 1)
        return out


def _sizes(doc, given: dict, bind: dict) -> dict:
    """The DYNAMIC dims: from the arrays given, --bind, else (generated data) the size bound
    for another tensor's dim of the same axis (x_0 given, y_0 takes it)."""
    env, late = {}, []
    for op in doc.body:
        if op.name != "gm":
            continue
        name = op.attrs["param"]
        for axis, d in enumerate(op.result.type.shape):
            if isinstance(d, int):
                continue
            sym = str(d)
            if name in given:
                env[sym] = int(given[name].shape[axis])
            elif sym in bind:
                env[sym] = int(bind[sym])
            else:
                late.append((sym, name, axis))
    for sym, name, axis in late:      # generated data: the size of a bound dim of this axis
        same = [v for k, v in {**bind, **env}.items() if k.endswith(f"_{axis}") and k != sym]
        if sym not in env and not same:
            raise UsageError(f"the size of {sym} is not known: --bind {sym}=N or give "
                             f"{name} with --inputs/--input")
        env.setdefault(sym, int(same[0]))
    return env


def _scalars(doc, bind: dict) -> dict:
    out = {}
    types = dict((n, d) for n, d in doc.attrs["pro"]["scalars"])
    for n in scalar_names(doc):
        if n not in bind:
            raise UsageError(f"runtime scalar {n} needs a value: --bind {n}=VALUE")
        out[n] = float(bind[n]) if types.get(n, "i64").startswith(("f", "bf")) else int(bind[n])
    return out


def _checks(run, arrays, env, scalars, roles, expect, golden) -> tuple:
    doc = run.doc
    outs = [n for n, r in roles.items() if r == "output"]
    checks, what = [], []
    if run.numpy_out is not None:
        what.append("the Pro runner (numpy)")
        checks += [{**D.compare(n, arrays[n], run.numpy_out[n]), "against": what[-1]}
                   for n in outs]
    want = None
    if expect is not None:
        want, label = expect, "--expect"
    elif golden is not None:
        pool = {**doc.attrs.get("consts", {}), **run.start, **scalars, **env}
        want, label = _golden(golden, pool, run.block_dim), f"{golden.__name__}()"
    if want is not None:
        if not set(outs) & set(want):
            raise UsageError(f"the reference gives none of the outputs {', '.join(outs)} (it "
                             f"gives {', '.join(want) or 'nothing'})")
        what.append(label)
        checks += [{**D.compare(n, arrays[n], want[n].astype(arrays[n].dtype)),
                    "against": label} for n in outs if n in want]   # a workspace: not given
    again = run.rerun()
    what.append("a one-thread rerun")
    for n in outs:
        c = D.compare(n, arrays[n], again[n])
        checks.append({**c, "ok": c["ok"] and arrays[n].tobytes() == again[n].tobytes(),
                       "against": what[-1]})
    return checks, what


def _golden(fn, pool: dict, block_dim: int) -> dict:
    """fn called with the inputs, scalars, sizes and TilingKey values its parameters name
    (block_dim too); parameters with defaults may be left out."""
    import numpy as np
    pool = {**pool, "block_dim": block_dim}
    params = {p: v for p, v in inspect.signature(fn).parameters.items()
              if p in pool or v.default is inspect.Parameter.empty}
    missing = [p for p in params if p not in pool]
    if missing:
        raise UsageError(f"{fn.__name__}() asks for {', '.join(missing)}, which the kernel "
                         f"does not have")
    out = fn(**{p: pool[p] for p in params})
    if not isinstance(out, dict):
        raise UsageError(f"{fn.__name__}() must return a dict of outputs by name")
    return {k: np.asarray(v) for k, v in out.items()}
