"""Side-by-side benchmark, one process: pypto vs numpy, torch eager and torch.compile, with
one thread and with two, against the machine's measured limits.

Cases come from this file (the examples' softmax, rmsnorm and matmul) and from every suite
module next to it that exists (SUITES: bench/matmul.py, bench/attention.py), each exposing
`cases(quick)` (the interface is in bench/README.md). Per case and thread count, the sides
run interleaved, REPS times each, and the table gives medians (and pypto's best run): every
timed call follows an untimed call of the same side (idle cores wake slowly on this VM, and
OpenBLAS keeps its threads spinning between calls); after a BLAS call the benchmark pauses
long enough for OpenBLAS's workers to stop spinning (they would steal the second core from
the next run), after a torch call 0.25 s (its OpenMP workers spin for up to 200 ms). pypto's
outputs are preallocated (the kernel writes in place; first-touch page faults are paid once,
in the warm-up call); numpy and torch run as users write them, allocating their results.
Correctness: pypto's output is compared with numpy's once per case.

"% of limit" is pypto's rate over the machine's limit measured in this run (bench/limits.py):
bytes moved over the STREAM triad bandwidth, or FLOPs over the fp32 FMA rate. "best other"
is the fastest of numpy, torch and torch.compile over pypto (above 1: pypto is faster).

Thread counts: pypto through each case's kernels' `threads` option; torch through
torch.set_num_threads; numpy's BLAS through OpenBLAS's set_num_threads when the loaded
OpenBLAS exports it (numpy's elementwise ops use one thread either way). The tables say what
was skipped: torch when it is not installed (pip install -e .[bench]), torch.compile in
--quick mode, a BLAS thread count that could not be set.

Then bench/calls.py's tables: the JIT's call overhead and the runtime's per-task dispatch.

    python bench/bench.py [--reps N] [--quick] [--only OP] [--threads 1,2] [--no-calls]
                          [--no-compile]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

import numpy as np
from tabulate import tabulate

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

SUITES = ("matmul", "attention")  # bench/<name>.py with cases(quick) or bench_cases(quick)
# bench/fused.py is a script of its own (three tables); make bench runs it after this one


def load(name: str):
    """An example module (examples/<name>.py)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}",
                                                  os.path.join(ROOT, "examples", f"{name}.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_rmsnorm(x, g, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def cases(quick: bool):
    """The examples' cases (the interface every suite follows: bench/README.md)."""
    rng = np.random.default_rng(0)
    rows = 2048 if quick else 16384
    sm = load("softmax")
    x = rng.standard_normal((rows, 1024), dtype=np.float32)
    y = np.zeros_like(x)
    yield {"op": "softmax", "shape": f"{rows}x1024 f32", "pypto": lambda: sm.softmax(x, y),
           "kernels": [sm.softmax], "result": lambda: y, "numpy": lambda: np_softmax(x),
           "torch": lambda torch: (lambda t: torch.softmax(t, -1), (torch.from_numpy(x),)),
           "bytes": 2 * x.nbytes}
    rn = load("rmsnorm")
    t = 1024 if quick else 4096
    xr = rng.standard_normal((t, 4096), dtype=np.float32)
    g = rng.standard_normal(4096, dtype=np.float32)
    yr = np.zeros_like(xr)
    yield {"op": "rmsnorm", "shape": f"{t}x4096 f32", "pypto": lambda: rn.rmsnorm(xr, g, yr),
           "kernels": [rn.rmsnorm], "result": lambda: yr, "numpy": lambda: np_rmsnorm(xr, g),
           "torch": lambda torch: (
               lambda a, w: a * torch.rsqrt((a * a).mean(-1, keepdim=True) + 1e-6) * w,
               (torch.from_numpy(xr), torch.from_numpy(g))),
           "bytes": 2 * xr.nbytes}
    mm = load("matmul")
    m = 512 if quick else 2048
    a = rng.standard_normal((m, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    c = np.zeros((m, 256), np.float32)
    yield {"op": "matmul", "shape": f"{m}x512 @ 512x256 f32", "pypto": lambda: mm.matmul(a, b, c),
           "kernels": [mm.matmul], "result": lambda: c, "numpy": lambda: a @ b,
           "torch": lambda torch: (lambda p, q: p @ q, (torch.from_numpy(a), torch.from_numpy(b))),
           "flops": 2 * m * 512 * 256}


def all_cases(quick: bool, notes: list):
    """This file's cases, then each suite's that exists (a suite that fails to load is
    reported, not fatal)."""
    yield from cases(quick)
    for name in SUITES:
        path = os.path.join(HERE, f"{name}.py")
        if not os.path.exists(path):
            notes.append(f"suite bench/{name}.py: not present")
            continue
        try:
            spec = importlib.util.spec_from_file_location(f"bench_suite_{name}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            yield from getattr(mod, "bench_cases", mod.cases)(quick)
        except Exception as exc:                      # reported in the notes
            notes.append(f"suite bench/{name}.py failed: {type(exc).__name__}: {exc}")


# -- the other side's thread counts -----------------------------------------------------------

_BLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                 "openblas_set_num_threads64_", "openblas_set_num_threads")


def _blas_setter():
    """OpenBLAS's set_num_threads in the library numpy loaded, or None."""
    import ctypes
    np.ones((2, 2)) @ np.ones((2, 2))                 # make sure the BLAS is loaded
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "blas" in ln.lower() and "/" in ln}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in _BLAS_SETTERS:
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.argtypes = [ctypes.c_int]
                return fn
    return None


class Threads:
    """Sets the thread count of every side; says what it could not set."""

    def __init__(self, torch):
        self.torch = torch
        self.blas = _blas_setter()

    def set(self, n: int, kernels) -> None:
        for k in kernels:
            k.options["threads"] = n
        if self.blas is not None:
            self.blas(n)
        if self.torch is not None:
            self.torch.set_num_threads(n)


def import_torch(notes: list):
    try:
        import torch
    except Exception as exc:                          # absent, or a broken install
        notes.append(f"skipped torch eager and torch.compile: torch is not importable "
                     f"({type(exc).__name__}: {str(exc)[:80]}); pip install -e .[bench]")
        return None
    return torch


# -- measuring -----------------------------------------------------------------------------

def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sides(case: dict, torch, threads: int, compile_torch: bool, notes: list) -> dict:
    """Name -> zero-argument callable of every side that runs for this case."""
    out = {"pypto": case["pypto"], "numpy": case["numpy"]}
    if torch is None or case.get("torch") is None:
        return out
    fn, args = case["torch"](torch)
    out["torch"] = lambda: fn(*args)
    if not compile_torch:
        return out
    try:
        torch._dynamo.reset()               # Inductor's C++ takes the thread count it sees
        compiled = torch.compile(fn)
        compiled(*args)                     # compile now, untimed
        out["torch.compile"] = lambda: compiled(*args)
    except Exception as exc:                # reported; the other sides still run
        notes.append(f"{case['op']}: torch.compile failed at {threads} threads: "
                     f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}")
    return out


def measure(run: dict, reps: int, blas: bool) -> dict:
    """Interleaved timings, per side: an untimed call, then a timed one, REPS times."""
    times: dict = {name: [] for name in run}
    for _ in range(reps):
        for name, fn in run.items():
            fn()
            times[name].append(timed(fn))
            if name != "pypto":             # OpenBLAS and torch's pool spin after a call
                time.sleep(0.25 if name.startswith("torch") else 0.15 if blas else 0.02)
    return times


def rel_error(case: dict) -> float:
    case["pypto"]()
    got = np.asarray(case["result"](), np.float64)
    want = np.asarray(case["numpy"](), np.float64)
    return float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))


def run_case(case: dict, torch, thr: "Threads", args, notes: list) -> list:
    """One row per thread count."""
    import limits
    err = None
    rows, first = [], None
    flops, nbytes = case.get("flops", 0), case.get("bytes", 0)
    for threads in args.threads:
        thr.set(threads, case.get("kernels", []))
        case["pypto"]()                     # compile, plan, first touch
        if err is None:
            err = rel_error(case)
        run = sides(case, torch, threads, not (args.quick or args.no_compile), notes)
        raw = measure(run, args.reps, bool(flops))
        t = {k: statistics.median(v) for k, v in raw.items()}
        a, best = t["pypto"], min(raw["pypto"])
        if flops:
            rate, lim = f"{flops / a / 1e9:.1f} GFLOP/s", flops / a / limits.fma_peak(
                threads, args.quick)
        else:
            rate, lim = f"{nbytes / a / 1e9:.1f} GB/s", nbytes / a / limits.stream_triad(
                threads, args.quick)
        others = [v for k, v in t.items() if k != "pypto"]
        first = first or a
        ms = [f"{t[k] * 1e3:.2f}" if k in t else "-" for k in ("torch", "torch.compile")]
        bad = err > case.get("tol", 1e-3)
        rows.append([case["op"], case["shape"], threads, f"{a * 1e3:.2f}", f"{best * 1e3:.2f}",
                     f"{t['numpy'] * 1e3:.2f}", *ms, rate, f"{lim * 100:.0f} %",
                     f"{min(others) / a:.2f}x", f"{first / a:.2f}x",
                     f"{err:.1e}" + (" MISMATCH" if bad else "")])
    return rows


HEADERS = ["op", "shape", "threads", "pypto ms", "pypto best", "numpy ms", "torch ms",
           "torch.compile ms", "pypto rate", "% of limit", "best other / pypto",
           "speedup vs first", "max rel err"]


def limits_table(threads: list, quick: bool) -> str:
    import limits
    rows = [[t, f"{limits.stream_triad(t, quick) / 1e9:.1f}",
             f"{limits.fma_peak(t, quick) / 1e9:.0f}"] for t in threads]
    return tabulate(rows, headers=["threads", "STREAM triad GB/s", "fp32 FMA GFLOP/s"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=None, help="timed runs per side (15; 3 quick)")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, few runs, no torch.compile (a smoke test)")
    ap.add_argument("--only", default=None, help="only the ops whose name contains this")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--no-calls", action="store_true", help="skip bench/calls.py's tables")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args(argv)
    args.reps = args.reps or (3 if args.quick else 15)
    args.threads = [int(t) for t in args.threads.split(",")]
    notes: list = []
    torch = import_torch(notes)
    if torch is not None and (args.quick or args.no_compile):
        notes.append(f"skipped torch.compile: {'--quick' if args.quick else '--no-compile'}")
    thr = Threads(torch)
    if thr.blas is None:
        notes.append("numpy's BLAS thread count could not be set: numpy ran with its default")
    print("machine limits (bench/limits.py):")
    print(limits_table(args.threads, args.quick))
    print()
    rows = []
    for case in all_cases(args.quick, notes):
        if args.only is None or args.only in case["op"]:
            rows += run_case(case, torch, thr, args, notes)
    print(tabulate(rows, headers=HEADERS))
    for note in notes:
        print(f"note: {note}")
    if not args.no_calls:
        import calls
        print()
        calls.main(["--quick"] if args.quick else [])
    return 0


if __name__ == "__main__":
    sys.exit(main())
