"""libpypto.sched: the task DAG (networkx), the order it allows, the list schedule and the
bounds no schedule can beat."""
from __future__ import annotations

import pytest

import libpypto as pypto
from libpypto.sched import bottom_levels, bounds, place, task_graph, task_order


def schedule_attrs(doc):
    return next(op for op in doc.body if op.name == "schedule").attrs


@pytest.mark.slow
@pytest.mark.parametrize("target", ["a2", "950", "host"])
def test_bounds_hold_for_every_example(ex, example, target):
    doc = pypto.schedule(pypto.lower(ex.doc(example, "tensor"), None, target), None,
                         ex.bind(example))
    a = schedule_attrs(doc)
    assert 0 < a["critical_path_us"] <= a["lower_bound_us"] <= a["makespan_us"] + 1e-6
    ntasks = sum(1 for op in doc.walk() if op.name == "task")
    assert sorted(a["order"]) == list(range(ntasks))
    assert set(a["critical_tasks"]) <= {t for t, *_ in a["instances"]}


def test_the_lower_bound_spreads_the_work_over_the_cores(ex):
    """Many independent instances of a vector program: the bound is the work over the
    vector cores, and the schedule (32 full waves, some HBM waiting) is close above it."""
    doc = pypto.schedule(pypto.lower(ex.doc("softmax", "tensor"), None, "a2"), None,
                         {"x_0": 8 * 48 * 4})
    a = schedule_attrs(doc)
    assert a["bound"] == "work (vector)"
    assert a["critical_path_us"] < a["lower_bound_us"] == a["work_us"]
    assert a["lower_bound_us"] <= a["makespan_us"] <= 1.25 * a["lower_bound_us"]


COPY = """import libpypto as pypto


@pypto.jit
def copy(x: pypto.Tensor[["R", 512], pypto.DT_FP32], y: pypto.Tensor[["R", 512], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(32, 512)
    y[:] = x + 1.0
"""


def test_a_copy_heavy_kernel_is_bound_by_the_hbm_bandwidth(tmp_path):
    """64 KiB in and out per instance, 48 vector cores at 108 GB/s each against 1.5 TB/s
    of HBM. With an L2 that writes through, every byte crosses HBM: bytes over bandwidth
    binds, and the schedule, which shares the HBM, does not beat it. A2's L2 writes back:
    the stores stay in it (25 MB fit), only the loads must cross HBM; single-buffered the
    vector work then binds, N-buffered (the default) the loads overlap it and their bytes
    bind again."""
    from libpypto.driver import target_for
    from libpypto.targets import override
    (tmp_path / "copy.py").write_text(COPY)
    doc = pypto.lower(pypto.trace(str(tmp_path / "copy.py"), target="a2"), target="a2")
    through = override(target_for(doc, "a2"), ["l2.write_back=0"])
    a = schedule_attrs(pypto.schedule(doc, through, {"R": 32 * 48 * 8}))
    assert a["gm_bytes"] == 2 * 4 * 512 * 32 * 48 * 8
    assert a["bandwidth_us"] == pytest.approx(a["gm_bytes"] / 1500e9 * 1e6, abs=1e-3)
    assert a["bound"] == "bandwidth" and a["lower_bound_us"] == a["bandwidth_us"]
    assert a["bandwidth_us"] > a["work_us"] > a["critical_path_us"]
    assert a["makespan_us"] >= a["lower_bound_us"] - 1e-3
    b = schedule_attrs(pypto.schedule(doc, None, {"R": 32 * 48 * 8}))
    assert b["bandwidth_us"] == pytest.approx(a["bandwidth_us"] / 2, abs=1e-3)
    assert b["bound"] == "bandwidth" and b["work_us"] < b["bandwidth_us"]
    assert b["makespan_us"] < a["makespan_us"]
    single = pypto.lower(pypto.trace(str(tmp_path / "copy.py"), target="a2"),
                         pypto.passes.DEFAULT_PIPELINE.replace("nbuffer", "nbuffer{enable=false}"),
                         target="a2")
    c = schedule_attrs(pypto.schedule(single, None, {"R": 32 * 48 * 8}))
    assert c["bound"] == "work (vector)" and c["work_us"] > b["work_us"]


def test_a_chain_of_loop_steps_is_bound_by_its_critical_path(ex):
    """Flash attention with one query block: each loop step needs the one before, so the
    critical path binds and the schedule meets it."""
    doc = pypto.schedule(pypto.lower(ex.doc("flash_attention", "tensor"), None, "a2"), None,
                         ex.bind("flash_attention"))
    a = schedule_attrs(doc)
    assert a["bound"] == "critical path"
    assert a["lower_bound_us"] == a["critical_path_us"] > max(a["work_us"], a["bandwidth_us"])


# -- the placement and the bounds on hand-built graphs with known answers -----------------

def test_chain_the_critical_path_binds():
    dur, preds = [3.0, 5.0, 2.0], [[], [0], [1]]
    b = bounds(dur, preds, ["vector"] * 3, {"vector": 4})
    assert (b["critical_path_us"], b["work_us"], b["bound"], b["path"]) == \
        (10.0, 2.5, "critical path", [0, 1, 2])
    start, end, core = place(dur, preds, ["vector"] * 3, ["vector"] * 4)
    assert (start, end, core) == ([0.0, 3.0, 8.0], [3.0, 8.0, 10.0], [0, 0, 0])


def test_many_independent_tasks_the_work_binds():
    dur = [3.0] * 8
    b = bounds(dur, [[]] * 8, ["vector"] * 8, {"vector": 2, "cube": 1})
    assert (b["lower_bound_us"], b["critical_path_us"], b["bound"]) == (12.0, 3.0,
                                                                        "work (vector)")
    start, end, core = place(dur, [[]] * 8, ["vector"] * 8, ["cube", "vector", "vector"])
    assert max(end) == 12.0 and set(core) == {1, 2}      # never on the cube core


def test_copy_heavy_tasks_the_bandwidth_binds_and_the_hbm_is_shared():
    """4 instances of 100 B, each 10 cycles alone, HBM at 1 B/cycle: the bytes pass one
    instance after another, so instance k ends when its bytes do, at 100 (k + 1)."""
    dur, gm = [10.0] * 4, [(100.0, 10.0)] * 4
    b = bounds(dur, [[]] * 4, ["vector"] * 4, {"vector": 4}, sum(g[0] for g in gm), 1.0)
    assert (b["bandwidth_us"], b["lower_bound_us"], b["bound"]) == (400.0, 400.0, "bandwidth")
    start, end, core = place(dur, [[]] * 4, ["vector"] * 4, ["vector"] * 4, gm, 1.0)
    assert start == [0.0] * 4 and end == [100.0, 200.0, 300.0, 400.0]


def test_critical_path_priority_beats_fifo_on_a_small_dag():
    """Two cores; B0, B1 (5 cycles) are independent; A (1) leads to C (10). FIFO starts
    the lower ids B0, B1 first and C ends at 16; the longest path first starts A at once
    and ends at 11, the critical path."""
    dur, preds, kind = [5.0, 5.0, 1.0, 10.0], [[], [], [], [2]], ["vector"] * 4
    lanes = ["vector", "vector"]
    _, fifo_end, _ = place(dur, preds, kind, lanes, priority="fifo")
    start, end, core = place(dur, preds, kind, lanes)
    assert max(fifo_end) == 16.0
    assert max(end) == 11.0 == bounds(dur, preds, kind, {"vector": 2})["lower_bound_us"]
    assert start == [0.0, 5.0, 0.0, 1.0] and core == [1, 1, 0, 0]
    assert bottom_levels(dur, preds) == [5.0, 5.0, 11.0, 10.0]


def test_equal_priorities_go_to_the_lower_id_and_the_lower_core():
    start, end, core = place([2.0] * 3, [[]] * 3, ["vector"] * 3, ["vector"] * 2)
    assert (start, core) == ([0.0, 0.0, 2.0], [0, 1, 0])


def test_flash_attention_path_runs_through_its_loop(ex):
    """Unfused (mix-fuse off: fused, the loop is one mixed program, one task)."""
    from libpypto.passes import DEFAULT_PIPELINE
    unmixed = DEFAULT_PIPELINE.replace("mix-fuse", "mix-fuse{enable=false}")
    doc = pypto.schedule(pypto.lower(ex.doc("flash_attention", "tensor"), unmixed, "a2"), None,
                         ex.bind("flash_attention"))
    a = schedule_attrs(doc)
    path = a["critical_tasks"]
    assert len(path) > len(set(path))             # loop iterations repeat their tasks
    assert path[0] == 0 and path[-1] == max(a["order"])


def test_task_graph_edges_follow_after_and_regions(ex):
    doc = ex.doc("flash_attention", "exec")
    g = task_graph(doc)
    tasks = [op for op in doc.walk() if op.name == "task"]
    assert sorted(g.nodes) == list(range(len(tasks)))
    assert all(u < v for u, v in g.edges)
    assert task_order(doc) == list(range(len(tasks)))


def test_an_instance_costs_what_the_simulator_charges_it(ex):
    """One cost table: a single-buffered program (examples/add.py: load, load, add, store)
    costs in the schedule what the simulator takes to run one of its instances, plus the
    dispatch overhead both charge."""
    from libpypto.driver import simulate
    doc = pypto.lower(ex.doc("add", "tensor"), None, "a2")
    a = schedule_attrs(pypto.schedule(doc, None, {}))
    r = simulate(doc, "a2", {})
    alone = min(end - start for _, _, _, start, end in r["tasks"]) / 1.8e3     # us at 1.8 GHz
    assert a["launch_cost_us"][0] == pytest.approx(alone + 1.0, abs=2e-3)     # 1 us dispatch


@pytest.mark.parametrize("name, bind, within", [
    ("rmsnorm", {"T": 4096}, 0.04),         # L2 write-back: the stores never reach HBM (3.4 %
    #                                         under with N-buffered merged instances, 0.6 % without)
    ("matmul", {"M": 1024}, 0.001),         # MTE1 and the cube overlapping
    ("flash_attention", None, 0.001),       # workspaces read back from the L2
])
def test_predictions_follow_the_simulator(ex, name, bind, within):
    """The schedule costs each instance as the simulator runs it alone (pipes overlapping,
    the boxes the L2 estimate counts as hits warm) and sends only the bytes that miss the
    L2 through its HBM: its makespan is the simulated one's (launch excluded) closely, where
    summing pipes and counting every byte at HBM speed made rmsnorm 51 % and matmul 26 %
    slower."""
    from libpypto.driver import simulate
    doc = pypto.lower(ex.doc(name, "tensor"), None, "a2")
    env = bind or ex.bind(name)
    a = schedule_attrs(pypto.schedule(doc, None, env))
    r = simulate(doc, "a2", env)
    sim_us = r["us"] - r["launch_cycles"] / (r["clock_ghz"] * 1e3)
    assert a["makespan_us"] == pytest.approx(sim_us, rel=within)
    assert a["lower_bound_us"] <= a["makespan_us"] + 1e-6
