"""libpypto.sched: the task DAG (networkx), the order it allows, the list schedule and the
bounds no schedule can beat."""
from __future__ import annotations

import pytest

import libpypto as pypto
from libpypto.sched import task_graph, task_order


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
    """Many independent instances: the bound is the work over the cores, and the list
    schedule of equal instances meets it."""
    doc = pypto.schedule(pypto.lower(ex.doc("softmax", "tensor"), None, "a2"), None,
                         {"x_0": 8 * 48 * 4})
    a = schedule_attrs(doc)
    assert a["critical_path_us"] < a["lower_bound_us"]
    assert a["lower_bound_us"] == pytest.approx(a["makespan_us"], rel=1e-3)


def test_flash_attention_path_runs_through_its_loop(ex):
    doc = pypto.schedule(pypto.lower(ex.doc("flash_attention", "tensor"), None, "a2"), None,
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
