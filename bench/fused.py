"""Fused memory-bound ops side by side in one process: pypto with 1 and 2 threads, numpy,
torch eager and torch.compile (when torch is importable; the run says so when it is not),
against the machine's STREAM triad measured in the same process (bench/limits.py).

    python bench/fused.py [--reps N] [--quick] [--ops softmax,rmsnorm,...] [--no-dynamic]
                          [--no-tiles] [--no-examples] [--clock wall|cpu] [--rows R]

Ops, fp32, written as a user writes them (pypto's library functions where it has them):
softmax, rmsnorm, layernorm, gelu (tanh and erf forms), silu(g) * u, add + rmsnorm (returns
the normalised rows and the residual sum) and rope (half-rotate form on (T, heads, 128)),
each at 4096 x 4096 and 16384 x 1024 (rope: the same bytes as T x heads x 128). Then the
examples' fused chains (examples/*.py, their own kernels, tiles and dtypes) at sizes of
64 MiB per tensor.

Bytes are the minimum traffic: every input read once and every output written once
(rope's cos/sin tables included). GB/s = bytes / median time; "of STREAM" divides by the
triad bandwidth with the same number of threads (ordinary stores; counted as 3 arrays, as
STREAM does; best of 10, measured at the start and again at the end). "2T/1T" is pypto's
1-thread time over its 2-thread time. torch runs with torch.set_num_threads(2) (torch.compile
compiled for it); "tc / pypto" is torch.compile's time over pypto's 2-thread time. pypto
writes into preallocated outputs (first-touch faults paid once, in the warm-up call); numpy
and torch eager allocate their results as users' code does. Each timed call follows an
untimed call of the same implementation; medians of --reps runs, the implementations
interleaved. `--clock cpu` times every side on the process's CPU clock divided by its
thread count, and STREAM on its threads' CPU clocks (on a machine other processes load:
what the cores did while they ran this); torch then runs with one thread and "tc / pypto"
compares it with pypto's one thread.

Three more tables: the inner (hidden) dim named ("H") instead of static, as a ratio to
static; tile rows 1 to 64 (a whole row in the tile; "UB" where the tile does not fit the
target's buffer), as a ratio to the best, with 1 and 2 threads.
"""
# no `from __future__ import annotations`: the kernels' annotations use local names
import argparse
import importlib.util
import math
import os
import statistics
import sys
import time

import numpy as np
from tabulate import tabulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import libpypto as pypto                                       # noqa: E402
from libpypto.errors import PyptoError                         # noqa: E402
from libpypto.jit import call_kernel                           # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
import limits                                                  # noqa: E402

EPS = 1e-6
F32 = pypto.DT_FP32
SHAPES = [(4096, 4096), (16384, 1024)]
HEAD = 128
TOK = "T"          # the token (row) dim: named, one compile for any count


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
    close(op, got, want, 1e-4)


def close(name, got, want, tol):
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if not np.allclose(g, w, rtol=tol, atol=tol):
            raise SystemExit(f"fused.py: {name}: pypto differs from numpy "
                             f"(max abs error {float(np.abs(g - w).max()):.3g})")


# -- torch (optional) ----------------------------------------------------------------------------

def torch_impls(threads: int):
    """({op: fn(*torch tensors)}, torch.compile of them, torch, "") or (None, None, None, why)."""
    try:
        import torch
    except ImportError:
        return None, None, None, "torch is not importable (pip install -e .[bench] for these columns)"
    torch.set_num_threads(threads)
    F = torch.nn.functional

    def rms(x, g):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * g

    def rope(x, c, s):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    def ex_rms_res(x, r, g):
        s = x.float() + r.float()
        return rms(s, g.float()).bfloat16(), s.bfloat16()

    def ex_rope(x, c, s):
        return rope(x.float(), c, s).bfloat16()
    eager = {
        "softmax": lambda x: torch.softmax(x, -1),
        "rmsnorm": rms,
        "layernorm": lambda x, g, b: F.layer_norm(x, x.shape[-1:], g, b, EPS),
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_erf": lambda x: F.gelu(x),
        "silu_mul": lambda g, u: F.silu(g) * u,
        "add_rmsnorm": lambda x, r, g: (rms(x + r, g), x + r),
        "rope": rope,
        "ex:softmax": lambda x: torch.softmax(x, -1),
        "ex:softmax_batch": lambda x: torch.softmax(x, -1),
        "ex:rmsnorm": rms,
        "ex:rmsnorm_residual": ex_rms_res,
        "ex:layernorm": lambda x, g, b: F.layer_norm(x.float(), x.shape[-1:], g, b,
                                                     EPS).bfloat16(),
        "ex:rope": ex_rope,
    }
    compiled = {k: torch.compile(f) for k, f in eager.items()}
    return eager, compiled, torch, ""


def to_torch(torch, a):
    """A numpy array as a torch tensor sharing its memory (bf16 through its bits)."""
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(a)


# -- the examples' fused chains ------------------------------------------------------------------

def _example(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}",
                                                  os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def example_cases(quick: bool, rng):
    """(name, shape, kernel, pypto args, numpy args, numpy fn, output names) per example:
    its kernel as written, at 64 MiB per activation tensor (1/8 of it when quick)."""
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    q = 8 if quick else 1

    def rnd(*s, dt=np.float32):
        return rng.standard_normal(s, dtype=np.float32).astype(dt)
    out = []
    for name, shape, make in (
            ("softmax", (16384 // q, 1024), lambda s: (rnd(*s),)),
            ("softmax_batch", (2048 // q, 32, 1, 256), lambda s: (rnd(*s),)),
            ("rmsnorm", (4096 // q, 4096), lambda s: (rnd(*s), rnd(s[1]))),
            ("rmsnorm_residual", (131072 // q, 256),
             lambda s: (rnd(*s, dt=bf), rnd(*s, dt=bf), rnd(s[1], dt=bf))),
            ("layernorm", (262144 // q, 128), lambda s: (rnd(*s, dt=bf), rnd(s[1]), rnd(s[1]))),
            ("rope", (65536 // q, 8, 64),
             lambda s: (rnd(*s, dt=bf), rnd(s[0], 1, 32), rnd(s[0], 1, 32)))):
        mod = _example(name)
        k = getattr(mod, name)
        ins = make(shape)
        want = mod.reference(*ins)
        outs = [np.zeros_like(w) for w in want.values()]
        out.append((name, "x".join(map(str, shape)) + f" {ins[0].dtype.name}", k,
                    ins + tuple(outs), ins, mod.reference, len(outs)))
    return out


# -- timing --------------------------------------------------------------------------------------

def interleaved(fns: dict, reps: int, cpu: dict | None = None) -> dict:
    """Median seconds of each fn, the fns taking turns rep by rep. cpu: {key: threads} of
    the fns timed on the process's CPU clock divided by their thread count."""
    ts = {k: [] for k in fns}
    cpu = cpu or {}
    for _ in range(reps):
        for k, fn in fns.items():
            fn()
            clock = time.process_time if k in cpu else time.perf_counter
            t0 = clock()
            fn()
            ts[k].append((clock() - t0) / cpu.get(k, 1))
            if k in SPINNERS:
                time.sleep(SPIN_S)
    return {k: statistics.median(v) for k, v in ts.items()}


# torch's OpenMP workers spin for up to 200 ms after a parallel region (KMP_BLOCKTIME's
# default) and take the cores from whatever runs next: measured here, examples/softmax.py
# at 16384 x 1024 ran 10.9 ms alone and 15.4 ms right after a torch.softmax call (10.8
# after a 200 ms pause; 8.1 vs 7.9 with OMP_WAIT_POLICY=PASSIVE). So a torch side is
# followed by a pause longer than that, and torch keeps its default waiting.
SPINNERS = ("te", "tc")
SPIN_S = 0.25


def pypto_fn(k, args, threads):
    return lambda: call_kernel(k, args, {}, threads=threads)


def shape_of(op, T, H) -> str:
    return f"{T}x{H // HEAD}x{HEAD}" if op == "rope" else f"{T}x{H}"


def head_main(torch_threads):
    return ["op", "shape", "pypto 1T ms", "pypto 2T ms", "2T/1T", "of STREAM 1T",
            "of STREAM 2T", "numpy ms", f"torch eager {torch_threads}T ms",
            f"torch.compile {torch_threads}T ms", f"tc / pypto {torch_threads}T"]


def row(name, shape, t, nbytes, stream, torch_threads):
    """One line of the main table from interleaved medians t."""
    def ms(key, missing):
        return f"{t[key] * 1e3:.2f}" if key in t else missing
    gb1, gb2 = nbytes / t["p1"], nbytes / t["p2"]
    return [name, shape, ms("p1", ""), ms("p2", ""), f"{t['p1'] / t['p2']:.2f}",
            f"{gb1 / stream[1]:.0%}", f"{gb2 / stream[2]:.0%}", ms("np", "n/a"),
            ms("te", "skipped"), ms("tc", "skipped"),
            f"{t['tc'] / t[f'p{torch_threads}']:.1f}x" if "tc" in t else ""]


def side_by_side(name, k, args, nargs, np_fn, torch_key, tt, reps, cpu_clock):
    """Interleaved medians of pypto 1T / 2T, numpy and torch eager / compiled on one case
    (on the CPU clock: each side's process CPU time over its thread count)."""
    fns = {"p1": pypto_fn(k, args, 1), "p2": pypto_fn(k, args, 2)}
    if np_fn is not None:
        fns["np"] = lambda f=np_fn, a=nargs: f(*a)
    eager, comp, torch, tthreads = tt
    if eager is not None and torch_key in eager:
        targs = [to_torch(torch, a) for a in nargs]
        fns["te"] = lambda f=eager[torch_key], a=targs: f(*a)
        if torch_key in comp:
            fns["tc"] = lambda f=comp[torch_key], a=targs: f(*a)
    return interleaved(fns, reps, {"p1": 1, "p2": 2, "np": 1, "te": tthreads, "tc": tthreads}
                       if cpu_clock else None)


def main_table(ops, shapes, reps, stream, tt, rows, cpu_clock):
    out = []
    rng = np.random.default_rng(0)
    for op in ops:
        make, np_fn, _ = OPS[op]
        for T, H in shapes:
            args, nargs, nout = inputs(op, T, H, rng)
            k = make(H, rows, False)
            call_kernel(k, args, {}, threads=2)
            check(op, args, nargs, nout)
            t = side_by_side(op, k, args, nargs, np_fn, op, tt, reps, cpu_clock)
            out.append(row(op, shape_of(op, T, H), t, sum(a.nbytes for a in args), stream,
                           tt[3]))
    return tabulate(out, headers=head_main(tt[3]))


def examples_table(quick, reps, stream, tt, cpu_clock):
    out = []
    rng = np.random.default_rng(3)
    for name, shape, k, args, nargs, ref, nout in example_cases(quick, rng):
        call_kernel(k, args, {}, threads=2)
        want = ref(*nargs)
        close(name, args[-nout:], list(want.values()), 1e-2 if "bfloat16" in shape else 1e-4)
        t = side_by_side(name, k, args, nargs, ref, f"ex:{name}", tt, reps, cpu_clock)
        out.append(row(f"examples/{name}.py", shape, t, sum(a.nbytes for a in args), stream,
                       tt[3]))
    return tabulate(out, headers=head_main(tt[3]))


def dynamic_table(ops, shapes, reps, rows, cpu_clock):
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
                             "s2": pypto_fn(ks, args, 2), "d2": pypto_fn(kd, args, 2)}, reps,
                            {"s1": 1, "d1": 1, "s2": 2, "d2": 2} if cpu_clock else None)
            out.append([op, shape_of(op, T, H), f"{t['s1'] * 1e3:.2f}", f"{t['d1'] * 1e3:.2f}",
                        f"{t['d1'] / t['s1']:.2f}", f"{t['s2'] * 1e3:.2f}", f"{t['d2'] * 1e3:.2f}",
                        f"{t['d2'] / t['s2']:.2f}"])
    return tabulate(out, headers=["op", "shape", "static 1T ms", "named H 1T ms", "ratio",
                                  "static 2T ms", "named H 2T ms", "ratio"])


TILE_ROWS = (1, 2, 4, 8, 16, 32, 64)


def tiles_table(ops, shapes, reps, threads, cpu_clock):
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
                    call_kernel(k, args, {}, threads=threads)
                except PyptoError:
                    continue           # the tile does not fit the target's buffer
                check(op, args, nargs, nout)
                fns[r] = pypto_fn(k, args, threads)
            t = interleaved(fns, reps, {r: threads for r in fns} if cpu_clock else None)
            best = min(t.values())
            cells = [f"{t[r] * 1e3:.2f} ({t[r] / best:.2f})" if r in t else "UB" for r in TILE_ROWS]
            out.append([op, shape_of(op, T, H), *cells, f"{max(t.values()) / best:.2f}"])
    return tabulate(out, headers=["op", "shape", *[f"rows {r} ms (/best)" for r in TILE_ROWS],
                                  "worst/best"])


def load_line() -> str:
    try:
        return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def limits_line(quick, clock) -> tuple[dict, str]:
    stream = {n: limits.triad_now(n, quick, clock) for n in (1, 2)}
    fma = {n: limits.fma_peak(n, quick, clock) for n in (1, 2)}
    return stream, (f"STREAM triad (bench/limits.c, ordinary stores, {clock} clock): "
                    f"{stream[1] / 1e9:.1f} GB/s with 1 thread, {stream[2] / 1e9:.1f} GB/s "
                    f"with 2; fp32 FMA {fma[1] / 1e9:.0f} / {fma[2] / 1e9:.0f} GFLOP/s; "
                    f"{load_line()}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="1/8 of the rows, 3 reps (a smoke test)")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated subset of the ops")
    ap.add_argument("--rows", type=int, default=8, help="tile rows of the main tables")
    ap.add_argument("--no-dynamic", action="store_true", help="skip the named-H table")
    ap.add_argument("--no-tiles", action="store_true", help="skip the tile rows table")
    ap.add_argument("--no-examples", action="store_true", help="skip the examples' chains")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="pypto on the wall clock or on the process's CPU clock per thread")
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
    stream, line = limits_line(args.quick, args.clock)
    print(line)
    tthreads = 1 if args.clock == "cpu" else 2
    eager, comp, torch, why = torch_impls(tthreads)
    if eager is None:
        print(f"torch eager and torch.compile skipped: {why}")
    elif args.quick or args.no_compile:
        comp = {}
        print("torch.compile skipped (--quick or --no-compile)")
    tt = (eager, comp, torch, tthreads)
    cpu = args.clock == "cpu"
    print(f"medians of {reps} runs on the {args.clock} clock; pypto writes into preallocated "
          f"outputs\n")
    print(main_table(ops, shapes, reps, stream, tt, args.rows, cpu))
    if not args.no_examples:
        print("\nThe examples' fused chains (examples/*.py as written):\n")
        print(examples_table(args.quick, reps, stream, tt, cpu))
    if not args.no_dynamic:
        print(f"\nThe inner dim named (\"H\") instead of static, {args.rows}-row tiles:\n")
        print(dynamic_table(ops, shapes, reps, args.rows, cpu))
    if not args.no_tiles:
        for n in (1, 2):
            print(f"\nTile rows (a whole row in the tile), {n} thread{'s' if n > 1 else ''}:\n")
            print(tiles_table(ops, shapes, reps, n, cpu))
    stream2, line2 = limits_line(args.quick, args.clock)
    print(f"\nAt the end: {line2}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
