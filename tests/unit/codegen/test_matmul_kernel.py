"""The prelude's tmatmul kernel (pp_matmul in libpypto/codegen/c_prelude.h) called directly
through ctypes: every shape class its blocking meets (whole register blocks, row and column
tails, more than one packed k chunk, strided operands read in place), fp32/fp16/bf16
operands, accumulation into a c that already holds values, nothing written outside c's
m x n corner, and no workspace used past what codegen/c_plan.py plans for it."""
from __future__ import annotations

import ctypes
from types import SimpleNamespace as NS

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.codegen.c import prelude
from libpypto.codegen.c_plan import _workspace_floats
from libpypto.jit import call_kernel
from libpypto.runtime.compiler import compile_shared, find_cc

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler")

WRAPPER = """
void mm_test(float *c, int64_t ldc, const void *a, int64_t lda, int adt, int at, const void *b,
             int64_t ldb, int bdt, int bt, int64_t m, int64_t n, int64_t k, int init, float *W) {
    pp_matmul(c, ldc, a, lda, adt, at, b, ldb, bdt, bt, m, n, k, init, W);
}
"""
DT = {"f32": (np.float32, 0), "f16": (np.float16, 1), "bf16": (ml_dtypes.bfloat16, 2)}
GUARD = 64          # floats after the planned workspace that must stay untouched


@pytest.fixture(scope="module")
def mm():
    lib = ctypes.CDLL(compile_shared(prelude() + WRAPPER)[0])
    fn = lib.mm_test
    i64, p = ctypes.c_int64, ctypes.c_void_p
    ci = ctypes.c_int
    fn.argtypes = [p, i64, p, i64, ci, ci, p, i64, ci, ci, i64, i64, i64, ci, p]
    return fn


def run(mm, a, b, c, m, n, k, at=False, bt=False, init=False):
    """pp_matmul on the top-left m x k of a, k x n of b into c (arrays keep their strides;
    at / bt: the kernel is given the operand's transpose, stored contiguously, and reads it
    transposed); returns the workspace it was given (planned size + GUARD floats of NaN
    canaries)."""
    def spec(x, shape):
        return NS(type=NS(shape=shape, dtype=NS(name=str(x.dtype).replace("float32", "f32")
                                                 .replace("float16", "f16")
                                                 .replace("bfloat16", "bf16"))))
    planned = _workspace_floats(NS(operands=[None, spec(a, (m, k)), spec(b, (k, n))]))
    w = np.full(planned + GUARD, np.nan, np.float32)
    code = {np.dtype(v[0]): v[1] for v in DT.values()}
    sa = np.ascontiguousarray(a.T) if at else a
    sb = np.ascontiguousarray(b.T) if bt else b
    mm(c.ctypes.data, c.shape[1], sa.ctypes.data, sa.shape[1], code[a.dtype], int(at),
       sb.ctypes.data, sb.shape[1], code[b.dtype], int(bt), m, n, k, int(init), w.ctypes.data)
    return w[planned:]


SHAPES = [(1, 1, 1), (7, 33, 5), (8, 32, 256), (9, 31, 257), (17, 65, 600), (130, 100, 300),
          (6, 16, 3), (13, 48, 512), (150, 40, 20)]
TRANS = [(False, False, False), (False, False, True), (True, False, False),
         (False, True, True), (True, True, False)]


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("adt,bdt", [("f32", "f32"), ("bf16", "bf16"), ("f16", "f32"),
                                     ("f32", "bf16")])
@pytest.mark.parametrize("at,bt,init", TRANS)
def test_small_integers_come_out_exact(mm, m, n, k, adt, bdt, at, bt, init):
    # rule: c[:m, :n] += a[:m, :k] @ b[:k, :n] (= with init); with small integers every
    # partial sum is exact in fp32, so the result equals the integer product whatever the
    # blocking; the operands are read in place (as stored or transposed) with row strides
    # wider than their rows; what lies past the operands' m x k and k x n is NaN, which
    # reaches c if the kernel reads it; the rest of c and the workspace past its planned
    # size stay untouched
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.integers(-3, 4, (m + 3, k + 5)).astype(np.float32)
    b = rng.integers(-3, 4, (k + 2, n + 7)).astype(np.float32)
    a[m:, :] = a[:, k:] = np.nan
    b[k:, :] = b[:, n:] = np.nan
    a, b = a.astype(DT[adt][0]), b.astype(DT[bdt][0])
    c = rng.integers(-50, 50, (m + 4, n + 9)).astype(np.float32)
    c0 = c.copy()
    guard = run(mm, a, b, c, m, n, k, at, bt, init)
    want = c0.astype(np.int64)
    prod = a[:m, :k].astype(np.int64) @ b[:k, :n].astype(np.int64)
    want[:m, :n] = prod if init else want[:m, :n] + prod
    assert np.array_equal(c, want.astype(np.float32))
    assert np.isnan(guard).all()


def test_init_with_no_k_steps_zeroes_the_corner(mm):
    # rule: with init and k = 0 the m x n corner becomes 0, the rest of c stays
    a = np.ones((5, 4), np.float32)
    b = np.ones((4, 7), np.float32)
    c = np.full((6, 9), 3.0, np.float32)
    run(mm, a, b, c, 5, 7, 0, init=True)
    assert (c[:5, :7] == 0).all() and (c[5:] == 3).all() and (c[:, 7:] == 3).all()


@pytest.mark.parametrize("m,n,k", [(37, 70, 700), (64, 128, 128), (300, 40, 64)])
def test_random_fp32_matches_numpy(mm, m, n, k):
    # rule: fp32 accumulation in k order, one FMA per step: within fp32 rounding of float64
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    run(mm, a, b, c, m, n, k)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(c - ref)) <= 1e-5 * np.max(np.abs(ref)) * np.sqrt(k / 64)


@pytest.mark.parametrize("at,bt,init", TRANS)
def test_each_element_sums_in_k_order(mm, at, bt, init):
    # rule: the sum runs in k order whatever the blocking, the operands' layout and init: a
    # row whose terms cancel only in order (1e8, 1, -1e8, 1 ...) gives what a sequential
    # fp32 FMA loop from c's value (0 with init) gives, in every register block and tail
    k = 300
    a = np.zeros((9, k), np.float32)
    a[:, 0], a[:, 1], a[:, 2] = 1e8, 1.0, -1e8
    a[:, 3:] = 1.0
    b = np.ones((k, 33), np.float32)
    c = np.full((9, 33), 0.5, np.float32)
    run(mm, a, b, c, 9, 33, k, at, bt, init)
    acc = np.float32(0 if init else 0.5)
    for q in range(k):
        acc = np.float32(np.float64(acc) + np.float64(a[0, q]) * np.float64(b[q, 0]))
    assert (c == acc).all()


def test_a_tensor_mode_matmul_is_bit_identical_for_any_thread_count():
    # rule: the k order of every sum does not depend on the tasks' threads: fp16 operands,
    # row and column tails in the last tiles (M = 100, N = 72 over 64 x 64 C tiles), two
    # calls per tile (k steps of 160); one and two threads give the same bytes, within
    # fp32 rounding of numpy
    @pypto.jit
    def mm(a: pypto.Tensor[[pypto.DYNAMIC, 320], pypto.DT_FP16],
           b: pypto.Tensor[[320, 72], pypto.DT_FP16],
           c: pypto.Tensor[[pypto.DYNAMIC, 72], pypto.DT_FP32]):
        pypto.set_cube_tile_shapes([64, 64], [160, 320], [64, 64])
        c[:] = pypto.matmul(a, b, pypto.DT_FP32)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((100, 320)).astype(np.float16)
    b = rng.standard_normal((320, 72)).astype(np.float16)
    outs = []
    for threads in (1, 2):
        c = np.zeros((100, 72), np.float32)
        call_kernel(mm, (a, b, c), {}, threads=threads)
        outs.append(c)
    assert np.array_equal(outs[0], outs[1])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(outs[0] - ref)) <= 1e-5 * np.max(np.abs(ref))
