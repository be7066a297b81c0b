"""libpypto.ir.types and core: dtypes, tensor and tile types, documents and values."""
from __future__ import annotations

import numpy as np
import pytest

from libpypto.ir import expr as E
from libpypto.ir import types as T
from libpypto.ir.core import LEVELS, Document, Loc, clone_ops, copy_doc, level_index, make, users


def test_dtypes():
    assert list(T.DTYPES) == ["f32", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16",
                             "u32", "u64", "bool", "f8e4m3", "f8e5m2", "e8m0"]
    for d in T.DTYPES.values():
        assert T.dtype(d.name) is d
        assert d.np.itemsize == d.itemsize
        assert T.from_numpy(d.np) is d
        assert repr(d) == f"pypto.{d.api}" and str(d) == d.name
    assert T.BF16.np.name == "bfloat16"
    assert T.F32.is_float and not T.I32.is_float
    with pytest.raises(ValueError, match=r"unknown dtype 'f128' \(known: f32, f16, "):
        T.dtype("f128")
    with pytest.raises(ValueError, match="numpy dtype complex64 has no pypto equivalent"):
        T.from_numpy(np.dtype("complex64"))


def test_tensor_and_tile_types():
    n = E.sym("N")
    t = T.TensorType(T.F32, (n, E.cdiv(n, 8), 4))
    assert str(t) == "f32[N, cdiv(N, 8), 4]" and t.rank == 3
    assert t.numel() == E.mul(n, E.cdiv(n, 8), 4)
    assert T.TensorType(T.F32, ()).numel() == 1
    tile = T.TileType("ub", T.F16, (8, 64))
    assert str(tile) == "ub.f16[8, 64]" and tile.rank == 2 and tile.nbytes == 8 * 64 * 2
    assert str(T.ScalarType(T.I32)) == "scalar.i32"
    # rows pad to the 32-byte alignment the buffers use
    assert T.TileType("ub", T.F32, (8, 3)).padded_nbytes() == 8 * 32
    assert T.TileType("ub", T.F32, (8, 9)).padded_nbytes() == 8 * 64
    assert T.TileType("ub", T.F32, (8, 9)).padded_nbytes(align=64) == 8 * 64
    assert T.TileType("ub", T.F32, ()).padded_nbytes() == 32
    assert T.TileType("ub", T.F32, (4, 8)) == T.TileType("ub", T.F32, (4, 8))
    assert hash(T.TileType("ub", T.F32, (4, 8))) == hash(T.TileType("ub", T.F32, (4, 8)))


def test_levels():
    assert LEVELS == ("tensor", "tile", "block", "exec", "sched", "code", "run")
    assert [level_index(lv) for lv in LEVELS] == list(range(7))
    assert str(Loc("op.py", 3)) == "op.py:3"


def test_ops_values_and_copies():
    t = T.TensorType(T.F32, (4,))
    a = make("param", [], [t], {"index": 0}, names=["x"], loc=Loc("op.py", 1))
    b = make("exp", [a.result], [t], {"tile": [4]})
    loop = make("loop", [], [], {"var": "i"}, regions=[[make("use", [b.result])]])
    doc = Document("tensor", [a, b, loop], {"m": [1, {"k": 2}]}, [{"tool": "t", "options": {}}])
    assert a.result.owner is a and a.result.name == "x"
    assert [op.name for op in doc.walk()] == ["param", "exp", "loop", "use"]
    assert users(doc.body)[b.result] == [loop.regions[0][0]]
    with pytest.raises(AssertionError):
        loop.result
    c = copy_doc(doc, "tile")
    assert c.level == "tile" and doc.level == "tensor"
    assert c.body[0] is not a and c.body[1].operands[0] is c.body[0].result
    assert c.body[2].regions[0][0].operands[0] is c.body[1].result
    c.attrs["m"][1]["k"] = 99
    c.body[1].attrs["tile"].append(1)
    assert doc.attrs["m"][1]["k"] == 2 and b.attrs["tile"] == [4]
    vmap = {}
    cloned = clone_ops([b], vmap)
    assert cloned[0].operands[0] is a.result and vmap[b.result] is cloned[0].result
    doc.with_producer("pypto-x", {"o": 1})
    assert doc.producer[-1] == {"tool": "pypto-x", "options": {"o": 1}}
