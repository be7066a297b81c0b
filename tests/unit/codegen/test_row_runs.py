"""Row runs in the C (libpypto/codegen/c_rows.py): rows read in place, passes over a run-time
number of valid columns."""
# no `from __future__ import annotations`: the kernels' annotations use local names
import ctypes

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.codegen.c import prelude
from libpypto.jit import call_kernel
from libpypto.runtime import code_op
from libpypto.runtime.compiler import compile_shared

def test_reduction_over_a_run_time_width_steps_its_valid_chunks_untested():
    """A row reduction whose valid columns are known only at run time (a named H bounded by
    its tile) first steps the whole chunks of valid columns with no test per element (which
    kept gcc from vectorising the pass), then the rest with it: the same elements in the
    same lanes and order. A named H gives the static result bit for bit where the static
    tile needs no scalar tail (whose libm exp may differ from the vector one in the last
    bit: a width of 64 here), and within fp32 rounding of numpy for any width."""
    def softmax_of(h):
        @pypto.jit
        def softmax(x: pypto.Tensor[["T", h], pypto.DT_FP32],
                    y: pypto.Tensor[["T", h], pypto.DT_FP32]):
            pypto.set_vec_tile_shapes(4, 64)
            e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
            y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
        return softmax
    rng = np.random.default_rng(4)
    named = softmax_of("H")
    for width in (1, 37, 64):
        x = rng.standard_normal((6, width), dtype=np.float32)
        y = np.zeros_like(x)
        call_kernel(named, (x, y), {}, threads=1)
        e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
        assert np.allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-6, atol=1e-7)
        if width == 64:
            ys = np.zeros_like(x)
            call_kernel(softmax_of(width), (x, ys), {}, threads=1)
            assert np.array_equal(y.view(np.uint32), ys.view(np.uint32))
    src = code_op(named._cache[next(iter(named._cache))].doc).attrs["source"]
    run = src[src.index("one pass over the row"):]
    full = run.index("/ 16 * 16;")
    first, second = run.index("for (;", full), run.index("for (;", run.index("for (;", full) + 1)
    assert " < n" not in run[first:second] and " < n" in run[second:]


def test_a_loaded_row_is_read_in_place_unless_it_has_a_tail():
    """A row tile written only by its row load reads a fully valid row where it lies in GM;
    a row past the valid rows or with fewer valid columns goes to the row on the stack with
    its tail zeroed, as the copy made it: the same results as numpy either way."""
    @pypto.jit
    def rms(x: pypto.Tensor[["T", "H"], pypto.DT_FP32], g: pypto.Tensor[["H"], pypto.DT_FP32],
            y: pypto.Tensor[["T", "H"], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 64)
        y[:] = pypto.rms_norm(x, g)
    rng = np.random.default_rng(5)
    for rows, width in ((10, 64), (7, 40)):
        x = rng.standard_normal((rows, width), dtype=np.float32)
        g = rng.standard_normal(width, dtype=np.float32)
        y = np.zeros_like(x)
        call_kernel(rms, (x, g, y), {}, threads=2)
        x64 = x.astype(np.float64)
        want = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * g
        assert np.allclose(y, want, rtol=1e-5, atol=1e-6)
    src = code_op(rms._cache[next(iter(rms._cache))].doc).attrs["source"]
    assert "with a tail */" in src and " == 64) t" in src


def test_tiles_of_three_dims_run_row_by_row_and_share_broadcast_rows():
    """A chain over (2, 4, C) tiles is one row run over its 8 rows (the points of the two
    leading dims); a (1, 4, C) operand broadcast along the first is loaded once and each
    row reads its row of it. Bit for bit the result of the same chain on the flattened
    (rows, C) tensors, and within fp32 rounding of numpy."""
    @pypto.jit
    def sm3(x: pypto.Tensor[[4, 8, 256], pypto.DT_FP32],
            g: pypto.Tensor[[1, 8, 256], pypto.DT_FP32],
            y: pypto.Tensor[[4, 8, 256], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(2, 4, 256)
        z = x * g
        e = pypto.exp(z - pypto.amax(z, dim=-1, keepdim=True))
        y[:] = e / pypto.sum(e, dim=-1, keepdim=True)

    @pypto.jit
    def sm2(x: pypto.Tensor[[32, 256], pypto.DT_FP32], g: pypto.Tensor[[32, 256], pypto.DT_FP32],
            y: pypto.Tensor[[32, 256], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 256)
        z = x * g
        e = pypto.exp(z - pypto.amax(z, dim=-1, keepdim=True))
        y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 8, 256), dtype=np.float32)
    g = rng.standard_normal((1, 8, 256), dtype=np.float32)
    y = np.zeros_like(x)
    call_kernel(sm3, (x, g, y), {}, threads=2)
    src = code_op(sm3._cache[next(iter(sm3._cache))].doc).attrs["source"]
    assert "tstore: one row at a time */" in src and "of ub.f32[2, 4, 256] */" in src
    y2 = np.zeros((32, 256), np.float32)
    g2 = np.ascontiguousarray(np.broadcast_to(g, x.shape).reshape(32, 256))
    call_kernel(sm2, (x.reshape(32, 256), g2, y2), {}, threads=1)
    assert np.array_equal(y.reshape(32, 256).view(np.uint32), y2.view(np.uint32))
    z = x.astype(np.float64) * g
    e = np.exp(z - z.max(-1, keepdims=True))
    assert np.allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_stores_into_disjoint_halves_of_a_row_share_a_run():
    """Two stores into one tensor whose column ranges cannot meet (y[:, :128], y[:, 128:])
    stay in one row run; fp16 results are stored as the bits they were rounded to: the
    same bytes as numpy rounding each fp32 result to fp16."""
    @pypto.jit
    def halves(x: pypto.Tensor[[16, 256], pypto.DT_FP16],
               y: pypto.Tensor[[16, 256], pypto.DT_FP16]):
        pypto.set_vec_tile_shapes(4, 128)
        y[:, :128] = x[:, :128] * x[:, 128:]
        y[:, 128:] = x[:, 128:] + x[:, :128]
    x = np.random.default_rng(7).standard_normal((16, 256)).astype(np.float16)
    y = np.zeros_like(x)
    call_kernel(halves, (x, y), {}, threads=2)
    src = code_op(halves._cache[next(iter(halves._cache))].doc).attrs["source"]
    assert "tload tload tmul tstore tadd tstore: one row at a time */" in src
    a, b = x[:, :128].astype(np.float32), x[:, 128:].astype(np.float32)
    want = np.concatenate([(a * b).astype(np.float16), (b + a).astype(np.float16)], axis=1)
    assert np.array_equal(y.view(np.uint16), want.view(np.uint16))


def test_short_rows_go_through_each_unit_in_groups_with_the_same_bytes(monkeypatch):
    """Runs of short rows take their rows in groups (c_rows.row_group): each unit on every
    row of a group, then the next unit, so the core overlaps the rows' dependent steps. The
    result is the row-by-row one bit for bit: bf16 rows read in place or (past T's end, a
    tail) copied, per-row scalars, a broadcast operand, a valid count short of the tile."""
    import ml_dtypes

    from libpypto.codegen import c_rows

    def layernorm():
        @pypto.jit
        def ln(x: pypto.Tensor[["T", 128], pypto.DT_BF16], g: pypto.Tensor[[128], pypto.DT_FP32],
               y: pypto.Tensor[["T", 128], pypto.DT_BF16]):
            pypto.set_vec_tile_shapes(16, 128)
            xf = pypto.cast(x, pypto.DT_FP32)
            m = pypto.sum(xf, dim=-1, keepdim=True) / 128.0
            d = xf - m
            v = pypto.sum(d * d, dim=-1, keepdim=True) / 128.0
            y[:] = pypto.cast(d * pypto.rsqrt(v + 1e-6) * g, pypto.DT_BF16)
        return ln

    rng = np.random.default_rng(8)
    x = rng.standard_normal((45, 128)).astype(ml_dtypes.bfloat16)     # 45: the last tile a tail
    g = rng.standard_normal(128).astype(np.float32)
    out = {}
    full = c_rows.GROUP_MAX
    for cap in (full, 1):
        monkeypatch.setattr(c_rows, "GROUP_MAX", cap)
        k = layernorm()
        y = np.zeros_like(x)
        call_kernel(k, (x, g, y), {}, threads=2)
        out[cap] = y.view(np.uint16).copy()
        src = code_op(k._cache[next(iter(k._cache))].doc).attrs["source"]
        assert ("8 rows through each unit in turn" in src) == (cap > 1)
    assert np.array_equal(out[1], out[full])
    xf = x.astype(np.float64)
    d = xf - xf.mean(-1, keepdims=True)
    want = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-6) * g
    assert np.allclose(out[1].view(ml_dtypes.bfloat16).astype(np.float64), want,
                       rtol=1e-2, atol=1e-2)


def test_a_group_is_the_largest_divisor_of_the_rows_whose_stack_rows_fit():
    from libpypto.codegen.c_plan import ROW_STACK, RowRun
    from libpypto.codegen.c_rows import row_group
    from libpypto.ir.types import F32, TileType

    class V:
        def __init__(self, c):
            self.type = TileType("ub", F32, (16, c))

    class Reduce:
        name = "treduce"

    def group(rows, *cols, body=(Reduce(), Reduce()), lead=(16,)):
        vs = [V(c) for c in cols]
        return row_group(RowRun(span=[], rows=rows, hoisted=[], local=set(vs), tiles=vs,
                                body=list(body), lead=lead), ROW_STACK)

    assert group(16, 128, 1) == 8           # GROUP_MAX
    assert group(12, 128) == 6              # a divisor of the rows
    assert group(7, 256) == 7
    assert group(16, 256) == 8              # GROUP_BYTES: 1 KiB
    assert group(16, 257) == 1              # longer rows: one at a time
    assert group(1, 128) == 1
    assert group(16, 128, body=(Reduce(),)) == 1     # one reduction: too short a chain
    assert group(16, 128, lead=(2, 8)) == 1          # two leading dims


def _lane_tree_sum(row: np.ndarray) -> np.float32:
    """The C's float row sum, emulated in float32: element j into lane j % 16 in order, then
    lane k += lane k + 8, + 4, + 2, + 1."""
    lanes = np.zeros(16, np.float32)
    for j, x in enumerate(row.astype(np.float32)):
        lanes[j % 16] = np.float32(lanes[j % 16] + x)
    return _tree16(lanes)


def test_a_row_sum_is_the_lane_tree_bit_for_bit():
    """The 16 lanes of a float row sum meet in the fixed tree; pp_sum16 does it with vector
    adds in the same order: each row's sum is the float32 emulation's, bit for bit, with
    infinities, NaNs, signed zeros and subnormals in the rows; the C calls pp_sum16."""
    @pypto.jit
    def rowsum(x: pypto.Tensor[[64, 100], pypto.DT_FP32],
               y: pypto.Tensor[[64, 1], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 100)
        y[:] = pypto.sum(x, dim=-1, keepdim=True)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 100)).astype(np.float32)       # partials of one size: any
    x[0] *= np.float32(10.0) ** rng.integers(-40, 38, 100)       # other order rounds apart
    x[1, 3], x[2, 50], x[3, :] = np.inf, np.nan, -0.0
    x[4, 7], x[4, 9] = np.inf, -np.inf
    x[5, :] = np.float32(1e-45)
    y = np.zeros((64, 1), np.float32)
    call_kernel(rowsum, (x, y), {}, threads=1)
    want = np.array([[_lane_tree_sum(r)] for r in x], np.float32)
    assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
    src = code_op(rowsum._cache[next(iter(rowsum._cache))].doc).attrs["source"]
    assert "pp_sum16(" in src


@pytest.mark.needs_cc
def test_both_forms_of_the_lane_tree_give_its_bits():
    """pp_sum16's vector form (gcc 12 on, clang) and its loop form (older compilers,
    PP_SUM16_LOOP) are the same tree: both give the float32 emulation's bits for lanes of
    every magnitude, with infinities, NaNs and signed zeros."""
    wrapper = "\nfloat pp_test_sum16(const float *l) { return pp_sum16(l); }\n"
    rng = np.random.default_rng(11)
    lanes = rng.standard_normal((200, 16)).astype(np.float32)
    lanes *= np.float32(10.0) ** rng.integers(-40, 38, lanes.shape)
    lanes[0, 3], lanes[1, 5], lanes[2, :] = np.inf, np.nan, -0.0
    lanes[3, 0], lanes[3, 15] = np.inf, -np.inf
    want = np.array([_tree16(r) for r in lanes], np.float32)
    for define in ("", "#define PP_SUM16_LOOP\n"):
        lib = ctypes.CDLL(compile_shared(define + prelude() + wrapper)[0])
        f = lib.pp_test_sum16
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_void_p]
        got = np.array([f(np.ascontiguousarray(r).ctypes.data) for r in lanes], np.float32)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), define


def _tree16(lanes: np.ndarray) -> np.float32:
    """lane k += lane k + 8, + 4, + 2, + 1 in float32; returns lane 0."""
    lanes = lanes.copy()
    for w in (8, 4, 2, 1):
        lanes[:w] = (lanes[:w] + lanes[w:2 * w]).astype(np.float32)
    return lanes[0]


def test_16_bit_rows_are_widened_a_chunk_at_a_time_with_the_same_values():
    """A row pass reading bf16 or fp16 rows widens each chunk of 16 columns first
    (pp_widen16), in a reduction's pass, a plain pass and a pass ending in a store: the
    sums are the float32 lane tree's bits and the elementwise results numpy's, with
    infinities, NaNs, signed zeros and subnormals of the 16-bit type in the rows."""
    for dt, npdt in ((pypto.DT_BF16, ml_dtypes.bfloat16), (pypto.DT_FP16, np.float16)):
        @pypto.jit
        def widen(x: pypto.Tensor[[64, 100], dt], s: pypto.Tensor[[64, 1], pypto.DT_FP32],
                  y: pypto.Tensor[[64, 100], pypto.DT_FP32]):
            pypto.set_vec_tile_shapes(8, 100)
            xf = pypto.cast(x, pypto.DT_FP32)
            s[:] = pypto.sum(xf, dim=-1, keepdim=True)
            y[:] = xf * 2.0 + 1.0
        rng = np.random.default_rng(5)
        x = rng.standard_normal((64, 100)).astype(npdt)
        x[0, 3], x[1, 50], x[2, :], x[3, 7] = np.inf, np.nan, -0.0, -np.inf
        x[4, :] = np.array(np.finfo(npdt).smallest_subnormal, npdt)
        s, y = np.zeros((64, 1), np.float32), np.zeros((64, 100), np.float32)
        call_kernel(widen, (x, s, y), {}, threads=1)
        xf = x.astype(np.float32)
        want = np.array([[_lane_tree_sum(r)] for r in xf], np.float32)
        assert np.array_equal(s.view(np.uint32), want.view(np.uint32)), dt
        np.testing.assert_array_equal(y, xf * np.float32(2) + np.float32(1))
        src = code_op(widen._cache[next(iter(widen._cache))].doc).attrs["source"]
        assert "pp_widen16(" in src


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """pp_f2bf in numpy: round to nearest even; a NaN keeps its top bits, made quiet."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rne = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(nan, (u >> 16) | 0x40, rne).astype(np.uint16)


def _same_16_bit(got: np.ndarray, want: np.ndarray, dt: str) -> bool:
    """Bit for bit, except that an fp16 NaN only has to be a NaN of the same sign."""
    if dt == "bf16":
        return np.array_equal(got, want)
    nan = np.isnan(want.view(np.float16))
    return (np.array_equal(got[~nan], want[~nan]) and np.isnan(got[nan].view(np.float16)).all()
            and np.array_equal(got[nan] >> 15, want[nan] >> 15))


def _f16_bits(x: np.ndarray) -> np.ndarray:
    """IEEE round-to-nearest-even fp16 bits (big floats become infinities, as they should)."""
    with np.errstate(over="ignore"):
        return x.astype(np.float16).view(np.uint16)


def _narrow_inputs(rng) -> np.ndarray:
    """Pieces of 32 floats: random bit patterns (every class, a subnormal in some pieces),
    then normals of every magnitude with infinities, NaNs and zeros but no subnormal (the
    whole-vector path), then ties of the bf16 rounding, then normals with one subnormal."""
    bits = rng.integers(0, 2 ** 32, 64 * 32, dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = (rng.standard_normal(64 * 32) * 10.0 ** rng.integers(-35, 38, 64 * 32))
    normal = normal.astype(np.float32)
    normal[::37], normal[5::41], normal[9::43] = np.inf, np.nan, -0.0
    normal[11::47] = -np.inf
    ties = (rng.integers(0, 2 ** 15, 32 * 32, dtype=np.uint64) << 16 | 0x8000)
    ties = ties.astype(np.uint32).view(np.float32)
    sub = rng.standard_normal(32 * 32).astype(np.float32)
    sub[::32] = np.float32(1e-40) * rng.standard_normal(32).astype(np.float32)
    return np.concatenate([bits, normal, ties, sub])


@pytest.mark.needs_cc
def test_narrow32_gives_the_bits_of_the_scalar_roundings():
    """pp_narrow32 (the CPU's own conversions where it has them, the loop where not or where
    a piece holds an fp32 subnormal, which AVX512_BF16 would flush) gives pp_f2bf's bits and
    IEEE round-to-nearest-even fp16, for every class of float."""
    wrapper = ("\nvoid pp_test_narrow(uint16_t *d, const float *s, int dt, int64_t n) {\n"
               "    for (int64_t i = 0; i + 32 <= n; i += 32) pp_narrow32(d + i, s + i, dt);\n}\n")
    lib = ctypes.CDLL(compile_shared(prelude() + wrapper)[0])
    f = lib.pp_test_narrow
    f.restype, f.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    x = _narrow_inputs(np.random.default_rng(12))
    for dt, code, want in (("bf16", 2, _bf16_bits(x)),
                           ("f16", 1, _f16_bits(x))):
        got = np.zeros(x.size, np.uint16)
        f(got.ctypes.data, x.ctypes.data, code, x.size)
        assert _same_16_bit(got, want, dt), dt


def test_16_bit_rows_are_stored_a_piece_at_a_time_with_the_same_bits():
    """A row pass that stores bf16 or fp16 rounds each 64-byte piece in whole vectors
    (pp_narrow32) and the tail element by element: the bits of the scalar rounding, with
    fp32 subnormals, ties, infinities and NaNs in the rows."""
    for dt, name in ((pypto.DT_BF16, "bf16"), (pypto.DT_FP16, "f16")):
        @pypto.jit
        def narrow(x: pypto.Tensor[[48, 100], pypto.DT_FP32],
                   y: pypto.Tensor[[48, 100], dt]):
            pypto.set_vec_tile_shapes(8, 100)
            y[:] = pypto.cast(x * 1.0, dt)
        x = _narrow_inputs(np.random.default_rng(13))[:4800].reshape(48, 100)
        y = np.zeros((48, 100), np.uint16).view(np.float16 if name == "f16"
                                                  else ml_dtypes.bfloat16)
        call_kernel(narrow, (x, y), {}, threads=1)
        want = _bf16_bits(x) if name == "bf16" else _f16_bits(x)
        assert _same_16_bit(y.view(np.uint16), want, name), name
        src = code_op(narrow._cache[next(iter(narrow._cache))].doc).attrs["source"]
        assert "pp_narrow32(" in src
