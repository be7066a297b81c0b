"""Pro mode core: @pl.jit, launches, parameters, block index, tiles, movement, vector ops,
runtime loops and branches, valid-shape tails, the compile cache, thread-count invariance."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto.pro as pl
from libpypto.errors import CompileError, UsageError

from . import kernels as K

RNG = np.random.default_rng(7)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def test_language_alias_is_the_same_module():
    import libpypto.pro.language as pl2
    assert pl2 is pl
    assert pl2.jit is pl.jit and pl.Tensor is pl2.Tensor


@pytest.mark.parametrize("n,block_dim", [(64, 4), (37, 3), (16, 1), (100, 9), (5, 2)])
def test_vadd_bit_exact_with_tails(n, block_dim):
    x, y = rand(n, 256), rand(n, 256)
    big = np.full((n + 3, 256), 7.0, np.float32)
    z = big[:n]                       # rows past the tensor's end must stay untouched
    K.vadd[block_dim](x, y, z)
    assert np.array_equal(z, x + y)
    assert (big[n:] == 7.0).all()


def test_dynamic_dims_never_recompile():
    before = K.vadd.compiles
    for n in (48, 17, 3):
        x, y = rand(n, 256), rand(n, 256)
        z = np.zeros_like(x)
        K.vadd[2](x, y, z)
        assert np.array_equal(z, x + y)
    assert K.vadd.compiles - before <= 1


def test_launch_forms():
    x, y = rand(32, 256), rand(32, 256)
    for launch in (K.vadd, K.vadd[3], K.vadd[None, 3], K.vadd[object(), 2]):
        z = np.zeros_like(x)
        launch(x, y, z)
        assert np.array_equal(z, x + y)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_block_dim_must_be_positive(bad):
    x = rand(16, 256)
    with pytest.raises(UsageError, match="block_dim"):
        K.vadd[bad](x, x, np.zeros_like(x))


def test_launch_argument_errors():
    x = rand(16, 256)
    with pytest.raises(UsageError, match="takes 3 arguments"):
        K.vadd[1](x, x)
    with pytest.raises(UsageError, match="dtype float64"):
        K.vadd[1](x.astype(np.float64), x, x)
    with pytest.raises(UsageError, match="dim 1 is 128"):
        K.vadd[1](rand(16, 128), x, x)
    with pytest.raises(UsageError, match=r"\[stream, block_dim"):
        K.vadd[None, 1, None, None]


def test_block_index_and_counts():
    out = np.full((5, 8), -1, np.int32)
    K.blockid[5](out)
    want = np.array([b * 1000 + 50 + 100 for b in range(5)], np.int32)
    assert (out[:, 0] == want).all()


def test_static_dims_scalars_and_branches():
    before = K.scaled.compiles
    for n in (32, 32, 48):
        x = rand(n, 64)
        y = np.zeros_like(x)
        K.scaled(x, y, 3, 0.5)
        t = np.arange(n)[:, None] // 8
        want = np.where(t % 2 == 0, x * np.float32(0.5),
                        np.where(t == 1, x + np.float32(3), x - np.float32(3)))
        assert np.array_equal(y, want.astype(np.float32))
    assert K.scaled.compiles - before == 2          # one per STATIC size
    assert K.scaled.name == "static_scale"


def test_scalar_argument_types():
    x = rand(8, 64)
    with pytest.raises(UsageError, match="must be an int"):
        K.scaled(x, x, 1.5, 0.5)
    with pytest.raises(UsageError, match="must be a number"):
        K.scaled(x, x, 1, "a")


def test_double_buffered_fp16_groups():
    for n in (100, 16, 7):
        x, y = rand(n, 128, dtype=np.float16), rand(n, 128, dtype=np.float16)
        z = np.zeros_like(x)
        K.vadd_groups[3](x, y, z)
        assert np.array_equal(z, (x.astype(np.float32) + y.astype(np.float32))
                              .astype(np.float16))


def test_group_slots_rotate_at_run_time():
    doc = K.vadd_groups.last_doc or K.vadd_groups.compile({}, {})
    from libpypto.ir import text
    listing = text.print_doc(doc)
    assert 'tile {addr=((i0 - g0) // block_num % 2)*8192, name="g0"}' in listing or \
        "% 2)*4096" in listing
    assert "mutex_lock" in listing


def test_results_do_not_depend_on_threads():
    x, y = rand(200, 256), rand(200, 256)
    outs = []
    for threads in (1, 2, 5):
        K.vadd.threads = threads
        z = np.zeros_like(x)
        K.vadd[7](x, y, z)
        outs.append(z.tobytes())
    K.vadd.threads = None
    assert len(set(outs)) == 1


def test_jit_options_and_errors():
    with pytest.raises(CompileError, match="arch"):
        pl.jit(arch="a9")(K.vadd.fn)
    k = pl.jit(arch="a5")(K.vadd.fn)
    assert k.options["arch"] == "a5"
    x = rand(16, 256)
    z = np.zeros_like(x)
    k[1](x, x, z)
    assert np.array_equal(z, x + x)
    assert k.last_doc.attrs["target"]["name"] == "950"


def test_branch_arms_start_from_the_same_values_and_merge():
    x = rand(32, 64)
    y = np.full_like(x, -5.0)
    K.branchy(x, y)
    t = np.arange(32)[:, None] // 8
    want = x + np.where(t % 2 == 0, t + 1, t + 2).astype(np.float32)
    keep = (t % 2 == 0) | (np.arange(32)[:, None] % 8 < 3)
    assert np.array_equal(y, np.where(keep, want, np.float32(-5.0)))


def test_bf16_int32_compare_select_cast():
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    xb, yb = rand(16, 64).astype(bf), rand(16, 64).astype(bf)
    xi = RNG.integers(-100, 100, (16, 64)).astype(np.int32)
    ob, oi, of = np.zeros((16, 64), bf), np.zeros((16, 64), np.int32), np.zeros((16, 64),
                                                                              np.float32)
    K.dtypes(xb, yb, xi, ob, oi, of)
    xf, yf = xb.astype(np.float32), yb.astype(np.float32)
    prod = (xf * yf).astype(bf).astype(np.float32)        # rounded to bf16, then + 1
    assert np.array_equal(ob, (prod + 1).astype(bf))
    assert np.array_equal(oi, np.maximum(xi * 3 - 1, 0))
    assert np.array_equal(of, np.where(xf > yf, xf, yf))


def test_int8_matmul_accumulates_in_int32():
    a = RNG.integers(-128, 128, (32, 64)).astype(np.int8)
    b = RNG.integers(-128, 128, (64, 32)).astype(np.int8)
    c = np.zeros((32, 32), np.int32)
    K.mm_int8(a, b, c)
    assert np.array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("k", ["mutexed", "barriers"])
def test_mutexes_and_barriers_order_pipes(k):
    x = rand(64, 64)
    y = np.zeros_like(x)
    getattr(K, k)[3](x, y)
    assert np.allclose(y, np.exp(x) if k == "mutexed" else -x, rtol=1e-6)


def test_mixed_kernel_cores_and_inter_subblock_events():
    B = 3
    x = rand(16 * B, 16, dtype=np.float16)
    eye = np.eye(16, dtype=np.float16)
    cube_out = np.zeros((16 * B, 16), np.float32)
    vec_out = np.zeros((2 * B, 8), np.int32)
    ws = np.zeros((2 * B, 8), np.int32)
    K.mixed_ids[B](x, eye, cube_out, vec_out, ws)
    assert np.array_equal(cube_out, x.astype(np.float32))
    want = np.array([i * 1000 + B * 100 + (i % 2) * 10 + 2 for i in range(2 * B)], np.int32)
    assert (vec_out == want[:, None]).all()
    assert (ws[0::2] == want[1::2, None]).all() and (ws[1::2] == want[1::2, None]).all()


def test_c_backend_in_process_matches_the_pro_runner():
    import libpypto.pro as pl2
    from libpypto.runtime.compiler import find_cc
    if find_cc() is None:
        pytest.skip("no C compiler")
    k = pl2.jit(K.vadd_groups.fn)
    k.backend = "c"
    for n in (100, 7):
        x, y = rand(n, 128, dtype=np.float16), rand(n, 128, dtype=np.float16)
        z = np.zeros_like(x)
        k[3](x, y, z)
        assert np.array_equal(z, (x.astype(np.float32) + y.astype(np.float32))
                              .astype(np.float16))
    assert k.compiles == 1
    assert "pypto_pro_run" in [op for op in k.last_doc.body if op.name == "code"][0] \
        .attrs["source"]


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_insert(backend):
    from libpypto.runtime.compiler import find_cc
    if backend == "c" and find_cc() is None:
        pytest.skip("no C compiler")
    k = pl.jit(K.inserted.fn)
    k.backend = backend
    x = rand(8, 32)
    y = np.full((16, 64), 5.0, np.float32)
    k(x, y)
    want = np.zeros((16, 64), np.float32)
    want[4:12, 16:48] = x
    want[0:3, 0:32] = x[:3]
    assert np.array_equal(y, want)


def test_tiling_key_specialisations_and_tiling_data():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[3] / "examples" / "pro" / "tiling_key.py"
    spec = importlib.util.spec_from_file_location("pro_tiling_key_test", path)
    T = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(T)
    x, y = rand(64, 128), rand(64, 128)
    runs = [(0, 16, 4, 0.5), (1, 8, 8, 2.0), (0, 16, 2, 3.0), (1, 8, 4, 0.25)]
    for op, rows, n_tiles, scale in runs:
        z = np.zeros_like(x)
        T.keyed[None, 2, {"Op": op, "Rows": rows}](x, y, z, T.Tiling(n_tiles=n_tiles,
                                                                      scale=scale))
        done = n_tiles * rows
        want = ((x + y) if op == 0 else (x * y))[:done] * np.float32(scale)
        assert np.array_equal(z[:done], want) and not z[done:].any()
    assert T.keyed.compiles == 2           # one per key: TilingData never recompiles
    docs = {tuple(sorted(d.attrs["consts"].items())): d for d in T.keyed._cache.values()}
    from libpypto.ir import text
    add = text.print_doc(docs[(("Op", 0), ("Rows", 16))])
    mul = text.print_doc(docs[(("Op", 1), ("Rows", 8))])
    assert "tadd" in add and "tmul %" in mul and "tadd" not in mul   # the dead arm is gone
    assert "ub.f32[16, 128]" in add and "ub.f32[8, 128]" in mul
