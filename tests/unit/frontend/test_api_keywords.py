"""The reference's parameter names and orders (issue 11, item 3: no silent differences):
options / set_options positional order, topk's algo in fourth place, view(dtype=), the list
form of assemble, pad(padding=), permute(dims=), where(input=, other=), unpack(dtype=),
scatter_update's dim and from_torch's dynamic_axis."""
import warnings

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]
T = pypto.Tensor


def test_options_take_the_references_positional_order():
    with pytest.warns(UserWarning, match="codegen_options .*support_dynamic_aligned"):
        pypto.options("n", {"support_dynamic_aligned": True})
    with pytest.warns(UserWarning, match="host_options .*compile_stage"):
        pypto.set_options(None, {"compile_stage": 1})
    pypto.reset_options()


@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_as_the_reference_spells_them(backend):
    @pypto.jit(backend=backend)
    def k(x: T([2, 2], pypto.DT_FP32), a: T([4, 8], pypto.DT_FP32), c: T([4, 8], pypto.DT_BOOL),
          bytes_: T([2, 8], pypto.DT_INT8), top: T([4, 2], pypto.DT_INT32),
          asm: T([4, 8], pypto.DT_FP32), pad: T([4, 10], pypto.DT_FP32),
          perm: T([8, 4], pypto.DT_FP32), sel: T([4, 8], pypto.DT_FP32),
          un: T([2, 2], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4, 8)
        bytes_[:] = pypto.view(x, dtype=pypto.DT_INT8)
        top[:] = pypto.topk(a, 2, -1, True, pypto.TopKAlgo.RADIX_SELECT)[1]
        pypto.assemble([(pypto.view(a, [2, 8], [0, 0]) * 2.0, [0, 0]),
                        (pypto.view(a, [2, 8], [2, 0]) * 3.0, [2, 0])], asm)
        pad[:] = pypto.pad(a, padding=[1, 1])
        perm[:] = pypto.permute(a, dims=[1, 0])
        sel[:] = pypto.where(c, input=a, other=0.0)
        raw = pypto.view(pypto.view(x, [1, 2], [0, 0]), dtype=pypto.DT_UINT8).reshape([8])
        un[:] = pypto.reshape(pypto.unpack(raw, dtype=pypto.DT_INT32), [1, 2]).expand_clone([2, 2])
    x = np.array([[0.9405094, 0.20237109], [0.99819463, 0.13246714]], np.float32)
    a = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    c = a > 0
    outs = [np.zeros((2, 8), np.int8), np.zeros((4, 2), np.int32), np.zeros((4, 8), np.float32),
            np.zeros((4, 10), np.float32), np.zeros((8, 4), np.float32),
            np.zeros((4, 8), np.float32), np.zeros((2, 2), np.int32)]
    k(x, a, c, *outs)
    bytes_, top, asm, pad, perm, sel, un = outs
    assert bytes_.tolist() == [[57, -59, 112, 63, 94, 58, 79, 62],      # the page's example
                               [-81, -119, 127, 63, 119, -91, 7, 62]]
    np.testing.assert_array_equal(top, np.argsort(-a, -1, kind="stable")[:, :2])
    np.testing.assert_array_equal(asm, np.concatenate([a[:2] * 2, a[2:] * 3]))
    np.testing.assert_array_equal(pad, np.pad(a, [(0, 0), (1, 1)]))
    np.testing.assert_array_equal(perm, a.T)
    np.testing.assert_array_equal(sel, np.where(c, a, 0))
    np.testing.assert_array_equal(un, np.tile(x[0].view(np.int32), (2, 1)))


def test_scatter_update_dim_and_from_torch_keywords():
    @pypto.jit
    def k(x: T([8, 4], pypto.DT_FP32), i: T([1, 2], pypto.DT_INT32), s: T([2, 4], pypto.DT_FP32),
          y: T([8, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(2, 4)
        y[:] = pypto.scatter_update(x, -1, i, s)
    with pytest.raises(CompileError, match="dim must be -2"):
        k.trace()
    with pytest.warns(UserWarning, match="from_torch\\(dynamic_axis=\\)"):
        pypto.from_torch(np.zeros(3), dynamic_axis=[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pypto.from_torch(np.zeros(3), "a")
