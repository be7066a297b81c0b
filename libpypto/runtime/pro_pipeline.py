"""The direct L0C -> UB move of a mixed cluster (`tmov_acc2vec`, prolang/pipeline.py) in the
Pro runner: the cube core's FIX pipe writes the Vec tile at the same UB address of one or
both of its vector cores (split by rows or columns), and the race checker sees those bytes
as the vector cores' (the cube's own UB, which the generic operand check also records, is
never read). The C twin is libpypto/codegen/pro_pipeline_c.py; both split as `parts` says.
"""
from __future__ import annotations

import numpy as np

from .interp import cast_array


def parts(mode: str, r: int, c: int) -> list:
    """[(vector subblock, row0, row1, col0, col1)] of the Acc region [0, r) x [0, c) each
    vector core receives (at [0, 0] of its tile)."""
    if mode == "SingleModeVec0":
        return [(0, 0, r, 0, c)]
    if mode == "SingleModeVec1":
        return [(1, 0, r, 0, c)]
    if mode == "DualModeSplitM":
        h = (r + 1) // 2
        return [(0, 0, h, 0, c), (1, h, r, 0, c)]
    h = min(c, -(-c // 32) * 32 // 2)
    return [(0, 0, r, 0, h), (1, 0, r, h, c)]


class _DT:
    def __init__(self, np_dtype):
        self.np = np_dtype


def tmov_acc2vec(core, op, env) -> None:
    d, s = core.vals[op.operands[0]], core.vals[op.operands[1]]
    r, c = core.valid(op, env, s.shape)
    base = core.bufs["ub"]
    off = d.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    rs = d.strides[0] // d.itemsize
    th = (core.key, "FIX")
    name = op.operands[0].owner.attrs.get("name", "?")
    for v, r0, r1, c0, c1 in parts(op.attrs["mode"], r, c):
        nr, nc = r1 - r0, c1 - c0
        if nr <= 0 or nc <= 0:
            continue
        vec = core.cluster.cores[1 + v]
        span = ((d.shape[0] - 1) * rs + d.shape[1]) * d.itemsize
        view = np.lib.stride_tricks.as_strided(vec.bufs["ub"][off:off + span].view(d.dtype),
                                               d.shape, d.strides)
        val = s[r0:r1, c0:c1]
        view[:nr, :nc] = val if val.dtype == d.dtype else cast_array(val, _DT(d.dtype))
        if core.chk.enabled:
            hi = off + ((nr - 1) * rs + nc) * d.itemsize
            owner = (core.cluster.index, 1 + v) if core.cluster.grid is not None else 1 + v
            core.chk.access(th, ("tile", owner, "ub"), [off], [hi], True,
                            f"tile {name} (ub bytes at {off:#x} of vector core {v})", op)


KERNELS = {"tmov_acc2vec": tmov_acc2vec}
