"""RMSNorm with a tail, fp32: y = x / sqrt(mean(x^2) + eps) * gamma. The sum of squares goes
to an [R, 1] DN tile, scaled, rsqrt-ed and broadcast along rows; gamma, loaded once, is a
[1, C] tile broadcast down the columns."""
import libpypto.pro as pl

R, C = 8, 256
EPS = 1e-6
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


@pl.jit
def rmsnorm(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], gamma: pl.Tensor[[1, C], pl.DT_FP32],
            y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32]):
    row = pl.TileType(shape=[R, C], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                      valid_shape=[-1, -1])
    col = pl.TileType(shape=[R, 1], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                      valid_shape=[-1, -1], layout=pl.DN)
    xt = pl.make_tile(row, addr=0x0000)
    sq = pl.make_tile(row, addr=0x2000)
    tmp = pl.make_tile(row, addr=0x4000)
    s = pl.make_tile(col, addr=0x6000)
    g = pl.make_tile(pl.TileType(shape=[1, C], dtype=pl.DT_FP32,
                                 target_memory=pl.MemorySpace.Vec), addr=0x6100)
    n = x.shape[0]
    with pl.section_vector():
        pl.load(g, gamma, [0, 0])
        for t in pl.range(pl.get_block_idx(), (n + R - 1) // R, pl.get_block_num()):
            rows = pl.min(R, n - t * R)
            for tile, cols in ((xt, C), (sq, C), (tmp, C), (s, 1)):
                pl.set_validshape(tile, [rows, cols])
            pl.load(xt, x, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.mul(sq, xt, xt)
            pl.sum(s, sq, tmp, dim=0)
            pl.mul(s, s, 1.0 / C)
            pl.add(s, s, EPS)
            pl.rsqrt(s, s)
            pl.expand_mul(xt, xt, s, dim=0)
            pl.expand_mul(xt, xt, g, dim=1)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, xt, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def reference(x, gamma):
    import numpy as np
    ms = (x * x).sum(axis=1, keepdims=True) / np.float32(C)
    return {"y": (x / np.sqrt(ms + np.float32(EPS)) * gamma).astype(np.float32)}


EXAMPLE = {"kernel": "rmsnorm", "block_dim": 3, "bind": {"x_0": 61}}
