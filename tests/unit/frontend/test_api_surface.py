"""The reference's API surface (issue 11, items 1 and 2): pypto.frontend.jit and its options,
pypto.options / set_*_options (honoured or one warning naming each key, never silently
dropped), loop options, annotations that take their shape from the argument, open-ended
slice assignment, scalar min/max, DataType, Element, from_torch, in-place forms, tensor
methods and scatter_update; each checked against numpy on both backends where it runs."""

import importlib
import warnings

import numpy as np
import pytest

import libpypto as pypto

BACKENDS = ["c", "numpy"]


def test_frontend_jit_is_jit_and_honours_run_mode():
    assert pypto.frontend.jit is importlib.import_module("libpypto.jit").jit
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @pypto.frontend.jit(new_ir=True, runtime_options={"run_mode": pypto.RunMode.SIM})
        def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 32)
            y[:] = x + 1.0
    x = np.ones((8, 32), np.float32)
    y = np.zeros_like(x)
    k(x, y)
    assert (y == 2).all()


def test_unimplemented_options_warn_naming_them():
    with pytest.warns(UserWarning, match="stitch_function_max_num"):
        @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 64})
        def k(x: pypto.Tensor([8, 32], pypto.DT_FP32)):
            pass
    with pytest.warns(UserWarning, match="enable_slice"):
        @pypto.options(pass_options={"enable_slice": True})
        def f():
            return 1
    assert f() == 1
    with pytest.raises(TypeError, match="runtime_option"):
        pypto.jit(runtime_option={})(lambda x: None)


def _run(k, *arrays):
    k(*arrays)
    return arrays


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_kernel_options_warn(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_pass_options(sg_set_tunevf_mode=1)
        pypto.set_semantic_label("first")
        pypto.set_vec_tile_shapes(8, 32)
        for i in pypto.loop(1, idx_name="i", submit_before_loop=True):
            y[:] = x * 2.0
    x = np.ones((8, 32), np.float32)
    with pytest.warns(UserWarning) as rec:
        _run(k, x, np.zeros_like(x))
    text = " ".join(str(w.message) for w in rec)
    assert "sg_set_tunevf_mode" in text and "submit_before_loop" in text
    assert "set_semantic_label" not in text          # labels are carried (test_labels.py)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shape_from_argument_and_open_ended_assign(backend):
    """The GLM gate's pattern: Tensor([DYNAMIC, ...]), Tensor([], dt), a row-block loop with a
    valid_shape tail and `out[i*32:, 0:] = res`."""
    @pypto.frontend.jit(backend=backend, runtime_options={})
    def k(x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
          w: pypto.Tensor([], pypto.DT_FP32),
          out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32)):
        bs, h = x.shape[0], x.shape[1]
        for i in pypto.loop((bs + 31) // 32, name="L0", idx_name="i"):
            t = pypto.view(x, (32, h), [i * 32, 0], valid_shape=[(bs - i * 32).min(32), h])
            pypto.set_cube_tile_shapes([32, 32], [64, 64], [16, 16])
            out[i * 32:, 0:] = pypto.matmul(t, w, t.dtype, b_trans=True)
    rng = np.random.default_rng(0)
    for bs in (70, 32):
        x = rng.standard_normal((bs, 64)).astype(np.float32)
        w = rng.standard_normal((16, 64)).astype(np.float32)
        out = np.zeros((bs, 16), np.float32)
        k(x, w, out)
        np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


def test_shape_from_argument_needs_arrays_on_the_command_line():
    @pypto.jit
    def k(x: pypto.Tensor(), y: pypto.Tensor([8], pypto.DT_FP32)):
        pass
    with pytest.raises(pypto.CompileError, match="takes its shape"):
        k.trace()


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalars_min_max_element_dtypes(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
          y: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
          u: pypto.Tensor([8, 32], pypto.DT_UINT32), v: pypto.Tensor([8, 32], pypto.DT_UINT32)):
        pypto.set_vec_tile_shapes(8, 32)
        n = x.shape[0]
        rows = pypto.min(n, 8)                          # a symbolic scalar
        assert pypto.max(3, 5) == 5 and pypto.ceildiv(7, 2) == 4
        assert pypto.DataType.DT_FP32 is pypto.DT_FP32 and pypto.bytes_of(pypto.DT_BF16) == 2
        assert pypto.get_cube_tile_shapes() is None
        head = pypto.view(x, [8, 32], [0, 0], valid_shape=[rows, 32])
        y[0:8, :] = pypto.max(head, pypto.Element(pypto.DT_FP32, 0.5))   # elementwise
        v[:] = u + 1
    x = np.linspace(-1, 1, 16 * 32, dtype=np.float32).reshape(16, 32)
    y = np.zeros_like(x)
    u, v = np.full((8, 32), 7, np.uint32), np.zeros((8, 32), np.uint32)
    k(x, y, u, v)
    np.testing.assert_array_equal(y[:8], np.maximum(x[:8], 0.5))
    assert (v == 8).all()


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(AttributeError, match="hifloat8.*not supported"):
        pypto.DT_HF8
    with pytest.raises(AttributeError, match="packed fp4"):
        pypto.DataType.DT_FP4_E2M1X2
    assert pypto.DataType.DT_FP8E4M3 is pypto.DT_FP8E4M3 is pypto.DT_FP8E4M3FN
    assert [pypto.bytes_of(d) for d in (pypto.DT_FP8E4M3, pypto.DT_FP8E5M2,
                                        pypto.DT_FP8E8M0, pypto.DT_UINT64)] == [1, 1, 1, 8]


def test_from_torch_shares_memory():
    a = np.zeros(4, np.float32)
    b = pypto.from_torch(a, dynamic_axis=[0])
    b[0] = 1
    assert a[0] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_scatter_update_and_inplace_forms(backend):
    @pypto.jit(backend=backend)
    def k(cache: pypto.Tensor([16, 32], pypto.DT_FP32), idx: pypto.Tensor([2, 2], pypto.DT_INT32),
          src: pypto.Tensor([4, 32], pypto.DT_FP32), out: pypto.Tensor([16, 32], pypto.DT_FP32),
          c4: pypto.Tensor([4, 4, 1, 32], pypto.DT_FP32),
          s4: pypto.Tensor([2, 2, 1, 32], pypto.DT_FP32),
          o4: pypto.Tensor([4, 4, 1, 32], pypto.DT_FP32),
          tri: pypto.Tensor([16, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 32)
        out[:] = pypto.scatter_update(cache, -2, idx, src)
        pypto.set_vec_tile_shapes(4, 4, 1, 32)
        o4[:] = pypto.scatter_update(c4, -2, idx, s4)
        pypto.set_vec_tile_shapes(16, 32)
        tri.move(cache * 1.0)
        tri.tril_(1)
        t = cache * 2.0
        t.move(t + 1.0)
        tri.axpy_(t, 0.5)
    rng = np.random.default_rng(1)
    cache = rng.standard_normal((16, 32)).astype(np.float32)
    idx = np.array([[3, 9], [0, 15]], np.int32)
    src = rng.standard_normal((4, 32)).astype(np.float32)
    c4 = rng.standard_normal((4, 4, 1, 32)).astype(np.float32)
    s4 = rng.standard_normal((2, 2, 1, 32)).astype(np.float32)
    out, o4, tri = np.zeros_like(cache), np.zeros_like(c4), np.zeros_like(cache)
    k(cache, idx, src, out, c4, s4, o4, tri)
    want = cache.copy()
    want[idx.ravel()] = src
    np.testing.assert_array_equal(out, want)
    w4 = c4.reshape(16, 32).copy()
    w4[idx.ravel()] = s4.reshape(4, 32)
    np.testing.assert_array_equal(o4, w4.reshape(4, 4, 1, 32))
    np.testing.assert_allclose(tri, np.tril(cache, 1) + 0.5 * (cache * 2 + 1), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_precision_type_and_methods(backend):
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        a = pypto.exp(x, pypto.PrecisionType.INTRINSIC)
        b = pypto.div(a, x + 4.0, precision_type=pypto.PrecisionType.HIGH_PRECISION)
        assert x.format == pypto.TileOpFormat.TILEOP_ND and x.name == "x"
        y[:] = b.sqrt(pypto.PrecisionType.HIGH_PRECISION) + pypto.log(x + 2.0, "INTRINSIC")
    x = np.linspace(-1, 1, 256, dtype=np.float32).reshape(8, 32)
    y = np.zeros_like(x)
    k(x, y)
    np.testing.assert_allclose(y, np.sqrt(np.exp(x) / (x + 4)) + np.log(x + 2), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_higher_rank_tile_uses_trailing_dims(backend):
    """A 1-D gamma under set_vec_tile_shapes(8, 256) tiles by 256, as the reference does; a
    lower-rank tile stays an error."""
    @pypto.jit(backend=backend)
    def k(x: pypto.Tensor([16, 256], pypto.DT_FP32), g: pypto.Tensor([256], pypto.DT_FP32),
          y: pypto.Tensor([16, 256], pypto.DT_FP32), g2: pypto.Tensor([256], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        g2[:] = g * 2.0
        y[:] = x * g
    x = np.ones((16, 256), np.float32)
    g = np.arange(256, dtype=np.float32)
    y, g2 = np.zeros_like(x), np.zeros_like(g)
    k(x, g, y, g2)
    np.testing.assert_array_equal(g2, g * 2)
    np.testing.assert_array_equal(y, x * g)

    @pypto.jit
    def bad(x: pypto.Tensor([16, 256], pypto.DT_FP32), y: pypto.Tensor([16, 256], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(256)
        y[:] = x * 2.0
    with pytest.raises(pypto.CompileError, match="has rank 1"):
        bad.trace()


@pytest.mark.parametrize("backend", BACKENDS)
def test_gcd_fillpad_atomic_add(backend):
    @pypto.jit(backend=backend)
    def k(a: pypto.Tensor([8, 32], pypto.DT_INT32), b: pypto.Tensor([8, 32], pypto.DT_INT32),
          g: pypto.Tensor([8, 32], pypto.DT_INT32),
          x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
          y: pypto.Tensor([16, 32], pypto.DT_FP32), z: pypto.Tensor([16, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        g[:] = pypto.gcd(a, b) + a.gcd(12)
        pypto.set_vec_tile_shapes(16, 32)
        n = x.shape[0]
        assert n.is_symbol() and not n.is_concrete() and (n + 1).is_expression()
        v = pypto.view(x, [16, 32], [0, 0], valid_shape=[n.min(16), 20])
        y[:] = pypto.fillpad(v, value=-1.0)
        z[:] = pypto.full([16, 32], 1.0, pypto.DT_FP32)
        pypto.atomic_add(pypto.view(x, [8, 32], [0, 0]), [4, 0], z)
    rng = np.random.default_rng(0)
    a = rng.integers(-100, 100, (8, 32)).astype(np.int32)
    b = rng.integers(-100, 100, (8, 32)).astype(np.int32)
    x = np.arange(10 * 32, dtype=np.float32).reshape(10, 32)
    g, y, z = np.zeros_like(a), np.zeros((16, 32), np.float32), np.zeros((16, 32), np.float32)
    k(a, b, g, x, y, z)
    np.testing.assert_array_equal(g, np.gcd(a, b) + np.gcd(a, 12))
    want = np.full((16, 32), -1.0, np.float32)
    want[:10, :20] = x[:, :20]
    np.testing.assert_array_equal(y, want)
    wz = np.ones((16, 32), np.float32)
    wz[4:12] += x[:8]
    np.testing.assert_array_equal(z, wz)


def test_option_getters_record_and_reset():
    with pytest.warns(UserWarning, match="device_sched_mode"):
        pypto.set_runtime_options(device_sched_mode=1)
    assert pypto.get_runtime_options() == {"device_sched_mode": 1}
    pypto.reset_options()
    assert pypto.get_runtime_options() == {}
    assert pypto.index_add_ub is not None and pypto.index_add__ub is not None


def test_dim_is_the_rank_as_in_the_reference():
    @pypto.jit
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        assert x.dim == 2 and x.dim(1) == 32
        pypto.set_vec_tile_shapes(8, 32)
        y[:] = x + 1.0
    k.trace()


@pytest.mark.needs_cc
def test_matmul_operator_as_the_reference():
    """`a @ b` is pypto.matmul with the right operand's float dtype (int32 for int8)."""
    @pypto.jit
    def k(a: pypto.Tensor[[32, 64], pypto.DT_FP16], b: pypto.Tensor[[64, 32], pypto.DT_FP16],
          qa: pypto.Tensor[[32, 64], pypto.DT_INT8], qb: pypto.Tensor[[64, 32], pypto.DT_INT8],
          c: pypto.Tensor[[32, 32], pypto.DT_FP16], q: pypto.Tensor[[32, 32], pypto.DT_INT32]):
        pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
        pypto.set_vec_tile_shapes(32, 32)
        r = a @ b
        assert r.dtype == pypto.DT_FP16
        c[:] = r
        q[:] = qa @ qb
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((32, 64), (64, 32)))
    qa, qb = (rng.integers(-128, 128, s).astype(np.int8) for s in ((32, 64), (64, 32)))
    c, q = np.zeros((32, 32), np.float16), np.zeros((32, 32), np.int32)
    k(a, b, qa, qb, c, q)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64),
                               rtol=2e-3, atol=2e-2)
    np.testing.assert_array_equal(q, qa.astype(np.int32) @ qb.astype(np.int32))


def test_matmul_operator_refuses_other_dtypes():
    @pypto.jit
    def k(a: pypto.Tensor[[8, 8], pypto.DT_INT32], c: pypto.Tensor[[8, 8], pypto.DT_INT32]):
        pypto.set_cube_tile_shapes([8, 8], [8, 8], [8, 8])
        c[:] = a @ a
    with pytest.raises(pypto.PyptoError, match=r"a @ b takes fp16, bf16, fp32 or int8"):
        k(np.zeros((8, 8), np.int32), np.zeros((8, 8), np.int32))
