"""The runtime's launch (rt.c pypto_launch through executable.Launcher): one foreign call per
run, the same bits for any thread count, and tables with a dependency cycle fail the run
instead of hanging it."""
import ctypes

import numpy as np
import pytest

from libpypto.analysis.bind import run_sizes
from libpypto.driver import emit, lower, schedule
from libpypto.errors import PyptoError
from libpypto.runtime import load

pytestmark = pytest.mark.needs_cc


def add_exe():
    import libpypto as pypto

    @pypto.jit
    def add(x: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
            y: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
            out: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 64)
        out[:] = (x + y) * x

    doc = emit(schedule(lower(add.trace(), None, None), None), "c")
    return doc, load(doc)


def test_many_tasks_same_bits_for_any_thread_count():
    doc, exe = add_exe()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4 * 500, 64), dtype=np.float32)
    y = rng.standard_normal((4 * 500, 64), dtype=np.float32)
    plan = exe.plan(run_sizes(doc, {"x": x, "y": y}))
    assert plan.exp.n == 500
    results = []
    for threads in (1, 2, 3, 1):
        out = np.zeros_like(x)
        timing = exe(plan, {"x": x, "y": y, "out": out}, threads)
        assert set(timing["core"].tolist()) <= set(range(threads))
        results.append(out.tobytes())
    np.testing.assert_allclose(out, (x + y) * x, rtol=1e-6)
    assert len(set(results)) == 1


def test_small_instances_are_taken_in_batches_and_timed_each():
    """500 instances of 4 x 64 (about 3 KiB each) get a batch count above 1; every instance
    still runs once, on a worker of the run, with its own start and end, and the outputs
    are the same bits for any thread count."""
    doc, exe = add_exe()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4 * 500 - 3, 64), dtype=np.float32)
    plan = exe.plan(run_sizes(doc, {"x": x, "y": x}))
    assert plan.batch.shape == (500,) and int(plan.batch.min()) > 1
    outs = []
    for threads in (1, 2):
        out = np.zeros_like(x)
        timing = exe(plan, {"x": x, "y": x, "out": out}, threads)
        start, end = timing["start_ns"], timing["end_ns"]
        assert len(start) == 500 and np.all(end >= start) and np.all(end > 0)
        assert set(timing["core"].tolist()) <= set(range(threads))
        outs.append(out.tobytes())
    assert outs[0] == outs[1]
    np.testing.assert_allclose(out, (x + x) * x, rtol=1e-6)


def test_a_dependency_cycle_fails_the_run(monkeypatch):
    doc, exe = add_exe()
    x = np.ones((8, 64), np.float32)
    plan = exe.plan(run_sizes(doc, {"x": x, "y": x}))
    assert plan.exp.n == 2
    # tamper with the tables: each task waits for the other
    plan.npred = np.asarray([1, 1], np.int32)
    plan.succ_off = np.asarray([0, 1, 2], np.int64)
    plan.succ = np.asarray([1, 0], np.int64)
    for threads in (1, 2):
        plan.launcher = None
        with pytest.raises(PyptoError, match="cycle"):
            exe(plan, {"x": x, "y": x, "out": np.zeros_like(x)}, threads)


def test_launcher_struct_matches_the_tables():
    doc, exe = add_exe()
    x = np.ones((12, 64), np.float32)
    plan = exe.plan(run_sizes(doc, {"x": x, "y": x}))
    la = exe.launcher(plan)
    assert la is exe.launcher(plan) and la.params == ["x", "y", "out"]
    assert la.struct.ntasks == plan.exp.n == 3
    assert la.struct.prog == plan.prog.ctypes.data
    assert ctypes.sizeof(la.struct) == 8 * 19
    assert la.struct.batch == plan.batch.ctypes.data
