"""The simulator on real programs: cost formulas against the published worked examples,
the dependences the flattener derives (Tensor mode from operands, Pro mode from its sync),
determinism, what --target-set changes, Pro clusters in waves, and the record."""
from __future__ import annotations

import pathlib

import pytest

from libpypto.analysis import bind as B
from libpypto.driver import lower, simulate, trace
from libpypto.errors import PyptoError, UsageError
from libpypto.sim.flatten import Context, Flattener
from libpypto.targets import load_target, override
from libpypto.targets.costs import Costs

ROOT = pathlib.Path(__file__).resolve().parents[3]
EX = ROOT / "examples"


# the default pipeline without nbuffer and insert-sync: programs whose order the flattener
# infers from their operands
UNSYNCED = "tensor-to-tile,assign-memory,fuse,forward,cse,dce,alloc,make-exec"


def lowered(name, target="a2", pipeline=None):
    return lower(trace(str(EX / name), target=target), pipeline, target=target)


def test_cube_cost_matches_the_published_worked_examples():
    c = Costs(load_target("a2"))
    assert c.cube(40, 60, 50, "f16") == 62          # pto-isa matrix docs: fp16 40x50 . 50x60
    assert c.cube(120, 50, 110, "f32") == 910       # fp32 120x110 . 110x50


def test_vector_cost_by_class_and_dtype():
    c = Costs(load_target("a2"))
    # 64 KiB = 256 repeats: simple 1, binary 2, exp fp16 4 and fp32 2 cycles per repeat
    assert c.vector("tabs", "f32", 65536) == 30 + 256
    assert c.vector("tadd", "f32", 65536) == 30 + 512
    assert c.vector("texp", "f16", 65536) == 30 + 1024
    assert c.vector("texp", "f32", 65536) == 30 + 512
    assert c.vector("tsin", "f32", 65536) == 30 + 16 * 256
    assert c.vector("tmul", "f32", 65536, scalar=True) == 30 + 256       # TMULS
    # a row reduction of 64 rows of 1 KiB: 2 per repeat plus a dependent level per halving
    assert c.vector("treduce", "f32", 65536, rows=64) == 30 + 512 + 18 * 3


def stream_of(doc, target="a2", env=None, inst=0):
    from libpypto.analysis.expand import expand
    exp = expand(doc, env or {})
    fl = Flattener(exp.programs, Costs(load_target(target)), pro=False)
    lc = exp.launches[0]
    prog = exp.programs[0]
    g = prog.attrs["grid_rank"]
    row = [int(x) for x in lc.scalars[inst]]
    e = {f"g{d}": row[d] for d in range(g)}
    e.update({s: row[g + k] for k, s in enumerate(prog.attrs["scalars"])})
    return fl, fl.flatten(0, e, Context(list(range(8))))


def test_tensor_mode_dependences_come_from_operands():
    doc = lowered("add.py", pipeline=UNSYNCED)
    fl, st = stream_of(doc, env=B.bind(doc, {}, {}))
    names = [fl.ops[0][i].name for i in st.op]
    assert names == ["tload", "tload", "tadd", "tstore"]
    assert st.preds[1] == (0,)                      # MTE2 is in order
    assert set(st.preds[2]) == {0, 1}               # the add reads both loaded tiles
    assert st.preds[3] == (2,)                      # the store reads the sum
    assert [st.gm[i] is not None for i in range(4)] == [True, True, False, True]


def test_tensor_mode_buffer_reuse_waits_for_readers():
    """matmul's K loop reloads the same L1 tiles: the next load waits for the extract that
    read the last one (write after read), so a single-buffered loop does not overlap."""
    doc = lowered("matmul.py", pipeline=UNSYNCED)
    fl, st = stream_of(doc, env=B.bind(doc, {}, {"M": 128}))
    names = [fl.ops[0][i].name for i in st.op]
    second_a = [i for i, n in enumerate(names) if n == "tload"][2]
    extracts = [i for i, n in enumerate(names[:second_a]) if n == "textract"]
    assert any(p in extracts for p in st.preds[second_a])


def pro_doc(name, bind=None, kernel=None):
    return trace(str(EX / "pro" / name), kernel=kernel, bind=bind or {}, target="a2")


def test_pro_mode_orders_by_its_sync_only():
    doc = pro_doc("vadd.py")
    progs = [op for op in doc.body if op.name == "program"]
    fl = Flattener(progs, Costs(load_target("a2")), pro=True)
    st = fl.flatten(0, {"x_0": 32, "block_num": 1, "g0": 0}, Context(list(range(3)), 0, 1))
    names = [fl.ops[0][i].name for i in st.op]
    add = names.index("tadd")
    wait = max(i for i in range(add) if names[i] == "sync_wait")
    assert wait in st.preds[add]                    # V waits for its flag ...
    sset = max(i for i in range(wait) if names[i] == "sync_set")
    assert sset in st.preds[wait]                   # ... which MTE2 set after the loads
    assert not any(names[p] == "tload" for p in st.preds[add])      # not the loads directly


def test_simulation_is_deterministic_and_recorded():
    doc = lowered("flash_attention.py")
    env = B.bind(doc, {}, {"S": 192})
    a, b = simulate(doc, "a2", env), simulate(doc, "a2", env)
    assert a == b
    assert a["cycles"] > a["launch_cycles"] > 0
    assert a["us"] == pytest.approx(a["cycles"] / 1.8e3, rel=1e-3)
    assert set(a["utilisation"]) == set(a["pipes"]) | {"HBM", "L2"}
    from libpypto.analysis.expand import expand
    assert len(a["tasks"]) == expand(doc, env).n     # every task instance ran, once
    for core, pipe, s, e, prog, op in a["events"]:
        assert a["launch_cycles"] <= s < e <= a["cycles"]


def test_more_hbm_bandwidth_speeds_a_memory_bound_kernel():
    doc = lowered("softmax.py")
    env = B.bind(doc, {}, {"x_0": 8192})
    slow = override(load_target("a2"), ["bandwidth.hbm_total=100", "l2.bytes=0"])
    fast = override(load_target("a2"), ["bandwidth.hbm_total=200", "l2.bytes=0"])
    s, f = simulate(doc, slow, env), simulate(doc, fast, env)
    assert s["bound"] == "HBM" and f["bound"] == "HBM"
    kernel = [r["cycles"] - r["launch_cycles"] for r in (s, f)]
    assert kernel[0] == pytest.approx(2 * kernel[1], rel=0.1)


def test_pro_clusters_run_in_waves():
    doc = pro_doc("vadd.py")
    one = simulate(doc, "a2", {"x_0": 48 * 16}, block_dim=48)
    two = simulate(doc, "a2", {"x_0": 96 * 16}, block_dim=96)    # 48 vector cores: 2 waves
    assert len(two["clusters"]) == 96
    assert {r[1] for r in two["clusters"]} == set(range(48))
    assert two["cycles"] - two["launch_cycles"] > 1.5 * (one["cycles"] - one["launch_cycles"])


def test_mixed_pro_kernel_cross_core_events():
    doc = pro_doc("flash_attention.py", {"ws_s_0": 96, "ws_p_0": 96, "ws_o_0": 96})
    r = simulate(doc, "a2", {"ws_s_0": 96, "ws_p_0": 96, "ws_o_0": 96}, block_dim=3)
    cores = {row[0]: row[1] for row in r["busy"]}
    assert sorted(set(cores.values())) == ["cube", "vector"]
    assert len([c for c, k in cores.items() if k == "vector"]) == 6


def test_override_errors():
    t = load_target("a2")
    for bad, msg in ((["nope=1"], "unknown key"), (["buffers.ub=0.5"], "integer"),
                     (["clock_ghz=0"], "positive"), (["l2.bytes=-3"], "non-negative")):
        with pytest.raises(UsageError, match=msg):
            override(t, bad)
    assert override(t, ["buffers.ub=98304"]).buffer("ub") == 98304
    assert t.buffer("ub") == 196608                 # the original is untouched


def test_half_the_ub_changes_the_lowering():
    """--target-set reaches the lowering too: a tile that fits 192 KiB but not 8 KiB."""
    small = override(load_target("a2"), ["buffers.ub=8192"])
    with pytest.raises(PyptoError, match="of UB per core but target a2 has 8 KiB"):
        lower(trace(str(EX / "softmax.py"), target=small), target=small)


SEQ_ROWS = '''
import libpypto as pypto


@pypto.jit
def seq_rows(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
             lens: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
             y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(lens.shape[0]):
        for j in pypto.loop(lens[b].min(16)):
            y[b * 16 + j:, 0:] = pypto.view(x, [1, 64], [b * 16 + j, 0]) * 2.0
'''


def test_data_dependent_loop_bounds_come_from_the_inputs(tmp_path):
    """A loop bound read from an input (lens[b]) is taken from the run's data: one
    simulated task instance per row the data asks for."""
    import numpy as np

    import libpypto as pypto
    path = tmp_path / "seq_rows.py"
    path.write_text(SEQ_ROWS)
    lens = np.array([3, 16, 0, 20], np.int32)
    x = np.ones((64, 64), np.float32)
    rec = pypto.run(trace(str(path), target="a2"), inputs={"x": x, "lens": lens,
                                                          "y": np.zeros_like(x)},
                    backend="numpy", target="a2")
    a = rec.body[0].attrs
    assert a["verdict"] == "pass"
    assert len(a["sim"]["tasks"]) == 3 + 16 + 0 + 16
