"""SIMT kernels of the pl.simt tests (test_simt.py): one per feature."""
import libpypto.pro as pl

MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
TX, TY, TZ = 4, 2, 3
NT = TX * TY * TZ
N = 64


def _v_to_mte3():
    pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
    pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)


def _mte2_to_v():
    pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=1)
    pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=1)


# -- thread context (the reference's test_thread_context, 3-D) --------------------------------

@pl.simt.function(max_threads=32)
def write_context(dst: pl.Tile[[1, NT], pl.DT_INT32]):
    th, bd, bi, gd = pl.simt.thread_idx(), pl.simt.block_dim(), pl.simt.block_idx(), \
        pl.simt.grid_dim()
    tid = pl.simt.linear_thread_idx()
    coord = th.x + th.y * bd.x + th.z * bd.x * bd.y
    value = (th.x + th.y * 4 + th.z * 8 + bd.x * 16 + bd.y * 128 + bd.z * 256 + bi.x * 512 +
             bi.y * 4096 + bi.z * 8192 + gd.x * 16384 + gd.y * 131072 + gd.z * 262144 +
             pl.simt.warp_size() * 1000000)
    if tid == coord:
        dst[0, tid] = value


@pl.jit
def context(out: pl.Tensor[[pl.DYNAMIC, NT], pl.DT_INT32]):
    dst = pl.make_tile(pl.TileType(shape=[1, NT], dtype=pl.DT_INT32), addr=0)
    with pl.section_vector():
        pl.simt.launch(write_context, threads=(TX, TY, TZ), args=(dst,))
        _v_to_mte3()
        pl.store(out, dst, [pl.get_block_idx(), 0])


# -- per-thread arithmetic, GM loads and stores ------------------------------------------------

@pl.simt.function(max_threads=N)
def arith(o: pl.Tensor[[16, N], pl.DT_INT64], f: pl.Tensor[[8, N], pl.DT_FP32],
          a: pl.Tensor[[N], pl.DT_INT32], x: pl.Tensor[[N], pl.DT_FP32], k: pl.DT_INT32,
          s: pl.DT_FP32):
    t = pl.simt.linear_thread_idx()
    v = a[t] * 3 - 7                       # negative values for // and %
    o[0, t] = v // k
    o[1, t] = v % k
    o[2, t] = (v << 3) ^ (v >> 1)
    o[3, t] = (v & 12) | 1
    o[4, t] = pl.simt.min(v, t) + pl.max(v, 2)
    o[5, t] = abs(v) - (-v)
    o[6, t] = ~v
    o[7, t] = (v * 1000003) * 1000000007 * 1000000009          # wraps in int64
    o[8, t] = (v < t) + (v <= 0) * 2 + (v > 3) * 4 + (v >= -2) * 8 + (v == 1) * 16 + \
        (v != 5) * 32
    o[9, t] = (x[t] * 1000.0).astype(pl.DT_INT64)
    o[10, t] = (v > 0) and (t % 3 == 0)
    o[11, t] = (v > 0) or (t % 3 == 0)
    o[12, t] = not (v > 0)
    o[13, t] = v if v > t else t * 2
    o[14, t] = k // 2 + t
    o[15, t] = (x[t] / 0.0).astype(pl.DT_INT64)                 # +-inf, NaN saturate
    f[0, t] = x[t] * s + v                 # int + float is float
    f[1, t] = x[t] / (t + 1)
    f[2, t] = pl.simt.max(x[t], 0.25) - pl.simt.min(x[t], -0.25)
    f[3, t] = -x[t] + abs(x[t])
    f[4, t] = x[t] * x[t] - s / 3.0
    f[5, t] = v / 4                        # / is float division
    f[6, t] = (x[t] < s) * 1.5
    f[7, t] = v.astype(pl.DT_FP32) * 0.5


@pl.jit
def arith_kernel(o: pl.Tensor[[16, N], pl.DT_INT64], f: pl.Tensor[[8, N], pl.DT_FP32],
                 a: pl.Tensor[[N], pl.DT_INT32], x: pl.Tensor[[N], pl.DT_FP32],
                 k: pl.DT_INT32, s: pl.DT_FP32):
    with pl.section_vector():
        pl.simt.launch(arith, threads=N, args=(o, f, a, x, k, s))


# -- divergence: if/elif/else, per-thread loops, guarded loads ---------------------------------

@pl.simt.function(max_threads=N)
def diverge(o: pl.Tensor[[N, 8], pl.DT_INT32], x: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32]):
    t = pl.simt.linear_thread_idx()
    n = x.shape[0]
    r = 0
    if t % 3 == 0:
        r = 10
    elif t % 3 == 1:
        r = 20 + t
    else:
        r = r - 1
    o[t, 0] = r
    for k in pl.range(t % 5):
        o[t, 1 + k] = k * t
    big = t < n and x[t] > 0               # x[t] only where t < n
    o[t, 6] = big
    for j in pl.range(0, 3):
        if j == t % 3:
            o[t, 7] = j


@pl.jit
def diverge_kernel(o: pl.Tensor[[N, 8], pl.DT_INT32], x: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32]):
    with pl.section_vector():
        pl.simt.launch(diverge, threads=N, args=(o, x))


# -- atomics on UB, old values in thread order --------------------------------------------------

@pl.simt.function(max_threads=N)
def ub_atomics(u: pl.Tile[[1, 16], pl.DT_INT32], old: pl.Tile[[9, N], pl.DT_INT32]):
    t = pl.simt.linear_thread_idx()
    old[0, t] = pl.simt.atomic_add(u, [0, t % 4], t)
    old[1, t] = pl.simt.atomic_sub(u, [0, 4], t * 3)
    old[2, t] = pl.simt.atomic_max(u, [0, 5], (t * 37) % 101)
    old[3, t] = pl.simt.atomic_min(u, [0, 6], (t * 53) % 97)
    old[4, t] = pl.simt.atomic_exch(u, [0, 7], t)
    old[5, t] = pl.simt.atomic_cas(u, [0, 8], t - 1, t)
    old[6, t] = pl.simt.atomic_and(u, [0, 9], ~(1 << (t % 31)))
    old[7, t] = pl.simt.atomic_or(u, [0, 10], 1 << (t % 31))
    old[8, t] = pl.simt.atomic_xor(u, [0, 11], t * 7919)


@pl.jit
def ub_atomic_kernel(u0: pl.Tensor[[1, 16], pl.DT_INT32], uo: pl.Tensor[[1, 16], pl.DT_INT32],
                     oo: pl.Tensor[[9, N], pl.DT_INT32]):
    u = pl.make_tile(pl.TileType(shape=[1, 16], dtype=pl.DT_INT32), addr=0)
    old = pl.make_tile(pl.TileType(shape=[9, N], dtype=pl.DT_INT32), addr=0x100)
    with pl.section_vector():
        pl.load(u, u0, [0, 0])
        _mte2_to_v()
        pl.simt.launch(ub_atomics, threads=N, args=(u, old))
        _v_to_mte3()
        pl.store(uo, u, [0, 0])
        pl.store(oo, old, [0, 0])


# -- GM atomics across blocks ------------------------------------------------------------------

@pl.simt.function(max_threads=N)
def gm_count(c: pl.Tensor[[1, 8], pl.DT_INT32], m: pl.Tensor[[1], pl.DT_INT32],
             x: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32]):
    g = pl.simt.block_idx().x * pl.simt.block_dim().x + pl.simt.linear_thread_idx()
    for i in pl.range(g, x.shape[0], pl.simt.grid_dim().x * pl.simt.block_dim().x):
        pl.simt.atomic_add(c, [0, x[i] % 8], 1)
        pl.simt.atomic_max(m, [0], x[i] * 1000 + i)


@pl.jit
def gm_count_kernel(c: pl.Tensor[[1, 8], pl.DT_INT32], m: pl.Tensor[[1], pl.DT_INT32],
                    x: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32]):
    with pl.section_vector():
        pl.simt.launch(gm_count, threads=N, args=(c, m, x))


@pl.simt.function(max_threads=N)
def gm_float(acc: pl.Tensor[[1, 4], pl.DT_FP32], slot: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32],
             x: pl.Tensor[[pl.DYNAMIC], pl.DT_FP32], ctr: pl.Tensor[[1], pl.DT_INT32]):
    g = pl.simt.block_idx().x * pl.simt.block_dim().x + pl.simt.linear_thread_idx()
    if g < x.shape[0]:
        pl.simt.atomic_add(acc, [0, g % 4], x[g])
        slot[g] = pl.simt.atomic_add(ctr, [0], 1)       # an old value used: serial


@pl.jit
def gm_float_kernel(acc: pl.Tensor[[1, 4], pl.DT_FP32], slot: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32],
                    x: pl.Tensor[[pl.DYNAMIC], pl.DT_FP32], ctr: pl.Tensor[[1], pl.DT_INT32]):
    with pl.section_vector():
        pl.simt.launch(gm_float, threads=N, args=(acc, slot, x, ctr))


# -- 2-D launch, callees, a tile's runtime valid shape (the reference's tests) -------------------

@pl.simt.function
def affine(value, scale, delta):
    return value * scale + delta


@pl.simt.function
def store_value(dst, index, value):
    dst[0, index] = value


@pl.simt.function(max_threads=N)
def transform_2d(dst: pl.Tile[[1, N], pl.DT_FP32], src: pl.Tile[[1, N], pl.DT_FP32],
                 scale: pl.DT_FP32, delta: pl.DT_FP32):
    th = pl.simt.thread_idx()
    tid = th.x + th.y * pl.simt.block_dim().x
    store_value(dst, tid, affine(src[0, tid], scale, delta))


@pl.jit
def callee_kernel(x: pl.Tensor[[1, N], pl.DT_FP32], out: pl.Tensor[[1, N], pl.DT_FP32],
                  scale: pl.DT_FP32, delta: pl.DT_FP32):
    tt = pl.TileType(shape=[1, N], dtype=pl.DT_FP32)
    src, dst = pl.make_tile(tt, addr=0), pl.make_tile(tt, addr=0x400)
    with pl.section_vector():
        pl.load(src, x, [0, 0])
        _mte2_to_v()
        pl.simt.launch(transform_2d, threads=(16, 4), args=(dst, src, scale, delta))
        _v_to_mte3()
        pl.store(out, dst, [0, 0])


@pl.simt.function(max_threads=256)
def ub_valid(dst: pl.Tile[[8, 64], pl.DT_FP16], src: pl.Tile[[8, 64], pl.DT_FP16],
             delta: pl.DT_FP32):
    tid = pl.simt.linear_thread_idx()
    rows, cols = src.valid_shape
    row, col = tid // cols, tid % cols
    if row < rows:
        dst[row, col] = src[row, col] + delta


@pl.jit
def valid_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                 out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16], delta: pl.DT_FP32):
    tt = pl.TileType(shape=[8, 64], dtype=pl.DT_FP16, valid_shape=[-1, -1])
    src, dst = pl.make_tile(tt, addr=0), pl.make_tile(tt, addr=0x800)
    with pl.section_vector():
        pl.set_validshape(src, [x.shape[0], x.shape[1]])
        pl.set_validshape(dst, [x.shape[0], x.shape[1]])
        pl.load(src, x, [0, 0])
        _mte2_to_v()
        pl.simt.launch(ub_valid, threads=256, args=(dst, src, delta))
        _v_to_mte3()
        pl.store(out, dst, [0, 0])


# -- run-time errors and races -------------------------------------------------------------------

@pl.simt.function(max_threads=N)
def gather(o: pl.Tensor[[N], pl.DT_FP32], x: pl.Tensor[[pl.DYNAMIC], pl.DT_FP32],
           idx: pl.Tensor[[N], pl.DT_INT32], d: pl.DT_INT32):
    t = pl.simt.linear_thread_idx()
    o[t] = x[idx[t] // d]


@pl.jit
def gather_kernel(o: pl.Tensor[[N], pl.DT_FP32], x: pl.Tensor[[pl.DYNAMIC], pl.DT_FP32],
                  idx: pl.Tensor[[N], pl.DT_INT32], d: pl.DT_INT32):
    with pl.section_vector():
        pl.simt.launch(gather, threads=N, args=(o, x, idx, d))


@pl.simt.function(max_threads=N)
def plain_or_atomic(o: pl.Tensor[[1, 4], pl.DT_INT32], mode: pl.DT_INT32):
    t = pl.simt.linear_thread_idx()
    if t == 0:
        if mode == 0:
            o[0, 1] = pl.simt.block_idx().x            # plain stores from every block
        elif mode == 1:
            pl.simt.atomic_add(o, [0, 1], 1)
            o[0, 2 + pl.simt.block_idx().x % 2] = o[0, 1]      # a plain read of it too
        elif mode == 3:
            if pl.simt.block_idx().x == 0:
                o[0, 1] = 5                                     # block 0 also stores it
            pl.simt.atomic_add(o, [0, 1], 1)
        else:
            pl.simt.atomic_add(o, [0, 1], 1)


@pl.jit
def race_kernel(o: pl.Tensor[[1, 4], pl.DT_INT32], mode: pl.DT_INT32):
    with pl.section_vector():
        pl.simt.launch(plain_or_atomic, threads=N, args=(o, mode))


# -- the reference's auto-mutex launch: a tile-group slot under auto_mutex=True ----------------

@pl.simt.function(max_threads=N)
def add_delta(data: pl.Tile[[1, N], pl.DT_FP32], delta: pl.DT_FP32):
    tid = pl.simt.linear_thread_idx()
    data[0, tid] = data[0, tid] + delta


@pl.jit(auto_mutex=True)
def auto_mutex_kernel(x: pl.Tensor[[1, N], pl.DT_FP32], out: pl.Tensor[[1, N], pl.DT_FP32],
                      delta: pl.DT_FP32):
    tt = pl.TileType(shape=[1, N], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    data = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
    with pl.section_vector():
        pl.load(data.current(), x, [0, 0])
        pl.simt.launch(add_delta, threads=N, args=(data.current(), delta))
        pl.store(out, data.current(), [0, 0])


# -- an int64 scalar past double's 53 bits ------------------------------------------------------

@pl.simt.function(max_threads=N)
def add_big(o: pl.Tensor[[N], pl.DT_INT64], k: pl.DT_INT64):
    t = pl.simt.linear_thread_idx()
    o[t] = k + t * 3


@pl.jit
def big_scalar_kernel(o: pl.Tensor[[N], pl.DT_INT64], k: pl.DT_INT64):
    with pl.section_vector():
        pl.simt.launch(add_big, threads=N, args=(o, k))


# -- int64 edges: floor division and modulo by negatives, INT64_MIN // -1, shifts ----------------

@pl.simt.function(max_threads=N)
def edges(o: pl.Tensor[[7, N], pl.DT_INT64], a: pl.Tensor[[N], pl.DT_INT64],
          b: pl.Tensor[[N], pl.DT_INT64]):
    t = pl.simt.linear_thread_idx()
    x, y = a[t], b[t]
    o[0, t] = x // y
    o[1, t] = x % y
    o[2, t] = x << y
    o[3, t] = x >> y
    o[4, t] = x * y
    o[5, t] = -x
    o[6, t] = abs(x) + (x - y)


@pl.jit
def edges_kernel(o: pl.Tensor[[7, N], pl.DT_INT64], a: pl.Tensor[[N], pl.DT_INT64],
                 b: pl.Tensor[[N], pl.DT_INT64]):
    with pl.section_vector():
        pl.simt.launch(edges, threads=N, args=(o, a, b))


# -- a mixed kernel: SIMT on both vector cores of a cluster (matmul_bias_relu's relu) -----------

M2, N2, K2, TM2 = 128, 64, 64, 32
H2 = TM2 // 2
MTE1, MM, FIX = pl.PipeType.MTE1, pl.PipeType.M, pl.PipeType.FIX


def _sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.simt.function(max_threads=256)
def relu_and_ids(xt: pl.Tile[[H2, N2], pl.DT_FP32], ids: pl.Tensor[[pl.DYNAMIC, 2], pl.DT_INT32]):
    tid = pl.simt.linear_thread_idx()
    for e in pl.range(tid, H2 * N2, pl.simt.block_dim().x):
        v = xt[e // N2, e % N2]
        if v < 0.0:
            xt[e // N2, e % N2] = 0.0
    if tid == 0:
        ids[pl.simt.block_idx().x, 0] = pl.simt.block_idx().x
        ids[pl.simt.block_idx().x, 1] = pl.simt.grid_dim().x


@pl.jit
def mixed_kernel(a: pl.Tensor[[M2, K2], pl.DT_FP16], b: pl.Tensor[[K2, N2], pl.DT_FP16],
                 ws: pl.Tensor[[pl.DYNAMIC, N2], pl.DT_FP32],
                 out: pl.Tensor[[M2, N2], pl.DT_FP32], ids: pl.Tensor[[pl.DYNAMIC, 2], pl.DT_INT32]):
    a1 = pl.make_tile(pl.TileType([TM2, K2], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x0000)
    b1 = pl.make_tile(pl.TileType([K2, N2], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x1000)
    a0 = pl.make_tile(pl.TileType([TM2, K2], pl.DT_FP16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([K2, N2], pl.DT_FP16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([TM2, N2], pl.DT_FP32, pl.MemorySpace.Acc), addr=0)
    xt = pl.make_tile(pl.TileType([H2, N2], pl.DT_FP32, pl.MemorySpace.Vec), addr=0x0000)
    with pl.section_cube():
        c = pl.get_block_idx()
        pl.load(b1, b, [0, 0])
        _sync(MTE2, MTE1)
        pl.move(b0, b1)
        for t in pl.range(c, M2 // TM2, pl.get_block_num()):
            pl.load(a1, a, [t * TM2, 0])
            _sync(MTE2, MTE1)
            pl.move(a0, a1)
            _sync(MTE1, MTE2, 1)
            _sync(MTE1, MM)
            pl.matmul(acc, a0, b0)
            _sync(MM, MTE1, 1)
            _sync(MM, FIX)
            pl.system.wait_cross_core(pipe=FIX, event_id=1)
            pl.store(ws, acc, [c * TM2, 0])
            pl.system.set_cross_core(pipe=FIX, event_id=0)
            _sync(FIX, MM)
        pl.system.wait_cross_core(pipe=FIX, event_id=1)
    with pl.section_vector():
        c = pl.get_block_idx() // 2
        row = pl.get_subblock_idx() * H2
        pl.system.set_cross_core(pipe=MTE2, event_id=1)
        for t in pl.range(c, M2 // TM2, pl.get_block_num()):
            pl.system.wait_cross_core(pipe=MTE2, event_id=0)
            pl.load(xt, ws, [c * TM2 + row, 0])
            pl.system.set_cross_core(pipe=MTE2, event_id=1)
            _sync(MTE2, V)
            pl.simt.launch(relu_and_ids, threads=256, args=(xt, ids))
            _sync(V, MTE3)
            pl.store(out, xt, [t * TM2 + row, 0])
            _sync(MTE3, MTE2)
