"""Integer indexing of traced tensors as the reference's Tensor (`states[b, h]` is a view with
1 at each indexed dim, reshaped without it; `out[a:b, h] = x` reshapes x with a 1 there), a
computed value moved into from inside a pypto.loop carried across its iterations (the
reference's `state = states[b]` ... `state[:] = new`), and the reshape of a view whose tail
ends past its tensor. Each against numpy, on both backends."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]


@pypto.jit
def per_head(x: pypto.Tensor([3, 2, 8, 16], pypto.DT_FP32),
             rows: pypto.Tensor([24, 2, 16], pypto.DT_FP32),
             y: pypto.Tensor([3, 2, 8, 16], pypto.DT_FP32),
             z: pypto.Tensor([24, 2, 16], pypto.DT_FP32),
             w: pypto.Tensor([2, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8, 16)
    for b in pypto.loop(3):
        for h in pypto.loop(2):
            m = x[b, h]                                   # [8, 16]
            y[b, h] = m.exp()
            z[b * 8:b * 8 + 8, h] = rows[b * 8:b * 8 + 8, h] + m
    w[:, :] = x[-1, :, 7, :] * 2.0                        # [2, 16]: a negative index, a row


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_indices_drop_dims_like_numpy(backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 8, 16)).astype(np.float32)
    rows = rng.standard_normal((24, 2, 16)).astype(np.float32)
    y, z, w = np.zeros_like(x), np.zeros_like(rows), np.zeros((2, 16), np.float32)
    per_head.options["backend"] = backend
    per_head(x, rows, y, z, w)
    np.testing.assert_allclose(y, np.exp(x.astype(np.float64)), rtol=1e-6)
    want = rows.astype(np.float64).copy()
    for b in range(3):
        for h in range(2):
            want[b * 8:b * 8 + 8, h] += x[b, h]
    np.testing.assert_allclose(z, want, rtol=1e-6)
    np.testing.assert_allclose(w, x[-1, :, 7, :] * 2.0, rtol=1e-6)


@pypto.jit
def recurrence(x: pypto.Tensor([2, 4, 16], pypto.DT_FP32),
               s0: pypto.Tensor([2, 4, 16], pypto.DT_FP32),
               ys: pypto.Tensor([2, 5, 4, 16], pypto.DT_FP32),
               final: pypto.Tensor([2, 4, 16], pypto.DT_FP32)):
    """state_t = 0.5 state_{t-1} + x[b] (t = 1..5), each written to ys[b, t-1]; after the
    loop, final[b] = 2 state."""
    pypto.set_vec_tile_shapes(4, 16)
    for b in pypto.loop(2):
        state = s0[b]                        # computed (a view, reshaped), outside the t loop
        for t in pypto.loop(5):
            state[:] = state * 0.5 + x[b]    # carried: the next iteration reads this one
            ys[b, t] = state
        final[b] = state * 2.0               # the last iteration's value


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_moved_value_is_carried_across_iterations(backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 16)).astype(np.float32)
    s0 = rng.standard_normal((2, 4, 16)).astype(np.float32)
    ys, final = np.zeros((2, 5, 4, 16), np.float32), np.zeros_like(x)
    s0_before = s0.copy()
    recurrence.options["backend"] = backend
    recurrence(x, s0, ys, final)
    want = np.zeros(ys.shape)
    for b in range(2):
        s = s0[b].astype(np.float64)
        for t in range(5):
            s = 0.5 * s + x[b]
            want[b, t] = s
        np.testing.assert_allclose(final[b], 2 * s, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ys, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(s0, s0_before)           # the input is only read


@pypto.jit
def tail_rows(x: pypto.Tensor([pypto.DYNAMIC, 1, 16], pypto.DT_FP32),
              y: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
    """Blocks of 8 rows; the last one a view past x's end with valid_shape, reshaped."""
    n = x.shape[0]
    pypto.set_vec_tile_shapes(8, 1, 16)
    for i in pypto.loop((n + 7) // 8):
        rows = (n - i * 8).min(8)
        v = pypto.view(x, [8, 1, 16], [i * 8, 0, 0], valid_shape=[rows, 1, 16])
        r = pypto.reshape(v, [8, 16], valid_shape=[rows, 16])
        pypto.set_vec_tile_shapes(8, 16)
        y[i * 8:, 0:] = r + 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_reshape_of_a_view_with_a_tail(backend):
    x = np.arange(21 * 16, dtype=np.float32).reshape(21, 1, 16)
    y = np.zeros((21, 16), np.float32)
    tail_rows.options["backend"] = backend
    tail_rows(x, y)
    np.testing.assert_array_equal(y, x[:, 0, :] + 1.0)


def _trace(fn):
    return pypto.jit(fn).trace()


def test_integer_index_errors():
    def rank(x: pypto.Tensor([4, 8], pypto.DT_FP32), y: pypto.Tensor([4, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        y[1] = x                                       # rank 2 into one slice
    with pytest.raises(CompileError, match="ranks must match"):
        _trace(rank)

    def out_of_range(x: pypto.Tensor([4, 8], pypto.DT_FP32),
                     y: pypto.Tensor([8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8)
        y[:] = x[4] + 0.0
    with pytest.raises(CompileError, match="out of range"):
        _trace(out_of_range)
