"""out = relu(a @ b + bias): a mixed cube/vector kernel. Per cluster, the cube core computes a
[32, 64] tile of a @ b (fp16 -> fp32) and stores it through FIX into the cluster's slot of a
GM workspace, then sets cross-core event 0; each of the two vector cores waits for it, loads
its 16 rows, adds the bias row, applies relu and stores, and sets event 1 once its load is
done: the cube waits for both before it overwrites the slot (the handshake)."""
import libpypto.pro as pl

M, N, K = 192, 64, 64
TM = 32
HALF = TM // 2
MTE1, MTE2, MTE3 = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3
MM, FIX, V = pl.PipeType.M, pl.PipeType.FIX, pl.PipeType.V


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.jit
def matmul_bias_relu(a: pl.Tensor[[M, K], pl.DT_FP16], b: pl.Tensor[[K, N], pl.DT_FP16],
                     bias: pl.Tensor[[1, N], pl.DT_FP32],
                     ws: pl.Tensor[[pl.DYNAMIC, N], pl.DT_FP32],
                     out: pl.Tensor[[M, N], pl.DT_FP32]):
    a1 = pl.make_tile(pl.TileType([TM, K], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([K, N], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x1000)
    a0 = pl.make_tile(pl.TileType([TM, K], pl.DT_FP16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([K, N], pl.DT_FP16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([TM, N], pl.DT_FP32, pl.MemorySpace.Acc), addr=0)
    xt = pl.make_tile(pl.TileType([HALF, N], pl.DT_FP32, pl.MemorySpace.Vec), addr=0x0000)
    bt = pl.make_tile(pl.TileType([1, N], pl.DT_FP32, pl.MemorySpace.Vec), addr=0x1000)
    with pl.section_cube():
        c = pl.get_block_idx()
        pl.load(b1, b, [0, 0])
        sync(MTE2, MTE1)
        pl.move(b0, b1)
        for t in pl.range(c, M // TM, pl.get_block_num()):
            pl.load(a1, a, [t * TM, 0])
            sync(MTE2, MTE1)
            pl.move(a0, a1)
            sync(MTE1, MTE2, 1)
            sync(MTE1, MM)
            pl.matmul(acc, a0, b0)
            sync(MM, MTE1, 1)                                  # a0 free for the next move
            sync(MM, FIX)
            pl.system.wait_cross_core(pipe=FIX, event_id=1)    # both vectors freed the slot
            pl.store(ws, acc, [c * TM, 0])
            pl.system.set_cross_core(pipe=FIX, event_id=0)
            sync(FIX, MM)
        pl.system.wait_cross_core(pipe=FIX, event_id=1)        # the vectors' last release
    with pl.section_vector():
        c = pl.get_block_idx() // 2
        row = pl.get_subblock_idx() * HALF
        pl.load(bt, bias, [0, 0])
        pl.system.set_cross_core(pipe=MTE2, event_id=1)        # the slot starts free
        for t in pl.range(c, M // TM, pl.get_block_num()):
            pl.system.wait_cross_core(pipe=MTE2, event_id=0)
            pl.load(xt, ws, [c * TM + row, 0])
            pl.system.set_cross_core(pipe=MTE2, event_id=1)
            sync(MTE2, V)
            pl.expand_add(xt, xt, bt, dim=1)
            pl.relu(xt, xt)
            sync(V, MTE3)
            pl.store(out, xt, [t * TM + row, 0])
            sync(MTE3, MTE2)


def reference(a, b, bias):
    import numpy as np
    return {"out": np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)}


EXAMPLE = {"kernel": "matmul_bias_relu", "block_dim": 2, "bind": {"ws_0": 64}}
