"""What a JIT call costs besides the kernel's work, and what the runtime spends per task.

Two tables, with one thread and with two:

- calls: a tiny kernel (8 x 256 fp32 add) called in a loop, its arrays reused (the call-plan
  cache serves it). "pypto call" is the time per call seen by the caller; "kernel work" is
  the time the task instances themselves ran (sum of end - start from the run's timeline);
  "overhead" is the difference: signature lookup, the foreign call, the runtime's launch.
  numpy's np.add(x, y, out=o) and x + y are the same op for comparison. The "cpu" columns
  count the calling thread's CPU time instead of wall time: on a shared machine they leave
  out the time the OS gave the core to other processes (a tiny call runs on the calling
  thread alone, so its CPU time is its whole cost). "new size" is a call
  with a DYNAMIC size not seen before (no compile, but binding, task expansion, the access
  check and the plan are built): what the call-plan cache saves.
- dispatch: kernels of many small tasks (row blocks of 8 rows of an add, memory-bound, and
  single rows, cache-resident: there the dispatch dominates). Per task: the wall time,
  the tasks' own time, the mean dispatch cost (threads x wall - task time) / tasks (the time
  a worker spends per task not running it: taking it, timing it, waking successors, and
  any time the OS gave the core to another process), and the median gap between one
  worker's consecutive tasks (the same cost, robust to preemption on a shared machine).

Method: interleaved batches of 100 calls (a batch of one side, then of the other), the per-call
mean of each batch, medians over batches. Times are measured, never asserted.

    python bench/calls.py [--quick] [--reps N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from tabulate import tabulate

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libpypto as pypto  # noqa: E402


@pypto.jit
def add(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
        y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
        out: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    out[:] = x + y


@pypto.jit
def add_rows(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
             y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
             out: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 256)
    out[:] = x + y


def per_call(fn, n: int, cpu: list | None = None) -> float:
    """Mean wall time per call of a batch of n; the caller thread's CPU time per call is
    appended to cpu (it leaves out the time the OS gave the core to other processes)."""
    c0, t0 = time.thread_time(), time.perf_counter()
    for _ in range(n):
        fn()
    t1, c1 = time.perf_counter(), time.thread_time()
    if cpu is not None:
        cpu.append((c1 - c0) / n)
    return (t1 - t0) / n


def task_time(kernel) -> tuple[float, float, int]:
    """(sum of task durations, wall) in seconds and the task count of the latest call."""
    run = kernel.last_run
    return (float(np.sum(run["end_ns"] - run["start_ns"])) / 1e9, float(run["wall_s"]),
            len(run["start_ns"]))


def call_rows(reps: int, batch: int) -> list:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 256), dtype=np.float32)
    y = rng.standard_normal((8, 256), dtype=np.float32)
    o = np.zeros_like(x)
    rows = []
    for threads in (1, 2):
        add.options["threads"] = threads
        add(x, y, o)
        np.testing.assert_array_equal(o, x + y)
        ours, work, np_out, np_alloc, cpu, np_cpu = [], [], [], [], [], []
        for _ in range(reps):
            ours.append(per_call(lambda: add(x, y, o), batch, cpu))
            work.append(task_time(add)[0])     # the batch's last call
            np_out.append(per_call(lambda: np.add(x, y, out=o), batch, np_cpu))
            np_alloc.append(per_call(lambda: x + y, batch))
        fresh = []
        for k in range(min(reps, 20)):           # DYNAMIC sizes not seen before: plan misses
            xs = np.ones((8 + 8 * (k + 1) + 1000 * threads, 256), np.float32)
            os_ = np.zeros_like(xs)
            t0 = time.perf_counter()
            add(xs, xs, os_)
            fresh.append(time.perf_counter() - t0)
        a, w = statistics.median(ours), statistics.median(work)
        c = statistics.median(cpu)
        rows.append(["8x256 f32 add", threads, f"{a * 1e6:.2f}", f"{min(ours) * 1e6:.2f}",
                     f"{c * 1e6:.2f}", f"{w * 1e6:.2f}", f"{(a - w) * 1e6:.2f}",
                     f"{(c - w) * 1e6:.2f}", f"{statistics.median(np_out) * 1e6:.2f}",
                     f"{statistics.median(np_cpu) * 1e6:.2f}",
                     f"{statistics.median(np_alloc) * 1e6:.2f}",
                     f"{statistics.median(fresh) * 1e6:.0f}"])
    return rows


def median_gap(run) -> float:
    """Median time in seconds from one task's end to the start of the next on its worker."""
    start, end, core = run["start_ns"], run["end_ns"], run["core"]
    gaps = []
    for c in np.unique(core):
        idx = np.flatnonzero(core == c)
        idx = idx[np.argsort(start[idx], kind="stable")]
        gaps.append(start[idx][1:] - end[idx][:-1])
    g = np.concatenate(gaps) if gaps else np.zeros(0)
    return float(np.median(g)) / 1e9 if g.size else 0.0


def dispatch_rows(reps: int, tasks: int) -> list:
    """Row blocks of 8 (memory-bound, 24 KiB per task) and single rows (cache-resident,
    3 KiB per task: the dispatch dominates)."""
    rows = []
    for kernel, block in ((add, 8), (add_rows, 1)):
        rows += dispatch_case(kernel, block, reps, tasks)
    return rows


def dispatch_case(kernel, block: int, reps: int, tasks: int) -> list:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((block * tasks, 256), dtype=np.float32)
    o = np.zeros_like(x)
    rows = []
    for threads in (1, 2):
        kernel.options["threads"] = threads
        kernel(x, x, o)
        np.testing.assert_array_equal(o, x + x)
        busy, walls, gaps = [], [], []
        for _ in range(reps):
            kernel(x, x, o)
            b, w, n = task_time(kernel)
            busy.append(b)
            walls.append(w)
            gaps.append(median_gap(kernel.last_run))
        b, w = statistics.median(busy), statistics.median(walls)
        rows.append([f"{n} tasks of {block}x256 add", threads, f"{w * 1e3:.3f}",
                     f"{w / n * 1e6:.3f}", f"{b / n * 1e6:.3f}",
                     f"{(threads * w - b) / n * 1e6:.3f}",
                     f"{statistics.median(gaps) * 1e6:.3f}"])
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=61, help="batches per side (medians)")
    ap.add_argument("--quick", action="store_true", help="few, small batches (a smoke test)")
    args = ap.parse_args(argv)
    reps = 3 if args.quick else args.reps
    batch = 20 if args.quick else 100
    print(tabulate(call_rows(reps, batch),
                   headers=["call", "threads", "pypto call us", "best", "cpu us", "kernel work us",
                            "overhead us", "overhead cpu us", "np.add(out=) us",
                            "np.add cpu us", "numpy x+y us", "new size us"]))
    print()
    print(tabulate(dispatch_rows(reps, 64 if args.quick else 4096),
                   headers=["run", "threads", "wall ms", "wall/task us", "task time/task us",
                            "dispatch/task us (mean)", "gap/task us (median)"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
