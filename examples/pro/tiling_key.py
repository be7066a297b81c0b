"""TilingKey specialisation and TilingData: one kernel, compiled once per key.

`Op` and `Rows` are TilingKey fields: compile-time constants in the body (Rows sets the tile
shape; `if Op == 0:` keeps one arm, the other is removed). `Tiling` is TilingData: runtime
values (the number of row tiles, a scale) that never recompile. Key.is_valid refuses the
combinations this kernel does not support.
"""
from dataclasses import dataclass

import libpypto.pro as pl

C = 128
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V


class Key:
    Op = pl.TilingKeyField(bits=1, values=[0, 1])        # 0: (x + y) * scale, 1: x * y * scale
    Rows = pl.TilingKeyField(bits=2, values=[8, 16, 32])

    def is_valid(self, key):
        return not (key["Op"] == 1 and key["Rows"] == 32)


@dataclass
class Tiling:
    n_tiles: int
    scale: float


@pl.jit(tiling_key=Key)
def keyed(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32],
          z: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], td: Tiling):
    tt = pl.TileType(shape=[Rows, C], dtype=pl.DT_FP32,   # noqa: F821 -- a TilingKey field
                     target_memory=pl.MemorySpace.Vec)
    a = pl.make_tile(tt, addr=0x0000)
    b = pl.make_tile(tt, addr=0x4000)
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), td.n_tiles, pl.get_block_num()):
            r = t * Rows                                   # noqa: F821
            pl.load(a, x, [r, 0])
            pl.load(b, y, [r, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            if Op == 0:                                    # noqa: F821
                pl.add(a, a, b)
            else:
                pl.mul(a, a, b)
            pl.mul(a, a, td.scale)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(z, a, [r, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


def reference(x, y, td_scale, Op):
    import numpy as np
    s = np.float32(td_scale)
    return {"z": (((x + y) if Op == 0 else (x * y)) * s).astype(np.float32)}


EXAMPLE = {"kernel": "keyed", "block_dim": 3, "bind": {"x_0": 256, "td_n_tiles": 16,
                                                       "td_scale": 0.5},
           "const": {"Op": 0, "Rows": 16}}
