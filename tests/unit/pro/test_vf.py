"""Reg (vector-function) computation (prolang/vf.py, ir/reg_ops.py, runtime/pro_vf.py,
codegen/pro_vf_c.py): every instruction against an independent numpy formula, in fp32 and
fp16 (and int32 where it takes integers), on the Pro runner and in C, the two bit for bit."""

import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.pro import Vf as vf
from libpypto.runtime.compiler import find_cc

MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
F32, F16 = pl.DT_FP32, pl.DT_FP16
DTS = [F32, F16]
needs_cc = pytest.mark.skipif(find_cc() is None, reason="no C compiler")


def _sync(src, dst, ev=0):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=ev)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=ev)


def _kernel(vfn, dt, odt=None):
    """A kernel loading a, b and o ([4, lanes] tiles), calling vfn(ta, tb, to), storing o."""
    odt = odt or dt
    L, LO = 256 // dt.itemsize, 256 // odt.itemsize

    @pl.jit
    def k(a: pl.Tensor[[4, L], dt], b: pl.Tensor[[4, L], dt], o: pl.Tensor[[4, LO], odt]):
        tt = pl.TileType(shape=[4, L], dtype=dt, target_memory=pl.MemorySpace.Vec)
        to_t = pl.TileType(shape=[4, LO], dtype=odt, target_memory=pl.MemorySpace.Vec)
        ta, tb = pl.make_tile(tt, addr=0), pl.make_tile(tt, addr=1024)
        to = pl.make_tile(to_t, addr=2048)
        with pl.section_vector():
            pl.load(ta, a, [0, 0])
            pl.load(tb, b, [0, 0])
            pl.load(to, o, [0, 0])
            _sync(MTE2, V)
            vfn(ta, tb, to)
            _sync(V, MTE3)
            pl.store(o, to, [0, 0])
    return k


def data(dt, seed=0, lo=-3.0, hi=3.0, shape=None):
    rng = np.random.default_rng(seed)
    shape = shape or (4, 256 // dt.itemsize)
    if dt.kind == "int":
        return rng.integers(-1000, 1000, shape).astype(dt.np)
    return rng.uniform(lo, hi, shape).astype(dt.np)


def run(vfn, dt, a, b, o=None, odt=None):
    """o after the kernel on the Pro runner; the C must give the same bits."""
    odt = odt or dt
    o = np.zeros((4, 256 // odt.itemsize), odt.np) if o is None else o
    k = _kernel(vfn, dt, odt)
    got = o.copy()
    k(a, b, got)
    if find_cc() is not None:
        kc = _kernel(vfn, dt, odt)
        kc.backend = "c"
        got_c = o.copy()
        kc(a, b, got_c)
        assert got.tobytes() == got_c.tobytes(), "the C and the Pro runner differ"
    return got


def f32(x):
    return x.astype(np.float32)


def close(got, want, dt):
    tol = 1e-6 if dt == F32 else 1e-3
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


# -- arithmetic -------------------------------------------------------------------------------

@pl.vector_function
def _arith(ta, tb, to):
    full = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=ta.type.dtype)
    a = vf.load_align(ta, [0, 0])
    b = vf.load_align(tb, 0)
    vf.store_align(to, vf.add(a, b, full), full, [0, 0])
    vf.store_align(to, vf.mul(a, b, full), full, [1, 0])
    vf.store_align(to + 2 * (256 // ta.type.dtype.itemsize), vf.max(a, b, full), full)
    vf.store_align(to, vf.sub(a, vf.min(a, b, full), full), full, [3, 0])


@pytest.mark.parametrize("dt", DTS + [pl.DT_BF16], ids=str)
def test_add_mul_max_sub_min(dt):
    a, b = data(dt, 1), data(dt, 2)
    got = run(_arith, dt, a, b)
    w = [f32(a[0]) + f32(b[0]), f32(a[0]) * f32(b[0]), np.maximum(a[0], b[0]),
         f32(a[0]) - f32(np.minimum(a[0], b[0]))]
    for r in range(4):
        assert got[r].tobytes() == np.asarray(w[r]).astype(dt.np).tobytes(), r


@pl.vector_function
def _unary(ta, tb, to):
    full = vf.create_mask(dtype=ta.type.dtype)
    a = vf.load_align(ta, [0, 0])
    p = vf.abs(a, full)
    vf.store_align(to, vf.exp(a, full), full, [0, 0])
    vf.store_align(to, vf.ln(p, full), full, [1, 0])
    vf.store_align(to, vf.sqrt(p, full), full, [2, 0])
    vf.store_align(to, vf.neg(vf.relu(a, full), full), full, [3, 0])


@pytest.mark.parametrize("dt", DTS, ids=str)
def test_exp_ln_sqrt_relu_neg(dt):
    a = data(dt, 3, 0.1, 4.0) * np.where(np.arange(256 // dt.itemsize) % 2, 1, -1).astype(dt.np)
    got = run(_unary, dt, a, a)
    x = a[0].astype(np.float64)
    close(got[0], np.exp(x), dt)
    close(got[1], np.log(np.abs(x)), dt)
    close(got[2], np.sqrt(np.abs(x)), dt)
    assert np.array_equal(got[3], -np.maximum(a[0], 0))


@pl.vector_function
def _scalars(ta, tb, to):
    full = vf.create_mask(dtype=ta.type.dtype)
    a = vf.load_align(ta, 0)
    vf.store_align(to, vf.adds(a, 1.5, full), full, [0, 0])
    vf.store_align(to, vf.muls(vf.subs(a, 0.25, full), -2.0, full), full, [1, 0])
    vf.store_align(to, vf.mins(vf.maxs(a, -0.5, full), 0.5, full), full, [2, 0])
    vf.store_align(to, vf.leaky_relu(a, 0.1, full), full, [3, 0])


@pytest.mark.parametrize("dt", DTS, ids=str)
def test_scalar_forms(dt):
    a = data(dt, 4)
    got = run(_scalars, dt, a, a)
    x = f32(a[0])
    r = lambda v: np.asarray(v, np.float32).astype(dt.np)   # noqa: E731
    assert np.array_equal(got[0], r(x + np.float32(1.5)))
    assert np.array_equal(got[1], r(f32(r(x - np.float32(0.25))) * np.float32(-2)))
    assert np.array_equal(got[2], r(np.clip(x, -0.5, 0.5)))
    assert np.array_equal(got[3], r(np.where(x >= 0, x, x * np.float32(0.1))))


@pl.vector_function
def _fused(ta, tb, to):
    full = vf.create_mask(dtype=pl.DT_FP32)
    a = vf.load_align(ta, 0)
    b = vf.load_align(tb, 0)
    m = vf.full(b, full)                                  # lane 0 of b everywhere
    vf.store_align(to, vf.exp_sub(a, m, full), full, [0, 0])
    vf.store_align(to, vf.abs_sub(a, b, full), full, [1, 0])
    d = vf.load_align(to, [2, 0])
    d = vf.axpy(a, 3.0, full)                             # d + a * 3, d the old row 2
    vf.store_align(to, d, full, [2, 0])
    acc = vf.load_align(to, [3, 0])
    acc = vf.mul_add_dst(a, b, full)
    vf.store_align(to, acc, full, [3, 0])


def test_fused_forms_fp32():
    a, b, o = data(F32, 5), data(F32, 6), data(F32, 7)
    got = run(_fused, F32, a, b, o)
    x, y = a[0].astype(np.float64), b[0].astype(np.float64)
    assert np.array_equal(got[0], np.exp(x - y[0]).astype(np.float32))
    assert np.array_equal(got[1], np.abs(a[0] - b[0]))
    assert np.array_equal(got[2], (o[2].astype(np.float64) + x * 3).astype(np.float32))
    assert np.array_equal(got[3], (o[3].astype(np.float64) + x * y).astype(np.float32))


# -- masks, merging, compares, select ---------------------------------------------------------

@pl.vector_function
def _masks(ta, tb, to):
    dt = ta.type.dtype
    a = vf.load_align(ta, 0)
    b = vf.load_align(tb, 0)
    h = vf.create_mask(pattern=pl.MaskPattern.H, dtype=dt)
    m3 = vf.create_mask(pattern=pl.MaskPattern.M3, dtype=dt)
    vf.store_align(to, vf.add(a, b, h), vf.create_mask(dtype=dt), [0, 0])   # zeroing
    d = vf.load_align(ta, 0)
    d = vf.add(b, b, m3, mode=pl.MergeMode.MERGING)          # keeps a off the mask
    vf.store_align(to, d, vf.create_mask(dtype=dt), [1, 0])
    vf.store_align(to, b, vf.update_mask(37, dtype=dt), [2, 0])   # lanes 37.. keep o
    gt = vf.gt(a, b, vf.create_mask(pattern=pl.MaskPattern.VL16, dtype=dt))
    vf.store_align(to, vf.select(a, b, gt), vf.create_mask(dtype=dt), [3, 0])


@pytest.mark.parametrize("dt", DTS, ids=str)
def test_masks_merging_masked_store_compare_select(dt):
    a, b, o = data(dt, 8), data(dt, 9), data(dt, 10)
    got = run(_masks, dt, a, b, o)
    n = a.shape[1]
    i = np.arange(n)
    s = (f32(a[0]) + f32(b[0])).astype(dt.np)
    assert np.array_equal(got[0], np.where(i < n // 2, s, 0).astype(dt.np))
    bb = (f32(b[0]) * 2).astype(dt.np)
    assert np.array_equal(got[1], np.where(i % 3 == 0, bb, a[0]))
    assert np.array_equal(got[2], np.where(i < 37, b[0], o[2]))
    assert np.array_equal(got[3], np.where((i < 16) & (a[0] > b[0]), a[0], b[0]))


@pl.vector_function
def _int_ops(ta, tb, to):
    full = vf.create_mask(dtype=pl.DT_INT32)
    a = vf.load_align(ta, 0)
    b = vf.load_align(tb, 0)
    vf.store_align(to, vf.and_(a, b, full), full, [0, 0])
    vf.store_align(to, vf.xor(vf.or_(a, b, full), b, full), full, [1, 0])
    vf.store_align(to, vf.reduce_sum(vf.abs(a, full), full), full, [2, 0])
    ne = vf.ne(a, 7, full)
    vf.store_align(to, vf.select(a, vf.full(-1, full, dtype=pl.DT_INT32), ne), full, [3, 0])


def test_integer_ops():
    dt = pl.DT_INT32
    a, b = data(dt, 11), data(dt, 12)
    a[0, 5] = 7
    got = run(_int_ops, dt, a, b)
    assert np.array_equal(got[0], a[0] & b[0])
    assert np.array_equal(got[1], (a[0] | b[0]) ^ b[0])
    assert got[2, 0] == np.abs(a[0]).sum() and not got[2, 1:].any()
    assert np.array_equal(got[3], np.where(a[0] != 7, a[0], -1))


# -- reductions and broadcasts ----------------------------------------------------------------

@pl.vector_function
def _reduce(ta, tb, to):
    dt = ta.type.dtype
    a = vf.load_align(ta, 0)
    live = vf.update_mask(50, dtype=dt)
    vf.store_align(to, vf.reduce_sum(a, live), vf.create_mask(dtype=dt), [0, 0])
    vf.store_align(to, vf.reduce_max(a, live), vf.create_mask(dtype=dt), [1, 0])
    vf.store_align(to, vf.reduce_min(a, live), vf.create_mask(dtype=dt), [2, 0])
    mx = vf.reduce_max(a, vf.create_mask(dtype=dt))
    vf.store_align(to, vf.full(mx, vf.create_mask(dtype=dt)), vf.create_mask(dtype=dt), [3, 0])


def _tree_sum(x):
    x = x.astype(np.float32)
    while x.size > 1:
        x = x[0::2] + x[1::2]
    return x[0]


@pytest.mark.parametrize("dt", DTS, ids=str)
def test_reduce_sum_max_min_with_index(dt):
    a = data(dt, 13)
    a[0, 40] = a[0, 41] = 9          # a tie: the first index wins
    got = run(_reduce, dt, a, a)
    live = a[0, :50]
    want = np.zeros(a.shape[1], np.float32)
    want[:50] = f32(live)
    assert got[0, 0] == _tree_sum(want).astype(dt.np) and not got[0, 1:].any()
    close(got[0, :1], np.asarray([live.astype(np.float64).sum()]), dt)
    bits = f"u{dt.itemsize}"
    assert got[1, 0] == 9 and got[1].view(bits)[1] == 40 and not got[1, 2:].any()
    assert got[2, 0] == live.min() and got[2].view(bits)[1] == int(np.argmin(live))
    assert (got[3] == a[0].max()).all()


def test_reduce_max_nan_zero_sign_and_empty_mask():
    @pl.vector_function
    def body(ta, tb, to):
        full = vf.create_mask(dtype=pl.DT_FP32)
        a = vf.load_align(ta, 0)
        b = vf.load_align(tb, 0)
        vf.store_align(to, vf.reduce_max(a, full), full, [0, 0])
        vf.store_align(to, vf.reduce_max(b, full), full, [1, 0])
        vf.store_align(to, vf.reduce_min(b, full), full, [2, 0])
        vf.store_align(to, vf.reduce_max(a, vf.create_mask(pattern=pl.MaskPattern.ALLF)),
                       full, [3, 0])
    a = -np.ones((4, 64), np.float32)
    a[0, 10], a[0, 20] = np.nan, np.nan
    b = -np.ones((4, 64), np.float32)
    b[0, 3], b[0, 7], b[0, 9] = -0.0, 0.0, -0.0
    got = run(body, F32, a, b)
    u = got.view(np.uint32)
    assert np.isnan(got[0, 0]) and u[0, 1] == 10
    assert got[1, 0] == 0 and not np.signbit(got[1, 0]) and u[1, 1] == 7
    assert got[2, 0] == -1 and u[2, 1] == 0
    assert got[3, 0] == -np.inf and u[3, 1] == 0


# -- casts, unaligned forms, bit casts --------------------------------------------------------

@pl.vector_function
def _narrow(ta, tb, to):
    full = vf.create_mask(dtype=pl.DT_FP32)
    a = vf.load_align(ta, 0)
    h0 = vf.astype(a, full, dtype=pl.DT_FP16)                           # even elements
    h1 = vf.astype(a, full, dtype=pl.DT_FP16, layout=pl.CastLayout.ONE)  # odd elements
    vf.store_align(to, h0, vf.create_mask(dtype=pl.DT_FP16), [0, 0])
    vf.store_align(to, h1, vf.create_mask(dtype=pl.DT_FP16), [1, 0])


def test_astype_fp32_to_fp16_layouts():
    a = data(F32, 14)
    got = run(_narrow, F32, a, a, odt=F16)
    h = a[0].astype(np.float16)
    assert np.array_equal(got[0, 0::2], h) and not got[0, 1::2].any()
    assert np.array_equal(got[1, 1::2], h) and not got[1, 0::2].any()


@pl.vector_function
def _widen(ta, tb, to):
    a = vf.load_align(ta, 0)
    m16 = vf.create_mask(dtype=pl.DT_FP16)
    full = vf.create_mask(dtype=pl.DT_FP32)
    vf.store_align(to, vf.astype(a, m16, dtype=pl.DT_FP32), full, [0, 0])
    vf.store_align(to, vf.astype(a, m16, dtype=pl.DT_FP32, layout=pl.CastLayout.ONE), full,
                   [1, 0])


def test_astype_fp16_to_fp32_layouts():
    a = data(F16, 15)
    got = run(_widen, F16, a, a, odt=F32)
    assert np.array_equal(got[0], a[0, 0::2].astype(np.float32))
    assert np.array_equal(got[1], a[0, 1::2].astype(np.float32))


@pl.vector_function
def _to_int(ta, tb, to):
    full = vf.create_mask(dtype=pl.DT_FP32)
    a = vf.load_align(ta, 0)
    for r, mode in enumerate((pl.VFRoundMode.CAST_RINT, pl.VFRoundMode.CAST_ROUND,
                              pl.VFRoundMode.CAST_FLOOR, pl.VFRoundMode.CAST_TRUNC)):
        i = vf.astype(a, full, dtype=pl.DT_INT32, round_mode=mode)
        vf.store_align(to, i, vf.create_mask(dtype=pl.DT_INT32), [r, 0])


def test_astype_float_to_int_rounding_and_saturation():
    a = np.round(data(F32, 16) * 4) / 4          # quarters: ties to round
    a[0, :4] = [2.5, -2.5, 3e9, np.nan]
    got = run(_to_int, F32, a, a, odt=pl.DT_INT32)
    x = a[0].astype(np.float64)
    fix = lambda r: np.where(np.isnan(x), 0, np.clip(r, -2**31, 2**31 - 1))  # noqa: E731
    assert np.array_equal(got[0], fix(np.rint(x)).astype(np.int32))
    assert np.array_equal(got[1], fix(np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int32))
    assert np.array_equal(got[2], fix(np.floor(x)).astype(np.int32))
    assert np.array_equal(got[3], fix(np.trunc(x)).astype(np.int32))


@pl.vector_function
def _unaligned(ta, tb, to):
    dt = ta.type.dtype
    full = vf.create_mask(dtype=dt)
    u = vf.load_unalign_init()
    x = vf.load_unalign(u, ta + 3)                          # elements 3 .. 3 + lanes
    vf.store_align(to, x, full, [0, 0])
    s = vf.unalign_reg_for_store()
    vf.store_unalign(to + 256 // dt.itemsize + 5, x, s, 10)   # 10 elements at row 1, col 5
    vf.store_unalign_post(to, s)
    ld = vf.load_unalign_init()
    vf.load_unalign_pre(ld, tb + 1)
    st = vf.unalign_reg_for_store()
    for i in pl.range(0, 2):                               # post_update across iterations
        y = vf.load_unalign(ld, tb, 7, post_update=True)
        vf.store_unalign(to + 2 * (256 // dt.itemsize), y, st, 7, post_update=True)
    vf.store_unalign_post(to, st, 0, post_update=True)


@pytest.mark.parametrize("dt", DTS, ids=str)
def test_unaligned_loads_and_stores(dt):
    a, b, o = data(dt, 17), data(dt, 18), data(dt, 19)
    got = run(_unaligned, dt, a, b, o)
    n = a.shape[1]
    flat = a.reshape(-1)
    assert np.array_equal(got[0], flat[3:3 + n])
    want1 = o[1].copy()
    want1[5:15] = flat[3:13]
    assert np.array_equal(got[1], want1)
    want2 = o[2].copy()
    want2[:14] = b.reshape(-1)[1:15]
    assert np.array_equal(got[2], want2)


@pl.vector_function
def _bits(ta, tb, to):
    a = vf.load_align(ta, 0, dtype=pl.DT_UINT32)            # fp32 bits
    full = vf.create_mask(dtype=pl.DT_UINT32)
    vf.store_align(to, vf.and_(a, vf.full(0x7FFFFFFF, full, dtype=pl.DT_UINT32), full),
                   full, [0, 0])
    f = vf.bit_cast(a, dtype=pl.DT_FP32)
    vf.store_align(to, vf.bit_cast(vf.neg(f, vf.create_mask()), dtype=pl.DT_UINT32), full,
                   [1, 0])


def test_reinterpreting_load_and_bit_cast():
    a = data(F32, 20)
    got = run(_bits, F32, a, a, odt=pl.DT_UINT32)
    assert np.array_equal(got[0], a[0].view(np.uint32) & 0x7FFFFFFF)
    assert np.array_equal(got[1], (-a[0]).view(np.uint32))


@pl.vector_function
def _norm_rows(ta, tb, to):
    """y = (x - mean) / sqrt(var + eps) * x1 + x2 per row, rows 1.. of ta as x, row 0 of tb
    as the scale and row 1 as the shift: a product feeding the next instruction's sum, which
    gcc would fuse into an fma without the programs' fp-contract=off."""
    full = vf.create_mask(dtype=pl.DT_FP32)
    n = vf.full(64, full, dtype=pl.DT_FP32)
    g = vf.load_align(tb, [0, 0])
    b = vf.load_align(tb, [1, 0])
    for m in pl.range(0, 4):
        live = vf.update_mask(64 - m, dtype=pl.DT_FP32)
        x = vf.load_align(ta, [m, 0])
        mean = vf.div(vf.full(vf.reduce_sum(x, live), full), n, full)
        xc = vf.sub(x, mean, live)
        var = vf.div(vf.full(vf.reduce_sum(vf.mul(xc, xc, live), live), full), n, full)
        std = vf.sqrt(vf.adds(var, 1e-5, full), full)
        out = vf.mul(vf.div(xc, std, live), g, live)
        out = vf.add(out, b, live)
        vf.store_align(to, out, live, [m, 0])


def test_a_norm_in_registers_rounds_every_instruction():
    a, b, o = data(F32, 21), data(F32, 22), data(F32, 23)
    got = run(_norm_rows, F32, a, b, o)          # the C gives the same bits (run checks)
    for m in range(4):
        k = 64 - m
        x = a[m, :k]
        tree = np.zeros(64, np.float32)
        tree[:k] = x
        mean = np.float32(_tree_sum(tree) / np.float32(64))
        xc = (x - mean).astype(np.float32)
        tree[:k] = xc * xc
        var = np.float32(_tree_sum(tree) / np.float32(64))
        std = np.sqrt(np.float32(var + np.float32(1e-5)))
        want = ((xc / std) * b[0, :k]).astype(np.float32) + b[1, :k]
        assert np.array_equal(got[m, :k], want) and np.array_equal(got[m, k:], o[m, k:])


@pl.vector_function
def _arange(ta, tb, to):
    dt = ta.type.dtype
    full = vf.create_mask(dtype=dt)
    vf.store_align(to, vf.arange(5.0, dtype=dt), full, [0, 0])
    down = vf.arange(-2.5, dtype=dt, index_order=pl.IndexOrder.DECREASE_ORDER)
    vf.store_align(to, down, full, [1, 0])
    if dt == pl.DT_FP32:                                  # a compile-time branch
        idx = vf.arange(3)                                # int32 lanes
        as_f = vf.astype(idx, vf.create_mask(dtype=pl.DT_INT32), dtype=pl.DT_FP32)
        vf.store_align(to, as_f, full, [2, 0])


@pytest.mark.parametrize("dt", DTS, ids=str)
def test_arange(dt):
    a = data(dt, 24)
    got = run(_arange, dt, a, a)
    i = np.arange(a.shape[1]).astype(np.float32)
    assert np.array_equal(got[0], (5 + i).astype(dt.np))
    assert np.array_equal(got[1], (-2.5 - i).astype(dt.np))
    if dt == F32:
        assert np.array_equal(got[2], 3 + np.arange(64, dtype=np.float32))
