"""pl.simt (prolang/simt.py): SIMT thread blocks. Every kernel runs on the Pro runner and
its C, on 1 and 2 threads, and the four results must be the same bits and equal a numpy
reference computed here; the errors and the race checker's view of a launch."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.errors import CompileError, PyptoError
from libpypto.ir import serde, text
from libpypto.ir.simt_ops import gm_order_matters

from . import simt_kernels as K

RNG = np.random.default_rng(11)
I64 = 2 ** 63


def runs(k, block_dim, *args):
    """The outputs of k[block_dim](*args) on both executions and 1 and 2 threads (all the
    same bits), as the arrays after the first run."""
    outs = []
    try:
        for backend in ("numpy", "c"):
            for threads in (1, 2):
                k.backend, k.threads = backend, threads
                a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
                k[block_dim](*a)
                outs.append(a)
    finally:
        k.backend, k.threads = "numpy", None
    for other in outs[1:]:
        for x, y in zip(outs[0], other):
            if isinstance(x, np.ndarray):
                assert x.tobytes() == y.tobytes()
    return outs[0]


def wrap(v: int) -> int:
    return (v + I64) % (2 * I64) - I64


def test_thread_context_3d_and_grid():
    out = np.zeros((2, K.NT), np.int32)
    got, = runs(K.context, 2, out)
    want = np.zeros_like(out)
    for b in range(2):
        for t in range(K.NT):
            x, y, z = t % K.TX, t // K.TX % K.TY, t // (K.TX * K.TY)
            want[b, t] = (x + y * 4 + z * 8 + K.TX * 16 + K.TY * 128 + K.TZ * 256 + b * 512 +
                          2 * 16384 + 131072 + 262144 + 32 * 1000000)
    assert np.array_equal(got, want)


def test_arithmetic_of_ints_and_floats():
    n = K.N
    a = RNG.integers(-8, 8, n).astype(np.int32)
    x = RNG.standard_normal(n).astype(np.float32)
    x[5] = 0.0
    k, s = -5, 0.75
    o, f = np.zeros((16, n), np.int64), np.zeros((8, n), np.float32)
    o, f, *_ = runs(K.arith_kernel, 1, o, f, a, x, k, s)
    sf = np.float32(s)
    for t in range(n):
        v = int(a[t]) * 3 - 7
        xf = np.float32(x[t])
        sat = 0 if xf == 0 else I64 - 1 if xf > 0 else -I64       # x / 0.0: inf or NaN
        want = [v // k, v % k, wrap(v << 3) ^ (v >> 1), (v & 12) | 1, min(v, t) + max(v, 2),
                abs(v) + v, ~v, wrap(v * 1000003 * 1000000007 * 1000000009),
                (v < t) + (v <= 0) * 2 + (v > 3) * 4 + (v >= -2) * 8 + (v == 1) * 16 +
                (v != 5) * 32, int(np.trunc(np.float32(xf * np.float32(1000.0)))),
                int(v > 0 and t % 3 == 0), int(v > 0 or t % 3 == 0), int(not v > 0),
                v if v > t else t * 2, k // 2 + t, sat]
        assert list(o[:, t]) == want, t
        wf = [xf * sf + np.float32(v), xf / np.float32(t + 1),
              max(xf, np.float32(0.25)) - min(xf, np.float32(-0.25)), -xf + abs(xf),
              xf * xf - sf / np.float32(3.0), np.float32(v) / np.float32(4),
              np.float32(1.5) * np.float32(xf < sf), np.float32(v) * np.float32(0.5)]
        assert np.array_equal(f[:, t], np.array(wf, np.float32)), t


def test_int64_edges_wrap_as_documented():
    lo, hi = -I64, I64 - 1
    a = np.array([lo, lo, hi, -7, 7, -7, 7, 0, lo, hi, 5, -1] * 6)[:K.N].astype(np.int64)
    b = np.array([-1, 1, -1, 2, -2, -2, 2, 3, 63, 64, 70, -3] * 6)[:K.N].astype(np.int64)
    o, _, _ = runs(K.edges_kernel, 1, np.zeros((7, K.N), np.int64), a, b)
    for t in range(K.N):
        x, y = int(a[t]), int(b[t])
        s = y & 63
        want = [wrap(x // y), 0 if y == -1 else x % y, wrap(x << s), x >> s, wrap(x * y),
                wrap(-x), wrap(wrap(abs(x)) + wrap(x - y))]
        assert [int(v) for v in o[:, t]] == want, (x, y)


def test_divergent_branches_loops_and_guarded_loads():
    x = RNG.integers(-8, 8, 40).astype(np.int32)        # threads 40..63 must not read x
    o = np.full((K.N, 8), -99, np.int32)
    got, _ = runs(K.diverge_kernel, 1, o, x)
    want = np.full_like(o, -99)
    for t in range(K.N):
        want[t, 0] = 10 if t % 3 == 0 else 20 + t if t % 3 == 1 else -1
        for k in range(t % 5):
            want[t, 1 + k] = k * t
        want[t, 6] = int(t < 40 and x[t] > 0)
        want[t, 7] = t % 3
    assert np.array_equal(got, want)


def _ub_reference(u: np.ndarray) -> tuple:
    u = u.astype(np.int64).copy()
    old = np.zeros((9, K.N), np.int64)

    def step(row, at, fn):
        for t in range(K.N):
            old[row, t] = u[at(t)]
            u[at(t)] = np.int64(np.int32(np.int64(fn(t, int(u[at(t)]))) & 0xFFFFFFFF))

    step(0, lambda t: t % 4, lambda t, o: o + t)
    step(1, lambda t: 4, lambda t, o: o - t * 3)
    step(2, lambda t: 5, lambda t, o: max(o, t * 37 % 101))
    step(3, lambda t: 6, lambda t, o: min(o, t * 53 % 97))
    step(4, lambda t: 7, lambda t, o: t)
    step(5, lambda t: 8, lambda t, o: t if o == t - 1 else o)
    step(6, lambda t: 9, lambda t, o: o & ~(1 << (t % 31)))
    step(7, lambda t: 10, lambda t, o: o | (1 << (t % 31)))
    step(8, lambda t: 11, lambda t, o: o ^ (t * 7919))
    return u.astype(np.int32), old.astype(np.int32)


def test_every_atomic_on_ub_returns_the_old_value_in_thread_order():
    u0 = RNG.integers(-8, 8, (1, 16)).astype(np.int32)
    u0[0, 8] = -1                      # the cas chain: thread t swaps t - 1 for t
    _, uo, oo = runs(K.ub_atomic_kernel, 1, u0, np.zeros_like(u0),
                     np.zeros((9, K.N), np.int32))
    want_u, want_old = _ub_reference(u0[0])
    assert np.array_equal(uo[0], want_u)
    assert np.array_equal(oo, want_old)
    assert uo[0, 8] == K.N - 1         # every cas succeeded, in thread order


def test_gm_integer_atomics_across_blocks_are_exact_and_parallel():
    x = RNG.integers(-8, 8, 1000).astype(np.int32)
    c = RNG.integers(-8, 8, (1, 8)).astype(np.int32)
    m = np.array([-5], np.int32)
    got, got_m, _ = runs(K.gm_count_kernel, 5, c, m, x)
    assert np.array_equal(got, c + np.bincount(x % 8, minlength=8).astype(np.int32))
    assert got_m[0] == (x.astype(np.int64) * 1000 + np.arange(1000)).max()
    op = _launch_op(K.gm_count_kernel)
    assert not gm_order_matters(op) and "serial" not in op.attrs    # blocks in parallel


def test_gm_float_atomics_and_used_old_values_run_the_blocks_in_order():
    n = 300
    x = RNG.standard_normal(n).astype(np.float32)
    acc = RNG.standard_normal((1, 4)).astype(np.float32)
    ctr = np.array([7], np.int32)
    got_acc, slot, _, got_ctr = runs(K.gm_float_kernel, 6, acc, np.zeros(n, np.int32), x, ctr)
    want = acc[0].copy()
    for g in range(n):                 # blocks in order, each block's threads in order
        want[g % 4] = np.float32(want[g % 4] + x[g])
    assert np.array_equal(got_acc[0], want)
    assert np.array_equal(slot, 7 + np.arange(n)) and got_ctr[0] == 7 + n
    assert _launch_op(K.gm_float_kernel).attrs["serial"] is True


def test_int64_scalars_are_exact():
    k = 2 ** 60 + 1                    # not a double
    o, = runs(K.big_scalar_kernel, 1, np.zeros(K.N, np.int64), k)[:1]
    assert [int(v) for v in o] == [k + t * 3 for t in range(K.N)]


def test_mixed_kernel_both_vector_cores_launch():
    a = RNG.standard_normal((K.M2, K.K2)).astype(np.float16)
    b = RNG.standard_normal((K.K2, K.N2)).astype(np.float16)
    bd = 2
    ws = np.zeros((bd * K.TM2, K.N2), np.float32)
    ids = np.full((2 * bd, 2), -1, np.int32)
    _, _, _, out, ids = runs(K.mixed_kernel, bd, a, b, ws, np.zeros((K.M2, K.N2), np.float32),
                             ids)
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0)
    assert np.allclose(out, want, rtol=1e-5, atol=1e-4)
    assert (out >= 0).all()
    assert np.array_equal(ids, [[v, 2 * bd] for v in range(2 * bd)])    # 2c + v, 2 block_dim


def test_2d_launch_and_callees():
    x = RNG.standard_normal((1, K.N)).astype(np.float32)
    _, out, _, _ = runs(K.callee_kernel, 1, x, np.zeros_like(x), 1.5, -0.25)
    assert np.array_equal(out, x * np.float32(1.5) + np.float32(-0.25))


def test_tile_runtime_valid_shape_and_fp16_elements():
    x = RNG.standard_normal((6, 37)).astype(np.float16)
    _, out, _ = runs(K.valid_kernel, 1, x, np.zeros_like(x), 0.75)
    assert np.array_equal(out, (x.astype(np.float32) + np.float32(0.75)).astype(np.float16))


def test_auto_mutex_orders_a_launch_on_a_group_slot():
    x = RNG.standard_normal((1, K.N)).astype(np.float32)
    _, out, _ = runs(K.auto_mutex_kernel, 1, x, np.zeros_like(x), 1.5)
    assert np.array_equal(out, x + np.float32(1.5))
    ops = [op.name for p in K.auto_mutex_kernel.last_doc.body if p.name == "program"
           for top in p.regions[0] for op in top.walk()]
    i = ops.index("simt_launch")
    assert ops[i - 1] == "mutex_lock" and ops[i + 1] == "mutex_unlock"


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_runtime_index_and_division_errors(backend):
    x = RNG.standard_normal(10).astype(np.float32)
    idx = np.arange(K.N, dtype=np.int32) % 10
    o = np.zeros(K.N, np.float32)
    K.gather_kernel.backend = backend
    try:
        K.gather_kernel(o, x, idx, 1)
        assert np.array_equal(o, x[idx])
        idx[17] = 10                        # one past the end
        with pytest.raises(PyptoError, match="outside its (shape|tensor)") as e:
            K.gather_kernel(o, x, idx, 1)
        assert "simt_kernels.py" in str(e.value.loc)
        if backend == "numpy":
            assert "thread 17 of block 0: tensor x[10]" in str(e.value)
        with pytest.raises(PyptoError, match="division by zero"):
            K.gather_kernel(o, x, idx, 0)
    finally:
        K.gather_kernel.backend = "numpy"


def test_the_checker_sees_plain_and_atomic_accesses_across_blocks():
    o = np.zeros((1, 4), np.int32)
    with pytest.raises(PyptoError, match="race .*across clusters"):
        K.race_kernel[3](o.copy(), 0)              # plain stores from every block
    with pytest.raises(PyptoError, match="race .*across clusters"):
        K.race_kernel[3](o.copy(), 1)              # atomics and a plain read of them
    with pytest.raises(PyptoError, match="race .*across clusters"):
        K.race_kernel[3](o.copy(), 3)              # a plain store before block 0's atomic
    got, = runs(K.race_kernel, 3, o, 2)[:1]        # atomics only: they commute
    assert got[0, 1] == 3


# -- the language's errors ---------------------------------------------------------------------

def _kernel(body_src: str, tmp_path, name="k"):
    src = ("import libpypto.pro as pl\n\n"
           "@pl.simt.function(max_threads=32)\n"
           "def f(o: pl.Tensor[[32], pl.DT_INT32]):\n"
           "    t = pl.simt.linear_thread_idx()\n"
           "    o[t] = t\n\n" + body_src)
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"simt_err_{abs(hash(body_src))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("body,match", [
    ("@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        t = pl.simt.thread_idx()\n", "only be used inside a SIMT function"),
    ("@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(f, threads=64, args=(o,))\n", "threads 64 exceed its max_threads 32"),
    ("@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(f, threads=(8, 8, 64), args=(o,))\n", "exceed"),
    ("@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(f, threads=32, args=o)\n", "args must be a tuple"),
    ("@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(f, threads=32, args=(o, o))\n", "takes 1 arguments"),
    ("@pl.simt.function\ndef g(o):\n    o[0] = 1\n\n"
     "@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(g, threads=32, args=(o,))\n", "not a launchable"),
    ("@pl.simt.function(max_threads=32)\ndef g(o):\n    o[0] = 1.5\n\n"
     "@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(g, threads=32, args=(o,))\n", "float value into the i32"),
    ("@pl.simt.function(max_threads=32)\ndef g(o):\n    o[0, 1] = 1\n\n"
     "@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(g, threads=32, args=(o,))\n", "has 1 dims"),
    ("@pl.simt.function(max_threads=32)\ndef g(o):\n    pl.simt.launch(f, threads=32, "
     "args=(o,))\n\n@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n"
     "    with pl.section_vector():\n        pl.simt.launch(g, threads=32, args=(o,))\n",
     "nested pl.simt.launch"),
    ("@pl.simt.function\ndef h(o):\n    h(o)\n\n@pl.simt.function(max_threads=32)\n"
     "def g(o):\n    h(o)\n\n@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n"
     "    with pl.section_vector():\n        pl.simt.launch(g, threads=32, args=(o,))\n",
     "calls itself"),
    ("@pl.simt.function(max_threads=32)\ndef g(o):\n    t = pl.simt.linear_thread_idx()\n"
     "    if t > 3:\n        return\n    o[t] = 1\n\n"
     "@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(g, threads=32, args=(o,))\n", "returns a value only|return"),
    ("@pl.simt.function(max_threads=32)\ndef g(o):\n    t = pl.simt.linear_thread_idx()\n"
     "    s = 0\n    for i in pl.range(t):\n        s = s + i\n    o[t] = s\n\n"
     "@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n    with pl.section_vector():\n"
     "        pl.simt.launch(g, threads=32, args=(o,))\n", "updated from its own value"),
    ("@pl.jit\ndef k(o: pl.Tensor[[32], pl.DT_INT32]):\n"
     "    t = pl.make_tile(pl.TileType(shape=[16, 16], dtype=pl.DT_FP16,\n"
     "        target_memory=pl.MemorySpace.Mat), addr=0)\n    with pl.section_cube():\n"
     "        pl.simt.launch(f, threads=32, args=(o,))\n", "section_vector"),
])
def test_language_errors(tmp_path, body, match):
    mod = _kernel(body, tmp_path)
    with pytest.raises(CompileError, match=match):
        mod.k(np.zeros(32, np.int32))


def test_simt_calls_outside_a_kernel_are_errors():
    with pytest.raises(CompileError, match="inside a SIMT function"):
        pl.simt.linear_thread_idx()
    with pytest.raises(CompileError, match="max_threads"):
        pl.simt.function(max_threads=4096)(lambda: None)


# -- the IR: text, serde, the verifier ---------------------------------------------------------

def _launch_op(k):
    doc = k.last_doc
    for p in doc.body:
        if p.name == "program":
            for top in p.regions[0]:
                for op in top.walk():
                    if op.name == "simt_launch":
                        return op
    raise AssertionError("no simt_launch")


def test_serde_round_trip_and_the_verifier():
    from libpypto.ir.defs import check_op
    K.ub_atomic_kernel(np.zeros((1, 16), np.int32), np.zeros((1, 16), np.int32),
                       np.zeros((9, K.N), np.int32))
    doc = K.ub_atomic_kernel.last_doc
    again = serde.loads(serde.dumps(doc))
    assert text.print_doc(again) == text.print_doc(doc)
    full = text.print_doc(doc, full=True)              # the text form parses back too
    assert text.print_doc(text.parse_doc(full), full=True) == full
    op = _launch_op(K.ub_atomic_kernel)
    assert "simt_launch" in text.print_doc(doc) and '"atom"' in text.print_doc(doc)
    errs: list = []
    assert check_op(op, "tile", errs.append) and not errs
    for bad in (["bin", 0, "pow", 1, 2], ["ld", 0, 9, [1, 2]], ["const", 10 ** 6, 1],
                ["atom", 0, "xor", 0, [1, 1], 2, -1, 5], ["if", 0, "x", []], ["warp"]):
        saved = op.attrs["body"]
        op.attrs["body"] = saved + [bad]
        errs = []
        assert not check_op(op, "tile", errs.append) and "body" in errs[0], bad
        op.attrs["body"] = saved
