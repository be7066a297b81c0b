"""sort, argsort and topk of rows longer than one tile (the bitonic network of
frontend/sorts.py, passes/sort_tiles.py): ties, NaN, padding to a power of two, along the
last dim and another one, descending, an integer dtype; against numpy's stable argsort on
both backends, and no tile wider than the vec tile."""
import numpy as np
import pytest

import libpypto as pypto
from libpypto import driver

# three sorts of a dozen kernels each (about 15 s to compile on a loaded 2-core machine):
# slow on C
BACKENDS = [pytest.param("c", marks=[pytest.mark.needs_cc, pytest.mark.slow]), "numpy"]
T = pypto.Tensor


def stable(x, axis, desc):
    """The stable argsort that sorts NaN last ascending and first descending."""
    if x.dtype.kind == "f":
        key = np.where(np.isnan(x), -np.inf if desc else np.inf, -x if desc else x)
    else:
        key = -x.astype(np.int64) if desc else x
    return np.argsort(key, axis, kind="stable")


def kernel(backend):
    @pypto.jit(backend=backend)
    def k(x: T([3, 40], pypto.DT_FP32), z: T([20, 2], pypto.DT_INT32),
          v: T([3, 40], pypto.DT_FP32), i: T([3, 40], pypto.DT_INT32),
          tv: T([3, 5], pypto.DT_FP32), ti: T([3, 5], pypto.DT_INT32),
          zi: T([20, 2], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(2, 16)
        v[:], i[:] = pypto.sort(x, -1)
        tv[:], ti[:] = pypto.topk(x, 5)
        pypto.set_vec_tile_shapes(8, 2)
        zi[:] = pypto.argsort(z, 0, descending=True)
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_long_rows_against_numpy(backend):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 20, (3, 40)).astype(np.float32)        # many ties
    x[0, 3] = x[1, 7] = x[1, 33] = np.nan
    z = rng.integers(-5, 5, (20, 2)).astype(np.int32)
    outs = [np.zeros((3, 40), np.float32), np.zeros((3, 40), np.int32),
            np.zeros((3, 5), np.float32), np.zeros((3, 5), np.int32), np.zeros((20, 2), np.int32)]
    kernel(backend)(x, z, *outs)
    v, i, tv, ti, zi = outs
    want = stable(x, -1, False)
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(v, np.take_along_axis(x, want, -1))
    top = stable(x, -1, True)[:, :5]
    np.testing.assert_array_equal(ti, top)
    np.testing.assert_array_equal(tv, np.take_along_axis(x, top, -1))
    np.testing.assert_array_equal(zi, stable(z, 0, True))


def test_no_tile_spans_the_row():
    doc = driver.lower(kernel("numpy").trace())
    widths = {op.result.type.shape[-1] for op in doc.walk() if op.name == "tile"}
    assert max(widths) <= 16
