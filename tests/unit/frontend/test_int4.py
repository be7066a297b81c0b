"""DT_INT4 (frontend/int4.py): packed two per byte, low nibble first; casts to and from fp16
in the cast modes and both saturation modes, views and assembles of the bytes, against a
numpy packing written here, on both backends; other uses are errors."""
import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError

# four casts of a dozen ops each: slow to compile on C (about 40 s on this loaded machine)
BACKENDS = [pytest.param("c", marks=[pytest.mark.needs_cc, pytest.mark.slow]), "numpy"]
T = pypto.Tensor


def unpack(raw: np.ndarray) -> np.ndarray:
    b = raw.astype(np.int64)
    lo, hi = b & 15, b >> 4
    v = np.stack([lo, hi], -1).reshape(*raw.shape[:-1], -1)
    return np.where(v >= 8, v - 16, v)


def pack(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.int64) & 15
    return (v[..., 0::2] | (v[..., 1::2] << 4)).astype(np.uint8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_int4_casts_views_and_assembles(backend):
    @pypto.jit(backend=backend)
    def k(x: T([4, 32], pypto.DT_INT4), f: T([4, 32], pypto.DT_FP16),
          y: T([4, 32], pypto.DT_FP16), t: T([4, 32], pypto.DT_INT4), r: T([4, 32], pypto.DT_INT4),
          s: T([4, 32], pypto.DT_INT4), half: T([4, 32], pypto.DT_INT4)):
        pypto.set_vec_tile_shapes(2, 32)
        y[:] = pypto.cast(x, pypto.DT_FP16)
        t[:] = pypto.cast(f, pypto.DT_INT4)                      # CAST_TRUNC, wrapping
        r[:] = pypto.cast(f, pypto.DT_INT4, pypto.CastMode.CAST_RINT)
        s[:] = pypto.cast(f, pypto.DT_INT4, "CAST_FLOOR", pypto.SaturationMode.ON)
        half[:, 0:16] = x[:, 16:32]
        pypto.assemble(pypto.view(x, [4, 16], [0, 0]), [0, 16], half)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (4, 16)).astype(np.uint8)
    f = (rng.standard_normal((4, 32)) * 9).astype(np.float16)
    f[0, :4] = [np.inf, -np.inf, np.nan, 7.5]
    outs = [np.zeros((4, 32), np.float16)] + [np.zeros((4, 16), np.uint8) for _ in range(4)]
    k(x, f, *outs)
    y, t, r, s, half = outs
    np.testing.assert_array_equal(y, unpack(x).astype(np.float16))
    ff = f.astype(np.float64)
    with np.errstate(invalid="ignore"):
        tr = np.where(np.isnan(ff), 0, np.trunc(np.nan_to_num(ff, posinf=7, neginf=-8)))
        wrap = ((tr.astype(np.int64) + 8) % 16) - 8
        wrap = np.where(np.isposinf(ff), 7, np.where(np.isneginf(ff), -8, wrap))
        rint = np.where(np.isnan(ff), 0, np.rint(np.nan_to_num(ff, posinf=7, neginf=-8)))
        rw = np.where(np.isposinf(ff), 7, np.where(np.isneginf(ff), -8,
                                                   ((rint.astype(np.int64) + 8) % 16) - 8))
        fl = np.clip(np.where(np.isnan(ff), 0, np.floor(np.nan_to_num(ff, posinf=7,
                                                                      neginf=-8))), -8, 7)
    np.testing.assert_array_equal(unpack(t), wrap)
    np.testing.assert_array_equal(unpack(r), rw)
    np.testing.assert_array_equal(unpack(s), fl)
    np.testing.assert_array_equal(half, np.concatenate([x[:, 8:], x[:, :8]], 1))
    assert pypto.bytes_of(pypto.DT_INT4) == 1


def test_int4_other_uses_are_errors():
    for body, match in ((lambda x: x + x, "DT_INT4 tensors take cast, view and assemble"),
                        (lambda x: pypto.exp(x), "exp does not take DT_INT4"),
                        (lambda x: x[:, 1:3], "must be even")):
        @pypto.jit
        def k(x: T([4, 32], pypto.DT_INT4), y: T([4, 32], pypto.DT_FP16)):
            pypto.set_vec_tile_shapes(2, 32)
            r = body(x)
            y[:] = pypto.cast(r, pypto.DT_FP16)
        with pytest.raises(CompileError, match=match):
            k.trace()
    @pypto.jit
    def odd(x: T([4, 31], pypto.DT_INT4), y: T([4, 31], pypto.DT_FP16)):
        y[:] = pypto.cast(x, pypto.DT_FP16)
    with pytest.raises(CompileError, match="static, even last dim"):
        odd.trace()
