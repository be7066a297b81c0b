"""Side-by-side benchmark: pypto kernels (native C, all cores) vs numpy eager, one process.

Each case runs the two implementations interleaved, REPS times each, and reports medians (and
pypto's best run) and the ratio numpy / pypto (above 1: pypto is faster). Outputs are
preallocated for pypto (the kernel writes in place; first-touch page faults are paid once, in
the warm-up call); numpy runs as users write it, allocating its temporaries. Correctness is
checked once per case. Every timed call follows an untimed call of the same side (on this VM
idle cores wake slowly, and OpenBLAS keeps its own threads spinning between calls); after
each numpy pair the benchmark pauses long enough for OpenBLAS's worker threads to stop
spinning (they would steal the second core from the next pypto run).

    python bench/bench.py [--reps N] [--quick]
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name: str):
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
    rng = np.random.default_rng(0)
    rows = 2048 if quick else 16384
    sm = load("softmax")
    x = rng.standard_normal((rows, 1024), dtype=np.float32)
    y = np.zeros_like(x)
    yield ("softmax", f"{rows}x1024 f32", lambda: sm.softmax(x, y), lambda: np_softmax(x),
           lambda: (y, np_softmax(x)), 2 * x.nbytes, 0)
    rn = load("rmsnorm")
    t = 1024 if quick else 4096
    xr = rng.standard_normal((t, 4096), dtype=np.float32)
    g = rng.standard_normal(4096, dtype=np.float32)
    yr = np.zeros_like(xr)
    yield ("rmsnorm", f"{t}x4096 f32", lambda: rn.rmsnorm(xr, g, yr), lambda: np_rmsnorm(xr, g),
           lambda: (yr, np_rmsnorm(xr, g)), 2 * xr.nbytes, 0)
    mm = load("matmul")
    m = 512 if quick else 2048
    a = rng.standard_normal((m, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    c = np.zeros((m, 256), np.float32)
    yield ("matmul", f"{m}x512 @ 512x256 f32", lambda: mm.matmul(a, b, c), lambda: a @ b,
           lambda: (c, a @ b), a.nbytes + b.nbytes + c.nbytes, 2 * m * 512 * 256)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = ap.parse_args()
    rows = []
    for name, shape, ours, theirs, check, nbytes, flops in cases(args.quick):
        ours()                                   # compile, plan, first touch
        got, want = check()
        err = float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))
        t_ours, t_np = [], []
        for _ in range(args.reps):
            # each side: one untimed call to wake the cores, then the timed one
            ours()
            t_ours.append(timed(ours))
            theirs()
            t_np.append(timed(theirs))
            time.sleep(0.15 if flops else 0.02)  # OpenBLAS workers spin ~0.1 s after a call
        a, b = statistics.median(t_ours), statistics.median(t_np)
        perf = f"{flops / a / 1e9:.1f} GFLOP/s" if flops else f"{nbytes / a / 1e9:.1f} GB/s"
        rows.append([name, shape, f"{a * 1e3:.2f}", f"{min(t_ours) * 1e3:.2f}", f"{b * 1e3:.2f}",
                     f"{b / a:.2f}x", perf, f"{err:.1e}"])
    print(tabulate(rows, headers=["op", "shape", "pypto ms", "pypto best", "numpy ms",
                                  "numpy/pypto", "pypto rate", "max rel err"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
