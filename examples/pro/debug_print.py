"""debug_print: y = x * scale (fp32), with the debug utilities: pl.printf from each block,
pl.dump_data of the first tile each block computes, and a pl.pto_assert on the scale.

Each block takes every block_num-th 16-row tile. `scale` is a runtime scalar: the assert
requires it to be positive, so `--bind scale=-2` stops the run with exit 1 naming the block,
the line, the condition and the value (the golden test tests/golden/pro/debug_print.test).
Dumps go to the current directory (pypto-run --dump-dir DIR, or kernel.dump_dir).
"""
import libpypto.pro as pl

ROWS, COLS = 16, 64
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


@pl.jit
def debug_print(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
                y: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
                scale: pl.DT_INT32):
    tt = pl.TileType(shape=[ROWS, COLS], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    a = pl.make_tile(tt, addr=0x0000)
    n = x.shape[0]
    tiles = (n + ROWS - 1) // ROWS
    with pl.section_vector():
        pl.pto_assert(scale > 0, "scale=%d must be positive", scale)
        for t in pl.range(pl.get_block_idx(), tiles, pl.get_block_num()):
            rows = pl.min(ROWS, n - t * ROWS)
            pl.printf("tile %d of %d: rows %d\n", t, tiles, rows)
            pl.set_validshape(a, [rows, COLS])
            pl.load(a, x, [t * ROWS, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.mul(a, a, scale)
            if t == pl.get_block_idx():
                pl.dump_data(a)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, a, [t * ROWS, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)   # a free again
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def reference(x, scale):
    return {"y": x * scale}


EXAMPLE = {"kernel": "debug_print", "block_dim": 3, "bind": {"x_0": 70, "scale": 3}}
