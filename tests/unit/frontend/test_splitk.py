"""Split-K matmul (set_cube_tile_shapes(..., enable_split_k=True), frontend/splitk.py):
K cut into whole L1 tiles per part, one matmul per part, partial products added in order;
checked against numpy in float64 with fp32-accumulation tolerances."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto as pypto
from libpypto.frontend import splitk
from libpypto.targets import load_target

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]

SRC = '''import libpypto as pypto

@pypto.jit
def mm(a: pypto.Tensor[[{M}, {K}], pypto.DT_FP16], b: pypto.Tensor[[{K}, 64], pypto.DT_FP16],
       c: pypto.Tensor[[{M}, 64], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([64, 64], [64, 128], [64, 64], enable_split_k={SPLIT})
    pypto.set_vec_tile_shapes(64, 64)
    c[:] = pypto.matmul(a, b, pypto.DT_FP32)
'''


def _matmuls(tmp_path, target=None, **kw):
    path = tmp_path / "mm.py"
    path.write_text(SRC.format(**{"M": 64, "K": 1000, "SPLIT": True, **kw}))
    doc = pypto.trace(str(path), target=target)
    return [op for op in doc.walk() if op.name == "matmul"]


def test_parts_cover_k_in_whole_l1_tiles(tmp_path):
    mms = _matmuls(tmp_path)          # K 1000 = 8 L1 tiles (the last short), 1 output tile
    ks = [op.operands[0].type.shape[1] for op in mms]
    assert len(mms) == splitk.HOST_CORES and sum(ks) == 1000
    assert all(k % 128 == 0 for k in ks[:-1])
    assert len(_matmuls(tmp_path, SPLIT=False)) == 1
    assert len(_matmuls(tmp_path, K='"K"')) == 1          # a symbolic K is not split
    assert len(_matmuls(tmp_path, M=64 * 8)) == 1         # 8 output tiles: cores are busy


def test_parts_follow_the_targets_cube_cores(tmp_path):
    mms = _matmuls(tmp_path, target="a2", K=4096)          # 32 L1 tiles
    cores = splitk._cube_cores(load_target("a2"))
    assert len(mms) == min(32, cores) and cores > 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_split_k_matches_numpy(backend):
    @pypto.jit(backend=backend)
    def mm(a: pypto.Tensor[[48, 700], pypto.DT_FP16], b: pypto.Tensor[[64, 700], pypto.DT_FP16],
           bias: pypto.Tensor[[1, 64], pypto.DT_FP32], c: pypto.Tensor[[48, 64], pypto.DT_FP16],
           d: pypto.Tensor[[48, 64], pypto.DT_FP32]):
        pypto.set_cube_tile_shapes([64, 64], [64, 128], [64, 64], enable_split_k=True)
        pypto.set_vec_tile_shapes(64, 64)
        c[:] = pypto.matmul(a, b, pypto.DT_FP16, b_trans=True, bias=bias)
        d[:] = pypto.matmul(a, b, pypto.DT_FP32, b_trans=True)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((48, 700)).astype(np.float16)
    b = rng.standard_normal((64, 700)).astype(np.float16)
    bias = rng.standard_normal((1, 64)).astype(np.float32)
    c, d = np.zeros((48, 64), np.float16), np.zeros((48, 64), np.float32)
    mm(a, b, bias, c, d)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(d, exact, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c.astype(np.float64), exact + bias, rtol=2e-3, atol=2e-2)
