"""Row softmax, fp32: the row max and the row sum go to [R, 1] column tiles (layout DN),
broadcast back with expand_sub / expand_div; a tail of rows through the valid shape."""
import libpypto.pro as pl

R, C = 8, 512
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


@pl.jit
def softmax(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32]):
    row = pl.TileType(shape=[R, C], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                      valid_shape=[-1, -1])
    col = pl.TileType(shape=[R, 1], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                      valid_shape=[-1, -1], layout=pl.DN)
    xt = pl.make_tile(row, addr=0x0000)
    tmp = pl.make_tile(row, addr=0x4000)
    m = pl.make_tile(col, addr=0x8000)
    s = pl.make_tile(col, addr=0x8100)
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + R - 1) // R, pl.get_block_num()):
            rows = pl.min(R, n - t * R)
            for tile, cols in ((xt, C), (tmp, C), (m, 1), (s, 1)):
                pl.set_validshape(tile, [rows, cols])
            pl.load(xt, x, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.maximum(m, xt, tmp, dim=0)         # row max -> [R, 1]
            pl.expand_sub(xt, xt, m, dim=0)
            pl.exp(xt, xt)
            pl.sum(s, xt, tmp, dim=0)             # row sum -> [R, 1]
            pl.expand_div(xt, xt, s, dim=0)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, xt, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def reference(x):
    import numpy as np
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


EXAMPLE = {"kernel": "softmax", "block_dim": 4, "bind": {"x_0": 203}}
