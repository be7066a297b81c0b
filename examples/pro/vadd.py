"""vadd: z = x + y, fp32, DYNAMIC rows with a tail, manual sync (set_flag / wait_flag).

Each block takes every block_num-th 16-row tile; the last tile's valid rows are set at run
time, so rows past the tensors' end are never read or written.
"""
import libpypto.pro as pl

ROWS, COLS = 16, 256
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


@pl.jit
def vadd(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
         y: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
         z: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32]):
    tt = pl.TileType(shape=[ROWS, COLS], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    a = pl.make_tile(tt, addr=0x0000)
    b = pl.make_tile(tt, addr=0x4000)
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + ROWS - 1) // ROWS, pl.get_block_num()):
            rows = pl.min(ROWS, n - t * ROWS)
            pl.set_validshape(a, [rows, COLS])
            pl.set_validshape(b, [rows, COLS])
            pl.load(a, x, [t * ROWS, 0])
            pl.load(b, y, [t * ROWS, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.add(a, a, b)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(z, a, [t * ROWS, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)   # a, b free again
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def reference(x, y):
    return {"z": x + y}


EXAMPLE = {"kernel": "vadd", "block_dim": 4, "bind": {"x_0": 1000}}
