"""The instances' dependencies (analysis/expand._dependencies, done with whole-array
operations per launch) against a reference that follows every element of every tensor: the
last writer of each element and its readers since, launch by launch."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import libpypto as pypto
from libpypto.analysis import expand as X
from libpypto.errors import InputError

ROOT = pathlib.Path(__file__).resolve().parents[3]

# examples with tails, loops over launches, several programs and boxes of several granules
# (sizes that are no multiple of the tiles: 20 rows of 8-row tiles make 4-row granules)
NAMES = {"softmax": {"x_0": 20}, "matmul": {"M": 40}, "loops": {}, "rope": {"T": 9},
         "ffn": {}, "softmax_batch": {"B": 3}, "dynamic_shapes": {"M": 70, "N": 150},
         "rmsnorm_residual": {"T": 11}, "flash_attention": None}


def walked(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = pypto.emit(pypto.schedule(pypto.lower(pypto.trace(str(ROOT / "examples" /
                                                              f"{name}.py")))), "c")
    env = dict(mod.EXAMPLE["bind"] if NAMES[name] is None else NAMES[name])
    w = X._Walker(doc, env)
    w.data = {}
    w.walk(doc.body, dict(env))
    return w


def reference(boxes, first, shapes, total):
    """Element by element: RAW and WAW on the last writer, WAR on the readers since."""
    last_w = [np.full(max(1, int(np.prod(s))), -1, np.int64) for s in shapes]
    readers = [dict() for _ in shapes]
    preds = [set() for _ in range(total)]
    for ti, accs in enumerate(boxes):
        touched = []
        for gm, mode, lo, hi in accs:
            shape = shapes[gm]
            for i in range(lo.shape[0]):
                lo_i = np.clip(lo[i], 0, shape)
                hi_i = np.clip(hi[i], 0, shape)
                if np.any(hi_i <= lo_i):
                    continue
                mesh = np.ix_(*[np.arange(a, b) for a, b in zip(lo_i, hi_i)])
                cells = np.ravel_multi_index(np.broadcast_arrays(*mesh), shape).ravel() \
                    if len(shape) else np.zeros(1, np.int64)
                me = first[ti] + i
                w = last_w[gm][cells]
                preds[me].update(w[w >= 0].tolist())
                if mode == "w":
                    for c in cells.tolist():
                        preds[me].update(readers[gm].get(c, ()))
                touched.append((gm, mode, cells, me))
        for gm, mode, cells, me in touched:
            if mode == "r":
                for c in cells.tolist():
                    readers[gm].setdefault(c, set()).add(me)
        for gm, mode, cells, me in touched:
            if mode == "w":
                last_w[gm][cells] = me
                for c in cells.tolist():
                    readers[gm].pop(c, None)
    return [sorted(p) for p in preds]


def lists(ptr, idx) -> list:
    """The predecessor CSR (ptr, idx) as a list per instance."""
    return [idx[a:b].tolist() for a, b in zip(ptr[:-1], ptr[1:])]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_dependencies_match_the_element_level_reference(name):
    w = walked(name)
    first = [lc.first for lc in w.launches]
    shapes = [w.shapes[op] for op in w.gms]
    got = lists(*X._dependencies(w.boxes, first, shapes, w.count))
    assert got == reference(w.boxes, first, shapes, w.count)


def test_two_instances_of_a_launch_writing_one_granule_are_refused():
    lo = np.array([[0, 0], [0, 4]], np.int64)
    hi = np.array([[8, 8], [8, 12]], np.int64)        # columns 4..7 written by both
    with pytest.raises(InputError, match="overlapping"):
        X._dependencies([[(0, "w", lo, hi)]], [0], [(8, 16)], 2)
    # one instance writing its granules twice (two stores of one box) is no overlap
    twice = [(0, "w", lo[:1], hi[:1]), (0, "w", lo[:1], hi[:1])]
    assert lists(*X._dependencies([twice], [0], [(8, 16)], 1)) == [[]]
