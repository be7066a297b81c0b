"""out = fp16(relu(a @ b + bias)), the hand-synchronised twin of
matmul_epilogue_pipelined.py: the same instructions in the same order, with the cross-core
handshake written out. Per cluster, the cube core computes a [32, 64] tile of a @ b and
moves it from L0C straight into the UB of both vector cores (AccToVecMode.DualModeSplitM:
16 rows each) into slot j % 2 of a 2-slot ring (j: the cluster's step); each vector core
adds the bias row, applies relu, casts and stores. Events 0 and 1 say "slot 0 / 1 holds a
tile" (cube -> vectors), events 2 and 3 "slot 0 / 1 is free" (vectors -> cube): the vectors
free both slots first, so the cube runs up to 2 tiles ahead (preload 2), and the cube waits
for the last two releases at the end."""
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


@pl.jit
def matmul_epilogue(a: pl.Tensor[[M, K], F16], b: pl.Tensor[[K, N], F16],
                    bias: pl.Tensor[[1, N], F32], out: pl.Tensor[[M, N], F16]):
    a1 = pl.make_tile(pl.TileType([TM, K], F16, pl.MemorySpace.Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([K, N], F16, pl.MemorySpace.Mat), addr=0x1000)
    a0 = pl.make_tile(pl.TileType([TM, K], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([K, N], F16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([TM, N], F32, pl.MemorySpace.Acc), addr=0)
    bt = pl.make_tile(pl.TileType([1, N], F32, pl.MemorySpace.Vec), addr=0x2000)
    y = pl.make_tile(pl.TileType([HALF, N], F16, pl.MemorySpace.Vec), addr=0x2400)
    ring = pl.make_tile_group(type=pl.TileType([HALF, N], F32, pl.MemorySpace.Vec),
                              addrs=0x0000, depth=2)
    with pl.section_cube():
        c = pl.get_block_idx()
        pl.load(b1, b, [0, 0])
        sync(MTE2, MTE1)
        pl.move(b0, b1)
        for t in pl.range(c, M // TM, pl.get_block_num()):
            j = (t - c) // pl.get_block_num()
            pl.load(a1, a, [t * TM, 0])
            sync(MTE2, MTE1)
            pl.move(a0, a1)
            sync(MTE1, MTE2, 1)                                  # a1 free for the next load
            sync(MTE1, MM)
            pl.matmul(acc, a0, b0)
            sync(MM, MTE1, 1)                                    # a0 free for the next move
            sync(MM, FIX)
            x = ring.next()
            pl.system.wait_cross_core(pipe=FIX, event_id=2 + j % 2)     # the slot is free
            pl.move(x, acc, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
            pl.system.set_cross_core(pipe=FIX, event_id=j % 2)          # the slot is full
            sync(FIX, MM)                                        # acc free for the next matmul
        pl.system.wait_cross_core(pipe=FIX, event_id=2)          # the vectors' last releases
        pl.system.wait_cross_core(pipe=FIX, event_id=3)
    with pl.section_vector():
        c = pl.get_block_idx() // 2
        sub = pl.get_subblock_idx()
        pl.load(bt, bias, [0, 0])
        sync(MTE2, V)
        pl.system.set_cross_core(pipe=V, event_id=2)             # both slots start free
        pl.system.set_cross_core(pipe=V, event_id=3)
        for t in pl.range(c, M // TM, pl.get_block_num()):
            j = (t - c) // pl.get_block_num()
            x = ring.next()
            pl.system.wait_cross_core(pipe=V, event_id=j % 2)
            pl.expand_add(x, x, bt, dim=1)
            pl.relu(x, x)
            pl.cast(y, x)
            pl.system.set_cross_core(pipe=V, event_id=2 + j % 2)
            sync(V, MTE3)
            pl.store(out, y, [t * TM + sub * HALF, 0])
            sync(MTE3, V)                                        # y free for the next cast


def reference(a, b, bias):
    import numpy as np
    return {"out": np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)}


EXAMPLE = {"kernel": "matmul_epilogue", "block_dim": 3}
