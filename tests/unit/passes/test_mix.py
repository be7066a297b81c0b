"""fold-scale, mix-fuse and the mixed programs they make (passes/fold_scale.py,
passes/mix_fuse.py, ir/mix_ops.py, runtime/mix_check.py, the simulator's clusters)."""
import pathlib

import pytest

import libpypto as pypto
from libpypto.analysis.expand import expand
from libpypto.errors import UsageError
from libpypto.ir.core import copy_doc
from libpypto.ir.mix_ops import clustered
from libpypto.runtime import mix_check
from libpypto.runtime.pro_check import SyncError

ROOT = pathlib.Path(__file__).resolve().parents[3]
FA = str(ROOT / "bench" / "sim" / "flash_attention.py")
EVENTS = ("cross_set", "cross_wait")


# flash attention's shape, small: scores on the cube (32-row tiles), exp and the cast to
# fp16 on the vector cores (16-row tiles: two per cube tile), P V under is_loop_begin / else,
# the add, the last step's copy out
TINY = '''
import libpypto as pypto

@pypto.jit
def tfa(q: pypto.Tensor[["S", 32], pypto.DT_FP16], k: pypto.Tensor[["S", 32], pypto.DT_FP16],
        v: pypto.Tensor[["S", 32], pypto.DT_FP16], o: pypto.Tensor[["S", 32], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
    pypto.set_vec_tile_shapes(16, 32)
    acc = pypto.tensor([q.shape[0], 32], pypto.DT_FP32, "acc")
    for j in pypto.loop(k.shape[0] // 32):
        kj = pypto.view(k, [32, 32], [j * 32, 0])
        vj = pypto.view(v, [32, 32], [j * 32, 0])
        s = pypto.matmul(q, kj, pypto.DT_FP32, b_trans=True)
        p = pypto.cast(pypto.exp(s * 0.125), pypto.DT_FP16)
        if pypto.is_loop_begin(j):
            acc[:] = pypto.matmul(p, vj, pypto.DT_FP32)
        else:
            acc[:] = acc + pypto.matmul(p, vj, pypto.DT_FP32)
        if pypto.is_loop_end(j):
            o[:] = acc
'''


@pytest.fixture(scope="module")
def fa_a2():
    return pypto.lower(pypto.trace(FA, target="a2"), target="a2")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("mix") / "tfa.py"
    path.write_text(TINY)
    return pypto.trace(str(path), target="a2")


def mixed(doc, preload=2, slack=1):
    return pypto.lower(doc, f"fold-scale,tensor-to-tile,assign-memory,fuse,"
                            f"mix-fuse{{preload={preload},slack={slack}}},forward,cse,dce,"
                            f"alloc,make-exec", target="a2")


def programs(doc):
    return [op for op in doc.body if op.name == "program"]


def tasks(doc):
    return [op for op in doc.walk() if op.name == "task"]


def sha(rec):
    return [o["sha256"] for o in rec.body[0].attrs["outputs"]]


# -- fold-scale -------------------------------------------------------------------------------

SCALED = '''
import libpypto as pypto

@pypto.jit
def k(x: pypto.Tensor[["N", 64], pypto.DT_FP32], y: pypto.Tensor[["N", 64], pypto.DT_FP32],
      z: pypto.Tensor[["N", 64], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 64)
    n = x.shape[0]
    a = pypto.tensor([n, 64], pypto.DT_FP32, "a")
    b = pypto.tensor([n, 64], pypto.DT_FP32, "b")
    for j in pypto.loop(3):
        s = pypto.exp(x) * 0.37
        t = pypto.exp(x) * -1.75
        if pypto.is_loop_begin(j):
            a[:] = pypto.exp(s - pypto.amax(s, -1, keepdim=True))
            b[:] = t - pypto.amax(t, -1, keepdim=True)
        else:
            a[:] = a + pypto.exp(s - pypto.amax(s, -1, keepdim=True))
            b[:] = b + (t - pypto.amin(t, -1, keepdim=True))
        if pypto.is_loop_end(j):
            y[:] = a
            z[:] = b
'''


def test_fold_scale_is_bit_exact(tmp_path):
    """Folded (the default pipeline) and unfolded (the same passes without fold-scale) give
    the same bits, a negative scale (amax and amin swap) included; no multiplication is left
    in front of the arms."""
    src = tmp_path / "scaled.py"
    src.write_text(SCALED)
    doc = pypto.trace(str(src))
    folded = pypto.lower(doc)
    plain = pypto.lower(doc, "tensor-to-tile,assign-memory,fuse,forward,cse,dce,alloc,"
                             "make-exec")
    (loop,) = [op for op in pypto.lower(doc, "fold-scale").body if op.name == "loop"]
    assert not any(op.name == "mul" for op in loop.regions[0])      # into the arms
    a = pypto.run(folded, bind={"N": 40}, backend="numpy")
    b = pypto.run(plain, bind={"N": 40}, backend="numpy")
    assert sha(a) == sha(b)
    text = pypto.ir.text.print_doc(pypto.lower(doc, "fold-scale"))
    assert "amin %" in text and "amax %" in text     # the negative scale swapped one


# -- mix-fuse ---------------------------------------------------------------------------------

def test_flash_attention_is_one_mixed_program_on_a2(fa_a2):
    """The KV loop is one task of one program per cluster (was 7 programs per step); the
    scores make a ring of preload + 1 + slack = 4 slots; the cast to fp16 stays with the
    exp."""
    (prog,) = programs(fa_a2)
    assert prog.attrs["core"] == "mixed" and clustered(prog)
    assert len(tasks(fa_a2)) == 1
    assert not any(op.name == "loop" for op in fa_a2.body)
    sections = {(op.attrs["core"], op.attrs.get("sub")) for op in prog.walk()
                if op.name == "section"}
    assert sections == {("cube", None), ("vector", 0), ("vector", 1)}
    rings = [op for op in fa_a2.body if op.name == "gm" and op.result.type.shape[0] == 4]
    assert len(rings) >= 1
    core = None
    for op in prog.walk():
        if op.name == "section":
            core = op.attrs["core"]
        elif op.name in ("tcvt", "texp"):
            assert core == "vector"         # the cast is computed where the exp is


def test_mix_fuse_leaves_the_host_and_disabled_runs_alone():
    doc = pypto.trace(FA, target="a2")
    host = pypto.lower(pypto.trace(FA))
    assert not any(clustered(p) for p in programs(host))
    off = pypto.lower(doc, "fold-scale,tensor-to-tile,assign-memory,fuse,mix-fuse{enable=false},"
                           "forward,cse,dce,alloc,make-exec", target="a2")
    assert not any(clustered(p) for p in programs(off)) and len(programs(off)) > 1
    with pytest.raises(UsageError, match="preload must be an int >= 0"):
        pypto.lower(doc, "fold-scale,tensor-to-tile,assign-memory,fuse,mix-fuse{preload=-1}",
                    target="a2")


@pytest.mark.parametrize("preload", [0, 1, 2])
def test_mixed_program_matches_numpy(tiny, preload):
    """Run on the host (the program order is one valid order of the whole cluster),
    verified against the tensor graph; the same bits for 1 and 2 threads; S = 80: cube
    tiles of 32 rows split over the two vector cores, the last cluster's vector instance past
    the tail (2 g0 + 1 = 5 of a grid of 5) skipped."""
    doc = mixed(tiny, preload)
    assert any(clustered(p) for p in programs(doc))
    one = pypto.run(doc, bind={"S": 80}, backend="numpy", threads=1)
    two = pypto.run(doc, bind={"S": 80}, backend="numpy", threads=2)
    assert one.body[0].attrs["verdict"] == "pass"
    assert sha(one) == sha(two)


def test_checker_accepts_the_mixed_program_and_refuses_any_event_dropped(tiny):
    """The race checker (runtime/mix_check.py) accepts the mixed program; dropping any one
    cross-core set or wait is refused (a deadlock, or a set never waited). Without slack
    the rings' back edges are events of their own (6 ids); with a slot of slack (the
    default) the hand-overs imply them (3)."""
    assert mix_check.check(mixed(tiny), {"S": 96}) == 3
    (prog,) = programs(mixed(tiny))
    assert len({op.attrs["event_id"] for op in prog.walk() if op.name in EVENTS}) == 3
    doc = mixed(tiny, slack=0)
    assert mix_check.check(doc, {"S": 96}) == 3
    (prog,) = programs(doc)
    events = [op for op in prog.walk() if op.name in EVENTS]
    assert len({op.attrs["event_id"] for op in events}) == 6
    exp = expand(doc, {"S": 64})
    for i in range(len(events)):
        (variant,) = programs(_without(doc, lambda op, k=[0]: _nth(op, k, i)))
        with pytest.raises(SyncError):
            mix_check.check_expansion(exp, {prog.attrs["name"]: variant})


@pytest.mark.slow
def test_flash_attention_needs_each_of_its_events(fa_a2):
    """Dropping every set and wait of one event id of flash attention's program (the counts
    still match) is a race between its cores, for each id: none is implied by the others
    (eight steps, so every ring slot, four at most, is reused). About 20 s: seven checks of
    8 clusters."""
    assert mix_check.check(fa_a2, {"S": 1024}) == 8
    (prog,) = programs(fa_a2)
    ids = sorted({op.attrs["event_id"] for op in prog.walk() if op.name in EVENTS})
    assert len(ids) == 3               # the hand-overs: a slot of slack implies the back edges
    for e in ids:
        with pytest.raises(SyncError, match="race"):
            mix_check.check(_without(fa_a2, lambda op: op.name in EVENTS and
                                     op.attrs["event_id"] == e), {"S": 1024})


def _nth(op, k, i) -> bool:
    if op.name not in EVENTS:
        return False
    k[0] += 1
    return k[0] - 1 == i


def _without(doc, drop):
    d = copy_doc(doc)

    def keep(ops):
        out = []
        for op in ops:
            if drop(op):
                continue
            op.regions = [keep(r) for r in op.regions]
            out.append(op)
        return out
    for p in programs(d):
        p.regions[0] = keep(p.regions[0])
    return d


def test_simulated_on_clusters(fa_a2):
    """The simulator runs each instance on a cluster (cube core c, vector cores 2c and
    2c + 1 after the cube cores), overlapped: faster than the same loop lowered without
    mix-fuse, and the run record names the cube core of each cluster."""
    from libpypto.driver import simulate
    off = pypto.lower(pypto.trace(FA, target="a2"),
                      "fold-scale,tensor-to-tile,assign-memory,fuse,mix-fuse{enable=false},"
                      "forward,cse,dce,alloc,make-exec", target="a2")
    mixed = simulate(fa_a2, "a2", {"S": 512})
    plain = simulate(off, "a2", {"S": 512})
    assert mixed["cycles"] < plain["cycles"]
    assert sorted(r[2] for r in mixed["tasks"]) == [0, 1, 2, 3]
    used = {c for c, kind, *_ in mixed["busy"]}
    assert used == {0, 1, 2, 3, 24, 25, 26, 27, 28, 29, 30, 31}


def _ring_slots(doc) -> list:
    return sorted(op.result.type.shape[0] for op in doc.body if op.name == "gm" and
                  op.attrs.get("workspace") and op.result.type.rank == 3)


def test_rings_get_slack_slots_beyond_what_the_delays_need():
    """With slack 1 (the default) each ring has one slot more than its delays need, so the
    cube's Q K^T waits for the softmax of the step two iterations back, not the one just
    before; slack 0 gives the fewest; a negative slack is refused."""
    doc = pypto.trace(FA, target="a2")
    base = "fold-scale,tensor-to-tile,assign-memory,fuse,mix-fuse{slack=%d},forward,cse,dce," \
           "alloc,make-exec"
    tight = _ring_slots(pypto.lower(doc, base % 0, target="a2"))
    loose = _ring_slots(pypto.lower(doc, base % 1, target="a2"))
    assert tight and loose == [n + 1 for n in tight]
    assert max(tight) == 3                          # the scores: preload 2 + 1
    with pytest.raises(UsageError, match="slack must be an int >= 0"):
        pypto.lower(doc, base % -1, target="a2")


def test_loads_of_what_the_loop_never_writes_go_before_the_cross_wait(fa_a2):
    """The cube's P V phase loads its V block (a parameter: nothing the vector cores make)
    before it waits for P, in each arm of the is_loop_begin branch; P's load comes after
    the wait."""
    (prog,) = programs(fa_a2)
    arms = []
    for op in prog.walk():
        if op.name == "if" and sum(x.name == "tload" and x.operands[0].type.space == "l1"
                                   for x in op.regions[0]) == 2:
            arms += [r for r in op.regions if any(x.name == "cross_wait" for x in r)]
    assert len(arms) >= 2
    for arm in arms:
        names = [(x.name, x.operands[1].name if x.name == "tload" else None) for x in arm
                 if x.name in ("tload", "cross_wait")]
        first_wait = names.index(("cross_wait", None))
        before = [n for kind, n in names[:first_wait] if kind == "tload"]
        after = [n for kind, n in names[first_wait:] if kind == "tload"]
        assert before and after     # the V block before, P after


@pytest.mark.needs_cc
@pytest.mark.parametrize("blk", [128, 512])
def test_the_a2_lowering_runs_on_the_host_and_kv_blocks_of_512_fuse(blk):
    """Flash attention lowered for a2 runs on the host (numpy and C) and matches the tensor
    graph: the program order is one valid order of the cluster, and the two vector cores'
    tiles never share live bytes (the host runs both in one arena). With KV blocks of 512
    the scores and the exp span 4 column tiles (grids [n, 4]): mix-fuse runs those as loops
    inside the instance, so the step is still one mixed program, which the race checkers
    accept."""
    import numpy as np
    from libpypto.runtime.tensor_check import check_expansion
    doc = pypto.lower(pypto.trace(FA, target="a2", consts={"blk": blk}), target="a2")
    (prog,) = programs(doc)
    assert clustered(prog)
    loops = [op.attrs["var"] for op in prog.walk() if op.name == "for"]
    assert ("gl1" in loops) == (blk == 512)
    env = {"S": 1024}
    assert mix_check.check(doc, env) >= 1
    assert check_expansion(expand(doc, env), 32)["unsynced"] == 0
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1024, 128)).astype(np.float16) for _ in range(3))
    for backend in ("numpy", "c"):
        rec = pypto.run(doc, inputs={"q": q, "k": k, "v": v}, backend=backend)
        assert rec.body[0].attrs["verdict"] == "pass", rec.body[0].attrs["checks"]
