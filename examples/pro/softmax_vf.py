"""Row softmax, fp32, with Reg computation (a vector function, as the reference's
vf_api/test_softmax_tile_group_vf.py): each row of a [R, W] tile is read in 64-lane
registers, the row max and the row sum are reduced within each register (reduce_max,
reduce_sum into lane 0) and combined across the row's registers, then broadcast back to
every lane (vf.full of a register). C = 200 columns are 3 full registers and a tail of 8
lanes, which vf.update_mask keeps out of the reductions and the store. A tail of rows
through the tile's valid shape and the vector function's n_rows."""
import libpypto.pro as pl
from libpypto.pro import Vf as vf

R, C, W = 8, 200, 256                # rows per tile, columns, tile row width (4 registers)
LANES = 64                           # fp32 lanes in a 256-byte register
NREGS = (C + LANES - 1) // LANES
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


@pl.vector_function
def softmax_rows(src, dst, n_rows: pl.DT_INT64):
    full = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    for m in pl.range(0, n_rows):
        row_max = vf.full(-3.0e38, full, dtype=pl.DT_FP32)
        for r in pl.range(0, NREGS):
            live = vf.update_mask(pl.min(LANES, C - r * LANES), dtype=pl.DT_FP32)
            x = vf.load_align(src, [m, r * LANES])
            part = vf.reduce_max(x, live)             # lane 0: this register's max
            row_max = vf.max(row_max, part, full)     # lane 0: the row's so far
        row_max_b = vf.full(row_max, full)            # lane 0 to every lane
        row_sum = vf.full(0.0, full, dtype=pl.DT_FP32)
        for r in pl.range(0, NREGS):
            live = vf.update_mask(pl.min(LANES, C - r * LANES), dtype=pl.DT_FP32)
            x = vf.load_align(src, [m, r * LANES])
            e = vf.exp_sub(x, row_max_b, live)        # exp(x - max), 0 off the mask
            row_sum = vf.add(row_sum, vf.reduce_sum(e, live), full)
        row_sum_b = vf.full(row_sum, full)
        for r in pl.range(0, NREGS):
            live = vf.update_mask(pl.min(LANES, C - r * LANES), dtype=pl.DT_FP32)
            x = vf.load_align(src, [m, r * LANES])
            y = vf.div(vf.exp_sub(x, row_max_b, live), row_sum_b, live)
            vf.store_align(dst + m * W, y, live, r * LANES)   # the live lanes only


@pl.jit
def softmax_vf(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32],
               y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32]):
    tt = pl.TileType(shape=[R, W], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    xt = pl.make_tile(tt, addr=0x0000)
    yt = pl.make_tile(tt, addr=0x2000)
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + R - 1) // R, pl.get_block_num()):
            rows = pl.min(R, n - t * R)
            pl.set_validshape(xt, [rows, C])
            pl.set_validshape(yt, [rows, C])
            pl.load(xt, x, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            softmax_rows(xt, yt, rows)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, yt, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def reference(x):
    import numpy as np
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


EXAMPLE = {"kernel": "softmax_vf", "block_dim": 4, "bind": {"x_0": 203}}
