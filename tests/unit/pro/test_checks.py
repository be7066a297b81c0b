"""Pro mode errors: the buffer plan (alignment, capacity, overlapping live tiles), misuse of
ops and sections, and the race and sync checker (every dropped sync is caught)."""
from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest

from libpypto.errors import CompileError, PyptoError
from libpypto.runtime.pro_check import SyncError

HEAD = """\
import libpypto.pro as pl
F32 = pl.DT_FP32
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
TT = pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Vec)

def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)

@pl.jit
def k(x: pl.Tensor[[pl.DYNAMIC, 64], F32], y: pl.Tensor[[pl.DYNAMIC, 64], F32]):
"""
HEAD_LINES = HEAD.count("\n")

COPY = """\
a = pl.make_tile(TT, addr=0)
b = pl.make_tile(TT, addr=2048)
with pl.section_vector():
    for t in pl.range(pl.get_block_idx(), x.shape[0] // 8, pl.get_block_num()):
        pl.load(a, x, [t * 8, 0])
        sync(MTE2, V)
        pl.exp(b, a)
        sync(V, MTE2, 1)
        sync(V, MTE3)
        pl.store(y, b, [t * 8, 0])
        sync(MTE3, V)
"""


def kernel(tmp_path, body: str, name="k"):
    path = tmp_path / "op.py"
    path.write_text(HEAD + textwrap.indent(body, "    "))
    spec = importlib.util.spec_from_file_location(f"op_{abs(hash(body))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def launch(k, n=32, block_dim=2):
    x = np.linspace(-1, 1, n * 64, dtype=np.float32).reshape(n, 64)
    y = np.zeros_like(x)
    k[block_dim](x, y)
    return x, y


def test_the_synced_copy_runs(tmp_path):
    x, y = launch(kernel(tmp_path, COPY))
    assert np.array_equal(y, np.exp(x))


@pytest.mark.parametrize("drop,pipes", [
    ("sync(MTE2, V)", ("MTE2", "V")), ("sync(V, MTE3)", ("V", "MTE3")),
    ("sync(V, MTE2, 1)", ("V", "MTE2")), ("sync(MTE3, V)", ("MTE3", "V"))])
def test_every_dropped_sync_is_a_race(tmp_path, drop, pipes):
    body = COPY.replace(f"        {drop}\n", "")
    with pytest.raises(SyncError) as e:
        launch(kernel(tmp_path, body), n=64, block_dim=2)
    msg = str(e.value)
    assert "race" in msg and f"on {pipes[0]}" in msg and f"on {pipes[1]}" in msg
    assert f"set_pipe=pl.PipeType.{pipes[0]}, wait_pipe=pl.PipeType.{pipes[1]}" in msg
    assert msg.startswith("op.py:")


def test_race_message_names_tile_and_lines(tmp_path):
    body = COPY.replace("        sync(MTE2, V)\n", "")
    with pytest.raises(SyncError) as e:
        launch(kernel(tmp_path, body))
    load_line = HEAD_LINES + 5
    assert f"tload on MTE2 (op.py:{load_line})" in str(e.value)
    assert "tile t0" in str(e.value)


def test_checker_can_be_skipped(tmp_path):
    k = kernel(tmp_path, COPY.replace("        sync(MTE2, V)\n", ""))
    k.check = False
    x, y = launch(k)
    assert np.array_equal(y, np.exp(x))        # program order on the host


def test_wait_without_set_and_set_never_waited(tmp_path):
    wait = COPY.replace("        sync(MTE2, V)\n",
                        "        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=3)\n")
    with pytest.raises(SyncError, match="has no sync_src before it"):
        launch(kernel(tmp_path, wait))
    never = COPY.replace("        sync(MTE3, V)\n", "        sync(MTE3, V)\n"
                         "        pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=5)\n")
    with pytest.raises(SyncError, match="is never waited"):
        launch(kernel(tmp_path, never))


@pytest.mark.parametrize("body,msg", [
    ("a = pl.make_tile(TT, addr=16)\n", "not 32-byte aligned"),
    ("a = pl.make_tile(TT, addr=196608 - 1024)\n", "does not fit the 196608-byte Vec"),
    ("a = pl.make_tile(pl.TileType(shape=[8, 4], dtype=F32), addr=0)\n", "not a multiple of 32"),
    ("a = pl.make_tile(TT, addr=0, size=16)\n", "less than the tile's 2048 bytes"),
    ("g = pl.make_tile_group(type=TT, addrs=[0, 1024], mutex_ids=[0, 1])\n", "slots overlap"),
    ("g = pl.make_tile_group(type=TT, addrs=0)\n", "needs mutex_ids"),
    ("a = pl.make_tile(pl.TileType(shape=[8, 64], dtype=F32, target_memory="
     "pl.MemorySpace.Left), addr=256)\n", "not 512-byte aligned"),
])
def test_buffer_plan_errors(tmp_path, body, msg):
    with pytest.raises(CompileError, match=msg) as e:
        launch(kernel(tmp_path, body))
    assert str(e.value).startswith(f"op.py:{HEAD_LINES + 1}:")


def test_overlapping_live_tiles(tmp_path):
    body = COPY.replace("b = pl.make_tile(TT, addr=2048)", "b = pl.make_tile(TT, addr=1024)")
    with pytest.raises(CompileError, match=r"tiles t0 \(line \d+\) and t1 .* overlap"):
        launch(kernel(tmp_path, body))


def test_reused_address_after_last_use_is_fine(tmp_path):
    body = COPY.replace("        sync(MTE3, V)\n", "        sync(MTE3, V)\n"
                        "        c = pl.make_tile(TT, addr=0)\n"
                        "        pl.expands(c, 1.0)\n        sync(V, MTE2, 2)\n")
    launch(kernel(tmp_path, body))


@pytest.mark.parametrize("body,msg", [
    ("a = pl.make_tile(TT, addr=0)\npl.load(a, x, [0, 0])\nwith pl.section_vector():\n"
     "    pass\n", "outside pl.section_vector"),
    ("m = pl.make_tile(pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Mat),"
     " addr=0)\nwith pl.section_vector():\n    pl.exp(m, m)\n", "is a vector op: tile t0 is in Mat"),
    ("a = pl.make_tile(TT, addr=0)\nb = pl.make_tile(pl.TileType(shape=[8, 32], dtype=F32), "
     "addr=4096)\nwith pl.section_vector():\n    pl.add(a, a, b)\n", "different shapes"),
    ("a = pl.make_tile(TT, addr=0)\nb = pl.make_tile(pl.TileType(shape=[8, 64], dtype="
     "pl.DT_FP16), addr=4096)\nwith pl.section_vector():\n    pl.add(a, a, b)\n",
     "different dtypes"),
    ("a = pl.make_tile(TT, addr=0)\nwith pl.section_vector():\n    n = 0\n"
     "    while n < 2:\n        n += 1\n", "while is not supported"),
    ("a = pl.make_tile(TT, addr=0)\nwith pl.section_vector():\n"
     "    pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=16)\n", "event_id must be"),
    ("a = pl.make_tile(TT, addr=0)\nwith pl.section_vector():\n"
     "    if x.shape[0]:\n        pass\n    bool(x.shape[0] > 1) and 1\n", "truth value"),
])
def test_misuse_errors(tmp_path, body, msg):
    with pytest.raises(CompileError, match=msg) as e:
        launch(kernel(tmp_path, body))
    assert str(e.value).startswith("op.py:")


@pytest.mark.parametrize("body,msg", [
    ("a = pl.make_tile(TT, addr=0)\nn = 0\nfor t in pl.range(4):\n    n = n + 1\n"
     "    pl.expands(a, n)\n", "'n' is updated from its own value in a pl.range body"),
    ("a = pl.make_tile(TT, addr=0)\nb = pl.make_tile(TT, addr=4096)\n"
     "for t in pl.range(4):\n    if t == 1:\n        c = a\n    else:\n        c = b\n"
     "    pl.expands(c, 1.0)\n", "'c' gets different values in the two arms"),
])
def test_trace_once_pitfalls_are_errors(tmp_path, body, msg):
    with pytest.raises(CompileError, match=msg):
        launch(kernel(tmp_path, body))


MIXED = """\
import libpypto.pro as pl
F32 = pl.DT_FP32
MTE1, MTE2, MTE3, V, M, FIX = (pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3,
                               pl.PipeType.V, pl.PipeType.M, pl.PipeType.FIX)

@pl.jit
def k(x: pl.Tensor[[16, 16], pl.DT_FP16], ws: pl.Tensor[[pl.DYNAMIC, 16], F32],
      y: pl.Tensor[[pl.DYNAMIC, 16], F32]):
    m1 = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)
    la = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Left), addr=0)
    rb = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([16, 16], F32, pl.MemorySpace.Acc), addr=0)
    v = pl.make_tile(pl.TileType([8, 16], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_cube():
        c = pl.get_block_idx()
        pl.load(m1, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE1, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE1, event_id=0)
        pl.move(la, m1)
        pl.move(rb, m1)
        pl.system.sync_src(set_pipe=MTE1, wait_pipe=M, event_id=0)
        pl.system.sync_dst(set_pipe=MTE1, wait_pipe=M, event_id=0)
        pl.matmul(acc, la, rb)
        pl.system.sync_src(set_pipe=M, wait_pipe=FIX, event_id=0)
        pl.system.sync_dst(set_pipe=M, wait_pipe=FIX, event_id=0)
        pl.store(ws, acc, [c * 16, 0])
        SET
        CUBE_WAIT
    with pl.section_vector():
        i = pl.get_block_idx()
        WAIT
        pl.load(v, ws, [i * 8, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(y, v, [i * 8, 0])
"""
SET = "pl.system.set_cross_core(pipe=FIX, event_id=0)"
WAIT = "pl.system.wait_cross_core(pipe=MTE2, event_id=0)"


def mixed(tmp_path, set_=SET, wait=WAIT, cube_wait="pass", check=True):
    src = MIXED.replace("SET", set_).replace("CUBE_WAIT", cube_wait).replace("WAIT", wait)
    path = tmp_path / "mixed.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"mixed_{abs(hash(src))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.eye(16, dtype=np.float16) * 2
    ws, y = np.zeros((32, 16), np.float32), np.zeros((32, 16), np.float32)
    mod.k.check = check
    mod.k[2](x, ws, y)
    return x, y


def test_cross_core_handshake_orders_gm(tmp_path):
    x, y = mixed(tmp_path)
    assert np.array_equal(y, np.tile(x.astype(np.float32) @ x.astype(np.float32), (2, 1)))


def test_missing_cross_core_event_is_a_gm_race(tmp_path):
    with pytest.raises(SyncError, match=r"race \(read after write\) on cores 0 and 1: tstore "
                                        r"on FIX .* tensor ws\[0:8, 0:16\].*set_cross_core"):
        mixed(tmp_path, set_="pass", wait="pass")


def test_cross_core_deadlock_and_unwaited_set(tmp_path):
    with pytest.raises(SyncError, match="deadlock: cross_wait on FIX"):
        mixed(tmp_path, cube_wait="pl.system.wait_cross_core(pipe=FIX, event_id=5)")
    with pytest.raises(SyncError, match="set_cross_core .event 0, INTRA_BLOCK. is never waited"):
        mixed(tmp_path, wait="pass", check=False)      # found without the race checker too


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_a_load_past_the_end_is_an_error_on_both_backends(tmp_path, backend):
    from libpypto.runtime.compiler import find_cc
    if backend == "c" and find_cc() is None:
        pytest.skip("no C compiler")
    k = kernel(tmp_path, COPY.replace("x.shape[0] // 8", "(x.shape[0] + 7) // 8"))
    k.backend, k.check = backend, False
    with pytest.raises(PyptoError, match=r"op\.py:\d+: .*(load|outside its shape)") as e:
        launch(k, n=36)              # 36 rows: the last 8-row tile reads rows 32..40
    assert str(e.value).startswith(f"op.py:{HEAD_LINES + 5}:")


def test_c_backend_runs_mixed_kernels_and_finds_deadlocks(tmp_path):
    from libpypto.runtime.compiler import find_cc
    if find_cc() is None:
        pytest.skip("no C compiler")
    import libpypto.pro as pl
    src = MIXED.replace("SET", SET).replace("CUBE_WAIT", "pass").replace("WAIT", WAIT)
    path = tmp_path / "mixed_c.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("mixed_c_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = pl.jit(mod.k.fn)
    k.backend = "c"
    x = np.eye(16, dtype=np.float16) * 2
    ws, y = np.zeros((32, 16), np.float32), np.zeros((32, 16), np.float32)
    k[2](x, ws, y)
    assert np.array_equal(y, np.tile(x.astype(np.float32) @ x.astype(np.float32), (2, 1)))
    dead = src.replace("        pass\n    with pl.section_vector",
                       "        pl.system.wait_cross_core(pipe=FIX, event_id=5)\n"
                       "    with pl.section_vector")
    path.write_text(dead)
    spec = importlib.util.spec_from_file_location("mixed_c_dead", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = pl.jit(mod.k.fn)
    k.backend, k.check = "c", False
    with pytest.raises(PyptoError, match="deadlocked on a cross-core wait"):
        k[2](x, ws, y)
