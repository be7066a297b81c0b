"""Issue 10's two tables: simulated GEMM on a3 and flash attention on a2, each lowered with
the Block Graph passes (the default pipeline) and without them, side by side.

    python bench/sim/tables.py [--kernel gemm|fa|both] [--gemm-sizes 1536,3072,6144,7680]
                               [--fa-sizes 1024,4096,16384,32768] [--no-before]

GEMM: bench/sim/gemm.py (fp16 -> fp32, cube tiles [128, 256, 64] with stepK 4), M = N = K.
Flash attention: bench/sim/flash_attention.py (one batch and head, D = 128, fp16 in, fp32
out, KV blocks of 128). "before" is the lowering without the Block Graph passes
(fold-scale, mix-fuse, l1-reuse, nbuffer, ooo-schedule, insert-sync, gm-reuse, and fuse's
sinking); "after" the default pipeline. For each: the simulated time (launch included),
TFLOP/s, the bound the simulator names with its utilisation, and the CPU seconds the
simulation took. Nothing is asserted; the numbers are the simulator's, not the chips'.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import time

HERE = pathlib.Path(__file__).resolve().parent
BEFORE = "tensor-to-tile,assign-memory,fuse{sink=false},forward,cse,dce,alloc,make-exec"
D = 128


def _kernels(args) -> list:
    """(name, op file, target, sizes, env of a size, flops of a size)."""
    out = []
    if args.kernel in ("gemm", "both"):
        out.append(("GEMM", HERE / "gemm.py", "a3", args.gemm_sizes,
                    lambda n: {"M": n, "N": n, "K": n}, lambda n: 2 * n ** 3))
    if args.kernel in ("fa", "both"):
        out.append(("flash attention", HERE / "flash_attention.py", "a2", args.fa_sizes,
                    lambda s: {"S": s}, lambda s: 4 * s * s * D))
    return out


def _row(r: dict, flops: int, cpu: float) -> list:
    util = r["utilisation"].get(r["bound"])
    bound = r["bound"] if util is None else f"{r['bound']} ({util:.0%})"
    return [round(r["us"], 1), round(flops / r["us"] / 1e6, 1), bound, round(cpu, 1)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=("gemm", "fa", "both"), default="both")
    ap.add_argument("--gemm-sizes", default="1536,3072,6144,7680")
    ap.add_argument("--fa-sizes", default="1024,4096,16384,32768")
    ap.add_argument("--no-before", action="store_true", help="the default pipeline only")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYPTO_MAX_INSTANCES", str(1 << 26))
    from tabulate import tabulate

    import libpypto as pypto
    from libpypto.driver import simulate
    forms = ([] if args.no_before else [("before", BEFORE)]) + [("after", None)]
    for name, path, target, sizes, env_of, flops_of in _kernels(args):
        doc = pypto.trace(str(path), target=target)
        low = {f: pypto.lower(doc, p, target=target) for f, p in forms}
        rows = []
        for n in (int(x) for x in sizes.split(",")):
            row = [n]
            for f, _ in forms:
                t = time.process_time()
                r = simulate(low[f], target, env_of(n))
                row += _row(r, flops_of(n), time.process_time() - t)
            if len(forms) == 2:
                row.append(round(row[1] / row[5], 2))
            rows.append(row)
        head = ["size"] + [f"{f} {c}" for f, _ in forms
                           for c in ("us", "TFLOP/s", "bound", "sim CPU s")]
        print(f"{name} on {target}")
        print(tabulate(rows, headers=head + (["speed-up"] if len(forms) == 2 else [])))
        print()


if __name__ == "__main__":
    main()
