"""Every example, end to end on both backends, against its own numpy reference."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import libpypto as pypto
from libpypto.analysis import bind as B
from libpypto.runtime import data as D

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
FAST = {"softmax", "matmul", "flash_attention", "attention_proj"}      # in make check


def load(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}", ROOT / "examples" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def run_example(name, backend, threads=2, pipe="short"):
    m = load(name)
    ex = m.EXAMPLE
    doc = pypto.trace(str(ROOT / "examples" / f"{name}.py"))
    if pipe == "full":
        doc = pypto.emit(pypto.schedule(pypto.lower(doc)), backend)
    rec = pypto.run(doc, bind=ex["bind"], backend=backend, threads=threads, seed=1)
    a = rec.body[0].attrs
    return m, doc, a


def outputs_of(a):
    out = {}
    for o in a["outputs"]:
        out[o["name"]] = np.frombuffer(o["data"], dtype=D.np_dtype(o["dtype"])).reshape(o["shape"])
    return out


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in FAST else pytest.mark.slow)
                                  for n in EXAMPLES])
@pytest.mark.parametrize("backend", [pytest.param("c", marks=[pytest.mark.needs_cc, pytest.mark.slow]),
                                     "numpy"])
def test_example_matches_reference(name, backend):
    m, doc, a = run_example(name, backend)
    assert a["verdict"] == "pass", a["checks"]
    # independently: the example's own numpy reference on the same generated inputs
    env = B.bind(doc, {}, m.EXAMPLE["bind"])
    inputs = D.prepare(doc, {}, env, seed=1)
    roles = B.param_roles(doc)
    ins = {k: v for k, v in inputs.items() if roles[k] == "input"}
    want = m.reference(**ins)
    got = outputs_of(a)
    for k, w in want.items():
        c = D.compare(k, got[k], np.asarray(w).astype(got[k].dtype))
        assert c["ok"], c


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", EXAMPLES)
def test_full_pipe_equals_short_pipe(name):
    _, _, short = run_example(name, "c")
    _, _, full = run_example(name, "c", pipe="full")
    assert [o["sha256"] for o in short["outputs"]] == [o["sha256"] for o in full["outputs"]]


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", EXAMPLES)
def test_thread_count_does_not_change_bits(name):
    _, _, one = run_example(name, "c", threads=1)
    _, _, two = run_example(name, "c", threads=2)
    assert [o["sha256"] for o in one["outputs"]] == [o["sha256"] for o in two["outputs"]]
