"""Tiled matmul with a K loop, fp16 x fp16 -> fp32: A and B tiles go GM -> L1 (MTE2) ->
L0A / L0B (MTE1), matmul then matmul_acc accumulate in L0C (M), the result goes out through
FIX. Each block takes every block_num-th [64, 64] output tile."""
import libpypto.pro as pl

M, N, K = 256, 128, 192           # the whole problem
TM, TN, TK = 64, 64, 32           # one output tile, one K step
MTE1, MTE2, MM, FIX = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.M, pl.PipeType.FIX


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.jit
def matmul(a: pl.Tensor[[M, K], pl.DT_FP16], b: pl.Tensor[[K, N], pl.DT_FP16],
           c: pl.Tensor[[M, N], pl.DT_FP32]):
    a1 = pl.make_tile(pl.TileType([TM, TK], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([TK, TN], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x1000)
    a0 = pl.make_tile(pl.TileType([TM, TK], pl.DT_FP16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([TK, TN], pl.DT_FP16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([TM, TN], pl.DT_FP32, pl.MemorySpace.Acc), addr=0)
    tn, ksteps = N // TN, K // TK
    with pl.section_cube():
        pl.system.set_mm_layout_transform(enabled=True)
        for t in pl.range(pl.get_block_idx(), (M // TM) * tn, pl.get_block_num()):
            for k in pl.range(0, ksteps, 1):
                pl.load_tile(a1, a, [t // tn, k])
                pl.load_tile(b1, b, [k, t % tn])
                sync(MTE2, MTE1)
                pl.move(a0, a1)
                pl.move(b0, b1)
                sync(MTE1, MTE2, 1)            # L1 tiles free for the next step's loads
                sync(MTE1, MM)
                ph = pl.AccPhase.Final if k == ksteps - 1 else pl.AccPhase.Partial
                if k == 0:
                    pl.matmul(acc, a0, b0, phase=ph)
                else:
                    pl.matmul_acc(acc, acc, a0, b0, phase=ph)
                sync(MM, MTE1)                 # L0 tiles free for the next step's moves
            sync(MM, FIX)
            pl.store_tile(c, acc, [t // tn, t % tn], phase=pl.STPhase.Final)
            sync(FIX, MM)                      # the accumulator is free again
        pl.system.set_mm_layout_transform(enabled=False)


def reference(a, b):
    import numpy as np
    return {"c": a.astype(np.float32) @ b.astype(np.float32)}


EXAMPLE = {"kernel": "matmul", "block_dim": 3, "bind": {}}
