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


BF16, I32 = pl.DT_BF16, pl.DT_INT32


@pl.jit
def dtypes(xb: pl.Tensor[[16, 64], BF16], yb: pl.Tensor[[16, 64], BF16],
           xi: pl.Tensor[[16, 64], I32], ob: pl.Tensor[[16, 64], BF16],
           oi: pl.Tensor[[16, 64], I32], of: pl.Tensor[[16, 64], F32]):
    """ob = bf16(xb * yb + 1); oi = max(xi * 3 - 1, 0) with int32 wrap-free values;
    of = f32(xb) where xb > yb else f32(yb) (compare into a bool mask, select, cast)."""
    tb = pl.TileType(shape=[16, 64], dtype=BF16, target_memory=pl.MemorySpace.Vec)
    ti = pl.TileType(shape=[16, 64], dtype=I32, target_memory=pl.MemorySpace.Vec)
    tf = pl.TileType(shape=[16, 64], dtype=F32, target_memory=pl.MemorySpace.Vec)
    tm = pl.TileType(shape=[16, 64], dtype=pl.DT_BOOL, target_memory=pl.MemorySpace.Vec)
    a, b, c = (pl.make_tile(tb, addr=i * 0x800) for i in range(3))
    i0 = pl.make_tile(ti, addr=0x2000)
    f = pl.make_tile(tf, addr=0x3000)
    m = pl.make_tile(tm, addr=0x4000)
    pl.load(a, xb, [0, 0])
    pl.load(b, yb, [0, 0])
    pl.load(i0, xi, [0, 0])
    sync(MTE2, V)
    pl.gt(m, a, b)
    pl.select(c, m, a, b)
    pl.cast(f, c)
    pl.mul(c, a, b)
    pl.add(c, c, 1.0)
    pl.mul(i0, i0, 3)
    pl.sub(i0, i0, 1)
    pl.maximum(i0, i0, 0)
    sync(V, MTE3)
    pl.store(ob, c, [0, 0])
    pl.store(oi, i0, [0, 0])
    pl.store(of, f, [0, 0])


@pl.jit
def mm_int8(a: pl.Tensor[[32, 64], pl.DT_INT8], b: pl.Tensor[[64, 32], pl.DT_INT8],
            c: pl.Tensor[[32, 32], I32]):
    a1 = pl.make_tile(pl.TileType([32, 64], pl.DT_INT8, pl.MemorySpace.Mat), addr=0)
    b1 = pl.make_tile(pl.TileType([64, 32], pl.DT_INT8, pl.MemorySpace.Mat), addr=0x800)
    a0 = pl.make_tile(pl.TileType([32, 64], pl.DT_INT8, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([64, 32], pl.DT_INT8, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([32, 32], I32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        pl.load(a1, a, [0, 0])
        pl.load(b1, b, [0, 0])
        sync(MTE2, pl.PipeType.MTE1)
        pl.move(a0, a1)
        pl.move(b0, b1)
        sync(pl.PipeType.MTE1, pl.PipeType.M)
        pl.matmul(acc, a0, b0)
        sync(pl.PipeType.M, pl.PipeType.FIX)
        pl.store(c, acc, [0, 0])


@pl.jit(auto_mutex=False)
def mutexed(x: pl.Tensor[[pl.DYNAMIC, 64], F32], y: pl.Tensor[[pl.DYNAMIC, 64], F32]):
    """Manual buffer mutexes instead of flags: each use of the tile holds mutex 3."""
    tt = pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    for t in pl.range(pl.get_block_idx(), x.shape[0] // 8, pl.get_block_num()):
        for pipe, step in ((MTE2, 0), (V, 1), (MTE3, 2)):
            pl.system.mutex_lock(pipe=pipe, mutex_id=3)
            if step == 0:
                pl.load(a, x, [t * 8, 0])
            elif step == 1:
                pl.exp(a, a)
            else:
                pl.store(y, a, [t * 8, 0])
            pl.system.mutex_unlock(pipe=pipe, mutex_id=3)


@pl.jit
def barriers(x: pl.Tensor[[pl.DYNAMIC, 64], F32], y: pl.Tensor[[pl.DYNAMIC, 64], F32]):
    """bar_all instead of flags."""
    tt = pl.TileType(shape=[8, 64], dtype=F32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0)
    for t in pl.range(pl.get_block_idx(), x.shape[0] // 8, pl.get_block_num()):
        pl.load(a, x, [t * 8, 0])
        pl.system.bar_all()
        pl.neg(a, a)
        pl.system.bar_all()
        pl.store(y, a, [t * 8, 0])
        pl.system.bar_all()


@pl.jit
def mixed_ids(x: pl.Tensor[[pl.DYNAMIC, 16], F16], eye: pl.Tensor[[16, 16], F16],
              cube_out: pl.Tensor[[pl.DYNAMIC, 16], F32],
              vec_out: pl.Tensor[[pl.DYNAMIC, 8], I32], ws: pl.Tensor[[pl.DYNAMIC, 8], I32]):
    """Cube c: rows [16c, 16c + 16) of cube_out = those of x @ eye (so every cluster index in
    [0, block_num) is seen once). Vector core v of cluster c: row 2c + v of vec_out =
    idx * 1000 + block_num * 100 + sub * 10 + subnum; vector 1 also writes its row into ws and
    signals vector 0 (INTER_SUBBLOCK), which copies it into ws row 2c."""
    ti = pl.TileType(shape=[1, 8], dtype=I32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(ti, addr=0)
    b = pl.make_tile(ti, addr=0x100)
    m1 = pl.make_tile(pl.TileType([16, 16], F16, pl.MemorySpace.Mat), addr=0)
    m2 = pl.make_tile(pl.TileType([16, 16], F16, pl.MemorySpace.Mat), addr=0x200)
    la = pl.make_tile(pl.TileType([16, 16], F16, pl.MemorySpace.Left), addr=0)
    rb = pl.make_tile(pl.TileType([16, 16], F16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([16, 16], F32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        c = pl.get_block_idx()
        pl.load(m1, x, [c * 16, 0])
        pl.load(m2, eye, [0, 0])
        sync(MTE2, pl.PipeType.MTE1)
        pl.move(la, m1)
        pl.move(rb, m2)
        sync(pl.PipeType.MTE1, pl.PipeType.M)
        pl.matmul(acc, la, rb)
        sync(pl.PipeType.M, pl.PipeType.FIX)
        pl.store(cube_out, acc, [c * 16, 0])
    with pl.section_vector():
        i = pl.get_block_idx()
        pl.expands(a, i * 1000 + pl.get_block_num() * 100 + pl.get_subblock_idx() * 10 +
                   pl.get_subblock_num())
        sync(V, MTE3)
        pl.store(vec_out, a, [i, 0])
        if pl.get_subblock_idx() == 1:
            pl.store(ws, a, [i, 0])
            pl.system.set_cross_core(pipe=MTE3, event_id=2,
                                     sync_mode=pl.CrossCoreSyncMode.INTER_SUBBLOCK)
        else:
            pl.system.wait_cross_core(pipe=MTE2, event_id=2,
                                      sync_mode=pl.CrossCoreSyncMode.INTER_SUBBLOCK)
            pl.load(b, ws, [i + 1, 0])
            sync(MTE2, MTE3)
            pl.store(ws, b, [i, 0])


@pl.jit
def inserted(x: pl.Tensor[[8, 32], F32], y: pl.Tensor[[16, 64], F32]):
    """y = zeros with x written at rows 4.., columns 16.. (pl.insert), then x's first 3 rows
    again at [0, 0] (an insert of a valid region)."""
    small = pl.make_tile(pl.TileType(shape=[8, 32], dtype=F32, valid_shape=[-1, -1]), addr=0)
    big = pl.make_tile(pl.TileType(shape=[16, 64], dtype=F32), addr=0x1000)
    pl.load(small, x, [0, 0])
    pl.expands(big, 0.0)
    sync(MTE2, V)
    pl.insert(big, small, [4, 16])
    pl.set_validshape(small, [3, 32])
    pl.insert(big, small, [0, 0])
    sync(V, MTE3)
    pl.store(y, big, [0, 0])
