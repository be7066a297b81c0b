"""Grid-wide and unicast synchronisation (pl.system.sync_all, INTER_BLOCK and UNICAST_BLOCK
events), on the Pro runner and on the C (rt.c's worker pool): results against numpy,
bit-identical for any thread count, and the checker across clusters (a dropped sync is a
race, a wait nobody satisfies a deadlock, never a hang)."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from libpypto.errors import CompileError, PyptoError
from libpypto.runtime.pro_check import SyncError
from libpypto.runtime.pro_exec import ProRunError

from .test_checks import MIXED
from .test_checks import SET as INTRA_SET

ROOT = pathlib.Path(__file__).resolve().parents[3]


def load(path: pathlib.Path, tag: str = ""):
    spec = importlib.util.spec_from_file_location(f"grid_{path.stem}_{tag}_{abs(hash(path))}",
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def module(tmp_path, src: str, name: str = "k"):
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    return load(path, str(abs(hash(src))))


def grid_sum_run(backend: str, threads: int, bd: int = 5):
    mod = load(ROOT / "examples" / "pro" / "grid_sum.py")
    x = np.random.default_rng(3).standard_normal((1001, 128)).astype(np.float32)
    part, out = np.zeros((bd, 128), np.float32), np.zeros((1, 128), np.float32)
    k = mod.grid_sum
    k.backend, k.threads = backend, threads
    k[bd](x, part, out)
    return x, out


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_grid_sum_matches_numpy_and_is_the_same_bits_for_any_thread_count(backend):
    x, one = grid_sum_run(backend, 1)
    np.testing.assert_allclose(one, x.astype(np.float64).sum(0, keepdims=True), rtol=1e-4,
                               atol=1e-3)
    for threads in (2, 3, 8):
        assert grid_sum_run(backend, threads)[1].tobytes() == one.tobytes()


def test_grid_sum_block_dim_one_and_over_the_target():
    x, out = grid_sum_run("c", 2, bd=1)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(0, keepdims=True), rtol=1e-4,
                               atol=1e-3)
    for backend in ("numpy", "c"):
        with pytest.raises(ProRunError, match="resident at once, and a2 has 48"):
            grid_sum_run(backend, 2, bd=49)


ROTATE = """\
import libpypto.pro as pl
MTE2, MTE3 = pl.PipeType.MTE2, pl.PipeType.MTE3
@pl.jit
def k(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32], ws: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32],
      y: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32]):
    t = pl.make_tile(pl.TileType([8, 64], pl.DT_FP32, pl.MemorySpace.Vec), addr=0)
    u = pl.make_tile(pl.TileType([8, 64], pl.DT_FP32, pl.MemorySpace.Vec), addr=0x800)
    with pl.section_vector():
        b = pl.get_block_idx()
        n = pl.get_block_num()
        pl.load(t, x, [b * 8, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(ws, t, [b * 8, 0])
        FIRST
        pl.load(u, ws, [(b + 1) % n * 8, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(y, u, [b * 8, 0])
        SECOND
"""
SYNC_ALL = "pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)"
BARRIER = ("pl.system.set_cross_core(pipe=MTE3, event_id=3, sync_mode=pl.SyncMode.INTER_BLOCK)"
           "\n        pl.system.wait_cross_core(pipe=MTE2, event_id=3, "
           "sync_mode=pl.SyncMode.INTER_BLOCK)")


def rotate(tmp_path, first, second=SYNC_ALL, backend="numpy", check=True, threads=2, bd=4):
    mod = module(tmp_path, ROTATE.replace("FIRST", first).replace("SECOND", second))
    x = np.arange(bd * 8 * 64, dtype=np.float32).reshape(bd * 8, 64)
    ws, y = np.zeros_like(x), np.zeros_like(x)
    mod.k.backend, mod.k.threads = backend, threads
    mod.k.launch((x, ws, y), bd, check=check)
    return x, y


@pytest.mark.parametrize("first", [SYNC_ALL, BARRIER])
@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_a_grid_barrier_orders_gm_across_blocks(tmp_path, first, backend):
    for threads in (1, 3):
        x, y = rotate(tmp_path, first, backend=backend, threads=threads)
        assert np.array_equal(y, np.roll(x, -8, axis=0))


def test_dropping_the_grid_barrier_is_a_race_across_clusters(tmp_path):
    with pytest.raises(SyncError, match=r"race \((read after write|write after read)\) on "
                                        r"cores 1 of cluster \d and 1 of cluster \d: .*"
                                        r"tensor ws.*sync_all"):
        rotate(tmp_path, "pass")
    with pytest.raises(SyncError, match=r"race"):     # only the wait dropped: unordered too
        rotate(tmp_path, BARRIER.split("\n")[0], second=BARRIER)


def test_inter_block_set_never_waited_and_sync_all_deadlock(tmp_path):
    with pytest.raises(SyncError, match="INTER_BLOCK event 3: vector core 0 set it 2 times "
                                        "and waited 1 times"):
        rotate(tmp_path, BARRIER, second=BARRIER.split("\n")[0])
    lonely = "if b == 0:\n            " + SYNC_ALL
    with pytest.raises(SyncError, match=r"deadlock: sync_all\(AIV_ONLY\)"):
        rotate(tmp_path, lonely, check=False)      # the race checker would see a race first
    with pytest.raises(PyptoError, match="grid-wide sync .* deadlocked"):
        rotate(tmp_path, lonely, backend="c", check=False, threads=3)
    with pytest.raises(PyptoError, match="grid-wide sync .* deadlocked"):
        rotate(tmp_path, lonely, backend="c", check=False, threads=1)


def _unicast(tmp_path, set_, wait, cube_wait="pass", backend="numpy", threads=2):
    src = MIXED.replace("SET", set_).replace("CUBE_WAIT", cube_wait).replace("WAIT", wait)
    mod = module(tmp_path, src, "mixed")
    x = np.eye(16, dtype=np.float16) * 2
    ws, y = np.zeros((32, 16), np.float32), np.zeros((32, 16), np.float32)
    mod.k.backend, mod.k.threads = backend, threads
    mod.k[2](x, ws, y)
    return x, y


U = "sync_mode=pl.SyncMode.UNICAST_BLOCK"
SET2 = (f"pl.system.set_cross_core(pipe=FIX, event_id=0, {U})\n        "
        f"pl.system.set_cross_core(pipe=FIX, event_id=1, {U})")
WAIT_OWN = f"pl.system.wait_cross_core(pipe=MTE2, event_id=pl.get_subblock_idx(), {U})"


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_unicast_one_signal_per_vector_core(tmp_path, backend):
    x, y = _unicast(tmp_path, SET2, WAIT_OWN, backend=backend)
    assert np.array_equal(y, np.tile(x.astype(np.float32) @ x.astype(np.float32), (2, 1)))
    # vector -> cube: subblock 0 signals, the cube waits for one signal
    up = (WAIT_OWN + "\n        if pl.get_subblock_idx() == 0:\n            "
          f"pl.system.set_cross_core(pipe=MTE2, event_id=4, {U})")
    _unicast(tmp_path, SET2, up, f"pl.system.wait_cross_core(pipe=FIX, event_id=4, {U})",
             backend=backend)


def test_unicast_shared_by_both_vector_cores_is_refused(tmp_path):
    both = f"pl.system.wait_cross_core(pipe=MTE2, event_id=0, {U})"
    set_twice = SET2.replace("event_id=1", "event_id=0")
    with pytest.raises(SyncError, match="UNICAST_BLOCK event 0 .cube to vector. is used by both "
                                        "vector cores of cluster 0"):
        _unicast(tmp_path, set_twice, both)


KERNEL = """\
import libpypto.pro as pl
@pl.jit
def k(x: pl.Tensor[[8, 64], pl.DT_FP32]):
    t = pl.make_tile(pl.TileType([8, 64], pl.DT_FP32, pl.MemorySpace.Vec), addr=0)
    m = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)
    BODY
"""


@pytest.mark.parametrize("body,msg", [
    ("pl.system.sync_all()", "a kernel with one kind of core must say "
     "core_type=pl.SyncCoreType.AIV_ONLY"),
    ("with pl.section_cube():\n        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)",
     r"sync_all\(core_type=AIV_ONLY\) in the cube section"),
    ("pl.system.sync_all([x, t], core_type=pl.SyncCoreType.AIV_ONLY)",
     "HARD mode takes no workspaces"),
    ("pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY, mode=pl.SyncAllMode.SOFT)",
     "SOFT mode needs its workspaces"),
    ("pl.system.sync_all([x], core_type=pl.SyncCoreType.AIV_ONLY, mode=pl.SyncAllMode.SOFT)",
     "needs a Vec tile"),
    ("pl.system.sync_all([x, t, m], core_type=pl.SyncCoreType.AIV_ONLY, "
     "mode=pl.SyncAllMode.SOFT)", "takes no a Mat tile"),
    ("pl.system.sync_all([x, t, 3], core_type=pl.SyncCoreType.AIV_ONLY, "
     "mode=pl.SyncAllMode.SOFT)", "used_cores other than 0"),
    ("pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=0, "
     "sync_mode=pl.SyncMode.UNICAST_BLOCK)", "UNICAST_BLOCK cross-core event needs both"),
    ("pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=0, "
     "sync_mode=pl.SyncMode.INTER_SUBBLOCK)", "INTER_SUBBLOCK cross-core event is between"),
])
def test_sync_misuse_is_a_trace_error(tmp_path, body, msg):
    mod = module(tmp_path, KERNEL.replace("BODY", body))
    with pytest.raises(CompileError, match=msg):
        mod.k(np.zeros((8, 64), np.float32))


def test_soft_sync_all_with_its_workspaces_runs(tmp_path):
    body = ("pl.expands(t, 2.0)\n    "
            "pl.system.sync_all([x, t, 0], core_type=pl.SyncCoreType.AIV_ONLY, "
            "mode=pl.SyncAllMode.SOFT)\n    pl.store(x, t, [0, 0])")
    mod = module(tmp_path, KERNEL.replace("BODY", body))
    for backend in ("numpy", "c"):
        x = np.ones((8, 64), np.float32)
        mod.k.backend = backend
        mod.k(x)       # sync_all drains V before the store, as bar_all would
        assert np.array_equal(x, np.full((8, 64), 2, np.float32))


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_sync_all_mix_orders_the_cube_before_the_vectors(tmp_path, backend):
    """sync_all() (MIX) in both sections of a mixed kernel replaces the cube -> vector
    event: every core of every cluster waits for all the others."""
    for threads in (1, 2):
        x, y = _unicast(tmp_path, "pl.system.sync_all()", "pl.system.sync_all()",
                        backend=backend, threads=threads)
        assert np.array_equal(y, np.tile(x.astype(np.float32) @ x.astype(np.float32), (2, 1)))
    with pytest.raises(SyncError, match=r"deadlock: sync_all\(MIX\)"):
        _unicast(tmp_path, "pass", "pl.system.sync_all()")     # the cube never arrives
    with pytest.raises(SyncError, match=r"race \(read after write\) on cores 0 of cluster "
                                        r"(\d) and \d of cluster \1: tstore on FIX.*"
                                        r"set_cross_core"):
        _unicast(tmp_path, "pass", SYNC_ALL)       # the vectors' own barrier orders no cube


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_inter_block_per_core_kind_in_a_mixed_kernel(tmp_path, backend):
    """INTER_BLOCK joins the cores of the caller's kind: the cube cores among themselves,
    the vector cores among themselves (block indices 0 .. 2 * block_dim - 1)."""
    ib = "sync_mode=pl.SyncMode.INTER_BLOCK"
    cube = (f"pl.system.set_cross_core(pipe=FIX, event_id=7, {ib})\n        "
            f"pl.system.wait_cross_core(pipe=FIX, event_id=7, {ib})\n        " + INTRA_SET)
    vec = (f"pl.system.set_cross_core(pipe=MTE2, event_id=7, {ib})\n        "
           f"pl.system.wait_cross_core(pipe=MTE2, event_id=7, {ib})\n        "
           "pl.system.wait_cross_core(pipe=MTE2, event_id=0)")
    x, y = _unicast(tmp_path, cube, vec, backend=backend, threads=3)
    assert np.array_equal(y, np.tile(x.astype(np.float32) @ x.astype(np.float32), (2, 1)))


def test_without_a_grid_sync_blocks_touching_the_same_gm_are_a_race(tmp_path):
    """Nothing orders two clusters of a launch with no grid-wide sync: a GM write of one
    that overlaps an access of another is a race, found after the clusters ran."""
    with pytest.raises(SyncError, match=r"race \(write after read\) across clusters 0 and 1: "
                                        r"tload on MTE2 .* and tstore on MTE3 .* tensor "
                                        r"ws\[8:16, 0:64\].*pl.system.sync_all"):
        rotate(tmp_path, "pass", second="pass")
    x, y = rotate(tmp_path, "pass", second="pass", check=False)   # unchecked: it runs
    assert y.shape == x.shape
