"""Matmul side by side in one process: pypto (1 and 2 threads) against numpy (OpenBLAS, 1 and
2 threads) and, when importable, torch eager and torch.compile; GFLOP/s and fraction of the
machine's fp32 FMA peak (measured here by a small C loop, one and two threads, each on its
own CPU clock).

    python bench/matmul.py [--reps N] [--quick] [--compile] [--case NAME] [--tiles 256]
                           [--clock wall|cpu]

Cases: fp32 4096 x 1024 x 4096 (M x K x N, the cube tiles of examples/matmul.py: 128 x 128
C tiles, K in L1 steps of 256 and L0 steps of 128), the same with fp16 and with bf16 inputs
(fp32 accumulation and output), and fp32 with a fused epilogue: bias + gelu (tanh form) and
bias + silu. `--quick` shrinks every shape to 1024 x 512 x 1024; `--tiles T` makes every cube
tile T (the host runs one task per C tile and packs b once per task and k step: bigger tiles
read b fewer times).

Method: pypto writes into a preallocated output (first-touch page faults paid in the
warm-up); numpy and torch run as users write them (they allocate their result). Every
implementation runs once untimed, then REPS rounds interleave them: each timed call follows
an untimed call of the same implementation (idle cores wake slowly on this VM), and after a
numpy call the bench sleeps 0.15 s (OpenBLAS worker threads spin that long and would steal
the second core). Medians are reported. numpy's OpenBLAS thread count is set through its
own openblas_set_num_threads; torch's through torch.set_num_threads. fp16/bf16 inputs are
compared with numpy on fp32 (numpy has no fast half matmul); torch runs them in their dtype.
torch.compile (Inductor, first graph 15-20 s) only with --compile.

On a machine other processes load, wall times measure them too: `--clock cpu` divides the
process's CPU seconds by the threads asked for instead (what the call would take on idle
cores; spinning threads count as busy), and the table says which clock it used.

Checks (once per case): pypto's output against a float64 numpy reference of the same
(widened) inputs, max |error| / max |reference| under 1e-5 (2e-3 after an epilogue whose
tanh/exp are fp32), and the 1-thread and 2-thread outputs bit-identical.

Row format, for bench/bench.py: `cases(quick)` yields `Case` named tuples
    Case(name, shape, flops, pypto, others, check)
      name    str, e.g. "matmul f32"
      shape   str, e.g. "4096x1024x4096" (M x K x N)
      flops   int, floating-point operations of one call (2 M N K; the epilogue not counted)
      pypto   callable(threads) -> np.ndarray: one call into the preallocated output, which
              it returns (the same array every call)
      others  dict label -> callable(threads) -> array, labels among "numpy", "torch",
              "torch.compile" (absent when not importable or not asked for)
      check   callable(out) -> (max relative error, tolerance) against float64 numpy
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np
from tabulate import tabulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import libpypto as pypto                                   # noqa: E402
from libpypto.jit import call_kernel                        # noqa: E402

TILES = ([128, 128], [128, 256], [128, 128])     # examples/matmul.py's cube tiles
DTS = {"f32": (pypto.DT_FP32, np.float32), "f16": (pypto.DT_FP16, np.float16),
       "bf16": (pypto.DT_BF16, ml_dtypes.bfloat16)}


class Case(NamedTuple):
    name: str
    shape: str
    flops: int
    pypto: Callable
    others: dict
    check: Callable
    kernel: object = None          # for bench_cases: the JitKernel, its output array and
    out: object = None             # the plain numpy computation
    numpy: Callable | None = None


def make_kernel(M: int, K: int, N: int, dt: str, epilogue: str | None, tiles=TILES):
    """A Tensor-mode matmul c = a @ b (+ bias, then gelu-tanh or silu) as a user writes it."""
    pdt = DTS[dt][0]

    def body(a, b, bias, c):
        pypto.set_cube_tile_shapes(*tiles)
        pypto.set_vec_tile_shapes(128, 128)
        x = pypto.matmul(a, b, pypto.DT_FP32)
        if epilogue == "gelu":
            x = pypto.gelu(x + bias, approximate="tanh")
        elif epilogue == "silu":
            x = pypto.silu(x + bias)
        c[:] = x
    body.__annotations__ = {"a": pypto.Tensor[[M, K], pdt], "b": pypto.Tensor[[K, N], pdt],
                            "bias": pypto.Tensor[[1, N], pypto.DT_FP32],
                            "c": pypto.Tensor[[M, N], pypto.DT_FP32]}
    body.__name__ = f"mm_{dt}_{epilogue or 'plain'}"
    return pypto.jit(body)


def np_epilogue(x, epilogue):
    if epilogue == "gelu":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    if epilogue == "silu":
        return x * 0.5 * (1 + np.tanh(0.5 * x))        # x * sigmoid(x), no overflow
    return x


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _openblas_threads():
    """numpy's OpenBLAS set_num_threads, or None when it cannot be found."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                  "*openblas*.so*"))
    for path in libs:
        lib = ctypes.CDLL(path)
        for sym in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                    "openblas_set_num_threads"):
            if hasattr(lib, sym):
                return getattr(lib, sym)
    return None


SET_BLAS = _openblas_threads()


def _np_call(fn):
    def run(threads):
        if SET_BLAS is not None:
            SET_BLAS(threads)
        return fn()
    return run


def _torch_calls(torch, a, b, bias, dt, epilogue, compile_too: bool) -> dict:
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]
    ta = torch.from_numpy(a.view(np.uint16) if dt == "bf16" else a)
    tb = torch.from_numpy(b.view(np.uint16) if dt == "bf16" else b)
    if dt == "bf16":
        ta, tb = ta.view(torch.bfloat16), tb.view(torch.bfloat16)
    tbias = torch.from_numpy(bias).to(tdt)
    F = torch.nn.functional

    def eager(x, y, z):
        r = x @ y
        if epilogue == "gelu":
            return F.gelu(r + z, approximate="tanh")
        if epilogue == "silu":
            return F.silu(r + z)
        return r
    out = {}

    def wrap(fn):
        def run(threads):
            torch.set_num_threads(threads)
            with torch.no_grad():
                return fn(ta.to(tdt), tb.to(tdt), tbias)
        return run
    out["torch"] = wrap(eager)
    if compile_too:
        out["torch.compile"] = wrap(torch.compile(eager))
    return out


def cases(quick: bool, compile_too: bool = False, only: str | None = None,
          tile: int | None = None):
    """The benchmark's cases (see the module docstring for the row format); tile: every cube
    tile size (M, K L0 and L1, N) instead of examples/matmul.py's."""
    tiles = ([tile, tile], [tile, tile], [tile, tile]) if tile else TILES
    M, K, N = (1024, 512, 1024) if quick else (4096, 1024, 4096)
    rng = np.random.default_rng(0)
    torch = _torch()
    for dt, epi in (("f32", None), ("f16", None), ("bf16", None), ("f32", "gelu"),
                    ("f32", "silu")):
        name = f"matmul {dt}" + (f" + bias + {epi}" if epi else "") + (
            f" (tiles {tile})" if tile else "")
        if only and only not in name:
            continue
        npdt = DTS[dt][1]
        a = rng.standard_normal((M, K), dtype=np.float32).astype(npdt)
        b = rng.standard_normal((K, N), dtype=np.float32).astype(npdt)
        bias = rng.standard_normal((1, N), dtype=np.float32)
        c = np.zeros((M, N), np.float32)
        k = make_kernel(M, K, N, dt, epi, tiles)
        a32, b32 = a.astype(np.float32), b.astype(np.float32)

        def ours(threads, k=k, a=a, b=b, bias=bias, c=c):
            call_kernel(k, (a, b, bias, c), {}, threads=threads)
            return c
        theirs = {"numpy": _np_call(lambda a32=a32, b32=b32, bias=bias, epi=epi:
                                    np_epilogue(a32 @ b32 + bias, epi) if epi else a32 @ b32)}
        if torch is not None:
            theirs.update(_torch_calls(torch, a, b, bias, dt, epi, compile_too))

        def check(out, a32=a32, b32=b32, bias=bias, epi=epi):
            x = a32.astype(np.float64) @ b32.astype(np.float64)
            ref = np_epilogue(x + bias, epi) if epi else x
            err = float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))
            return err, (2e-3 if epi else 1e-5)
        yield Case(name, f"{M}x{K}x{N}", 2 * M * N * K, ours, theirs, check, k, c,
                   lambda a32=a32, b32=b32, bias=bias, epi=epi:
                   np_epilogue(a32 @ b32 + bias, epi) if epi else a32 @ b32)


def bench_cases(quick: bool):
    """The same cases in bench/bench.py's row format (bench/README.md, "suites"): make bench
    runs them with its other suites; this script's own table adds torch's half-precision
    runs and the CPU clock."""
    for c in cases(quick):
        yield {"op": c.name, "shape": c.shape, "pypto": lambda c=c: c.pypto(None),
               "kernels": [c.kernel], "result": lambda c=c: c.out, "numpy": c.numpy,
               "flops": c.flops, "tol": 2e-3 if "+" in c.name else 1e-4}


PEAK_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef float v __attribute__((vector_size(64)));
static double rate[8];
static void *spin(void *arg) {
    long id = (long)arg, n = 10000000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    v x = {0}, y = {0};
    x += 0.999999f, y += 1e-7f;
    v a0 = x, a1 = a0 + y, a2 = a1 + y, a3 = a2 + y, a4 = a3 + y, a5 = a4 + y;
    v a6 = a5 + y, a7 = a6 + y, a8 = a7 + y, a9 = a8 + y, a10 = a9 + y, a11 = a10 + y;
    for (long r = 0; r < n; r++) {      /* 12 independent FMA chains */
        a0 = a0 * x + y; a1 = a1 * x + y; a2 = a2 * x + y; a3 = a3 * x + y;
        a4 = a4 * x + y; a5 = a5 * x + y; a6 = a6 * x + y; a7 = a7 * x + y;
        a8 = a8 * x + y; a9 = a9 * x + y; a10 = a10 * x + y; a11 = a11 * x + y;
    }
    v s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    /* on the thread's own CPU clock: what its core does while it runs */
    rate[id] = 2.0 * 16 * 12 * n / ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    return (void *)(long)(s[0] > 1e30f);
}
int main(int argc, char **argv) {
    int t = atoi(argv[1]);
    pthread_t th[8];
    double sum = 0;
    for (long i = 0; i < t; i++) pthread_create(&th[i], 0, spin, (void *)i);
    for (int i = 0; i < t; i++) pthread_join(th[i], 0), sum += rate[i];
    printf("%f\n", sum / 1e9);
    return 0;
}
"""


def fma_peak() -> dict:
    """fp32 FMA GFLOP/s of this machine, 1 and 2 threads, compiled with the
    flags pypto's kernels get (-march=native: 512-bit vectors where the CPU has them,
    gcc splits them into two halves on AVX2). {} when no C compiler runs. Each thread times
    itself on its own CPU clock (other processes on a shared machine do not pull the figure
    down; best of 5 short runs); two threads is the sum of their rates."""
    try:
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "peak.c"), os.path.join(d, "peak")
            with open(src, "w") as f:
                f.write(PEAK_C)
            subprocess.run(["gcc", "-O2", "-march=native", "-mprefer-vector-width=512", "-pthread", src, "-o", exe],
                           check=True, capture_output=True)
            return {t: max(float(subprocess.run([exe, str(t)], check=True, capture_output=True,
                                                text=True).stdout) for _ in range(5))
                    for t in (1, 2)}
    except (OSError, subprocess.CalledProcessError):
        return {}


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}


def timed(fn, threads, clock: str = "wall") -> float:
    """Seconds of one call: wall time, or (clock "cpu") the process's CPU seconds over the
    threads asked for, which is the wall time the call would take on otherwise idle cores
    (spinning threads count as busy)."""
    now = CLOCK[clock]
    t0 = now()
    fn(threads)
    return (now() - t0) / (threads if clock == "cpu" else 1)


def measure(case: Case, reps: int, clock: str = "wall") -> tuple[dict, float, bool]:
    """{(label, threads): median seconds}, the relative error, and whether the 1- and
    2-thread outputs are bit-identical."""
    impls = {"pypto": case.pypto, **case.others}
    out1 = case.pypto(1).copy()
    out2 = case.pypto(2).copy()
    err, tol = case.check(out2)
    if err > tol:
        print(f"{case.name}: max relative error {err:.1e} over {tol:.0e}", file=sys.stderr)
    for fn in case.others.values():                # warm-up (torch.compile compiles here)
        fn(2)
    times = {(lab, t): [] for lab in impls for t in (1, 2)}
    for _ in range(reps):
        for (lab, t), ts in times.items():
            impls[lab](t)
            ts.append(timed(impls[lab], t, clock))
            if lab == "numpy":
                time.sleep(0.15)
    if SET_BLAS is not None:
        SET_BLAS(os.cpu_count() or 1)
    return ({key: statistics.median(ts) for key, ts in times.items()}, err,
            bool(np.array_equal(out1, out2)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke test)")
    ap.add_argument("--compile", action="store_true", help="also torch.compile (slow start)")
    ap.add_argument("--case", help="only cases whose name contains this")
    ap.add_argument("--tiles", type=int, help="every cube tile this size (e.g. 256)")
    ap.add_argument("--clock", choices=list(CLOCK), default="wall",
                    help="cpu: CPU seconds per thread (for a machine other work loads)")
    args = ap.parse_args()
    peak = fma_peak()
    print("fp32 FMA peak, GFLOP/s: " + (", ".join(f"{t}T {g:.0f}" for t, g in peak.items())
                                        if peak else "not measured (no C compiler)"))
    if _torch() is None:
        print("torch is not importable: its columns are skipped (pip install torch)")
    labels = ["pypto", "numpy", "torch", "torch.compile"]
    rows = []
    for case in cases(args.quick, args.compile, args.case, args.tiles):
        med, err, same = measure(case, args.reps, args.clock)
        gf = {key: case.flops / s / 1e9 for key, s in med.items()}
        row = [case.name, case.shape]
        for lab in labels:
            row += [f"{gf[(lab, t)]:.0f}" if (lab, t) in gf else "-" for t in (1, 2)]
        for t in (1, 2):
            best = max((g for (lab, tt), g in gf.items() if lab != "pypto" and tt == t),
                       default=None)
            row.append(f"{gf[('pypto', t)] / best:.2f}x" if best else "-")
        row += [f"{100 * gf[('pypto', t)] / peak[t]:.0f}%" if t in peak else "-" for t in (1, 2)]
        row += [f"{err:.1e}", "yes" if same else "NO"]
        rows.append(row)
    heads = ["op", "MxKxN"] + [f"{lab} {t}T" for lab in labels for t in (1, 2)] + [
        "vs best 1T", "vs best 2T", "peak 1T", "peak 2T", "rel err", "1T==2T"]
    print(f"GFLOP/s (medians, {args.clock} clock):")
    print(tabulate(rows, headers=heads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
