"""interleave / deinterleave and index_put_: the reference pages' worked examples, and random
inputs against numpy formulas written here, on both backends."""

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]
T = pypto.Tensor


def make_pages(backend):
    @pypto.jit(backend=backend)
    def k(a: T([2, 4], pypto.DT_FP32), c: T([2, 4], pypto.DT_FP32), s: T([2, 8], pypto.DT_FP32),
          o0: T([2, 4], pypto.DT_FP32), o1: T([2, 4], pypto.DT_FP32),
          d0: T([2, 4], pypto.DT_FP32), d1: T([2, 4], pypto.DT_FP32),
          s0: T([2, 4], pypto.DT_FP32), s1: T([2, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 16)
        o0[:], o1[:] = pypto.interleave(a, c)
        d0[:], d1[:] = pypto.deinterleave(o0 * 1.0, o1 * 1.0)
        s0[:], s1[:] = pypto.deinterleave(s)
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_reference_pages_examples(backend):
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    c = a + 10
    s = np.array([[0, 10, 1, 11, 2, 12, 3, 13], [4, 14, 5, 15, 6, 16, 7, 17]], np.float32)
    outs = [np.zeros((2, 4), np.float32) for _ in range(6)]
    make_pages(backend)(a, c, s, *outs)
    o0, o1, d0, d1, s0, s1 = (o.tolist() for o in outs)
    assert o0 == [[0, 10, 1, 11], [4, 14, 5, 15]]
    assert o1 == [[2, 12, 3, 13], [6, 16, 7, 17]]
    assert d0 == s0 == a.tolist() and d1 == s1 == c.tolist()


def np_interleave(a, b):
    s = np.stack([a, b], -1).reshape(*a.shape[:-1], 2 * a.shape[-1])
    n = a.shape[-1]
    return s[..., :n], s[..., n:]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", ["f32", "bf16", "i8", "u16"])
def test_interleave_and_deinterleave_against_numpy(backend, dt):
    pdt, ndt = {"f32": (pypto.DT_FP32, np.float32), "bf16": (pypto.DT_BF16, ml_dtypes.bfloat16),
                "i8": (pypto.DT_INT8, np.int8), "u16": (pypto.DT_UINT16, np.uint16)}[dt]

    @pypto.jit(backend=backend)
    def k(a: T([3, 10, 6], pdt), b: T([3, 10, 6], pdt), o0: T([3, 10, 6], pdt),
          o1: T([3, 10, 6], pdt), e: T([3, 10, 3], pdt), f: T([3, 10, 3], pdt),
          g: T([3, 10, 6], pdt), h: T([3, 10, 6], pdt)):
        pypto.set_vec_tile_shapes(2, 4, 6)          # rows in several tiles, tails
        o0[:], o1[:] = pypto.interleave(a, b)
        e[:], f[:] = pypto.deinterleave(a)
        g[:], h[:] = pypto.deinterleave(a, b)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 100, (3, 10, 6)).astype(ndt) for _ in range(2))
    outs = [np.zeros((3, 10, n), ndt) for n in (6, 6, 3, 3, 6, 6)]
    k(a, b, *outs)
    w0, w1 = np_interleave(a, b)
    both = np.concatenate([a, b], -1)
    for got, want in zip(outs, [w0, w1, a[..., 0::2], a[..., 1::2], both[..., 0::2],
                                both[..., 1::2]]):
        np.testing.assert_array_equal(got, want)


def test_interleave_errors():
    def trace(body, shape=(2, 6), dt=pypto.DT_FP32, other=None):
        @pypto.jit
        def k(a: T(list(shape), dt), b: T(list(other or shape), dt), o: T(list(shape), dt)):
            pypto.set_vec_tile_shapes(4, 16)
            o[:] = body(a, b)[0]
        return k.trace
    with pytest.raises(pypto.CompileError, match="the last dim \\(5\\) must be even"):
        trace(pypto.interleave, (2, 5))()
    with pytest.raises(pypto.CompileError, match="dtype i64 is not supported"):
        trace(pypto.interleave, dt=pypto.DT_INT64)()
    with pytest.raises(pypto.CompileError, match="deinterleave: dim 0 of the operands"):
        trace(pypto.deinterleave, other=(3, 6))()


def make_put(backend):
    @pypto.jit(backend=backend)
    def k(x: T([3, 3], pypto.DT_INT32), i0: T([2], pypto.DT_INT32), v: T([2, 3], pypto.DT_INT32),
          acc: T([3, 3], pypto.DT_INT32), put: T([3, 3], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4, 16)
        acc.move(x * 1)
        pypto.index_put_(acc, (i0,), v, True)
        put.move(x * 1)
        pypto.index_put_(put, (i0,), v)
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_put_the_pages_example(backend):
    x = np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0]], np.int32)
    acc, put = np.zeros_like(x), np.zeros_like(x)
    make_put(backend)(x, np.array([1, 2], np.int32), np.array([[0, 1, 0], [0, 2, 0]], np.int32),
                      acc, put)
    assert acc.tolist() == [[1, 1, 1], [1, 2, 1], [0, 2, 0]]
    assert put.tolist() == [[1, 1, 1], [0, 1, 0], [0, 2, 0]]


def make_put3(backend):
    @pypto.jit(backend=backend)
    def k(x: T([4, 3, 5], pypto.DT_FP32), j0: T([6], pypto.DT_INT64), j1: T([6], pypto.DT_INT64),
          w: T([6, 5], pypto.DT_FP32), u0: T([5], pypto.DT_INT32), u: T([5, 3, 5], pypto.DT_FP32),
          y1: T([4, 3, 5], pypto.DT_FP32), y2: T([4, 3, 5], pypto.DT_FP32),
          y3: T([4, 3, 5], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(2, 2, 8)
        t = x * 1.0
        pypto.index_put_(t, (j0, j1), w, True)         # two indices, rows of 5
        y1[:] = t
        t2 = x * 1.0
        pypto.index_put_(t2, (j0, j0, j1), pypto.view(w, [6, 1], [0, 0]).reshape([6]))
        y2[:] = t2                                      # three indices, single elements
        y3.move(x * 1.0)
        pypto.index_put_(y3, (u0,), u)                 # one index, [3, 5] blocks
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_put_against_numpy(backend):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    j0 = np.array([0, 1, 3, 0, -1, 2])                  # (0, 2) twice; -1 wraps to 3
    j1 = np.array([2, 2, 0, 2, 1, 5])                   # 5 wraps to 2
    w = rng.standard_normal((6, 5)).astype(np.float32)
    u0 = np.array([3, 0, 2, 1, 7], np.int32)            # 7 wraps to 3: the last write wins
    u = rng.standard_normal((5, 3, 5)).astype(np.float32)
    ys = [np.zeros_like(x) for _ in range(3)]
    make_put3(backend)(x, j0, j1, w, u0, u, *ys)
    want1 = x.copy()
    np.add.at(want1, (j0 % 4, j1 % 3), w)
    np.testing.assert_allclose(ys[0], want1, rtol=1e-6)
    want2 = x.copy()
    k0, k1, k2 = j0 % 4, j0 % 3, j1 % 5
    for i in range(6):                                  # in order: the last write wins
        want2[k0[i], k1[i], k2[i]] = w[i, 0]
    np.testing.assert_array_equal(ys[1], want2)
    want3 = x.copy()
    for i in range(5):
        want3[u0[i] % 4] = u[i]
    np.testing.assert_array_equal(ys[2], want3)


def test_index_put_errors():
    def trace(vshape, idx_dt=pypto.DT_INT32, vdt=pypto.DT_FP32, accumulate=False,
              xdt=pypto.DT_FP32):
        @pypto.jit
        def k(x: T([4, 8], xdt), i: T([2], idx_dt), v: T(list(vshape), vdt), o: T([4, 8], xdt)):
            pypto.set_vec_tile_shapes(4, 16)
            o.move(x * 1)
            pypto.index_put_(o, (i,), v, accumulate)
        return k.trace()
    with pytest.raises(pypto.CompileError, match="values must have shape \\[2, 8\\]"):
        trace([2, 4, 8])
    with pytest.raises(pypto.CompileError, match="dim 1 of values must be 8"):
        trace([2, 4])
    with pytest.raises(pypto.CompileError, match="1-D integer tensor"):
        trace([2, 8], idx_dt=pypto.DT_FP32)
    with pytest.raises(pypto.CompileError, match="values dtype f16 differs"):
        trace([2, 8], vdt=pypto.DT_FP16)
    with pytest.raises(pypto.CompileError, match="accumulate=True takes"):
        trace([2, 8], vdt=pypto.DT_INT64, xdt=pypto.DT_INT64, accumulate=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gathermask_the_pages_example(backend):
    @pypto.jit(backend=backend)
    def k(x: T([3, 6], pypto.DT_INT32), y: T([3, 3], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4, 16)
        y[:] = pypto.gathermask(x, 1)
    y = np.zeros((3, 3), np.int32)
    k(np.arange(18, dtype=np.int32).reshape(3, 6), y)
    assert y.tolist() == [[0, 2, 4], [6, 8, 10], [12, 14, 16]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", ["f32", "bf16", "i16"])
def test_gathermask_every_mode_against_numpy(backend, dt):
    pdt, ndt = {"f32": (pypto.DT_FP32, np.float32), "bf16": (pypto.DT_BF16, ml_dtypes.bfloat16),
                "i16": (pypto.DT_INT16, np.int16)}[dt]

    @pypto.jit(backend=backend)
    def k(x: T([2, 5, 24], pdt), m1: T([2, 5, 12], pdt), m2: T([2, 5, 12], pdt),
          m3: T([2, 5, 6], pdt), m4: T([2, 5, 6], pdt), m5: T([2, 5, 6], pdt),
          m6: T([2, 5, 6], pdt), m7: T([2, 5, 24], pdt)):
        pypto.set_vec_tile_shapes(1, 2, 16)
        for mode, out in enumerate([m1, m2, m3, m4, m5, m6, m7], 1):
            out[:] = pypto.gathermask(x, mode)
    x = np.random.default_rng(5).integers(-99, 99, (2, 5, 24)).astype(ndt)
    outs = [np.zeros((2, 5, n), ndt) for n in (12, 12, 6, 6, 6, 6, 24)]
    k(x, *outs)
    want = [x[..., 0::2], x[..., 1::2], x[..., 0::4], x[..., 1::4], x[..., 2::4], x[..., 3::4], x]
    for got, w in zip(outs, want):
        np.testing.assert_array_equal(got, w)


def test_gathermask_errors():
    def trace(mode, n=8, dt=pypto.DT_FP32):
        @pypto.jit
        def k(x: T([2, n], dt), y: T([2, 2], dt)):
            pypto.set_vec_tile_shapes(4, 16)
            y[:] = pypto.view(pypto.gathermask(x, mode), [2, 2], [0, 0])
        return k.trace()
    with pytest.raises(pypto.CompileError, match="pattern_mode must be an int from 1 to 7"):
        trace(8)
    with pytest.raises(pypto.CompileError, match="pattern_mode 3 needs a static last dim that "
                                                  "is a multiple of 4, not 6"):
        trace(3, 6)
    with pytest.raises(pypto.CompileError, match="dtype i8 is not supported"):
        trace(1, dt=pypto.DT_INT8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pack_and_unpack_the_pages_examples(backend):
    @pypto.jit(backend=backend)
    def k(x: T([1, 2], pypto.DT_INT32), u: T([8], pypto.DT_UINT8), y: T([8], pypto.DT_UINT8),
          z: T([2], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4, 16)
        y[:] = pypto.pack(x)
        z[:] = pypto.unpack(u, pypto.DT_INT32)
    y, z = np.zeros(8, np.uint8), np.zeros(2, np.int32)
    k(np.array([[0x03040506, 0x01050608]], np.int32),
      np.array([6, 5, 4, 3, 8, 6, 5, 1], np.uint8), y, z)
    assert y.tolist() == [6, 5, 4, 3, 8, 6, 5, 1]
    assert z.tolist() == [0x03040506, 0x01050608]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", ["bf16", "f32", "i64", "u16"])
def test_pack_and_unpack_against_numpy(backend, dt):
    pdt, ndt = {"f32": (pypto.DT_FP32, np.float32), "bf16": (pypto.DT_BF16, ml_dtypes.bfloat16),
                "i64": (pypto.DT_INT64, np.int64), "u16": (pypto.DT_UINT16, np.uint16)}[dt]
    nb = 3 * 20 * np.dtype(ndt).itemsize

    @pypto.jit(backend=backend)
    def k(x: T([3, 20], pdt), p: T([nb], pypto.DT_UINT8), r: T([60], pdt),
          w: T([nb // 8], pypto.DT_INT64), v: T([20], pdt), pv: T([20 * np.dtype(ndt).itemsize],
                                                                pypto.DT_UINT8)):
        pypto.set_vec_tile_shapes(2, 24)          # several tiles with a tail
        b = pypto.pack(x)
        p[:] = b
        r[:] = pypto.unpack(b, pdt)               # the round trip
        w[:] = pypto.unpack(b, pypto.DT_INT64)    # another width
        pypto.set_vec_tile_shapes(8)
        pv[:] = pypto.pack(v)
    rng = np.random.default_rng(6)
    x = rng.integers(0, 60000, (3, 20)).astype(ndt) if dt in ("i64", "u16") else \
        rng.standard_normal((3, 20)).astype(ndt)
    v = x[1].copy()
    p, r = np.zeros(nb, np.uint8), np.zeros(60, ndt)
    w, pv = np.zeros(nb // 8, np.int64), np.zeros(v.nbytes, np.uint8)
    k(x, p, r, w, v, pv)
    np.testing.assert_array_equal(p, np.frombuffer(x.tobytes(), np.uint8))
    assert r.tobytes() == x.tobytes() and w.tobytes() == x.tobytes()
    np.testing.assert_array_equal(pv, np.frombuffer(v.tobytes(), np.uint8))


def test_pack_and_unpack_errors():
    def trace(fn, n=8, dt=pypto.DT_UINT8, out=pypto.DT_INT32):
        @pypto.jit
        def k(x: T([n], dt), y: T([1], out)):
            pypto.set_vec_tile_shapes(16)
            y[:] = pypto.view(fn(x), [1], [0])
        return k.trace()
    with pytest.raises(pypto.CompileError, match="6 bytes are not a whole number of i32"):
        trace(lambda x: pypto.unpack(x, pypto.DT_INT32), 6)
    with pytest.raises(pypto.CompileError, match="unpack takes a 1-D uint8 tensor"):
        trace(lambda x: pypto.unpack(x, pypto.DT_INT32), dt=pypto.DT_INT8)
    with pytest.raises(pypto.CompileError, match="pack: dtype bool is not supported"):
        trace(pypto.pack, dt=pypto.DT_BOOL, out=pypto.DT_UINT8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pack_of_a_multi_dim_tensor_past_one_tile(backend):
    """[3, 96, 256] fp32 is 288 KiB: past an eighth of the a2's UB (24 KiB), so its bytes are
    copied in blocks (rows of the bitcast), not as one tile of the whole tensor."""
    @pypto.jit(backend=backend, target="a2")
    def k(x: T([3, 96, 256], pypto.DT_FP32), y: T([3 * 96 * 256 * 4], pypto.DT_UINT8)):
        pypto.set_vec_tile_shapes(1, 16, 64)
        y[:] = pypto.pack(x)
    x = np.random.default_rng(1).standard_normal((3, 96, 256)).astype(np.float32)
    y = np.zeros(x.nbytes, np.uint8)
    k(x, y)
    np.testing.assert_array_equal(y, np.frombuffer(x.tobytes(), np.uint8))
    from libpypto import driver
    doc = driver.lower(k.trace(target=driver.target_for(None, "a2")))
    tiles = [op.result.type for op in doc.walk() if op.name == "tile"]
    assert max(t.nbytes for t in tiles) <= 196608 // 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_output_used_leaves_a_dead_reshape_that_schedules(backend):
    # deinterleave's unused even half is a reshape task whose store DCE removes: a task
    # that touches no GM (the scheduler once crashed on its missing dependences)
    @pypto.jit(backend=backend)
    def k(a: T([2, 3, 2, 8], pypto.DT_FP32), b: T([2, 3, 2, 8], pypto.DT_FP32),
          o: T([2, 3, 2, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 2, 2, 8)
        o[:] = pypto.deinterleave(a, b)[1]
    a, b = np.random.default_rng(7).standard_normal((2, 2, 3, 2, 8), dtype=np.float32)
    o = np.zeros_like(a)
    k(a, b, o)
    np.testing.assert_array_equal(o, np.concatenate([a, b], -1)[..., 1::2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_put_completes_a_short_tile_with_values_dims(backend):
    @pypto.jit(backend=backend)
    def k(x: T([5, 3, 16], pypto.DT_FP32), i: T([4], pypto.DT_INT32),
          v: T([4, 3, 16], pypto.DT_FP32), y: T([5, 3, 16], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(2, 3, 16)
        y.move(x * 1.0)
        pypto.set_vec_tile_shapes(2)              # [2] -> [2, 3, 16], as the page says
        pypto.index_put_(y, (i,), v, True)
    x = np.random.default_rng(8).standard_normal((5, 3, 16)).astype(np.float32)
    i = np.array([4, 0, 4, 2], np.int32)
    v = np.arange(4 * 48, dtype=np.float32).reshape(4, 3, 16)
    y = np.zeros_like(x)
    k(x, i, v, y)
    want = x.copy()
    np.add.at(want, i, v)
    np.testing.assert_allclose(y, want, rtol=1e-6)
