"""Pro kernels the unit tests launch (a Pro kernel must live in a file: its source is parsed)."""
from __future__ import annotations

import libpypto.pro as pl

F32, F16 = pl.DT_FP32, pl.DT_FP16
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
ROWS = 16


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.jit
def vadd(x: pl.Tensor[[pl.DYNAMIC, 256], F32], y: pl.Tensor[[pl.DYNAMIC, 256], F32],
         z: pl.Tensor[[pl.DYNAMIC, 256], F32]):
    tt = pl.TileType(shape=[ROWS, 256], dtype=F32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    a = pl.make_tile(tt, addr=0)
    b = pl.make_tile(tt, addr=0x4000)
    c = pl.make_tile(tt, addr=0x8000)
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + ROWS - 1) // ROWS, pl.get_block_num()):
            rows = pl.min(ROWS, n - t * ROWS)
            pl.set_validshape(a, [rows, 256])
            pl.set_validshape(b, [rows, 256])
            pl.set_validshape(c, [rows, 256])
            pl.load(a, x, [t * ROWS, 0])
            pl.load(b, y, [t * ROWS, 0])
            sync(MTE2, V)
            pl.add(c, a, b)
            sync(V, MTE3)
            pl.store(z, c, [t * ROWS, 0])
            sync(MTE3, MTE2)


@pl.jit
def blockid(out: pl.Tensor[[pl.DYNAMIC, 8], pl.DT_INT32]):
    """Row b of out = [block_idx, block_num, subblock_idx, subblock_num, 0...]."""
    tt = pl.TileType(shape=[1, 8], dtype=pl.DT_INT32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    with pl.section_vector():
        pl.expands(a, 0)
        b = pl.get_block_idx()
        pl.expands(a, b * 1000 + pl.get_block_num() * 10 + pl.get_subblock_idx() +
                   100 * pl.get_subblock_num())
        sync(V, MTE3)
        pl.store(out, a, [b, 0])


@pl.jit(auto_mutex=False, name="static_scale")
def scaled(x: pl.Tensor[[pl.STATIC, 64], F32], y: pl.Tensor[[pl.STATIC, 64], F32],
           k: pl.DT_INT32, alpha: F32):
    """y[r] = x[r] * alpha for even tiles; + k for odd; tiles of 8 rows (block 1)."""
    tt = pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    for t in pl.range(x.shape[0] // 8):
        pl.load(a, x, [t * 8, 0])
        sync(MTE2, V)
        if t % 2 == 0:
            pl.mul(a, a, alpha)
        elif t == 1:
            pl.add(a, a, k)
        else:
            pl.sub(a, a, k)
        sync(V, MTE3)
        pl.store(y, a, [t * 8, 0])
        sync(MTE3, MTE2)


@pl.jit
def vadd_groups(x: pl.Tensor[[pl.DYNAMIC, 128], F16], y: pl.Tensor[[pl.DYNAMIC, 128], F16],
                z: pl.Tensor[[pl.DYNAMIC, 128], F16]):
    """Double buffering: three tile groups of two slots, auto-mutex orders every slot."""
    tt = pl.TileType(shape=[ROWS, 128], dtype=F16, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    xs = pl.make_tile_group(type=tt, addrs=0, mutex_ids=[0, 1])
    ys = pl.make_tile_group(type=tt, addrs=0x2000, mutex_ids=[2, 3])
    zs = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[4, 5])
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + ROWS - 1) // ROWS, pl.get_block_num()):
            a, b, c = xs.next(), ys.next(), zs.next()
            for g in (xs, ys, zs):
                pl.set_validshape(g, [pl.min(ROWS, n - t * ROWS), 128])
            pl.load(a, x, [t * ROWS, 0])
            pl.load(b, y, [t * ROWS, 0])
            pl.add(c, a, b)
            pl.store(z, c, [t * ROWS, 0])


@pl.jit
def branchy(x: pl.Tensor[[pl.DYNAMIC, 64], F32], y: pl.Tensor[[pl.DYNAMIC, 64], F32]):
    """Per 8-row tile t: y = x + (t + 1 if t even else t + 2), via a variable assigned in
    both arms (merged into a select; the else arm starts from the value before the if);
    odd tiles also store only their first 3 rows (a valid shape set in one arm)."""
    tt = pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    a = pl.make_tile(tt, addr=0)
    for t in pl.range(x.shape[0] // 8):
        k = t
        pl.set_validshape(a, [8, 64])
        if t % 2 == 0:
            k = k + 1
        else:
            k = k + 2
            pl.set_validshape(a, [3, 64])
        pl.load(a, x, [t * 8, 0])
        sync(MTE2, V)
        pl.add(a, a, k)
        sync(V, MTE3)
        pl.store(y, a, [t * 8, 0])
        sync(MTE3, MTE2)
