"""Issue 9 item 4: the MX matmul (fp8 operands, E8M0 scales in ScaleLeft / ScaleRight),
quant / dequant, gather / scatter, sort32 / mrgsort, histogram, argmax / argmin and the fused
vector forms. Every kernel runs on the Pro runner (numpy) with 1 thread and on its C with 1
and 2 threads: the results must be bit-identical, and equal (within the dtype's rounding) to
an independent numpy formula. Then the errors: wrong spaces, dtypes, addresses, arch."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.errors import PyptoError
from libpypto.ir.types import DTYPES

from . import kernels_more as K

E4M3, E5M2, E8M0 = (np.dtype(getattr(ml_dtypes, n)) for n in
                    ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"))


def run(kernel, arrays: list, block_dim: int = 2) -> list:
    """The arrays after the kernel, from the Pro runner; the C with 1 and 2 threads must
    produce the same bytes."""
    results = []
    for backend, threads in (("numpy", 1), ("c", 1), ("c", 2)):
        work = [a.copy() for a in arrays]
        kernel.backend, kernel.threads = backend, threads
        try:
            kernel[block_dim](*work)
        finally:
            kernel.backend, kernel.threads = "numpy", None
        results.append(work)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()
    return results[0]


def rng(seed=0):
    return np.random.default_rng(seed)


# -- MX matmul ------------------------------------------------------------------------------

def _mx_inputs(seed=0):
    r = rng(seed)
    a = r.standard_normal((32, K.MK)).astype(np.float32).astype(E4M3)
    b = (r.standard_normal((K.MK, 32)) * 8).astype(np.float32).astype(E5M2)
    sa = np.ldexp(1.0, r.integers(-6, 7, (32, K.MK // 64, 2))).astype(E8M0)
    sb = np.ldexp(1.0, r.integers(-6, 7, (K.MK // 64, 32, 2))).astype(E8M0)
    return a, b, sa, sb


def test_e8m0_and_fp8_dtypes():
    assert DTYPES["f8e4m3"].np == E4M3 and DTYPES["e8m0"].api == "DT_FP8E8M0"
    assert pl.DT_FP8E5M2.c_type == "uint8_t" and pl.DT_FP8E4M3FN.itemsize == 1
    # E8M0 e encodes 2**(e - 127); 0xFF is NaN
    raw = np.array([0, 127, 130, 254, 255], np.uint8).view(E8M0).astype(np.float64)
    assert raw[1:4].tolist() == [1.0, 8.0, 2.0 ** 127] and raw[0] == 2.0 ** -127
    assert np.isnan(raw[4])


def test_matmul_mx_against_float64():
    a, b, sa, sb = _mx_inputs()
    out = np.zeros((32, 32), np.float32)
    got = run(K.mx_mm, [a, b, sa, sb, out], block_dim=1)[4]
    g = K.MK // 32
    da = a.astype(np.float64) * np.repeat(sa.astype(np.float64).reshape(32, g), 32, axis=1)
    sbf = sb.astype(np.float64).transpose(0, 2, 1).reshape(g, 32)
    db = b.astype(np.float64) * np.repeat(sbf, 32, axis=0)
    want = (da @ db).astype(np.float32)
    # float64 sums of exact products rounded once: equal to the float64 product, rounded
    assert np.array_equal(got, want)


def test_matmul_mx_nan_scale_gives_nan():
    a, b, sa, sb = _mx_inputs(1)
    sa.view(np.uint8)[3, 0, 1] = 0xFF           # row 3's second group of 32: NaN scale
    out = np.zeros((32, 32), np.float32)
    got = run(K.mx_mm, [a, b, sa, sb, out], block_dim=1)[4]
    assert np.isnan(got[3]).all() and not np.isnan(np.delete(got, 3, axis=0)).any()


@pytest.mark.parametrize("kernel,msg", [
    (K.mx_bad_addr, "address >> 4"),
    (K.mx_bad_space, "it must be in ScaleLeft"),
    (K.mx_bad_dtype, "MXFP8 takes DT_FP8E4M3FN / DT_FP8E5M2"),
    (K.mx_on_a2, "exists on the 950 only"),
    (K.fp8_vector, "8-bit float tiles only move"),
])
def test_mx_errors(kernel, msg):
    a, b, sa, sb = _mx_inputs()
    if kernel is K.mx_bad_dtype:
        a = a.astype(np.float16)
    args = [a, b, sa, sb, np.zeros((32, 32), np.float32)]
    if kernel is K.fp8_vector:
        args = [np.zeros((K.R, K.C), E4M3), np.zeros((K.R, K.C), E4M3)]
    with pytest.raises(PyptoError, match=msg):
        kernel[1](*args)


def test_scale_tiles_hold_e8m0_only():
    with pytest.raises(PyptoError, match="holds MX scales"):
        pl.TileType([32, 4], pl.DT_FP16, pl.MemorySpace.ScaleLeft)


def test_mx_listing_names_the_instructions():
    a, b, sa, sb = _mx_inputs()
    K.mx_mm[1](a, b, sa, sb, np.zeros((32, 32), np.float32))
    from libpypto.codegen.pto import listing
    doc = K.mx_mm.last_doc
    text = listing([op for op in doc.body if op.name == "program"], doc)
    assert "TMATMUL_MX" in text and "TLOAD" in text


# -- quant / dequant --------------------------------------------------------------------------

def test_quant_sym_and_asym_and_dequant():
    r = rng(2)
    x = (r.standard_normal((16, 64)) * 40).astype(np.float32)
    s = np.abs(r.standard_normal((16, 1))).astype(np.float32) + 0.25
    o = np.round(r.standard_normal((16, 1)) * 20).astype(np.float32) + 0.5
    y = run(K.quant_sym, [x, s, np.zeros((16, 64), np.int8)])[2]
    assert np.array_equal(y, np.clip(np.rint(x * s), -128, 127).astype(np.int8))
    y = run(K.quant_asym, [x, s, o, np.zeros((16, 64), np.uint8)])[3]
    assert np.array_equal(y, np.clip(np.rint(np.rint(x * s) + o), 0, 255).astype(np.uint8))
    q = r.integers(-128, 128, (16, 64)).astype(np.int8)
    y = run(K.dequant, [q, s, o, np.zeros((16, 64), np.float32)])[3]
    assert np.array_equal(y, (q.astype(np.float32) - o) * s)


def test_quant_errors():
    with pytest.raises(PyptoError, match="DT_INT8 out"):
        K.quant_bad[1](np.zeros((8, 64), np.float32), np.ones((8, 1), np.float32),
                       np.zeros((8, 64), np.uint8))


# -- gather / scatter -------------------------------------------------------------------------

def test_gather_flat_indices_with_offset():
    r = rng(3)
    x = r.standard_normal((16, 64)).astype(np.float32)
    ix = r.integers(0, 8 * 64 - 3, (16, 64)).astype(np.int32)
    y = run(K.gather, [x, ix, np.zeros((16, 64), np.float32)])[2]
    for blk in (0, 1):
        rows = slice(8 * blk, 8 * blk + 8)
        assert np.array_equal(y[rows], x[rows].reshape(-1)[ix[rows] + 3])


def test_gather_out_of_range_is_an_error():
    x = np.zeros((16, 64), np.float32)
    ix = np.full((16, 64), 8 * 64 - 3, np.int32)       # + offset 3: one past the tile
    for backend in ("numpy", "c"):
        K.gather.backend = backend
        try:
            with pytest.raises(PyptoError):
                K.gather[2](x, ix, np.zeros((16, 64), np.float32))
        finally:
            K.gather.backend = "numpy"


def test_scatter_last_write_wins():
    r = rng(4)
    x = r.standard_normal((16, 64)).astype(np.float16)
    ix = r.integers(0, 8 * 64, (16, 64)).astype(np.int16)     # with collisions
    y0 = r.standard_normal((16, 64)).astype(np.float16)
    y = run(K.scatter, [x, ix, y0.copy()])[2]
    want = y0.copy()
    for blk in (0, 1):
        flat = want[8 * blk:8 * blk + 8].reshape(-1)
        for i, v in zip(ix[8 * blk:8 * blk + 8].reshape(-1), x[8 * blk:8 * blk + 8].reshape(-1)):
            flat[i] = v
    assert np.array_equal(y, want)


def test_scatter_index_dtype_follows_the_data_width():
    with pytest.raises(PyptoError, match="i16 or u16"):
        K.scatter_bad_idx[1](np.zeros((8, 64), np.float16), np.zeros((8, 64), np.int32))


# -- sort32 / mrgsort -------------------------------------------------------------------------

def _records(vals, ids, dt):
    rec = np.zeros((len(vals), 8), np.uint8)
    rec[:, :dt.itemsize] = vals.astype(dt).view(np.uint8).reshape(len(vals), -1)
    rec[:, 4:] = ids.astype(np.uint32).view(np.uint8).reshape(len(vals), 4)
    return rec.reshape(-1).view(dt)


def _sort32_want(x, ix, dt):
    out = []
    for row in x:
        parts = []
        for g in range(0, len(row), 32):
            v, i = row[g:g + 32], ix[0, g:g + 32]
            order = sorted(range(len(v)), key=lambda k: (-float(v[k]), k))   # stable
            parts.append(_records(v[order], i[order], dt))
        out.append(np.concatenate(parts))
    return np.stack(out)


@pytest.mark.parametrize("kernel,dt,cols", [(K.sort32_f32, np.float32, 64),
                                            (K.sort32_f16_tail, np.float16, 48)])
def test_sort32(kernel, dt, cols):
    r = rng(5)
    x = r.integers(-6, 6, (16, cols)).astype(dt)        # many ties
    ix = (np.arange(cols, dtype=np.uint32) * 7 + 100000)[None]
    w = 8 // np.dtype(dt).itemsize
    y = run(kernel, [x, ix, np.zeros((16, cols * w), dt)])[2]
    assert y.tobytes() == _sort32_want(x, ix, np.dtype(dt)).tobytes()


def test_sort32_tail_needs_tmp():
    with pytest.raises(PyptoError, match="pass tmp"):
        K.sort32_no_tmp[1](np.zeros((8, 48), np.float16), np.zeros((1, 48), np.uint32),
                           np.zeros((8, 192), np.float16))


def test_mrgsort_merges_four_runs():
    r = rng(6)
    runs = []
    for k in range(8):                                   # 8 runs of 32 records (64 floats)
        v = np.sort(r.integers(-20, 20, 32).astype(np.float32))[::-1]
        runs.append(_records(v, np.arange(32) + 32 * k, np.dtype(np.float32)))
    x = np.concatenate(runs)[None]
    y = run(K.mrgsort, [x, np.zeros_like(x)], block_dim=1)[1]
    want = []
    for g in (0, 4):
        recs = np.concatenate(runs[g:g + 4]).view(np.uint8).reshape(-1, 8)
        vals = recs[:, :4].copy().view(np.float32).reshape(-1)
        order = sorted(range(len(vals)), key=lambda k: (-float(vals[k]), k))
        want.append(recs[order].reshape(-1))
    assert y.view(np.uint8).tobytes() == np.concatenate(want).tobytes()


# -- histogram --------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,msb", [(K.hist_msb, True), (K.hist_lsb, False)])
def test_histogram_cumulative(kernel, msb):
    r = rng(7)
    x = r.integers(0, 4096, (64, 64)).astype(np.uint16)     # high bytes 0..15
    ix = r.integers(0, 16, (64, 1)).astype(np.uint8)
    y = run(kernel, [x, ix, np.zeros((64, 256), np.uint32)])[2]
    for i in range(64):
        byte = (x[i] >> 8) if msb else (x[i] & 255)[(x[i] >> 8) == ix[i, 0]]
        want = [int((byte <= b).sum()) for b in range(256)]
        assert y[i].tolist() == want


def test_histogram_reference_example_rows():
    """The reference's example: row 0 holds 0, 257, 514, ...: cumulative 1, 2, 3, ..."""
    x = np.zeros((64, 64), np.uint16)
    x[0] = np.arange(64) * 257
    y = run(K.hist_msb, [x, np.zeros((64, 1), np.uint8), np.zeros((64, 256), np.uint32)])[2]
    assert y[0, :8].tolist() == [1, 2, 3, 4, 5, 6, 7, 8] and y[1, 0] == 64


# -- argmax / argmin --------------------------------------------------------------------------

def test_argmax_argmin_rows_with_ties_and_nan():
    r = rng(8)
    x = r.integers(-3, 4, (16, 64)).astype(np.float32)
    x[5, 10] = np.nan
    x[5, 40] = np.nan
    mx, mn = run(K.arg_rows, [x, np.zeros((16, 1), np.int32), np.zeros((16, 1), np.int32)])[1:]
    for i in range(16):
        if i == 5:
            assert mx[i, 0] == 10 and mn[i, 0] == 10      # the first NaN
            continue
        assert mx[i, 0] == int(np.argmax(x[i])) and mn[i, 0] == int(np.argmin(x[i]))


def test_argmax_columns():
    x = rng(9).standard_normal((8, 64)).astype(np.float16)
    y = run(K.arg_cols, [x, np.zeros((1, 64), np.uint32)], block_dim=1)[1]
    assert np.array_equal(y[0], np.argmax(x.astype(np.float32), axis=0).astype(np.uint32))


# -- fused forms ------------------------------------------------------------------------------

def _relu(v):
    return np.where((v > 0) | np.isnan(v), v, 0).astype(v.dtype)


def _fused_want(kind, a, b, c, o):
    f32 = a.dtype.kind == "f"
    w = (lambda v: v.astype(np.float32)) if f32 else (lambda v: v.astype(np.int64))
    a, b, c, o0 = w(a), w(b), w(c), w(o)
    forms = {
        "add_relu": lambda: _relu(a + b) if f32 else np.maximum(a + b, 0),
        "sub_relu": lambda: _relu(a - b), "addc": lambda: (a + b) + c,
        "mul_add_dst": lambda: a * b + o0, "fused_mul_add": lambda: a * o0 + b,
        "fused_mul_add_relu": lambda: _relu(o0 * a + b),
        "axpy": lambda: a * np.float32(1.5) + o0, "xor": lambda: a ^ b,
        "add_relu_cast": lambda: _relu(a + b),
        "sub_relu_cast": lambda: np.maximum(a - b, 0), "mul_cast": lambda: a * b}
    return forms[kind]()


@pytest.mark.parametrize("name", sorted(K.FUSED_KERNELS))
def test_fused_forms(name):
    kernel = K.FUSED_KERNELS[name]
    kind = name[2:].rsplit("_", 1)[0]
    dts = [p.spec.dtype.np for p in kernel.params]
    r = rng(10)
    if dts[0].kind == "f":
        x, y, z = (r.standard_normal((16, 64)).astype(dts[0]) for _ in range(3))
    elif kind in ("shl", "shr"):
        x = r.integers(-3000 if dts[0].kind == "i" else 0, 3000, (16, 64)).astype(dts[0])
        y = r.integers(-2, 18, (16, 64)).astype(dts[0])        # counts outside 0..15 too
        z = x
    else:
        x, y, z = (r.integers(-1000, 1000, (16, 64)).astype(dts[0]) for _ in range(3))
    o = (r.standard_normal((16, 64)) * 3).astype(dts[3])
    got = run(kernel, [x, y, z, o.copy()])[3]
    if kind in ("shl", "shr"):
        bits = dts[0].itemsize * 8
        xv, s = x.astype(np.int64), y.astype(np.int64)
        want = np.zeros_like(xv)
        for idx in np.ndindex(xv.shape):
            if 0 <= s[idx] < bits:
                want[idx] = xv[idx] << s[idx] if kind == "shl" else xv[idx] >> s[idx]
            elif kind == "shr" and xv[idx] < 0:
                want[idx] = -1
        want = want.astype(dts[3])     # wraps into the dtype
    else:
        want = _fused_want(kind, x, y, z, o)
        want = want.astype(dts[3]) if dts[3].kind == "f" else \
            want.astype(np.int64).astype(dts[3])
    assert got.tobytes() == np.asarray(want).tobytes(), kind


# -- fillpad ----------------------------------------------------------------------------------

def test_fillpad_normal_inplace_expand():
    r = rng(11)
    x = r.standard_normal((8, 64)).astype(np.float32)
    i = r.integers(-100, 100, (8, 64)).astype(np.int16)
    y, j, e = run(K.fillpad_modes, [x, i, np.zeros((8, 64), np.float32),
                                    np.zeros((8, 64), np.int16),
                                    np.ones((16, 128), np.float32)], block_dim=1)[2:]
    want = np.full((8, 64), -np.inf, np.float32)
    want[:5, :40] = x[:5, :40]
    assert np.array_equal(y, want)
    wj = np.full((8, 64), np.iinfo(np.int16).max, np.int16)
    wj[:3, :16] = i[:3, :16]
    assert np.array_equal(j, wj)
    we = np.zeros((16, 128), np.float32)
    we[:5, :40] = x[:5, :40]
    assert np.array_equal(e, we)


def test_fillpad_needs_a_pad_value():
    with pytest.raises(PyptoError, match="needs a pad="):
        K.fillpad_no_pad[1](np.zeros((8, 64), np.float32))
