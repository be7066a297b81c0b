"""Compile time against graph size: trace and lower kernels of N ops, print time per op.

Each kernel is a chain of N elementwise ops with a reduction every 8 ops (so fuse,
forward, cse and dce all have work), over a DYNAMIC row dim. Linear scaling shows as a flat
'ms per op' column; the ratio column compares each size with the smallest, measured in the
same run.

    python bench/compile_scaling.py [--sizes 50,100,200,400]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from tabulate import tabulate

import libpypto as pypto

TEMPLATE = '''import libpypto as pypto

@pypto.jit
def chain(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
          y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    t = x
{body}
    y[:] = t
'''


def op_file(n: int, folder: str) -> str:
    lines = []
    for i in range(n):
        if i % 8 == 7:
            lines.append("    t = t - pypto.amax(t, -1, keepdim=True)")
        else:
            lines.append(f"    t = {['pypto.exp(t * 0.01)', 't + 1.0', 't * 0.5'][i % 3]}")
    path = os.path.join(folder, f"chain{n}.py")
    with open(path, "w") as f:
        f.write(TEMPLATE.format(body="\n".join(lines)))
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,100,200,400")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows, base = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = op_file(n, tmp)
            t0 = time.perf_counter()
            doc = pypto.trace(path)
            t1 = time.perf_counter()
            lowered = pypto.lower(doc, None, "host")
            t2 = time.perf_counter()
            code = pypto.emit(pypto.schedule(lowered, "host"), "c")
            t3 = time.perf_counter()
            per_op = (t3 - t0) / n * 1e3
            base = base or per_op
            progs = sum(1 for op in lowered.body if op.name == "program")
            rows.append([n, progs, f"{(t1 - t0) * 1e3:.0f}", f"{(t2 - t1) * 1e3:.0f}",
                         f"{(t3 - t2) * 1e3:.0f}", f"{per_op:.2f}", f"{per_op / base:.2f}"])
            _ = code
    print(tabulate(rows, headers=["ops", "programs", "trace ms", "lower ms", "sched+emit ms",
                                  "ms per op", "vs smallest"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
