"""Pro kernels for tests/unit/pro/test_pipeline.py: the L0C -> UB move in each
acc_to_vec_mode, and small misuses of pl.pipeline (a Pro kernel must live in a file)."""
from __future__ import annotations

import libpypto.pro as pl

F16, F32 = pl.DT_FP16, pl.DT_FP32
MTE1, MTE2, MTE3 = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3
MM, FIX, V = pl.PipeType.M, pl.PipeType.FIX, pl.PipeType.V
MODES = [pl.AccToVecMode.SingleModeVec0, pl.AccToVecMode.SingleModeVec1,
         pl.AccToVecMode.DualModeSplitM, pl.AccToVecMode.DualModeSplitN]
SHAPES = [[32, 64], [32, 64], [16, 64], [32, 32]]      # each vector core's tile, per mode


def sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


def _acc2vec(mode: int):
    shape, how = SHAPES[mode], MODES[mode]

    @pl.jit
    def acc2vec(a: pl.Tensor[[32, 64], F16], b: pl.Tensor[[64, 64], F16],
                out: pl.Tensor[[64, 64], F32], rows: pl.DT_INT32, cols: pl.DT_INT32):
        """Acc [32, 64] (valid rows x cols) -> the vector cores' UB in mode `how`; each
        vector core stores its whole tile at out[subblock * R, 0] (what the move left out
        stays 0)."""
        a1 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Mat), addr=0)
        b1 = pl.make_tile(pl.TileType([64, 64], F16, pl.MemorySpace.Mat), addr=0x1000)
        a0 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Left), addr=0)
        b0 = pl.make_tile(pl.TileType([64, 64], F16, pl.MemorySpace.Right), addr=0)
        acc = pl.make_tile(pl.TileType([32, 64], F32, pl.MemorySpace.Acc), addr=0)
        dst = pl.make_tile(pl.TileType(shape, F32, pl.MemorySpace.Vec), addr=0x400)
        with pl.section_cube():
            pl.load(a1, a, [0, 0])
            pl.load(b1, b, [0, 0])
            sync(MTE2, MTE1)
            pl.move(a0, a1)
            pl.move(b0, b1)
            sync(MTE1, MM)
            pl.set_validshape(acc, [rows, cols])
            pl.matmul(acc, a0, b0)
            sync(MM, FIX)
            pl.move(dst, acc, acc_to_vec_mode=how)
            pl.system.set_cross_core(pipe=FIX, event_id=0)
        with pl.section_vector():
            pl.system.wait_cross_core(pipe=MTE3, event_id=0)
            pl.store(out, dst, [pl.get_subblock_idx() * shape[0], 0])
    return acc2vec


ACC2VEC = [_acc2vec(m) for m in range(4)]


@pl.pipeline.stage
def produce(ring, acc):
    pl.move(ring.next(), acc, acc_to_vec_mode=pl.AccToVecMode.SingleModeVec0)


@pl.pipeline.stage
def consume_nothing(x):
    pl.expands(x, 0.0)


@pl.jit(pipeline=pl.pipeline.PipelineConfig(preload=1))
def ring_never_read(out: pl.Tensor[[16, 64], F32]):
    acc = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Acc), addr=0)
    x = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0x8000)
    ring = pl.make_tile_group(type=pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addrs=0,
                              depth=1, fwd_ids=[0], bwd_ids=[1])
    for t in pl.range(0, 2):
        with pl.section_cube():
            produce(ring, acc)
        with pl.section_vector():
            consume_nothing(x)


@pl.jit
def stage_outside_a_section(out: pl.Tensor[[16, 64], F32]):
    x = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_vector():
        consume_nothing(x)                   # a stage outside a pipelined loop: a plain call
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(out, x, [0, 0])


@pl.jit
def acc2vec_in_vector_section(out: pl.Tensor[[16, 64], F32]):
    acc = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Acc), addr=0)
    x = pl.make_tile(pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addr=0)
    with pl.section_cube():
        pl.move(x, acc, acc_to_vec_mode=pl.AccToVecMode.SingleModeVec0)
        pl.store(out, acc, [0, 0])
    with pl.section_vector():
        pl.move(x, acc, acc_to_vec_mode=pl.AccToVecMode.SingleModeVec0)


@pl.pipeline.stage
def mm_rows(t, a, a1, a0, b0, acc, ring):
    pl.load(a1, a, [t * 32, 0])
    sync(MTE2, MTE1)
    pl.move(a0, a1)
    sync(MTE1, MTE2, 1)
    sync(MTE1, MM)
    pl.matmul(acc, a0, b0)
    sync(MM, MTE1, 1)
    sync(MM, FIX)
    pl.move(ring.next(), acc, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
    sync(FIX, MM)


@pl.pipeline.stage
def relu_even_tiles(t, sub, out, ring):
    x = ring.next()
    if t % 2 == 0:                      # a runtime branch in a stage
        pl.relu(x, x)
    else:
        pl.neg(x, x)
    sync(V, MTE3)
    pl.store(out, x, [t * 32 + sub * 16, 0])
    sync(MTE3, V)


@pl.jit(pipeline=pl.PipelineConfig(preload=2))
def branchy(a: pl.Tensor[[192, 64], F16], b: pl.Tensor[[64, 64], F16],
            out: pl.Tensor[[192, 64], F32]):
    """out tile t = relu(a @ b) for even t, -(a @ b) for odd t (block_dim 2 or more)."""
    a1 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Mat), addr=0)
    b1 = pl.make_tile(pl.TileType([64, 64], F16, pl.MemorySpace.Mat), addr=0x1000)
    a0 = pl.make_tile(pl.TileType([32, 64], F16, pl.MemorySpace.Left), addr=0)
    b0 = pl.make_tile(pl.TileType([64, 64], F16, pl.MemorySpace.Right), addr=0)
    acc = pl.make_tile(pl.TileType([32, 64], F32, pl.MemorySpace.Acc), addr=0)
    ring = pl.make_tile_group(type=pl.TileType([16, 64], F32, pl.MemorySpace.Vec), addrs=0,
                              depth=2, fwd_ids=[0, 1], bwd_ids=[2, 3])
    with pl.section_cube():
        pl.load(b1, b, [0, 0])
        sync(MTE2, MTE1)
        pl.move(b0, b1)
    with pl.section_vector():
        sub = pl.get_subblock_idx()
    c = pl.get_block_idx() // pl.get_subblock_num()
    for t in pl.range(c, 6, pl.get_block_num()):
        with pl.section_cube():
            mm_rows(t, a, a1, a0, b0, acc, ring)
        with pl.section_vector():
            relu_even_tiles(t, sub, out, ring)
