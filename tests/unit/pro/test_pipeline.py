"""pl.pipeline (libpypto/prolang/pipeline.py): the cross-core events the tracer inserts
(where, which ids, which pipes), the preload schedule, bit-identity with the hand-written
twin (examples/pro/matmul_epilogue.py) in process and through the CLI pipe for 1 and 2
threads, the ring checks at trace time, and the L0C -> UB move in every acc_to_vec_mode
against an independent numpy formula."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import libpypto.pro as pl
from libpypto import driver
from libpypto.errors import CompileError, PyptoError

from . import pipeline_kernels as K
from .test_examples import load

ROOT = pathlib.Path(__file__).resolve().parents[3]
PRO = ROOT / "examples" / "pro"
MLP = ROOT / "tests" / "golden" / "Inputs" / "pro_pipeline.py"
BIN = pathlib.Path(sys.executable).parent


def _ops(prog) -> list:
    """A program as nested lists of op names (loops as ("for", [...]))."""
    out = []
    for op in prog:
        if op.name == "for":
            out.append(("for", _ops(op.regions[0])))
        elif op.name not in ("tile", "arg", "sync_set", "sync_wait"):
            out.append(op.name)
    return out


def _programs(doc) -> dict:
    return {op.attrs["core"]: op.regions[0] for op in doc.body if op.name == "program"}


def _text(path, *args) -> str:
    r = subprocess.run([str(BIN / "pypto-trace"), str(path), *args, "-S"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


# -- the inserted events ----------------------------------------------------------------------

def test_inserted_events_of_the_example_in_the_trace_text():
    """pypto-trace -S: the cube waits slot j's release (bwd 2 + j % 2) on FIX before its
    L0C -> UB move and sets slot j full (fwd j % 2) on FIX after it; the vector cores free
    both slots first (2, 3 on V), wait fwd before their first read and set bwd after their
    last read (the cast); the cube drains the two credits left after its loop."""
    text = _text(PRO / "matmul_epilogue_pipelined.py")
    text = text[text.index("\nprogram "):]
    keep = re.compile(r"^\s*(cross_\w+ \{[^}]*\}|tmov_acc2vec|tadd|tcvt|for|\})")
    got = [re.sub(r" @.*$|%\d+(, )?", "", m.group(0)).strip() for line in text.splitlines()
           if (m := keep.match(line))]
    j = "(i0 - g0) // block_num"
    jv = "(i0 - g0 // 2) // block_num"
    n = "max(0, cdiv(10 - g0, block_num))"
    assert got == [
        "for", f'cross_wait {{event_id={j} % 2 + 2, mode="INTRA_BLOCK", pipe="FIX"}}',
        "tmov_acc2vec", f'cross_set {{event_id={j} % 2, mode="INTRA_BLOCK", pipe="FIX"}}', "}",
        f'cross_wait {{event_id={n} % 2 + 2, mode="INTRA_BLOCK", pipe="FIX"}}',
        f'cross_wait {{event_id=({n} + 1) % 2 + 2, mode="INTRA_BLOCK", pipe="FIX"}}', "}",
        'cross_set {event_id=2, mode="INTRA_BLOCK", pipe="V"}',
        'cross_set {event_id=3, mode="INTRA_BLOCK", pipe="V"}',
        "for", f'cross_wait {{event_id={jv} % 2, mode="INTRA_BLOCK", pipe="V"}}', "tadd",
        "tcvt", f'cross_set {{event_id=({jv} + 2) % 2 + 2, mode="INTRA_BLOCK", pipe="V"}}',
        "}", "}"]
    assert "tmov_acc2vec %" in text and 'mode="DualModeSplitM"' in text


def test_the_events_name_the_stage_call_and_stage_lines():
    doc = load(PRO / "matmul_epilogue_pipelined.py").matmul_epilogue_pipelined.trace(
        {}, {}, {"ub": 196608, "l1": 524288, "l0a": 65536, "l0b": 65536, "l0c": 131072})
    cube = _programs(doc)["cube"]
    loop = next(op for op in cube if op.name == "for")
    lines = {op.name: op.loc.line for op in loop.regions[0]}
    src = (PRO / "matmul_epilogue_pipelined.py").read_text().splitlines()
    assert "mm_stage(" in src[lines["cross_wait"] - 1]          # the stage call
    assert "acc_to_vec_mode" in src[lines["tmov_acc2vec"] - 1]  # the stage's own line


def _mlp(**cfg):
    mod = load(MLP)
    k = pl.jit(tiling_key=mod.Key, pipeline=pl.pipeline.PipelineConfig(**cfg))(mod.mlp.fn)
    return mod, k


def _trace(k, key):
    return k.trace({}, key, {"ub": 196608, "l1": 524288, "l0a": 65536, "l0b": 65536,
                             "l0c": 131072})


def test_preload_puts_the_first_stage_ahead_on_its_core():
    """Two cube stages (up, down) and one vector stage (act): with preload the cube gets a
    prologue (up alone), a steady loop (up of i, then down of i - preload) and an epilogue
    (down alone); the vector core one loop; sync_only keeps the serial order."""
    for cfg, credits in (({"preload": 2}, 2), ({"preload": 1}, 1)):
        progs = _programs(_trace(_mlp(**cfg)[1], {"Fault": 0}))
        cube = [x for x in _ops(progs["cube"]) if isinstance(x, tuple)]
        assert [("tmov_acc2vec" in b, "tstore" in b) for _, b in cube] == \
            [(True, False), (True, True), (False, True)]
        steady = cube[1][1]
        mv = steady.index("tmov_acc2vec")     # up's move, then down's textract and store
        assert mv < steady.index("textract", mv) < steady.index("tstore")
        vec = _ops(progs["vector"])
        assert vec[:credits] == ["cross_set"] * credits and vec[credits][0] == "for"
        assert vec[credits + 1:] == ["cross_wait"] * credits
    progs = _programs(_trace(_mlp(sync_only=True)[1], {"Fault": 0}))
    loops = [x for x in _ops(progs["cube"]) if isinstance(x, tuple)]
    assert len(loops) == 1 and loops[0][1].index("tmov_acc2vec") < loops[0][1].index("tstore")


@pytest.mark.needs_cc
@pytest.mark.parametrize("cfg", [{"preload": 2}, {"preload": 1}, {"sync_only": True}])
def test_the_preload_schedule_runs_right(cfg):
    """The three-stage kernel against numpy, for block_dims leaving clusters with 0, 1, 2
    and more steps; numpy runner and C, 1 and 2 threads, bit-identical."""
    mod, k = _mlp(**cfg)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((mod.M, mod.K)).astype(np.float16)
    w1 = (rng.standard_normal((mod.K, mod.H)) / 8).astype(np.float16)
    w2 = (rng.standard_normal((mod.H, mod.N)) / 8).astype(np.float16)
    want = mod.reference(a, w1, w2)["out"]
    first = None
    for bd in (1, 3, 9):
        for backend in ("numpy", "c"):
            for threads in (1, 2):
                out = np.zeros((mod.M, mod.N), np.float32)
                k.backend, k.threads = backend, threads
                k[None, bd, {"Fault": 0}](a, w1, w2, out)
                first = out if first is None else first
                assert out.tobytes() == first.tobytes(), (bd, backend, threads)
    np.testing.assert_allclose(first, want, rtol=2e-3, atol=2e-3)


# -- the twin ---------------------------------------------------------------------------------

def _inputs(mod):
    rng = np.random.default_rng(7)
    return (rng.standard_normal((mod.M, mod.K)).astype(np.float16),
            rng.standard_normal((mod.K, mod.N)).astype(np.float16),
            rng.standard_normal((1, mod.N)).astype(np.float32))


@pytest.mark.needs_cc
@pytest.mark.parametrize("backend", ["numpy", "c"])
@pytest.mark.parametrize("threads", [1, 2])
def test_pipelined_is_bit_identical_to_its_manual_twin(backend, threads):
    auto = load(PRO / "matmul_epilogue_pipelined.py")
    manual = load(PRO / "matmul_epilogue.py")
    a, b, bias = _inputs(auto)
    outs = []
    for k in (auto.matmul_epilogue_pipelined, manual.matmul_epilogue):
        out = np.zeros((auto.M, auto.N), np.float16)
        k.backend, k.threads = backend, threads
        k[3](a, b, bias, out)
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    want = auto.reference(a, b, bias)["out"]
    np.testing.assert_allclose(outs[0].astype(np.float32), want, rtol=2e-3, atol=2e-3)


@pytest.mark.needs_cc
def test_pipelined_and_twin_agree_through_the_cli_pipe(tmp_path):
    got = {}
    for name in ("matmul_epilogue_pipelined", "matmul_epilogue"):
        for threads in (1, 2):
            npz = tmp_path / f"{name}_{threads}.npz"
            cmd = (f"{BIN / 'pypto-trace'} {PRO / (name + '.py')} | {BIN / 'pypto-lower'} | "
                   f"{BIN / 'pypto-run'} --block-dim 3 --threads {threads} --outputs {npz} "
                   f"-o /dev/null")
            r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True,
                               text=True, timeout=300)
            assert r.returncode == 0, r.stderr
            assert f"{name}: pass" in r.stderr and "race checker on" in r.stderr
            got[name, threads] = np.load(npz)["out"]
    ref = got["matmul_epilogue", 1]
    assert all(v.tobytes() == ref.tobytes() for v in got.values())


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fault,line,msg", [
    (1, "fwd_ids=[4], bwd_ids=[6]", "runs 2 iterations ahead, so 2 slots are in flight, but "
                                    "the group has 1: give it at least 2 slots"),
    (2, "pl.relu(y16, y16)", "the sections only call @pl.pipeline.stage functions"),
    (3, "fwd_ids=[4, 5])", "bwd_ids must list 2 event ids 0-15"),
    (4, "acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM", "writes a Vec tile of shape "
                                                          "[16, 64]")])
def test_trace_time_errors(fault, line, msg):
    with pytest.raises(CompileError) as e:
        driver.trace(str(MLP), "mlp", {"Fault": fault})
    assert msg in str(e.value)
    src = MLP.read_text().splitlines()
    assert line in " ".join(src[e.value.loc.line - 1:e.value.loc.line + 1])   # the statement


def test_a_ring_must_be_written_and_read():
    with pytest.raises(CompileError, match="only writes it"):
        _trace(K.ring_never_read, {})


def test_bad_config_and_misplaced_moves():
    with pytest.raises(CompileError, match="takes a pl.pipeline.PipelineConfig"):
        pl.jit(pipeline=2)(K.ring_never_read.fn)
    with pytest.raises(CompileError, match="preload must be an int >= 0"):
        pl.jit(pipeline=pl.PipelineConfig(preload=-1))(K.ring_never_read.fn)
    with pytest.raises(CompileError, match="use it in pl.section_cube"):
        _trace(K.acc2vec_in_vector_section, {})


def test_a_stage_outside_a_pipelined_loop_is_a_plain_call():
    x = np.ones((16, 64), np.float32)
    K.stage_outside_a_section(x)
    assert not x.any()


# -- the L0C -> UB move -----------------------------------------------------------------------

def _split(p: np.ndarray, mode: int, r: int, c: int) -> np.ndarray:
    """The documented split (move.md): what each vector core's tile holds, stacked."""
    R, C = K.SHAPES[mode]
    out = np.zeros((64, 64), np.float32)
    v = p[:r, :c]
    if mode in (0, 1):
        out[mode * R:mode * R + r, :c] = v
    elif mode == 2:
        h = (r + 1) // 2                   # M rounded up to even, halved
        out[:h, :c], out[R:R + r - h, :c] = v[:h], v[h:]
    else:
        h = min(c, (c + 31) // 32 * 32 // 2)  # N rounded up to 32, halved
        out[:r, :h], out[R:R + r, :c - h] = v[:, :h], v[:, h:]
    return out


@pytest.mark.needs_cc
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("rows,cols", [(32, 64), (31, 64), (7, 40), (32, 33)])
def test_acc_to_vec_modes(mode, rows, cols):
    rng = np.random.default_rng(mode)
    a = rng.standard_normal((32, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    want = _split(a.astype(np.float32) @ b.astype(np.float32), mode, rows, cols)
    outs = []
    for backend in ("numpy", "c"):
        out = np.zeros((64, 64), np.float32)
        K.ACC2VEC[mode].backend = backend
        K.ACC2VEC[mode](a, b, out, rows, cols)
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-4)


def test_dropping_an_inserted_event_is_caught():
    """Each event the tracer inserted matters: without the cube's wait for a free slot its
    move races the vector cores' reads of the slot (or a set is never waited)."""
    k = load(PRO / "matmul_epilogue_pipelined.py").matmul_epilogue_pipelined
    doc = driver.trace(str(PRO / "matmul_epilogue_pipelined.py"), k.name)
    events = [(p, i) for p in _programs(doc).values() for i, op in enumerate(p)
              if op.name.startswith("cross_")]
    loops = [op for p in _programs(doc).values() for op in p if op.name == "for"]
    inner = [(lp.regions[0], i) for lp in loops for i, op in enumerate(lp.regions[0])
             if op.name.startswith("cross_")]
    assert len(events) == 4 and len(inner) == 4
    for region, i in events + inner:
        op = region.pop(i)
        try:
            with pytest.raises(PyptoError, match="race|never waited|deadlock"):
                driver.run(doc, backend="numpy", block_dim=3, check=True)
        finally:
            region.insert(i, op)


def test_the_example_with_a_preload_deeper_than_its_ring():
    """The example's 2-slot ring with preload=3: 3 tiles would be in flight in 2 slots."""
    k = load(PRO / "matmul_epilogue_pipelined.py").matmul_epilogue_pipelined
    deep = pl.jit(pipeline=pl.PipelineConfig(preload=3))(k.fn)
    with pytest.raises(CompileError, match=r"runs 3 iterations ahead, so 3 slots are in "
                                           r"flight, but the group has 2"):
        _trace(deep, {})
    vec = _ops(_programs(_trace(pl.jit(pipeline=pl.PipelineConfig(preload=1))(k.fn),
                                {}))["vector"])
    assert vec[:2] == ["tload", "cross_set"] and vec[2][0] == "for"   # one credit, one ahead


@pytest.mark.needs_cc
def test_a_runtime_branch_in_a_stage():
    """Stages get the kernel body's rewrite: `if t % 2 == 0` records both arms; the ring's
    events stay outside the branch: the wait before it on the pipe of the first access
    (V, inside), the release after the slot's last read, the store (MTE3)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((192, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    p = (a.astype(np.float32) @ b.astype(np.float32)).reshape(6, 32, 64)
    want = np.where((np.arange(6) % 2 == 0)[:, None, None], np.maximum(p, 0), -p)
    outs = []
    for backend in ("numpy", "c"):
        out = np.zeros((192, 64), np.float32)
        K.branchy.backend = backend
        K.branchy[2](a, b, out)
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_allclose(outs[0], want.reshape(192, 64), rtol=1e-5, atol=1e-4)
    vec = _programs(_trace(K.branchy, {}))["vector"]
    loop = next(op for op in vec if op.name == "for").regions[0]
    body = [op for op in loop if op.name not in ("tile", "sync_set", "sync_wait")]
    assert [op.name for op in body] == ["cross_wait", "if", "tstore", "cross_set"]
    assert (body[0].attrs["pipe"], body[3].attrs["pipe"]) == ("V", "MTE3")  # first, last use
