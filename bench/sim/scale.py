"""How expanding, scheduling and simulating grow with the number of task instances.

    python bench/sim/scale.py [--sizes 62500,125000,250000,500000,1000000] [--target a2]
                              [--no-sim]

The kernel is bench/sim/scale_kernel.py (one instance per row of an [R, 8] tensor), lowered
once for the target; then per size R the script times, each on its own: the expansion of
the instances and their dependences (libpypto.analysis.expand), the schedule with bound
sizes (libpypto.schedule: the expansion again, then critical-path list scheduling with the
simulator's cost tables), and the simulation (libpypto.driver.simulate). It prints seconds and microseconds per instance for each, so
linear growth shows as a flat per-instance column. CPU seconds of this process
(time.process_time), which the other work on a shared machine disturbs less than wall time.
Nothing is asserted: a test runs it with tiny sizes (tests/unit/bench) only to keep it working.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import time

HERE = pathlib.Path(__file__).resolve().parent


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="62500,125000,250000,500000,1000000")
    ap.add_argument("--target", default="a2")
    ap.add_argument("--no-sim", action="store_true", help="expand and schedule only")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYPTO_MAX_INSTANCES", str(1 << 26))
    from tabulate import tabulate

    import libpypto as pypto
    from libpypto.analysis.expand import expand
    from libpypto.driver import simulate
    doc = pypto.lower(pypto.trace(str(HERE / "scale_kernel.py"), target=args.target),
                      target=args.target)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        env = {"R": n}
        t = [_timed(lambda: expand(doc, env)), _timed(lambda: pypto.schedule(doc, bind=env))]
        t.append(None if args.no_sim else _timed(lambda: simulate(doc, args.target, env)))
        rows.append([n] + [f"{x:.2f}" if x is not None else "-" for x in t] +
                     [f"{x / n * 1e6:.1f}" if x is not None else "-" for x in t])
        print(tabulate(rows[-1:], tablefmt="plain"), flush=True)
    print(tabulate(rows, headers=["instances", "expand s", "schedule s", "simulate s",
                                  "expand us/inst", "schedule us/inst", "simulate us/inst"]))


def _timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


if __name__ == "__main__":
    main()
