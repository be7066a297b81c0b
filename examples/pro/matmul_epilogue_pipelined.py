"""out = fp16(relu(a @ b + bias)) with automatic cube/vector pipelining: the twin of
matmul_epilogue.py (same instructions, same results bit for bit) without a hand-written
cross-core event. The cube stage computes a [32, 64] tile of a @ b and moves it from L0C
straight into the UB of both vector cores of its cluster, split by rows
(AccToVecMode.DualModeSplitM: 16 rows each); the vector stage adds the bias row, applies
relu, casts and stores. `ring` is the tile-group ring between them (2 slots, fwd_ids and
bwd_ids); PipelineConfig(preload=2) lets the cube run 2 tiles ahead. The tracer inserts the
set_cross_core / wait_cross_core a hand-written handshake has (see `pypto-trace -S`) and the
ring's rotation; the intra-core flags stay the kernel's own."""
import libpypto.pro as pl

M, N, K = 320, 64, 64
TM = 32
HALF = TM // 2
F16, F32 = pl.DT_FP16, pl.DT_FP32
MTE1, MTE2, MTE3 = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3
MM, FIX, V = pl.PipeType.M, pl.PipeType.FIX, pl.PipeType.V


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.pipeline.stage
def mm_stage(t, a, a1, a0, b0, acc, ring):
    pl.load(a1, a, [t * TM, 0])
    sync(MTE2, MTE1)
    pl.move(a0, a1)
    sync(MTE1, MTE2, 1)                        # a1 free for the next load
    sync(MTE1, MM)
    pl.matmul(acc, a0, b0)
    sync(MM, MTE1, 1)                          # a0 free for the next move
    sync(MM, FIX)
    pl.move(ring.next(), acc, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
    sync(FIX, MM)                              # acc free for the next matmul


@pl.pipeline.stage
def epilogue_stage(t, sub, out, bt, y, ring):
    x = ring.next()
    pl.expand_add(x, x, bt, dim=1)
    pl.relu(x, x)
    pl.cast(y, x)
    sync(V, MTE3)
    pl.store(out, y, [t * TM + sub * HALF, 0])
    sync(MTE3, V)                              # y free for the next cast


@pl.jit(pipeline=pl.pipeline.PipelineConfig(preload=2))
def matmul_epilogue_pipelined(a: pl.Tensor[[M, K], F16], b: pl.Tensor[[K, N], F16],
                              bias: pl.Tensor[[1, N], F32], out: pl.Tensor[[M, N], F16]):
    a1 = pl.make_tile(pl.TileType([TM, K], F16, pl.MemorySpace.Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([K, N], F16, pl.MemorySpace.Mat), addr=0x1000)
    a0 = pl.make_tile(pl.TileType([TM, K], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([K, N], F16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([TM, N], F32, pl.MemorySpace.Acc), addr=0)
    bt = pl.make_tile(pl.TileType([1, N], F32, pl.MemorySpace.Vec), addr=0x2000)
    y = pl.make_tile(pl.TileType([HALF, N], F16, pl.MemorySpace.Vec), addr=0x2400)
    ring = pl.make_tile_group(type=pl.TileType([HALF, N], F32, pl.MemorySpace.Vec),
                              addrs=0x0000, depth=2, fwd_ids=[0, 1], bwd_ids=[2, 3])
    with pl.section_cube():
        pl.load(b1, b, [0, 0])
        sync(MTE2, MTE1)
        pl.move(b0, b1)
    with pl.section_vector():
        pl.load(bt, bias, [0, 0])
        sync(MTE2, V)
        sub = pl.get_subblock_idx()
    c = pl.get_block_idx() // pl.get_subblock_num()          # the cluster, on every core
    for t in pl.range(c, M // TM, pl.get_block_num()):
        with pl.section_cube():
            mm_stage(t, a, a1, a0, b0, acc, ring)
        with pl.section_vector():
            epilogue_stage(t, sub, out, bt, y, ring)


def reference(a, b, bias):
    import numpy as np
    return {"out": np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)}


EXAMPLE = {"kernel": "matmul_epilogue_pipelined", "block_dim": 3}
