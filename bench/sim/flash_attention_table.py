"""Simulated flash attention (bench/sim/flash_attention.py: one batch and head, D = 128, fp16
in, fp32 out, KV blocks of 128) before and after cube/vector fusion, side by side.

    python bench/sim/flash_attention_table.py [--sizes 1024,4096,16384] [--target a2]
                                              [--preload 2] [--no-before]

"before" is the lowering without fold-scale, mix-fuse and fuse's sinking (seven tasks per KV
step through GM workspaces); "after" the default pipeline (one mixed program per cluster,
the cube running `preload` steps ahead). For each size: the simulated time (launch
included), TFLOP/s (4 S^2 D flops), the bound the simulator names and the CPU seconds the
simulation took; then, for "after", the busy time per pipe of the first cluster's cube
core and first vector core, divided by the KV steps (one step's work). Nothing is
asserted: a test runs it on a small size to keep it working.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import time

HERE = pathlib.Path(__file__).resolve().parent
D = 128
BEFORE = "tensor-to-tile,assign-memory,fuse{sink=false},forward,cse,dce,alloc,make-exec"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024,4096,16384")
    ap.add_argument("--target", default="a2")
    ap.add_argument("--preload", type=int, default=2)
    ap.add_argument("--no-before", action="store_true", help="simulate the fused form only")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYPTO_MAX_INSTANCES", str(1 << 26))
    from tabulate import tabulate

    import libpypto as pypto
    from libpypto.driver import simulate
    from libpypto.passes import DEFAULT_PIPELINE
    doc = pypto.trace(str(HERE / "flash_attention.py"), target=args.target)
    after = DEFAULT_PIPELINE.replace("mix-fuse", f"mix-fuse{{preload={args.preload}}}")
    forms = ([("before", BEFORE)] if not args.no_before else []) + [("after", after)]
    low = {name: pypto.lower(doc, p, target=args.target) for name, p in forms}
    rows, pipes = [], []
    for s in (int(x) for x in args.sizes.split(",")):
        row = [s]
        for name, _ in forms:
            t = time.process_time()
            r = simulate(low[name], args.target, {"S": s})
            cpu = time.process_time() - t
            row += [r["us"], round(4 * s * s * D / r["us"] / 1e6, 1), r["bound"], round(cpu, 1)]
            if name == "after":
                pipes += _per_step(r, s)
        if len(forms) == 2:
            row.append(round(row[1] / row[5], 2))
        rows.append(row)
    head = ["S"] + [f"{n} {c}" for n, _ in forms for c in ("us", "TFLOP/s", "bound", "sim CPU s")]
    print(tabulate(rows, headers=head + (["speed-up"] if len(forms) == 2 else [])))
    print()
    print(tabulate(pipes, headers=["S", "core"] + list(_PIPES) + ["steps"], floatfmt=".3f"))


_PIPES = ("MTE2", "MTE1", "M", "V", "MTE3", "FIX")


def _per_step(r: dict, s: int) -> list:
    """Busy microseconds per KV step of each pipe of the first cube and vector core."""
    steps = max(1, s // 128)
    out = []
    for kind in ("cube", "vector"):
        core = next(b for b in r["busy"] if b[1] == kind)
        busy = dict(zip(r["pipes"], core[2:]))
        us = [busy[p] / (r["clock_ghz"] * 1e3) / steps for p in _PIPES]
        out.append([s, f"{kind} {core[0]}"] + us + [steps])
    return out


if __name__ == "__main__":
    main()
