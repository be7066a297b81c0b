"""How expanding, scheduling and simulating grow with the number of task instances.

    python bench/sim/scale.py [--sizes 62500,125000,250000,500000,1000000] [--target a2]
                              [--kernel scale|deps] [--engine c|python|reference] [--no-sim]

The kernel (bench/sim/scale_kernel.py: y = x + 1 over [R, 8] fp32 in tiles of one row, R
independent instances; or `deps`, bench/sim/scale_deps.py: the same in two tasks, the
second in tiles of two rows waiting for two instances of the first, 1.5 R instances) is
lowered once for the target; then per size (the number of instances: R is chosen to give
it) the script times, each on its own: the expansion of the instances and their
dependences (libpypto.analysis.expand), the schedule with bound sizes (libpypto.schedule:
the expansion again, then critical-path list scheduling with the simulator's cost tables)
and the simulation (libpypto.driver.simulate; --engine, default c: the C event loop; python
and reference are the slower paths it is tested against). It prints seconds and
microseconds per instance for each, so linear growth shows as a flat per-instance column,
and the sum. CPU seconds of this process (time.process_time), which the other work on a
shared machine disturbs less than wall time. Nothing is asserted: a test runs it with
tiny sizes (tests/unit/bench) only to keep it working.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import time

HERE = pathlib.Path(__file__).resolve().parent
KERNELS = {"scale": ("scale_kernel.py", 1.0), "deps": ("scale_deps.py", 1.5)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="62500,125000,250000,500000,1000000")
    ap.add_argument("--target", default="a2")
    ap.add_argument("--kernel", default="scale", choices=sorted(KERNELS))
    ap.add_argument("--engine", default="c", choices=("c", "python", "reference"))
    ap.add_argument("--no-sim", action="store_true", help="expand and schedule only")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYPTO_MAX_INSTANCES", str(1 << 26))
    os.environ["PYPTO_SIM_ENGINE"] = args.engine
    from tabulate import tabulate

    import libpypto as pypto
    from libpypto.analysis.expand import expand
    from libpypto.driver import simulate
    name, per_row = KERNELS[args.kernel]
    doc = pypto.lower(pypto.trace(str(HERE / name), target=args.target), target=args.target)
    rows = []
    for want in (int(s) for s in args.sizes.split(",")):
        env = {"R": max(1, round(want / per_row))}
        t = [_timed(lambda: expand(doc, env)), _timed(lambda: pypto.schedule(doc, bind=env))]
        t.append(None if args.no_sim else _timed(lambda: simulate(doc, args.target, env)))
        n = expand(doc, env).n
        done = [x for x in t if x is not None]
        rows.append([n] + [f"{x:.2f}" if x is not None else "-" for x in t] +
                    [f"{sum(done):.2f}"] +
                    [f"{x / n * 1e6:.1f}" if x is not None else "-" for x in t])
        print(tabulate(rows[-1:], tablefmt="plain"), flush=True)
    print(tabulate(rows, headers=["instances", "expand s", "schedule s", "simulate s", "sum s",
                                  "expand us/inst", "schedule us/inst", "simulate us/inst"]))


def _timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


if __name__ == "__main__":
    main()
