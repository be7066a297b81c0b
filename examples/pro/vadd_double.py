"""Double-buffered vadd, fp16: three tile groups of two slots; with auto_mutex (the default)
every use of a slot is ordered after every earlier use of that slot, so loads of tile t+1
overlap the add and the store of tile t with no manual flag."""
import libpypto.pro as pl

ROWS, COLS = 32, 128


@pl.jit(auto_mutex=True)
def vadd_double(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP16],
                y: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP16],
                z: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP16]):
    tt = pl.TileType(shape=[ROWS, COLS], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    xs = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0, 1])
    ys = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[2, 3])
    zs = pl.make_tile_group(type=tt, addrs=0x8000, mutex_ids=[4, 5])
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + ROWS - 1) // ROWS, pl.get_block_num()):
            a, b, c = xs.next(), ys.next(), zs.next()
            rows = pl.min(ROWS, n - t * ROWS)
            for g in (xs, ys, zs):
                pl.set_validshape(g, [rows, COLS])
            pl.load(a, x, [t * ROWS, 0])
            pl.load(b, y, [t * ROWS, 0])
            pl.add(c, a, b)
            pl.store(z, c, [t * ROWS, 0])


def reference(x, y):
    import numpy as np
    return {"z": (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)}


EXAMPLE = {"kernel": "vadd_double", "block_dim": 3, "bind": {"x_0": 500}}
