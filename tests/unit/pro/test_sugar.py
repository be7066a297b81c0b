"""Pro mode's trace-time helpers (prolang/sugar.py): pl.const, pl.struct, pl.struct_array,
pl.make_tuple and pl.Array TilingData fields, used in a kernel checked against numpy, and
their errors."""
from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.errors import CompileError, UsageError

MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
R, C = 8, 32


@dataclasses.dataclass
class Tiling:
    bias: int
    extra: pl.Array[int, 4]


Tiling2 = dataclasses.make_dataclass("Tiling2", [("bias", "int"), ("extra", "int[4]")])


def _body(x, y, tiling):
    tt = pl.TileType(shape=[R, C], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tiles = pl.make_tuple(a=pl.make_tile(tt, addr=0), b=pl.make_tile(tt, addr=0x1000))
    s = pl.struct("RunInfo", base=0, offsets=[0, 0, 0, 0])
    s.base = tiling.bias
    s.offsets[1] = 10
    s.offsets[2] = tiling.extra[3]
    s.offsets[3] = tiling.extra[tiling.bias % 4]          # a runtime index
    half = pl.const(0.3, pl.DT_FP16)
    n = x.shape[0] // R
    with pl.section_vector():
        for t in pl.range(pl.get_block_idx(), n, pl.get_block_num()):
            a, b = tiles
            pl.load(tiles.a, x, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.add(b, a, s.offsets[t % 4])
            pl.add(tiles.b, tiles.b, s.base)
            pl.mul(tiles[1], tiles[1], half)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(y, b, [t * R, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)


@pl.jit
def sugar(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32],
          tiling: Tiling):
    _body(x, y, tiling)


@pl.jit
def sugar2(x: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32], y: pl.Tensor[[pl.DYNAMIC, C], pl.DT_FP32],
           tiling: Tiling2):
    _body(x, y, tiling)


@pytest.mark.parametrize("k,cls", [(sugar, Tiling), (sugar2, Tiling2)])
def test_struct_make_tuple_const_and_array_fields(k, cls):
    x = np.random.default_rng(3).standard_normal((6 * R, C)).astype(np.float32)
    y = np.zeros_like(x)
    extra = [5, 6, 7, 8]
    k[4](x, y, cls(bias=2, extra=extra))
    offsets = [0, 10, extra[3], extra[2 % 4]]
    half = np.float32(np.float16(0.3))
    want = np.concatenate([((x[t * R:(t + 1) * R] + np.float32(offsets[t % 4]) +
                             np.float32(2)) * half) for t in range(6)])
    np.testing.assert_array_equal(y, want)


def test_const_rounds_and_checks():
    assert pl.const(0.1, pl.DT_FP16) == float(np.float16(0.1)) != 0.1
    assert pl.const(0.1, pl.DT_BF16) == float(np.asarray(0.1).astype(ml_dtypes.bfloat16))
    assert pl.const(-1, pl.DT_INT32) == -1 and isinstance(pl.const(3, pl.DT_INT64), int)
    assert pl.const(1, pl.DT_BOOL) is True
    for value, dtype, msg in [(300, pl.DT_INT8, "out of range"), (1.5, pl.DT_INT32, "takes an int"),
                              ("1", pl.DT_FP32, "Python int or float"), (1, "f32", "pl.DT_*"),
                              (2, pl.DT_BOOL, "0 or 1")]:
        with pytest.raises(CompileError, match=msg):
            pl.const(value, dtype)


def test_make_tuple_and_struct_outside_a_trace():
    t = pl.make_tuple(first=1, second=(2, 3))
    assert t.first == 1 and t.second == (2, 3) and t[1] == (2, 3) and tuple(t) == (1, (2, 3))
    with pytest.raises(CompileError, match="immutable"):
        t.first = 4
    with pytest.raises(CompileError, match="no field 'third'"):
        t.third
    with pytest.raises(CompileError, match="keyword arguments only"):
        pl.make_tuple(1)
    s = pl.struct("Msg", batch=0, offs=[1, 2])
    s.batch = 8
    s.offs[1] = 5
    assert (s.batch, s.offs[0], s.offs[1], len(s.offs)) == (8, 1, 5, 2)
    for bad, msg in [(lambda: setattr(s, "nope", 1), "no field 'nope'"),
                     (lambda: setattr(s, "offs", 1), "array field"),
                     (lambda: s.offs.__setitem__(2, 1), r"not in \[0, 2\)"),
                     (lambda: pl.struct("9bad", a=1), "C identifier"),
                     (lambda: pl.struct("Empty"), "at least one field"),
                     (lambda: setattr(s, "batch", "text"), "must be a scalar")]:
        with pytest.raises(CompileError, match=msg):
            bad()
    arr = pl.struct_array(3, "Slot", v=0)
    arr[2].v = 7
    assert [arr[i].v for i in range(3)] == [0, 0, 7]
    with pytest.raises(CompileError, match="positive int"):
        pl.struct_array(0, "Slot", v=0)


@pl.jit
def carried(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[16, 32], pl.DT_FP32]):
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)
    a = pl.make_tile(tt, addr=0)
    acc = pl.struct("LoopT", v=0)
    with pl.section_vector():
        pl.load(a, x, [0, 0])
        for i in pl.range(0, 4):
            acc.v = acc.v + i
        pl.add(a, a, acc.v)
        pl.store(y, a, [0, 0])


def test_a_struct_field_carried_through_a_runtime_loop_is_refused():
    with pytest.raises(CompileError) as e:
        carried.compile({}, {})
    assert "LoopT.v is written inside a pl.range loop" in str(e.value)
    assert "test_sugar.py:" in str(e.value)


def test_array_field_errors():
    with pytest.raises(CompileError, match="length is an int"):
        pl.Array[int, 0]
    with pytest.raises(CompileError, match="int, float or bool"):
        pl.Array[str, 2]
    x = np.zeros((R, C), np.float32)
    with pytest.raises(UsageError, match="sequence of 4 ints"):
        sugar[1](x, x.copy(), Tiling(bias=1, extra=[1, 2]))
