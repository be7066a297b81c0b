"""uniform / normal: the reference pages' worked examples, bit-exact agreement with a Philox4x32
written here from its definition (Python ints, independent of runtime/philox.py) on both
backends, any tile shape and thread count, and statistics for a fixed seed."""
import math

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto

BACKENDS = [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"]
T = pypto.Tensor


def philox_word(i: int, key: int, counter1: int, rounds: int = 10) -> int:
    """Word i % 4 of Philox4x32 with counter (i // 4 as a uint64, counter1) and a uint64 key."""
    c = [(i // 4) & 0xFFFFFFFF, (i // 4) >> 32, counter1 & 0xFFFFFFFF, counter1 >> 32]
    k = [key & 0xFFFFFFFF, key >> 32]
    for _ in range(rounds):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1],
             p0 & 0xFFFFFFFF]
        k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
    return c[i % 4]


def ref_uniform(shape, key, counter1, bits=23, dtype=np.float32):
    n = math.prod(shape)
    w = np.array([philox_word(i, key, counter1) for i in range(n)], np.int64)
    return ((w & ((1 << bits) - 1)) / 2.0 ** bits).astype(dtype).reshape(shape)


def ref_normal(shape, key, counter1):
    n = math.prod(shape)
    u = ref_uniform([n + n % 2], key, counter1).astype(np.float64)
    u1, u2 = np.maximum(u[0::2], 1e-7), u[1::2]
    r = np.sqrt(-2 * np.log(u1))
    z = np.stack([r * np.sin(2 * np.pi * u2), r * np.cos(2 * np.pi * u2)], -1).reshape(-1)
    return z[:n].reshape(shape)


PAGE_U = [[0.1689806, 0.9725481, 0.90036285, 0.16582811],
          [0.1454581, 0.48029935, 0.02495587, 0.99239147],
          [0.02835405, 0.10649502, 0.45283175, 0.87260246],
          [0.6877538, 0.24809706, 0.95886254, 0.24039495]]
PAGE_N = [[-0.32364845, 1.8577391, 0.39556974, 0.2311697],
          [0.24243996, -1.9485782, -0.12983137, 2.7137496],
          [1.6558666, 2.0938187, -0.90338254, 0.8765667],
          [0.86518306, 0.01034508, 0.2893259, 0.01748212]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_reference_pages_examples(backend):
    @pypto.jit(backend=backend)
    def k(y: T([4, 4], pypto.DT_FP32), z: T([4, 4], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 4)
        y[:] = pypto.uniform([4, 4], [1234], [0, 1], [1], pypto.DT_FP32)
        z[:] = pypto.normal([4, 4], [1234], [0, 1], [1], pypto.DT_FP32)
    y, z = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    k(y, z)
    # the page prints as numpy does (at most 8 decimals); uniform's values are multiples of
    # 2**-23 (1.2e-7 apart), so the printed numbers name the exact values
    assert [[float(np.format_float_positional(v, precision=8)) for v in row]
            for row in y] == PAGE_U
    # the page's normals come from the chip's sin/cos/log: equal to a few fp32 ulps
    np.testing.assert_allclose(z, np.array(PAGE_N, np.float32), rtol=2e-5, atol=2e-7)


def make_uniform(backend, tile, threads=None):
    @pypto.jit(backend=backend, threads=threads)
    def k(a: T([3, 5, 40], pypto.DT_FP32), b: T([3, 5, 40], pypto.DT_FP16),
          c: T([3, 5, 40], pypto.DT_BF16), d: T([37], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(*tile)
        a[:] = pypto.uniform([3, 5, 40], [2 ** 40 + 7], [5, 3 * 2 ** 33 + 1], [1], pypto.DT_FP32)
        b[:] = pypto.uniform([3, 5, 40], [99], [0, 0], [3], pypto.DT_FP16)
        c[:] = pypto.uniform([3, 5, 40], [99], [0, 0], [1], pypto.DT_BF16)
        d[:] = pypto.uniform([37], [99], [0, 0], [1], pypto.DT_FP32)
    return k


def run_uniform(backend, tile, threads=None):
    outs = [np.zeros((3, 5, 40), t) for t in (np.float32, np.float16, ml_dtypes.bfloat16)]
    outs.append(np.zeros(37, np.float32))
    make_uniform(backend, tile, threads)(*outs)
    return outs


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tile", [(2, 2, 16), (3, 5, 48)])
def test_uniform_is_philox_bit_for_bit(backend, tile):
    a, b, c, d = run_uniform(backend, tile)
    np.testing.assert_array_equal(a, ref_uniform([3, 5, 40], 2 ** 40 + 7, 3 * 2 ** 33 + 1))
    np.testing.assert_array_equal(b, ref_uniform([3, 5, 40], 99, 0, 10, np.float16))
    np.testing.assert_array_equal(c, ref_uniform([3, 5, 40], 99, 0, 7, ml_dtypes.bfloat16))
    np.testing.assert_array_equal(d, ref_uniform([37], 99, 0))
    # fp32 and the others share the stream of one key: the low bits of the same words
    assert (a != ref_uniform([3, 5, 40], 99, 0)).any()


@pytest.mark.needs_cc
def test_uniform_is_the_same_for_any_thread_count_and_backend():
    ref = run_uniform("numpy", (3, 5, 48))
    for threads in (1, 2):
        got = run_uniform("c", (1, 2, 16), threads)
        for g, r in zip(got, ref):
            assert g.tobytes() == r.tobytes()


def make_stats(backend):
    @pypto.jit(backend=backend)
    def k(u: T([64, 256], pypto.DT_FP32), z: T([64, 256], pypto.DT_FP32),
          zo: T([3, 7], pypto.DT_FP32), z1: T([9], pypto.DT_FP32),
          zh: T([4, 32], pypto.DT_BF16)):
        pypto.set_vec_tile_shapes(16, 64)
        u[:] = pypto.uniform([64, 256], [7], [0, 11], [1], pypto.DT_FP32)
        z[:] = pypto.normal([64, 256], [7], [0, 12], [1], pypto.DT_FP32)
        zo[:] = pypto.normal([3, 7], [5], [0, 1], [1], pypto.DT_FP32)      # odd rows
        z1[:] = pypto.normal([9], [5], [0, 1], [1], pypto.DT_FP32)         # odd length
        zh[:] = pypto.normal([4, 32], [5], [0, 1], [3], pypto.DT_BF16)
    return k


@pytest.mark.parametrize("backend", BACKENDS)
def test_normal_against_box_muller_and_statistics(backend):
    u, z = np.zeros((64, 256), np.float32), np.zeros((64, 256), np.float32)
    zo, z1 = np.zeros((3, 7), np.float32), np.zeros(9, np.float32)
    zh = np.zeros((4, 32), ml_dtypes.bfloat16)
    make_stats(backend)(u, z, zo, z1, zh)
    # Box-Muller of the same uniforms, in float64 (fp32 sin/cos/log: a few ulps)
    np.testing.assert_allclose(z, ref_normal([64, 256], 7, 12), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(zo, ref_normal([3, 7], 5, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(z1, ref_normal([9], 5, 1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(zh.astype(np.float64), ref_normal([4, 32], 5, 1), rtol=1e-2,
                               atol=1e-2)
    # 16384 samples of a fixed seed: the moments of U(0, 1) and N(0, 1)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.05
    assert abs((np.abs(z) < 1.96).mean() - 0.95) < 0.01


def test_random_errors():
    def trace(fn, *args):
        @pypto.jit
        def k(y: T([4, 8], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(4, 8)
            y[:] = fn(*args)
        return k.trace()
    u = pypto.uniform
    with pytest.raises(pypto.CompileError, match="alg must be \\[1\\] \\(Philox\\)"):
        trace(u, [4, 8], [1], [0, 1], [2], pypto.DT_FP32)
    with pytest.raises(pypto.CompileError, match="key must be \\[seed\\]"):
        trace(u, [4, 8], [-1], [0, 1], [1], pypto.DT_FP32)
    with pytest.raises(pypto.CompileError, match="counter must be two ints"):
        trace(u, [4, 8], [1], [1], [1], pypto.DT_FP32)
    with pytest.raises(pypto.CompileError, match="dtype must be DT_FP32, DT_FP16 or DT_BF16"):
        trace(pypto.normal, [4, 8], [1], [0, 1], [1], pypto.DT_INT32)
    with pytest.raises(pypto.CompileError, match="shape must be a list of 1 to 4"):
        trace(u, [1, 1, 1, 4, 8], [1], [0, 1], [1], pypto.DT_FP32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_normal_with_an_odd_last_dim_past_one_tile(backend):
    """[96, 333] fp32 (125 KiB, past an eighth of the a2's UB): a stream of pairs in tiles,
    reshaped to the shape by blocks; the same numbers as the formula, no tile past 24 KiB."""
    @pypto.jit(backend=backend, target="a2")
    def k(z: T([96, 333], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 64)
        z[:] = pypto.normal([96, 333], [3], [0, 2], [1], pypto.DT_FP32)
    z = np.zeros((96, 333), np.float32)
    k(z)
    np.testing.assert_allclose(z, ref_normal([96, 333], 3, 2), rtol=1e-4, atol=1e-5)
    from libpypto import driver
    doc = driver.lower(k.trace(target=driver.target_for(None, "a2")))
    assert max(op.result.type.nbytes for op in doc.walk() if op.name == "tile") <= 196608 // 8


OPS3 = '''
import libpypto as pypto

@pypto.jit
def k(x: pypto.Tensor([8, 64], pypto.DT_FP32), i: pypto.Tensor([3], pypto.DT_INT32),
      v: pypto.Tensor([3, 64], pypto.DT_FP32), y: pypto.Tensor([8, 64], pypto.DT_FP32),
      w: pypto.Tensor([8, 32], pypto.DT_FP32), q: pypto.Tensor([8, 16], pypto.DT_FP32),
      p: pypto.Tensor([128], pypto.DT_INT32)):
    pypto.set_vec_tile_shapes(4, 32)
    y[:] = x + pypto.normal([8, 64], [3], [0, 2], [1], pypto.DT_FP32)
    a, b = pypto.deinterleave(x)
    c, d = pypto.interleave(a, b)
    w[:] = c + pypto.uniform([8, 32], [3], [0, 2], [1], pypto.DT_FP32) * d
    q[:] = pypto.gathermask(x, 5)
    p[:] = pypto.unpack(pypto.pack(pypto.view(x, [2, 64], [0, 0])), pypto.DT_INT32)
    pypto.index_put_(y, (i,), v, True)
'''


def test_the_new_ops_agree_at_every_level(tmp_path):
    from libpypto import driver
    f = tmp_path / "ops3.py"
    f.write_text(OPS3)
    rows = driver.check_levels(driver.trace(str(f)))
    assert len(rows) > 2 and all(r["verdict"] == "pass" for r in rows[1:]), rows
