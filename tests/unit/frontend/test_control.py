"""Control flow: loops stay loops (one artifact for every size), loop_unroll splits by
factor, symbolic branches become `if` regions, every path agrees with numpy."""
import numpy as np
import pytest

import libpypto as pypto

pytestmark = pytest.mark.needs_cc


@pypto.jit
def unrolled(x: pypto.Tensor[["N", 64], pypto.DT_FP32],
             y: pypto.Tensor[["N", 64], pypto.DT_FP32]):
    for i, f in pypto.loop_unroll(0, x.shape[0], 1, unroll_list=[4, 2]):
        pypto.set_vec_tile_shapes(f, 64)
        rows = pypto.view(x, [f, 64], [i, 0])
        pypto.assemble(rows * float(f), [i, 0], y)


@pypto.jit
def branchy(x: pypto.Tensor[["N", 32], pypto.DT_FP32],
            y: pypto.Tensor[["N", 32], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(1, 32)
    for i in pypto.loop(x.shape[0]):
        r = pypto.view(x, [1, 32], [i, 0])
        if i % 3 == 0:
            out = r + 1.0
        elif pypto.cond(i % 3 == 1):
            out = r * 2.0
        else:
            out = -r
        if pypto.is_loop_end(i):
            out = out * 0.0
        pypto.assemble(out, [i, 0], y)


def test_loop_unroll_covers_every_row_once():
    for n in (1, 6, 11):
        x = np.random.default_rng(n).standard_normal((n, 64), dtype=np.float32)
        y = np.zeros_like(x)
        unrolled(x, y)
        # rows in blocks of 4 get x4, then blocks of 2 get x2, the rest x1
        f = np.ones(n, np.float32)
        f[:n // 4 * 4] = 4
        rest = n - n // 4 * 4
        f[n // 4 * 4:n // 4 * 4 + rest // 2 * 2] = 2
        np.testing.assert_array_equal(y, x * f[:, None])
    assert unrolled.compiles == 1


def test_unroll_traces_one_loop_per_factor():
    doc = unrolled.trace()
    loops = [op for op in doc.body if op.name == "loop"]
    assert [op.attrs["unroll"] for op in loops] == [4, 2, 1]


def test_branches_merge_into_if_regions():
    doc = branchy.trace()
    ifs = [op for op in doc.walk() if op.name == "if"]
    assert len(ifs) >= 3
    for n in (1, 5, 7):
        x = np.random.default_rng(n).standard_normal((n, 32), dtype=np.float32)
        y = np.zeros_like(x)
        branchy(x, y)
        want = np.where((np.arange(n) % 3 == 0)[:, None], x + 1,
                        np.where((np.arange(n) % 3 == 1)[:, None], x * 2, -x))
        want[-1] = 0
        np.testing.assert_array_equal(y, want.astype(np.float32))
    assert branchy.compiles == 1


@pypto.jit
def tail_softmax(x: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32),
                 y: pypto.Tensor([pypto.DYNAMIC, 256], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 256)
    n = x.shape[0]
    for i in pypto.loop((n + 15) // 16):
        t = pypto.view(x, [16, 256], [i * 16, 0], valid_shape=[pypto.min(16, n - i * 16), 256])
        e = pypto.exp(pypto.sub(t, pypto.amax(t, -1, keepdim=True)))
        y[i * 16:, 0:] = pypto.div(e, pypto.sum(e, -1, keepdim=True))


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("n", [100, 16, 7])
def test_tensor_interpretation_of_a_valid_shape_tail(n):
    # the row max [16, 1] (valid [4, 1] in the last block) broadcast over x - max leaves
    # every column valid: the interpretation (what pypto-run checks against) sums whole rows
    from libpypto.runtime.interp import run_tensor
    x = np.random.default_rng(n).standard_normal((n, 256), dtype=np.float32)
    out = run_tensor(tail_softmax.trace(), {"x": x, "y": np.zeros_like(x)},
                     {"x_0": n, "y_0": n})
    np.testing.assert_allclose(out["y"], np_softmax(x), rtol=1e-5, atol=1e-7)
    y = np.zeros_like(x)
    tail_softmax(x, y)
    np.testing.assert_allclose(y, np_softmax(x), rtol=1e-5, atol=1e-7)
