"""set_semantic_label: the label of each traced op is carried through every level (tensor op,
kernel, block, task, run record) and pypto-prof shows time per label."""
from __future__ import annotations

import json

import numpy as np
import pytest

import libpypto as pypto
from libpypto import driver
from libpypto.prof import chrome_trace, tables


@pypto.jit
def two_parts(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
              y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
              z: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    pypto.set_semantic_label("attn")
    y[:] = pypto.exp(x)
    pypto.set_semantic_label("ffn")
    z[:] = pypto.sum(x, -1, keepdim=True) + x


def test_labels_reach_every_level_and_the_run_record():
    doc = two_parts.trace()
    ops = {op.name: op.attrs.get("label") for op in doc.walk() if op.name != "param"}
    assert ops["exp"] == "attn" and ops["sum"] == "ffn"
    tile = driver.lower(doc, "tensor-to-tile")
    assert {k.attrs["op"]: k.attrs.get("label") for k in tile.walk() if k.name == "kernel"} \
        == {"exp": "attn", "assemble": "ffn", "sum": "ffn", "add": "ffn"}
    exe = driver.lower(doc)
    labels = [t.attrs.get("labels") for t in exe.walk() if t.name == "task"]
    assert sorted(map(tuple, labels)) == [("attn",), ("ffn",)]
    rec = driver.run(exe, bind={"x_0": 40}, backend="numpy", threads=1)
    assert sorted(t["labels"][0] for t in rec.body[0].attrs["tasks"]) == ["attn", "ffn"]
    text = driver.dump_ir(rec, text=True).decode()       # the record reads back
    assert driver.parse_ir(text.encode()).body[0].attrs["tasks"] == rec.body[0].attrs["tasks"]


def test_prof_shows_time_per_label():
    rec = driver.run(driver.lower(two_parts.trace()), bind={"x_0": 40}, backend="numpy",
                     threads=1)
    out = tables(rec)
    head = out[out.index("label "):].splitlines()
    rows = {ln.split()[0]: int(ln.split()[1]) for ln in head[2:4]}
    assert rows == {"attn": 3, "ffn": 3}                 # cdiv(40, 16) instances each
    names = {e["name"] for e in chrome_trace(rec)["traceEvents"] if e["ph"] == "X"}
    assert any(n.startswith("[attn] ") for n in names) and \
        any(n.startswith("[ffn] ") for n in names)
    json.dumps(chrome_trace(rec))


def test_no_label_no_label_table():
    @pypto.jit
    def plain(x: pypto.Tensor([16, 64], pypto.DT_FP32), y: pypto.Tensor([16, 64], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 64)
        y[:] = x + 1.0
    rec = driver.run(driver.lower(plain.trace()), backend="numpy", threads=1)
    assert "label" not in tables(rec) and "labels" not in rec.body[0].attrs["tasks"][0]


def test_a_label_must_be_a_string():
    @pypto.jit
    def bad(x: pypto.Tensor([16, 64], pypto.DT_FP32), y: pypto.Tensor([16, 64], pypto.DT_FP32)):
        pypto.set_semantic_label(3)
        y[:] = x
    with pytest.raises(pypto.CompileError, match="set_semantic_label takes a string"):
        bad.trace()
