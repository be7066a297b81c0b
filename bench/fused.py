"""Fused memory-bound ops side by side in one process: pypto with 1 and 2 threads, numpy,
torch eager and torch.compile (when torch is importable; the run says so when it is not),
against STREAM triad measured in the same process by a tiny compiled C triad.

    python bench/fused.py [--reps N] [--quick] [--ops softmax,rmsnorm,...] [--no-dynamic]
                          [--no-tiles]

Ops, fp32, written as a user writes them (pypto's library functions where it has them):
softmax, rmsnorm, layernorm, gelu (tanh and erf forms), silu(g) * u, add + rmsnorm (returns
the normalised rows and the residual sum) and rope (half-rotate form on (T, heads, 128)),
each at 4096 x 4096 and 16384 x 1024 (rope: the same bytes as T x heads x 128).

Bytes are the minimum traffic: every input read once and every output written once
(rope's cos/sin tables included). GB/s = bytes / median time; "of STREAM" divides by the
triad bandwidth with the same number of threads (ordinary stores; counted as 3 arrays, as
STREAM does). pypto writes into preallocated outputs (first-touch faults paid once, in the
warm-up call); numpy and torch eager allocate their results as users' code does. Each timed
call follows an untimed call of the same implementation; medians of --reps runs, the
implementations interleaved. The threads: pypto's run option (jit.call_kernel(...,
threads=n)); numpy's elementwise code is single-threaded; torch uses torch.set_num_threads(2).

Three tables: the ops side by side (static sizes, 8-row tiles); the inner (hidden) dim named
("H") instead of static, as a ratio to static; and tile rows 1, 4, 16, 64 (a whole row in the
tile; "UB" where the tile does not fit the target's buffer), as a ratio to the best.
"""
# no `from __future__ import annotations`: the kernels' annotations use local names
import argparse
import ctypes
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from tabulate import tabulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import libpypto as pypto                                       # noqa: E402
from libpypto.errors import PyptoError                         # noqa: E402
from libpypto.jit import call_kernel                           # noqa: E402
from libpypto.runtime.compiler import find_cc                  # noqa: E402

EPS = 1e-6
F32 = pypto.DT_FP32
SHAPES = [(4096, 4096), (16384, 1024)]
HEAD = 128
TOK = "T"          # the token (row) dim: named, one compile for any count

# -- STREAM triad ------------------------------------------------------------------------------

TRIAD_C = r"""
#include <pthread.h>
#include <stdint.h>
typedef struct { float *a; const float *b, *c; int64_t lo, hi; float s; } job_t;
static void *run(void *p) {
    job_t *j = (job_t *)p;
    for (int64_t i = j->lo; i < j->hi; i++) j->a[i] = j->b[i] + j->s * j->c[i];
    return 0;
}
void triad(float *a, const float *b, const float *c, int64_t n, float s, int nt) {
    pthread_t th[64];
    job_t jobs[64];
    for (int t = 0; t < nt; t++) {
        jobs[t] = (job_t){a, b, c, n * t / nt, n * (t + 1) / nt, s};
        if (t) pthread_create(&th[t], 0, run, &jobs[t]);
    }
    run(&jobs[0]);
    for (int t = 1; t < nt; t++) pthread_join(th[t], 0);
}
"""


def load_triad():
    cc = find_cc()
    if cc is None:
        raise SystemExit("fused.py: no C compiler for the STREAM triad")
    tmp = tempfile.mkdtemp(prefix="pypto-triad-")
    src, lib = os.path.join(tmp, "triad.c"), os.path.join(tmp, "triad.so")
    with open(src, "w", encoding="utf-8") as f:
        f.write(TRIAD_C)
    subprocess.run([cc, "-O3", "-march=native", "-fPIC", "-shared", src, "-o", lib, "-pthread"],
                   check=True)
    fn = ctypes.CDLL(lib).triad
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_float, ctypes.c_int]
    return fn


def stream_triad(fn, threads: int, reps: int, n: int = 1 << 24) -> float:
    """Triad bandwidth in GB/s (3 arrays of n floats, median of reps)."""
    a, b, c = (np.full(n, v, np.float32) for v in (0.0, 1.0, 2.0))
    ptr = [x.ctypes.data for x in (a, b, c)]
    ts = []
    for _ in range(reps):
        fn(*ptr, n, 3.0, threads)
        t0 = time.perf_counter()
        fn(*ptr, n, 3.0, threads)
        ts.append(time.perf_counter() - t0)
    return 3 * n * 4 / statistics.median(ts) / 1e9


# -- the ops, as a user writes them --------------------------------------------------------------

def k_softmax(H, R, dyn):
    h = "H" if dyn else H

    @pypto.jit
    def softmax(x: pypto.Tensor[[TOK, h], F32], y: pypto.Tensor[[TOK, h], F32]):
        pypto.set_vec_tile_shapes(R, H)
        m = pypto.amax(x, dim=-1, keepdim=True)
        e = pypto.exp(x - m)
        y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
    return softmax


def k_rmsnorm(H, R, dyn):
    h = "H" if dyn else H

    @pypto.jit
    def rmsnorm(x: pypto.Tensor[[TOK, h], F32], g: pypto.Tensor[[h], F32],
                y: pypto.Tensor[[TOK, h], F32]):
        pypto.set_vec_tile_shapes(R, H)
        y[:] = pypto.rms_norm(x, g, EPS)
    return rmsnorm


def k_layernorm(H, R, dyn):
    h = "H" if dyn else H

    @pypto.jit
    def layernorm(x: pypto.Tensor[[TOK, h], F32], g: pypto.Tensor[[h], F32],
                  b: pypto.Tensor[[h], F32], y: pypto.Tensor[[TOK, h], F32]):
        pypto.set_vec_tile_shapes(R, H)
        y[:] = pypto.layer_norm(x, g, b, EPS)
    return layernorm


def k_gelu(approx):
    def make(H, R, dyn):
        h = "H" if dyn else H

        @pypto.jit
        def gelu(x: pypto.Tensor[[TOK, h], F32], y: pypto.Tensor[[TOK, h], F32]):
            pypto.set_vec_tile_shapes(R, H)
            y[:] = pypto.gelu(x, approximate=approx)
        return gelu
    return make


def k_silu_mul(H, R, dyn):
    h = "H" if dyn else H

    @pypto.jit
    def silu_mul(g: pypto.Tensor[[TOK, h], F32], u: pypto.Tensor[[TOK, h], F32],
                 y: pypto.Tensor[[TOK, h], F32]):
        pypto.set_vec_tile_shapes(R, H)
        y[:] = pypto.silu(g) * u
    return silu_mul


def k_add_rmsnorm(H, R, dyn):
    h = "H" if dyn else H

    @pypto.jit
    def add_rmsnorm(x: pypto.Tensor[[TOK, h], F32], res: pypto.Tensor[[TOK, h], F32],
                    g: pypto.Tensor[[h], F32], y: pypto.Tensor[[TOK, h], F32],
                    res_out: pypto.Tensor[[TOK, h], F32]):
        pypto.set_vec_tile_shapes(R, H)
        r = x + res
        res_out[:] = r
        y[:] = pypto.rms_norm(r, g, EPS)
    return add_rmsnorm


def k_rope(H, R, dyn):
    nh, half = H // HEAD, HEAD // 2

    @pypto.jit
    def rope(x: pypto.Tensor[[TOK, nh, HEAD], F32], cos: pypto.Tensor[[TOK, 1, half], F32],
             sin: pypto.Tensor[[TOK, 1, half], F32], out: pypto.Tensor[[TOK, nh, HEAD], F32]):
        pypto.set_vec_tile_shapes(R, nh, half)
        x1, x2 = x[:, :, 0:half], x[:, :, half:HEAD]
        out[:, :, 0:half] = x1 * cos - x2 * sin
        out[:, :, half:HEAD] = x2 * cos + x1 * sin
    return rope


def _rms(x, g):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * g


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * g + b


def np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (x + 0.044715 * x ** 3)))


def np_gelu_erf_f64(x):        # reference only: numpy has no erf (too slow to time)
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def np_rope(x, c, s):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def inputs(op, T, H, rng):
    """(pypto args: inputs then outputs, numpy args, output count)."""
    def rnd(*s):
        return rng.standard_normal(s, dtype=np.float32)
    if op == "rope":
        x, c, s = rnd(T, H // HEAD, HEAD), rnd(T, 1, HEAD // 2), rnd(T, 1, HEAD // 2)
        return (x, c, s, np.zeros_like(x)), (x, c, s), 1
    if op == "silu_mul":
        g, u = rnd(T, H), rnd(T, H)
        return (g, u, np.zeros_like(g)), (g, u), 1
    if op == "add_rmsnorm":
        x, r, g = rnd(T, H), rnd(T, H), rnd(H)
        return (x, r, g, np.zeros_like(x), np.zeros_like(x)), (x, r, g), 2
    x = rnd(T, H)
    if op in ("rmsnorm",):
        g = rnd(H)
        return (x, g, np.zeros_like(x)), (x, g), 1
    if op == "layernorm":
        g, b = rnd(H), rnd(H)
        return (x, g, b, np.zeros_like(x)), (x, g, b), 1
    return (x, np.zeros_like(x)), (x,), 1


OPS = {   # name: (pypto kernel factory, numpy as users write it or None, has a dynamic variant)
    "softmax": (k_softmax, np_softmax, True),
    "rmsnorm": (k_rmsnorm, _rms, True),
    "layernorm": (k_layernorm, np_layernorm, True),
    "gelu_tanh": (k_gelu("tanh"), np_gelu_tanh, True),
    "gelu_erf": (k_gelu("none"), None, True),
    "silu_mul": (k_silu_mul, lambda g, u: g / (1 + np.exp(-g)) * u, True),
    "add_rmsnorm": (k_add_rmsnorm, lambda x, r, g: (_rms(x + r, g), x + r), True),
    "rope": (k_rope, np_rope, False),
}


def check(op, args, nargs, nout):
    """pypto's outputs against numpy (float64 for gelu erf, on 64 rows) within fp32 tolerance."""
    got = args[-nout:]
    if op == "gelu_erf":
        want = [np_gelu_erf_f64(nargs[0][:64])]
        got = [got[0][:64]]
    else:
        w = OPS[op][1](*nargs)
        want = list(w) if isinstance(w, tuple) else [w]
    for g, w in zip(got, want):
        if not np.allclose(g, w, rtol=1e-4, atol=1e-4):
            raise SystemExit(f"fused.py: {op}: pypto differs from numpy "
                             f"(max abs error {float(np.abs(g - w).max()):.3g})")


# -- torch (optional) ----------------------------------------------------------------------------

def torch_impls():
    """{op: fn(*torch tensors)}, torch.compile of them, or (None, None, why)."""
    try:
        import torch
    except ImportError:
        return None, None, "torch is not importable (pip install torch for these columns)"
    torch.set_num_threads(2)
    F = torch.nn.functional

    def rms(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * g

    def rope(x, c, s):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    eager = {
        "softmax": lambda x: torch.softmax(x, -1),
        "rmsnorm": rms,
        "layernorm": lambda x, g, b: F.layer_norm(x, x.shape[-1:], g, b, EPS),
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_erf": lambda x: F.gelu(x),
        "silu_mul": lambda g, u: F.silu(g) * u,
        "add_rmsnorm": lambda x, r, g: (rms(x + r, g), x + r),
        "rope": rope,
    }
    compiled = {k: torch.compile(f) for k, f in eager.items()}
    return eager, compiled, ""


# -- timing --------------------------------------------------------------------------------------

def median_time(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        fn()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def interleaved(fns: dict, reps: int) -> dict:
    """Median seconds of each fn, the fns taking turns rep by rep."""
    ts = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            fn()
            t0 = time.perf_counter()
            fn()
            ts[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in ts.items()}


def pypto_fn(k, args, threads):
    return lambda: call_kernel(k, args, {}, threads=threads)


def nbytes(args, nout) -> int:
    return sum(a.nbytes for a in args)


def shape_of(op, T, H) -> str:
    return f"{T}x{H // HEAD}x{HEAD}" if op == "rope" else f"{T}x{H}"


def main_table(ops, shapes, reps, stream, torch_eager, torch_comp, rows):
    out = []
    rng = np.random.default_rng(0)
    for op in ops:
        make, np_fn, _ = OPS[op]
        for T, H in shapes:
            args, nargs, nout = inputs(op, T, H, rng)
            k = make(H, rows, False)
            call_kernel(k, args, {}, threads=2)
            check(op, args, nargs, nout)
            fns = {"p1": pypto_fn(k, args, 1), "p2": pypto_fn(k, args, 2)}
            if np_fn is not None:
                fns["np"] = lambda f=np_fn, a=nargs: f(*a)
            if torch_eager is not None:
                import torch
                targs = [torch.from_numpy(a) for a in nargs]
                fns["te"] = lambda f=torch_eager[op], a=targs: f(*a)
                fns["tc"] = lambda f=torch_comp[op], a=targs: f(*a)
            t = interleaved(fns, reps)
            b = nbytes(args, nout)
            gb1, gb2 = b / t["p1"] / 1e9, b / t["p2"] / 1e9
            ms = {k2: (f"{v * 1e3:.2f}" if v else "-") for k2, v in t.items()}
            out.append([op, shape_of(op, T, H), ms["p1"], f"{gb1:.1f}", f"{gb1 / stream[1]:.0%}",
                        ms["p2"], f"{gb2:.1f}", f"{gb2 / stream[2]:.0%}", ms.get("np", "n/a"),
                        ms.get("te", "skipped"), ms.get("tc", "skipped")])
    return tabulate(out, headers=["op", "shape", "pypto 1T ms", "GB/s", "of STREAM 1T",
                                  "pypto 2T ms", "GB/s", "of STREAM 2T", "numpy ms",
                                  "torch eager ms", "torch.compile ms"])


def dynamic_table(ops, shapes, reps, rows):
    out = []
    rng = np.random.default_rng(1)
    for op in ops:
        make, _, has_dyn = OPS[op]
        if not has_dyn:
            continue
        for T, H in shapes:
            args, nargs, nout = inputs(op, T, H, rng)
            ks, kd = make(H, rows, False), make(H, rows, True)
            call_kernel(kd, args, {}, threads=2)
            check(op, args, nargs, nout)
            t = interleaved({"s1": pypto_fn(ks, args, 1), "d1": pypto_fn(kd, args, 1),
                             "s2": pypto_fn(ks, args, 2), "d2": pypto_fn(kd, args, 2)}, reps)
            out.append([op, shape_of(op, T, H), f"{t['s1'] * 1e3:.2f}", f"{t['d1'] * 1e3:.2f}",
                        f"{t['d1'] / t['s1']:.2f}", f"{t['s2'] * 1e3:.2f}", f"{t['d2'] * 1e3:.2f}",
                        f"{t['d2'] / t['s2']:.2f}"])
    return tabulate(out, headers=["op", "shape", "static 1T ms", "named H 1T ms", "ratio",
                                  "static 2T ms", "named H 2T ms", "ratio"])


TILE_ROWS = (1, 4, 16, 64)


def tiles_table(ops, shapes, reps):
    out = []
    rng = np.random.default_rng(2)
    for op in ops:
        make = OPS[op][0]
        for T, H in shapes:
            args, nargs, nout = inputs(op, T, H, rng)
            fns = {}
            for r in TILE_ROWS:
                k = make(H, r, False)
                try:
                    call_kernel(k, args, {}, threads=2)
                except PyptoError:
                    continue           # the tile does not fit the target's buffer
                check(op, args, nargs, nout)
                fns[r] = pypto_fn(k, args, 2)
            t = interleaved(fns, reps)
            best = min(t.values())
            cells = [f"{t[r] * 1e3:.2f} ({t[r] / best:.2f})" if r in t else "UB" for r in TILE_ROWS]
            out.append([op, shape_of(op, T, H), *cells, f"{max(t.values()) / best:.2f}"])
    return tabulate(out, headers=["op", "shape", *[f"rows {r} ms (/best)" for r in TILE_ROWS],
                                  "worst/best"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="1/8 of the rows, 3 reps (a smoke test)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of the ops")
    ap.add_argument("--rows", type=int, default=8, help="tile rows of the main tables")
    ap.add_argument("--no-dynamic", action="store_true", help="skip the named-H table")
    ap.add_argument("--no-tiles", action="store_true", help="skip the tile rows table")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)      # each table as it is done
    ops = [o for o in args.ops.split(",") if o]
    bad = [o for o in ops if o not in OPS]
    if bad:
        print(f"fused.py: unknown op(s) {', '.join(bad)} (known: {', '.join(OPS)})",
              file=sys.stderr)
        return 1
    reps = 3 if args.quick else args.reps
    shapes = [(T // 8, H) for T, H in SHAPES] if args.quick else SHAPES
    triad = load_triad()
    stream = {n: stream_triad(triad, n, max(reps, 5)) for n in (1, 2)}
    print(f"STREAM triad (compiled C, 3 x 64 MiB, ordinary stores): {stream[1]:.1f} GB/s with "
          f"1 thread, {stream[2]:.1f} GB/s with 2")
    eager, comp, why = torch_impls()
    if eager is None:
        print(f"torch eager and torch.compile skipped: {why}")
    print(f"medians of {reps} runs; pypto writes into preallocated outputs; fp32\n")
    print(main_table(ops, shapes, reps, stream, eager, comp, args.rows))
    if not args.no_dynamic:
        print("\nThe inner dim named (\"H\") instead of static, 8-row tiles:\n")
        print(dynamic_table(ops, shapes, reps, args.rows))
    if not args.no_tiles:
        print("\nTile rows (a whole row in the tile), 2 threads:\n")
        print(tiles_table(ops, shapes, reps))
    stream2 = {n: stream_triad(triad, n, max(reps, 5)) for n in (1, 2)}
    print(f"\nSTREAM triad again at the end: {stream2[1]:.1f} GB/s (1T), {stream2[2]:.1f} GB/s (2T)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
