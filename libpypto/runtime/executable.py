"""Executables: a code-level graph loaded once, run many times (the JIT and benchmarks).

For each binding of the symbolic sizes the task expansion, dependency tables and workspaces
are built once and kept; a call then only fills in the tensor pointers and launches.
"""
from __future__ import annotations

import ctypes
import hashlib
import heapq
import threading
import time

import numpy as np

from ..errors import PyptoError
from ..analysis.expand import Expansion, expand


MAX_PLANS = 64      # plans kept per executable (per binding, and data read at run time)
# estimated work under which a run is "tiny" (Plan.tiny)
TINY_SECONDS = 20e-6
# a worker takes consecutive instances of a launch together up to about this much estimated
# work (Plan.batch; rt.c pp_take_batch), at most BATCH_MAX of them
BATCH_SECONDS = 50e-6
BATCH_MAX = 64


class Plan:
    """Everything a launch needs for one binding, except the parameter arrays."""

    def __init__(self, exp: Expansion, doc=None):
        self.exp = exp
        self._tiny = None
        n = exp.n
        launch_of = exp.launch_of.astype(np.int64)
        # tensor table: per task op, its gm ops; pointers are refreshed per call
        by_value = {op.result: op for op in exp.gms}
        self.task_gms = [[by_value[v] for v in t.operands] for t in exp.tasks]
        toff, pos = [], 0
        for gms in self.task_gms:
            toff.append(pos)
            pos += len(gms)
        self.nptrs = max(1, pos)
        task_of_launch = np.asarray([lc.task for lc in exp.launches] or [0], np.int64)
        self.tensor_off = np.ascontiguousarray(
            np.asarray(toff or [0], np.int64)[task_of_launch[launch_of]] if n
            else np.zeros(1, np.int64))
        self.scalars = np.ascontiguousarray(
            np.concatenate([lc.scalars.ravel() for lc in exp.launches]) if n else np.zeros(1),
            np.int64)
        soff = np.zeros(max(1, n), np.int64)
        p = 0
        for lc in exp.launches:
            w = lc.scalars.shape[1]
            soff[lc.first:lc.first + lc.n] = p + np.arange(lc.n, dtype=np.int64) * w
            p += lc.scalars.size
        self.scalar_off = soff
        index = {pr.attrs["name"]: i for i, pr in enumerate(exp.programs)}
        prog_of_task = np.asarray([index[t.attrs["program"]] for t in exp.tasks] or [0], np.int32)
        self.prog = np.ascontiguousarray(prog_of_task[task_of_launch[launch_of]] if n
                                         else np.zeros(1, np.int32))
        self.npred, self.succ_off, self.succ = _successors(exp.pred_ptr, exp.pred_idx, n)
        self.workspaces = workspaces(exp, doc)
        self._batch = None

    @property
    def tiny(self) -> bool:
        """Whether this run's estimated work (GM bytes at 10 GB/s plus FLOPs at 20 GFLOP/s,
        both below one thread's rates here) is under TINY_SECONDS: then waking a worker
        costs more than it saves, and the JIT runs it on the calling thread alone, holding
        the GIL (outputs are the same bits for any thread count). Unknown work is not tiny."""
        if self._tiny is None:
            self._tiny = sum(self._launch_seconds()) < TINY_SECONDS
        return self._tiny

    def _launch_seconds(self) -> list:
        """Estimated seconds of each launch (GM bytes at 10 GB/s plus FLOPs at 20 GFLOP/s,
        both below one thread's rates here; inf where the estimate fails)."""
        if getattr(self, "_seconds", None) is not None:
            return self._seconds
        from ..analysis.work import task_work
        exp = self.exp
        programs = {p.attrs["name"]: p for p in exp.programs}
        out = []
        for lc in exp.launches:
            try:
                nbytes, flops = task_work(programs[exp.tasks[lc.task].attrs["program"]],
                                          lc.scalars)
                out.append(nbytes / 10e9 + flops / 20e9)
            except Exception:
                out.append(float("inf"))
        self._seconds = out
        return out

    @property
    def batch(self) -> np.ndarray:
        """Per task instance, how many consecutive instances of its launch a worker may take
        with it (rt.c pp_take_batch): about BATCH_SECONDS of estimated work, at most
        BATCH_MAX, 1 for instances of unknown or large work. One lock, one wake-up and one
        scheduling decision per batch instead of per instance, for launches of many small
        instances (1-row tiles); the runtime still leaves the other workers their share, and
        each instance runs as it would alone (the same bits)."""
        if self._batch is None:
            exp = self.exp
            out = np.ones(max(1, exp.n), np.int32)
            for lc, sec in zip(exp.launches, self._launch_seconds()):
                per = sec / max(1, lc.n)
                if lc.n > 1 and 0 < per < BATCH_SECONDS:
                    out[lc.first:lc.first + lc.n] = min(BATCH_MAX, int(BATCH_SECONDS / per))
            self._batch = out
        return self._batch

    def instance(self, i: int) -> tuple:
        """(task index, index within its launch) of instance i."""
        lc = self.exp.launches[int(self.exp.launch_of[i])]
        return lc.task, i - lc.first


def workspaces(exp: Expansion, doc=None) -> dict:
    """The arrays of the GM tensors that are not parameters (workspaces, local tensors),
    zeroed: views into one arena at the offsets gm-reuse gave them when the document has
    them and the arena's checks hold for these sizes (analysis/arena.py), else an array
    each."""
    from ..analysis.arena import ALIGN, layout
    ops = [op for op in exp.gms if "param" not in op.attrs]
    lay = layout(doc, exp) if doc is not None else None
    out = {}
    if lay:
        dt = {op: op.result.type.dtype.np for op in lay}
        size = max(lay[op] + int(np.prod(exp.shapes[op], dtype=np.int64)) *
                   np.dtype(dt[op]).itemsize for op in lay)
        raw = np.zeros(size + ALIGN, np.uint8)
        base = (-raw.ctypes.data) % ALIGN          # the arena starts on a cache line
        for op, off in lay.items():
            n = int(np.prod(exp.shapes[op], dtype=np.int64)) * np.dtype(dt[op]).itemsize
            out[op] = raw[base + off:base + off + n].view(dt[op]).reshape(exp.shapes[op])
    for op in ops:
        if op not in out:
            out[op] = np.zeros(exp.shapes[op], op.result.type.dtype.np)
    return out


def _successors(ptr: np.ndarray, idx: np.ndarray, n: int) -> tuple:
    """(predecessor counts, CSR offsets, successors) of n instances from the expansion's
    predecessor CSR (pred_ptr, pred_idx); the successors of each instance in increasing
    order."""
    counts = np.diff(ptr[:n + 1]) if n else np.zeros(0, np.int64)
    npred = np.ascontiguousarray(counts.astype(np.int32) if n else np.zeros(1, np.int32))
    src = np.asarray(idx[:int(counts.sum())], np.int64) if n else np.zeros(0, np.int64)
    dst = np.repeat(np.arange(n, dtype=np.int64), counts)
    order = np.argsort(src, kind="stable")         # dst increases within each src
    succ_off = np.zeros(n + 1, np.int64)
    succ_off[1:] = np.cumsum(np.bincount(src, minlength=n)) if n else []
    succ = dst[order] if src.size else np.zeros(1, np.int64)
    return npred, succ_off, np.ascontiguousarray(succ, np.int64)


DIRECT_ARGS = 8            # rt.c PP_DIRECT: parameter pointers passed as arguments


class _LaunchStruct(ctypes.Structure):
    """rt.c's pp_launch, field for field."""
    _fields_ = [("ntasks", ctypes.c_int64), ("nslots", ctypes.c_int64),
                ("nargs", ctypes.c_int64)] + [
        (name, ctypes.c_void_p) for name in (
            "prog", "tensors", "slot", "bufs", "tensor_off", "scalars", "scalar_off", "npred0",
            "npred", "succ_off", "succ", "t_start", "t_end", "t_core", "batch")] + [
        ("wall_ns", ctypes.c_int64)]


class Launcher:
    """A plan made ready for one foreign call per run (rt.c pypto_launch).

    Everything but the parameters' data pointers is fixed per plan: the task tables, the
    workspaces, the scratch the runtime consumes (dependency counts, the flat tensor table)
    and the timeline arrays. `params` names the parameters in buffer order; a run passes
    their pointers (up to DIRECT_ARGS of them as arguments of the one foreign call) and the
    runtime fills the flat tensor table itself through `slot` (no Python per task). The
    runtime serialises the runs of a library (they share the plan's scratch); a kernel of
    more parameters sets them in `bufs` under this launcher's lock. The timeline of the
    latest run stays readable until the next one."""

    def __init__(self, fn, plan: Plan):
        self.fn, self.plan = fn, plan
        self.lock = threading.Lock()
        params, index, slots = [], {}, []
        workspaces = list(plan.workspaces.items())
        for gms in plan.task_gms:
            for op in gms:
                name = op.attrs.get("param")
                if name is not None and name not in index:
                    index[name] = len(params)
                    params.append(name)
        ws_index = {op: len(params) + j for j, (op, _) in enumerate(workspaces)}
        for gms in plan.task_gms:
            for op in gms:
                slots.append(index[op.attrs["param"]] if "param" in op.attrs else ws_index[op])
        self.params = params
        self.bufs = (ctypes.c_void_p * max(1, len(params) + len(workspaces)))()
        for j, (_, ws) in enumerate(workspaces):
            self.bufs[len(params) + j] = ws.ctypes.data
        n = plan.exp.n
        keep = {"slot": np.asarray(slots or [0], np.int64),
                "tensors": np.zeros(max(1, len(slots)), np.uintp),
                "npred": np.zeros(max(1, n), np.int32),
                "t_start": np.zeros(max(1, n), np.int64), "t_end": np.zeros(max(1, n), np.int64),
                "t_core": np.zeros(max(1, n), np.int32),
                "prog": plan.prog, "tensor_off": plan.tensor_off, "scalars": plan.scalars,
                "scalar_off": plan.scalar_off, "npred0": np.ascontiguousarray(plan.npred),
                "succ_off": plan.succ_off, "succ": plan.succ, "batch": plan.batch}
        self._keep = keep                   # the struct points into these arrays
        direct = len(params) <= DIRECT_ARGS
        self.pad = [None] * (DIRECT_ARGS - len(params)) if direct else None
        self.struct = _LaunchStruct(ntasks=n, nslots=len(slots), nargs=len(params) if direct
                                    else 0, bufs=ctypes.addressof(self.bufs),
                                    **{k: a.ctypes.data for k, a in keep.items()})
        self.addr = ctypes.addressof(self.struct)

    def run(self, pointers: list, nthreads: int) -> None:
        """One run with the parameters' data pointers in `params` order."""
        if self.pad is not None:
            rc = self.fn(self.addr, nthreads, *pointers, *self.pad)
        else:
            with self.lock:
                bufs = self.bufs
                for i, p in enumerate(pointers):
                    bufs[i] = p
                rc = self.fn(self.addr, nthreads, *([None] * DIRECT_ARGS))
        if rc != 0:
            raise PyptoError("the runtime could not start its worker threads or arenas, or its "
                             "task tables have a dependency cycle")

    def timing(self) -> dict:
        """The latest run's timeline (copies) and wall time."""
        n, k = self.plan.exp.n, self._keep
        return {"start_ns": k["t_start"][:n].copy(), "end_ns": k["t_end"][:n].copy(),
                "core": k["t_core"][:n].copy(), "wall_s": self.struct.wall_ns / 1e9}


FAST_MISS = -2             # rt.c PP_FAST_MISS: an argument does not match the plan
FAST_RANK = 8              # rt.c PP_FAST_RANK
# numpy's array flags the fast call compares (NPY_ARRAY_C_CONTIGUOUS, _ALIGNED, _WRITEABLE)
_FLAGS_MASK = 0x1 | 0x100 | 0x400


class _FastStruct(ctypes.Structure):
    """rt.c's pp_fast, field for field."""
    _fields_ = [("nargs", ctypes.c_int64), ("type", ctypes.c_void_p)] + [
        (f"off_{n}", ctypes.c_int64) for n in ("type", "data", "nd", "dims", "descr", "flags")
    ] + [("flags_mask", ctypes.c_int64), ("nd", ctypes.c_int64 * DIRECT_ARGS),
         ("flags", ctypes.c_int64 * DIRECT_ARGS), ("param", ctypes.c_int64 * DIRECT_ARGS),
         ("descr", ctypes.c_void_p * DIRECT_ARGS),
         ("dims", (ctypes.c_int64 * FAST_RANK) * DIRECT_ARGS), ("L", ctypes.c_void_p)]


_LAYOUT: list = []


def array_layout() -> dict | None:
    """Where numpy's array object keeps its type, data pointer, rank, sizes, dtype and flags
    (byte offsets), found on live arrays and checked against what numpy reports; None if
    the layout is not the expected one (then no call takes the fast path)."""
    if _LAYOUT:
        return _LAYOUT[0]
    found = None
    try:
        ptr = ctypes.sizeof(ctypes.c_void_p)
        lay = {"type": ptr, "data": 2 * ptr, "nd": 3 * ptr, "dims": 4 * ptr,
               "descr": 7 * ptr, "flags": 8 * ptr}
        a = np.zeros((3, 5), np.float32)
        ro = np.zeros((2, 7, 4), np.int64)[:, ::2]
        ro.flags.writeable = False

        def at(x, off, ct):
            return ct.from_address(id(x) + off).value

        for x in (a, ro):
            dims = ctypes.cast(at(x, lay["dims"], ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_int64))
            bits = at(x, lay["flags"], ctypes.c_int)
            ok = (at(x, lay["type"], ctypes.c_void_p) == id(np.ndarray)
                  and at(x, lay["data"], ctypes.c_void_p) == x.ctypes.data
                  and at(x, lay["nd"], ctypes.c_int) == x.ndim
                  and [dims[d] for d in range(x.ndim)] == list(x.shape)
                  and at(x, lay["descr"], ctypes.c_void_p) == id(x.dtype)
                  and bool(bits & 0x1) == x.flags.c_contiguous
                  and bool(bits & 0x100) == x.flags.aligned
                  and bool(bits & 0x400) == x.flags.writeable)
            if not ok:
                break
        else:
            found = lay
    except Exception:
        found = None
    _LAYOUT.append(found)
    return found


class FastCall:
    """A call plan's hit as one foreign call (rt.c pypto_fast): the arguments go to C as
    the addresses of the Python objects, C checks each against this plan (numpy array type, rank, sizes, dtype
    object, flags) and reads its data pointer, then launches. `run` returns FAST_MISS when
    an argument differs (the caller takes the full path), else 0; a failed run raises."""

    def __init__(self, fn, launcher, arrays: list, names: list, layout: dict):
        self.fn, self.launcher = fn, launcher
        self.nargs = len(arrays)
        self.pad = [None] * (DIRECT_ARGS - len(arrays))
        self._dtypes = [a.dtype for a in arrays]          # the descr pointers stay valid
        st = _FastStruct(nargs=len(arrays), type=id(np.ndarray), flags_mask=_FLAGS_MASK,
                         L=launcher.addr, **{f"off_{k}": v for k, v in layout.items()})
        for i, (a, n) in enumerate(zip(arrays, names)):
            st.nd[i] = a.ndim
            st.descr[i] = id(a.dtype)
            st.flags[i] = ((0x1 if a.flags.c_contiguous else 0) | (0x100 if a.flags.aligned
                           else 0) | (0x400 if a.flags.writeable else 0))
            st.param[i] = launcher.params.index(n) if n in launcher.params else -1
            for d, x in enumerate(a.shape):
                st.dims[i][d] = x
        self.struct = st
        self.addr = ctypes.addressof(st)

    @staticmethod
    def make(fn, launcher, arrays: list, names: list) -> "FastCall | None":
        """The fast call of a launcher for arguments like arrays, if the call can take it
        (at most DIRECT_ARGS parameters, direct; ranks up to FAST_RANK; numpy's layout
        as expected)."""
        layout = array_layout()
        if (fn is None or layout is None or launcher.pad is None or len(arrays) > DIRECT_ARGS
                or any(type(a) is not np.ndarray or a.ndim > FAST_RANK for a in arrays)):
            return None
        return FastCall(fn, launcher, arrays, names, layout)

    def run(self, args: tuple, nthreads: int) -> int:
        """One launch with args (the caller keeps them alive: C gets their addresses)."""
        rc = self.fn(self.addr, nthreads, *map(id, args), *self.pad)
        if rc == 0 or rc == FAST_MISS:
            return rc
        raise PyptoError("the runtime could not start its worker threads or arenas, or its "
                         "task tables have a dependency cycle")


class NativeExecutable:
    """A compiled shared library of programs plus the runtime, with plans per binding."""

    def __init__(self, doc, lib_path: str):
        from .compiler import is_sanitized
        self.doc = doc
        self.plans: dict = {}
        # a sanitized build is a program of its own, run in a child process (compiler.py)
        self.standalone = lib_path if is_sanitized(lib_path) else None
        if self.standalone is None:
            self.lib = ctypes.CDLL(lib_path)
            # the same function twice: releasing the GIL for the run, and holding it (a
            # tiny run: releasing and taking back the GIL would cost more than the run)
            self.launch = self.lib.pypto_launch
            self.launch_gil = ctypes.PyDLL(lib_path).pypto_launch
            for f in (self.launch, self.launch_gil):
                f.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_void_p] * DIRECT_ARGS
                f.restype = ctypes.c_int
            # the fast call reads its arguments' fields (the objects at the addresses it gets,
            # alive for the call): with the GIL (tiny runs) or without
            self.fast = self.lib.pypto_fast
            self.fast_gil = ctypes.PyDLL(lib_path).pypto_fast
            for f in (self.fast, self.fast_gil):
                f.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_void_p] * DIRECT_ARGS
                f.restype = ctypes.c_int

    def plan(self, env: dict, arrays: dict | None = None) -> Plan:
        """The plan for these sizes (kept per binding). A document that reads tensor
        elements at run time plans from their data too (arrays: every parameter by name),
        and keeps the plan per binding and content of what it reads."""
        reads = self.read_params()
        key = tuple(sorted(env.items()))
        data = None
        if reads:
            if arrays is None:
                raise PyptoError(f"this program reads {', '.join(reads)} at run time: its plan "
                                 f"needs their data")
            data = {n: np.ascontiguousarray(arrays[n]) for n in reads}
            key += tuple((n, a.shape, hashlib.blake2b(a.tobytes()).digest())
                         for n, a in data.items())
        p = self.plans.get(key)
        if p is None:
            if len(self.plans) >= MAX_PLANS:          # the oldest goes
                self.plans.pop(next(iter(self.plans)))
            p = self.plans[key] = Plan(expand(self.doc, env, data), self.doc)
        return p

    def read_params(self) -> list:
        """The parameters the program reads elements of at run time (`read` ops)."""
        if getattr(self, "_read_params", None) is None:
            from ..analysis.expand import reads_of
            self._read_params = reads_of(self.doc)
        return self._read_params

    def launcher(self, plan: Plan) -> "Launcher | None":
        """The plan's one-call launcher on this library (None for a sanitized build)."""
        if self.standalone is not None:
            return None
        la = getattr(plan, "launcher", None)
        if la is None:
            la = plan.launcher = Launcher(self.launch_gil if plan.tiny else self.launch,
                                              plan)
        return la

    def __call__(self, plan: Plan, arrays: dict, nthreads: int) -> dict:
        if self.standalone is not None:
            return self._call_standalone(plan, arrays, nthreads)
        la = self.launcher(plan)
        la.run([arrays[name].ctypes.data for name in la.params], nthreads)
        return la.timing()

    def _call_standalone(self, plan: Plan, arrays: dict, nthreads: int) -> dict:
        """The same launch in the sanitized program: tensors go to it and come back."""
        buffers, index, slots = [], {}, []
        for gms in plan.task_gms:
            for op in gms:
                a = arrays[op.attrs["param"]] if "param" in op.attrs else plan.workspaces[op]
                if id(a) not in index:
                    index[id(a)] = len(buffers)
                    buffers.append((a, bool(a.flags.writeable)))
                slots.append(index[id(a)])
        tables = {"prog": plan.prog, "tensor_off": plan.tensor_off, "scalars": plan.scalars,
                  "scalar_off": plan.scalar_off, "npred": plan.npred,
                  "succ_off": plan.succ_off, "succ": plan.succ}
        n = plan.exp.n
        out = run_standalone(self.standalone, n, tables, slots, buffers, [nthreads])
        if out["rc"] != 0:
            raise PyptoError("the runtime could not start its worker threads or arenas")
        return {"start_ns": out["start_ns"][:n], "end_ns": out["end_ns"][:n],
                "core": out["core"][:n], "wall_s": float(out["walls_ns"][0]) / 1e9}


# -- the sanitized standalone program ----------------------------------------------------------

_TABLES = ("prog", "tensor_off", "scalars", "scalar_off", "npred", "succ_off", "succ")
_TABLE_TYPES = {"prog": np.int32, "npred": np.int32}
# a report ends the run with this status (ASan and UBSan), whatever else the child exits with
_SANITIZER_EXIT = 86
_SANITIZER_OPTIONS = {
    "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:abort_on_error=0:symbolize=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:symbolize=1",
}


def _raw(a: np.ndarray) -> np.ndarray:
    """The bytes of a C-contiguous array, as a uint8 view (no copy)."""
    return a.reshape(-1).view(np.uint8)


def _write_blob(f, data: np.ndarray) -> None:
    f.write(np.int64(data.nbytes).tobytes())
    f.write(_raw(np.ascontiguousarray(data)))


def run_standalone(path: str, ntasks: int, tables: dict, slots: list, buffers: list,
                   thread_counts: list) -> dict:
    """Run tasks in a sanitized standalone program (compiler.py) in a child process.

    tables: the runtime's arrays by name (_TABLES); slots: the buffer index of each tensor
    pointer; buffers: (array, copy back) pairs, the arrays C-contiguous; one run per entry of
    thread_counts. Returns rc (pypto_run's), walls_ns per run and the last run's start_ns,
    end_ns and core; buffers marked for it are written back in place. A sanitizer report
    raises a PyptoError of one line (sanitizer_error); the whole report is kept in a file.

    The job file, in native byte order: b"PPJOB001", int64 ntasks, int64 number of buffers,
    then blobs (int64 length in bytes, the bytes): the thread counts (int64 each), the
    tables in _TABLES order, the slots (int64 each); then per buffer int64 copy-back and a
    blob. The result: b"PPRES001", int64 rc, blobs of the walls, starts, ends (int64) and
    cores (int32), then a blob per buffer copied back."""
    import tempfile

    from ..ir.files import cleanup_on_signals
    if not all(a.flags.c_contiguous for a, _ in buffers):
        raise PyptoError("a sanitized run needs C-contiguous arrays")
    with cleanup_on_signals(), tempfile.TemporaryDirectory(prefix="pypto-run-") as tmp:
        job, res = f"{tmp}/job", f"{tmp}/result"
        with open(job, "wb") as f:
            f.write(b"PPJOB001" + np.asarray([ntasks, len(buffers)], np.int64).tobytes())
            _write_blob(f, np.asarray(thread_counts, np.int64))
            for name in _TABLES:
                _write_blob(f, np.asarray(tables[name], _TABLE_TYPES.get(name, np.int64)))
            _write_blob(f, np.asarray(slots, np.int64))
            for a, back in buffers:
                f.write(np.int64(1 if back else 0).tobytes())
                _write_blob(f, a)
        rc, err = _run_child([path, job, res])
        if rc != 0:
            _child_failed(path, rc, err)
        return _read_result(res, buffers)


def _run_child(cmd: list) -> tuple[int, str]:
    import os
    import subprocess

    from .compiler import stop_process_group
    env = dict(os.environ)
    for var, ours in _SANITIZER_OPTIONS.items():     # the user's options, then ours
        env[var] = ":".join(filter(None, [ours, env.get(var), f"exitcode={_SANITIZER_EXIT}"]))
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          process_group=0) as p:
        try:
            _, err = p.communicate()
        except BaseException:
            stop_process_group(p)
            raise
    return p.returncode, err.decode(errors="replace")


def _read_result(res: str, buffers: list) -> dict:
    with open(res, "rb") as f:
        if f.read(8) != b"PPRES001":
            raise PyptoError("the sanitized run left no result")
        out = {"rc": int(np.frombuffer(f.read(8), np.int64)[0])}
        for name, dtype in (("walls_ns", np.int64), ("start_ns", np.int64),
                            ("end_ns", np.int64), ("core", np.int32)):
            n = int(np.frombuffer(f.read(8), np.int64)[0])
            out[name] = np.frombuffer(f.read(n), dtype).copy()
        for a, back in buffers:
            if back:
                n = int(np.frombuffer(f.read(8), np.int64)[0])
                raw = _raw(a)
                if n != raw.nbytes or f.readinto(memoryview(raw)) != n:
                    raise PyptoError("the sanitized run returned a tensor of the wrong size")
    return out


def _child_failed(path: str, rc: int, err: str) -> None:
    """Raise the one line for a failed sanitized run; the whole report goes to a file."""
    from ..ir.files import atomic_write
    log = path + ".log"
    atomic_write(log, (f"# pypto --sanitize: {path} exited with {rc}; kernel.c is "
                       f"{path}.c\n" + err).encode())
    found = sanitizer_error(err)
    if found is None:
        last = (err.strip().splitlines() or [f"exit status {rc}"])[-1]
        raise PyptoError(f"the sanitized run failed: {last} (report in {log})")
    what, details = found
    raise PyptoError(f"{what} ({', '.join([*details, f'report in {log}'])})")


_NOT_OURS = ("__interceptor_", "__asan", "__ubsan", "__lsan", "__tsan", "__sanitizer", "_start",
             "__libc_", "start_thread", "clone", "(", "0x")


def _ours(name: str, loc: str) -> bool:
    """Whether a stack frame is in the kernel or the runtime, not the sanitizer or libc."""
    return not (name.startswith(_NOT_OURS) or "sanitizer" in loc or "libasan" in loc
                or name in ("malloc", "calloc", "realloc", "posix_memalign", "free"))


def sanitizer_error(report: str) -> tuple[str, list] | None:
    """The first finding of a sanitizer report: the sanitizer, what it found and in which
    function (`AddressSanitizer: heap-buffer-overflow in p0`), and details (where, the
    access: `kernel.c:41`, `WRITE of size 4`); None if the report has none."""
    import re
    found = re.search(r"(?:ERROR|WARNING): (AddressSanitizer|LeakSanitizer|ThreadSanitizer): "
                      r"([^\n]*)", report)
    ubsan = re.search(r"(\S+:\d+(?::\d+)?): runtime error: ([^\n]+)", report)
    if ubsan and (found is None or ubsan.start() < found.start()):
        tool, what, where, rest = ("UndefinedBehaviorSanitizer", ubsan.group(2),
                                   ubsan.group(1), report[ubsan.end():])
    elif found:     # "heap-buffer-overflow on address ...", "data race (pid=1)"
        tool, what, where, rest = (found.group(1), re.split(r" on | \(|:", found.group(2))[0],
                                   "", report[found.end():])
    else:
        return None
    func = "?"
    for m in re.finditer(r"#\d+ (?:0x[0-9a-f]+ in )?(\S+)(?: (\S+))?", rest):
        name, loc = m.group(1), m.group(2) or ""
        if not _ours(name, loc):
            continue
        func, where = name, where or loc
        break
    access = re.search(r"(READ|WRITE) of size \d+", rest)
    return f"{tool}: {what} in {func}", [d for d in (where, access and access.group(0)) if d]


class NumpyExecutable:
    """Programs run instruction by instruction on numpy (npexec.py), by a Python thread pool
    in dependency order. No source text is executed."""

    def __init__(self, doc):
        from .npexec import ProgramRunner
        self.doc = doc
        self.fns = {p.attrs["name"]: ProgramRunner(p) for p in doc.body if p.name == "program"}
        self.plans: dict = {}

    plan = NativeExecutable.plan
    read_params = NativeExecutable.read_params

    def __call__(self, plan: Plan, arrays: dict, nthreads: int) -> dict:
        exp = plan.exp
        prog_fns = self.fns
        per_task = [[arrays[op.attrs["param"]] if "param" in op.attrs else plan.workspaces[op]
                     for op in gms] for gms in plan.task_gms]
        n = exp.n
        t_start, t_end = np.zeros(n, np.int64), np.zeros(n, np.int64)
        t_core = np.zeros(n, np.int32)
        npred = [len(p) for p in exp.preds]
        succ = [[] for _ in range(n)]
        for i, ps in enumerate(exp.preds):
            for q in ps:
                succ[q].append(i)
        ready = [i for i in range(n) if npred[i] == 0]
        heapq.heapify(ready)
        lock = threading.Condition()
        state = {"remaining": n, "error": None}
        base = time.perf_counter_ns()

        def worker(core: int) -> None:
            while True:
                with lock:
                    while not ready and state["remaining"] > 0 and state["error"] is None:
                        lock.wait()
                    if state["remaining"] == 0 or state["error"] is not None:
                        return
                    i = heapq.heappop(ready)
                lc = exp.launches[int(exp.launch_of[i])]
                ti = lc.task
                fn = prog_fns[exp.tasks[ti].attrs["program"]]
                t_start[i] = time.perf_counter_ns() - base
                try:
                    fn(per_task[ti], [int(x) for x in lc.scalars[i - lc.first]])
                except Exception as exc:   # report, then stop every worker
                    with lock:
                        state["error"] = exc
                        lock.notify_all()
                    return
                t_end[i] = time.perf_counter_ns() - base
                t_core[i] = core
                with lock:
                    for s in succ[i]:
                        npred[s] -= 1
                        if npred[s] == 0:
                            heapq.heappush(ready, s)
                    state["remaining"] -= 1
                    lock.notify_all()

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(c,)) for c in range(1, max(1, nthreads))]
        for th in threads:
            th.start()
        worker(0)
        for th in threads:
            th.join()
        wall = time.perf_counter() - t0
        if state["error"] is not None:
            exc = state["error"]
            raise PyptoError(f"numpy backend failed: {type(exc).__name__}: {exc}") from exc
        return {"start_ns": t_start, "end_ns": t_end, "core": t_core, "wall_s": wall}
