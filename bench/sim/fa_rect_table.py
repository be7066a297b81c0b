"""Simulated flash attention on the shapes kernel timings are published for: S0 query rows
(one cluster per 128), S1 key rows, one batch and head, D = 128, fp16 in, fp32 out
(bench/sim/flash_attention_rect.py), with KV blocks of 128 and of 512.

    python bench/sim/fa_rect_table.py [--s0 128,256,512,1024] [--s1 1024,2048,4096,8192]
                                      [--blk 128,512] [--target a2]

For each block size a table of the simulated time in microseconds (launch included) and
the bound the simulator names. The published numbers are not here: they are the held-out
check of the timing model (shared/reference/hardware-model.md section 9), compared in the
issue notes, never used to set a number of the target.
"""
from __future__ import annotations

import argparse
import os
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--s0", default="128,256,512,1024")
    ap.add_argument("--s1", default="1024,2048,4096,8192")
    ap.add_argument("--blk", default="128,512")
    ap.add_argument("--target", default="a2")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYPTO_MAX_INSTANCES", str(1 << 26))
    from tabulate import tabulate

    import libpypto as pypto
    from libpypto.driver import simulate
    s0s = [int(x) for x in args.s0.split(",")]
    s1s = [int(x) for x in args.s1.split(",")]
    for blk in (int(x) for x in args.blk.split(",")):
        doc = pypto.trace(str(HERE / "flash_attention_rect.py"), target=args.target,
                          consts={"blk": blk})
        low = pypto.lower(doc, target=args.target)
        mixed = sum(op.name == "program" for op in low.body)
        rows = []
        for s0 in s0s:
            row = [s0]
            for s1 in s1s:
                r = simulate(low, args.target, {"S0": s0, "S1": s1})
                row.append(f"{r['us']:.1f} {r['bound']}")
            rows.append(row)
        print(f"KV blocks of {blk} on {args.target} ({mixed} program{'s' * (mixed != 1)}): "
              f"simulated us, launch included, and the bound")
        print(tabulate(rows, headers=["S0 \\ S1"] + [str(s) for s in s1s]))
        print()


if __name__ == "__main__":
    main()
