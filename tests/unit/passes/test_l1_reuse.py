"""l1-reuse: merged cube blocks load shared L1 boxes once (fewer GM bytes on the simulator,
a shorter run where the cores stay busy) and compute the same bits on the host."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import libpypto as pypto
from libpypto.driver import simulate
from libpypto.passes import DEFAULT_PIPELINE

ROOT = pathlib.Path(__file__).resolve().parents[3]


def pipeline(option: str) -> str:
    return DEFAULT_PIPELINE.replace("l1-reuse", f"l1-reuse{{{option}}}")


def sim(doc) -> tuple:
    """(simulated us, GM bytes the cores loaded: HBM reads and L2 hits, task ops)."""
    r = simulate(doc, "a2", {})
    return r["us"], r["hbm_bytes"][0] + r["l2_hit_bytes"], \
        sum(1 for op in doc.walk() if op.name == "task")


def test_ffn_swiglu_gate_and_up_share_their_load_of_h():
    doc = pypto.trace(str(ROOT / "examples/ffn_swiglu.py"), target="a2")
    _, apart, tasks_apart = sim(pypto.lower(doc, pipeline("enable=false"), target="a2"))
    _, merged, tasks_merged = sim(pypto.lower(doc, pipeline("factor=2"), target="a2"))
    assert tasks_merged == tasks_apart - 1
    # h is [16, 128] bf16: 4 KiB that each of the 4 merged instances no longer loads twice
    assert apart - merged == 4 * 16 * 128 * 2


def test_automatic_reuse_shortens_a_busy_ffn():
    sizes = {"h_0": 512, "h_1": 256, "w_gate_1": 1024, "w_up_1": 1024, "w_down_1": 256}
    doc = pypto.trace(str(ROOT / "bench/sim/ffn_swiglu.py"), target="a2", bind=sizes)
    us_apart, apart, tasks_apart = sim(pypto.lower(doc, pipeline("enable=false"), target="a2"))
    us_auto, auto, tasks_auto = sim(pypto.lower(doc, target="a2"))
    assert tasks_auto == tasks_apart - 1 and auto < apart and us_auto < us_apart


TWO = '''
import libpypto as pypto

@pypto.jit
def two(x: pypto.Tensor[[32, 512], pypto.DT_FP32], wa: pypto.Tensor[[512, 64], pypto.DT_FP32],
        wb: pypto.Tensor[[512, 64], pypto.DT_FP32], ya: pypto.Tensor[[32, 64], pypto.DT_FP32],
        yb: pypto.Tensor[[32, 64], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([32, 32], [128, 256], [32, 32])
    ya[:] = pypto.matmul(x, wa, pypto.DT_FP32)
    yb[:] = pypto.matmul(x, wb, pypto.DT_FP32)
'''


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=[pytest.mark.needs_cc,
                                                                       pytest.mark.slow])])
def test_fused_k_loops_compute_the_same_bits(op_runner, backend):
    rng = np.random.default_rng(3)
    inputs = {k: rng.standard_normal(s).astype(np.float32)
              for k, s in (("x", (32, 512)), ("wa", (512, 64)), ("wb", (512, 64)))}
    apart = op_runner.run("two", TWO, inputs, "a2", backend, pipeline=pipeline("enable=false"))
    merged = op_runner.run("two", TWO, inputs, "a2", backend, pipeline=pipeline("factor=2"))
    assert len(merged[0]) == len(apart[0]) - 1          # one task fewer
    for k in ("ya", "yb"):
        assert merged[1][k].tobytes() == apart[1][k].tobytes()
        np.testing.assert_allclose(merged[1][k], inputs["x"] @ inputs["w" + k[1]], rtol=1e-4,
                                   atol=1e-3)


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name,factor", [("ffn_swiglu", 2), ("attention_proj", 3)])
def test_examples_compute_the_same_bits(name, factor):
    doc = pypto.trace(str(ROOT / "examples" / f"{name}.py"), target="a2")
    shas = []
    for option in ("enable=false", f"factor={factor}"):
        low = pypto.lower(doc, pipeline(option), target="a2")
        rec = pypto.run(low, backend="c", threads=2, seed=1)     # static sizes
        shas.append([o["sha256"] for o in rec.body[0].attrs["outputs"]])
    assert shas[0] == shas[1]
