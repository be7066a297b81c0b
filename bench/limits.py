"""The machine's limits, measured where the benchmark runs: STREAM triad bandwidth and the
fp32 FMA rate, with one thread and with two (bench/limits.c, built with pypto's compiler
flags through its compile cache).

STREAM counts 3 arrays of n floats per triad (b and c read, a written, as STREAM does);
the FMA rate is that of 12 independent multiply-add chains per thread, vectorised to the
widest vectors the compiler targets: an estimate of the peak, not a guarantee. A clock of
"cpu" times each run by the largest of its threads' CPU times instead of the wall clock (on
a machine other processes load: what the cores did while they ran this).
"""
from __future__ import annotations

import ctypes
import os
from functools import lru_cache

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


@lru_cache(maxsize=1)
def _lib():
    from libpypto.runtime.compiler import compile_shared
    with open(os.path.join(HERE, "limits.c")) as f:
        path, _ = compile_shared(f.read(), sanitize=False)
    lib = ctypes.CDLL(path)
    lib.bench_triad.restype = ctypes.c_double
    lib.bench_triad.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_int,
                                                        ctypes.c_int, ctypes.c_int]
    lib.bench_fma.restype = ctypes.c_double
    lib.bench_fma.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return lib


@lru_cache(maxsize=None)
def stream_triad(threads: int, quick: bool = False) -> float:
    """STREAM triad bandwidth in bytes/s (64 MiB arrays; 4 MiB when quick), measured once
    per process."""
    return triad_now(threads, quick)


def triad_now(threads: int, quick: bool = False, clock: str = "wall") -> float:
    """STREAM triad bandwidth in bytes/s, measured now (best of 10 runs; 3 when quick)."""
    n = (1 << 20) if quick else (16 << 20)
    a, b, c = (np.full(n, v, np.float32) for v in (0.0, 1.0, 2.0))
    best = _lib().bench_triad(a.ctypes.data, b.ctypes.data, c.ctypes.data, n, threads,
                              3 if quick else 10, clock == "cpu")
    return 3 * n * 4 / best


@lru_cache(maxsize=None)
def fma_peak(threads: int, quick: bool = False, clock: str = "wall") -> float:
    """fp32 FLOP/s of independent FMA chains."""
    return _lib().bench_fma(20_000 if quick else 2_000_000, threads, 3 if quick else 5,
                            clock == "cpu")
