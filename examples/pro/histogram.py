"""histogram: hist += the counts of x % BINS, int32, with SIMT thread blocks (pl.simt) and
atomic adds, 1-D launches.

Each block takes every block_num-th ROWS-row tile of x (the tail through the valid shape),
loads it into UB and launches `count`: THREADS threads stride over the tile's valid
elements and each adds 1 to its value's bin of a per-block histogram in UB with
pl.simt.atomic_add (UB atomics: exact, in thread order). After its last tile the block
launches `flush`, one thread per bin, which adds the block's counts into the GM histogram
with GM atomic adds: the blocks' adds commute (integers, old values unused), so the result
is exact for any thread count and the race checker accepts the blocks' overlapping atomics.
"""
import libpypto.pro as pl

ROWS, COLS, BINS, THREADS = 8, 64, 16, 128
MTE2, V = pl.PipeType.MTE2, pl.PipeType.V


@pl.simt.function(max_threads=THREADS)
def count(local: pl.Tile[[1, BINS], pl.DT_INT32], a: pl.Tile[[ROWS, COLS], pl.DT_INT32]):
    cols = a.valid_shape[1]
    for e in pl.range(pl.simt.linear_thread_idx(), a.valid_shape[0] * cols,
                      pl.simt.block_dim().x):
        pl.simt.atomic_add(local, [0, a[e // cols, e % cols] % BINS], 1)


@pl.simt.function(max_threads=BINS)
def flush(hist: pl.Tensor[[1, BINS], pl.DT_INT32], local: pl.Tile[[1, BINS], pl.DT_INT32]):
    b = pl.simt.thread_idx().x
    c = local[0, b]
    if c != 0:
        pl.simt.atomic_add(hist, [0, b], c)


@pl.jit
def histogram(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_INT32],
              hist: pl.Tensor[[1, BINS], pl.DT_INT32]):
    tt = pl.TileType(shape=[ROWS, COLS], dtype=pl.DT_INT32, target_memory=pl.MemorySpace.Vec,
                     valid_shape=[-1, -1])
    ht = pl.TileType(shape=[1, BINS], dtype=pl.DT_INT32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0x0000)
    local = pl.make_tile(ht, addr=0x1000)
    n = x.shape[0]
    with pl.section_vector():
        pl.expands(local, 0)
        for t in pl.range(pl.get_block_idx(), (n + ROWS - 1) // ROWS, pl.get_block_num()):
            pl.set_validshape(a, [pl.min(ROWS, n - t * ROWS), COLS])
            pl.load(a, x, [t * ROWS, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.simt.launch(count, threads=THREADS, args=(local, a))
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=1)    # a is free again
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE2, event_id=1)
        pl.simt.launch(flush, threads=BINS, args=(hist, local))


def reference(x, hist):
    import numpy as np
    return {"hist": hist + np.bincount(x.reshape(-1) % BINS, minlength=BINS).reshape(1, BINS)}


EXAMPLE = {"kernel": "histogram", "block_dim": 4, "bind": {"x_0": 300}}
