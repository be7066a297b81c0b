"""pypto-run --target a2 on every example (Tensor mode and Pro): the host run still
verifies, and the record carries the simulated run (pypto.run(..., target="a2"))."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

import libpypto as pypto
from libpypto.driver import trace

ROOT = pathlib.Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "examples/pro").glob("*.py"))
FAST = {"softmax", "matmul", "vadd"}


def example(path):
    spec = importlib.util.spec_from_file_location(f"runex_{path.stem}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.EXAMPLE


@pytest.mark.parametrize("path", [pytest.param(p, id=p.relative_to(ROOT).as_posix(),
                                               marks=[] if p.stem in FAST else pytest.mark.slow)
                                  for p in FILES])
def test_run_with_target_a2(path):
    ex = example(path)
    target = ex.get("target", "a2")          # matmul_mxfp8: the 950 (its scale buffers)
    if path.parent.name == "pro":
        doc = trace(str(path), kernel=ex.get("kernel"), bind=ex.get("bind", {}),
                    consts=ex.get("const"), target=target)
        rec = pypto.run(doc, bind=ex.get("bind", {}), backend="numpy", seed=1, target=target,
                        block_dim=ex.get("block_dim", 1))
    else:
        doc = trace(str(path), target="a2")
        rec = pypto.run(doc, bind=ex.get("bind", {}), backend="numpy", seed=1, target="a2")
    a = rec.body[0].attrs
    assert a["verdict"] == "pass", a["checks"]
    sim = a["sim"]
    assert sim["target"] == target and a["environment"]["target"] == target
    assert sim["cycles"] > sim["launch_cycles"] > 0
    assert sim["events_total"] >= len(sim["events"]) > 0
    assert sim["bound"] in set(sim["pipes"]) | {"HBM", "L2", "latency"}
