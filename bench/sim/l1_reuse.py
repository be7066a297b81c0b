"""l1-reuse on the simulator: an FFN-SwiGLU (bench/sim/ffn_swiglu.py) lowered for a target
with l1-reuse off, automatic and with a given factor, each simulated: the makespan, the GM
bytes the cores load (HBM reads plus L2 hits: what MTE2 moves), and the task instances.

    python bench/sim/l1_reuse.py [--target a2] [--tokens 1024 --hidden 1024 --inter 4096]

Numbers come from the simulator (deterministic): no timing of this machine."""
from __future__ import annotations

import argparse
import pathlib

from tabulate import tabulate

import libpypto as pypto
from libpypto.driver import simulate
from libpypto.passes import DEFAULT_PIPELINE

HERE = pathlib.Path(__file__).resolve().parent


def measure(target: str, sizes: dict, option: str) -> list:
    doc = pypto.trace(str(HERE / "ffn_swiglu.py"), target=target, bind=sizes)
    low = pypto.lower(doc, DEFAULT_PIPELINE.replace("l1-reuse", f"l1-reuse{{{option}}}"),
                      target=target)
    r = simulate(low, target, {})
    loaded = r["hbm_bytes"][0] + r["l2_hit_bytes"]
    blocks = sum(1 for op in low.walk() if op.name == "task")
    return [option, blocks, len(r["tasks"]), r["us"], loaded / 1e6, r["bound"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="a2")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--inter", type=int, default=4096)
    ap.add_argument("--factors", default="enable=false,factor=0,factor=2")
    a = ap.parse_args()
    sizes = {"h_0": a.tokens, "h_1": a.hidden, "w_gate_1": a.inter, "w_up_1": a.inter,
             "w_down_1": a.hidden}
    rows = [measure(a.target, sizes, opt) for opt in a.factors.split(",")]
    print(f"FFN-SwiGLU bf16, T={a.tokens} H={a.hidden} I={a.inter}, on {a.target}")
    print(tabulate(rows, headers=["l1-reuse", "tasks", "instances", "simulated us",
                                  "GM MB loaded", "bound"], floatfmt=".3f"))


if __name__ == "__main__":
    main()
