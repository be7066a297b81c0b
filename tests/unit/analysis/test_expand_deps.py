"""The dependences of task instances (analysis/expand.py) against the per-instance algorithm
they replaced (kept here as the oracle: a dict of readers and a set of predecessors per
instance, granule by granule), on every example and on hand-made launches with boxes over
several granules, write-after-read and a write over what the same launch read."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from libpypto.analysis import bind as B
from libpypto.analysis import expand as X
from libpypto.driver import lower, trace
from libpypto.errors import InputError

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def oracle(boxes: list, first: list, shapes: list, total: int) -> list:
    """Per instance, the sorted ids it waits for, one instance and granule at a time."""
    gran = X._granules(boxes, shapes)
    last_w = [dict() for _ in shapes]
    readers = [dict() for _ in shapes]
    preds = [set() for _ in range(total)]
    for ti, accs in enumerate(boxes):
        base = first[ti]
        cells = [(gm, mode, _cells(lo, hi, *gran[gm], shapes[gm])) for gm, mode, lo, hi in accs]
        for gm, mode, per in cells:
            for i, cs in enumerate(per):
                for c in cs:
                    if c in last_w[gm]:
                        preds[base + i].add(last_w[gm][c])
                    if mode == "w":
                        preds[base + i].update(readers[gm].get(c, ()))
        for gm, mode, per in cells:
            if mode == "r":
                for i, cs in enumerate(per):
                    for c in cs:
                        readers[gm].setdefault(c, []).append(base + i)
        for gm, mode, per in cells:
            if mode == "w":
                for i, cs in enumerate(per):
                    for c in cs:
                        if last_w[gm].get(c, -1) >= base and last_w[gm][c] != base + i:
                            raise InputError("overlap")
                        last_w[gm][c] = base + i
                        readers[gm].pop(c, None)
    return [sorted(p) for p in preds]


def _cells(lo, hi, g, counts, shape) -> list:
    out = []
    for a, b in zip(lo.tolist(), hi.tolist()):
        a = [min(max(x, 0), s) for x, s in zip(a, shape)]
        b = [min(max(x, 0), s) for x, s in zip(b, shape)]
        if any(y <= x for x, y in zip(a, b)):
            out.append([])
            continue
        ranges = [range(x // gg, -(-y // gg)) for x, y, gg in zip(a, b, g)]
        idx = np.array(np.meshgrid(*ranges, indexing="ij")).reshape(len(shape), -1) \
            if shape else np.zeros((0, 1), np.int64)
        out.append(np.ravel_multi_index(tuple(idx), counts).tolist() if shape else [0])
    return out


def _run(boxes, first, shapes, total):
    ptr, idx = X._dependencies(boxes, first, shapes, total)
    return [idx[ptr[i]:ptr[i + 1]].tolist() for i in range(total)]


def _example(path):
    spec = importlib.util.spec_from_file_location(f"depex_{path.stem}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.EXAMPLE


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_has_the_oracles_dependences(path, monkeypatch):
    doc = lower(trace(str(path), target="a2"), target="a2")
    env = B.bind(doc, {}, _example(path)["bind"])
    seen = {}
    real = X._dependencies

    def spy(boxes, first, shapes, total):
        seen["args"] = (boxes, first, shapes, total)
        return real(boxes, first, shapes, total)

    monkeypatch.setattr(X, "_dependencies", spy)
    try:
        exp = X.expand(doc, env)
    except X.DataDependent:
        pytest.skip("reads its data to expand")
    assert exp.preds == oracle(*seen["args"])


def test_boxes_over_several_granules_and_write_after_read():
    # tensor 0: [8, 8]; granules [4, 4] (boxes start at multiples of 4)
    shapes = [(8, 8)]
    lo = np.array([[0, 0], [4, 0]]), np.array([[4, 8], [8, 8]])       # two row halves
    write_rows = [(0, "w", lo[0], lo[1])]
    read_all = [(0, "r", np.array([[0, 0]]), np.array([[8, 8]]))]     # one reader of all
    read_cols = [(0, "r", np.array([[0, 0], [0, 4]]), np.array([[8, 4], [8, 8]]))]
    boxes = [write_rows, read_all, read_cols, write_rows, read_all]
    first = [0, 2, 3, 5, 7]
    total = 8
    got = _run(boxes, first, shapes, total)
    assert got == oracle(boxes, first, shapes, total)
    assert got[2] == [0, 1] and got[3] == [0, 1] and got[4] == [0, 1]
    assert got[5] == [0, 2, 3, 4] and got[6] == [1, 2, 3, 4]     # WAW and WAR
    assert got[7] == [5, 6]


def test_a_launch_that_reads_and_writes_the_same_granules():
    shapes = [(4,)]
    rw = [(0, "r", np.array([[0], [2]]), np.array([[2], [4]])),
          (0, "w", np.array([[0], [2]]), np.array([[2], [4]]))]
    boxes = [rw, rw, [(0, "w", np.array([[0]]), np.array([[4]]))]]
    first, total = [0, 2, 4], 5
    got = _run(boxes, first, shapes, total)
    assert got == oracle(boxes, first, shapes, total) == [[], [], [0], [1], [2, 3]]


def test_overlapping_writes_of_one_launch_are_refused():
    shapes = [(4,)]
    boxes = [[(0, "w", np.array([[0], [1]]), np.array([[2], [4]]))]]
    with pytest.raises(InputError, match="overlapping regions of GM tensor 0"):
        X._dependencies(boxes, [0], shapes, 2)
    one = [[(0, "w", np.array([[0]]), np.array([[2]])), (0, "w", np.array([[1]]),
                                                          np.array([[3]]))]]
    assert _run(one, [0], shapes, 1) == [[]]      # one instance may write a granule twice


def test_granules_stay_as_fine_as_the_writes_past_the_cap(monkeypatch):
    """bench/sim/scale.py's kernel at 3 M rows (merged two rows per instance) needs 1.5 M
    granules of two rows; capped at 2^20 they were doubled to four rows, two instances of
    the launch shared one, and the expansion refused the file as overlapping writes. The
    cap now grows to twice the tensor's boxes: here with the cap at 8, 64 one-row instances."""
    doc = lower(trace(str(ROOT / "bench/sim/scale_kernel.py"), target="a2"), target="a2")
    monkeypatch.setattr(X, "GRANULE_CAP", 8)
    exp = X.expand(doc, {"R": 64})
    assert exp.n == 64
    assert int(exp.pred_ptr[-1]) == 0          # disjoint rows: no dependence
