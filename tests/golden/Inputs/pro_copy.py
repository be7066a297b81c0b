"""Pro golden inputs: one copy kernel, broken three ways by the --const Fault TilingKey
field (0: correct, 1: the MTE2 -> V sync dropped, 2: two live tiles overlap, 3: a tile past
its buffer's capacity)."""
import libpypto.pro as pl

MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


class Key:
    Fault = pl.TilingKeyField(bits=2, values=[0, 1, 2, 3])


@pl.jit(tiling_key=Key)
def copy(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32]):
    tt = pl.TileType(shape=[8, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0x0000)
    b = pl.make_tile(tt, addr=0x0400 if Fault == 2 else 0x0800)             # noqa: F821
    if Fault == 3:                                                          # noqa: F821
        c = pl.make_tile(tt, addr=196608 - 1024)
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), x.shape[0] // 8, pl.get_block_num()):
            pl.load(a, x, [t * 8, 0])
            if Fault != 1:                                                  # noqa: F821
                pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
                pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.exp(b, a)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=1)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE2, event_id=1)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, b, [t * 8, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=0)
