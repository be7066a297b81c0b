"""The C renderer prints what the plan decides (libpypto/codegen/c.py, c_rows.py), and keeps
one method per tile instruction: `i_<instruction>` (`i_elementwise` for the elementwise
family) and `row_<instruction>` in row mode, the names op definitions refer to.

The C of every example is compared byte for byte by the golden tests and scripts/replay.py;
these cases cover plan outcomes the examples do not reach (a row pass split over a hazard).
"""
from __future__ import annotations

import importlib.util
import pathlib
import re

import numpy as np

import libpypto as pypto
from libpypto.codegen import c
from libpypto.jit import call_kernel
from libpypto.runtime import code_op
from libpypto.ir.defs import OPS

HERE = pathlib.Path(__file__).parent
_spec = importlib.util.spec_from_file_location("plan_cases", HERE / "test_c_plan.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def c_of(doc) -> str:
    """The C of the document's programs, without the prelude."""
    src = c.render(doc, [op for op in doc.body if op.name == "program"])
    return src[src.index("static void p0("):]


def test_every_tile_instruction_has_its_method():
    """(tests/unit/ir/test_opdefs.py checks every definition's `i_` method.)"""
    for n in ("tload", "tstore", "treduce", "texpands"):
        assert hasattr(c._Program, "row_" + n)
        assert OPS[n].impl["c"] == "i_" + n


def test_views_print_no_copy():
    src = c_of(cases.exec_doc(cases.MATMUL_BODY.replace("CLOBBER", ""), cases.MATMUL, "cube"))
    assert src.count("read in place") == 4          # two tloads, two textracts
    assert "pp_matmul(" in src


def test_fused_run_prints_one_loop_and_a_hazard_one_per_instruction():
    one = c_of(cases.exec_doc(cases.FUSE_BODY.replace("ADDR", "4096"), cases.FUSE))
    assert "/* texp tadd: one pass */" in one
    apart = c_of(cases.exec_doc(cases.FUSE_BODY.replace("ADDR", "1024"), cases.FUSE))
    assert "one pass" not in apart and "pp_expf" in apart


def test_split_row_pass_prints_one_pass_per_instruction():
    split = c_of(cases.exec_doc(cases.WIDE_BODY.replace("ADDR", "0"), cases.WIDE))
    assert "/* tload texp tadd tstore tstore: one row at a time */" in split
    assert "/* texp: one pass over the row */" in split
    assert "/* tadd: one pass over the row */" in split
    whole = c_of(cases.exec_doc(cases.WIDE_BODY.replace("ADDR", "1049088"), cases.WIDE))
    assert "/* texp tadd: one pass over the row */" in whole


def test_row_run_prefetches_the_next_row_in_its_first_pass_only():
    """Each GM tile loaded row by row gets a pointer to its next row (at the tile's last row
    the next tile's first, at the tensor's last row its own again) and one prefetch per 16
    columns, in the first pass over the row."""
    split = c_of(cases.exec_doc(cases.WIDE_BODY.replace("ADDR", "0"), cases.WIDE))
    run = split[split.index("one row at a time"):]
    assert run.count("/* next row */") == 1
    assert "pp_min(r1 + 1, " in run
    first = run.index("one pass over the row")
    second = run.index("one pass over the row", first + 1)
    assert run.count("__builtin_prefetch(") == 1
    assert first < run.index("__builtin_prefetch(") < second


def test_one_row_tiles_fuse_their_passes_in_a_row_run():
    """A (1, C) tile is a row run of one row: x * x and its sum share one pass."""
    @pypto.jit
    def rms(x: pypto.Tensor[[8, 256], pypto.DT_FP32], y: pypto.Tensor[[8, 256], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = pypto.rms_norm(x)
    x = np.random.default_rng(0).standard_normal((8, 256), dtype=np.float32)
    y = np.zeros_like(x)
    call_kernel(rms, (x, y), {}, threads=1)
    src = code_op(next(iter(rms._cache.values())).doc).attrs["source"]
    assert "/* tmul treduce: one pass over the row */" in src
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)
    assert np.allclose(y, want, rtol=1e-5, atol=1e-6)


def test_a_tile_copy_in_prefetches_its_rows_of_the_next_tile():
    """Tile-mode copy-ins (rows of 32 here: too short for a row run) prefetch each row's
    piece of the next tile along the outermost tiled dim (instance g0 + 1's), clamped to
    the tensor's last row, one prefetch per 64 bytes; the values are those of numpy for a
    row count with a tail tile."""
    import ml_dtypes

    @pypto.jit
    def half(x: pypto.Tensor[["T", 8, 64], pypto.DT_BF16],
             y: pypto.Tensor[["T", 8, 32], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 8, 32)
        y[:] = pypto.cast(x[:, :, 32:64], pypto.DT_FP32) * 2.0

    x = np.random.default_rng(3).standard_normal((10, 8, 64)).astype(ml_dtypes.bfloat16)
    y = np.zeros((10, 8, 32), np.float32)
    call_kernel(half, (x, y), {}, threads=2)
    np.testing.assert_array_equal(y, x[..., 32:].astype(np.float32) * 2)
    src = code_op(half._cache[next(iter(half._cache))].doc).attrs["source"]
    body = src[src.index("static void p0("):]
    assert body.count("__builtin_prefetch(") == 1
    assert "(pp_min((g0 * 4) + i" in body and " + 4, s0 - 1)) * 64 * 8" in body
    assert re.search(r"for \(int64_t (q\d+) = 0; \1 < v\d+ \* 2; \1 \+= 64\) "
                     r"__builtin_prefetch\(", body)
