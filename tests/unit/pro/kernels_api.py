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
