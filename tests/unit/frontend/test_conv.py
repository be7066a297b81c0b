"""pypto.conv (frontend/conv.py): 1-D, 2-D and 3-D convolutions with strides, paddings,
dilations, groups, bias and ReLU against a direct numpy loop written here, on both
backends."""
import itertools

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

T = pypto.Tensor
# one matmul per kernel offset and group: a few dozen programs, slow to compile on C
BACKENDS = [pytest.param("c", marks=[pytest.mark.needs_cc, pytest.mark.slow]), "numpy"]


def ref_conv(x, w, strides, paddings, dilations, groups=1, bias=None, relu=False):
    """out[n, co, o] = sum_{ci, k} w[co, ci, k] xpad[n, g * cg + ci, o * s + k * d]."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(paddings[2 * i], paddings[2 * i + 1]) for i in range(nd)])
    n, cin = x.shape[:2]
    cout, cg = w.shape[:2]
    ks = w.shape[2:]
    out = [(xp.shape[2 + i] - dilations[i] * (ks[i] - 1) - 1) // strides[i] + 1
           for i in range(nd)]
    y = np.zeros((n, cout, *out))
    og = cout // groups
    for co in range(cout):
        g = co // og
        for o in itertools.product(*[range(v) for v in out]):
            for k in itertools.product(*[range(v) for v in ks]):
                pos = tuple(oi * s + ki * d for oi, ki, s, d in zip(o, k, strides, dilations))
                y[(slice(None), co) + o] += xp[(slice(None), slice(g * cg, (g + 1) * cg)) + pos] \
                    @ w[(co, slice(None)) + k]
    if bias is not None:
        y += bias.astype(np.float64).reshape((1, cout) + (1,) * nd)
    return np.maximum(y, 0) if relu else y


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_against_numpy(backend):
    @pypto.jit(backend=backend)
    def k(x2: T([2, 4, 7, 6], pypto.DT_FP32), w2: T([6, 2, 2, 2], pypto.DT_FP32),
          b2: T([6], pypto.DT_FP32), x1: T([1, 3, 10], pypto.DT_FP16),
          w1: T([4, 3, 3], pypto.DT_FP16), x3: T([1, 2, 3, 4, 4], pypto.DT_FP32),
          w3: T([3, 2, 1, 2, 2], pypto.DT_FP32),
          y2: T([2, 6, 4, 4], pypto.DT_FP32), y1: T([1, 4, 6], pypto.DT_FP16),
          y3: T([1, 3, 3, 3, 3], pypto.DT_FP32)):
        y2[:] = pypto.conv(x2, w2, pypto.DT_FP32, [2, 2], [1, 1, 1, 1], [1, 1], groups=2,
                           extend_params={"bias_tensor": b2,
                                          "relu_type": pypto.ConvReLuType.RELU})
        y1[:] = pypto.conv(x1, w1, pypto.DT_FP16, strides=[1], paddings=[0, 0],
                           dilations=[2])
        y3[:] = pypto.conv(x3, w3, pypto.DT_FP32, [1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1])
    rng = np.random.default_rng(0)
    x2, w2, b2 = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4, 7, 6),
                                                                        (6, 2, 2, 2), (6,)))
    x1, w1 = (rng.standard_normal(s).astype(np.float16) for s in ((1, 3, 10), (4, 3, 3)))
    x3, w3 = (rng.standard_normal(s).astype(np.float32) for s in ((1, 2, 3, 4, 4),
                                                                    (3, 2, 1, 2, 2)))
    y2, y1, y3 = np.zeros((2, 6, 4, 4), np.float32), np.zeros((1, 4, 6), np.float16), \
        np.zeros((1, 3, 3, 3, 3), np.float32)
    k(x2, w2, b2, x1, w1, x3, w3, y2, y1, y3)
    np.testing.assert_allclose(y2, ref_conv(x2, w2, [2, 2], [1, 1, 1, 1], [1, 1], 2, b2, True),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y1.astype(np.float64), ref_conv(x1, w1, [1], [0, 0], [2]),
                               rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(y3, ref_conv(x3, w3, [1, 1, 1], [0] * 6, [1, 1, 1]), rtol=1e-5,
                               atol=1e-5)


def test_conv_errors_and_tile_shapes():
    pypto.set_conv_tile_shapes("l1", "l0")
    assert pypto.get_conv_tile_shapes() == ("l1", "l0")
    for kw, match in (({"transposed": True}, "transposed"), ({"groups": 3}, "groups 3"),
                      ({"paddings": [2, 2, 0, 0]}, "below its kernel size"),
                      ({"extend_params": {"scale": 1.0}}, "not supported")):
        args = {"strides": [1, 1], "paddings": [0, 0, 0, 0], "dilations": [1, 1], **kw}

        @pypto.jit
        def k(x: T([1, 4, 4, 4], pypto.DT_FP32), w: T([2, 4, 2, 2], pypto.DT_FP32),
              y: T([1, 2, 3, 3], pypto.DT_FP32)):
            y[:] = pypto.conv(x, w, pypto.DT_FP32, **args)
        with pytest.raises(CompileError, match=match):
            k.trace()
