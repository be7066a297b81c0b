"""The in-process JIT: in-place outputs, one artifact per signature, DYNAMIC sizes reuse it,
STATIC sizes and constants specialise, array-likes convert, errors are PyptoErrors."""
import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import PyptoError, UsageError

pytestmark = pytest.mark.needs_cc


@pypto.jit
def scale(x: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
          y: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32], factor: float = 2.0):
    pypto.set_vec_tile_shapes(16, 64)
    y[:] = x * factor


@pypto.jit
def static_rows(x: pypto.Tensor[[pypto.STATIC, 32], pypto.DT_FP32],
                y: pypto.Tensor[[pypto.STATIC, 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 32)
    y[:] = x + 1.0


def test_dynamic_sizes_compile_once():
    before = scale.compiles
    for n in (16, 37, 100):                      # a multiple of the tile and two tails
        x = np.random.default_rng(n).standard_normal((n, 64), dtype=np.float32)
        y = np.zeros_like(x)
        scale(x, y)
        np.testing.assert_array_equal(y, x * np.float32(2))
    assert scale.compiles - before == 1


def test_constants_are_part_of_the_signature():
    x = np.ones((16, 64), np.float32)
    y = np.zeros_like(x)
    scale(x, y, 3.0)
    np.testing.assert_array_equal(y, 3.0)
    n = scale.compiles
    scale(x, y, factor=3.0)
    assert scale.compiles == n
    scale(x, y, factor=4.0)
    assert scale.compiles == n + 1
    np.testing.assert_array_equal(y, 4.0)


def test_static_dims_specialise():
    before = static_rows.compiles
    for n in (8, 24, 8):
        x = np.full((n, 32), 2.0, np.float32)
        y = np.zeros_like(x)
        static_rows(x, y)
        np.testing.assert_array_equal(y, 3.0)
    assert static_rows.compiles - before == 2


def test_non_contiguous_output_is_written_back():
    x = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    big = np.zeros((32, 128), np.float32)
    y = big[:, ::2]                               # a strided view
    scale(x, y)
    np.testing.assert_array_equal(big[:, ::2], x * 2)
    np.testing.assert_array_equal(big[:, 1::2], 0)


def test_array_likes_convert():
    class Wrapped:                                # anything with __array__ (a CPU torch tensor)
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    x = np.ones((16, 64), np.float32)
    y = np.zeros_like(x)
    scale(Wrapped(x), Wrapped(y))
    np.testing.assert_array_equal(y, 2.0)


def test_bad_calls_raise_clear_errors():
    x = np.ones((16, 64), np.float32)
    with pytest.raises(UsageError, match="missing tensor argument"):
        scale(x)
    with pytest.raises(UsageError, match="dtype float64"):
        scale(x.astype(np.float64), x.copy())
    with pytest.raises(PyptoError, match="must equal"):
        scale(x, np.zeros((8, 64), np.float32))
    with pytest.raises(UsageError, match="has 1 dims"):
        scale(np.ones(64, np.float32), x)
