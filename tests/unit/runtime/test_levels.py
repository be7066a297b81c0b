"""Per-level numeric verification (pypto-run --check-levels, --dump-tensors): every example
agrees with its tensor level after every lowering pass, and a pass that breaks the numbers is
named, with the instruction that wrote the first wrong element."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from libpypto import driver
from libpypto.passes import pipeline

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
LOWERING = ["fold-scale", "sink-views", "tensor-to-tile", "assign-memory", "fuse", "mix-fuse", "l1-reuse",
            "nbuffer", "forward", "cse", "dce", "ooo-schedule", "alloc", "insert-sync",
            "make-exec", "gm-reuse"]


def sizes(doc) -> dict:
    return {s: 37 for s, v in doc.attrs["symbols"].items() if v["kind"] != "static"}


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_agrees_at_every_level(name):
    doc = driver.trace(str(ROOT / "examples" / name))
    rows = driver.check_levels(doc, bind=sizes(doc))
    assert [r["after"] for r in rows] == ["trace"] + LOWERING
    assert all(r["verdict"] == "pass" for r in rows[1:]), rows


def _exp_to_abs(doc, *, target):
    """A broken pass: exp becomes abs. (Turning `x - max` into `x + max` would not do:
    softmax is invariant under a shift of each row.)"""
    from libpypto.ir.core import copy_doc
    doc = copy_doc(doc)
    for op in doc.walk():
        if op.name == "texp":
            op.name = "tabs"
    return doc


@pytest.fixture
def broken_pass(monkeypatch):
    real = pipeline.get_pass
    monkeypatch.setitem(pipeline.PASSES, "broken", ("block", "block", "-"))
    monkeypatch.setattr(pipeline, "get_pass",
                        lambda n: _exp_to_abs if n == "broken" else real(n))


def test_a_broken_pass_is_named_with_the_store_that_wrote_the_wrong_element(broken_pass):
    doc = driver.trace(str(ROOT / "examples" / "softmax.py"))
    doc = driver.lower(doc, "tensor-to-tile,assign-memory,fuse,broken,forward")
    doc.producer.append({"tool": "pypto-lower", "options": {
        "pipeline": "tensor-to-tile,assign-memory,fuse,broken,forward,alloc,make-exec"}})
    rows = driver.check_levels(doc, bind={"x_0": 20})
    assert [r["verdict"] for r in rows] == ["reference", "pass", "pass", "pass", "fail"]
    bad = rows[-1]
    assert (bad["level"], bad["after"]) == ("block", "broken")
    assert bad["check"]["name"] == "y" and bad["mismatches"] > 20 * 1024 // 2
    assert bad["where"].startswith("last written by tstore in block b0 at softmax.py:13")


def test_the_given_file_is_checked_too():
    doc = driver.lower(driver.trace(str(ROOT / "examples" / "softmax.py")))
    for op in doc.walk():          # a hand-edited exec file: the division became a product
        if op.name == "tdiv":
            op.name = "tmul"
    rows = driver.check_levels(doc, bind={"x_0": 9})
    assert rows[-1]["after"] == "(the given exec file)" and rows[-1]["verdict"] == "fail"
    assert all(r["verdict"] == "pass" for r in rows[1:-1])


def test_dump_tensors_writes_each_value_by_order_op_and_line(tmp_path):
    doc = driver.trace(str(ROOT / "examples" / "softmax.py"))
    x = np.random.default_rng(1).standard_normal((5, 1024), dtype=np.float32)
    rows = driver.check_levels(doc, inputs={"x": x}, bind={"x_0": 5}, dump=str(tmp_path / "t"))
    files = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert files == ["00000-amax-line11.npy", "00001-sub-line12.npy", "00002-exp-line12.npy",
                     "00003-sum-line13.npy", "00004-div-line13.npy"]
    assert rows[0]["dumped"] == 5
    m = x.max(-1, keepdims=True)
    np.testing.assert_array_equal(np.load(tmp_path / "t" / files[0]), m)
    np.testing.assert_allclose(np.load(tmp_path / "t" / files[2]), np.exp(x - m), rtol=1e-6)


def test_dump_tensors_into_a_file_is_refused(tmp_path):
    from libpypto.errors import UsageError
    f = tmp_path / "f"
    f.write_text("")
    doc = driver.trace(str(ROOT / "examples" / "softmax.py"))
    with pytest.raises(UsageError, match="exists and is not a directory"):
        driver.check_levels(doc, bind={"x_0": 5}, dump=str(f))
