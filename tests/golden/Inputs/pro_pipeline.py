"""Pro golden and unit-test inputs for automatic pipelining (libpypto/prolang/pipeline.py):
out = relu(a @ w1) @ w2 in three stages, two on the cube (`up` runs `preload` steps ahead of
`act` and `down`: prologue, steady loop, epilogue) and one on the vector cores. `hring`
carries a @ w1 from L0C into the vector cores' UB (split by rows), `pring` carries
relu(.) in fp16 back into the cube's L1 (UB -> L1 insert). The Fault TilingKey field breaks
it: 1 a ring with fewer slots than preload, 2 work outside a stage in the pipelined loop,
3 a ring without bwd_ids, 4 an Acc -> Vec move into a tile of the wrong shape."""
import libpypto.pro as pl

M, K, H, N = 256, 64, 64, 64
TM, HALF = 32, 16
F16, F32 = pl.DT_FP16, pl.DT_FP32
MTE1, MTE2, MTE3 = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3
MM, FIX, V = pl.PipeType.M, pl.PipeType.FIX, pl.PipeType.V
Mat, Left, Right, Acc, Vec = (pl.MemorySpace.Mat, pl.MemorySpace.Left, pl.MemorySpace.Right,
                              pl.MemorySpace.Acc, pl.MemorySpace.Vec)


class Key:
    Fault = pl.TilingKeyField(bits=3, values=[0, 1, 2, 3, 4])


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


@pl.pipeline.stage
def up(t, a, a1, a0, w1r, acc1, hring):
    pl.load(a1, a, [t * TM, 0])
    sync(MTE2, MTE1)
    pl.move(a0, a1)
    sync(MTE1, MTE2, 1)
    sync(MTE1, MM)
    pl.matmul(acc1, a0, w1r)
    sync(MM, MTE1, 1)
    sync(MM, FIX)
    pl.move(hring.next(), acc1, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
    sync(FIX, MM)


@pl.pipeline.stage
def act(sub, hring, pring, y16, ynz):
    x = hring.next()
    pl.relu(x, x)
    pl.cast(y16, x)
    pl.move(ynz, y16)
    sync(V, MTE3)
    pl.insert(pring.next(), ynz, [sub * HALF, 0])
    sync(MTE3, V)


@pl.pipeline.stage
def down(t, out, pring, p0, w2r, acc2):
    pl.move(p0, pring.next())
    sync(MTE1, MM)
    pl.matmul(acc2, p0, w2r)
    sync(MM, MTE1, 1)
    sync(MM, FIX)
    pl.store(out, acc2, [t * TM, 0])
    sync(FIX, MM)


@pl.jit(tiling_key=Key, pipeline=pl.pipeline.PipelineConfig(preload=2))
def mlp(a: pl.Tensor[[M, K], F16], w1: pl.Tensor[[K, H], F16], w2: pl.Tensor[[H, N], F16],
        out: pl.Tensor[[M, N], F32]):
    a1 = pl.make_tile(pl.TileType([TM, K], F16, Mat), addr=0x0000)
    w1m = pl.make_tile(pl.TileType([K, H], F16, Mat), addr=0x1000)
    w2m = pl.make_tile(pl.TileType([H, N], F16, Mat), addr=0x3000)
    a0 = pl.make_tile(pl.TileType([TM, K], F16, Left), addr=0x0000)
    p0 = pl.make_tile(pl.TileType([TM, H], F16, Left), addr=0x1000)
    w1r = pl.make_tile(pl.TileType([K, H], F16, Right), addr=0x0000)
    w2r = pl.make_tile(pl.TileType([H, N], F16, Right), addr=0x2000)
    acc1 = pl.make_tile(pl.TileType([TM, H], F32, Acc), addr=0x0000)
    acc2 = pl.make_tile(pl.TileType([TM, N], F32, Acc), addr=0x2000)
    y16 = pl.make_tile(pl.TileType([HALF, H], F16, Vec), addr=0x2000)
    ynz = pl.make_tile(pl.TileType([HALF, H], F16, Vec, layout=pl.NZ), addr=0x2800)
    half = [HALF, H] if Fault != 4 else [TM, H]                              # noqa: F821
    hring = pl.make_tile_group(type=pl.TileType(half, F32, Vec), addrs=0x0000, depth=2,
                               fwd_ids=[0, 1], bwd_ids=[2, 3])
    if Fault == 1:                                                           # noqa: F821
        pring = pl.make_tile_group(type=pl.TileType([TM, H], F16, Mat), addrs=0x5000,
                                   depth=1, fwd_ids=[4], bwd_ids=[6])
    elif Fault == 3:                                                         # noqa: F821
        pring = pl.make_tile_group(type=pl.TileType([TM, H], F16, Mat), addrs=0x5000,
                                   depth=2, fwd_ids=[4, 5])
    else:
        pring = pl.make_tile_group(type=pl.TileType([TM, H], F16, Mat), addrs=0x5000,
                                   depth=2, fwd_ids=[4, 5], bwd_ids=[6, 7])
    with pl.section_cube():
        pl.load(w1m, w1, [0, 0])
        pl.load(w2m, w2, [0, 0])
        sync(MTE2, MTE1)
        pl.move(w1r, w1m)
        pl.move(w2r, w2m)
    with pl.section_vector():
        sub = pl.get_subblock_idx()
    c = pl.get_block_idx() // pl.get_subblock_num()
    for t in pl.range(c, M // TM, pl.get_block_num()):
        with pl.section_cube():
            up(t, a, a1, a0, w1r, acc1, hring)
        with pl.section_vector():
            act(sub, hring, pring, y16, ynz)
            if Fault == 2:                                                   # noqa: F821
                pl.relu(y16, y16)
        with pl.section_cube():
            down(t, out, pring, p0, w2r, acc2)


def reference(a, w1, w2):
    import numpy as np
    h = np.maximum(a.astype(np.float32) @ w1.astype(np.float32), 0).astype(np.float16)
    return {"out": h.astype(np.float32) @ w2.astype(np.float32)}
