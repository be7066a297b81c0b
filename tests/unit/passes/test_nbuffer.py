"""nbuffer: merged grid instances and N-buffered copy-ins compute what the plain programs do
(C and numpy, 1 and 2 threads, tails included), the merge factor is chosen at run time on
the sizes, and the simulator times the overlap it makes."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from libpypto import driver
from libpypto.analysis import bind as B
from libpypto.analysis.expand import expand

ROOT = pathlib.Path(__file__).resolve().parents[3]
PLAIN = "tensor-to-tile,assign-memory,fuse,forward,cse,dce,alloc,insert-sync,make-exec"


def lowered(name: str, target: str, pipeline=None):
    return driver.lower(driver.trace(str(ROOT / "examples" / f"{name}.py")), pipeline,
                        target=target)


def instances(doc, bind: dict) -> int:
    return expand(doc, B.bind(doc, {}, bind)).n


def test_the_merge_factor_is_chosen_at_run_time():
    doc = lowered("softmax", "a2")
    prog = next(op for op in doc.body if op.name == "program")
    assert prog.attrs["merge"] == [0, 2] and prog.attrs["nbuffer"] == {"ub": [2, 2]}
    assert instances(doc, {"x_0": 100}) == 13          # 13 row blocks, under 48 cores: 1
    assert instances(doc, {"x_0": 1525}) == 96         # 191 row blocks: 2 per task
    assert instances(doc, {"x_0": 757}) == 48          # 95: 2 per task, the last alone


def test_persistent_merge_runs_one_wave_of_tasks():
    """merge=persistent: ceil(blocks / cores) instances a task, so one wave of tasks, and the
    numpy backend computes what the plain program does (the merged tail instance too)."""
    pipe = PLAIN.replace("fuse,", "fuse,nbuffer{merge=persistent},")
    doc = lowered("softmax", "a2", pipe)
    plain = lowered("softmax", "a2", PLAIN)
    assert instances(doc, {"x_0": 757}) == 48          # 95 row blocks on 48 vector cores
    assert instances(doc, {"x_0": 100}) == 13          # 13: one each
    assert instances(plain, {"x_0": 757}) == 95
    bits = set()
    for d in (doc, plain):
        rec = driver.run(d, backend="numpy", bind={"x_0": 757}, seed=3, check=True)
        assert rec.body[0].attrs["verdict"] == "pass"
        bits.add(tuple(o["sha256"] for o in rec.body[0].attrs["outputs"]))
    assert len(bits) == 1


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name,target,bind", [
    ("softmax", "a2", {"x_0": 757}),       # 95 row blocks merged by 2: a lone tail instance
    ("layernorm", "a2", {"T": 3067}),      # gamma and beta loaded once per merged task
    ("matmul", "a2", {"M": 3067}),         # K steps in 2 L1 buffers, 2 column tiles a task
])
def test_merged_and_buffered_programs_compute_what_the_plain_ones_do(name, target, bind):
    """The numpy backend gives the same bits with and without nbuffer; the C the same bits
    for 1 and 2 threads, and passes. (The C of a merged program may fuse its elementwise
    runs otherwise than the plain one's, c_plan, and gcc's FMA contraction then changes
    the last bit: README, N-buffering.)"""
    nb = lowered(name, target)
    plain = lowered(name, target, PLAIN)
    assert any("nbuffer" in p.attrs for p in nb.body if p.name == "program")
    numpy_bits = set()
    for doc in (nb, plain):
        c_bits = set()
        for backend, threads in (("c", 1), ("c", 2), ("numpy", 1)):
            rec = driver.run(doc, backend=backend, bind=bind, threads=threads, seed=3,
                             check=True)
            a = rec.body[0].attrs
            assert a["verdict"] == "pass", (backend, a["checks"])
            assert a["sync_check"]["unsynced"] == 0
            (c_bits if backend == "c" else numpy_bits).add(tuple(o["sha256"]
                                                                 for o in a["outputs"]))
        assert len(c_bits) == 1
    assert len(numpy_bits) == 1


@pytest.mark.slow
@pytest.mark.needs_cc
def test_forced_merge_and_buffers_on_the_host():
    """The host's default is off (README, N-buffering); forced on, the merged programs with
    their copy-ins in two buffers run right in C and numpy."""
    pipe = PLAIN.replace("fuse,", "fuse,nbuffer{vec=2,cube=2,merge=always},")
    for name, bind in (("softmax", {"x_0": 203}), ("matmul", {"M": 200}),
                       ("rmsnorm", {"T": 37})):
        doc = lowered(name, "host", pipe)
        assert any(p.attrs.get("merge") for p in doc.body if p.name == "program")
        for backend in ("c", "numpy"):
            rec = driver.run(doc, backend=backend, bind=bind, seed=2, check=True)
            assert rec.body[0].attrs["verdict"] == "pass"


def test_buffers_overlap_loads_with_work_in_the_simulator():
    """GEMM fp16 -> fp32 at 3072^3 on a3 (cube tiles [128, 256, 64], stepK 4): with its
    copy-ins in two buffers MTE2 is the bound; single-buffered it is latency-bound."""
    src = driver.trace(str(ROOT / "bench" / "sim" / "gemm.py"), target="a3")
    size = {"M": 1536, "N": 1536, "K": 1536}
    one = driver.lower(src, PLAIN, target="a3")
    two = driver.lower(src, target="a3")
    r1 = driver.simulate(one, "a3", B.bind(one, {}, size))
    r2 = driver.simulate(two, "a3", B.bind(two, {}, size))
    assert r2["us"] < 0.8 * r1["us"]
    assert r2["bound"] == "MTE2" and r1["bound"] == "latency"
    assert np.isclose(r2["hbm_bytes"][1], r1["hbm_bytes"][1])
