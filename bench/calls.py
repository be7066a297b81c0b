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

- first call: a call with sizes not seen before on large kernels (softmax 4096 x 4096 in
  8-row tiles and rmsnorm 16384 x 1024 in 1-row tiles, the row count named): where the
  time goes on the calling thread's CPU clock, the expansion of the task instances with
  their dependencies and access check (analysis/expand.py), the tables of the plan and its
  launcher (runtime/executable.py), then the whole first call beside a second call with
  the same arrays (the kernel's run itself; outputs written to before, so no first-touch
  faults).

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
        fresh, fresh_cpu = [], []
        for k in range(min(reps, 20)):           # DYNAMIC sizes not seen before: plan misses
            xs = np.ones((8 + 8 * (k + 1) + 1000 * threads, 256), np.float32)
            os_ = np.zeros_like(xs)
            c0, t0 = time.thread_time(), time.perf_counter()
            add(xs, xs, os_)
            fresh.append(time.perf_counter() - t0)
            fresh_cpu.append(time.thread_time() - c0)
        a, w = statistics.median(ours), statistics.median(work)
        c = statistics.median(cpu)
        rows.append(["8x256 f32 add", threads, f"{a * 1e6:.2f}", f"{min(ours) * 1e6:.2f}",
                     f"{c * 1e6:.2f}", f"{w * 1e6:.2f}", f"{(a - w) * 1e6:.2f}",
                     f"{(c - w) * 1e6:.2f}", f"{statistics.median(np_out) * 1e6:.2f}",
                     f"{statistics.median(np_cpu) * 1e6:.2f}",
                     f"{statistics.median(np_alloc) * 1e6:.2f}",
                     f"{statistics.median(fresh) * 1e6:.0f}",
                     f"{statistics.median(fresh_cpu) * 1e6:.0f}"])
    return rows


@pypto.jit
def softmax(x: pypto.Tensor[["T", 4096], pypto.DT_FP32],
            y: pypto.Tensor[["T", 4096], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 4096)
    e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
    y[:] = e / pypto.sum(e, dim=-1, keepdim=True)


@pypto.jit
def rmsnorm(x: pypto.Tensor[["T", 1024], pypto.DT_FP32], g: pypto.Tensor[[1024], pypto.DT_FP32],
            y: pypto.Tensor[["T", 1024], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 1024)
    y[:] = pypto.rms_norm(x, g)


def first_call_rows(reps: int, quick: bool) -> list:
    """CPU ms of a call with new sizes: expansion, plan tables, the whole first call and a
    second call with the same arrays (calling thread, one thread)."""
    from libpypto.analysis.bind import run_sizes
    from libpypto.analysis.expand import expand
    from libpypto.jit import call_kernel
    from libpypto.runtime.executable import Plan
    rows = []
    for k, base, extra in ((softmax, 4096, ()), (rmsnorm, 16384, (1024,))):
        base //= 8 if quick else 1
        width = 4096 if k is softmax else 1024
        ins = lambda t: [np.ones((t, width), np.float32), *(np.ones(e, np.float32)
                                                           for e in extra)]
        a = ins(16)
        call_kernel(k, (*a, np.zeros_like(a[0])), {}, threads=1)
        doc, exe = next(iter(k._cache.values())).last
        t_exp, t_tab, t_first, t_again = [], [], [], []
        for i in range(reps):
            t = base + 1 + i                     # a size not seen before
            a = ins(t)
            out = np.ones_like(a[0])
            names = [n for n, _ in k.tensor_params]
            env = run_sizes(doc, dict(zip(names, (*a, out))))
            c0 = time.thread_time()
            e = expand(doc, env)
            c1 = time.thread_time()
            exe.launcher(Plan(e))
            c2 = time.thread_time()
            call_kernel(k, (*a, out), {}, threads=1)
            c3 = time.thread_time()
            call_kernel(k, (*a, out), {}, threads=1)
            c4 = time.thread_time()
            t_exp.append(c1 - c0), t_tab.append(c2 - c1)
            t_first.append(c3 - c2), t_again.append(c4 - c3)
        med = statistics.median
        rows.append([f"{k.name} {base}x{width}, {e.n} instances", f"{med(t_exp) * 1e3:.1f}",
                     f"{med(t_tab) * 1e3:.1f}", f"{med(t_first) * 1e3:.1f}",
                     f"{med(t_again) * 1e3:.1f}",
                     f"{(med(t_first) - med(t_again)) * 1e3:.1f}"])
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
                            "np.add cpu us", "numpy x+y us", "new size us", "new size cpu us"]))
    print()
    print(tabulate(dispatch_rows(reps, 64 if args.quick else 4096),
                   headers=["run", "threads", "wall ms", "wall/task us", "task time/task us",
                            "dispatch/task us (mean)", "gap/task us (median)"]))
    print()
    print(tabulate(first_call_rows(3 if args.quick else min(args.reps, 9), args.quick),
                   headers=["first call with new sizes (cpu ms)", "expand", "plan tables",
                            "first call", "second call", "first - second"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
