"""libpypto.passes.footprint: one canonical footprint per box, whatever way it is written."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import libpypto as pypto
from libpypto.ir import expr as E
from libpypto.ir.core import Value, make
from libpypto.ir.types import F32, TensorType, TileType
from libpypto.passes.footprint import access_key, canonical

B, N, M = E.sym("B"), E.sym("N"), E.sym("M")
g0, g1 = E.sym("g0"), E.sym("g1")
ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("e, grid, want", [
    # a batch dim of tile 1 over a grid that covers it exactly
    (E.minimum(1, E.sub(B, g0)), (B, 1), 1),
    # full tiles of a static size: g1 <= 2
    (E.minimum(16, E.sub(48, E.mul(g1, 16))), (B, 3), 16),
    (E.minimum(16, E.sub(48, E.mul(g1, 16))), (B, 4), E.minimum(16, E.sub(48, E.mul(g1, 16)))),
    # a tail stays a tail
    (E.minimum(8, E.sub(N, E.mul(g0, 8))), (E.cdiv(N, 8),),
     E.minimum(8, E.sub(N, E.mul(g0, 8)))),
    # a grid of twice the batch can overrun it: no proof, nothing dropped
    (E.minimum(1, E.sub(B, g0)), (E.mul(B, 2),), E.minimum(1, E.sub(B, g0))),
    # one instance along a dim: its grid variable is 0
    (E.add(E.mul(g1, 64), 8), (B, 1), 8),
    (E.minimum(64, E.sub(M, E.mul(g1, 64))), (B, 1), E.minimum(64, M)),
    (E.maximum(0, E.sub(B, g0)), (B,), E.sub(B, g0)),
    (E.mul(g0, 8), (E.cdiv(N, 8),), E.mul(g0, 8)),
    (7, (B,), 7),
])
def test_canonical(e, grid, want):
    assert canonical(e, grid) == want


def _access(name, shape, offsets, valid, gm):
    tile = Value(TileType("ub", F32, shape))
    return make(name, [tile, gm], attrs={"offsets": offsets, "valid": valid})


def test_the_same_box_written_two_ways_has_one_key():
    gm = Value(TensorType(F32, (B, 64, 64)), "t")
    grid = [B, 1, 1]
    store = _access("tstore", (64, 64), [g0, 0, 0], [1, 64, 64], gm)
    load = _access("tload", (1, 64, 64), [g0, E.mul(g1, 64), 0],
                   [E.minimum(1, E.sub(B, g0)), 64, 64], gm)
    assert access_key(store, grid) == access_key(load, grid)
    shifted = _access("tload", (1, 64, 64), [E.add(g0, 1), 0, 0], [1, 64, 64], gm)
    assert access_key(shifted, grid) != access_key(store, grid)
    narrower = _access("tload", (1, 32, 64), [g0, 0, 0], [1, 32, 64], gm)
    assert access_key(narrower, grid) != access_key(store, grid)


# -- the case that did not fuse: a batched matmul over a DYNAMIC batch and its epilogue -----

BMM_EPILOGUE = '''import libpypto as pypto

@pypto.jit
def bmm_epilogue(a: pypto.Tensor[["B", "M", 64], pypto.DT_FP32],
                 b: pypto.Tensor[["B", 64, 32], pypto.DT_FP32],
                 y: pypto.Tensor[["B", "M", 32], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
    pypto.set_vec_tile_shapes(1, 16, 32)
    y[:] = pypto.relu(pypto.matmul(a, b, pypto.DT_FP32)) * 0.5
'''


@pytest.mark.needs_cc
@pytest.mark.parametrize("batch, rows", [(1, 16), (3, 37), (5, 50)])
@pytest.mark.parametrize("target, want", [
    # the matmul stores [1, min(16, M - g1*16), 32] from a [16, 32] tile; relu loads
    # [min(1, B - g0), min(16, M - g1*16), 32] into a [1, 16, 32] tile: the same box
    ("host", [["matmul", "relu", "mul", "assemble"]]),
    ("a2", [["matmul"], ["relu", "mul", "assemble"]]),     # cube and vector apart
])
def test_a_batched_matmul_fuses_with_its_epilogue(op_runner, batch, rows, target, want):
    rng = np.random.default_rng([batch, rows])
    a = rng.random((batch, rows, 64), dtype=np.float32) - 0.5
    b = rng.random((batch, 64, 32), dtype=np.float32) - 0.5
    blocks, out = op_runner.run("bmm_epilogue", BMM_EPILOGUE, {"a": a, "b": b},
                                target=target, threads=2)
    assert blocks == want
    np.testing.assert_allclose(out["y"], np.maximum(a @ b, 0) * 0.5, rtol=1e-5, atol=1e-6)


@pytest.mark.needs_cc
@pytest.mark.parametrize("batch", [1, 2, 5])
@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_sdpa_is_one_block_on_the_host(batch, backend):
    # softmax stores [min(1, B - g0), min(1, 8 - g1), 64, 64] and the second matmul loads
    # [1, 1, 64, 64] of the same [1, 1, 64, 64] tile
    path = str(ROOT / "examples" / "sdpa.py")
    low = pypto.lower(pypto.trace(path))
    tasks = [t.attrs["ops"] for t in low.walk() if t.name == "task"]
    assert tasks == [["matmul", "mul", "amax", "sub", "exp", "sum", "div", "matmul",
                      "assemble"]]
    rec = pypto.run(pypto.emit(pypto.schedule(low), backend), bind={"B": batch}, seed=batch)
    assert rec.body[0].attrs["verdict"] == "pass"
