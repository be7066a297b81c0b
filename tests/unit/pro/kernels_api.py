"""Pro kernels for the tests of the API items added after the first Pro merge: datatype=,
subview, insert into Mat, store/move options, bias tiles (test_api.py)."""
from __future__ import annotations

import libpypto.pro as pl

F32, F16 = pl.DT_FP32, pl.DT_FP16
MTE1, MTE2, MTE3, V, M, FIX = (pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3,
                               pl.PipeType.V, pl.PipeType.M, pl.PipeType.FIX)


# the datatype variables and TilingKey fields the kernels name: the trace binds them (these
# module-level placeholders only keep linters quiet)
T = TI = TO = Scale = None


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.jit(datatype={"x": "T", "y": "T", "z": "T"})
def dt_axpy(x: pl.Tensor[[pl.DYNAMIC, 64], T], y: pl.Tensor[[pl.DYNAMIC, 64], T],
            z: pl.Tensor[[pl.DYNAMIC, 64], T]):
    """z = x + y for fp32, z = x * y for fp16 (a compile-time branch on the dtype)."""
    tt = pl.TileType(shape=[16, 64], dtype=T, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    a = pl.make_tile(tt, addr=0)
    b = pl.make_tile(tt, addr=0x1000)
    c = pl.make_tile(tt, addr=0x2000)
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + 15) // 16, pl.get_block_num()):
            rows = pl.min(16, n - t * 16)
            pl.set_validshape(a, [rows, 64])
            pl.set_validshape(b, [rows, 64])
            pl.set_validshape(c, [rows, 64])
            pl.load(a, x, [t * 16, 0])
            pl.load(b, y, [t * 16, 0])
            sync(MTE2, V)
            if T == pl.DT_FP16:
                pl.mul(c, a, b)
            else:
                pl.add(c, a, b)
            sync(V, MTE3)
            pl.store(z, c, [t * 16, 0])
            sync(MTE3, MTE2)


class Mode:
    Scale = pl.TilingKeyField(bits=1, values=[1, 3])


@pl.jit(tiling_key=Mode, datatype={"x": "TI", "z": "TO"})
def dt_cast_scale(x: pl.Tensor[[16, 64], TI], z: pl.Tensor[[16, 64], TO]):
    """z = cast(x * Scale) with two dtype variables and a TilingKey."""
    a = pl.make_tile(pl.TileType([16, 64], TI, pl.MemorySpace.Vec), addr=0)
    c = pl.make_tile(pl.TileType([16, 64], TO, pl.MemorySpace.Vec), addr=0x2000)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        sync(MTE2, V)
        pl.mul(a, a, float(Scale))
        pl.cast(c, a)
        sync(V, MTE3)
        pl.store(z, c, [0, 0])


# -- datatype= misuse (each refused when its parameters are read) ------------------------------

@pl.jit(datatype={"w": "T"})
def bad_dt_missing(x: pl.Tensor[[16, 64], pl.DT_FP32]):
    pass


@pl.jit(datatype={"x": "x"})
def bad_dt_clash(x: pl.Tensor[[16, 64], T]):
    pass


@pl.jit(datatype={"x": "T"})
def bad_dt_concrete(x: pl.Tensor[[16, 64], pl.DT_FP32]):
    pass


@pl.jit(datatype={"x": "T"})
def bad_dt_unlisted(x: pl.Tensor[[16, 64], T], y: pl.Tensor[[16, 64], T]):
    pass


# -- bias tiles and the fixpipe options of store ------------------------------------------------

@pl.jit
def mm_bias(a: pl.Tensor[[32, 64], F16], b: pl.Tensor[[64, 32], F16],
            bias: pl.Tensor[[1, 32], F16], c: pl.Tensor[[32, 32], F32],
            r: pl.Tensor[[32, 32], F16]):
    """c = a @ b + bias; r = relu(a @ b + bias) as fp16 (the fixpipe's ReLU)."""
    a1 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Mat), addr=0)
    b1 = pl.make_tile(pl.TileType([64, 32], F16, pl.MemorySpace.Mat), addr=0x1000)
    s1 = pl.make_tile(pl.TileType([1, 32], F16, pl.MemorySpace.Mat), addr=0x2000)
    a0 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([64, 32], F16, pl.MemorySpace.Right), addr=0)
    s0 = pl.make_tile(pl.TileType([1, 32], F32, pl.MemorySpace.Bias), addr=0)
    acc = pl.make_tile(pl.TileType([32, 32], F32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        pl.load(a1, a, [0, 0])
        pl.load(b1, b, [0, 0])
        pl.load(s1, bias, [0, 0])
        sync(MTE2, MTE1)
        pl.move(a0, a1)
        pl.move(b0, b1)
        pl.move(s0, s1)                       # Mat -> Bias, fp16 -> fp32
        sync(MTE1, M)
        pl.matmul(acc, a0, b0, s0)
        sync(M, FIX)
        pl.store(c, acc, [0, 0])
        pl.store(r, acc, [0, 0], relu_pre_mode=pl.ReluPreMode.NormalRelu)


@pl.jit
def mm_quant(a: pl.Tensor[[32, 64], pl.DT_INT8], b: pl.Tensor[[64, 32], pl.DT_INT8],
             q: pl.Tensor[[32, 32], pl.DT_INT8], h: pl.Tensor[[32, 32], F16], s: F32):
    """q = sat_int8(rint((a @ b) * 0.05)) (quantise); h = fp16(relu(a @ b) * s) (dequantise
    with a runtime FP32 scale)."""
    a1 = pl.make_tile(pl.TileType([32, 64], pl.DT_INT8, pl.MemorySpace.Mat), addr=0)
    b1 = pl.make_tile(pl.TileType([64, 32], pl.DT_INT8, pl.MemorySpace.Mat), addr=0x800)
    a0 = pl.make_tile(pl.TileType([32, 64], pl.DT_INT8, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([64, 32], pl.DT_INT8, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([32, 32], pl.DT_INT32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        pl.load(a1, a, [0, 0])
        pl.load(b1, b, [0, 0])
        sync(MTE2, MTE1)
        pl.move(a0, a1)
        pl.move(b0, b1)
        sync(MTE1, M)
        pl.matmul(acc, a0, b0)
        sync(M, FIX)
        pl.store(q, acc, [0, 0], scale=0.05)
        pl.store(h, acc, [0, 0], relu_pre_mode=pl.ReluPreMode.NormalRelu, scale=s)


@pl.jit
def atomic_rows(x: pl.Tensor[[pl.DYNAMIC, 64], F32], out: pl.Tensor[[16, 64], F32]):
    """out += the sum of x's 16-row blocks (every block adds into out: atomic add)."""
    a = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), x.shape[0] // 16, pl.get_block_num()):
            pl.load(a, x, [t * 16, 0])
            sync(MTE2, MTE3)
            pl.store(out, a, [0, 0], atomic=pl.AtomicType.AtomicAdd)
            sync(MTE3, MTE2)


@pl.jit
def ordered(x: pl.Tensor[[4, 8, 64], F32], y: pl.Tensor[[8, 4, 64], F32]):
    """y[r] = x[:, r, :] * 2: loads with order=[0, 2] (rows from axis 0, columns from 2)."""
    a = pl.make_tile(pl.TileType([4, 64], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_vector():
        for r in pl.range(8):
            pl.load(a, x, [0, r, 0], order=[0, 2])
            sync(MTE2, V)
            pl.mul(a, a, 2.0)
            sync(V, MTE3)
            pl.store_tile(y, a, [r, 0, 0])
            sync(MTE3, MTE2)


# -- insert into Mat (UB -> L1) in a mixed kernel ------------------------------------------------

@pl.jit(auto_mutex=True)
def insert_matmul(x: pl.Tensor[[64, 64], F32], y: pl.Tensor[[64, 64], F32],
                  rhs: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    """out = (x + y) @ rhs: each vector core adds 32 rows, moves them ND -> NZ and inserts
    them into the cluster's L1 tile; the cube multiplies (the reference's insert.md kernel)."""
    v1 = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Mat, layout=pl.NZ),
                            addrs=0x10000, mutex_ids=[0])
    with pl.section_vector():
        off = pl.get_subblock_idx() * 32
        tt = pl.TileType([32, 64], F32, pl.MemorySpace.Vec)
        tx = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[1]).current()
        ty = pl.make_tile_group(type=tt, addrs=0x2000, mutex_ids=[2]).current()
        ts = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[3]).current()
        tnz = pl.make_tile_group(type=pl.TileType([32, 64], F32, pl.MemorySpace.Vec,
                                                  layout=pl.NZ),
                                 addrs=0x6000, mutex_ids=[4]).current()
        mat = v1.current()
        pl.load(tx, x, [off, 0])
        pl.load(ty, y, [off, 0])
        pl.add(ts, tx, ty)
        pl.move(tnz, ts)                          # ND -> NZ (V)
        pl.insert(mat, tnz, [off, 0])             # UB -> L1 (MTE3)
        pl.system.set_cross_core(pipe=MTE3, event_id=2)
    with pl.section_cube():
        rm = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Mat,
                                                 layout=pl.NZ), addrs=0, mutex_ids=[5]).current()
        left = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Left),
                                  addrs=0, mutex_ids=[6]).current()
        right = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Right),
                                   addrs=0, mutex_ids=[7]).current()
        acc = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Acc),
                                 addrs=0, mutex_ids=[8]).current()
        mat = v1.current()
        pl.load(rm, rhs, [0, 0])
        pl.move(right, rm)
        pl.system.wait_cross_core(pipe=MTE1, event_id=2,
                                  sync_mode=pl.CrossCoreSyncMode.INTRA_BLOCK)
        pl.move(left, mat)
        pl.matmul(acc, left, right)
        pl.store(out, acc, [0, 0])


@pl.jit(auto_mutex=True)
def insert_nosync(x: pl.Tensor[[64, 64], F32], y: pl.Tensor[[64, 64], F32],
                  rhs: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    """insert_matmul without its cross-core handshake: the cube reads L1 the vector cores
    write, unordered."""
    v1 = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Mat, layout=pl.NZ),
                            addrs=0x10000, mutex_ids=[0])
    with pl.section_vector():
        off = pl.get_subblock_idx() * 32
        tt = pl.TileType([32, 64], F32, pl.MemorySpace.Vec)
        tx = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[1]).current()
        ty = pl.make_tile_group(type=tt, addrs=0x2000, mutex_ids=[2]).current()
        ts = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[3]).current()
        tnz = pl.make_tile_group(type=pl.TileType([32, 64], F32, pl.MemorySpace.Vec,
                                                  layout=pl.NZ),
                                 addrs=0x6000, mutex_ids=[4]).current()
        mat = v1.current()
        pl.load(tx, x, [off, 0])
        pl.load(ty, y, [off, 0])
        pl.add(ts, tx, ty)
        pl.move(tnz, ts)                          # ND -> NZ (V)
        pl.insert(mat, tnz, [off, 0])             # UB -> L1 (MTE3)
    with pl.section_cube():
        rm = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Mat,
                                                 layout=pl.NZ), addrs=0, mutex_ids=[5]).current()
        left = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Left),
                                  addrs=0, mutex_ids=[6]).current()
        right = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Right),
                                   addrs=0, mutex_ids=[7]).current()
        acc = pl.make_tile_group(type=pl.TileType([64, 64], F32, pl.MemorySpace.Acc),
                                 addrs=0, mutex_ids=[8]).current()
        mat = v1.current()
        pl.load(rm, rhs, [0, 0])
        pl.move(right, rm)
        pl.move(left, mat)
        pl.matmul(acc, left, right)
        pl.store(out, acc, [0, 0])


# -- subview --------------------------------------------------------------------------------------

@pl.jit(auto_mutex=True)
def sub_store(a: pl.Tensor[[8, 64], F16], out: pl.Tensor[[4, 34], F16],
              out2: pl.Tensor[[4, 24], F16], rows: pl.DT_INT32):
    """out = a[2:6, 16:50]; out2 = the same slice of a tile whose valid shape is [rows, 40]
    (the slice is clamped: [min(4, rows - 2), 24]); the reference's subview.md kernels."""
    g = pl.make_tile_group(type=pl.TileType([8, 64], F16, pl.MemorySpace.Vec,
                                            valid_shape=[-1, -1]),
                           addrs=0x0000, mutex_ids=[0])
    with pl.section_vector():
        tile = g.next()
        pl.load(tile, a, [0, 0])
        pl.store(out, tile[2:6, 16:50], [0, 0])
        pl.set_validshape(tile, [rows, 40])
        pl.store(out2, tile[2:6, 16:50], [0, 0])


@pl.jit
def sub_compute(x: pl.Tensor[[16, 64], F32], y: pl.Tensor[[16, 64], F32]):
    """y = x with its right half (columns 32..63) doubled in place through a subview."""
    a = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        sync(MTE2, V)
        right = a[0:16, 32:]
        pl.add(right, right, right)
        sync(V, MTE3)
        pl.store(y, a, [0, 0])


@pl.jit
def sub_race(x: pl.Tensor[[16, 64], F32], y: pl.Tensor[[16, 32], F32]):
    """A subview read on MTE3 right after its parent is loaded on MTE2, no sync: a race on
    the parent's bytes."""
    a = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        pl.store(y, a[0:16, 32:64], [0, 0])


# -- bias misuse --------------------------------------------------------------------------------

@pl.jit
def bad_bias(a: pl.Tensor[[32, 64], F16], b: pl.Tensor[[64, 32], F16]):
    a0 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([64, 32], F16, pl.MemorySpace.Right), addr=0)
    s0 = pl.make_tile(pl.TileType([1, 64], F32, pl.MemorySpace.Bias), addr=0)
    acc = pl.make_tile(pl.TileType([32, 32], F32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        pl.matmul(acc, a0, b0, s0)


@pl.jit
def mm_bias_late(a: pl.Tensor[[32, 64], F16], b: pl.Tensor[[64, 32], F16],
                 bias: pl.Tensor[[1, 32], F16], c: pl.Tensor[[32, 32], F32]):
    """mm_bias with the bias moved after the MTE1 -> M sync: the matmul reads the bias
    table unordered with its move."""
    a1 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Mat), addr=0)
    b1 = pl.make_tile(pl.TileType([64, 32], F16, pl.MemorySpace.Mat), addr=0x1000)
    s1 = pl.make_tile(pl.TileType([1, 32], F16, pl.MemorySpace.Mat), addr=0x2000)
    a0 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([64, 32], F16, pl.MemorySpace.Right), addr=0)
    s0 = pl.make_tile(pl.TileType([1, 32], F32, pl.MemorySpace.Bias), addr=0)
    acc = pl.make_tile(pl.TileType([32, 32], F32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        pl.load(a1, a, [0, 0])
        pl.load(b1, b, [0, 0])
        pl.load(s1, bias, [0, 0])
        sync(MTE2, MTE1)
        pl.move(a0, a1)
        pl.move(b0, b1)
        sync(MTE1, M)
        pl.move(s0, s1)
        pl.matmul(acc, a0, b0, s0)
        sync(M, FIX)
        pl.store(c, acc, [0, 0])


@pl.jit
def big_bias(a: pl.Tensor[[16, 16], F16], b: pl.Tensor[[16, 512], F16],
             bias: pl.Tensor[[1, 512], F32], c: pl.Tensor[[16, 512], F32]):
    """c = a @ b + bias with a [1, 512] fp32 bias row (2 KiB): too big for a2's 1 KiB bias
    table, fits the 950's 4 KiB."""
    a1 = pl.make_tile(pl.TileType([16, 16], F16, pl.MemorySpace.Mat), addr=0)
    b1 = pl.make_tile(pl.TileType([16, 512], F16, pl.MemorySpace.Mat), addr=0x1000)
    s1 = pl.make_tile(pl.TileType([1, 512], F32, pl.MemorySpace.Mat), addr=0x8000)
    a0 = pl.make_tile(pl.TileType([16, 16], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([16, 512], F16, pl.MemorySpace.Right), addr=0)
    s0 = pl.make_tile(pl.TileType([1, 512], F32, pl.MemorySpace.Bias), addr=0)
    acc = pl.make_tile(pl.TileType([16, 512], F32, pl.MemorySpace.Acc), addr=0)
    with pl.section_cube():
        pl.load(a1, a, [0, 0])
        pl.load(b1, b, [0, 0])
        pl.load(s1, bias, [0, 0])
        sync(MTE2, MTE1)
        pl.move(a0, a1)
        pl.move(b0, b1)
        pl.move(s0, s1)
        sync(MTE1, M)
        pl.matmul(acc, a0, b0, s0)
        sync(M, FIX)
        pl.store(c, acc, [0, 0])


@pl.jit
def move_insert(x: pl.Tensor[[8, 32], F32], y: pl.Tensor[[16, 64], F32]):
    """y = zeros with x placed at [4, 16]: a move whose source is a sub-block of its
    destination inserts (the reference's move.md)."""
    big = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
    small = pl.make_tile(pl.TileType([8, 32], F32, pl.MemorySpace.Vec), addr=0x1000)
    with pl.section_vector():
        pl.expands(big, 0.0)
        pl.load(small, x, [0, 0])
        sync(MTE2, V)
        pl.move(big, small, offset=[4, 16])
        sync(V, MTE3)
        pl.store(y, big, [0, 0])


@pl.jit
def vec_to_mat(x: pl.Tensor[[16, 64], F32], y: pl.Tensor[[16, 64], F32],
               z: pl.Tensor[[32, 64], F32]):
    """A whole-tile move Vec -> Mat from the vector section of a mixed kernel (MTE3): both
    vector cores write the whole shared L1 tile, unordered (a race the checker reports)."""
    m = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Mat), addr=0)
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
        pl.load(a, x, [0, 0])
        sync(MTE2, MTE3)
        pl.move(m, a)
        pl.store(z, a, [pl.get_subblock_idx() * 16, 0])
        pl.system.set_cross_core(pipe=MTE3, event_id=0)
    with pl.section_cube():
        pl.system.wait_cross_core(pipe=MTE2, event_id=0)
        pl.load(m, y, [0, 0])


@pl.jit
def transposed(x: pl.Tensor[[pl.DYNAMIC, 64], F32], y: pl.Tensor[[64, pl.DYNAMIC], F32]):
    """y = x.T through loads with order=[1, 0] (tile rows from x's columns), 16 x-rows per
    tile; x's row count is a tail of the last tile."""
    a = pl.make_tile(pl.TileType([64, 16], F32, pl.MemorySpace.Vec, valid_shape=[-1, -1]),
                     addr=0)
    n = x.shape[0]
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), (n + 15) // 16, pl.get_block_num()):
            pl.set_validshape(a, [64, pl.min(16, n - t * 16)])
            pl.load(a, x, [t * 16, 0], order=[1, 0])
            sync(MTE2, MTE3)
            pl.store(y, a, [0, t * 16])
            sync(MTE3, MTE2)
