"""fuse: kernels that must not fuse, run against numpy.

Each case would compute wrong numbers, or fail to lower, schedule or allocate, if the guard
of the fusion decision it names were removed (each was checked by deleting the guard). Runs
use one thread, so an instance that reads what a later instance has not written yet reads
stale data every time; sizes include a single grid instance, tails and DYNAMIC dims.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.needs_cc

ROWS = [8, 19, 64]          # one instance; a tail; several instances


def rand(*shape, seed=0):
    return np.random.default_rng([seed, *shape]).random(shape, dtype=np.float32)


# -- footprints: an instance reads only what it wrote itself ------------------------------

SHIFTED = '''import libpypto as pypto

@pypto.jit
def shifted(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
            y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    t = x + 1.0
    n = x.shape[0]
    v = pypto.view(t, [n, 256], [1, 0], valid_shape=[n - 1, 256])
    y[:] = v * 2.0
'''


@pytest.mark.parametrize("n", ROWS)
def test_a_shifted_read_does_not_fuse_with_its_producer(op_runner, n):
    # same grid, but instance g reads row 8g + 8 of t, which instance g + 1 writes
    x, y = rand(n, 256), np.full((n, 256), -1, np.float32)
    blocks, out = op_runner.run("shifted", SHIFTED, {"x": x, "y": y})
    assert blocks == [["add"], ["mul", "assemble"]]
    want = y.copy()
    want[:n - 1] = (x[1:] + 1) * 2
    np.testing.assert_array_equal(out["y"], want)


TRANSPOSED = '''import libpypto as pypto

@pypto.jit
def transposed(x: pypto.Tensor[[64, 64], pypto.DT_FP32],
               y: pypto.Tensor[[64, 64], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 64)
    y[:] = pypto.transpose(x * 3.0, 0, 1)
'''


def test_a_transposed_read_does_not_fuse_with_its_producer(op_runner):
    # same grid [8, 1]: instance g reads columns 8g.. of every row, written by every instance
    x = rand(64, 64)
    blocks, out = op_runner.run("transposed", TRANSPOSED, {"x": x})
    assert blocks[0] == ["mul"] and "mul" not in blocks[1]
    np.testing.assert_array_equal(out["y"], (x * 3).T)


# -- the same grid ------------------------------------------------------------------------

CENTERED = '''import libpypto as pypto

@pypto.jit
def centered(x: pypto.Tensor[[pypto.DYNAMIC, 512], pypto.DT_FP32],
             y: pypto.Tensor[[pypto.DYNAMIC, 512], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    y[:] = x - pypto.amax(x, dim=-1, keepdim=True)
'''


@pytest.mark.parametrize("n", ROWS)
def test_kernels_over_different_grids_do_not_fuse(op_runner, n):
    # amax runs one instance per 8 rows (grid [rows/8, 1]); sub one per 8 x 256 tile
    # (grid [rows/8, 2]); their footprints of the row maxima agree, the grids do not
    x = rand(n, 512)
    blocks, out = op_runner.run("centered", CENTERED, {"x": x})
    assert blocks == [["amax"], ["sub", "assemble"]]
    np.testing.assert_array_equal(out["y"], x - x.max(-1, keepdims=True))


# -- no cycle through a kernel outside the pair ------------------------------------------

COLUMN_CENTERED = '''import libpypto as pypto

@pypto.jit
def column_centered(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
                    y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    t = x * 2.0
    y[:] = t - pypto.amax(t, dim=0, keepdim=True)
'''


@pytest.mark.parametrize("n", ROWS)
def test_kernels_with_a_path_through_another_kernel_do_not_fuse(op_runner, n):
    # mul and sub share grid and footprints, but sub needs the column maxima, which need
    # every instance of mul: fused, that block would both precede and follow amax
    x = rand(n, 256)
    blocks, out = op_runner.run("column_centered", COLUMN_CENTERED, {"x": x})
    assert blocks == [["mul"], ["amax"], ["sub", "assemble"]]
    t = x * 2
    np.testing.assert_array_equal(out["y"], t - t.max(0, keepdims=True))


# -- core kinds the target runs together ---------------------------------------------------

EPILOGUE = '''import libpypto as pypto

@pypto.jit
def epilogue(a: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
             b: pypto.Tensor[[64, 32], pypto.DT_FP32],
             y: pypto.Tensor[[pypto.DYNAMIC, 32], pypto.DT_FP32]):
    pypto.set_cube_tile_shapes([16, 16], [32, 64], [32, 32])
    pypto.set_vec_tile_shapes(16, 32)
    y[:] = pypto.matmul(a, b, pypto.DT_FP32) * 2.0
'''


@pytest.mark.parametrize("target, want", [
    ("a2", [["matmul"], ["mul", "assemble"]]),       # cube and vector cores apart
    ("host", [["matmul", "mul", "assemble"]]),       # one core runs both
])
@pytest.mark.parametrize("n", [16, 37])
def test_cube_and_vector_work_fuse_only_where_the_target_runs_them_together(
        op_runner, target, want, n):
    a, b = rand(n, 64), rand(64, 32, seed=1)
    blocks, out = op_runner.run("epilogue", EPILOGUE, {"a": a, "b": b}, target=target)
    assert blocks == want
    np.testing.assert_allclose(out["y"], (a @ b) * 2, rtol=1e-5)


# -- the fused block fits the buffers -----------------------------------------------------

TWO_SUMS = '''import libpypto as pypto

@pypto.jit
def two_sums(x1: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32],
             x2: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32],
             x3: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32],
             x4: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32],
             y: pypto.Tensor[[pypto.DYNAMIC, 1024], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(16, 1024)
    y[:] = (x1 + x2) * (x3 + x4)
'''


@pytest.mark.parametrize("n", [16, 37])
def test_a_block_that_would_not_fit_the_buffers_is_not_formed(op_runner, n):
    # 64 KiB tiles on a2 (192 KiB of UB): each add fits with the product (three tiles
    # live), all three together keep four tiles live
    xs = {f"x{i}": rand(n, 1024, seed=i) for i in range(1, 5)}
    blocks, out = op_runner.run("two_sums", TWO_SUMS, xs, target="a2")
    assert blocks == [["add"], ["add", "mul", "assemble"]]
    np.testing.assert_array_equal(out["y"], (xs["x1"] + xs["x2"]) * (xs["x3"] + xs["x4"]))


# -- options ------------------------------------------------------------------------------

CHAIN = '''import libpypto as pypto

@pypto.jit
def chain(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
          y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 256)
    y[:] = ((x + 1.0) * 2.0 - 3.0) * 0.5
'''


@pytest.mark.parametrize("options, sizes", [
    ("", [5]),
    ("{max-kernels=2}", [2, 2, 1]),
    ("{max-kernels=1}", [1] * 5),
    ("{enable=false}", [1] * 5),
])
def test_fuse_options_bound_the_blocks(op_runner, options, sizes):
    pipeline = f"tensor-to-tile,assign-memory,fuse{options},forward,cse,dce,alloc,make-exec"
    x = rand(19, 256)
    blocks, out = op_runner.run("chain", CHAIN, {"x": x}, pipeline=pipeline)
    assert [len(b) for b in blocks] == sizes
    np.testing.assert_array_equal(out["y"], ((x + 1) * 2 - 3) * 0.5)
