"""grid_sum: out = x.sum(axis=0), fp32, a two-phase reduction across blocks with a grid-wide
barrier (pl.system.sync_all).

Phase 1: each block sums every block_num-th 16-row tile of x (the tail through the valid
shape) into a [1, COLS] row and stores it as row b of the workspace `part`. sync_all: every
vector core's pipes have drained, so every row of `part` is in GM. Phase 2: block 0 loads the
block_num partial rows in block order and adds them (the order is fixed: the result does not
depend on the thread count). `part` has block_dim rows (--bind part_0=N with --block-dim N).
"""
import libpypto.pro as pl

ROWS, COLS = 16, 128
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


@pl.jit
def grid_sum(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
             part: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
             out: pl.Tensor[[1, COLS], pl.DT_FP32]):
    tt = pl.TileType(shape=[ROWS, COLS], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    rt = pl.TileType(shape=[1, COLS], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0x0000)
    tmp = pl.make_tile(tt, addr=0x2000)
    s = pl.make_tile(rt, addr=0x4000)
    acc = pl.make_tile(rt, addr=0x4200)
    n = x.shape[0]
    with pl.section_vector():
        b = pl.get_block_idx()
        pl.expands(acc, 0.0)
        for t in pl.range(b, (n + ROWS - 1) // ROWS, pl.get_block_num()):
            pl.set_validshape(a, [pl.min(ROWS, n - t * ROWS), COLS])
            pl.load(a, x, [t * ROWS, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.sum(s, a, tmp, dim=1)
            pl.add(acc, acc, s)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=1)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE2, event_id=1)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(part, acc, [b, 0])
        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)
        if b == 0:
            pl.expands(acc, 0.0)
            for k in pl.range(0, pl.get_block_num()):
                pl.load(s, part, [k, 0])
                pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
                pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
                pl.add(acc, acc, s)
                pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=1)
                pl.system.sync_dst(set_pipe=V, wait_pipe=MTE2, event_id=1)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(out, acc, [0, 0])


def reference(x):
    return {"out": x.astype("float64").sum(axis=0, keepdims=True)}


EXAMPLE = {"kernel": "grid_sum", "block_dim": 4, "bind": {"x_0": 1000, "part_0": 4}}
