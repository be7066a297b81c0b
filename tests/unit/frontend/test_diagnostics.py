"""User errors in op files: reported at trace time, at the op file's line, naming the rule
and the fix."""
import inspect

import pytest

import libpypto as pypto
from libpypto.errors import CompileError
from libpypto.targets import load_target

F32 = pypto.DT_FP32


def line_of(fn, text: str) -> int:
    src, start = inspect.getsourcelines(fn)
    for i, ln in enumerate(src):
        if text in ln:
            return start + i
    raise AssertionError(text)


def trace_error(kernel, marker: str, *patterns: str, target=None):
    with pytest.raises(CompileError) as info:
        kernel.trace(target=load_target(target) if target else None)
    err = info.value
    assert err.loc is not None and err.loc.file == "test_diagnostics.py", err
    assert err.loc.line == line_of(kernel.fn, marker), (err.loc, marker)
    for p in patterns:
        assert p in err.message, (p, err.message)
    return err


def test_shape_mismatch_names_both_shapes():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 16], F32],
          z: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        z[:] = x + y  # MARK
    trace_error(k, "# MARK", "[8, 32]", "[8, 16]", "broadcast")


def test_dtype_mismatch_suggests_cast():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], pypto.DT_FP16],
          z: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        z[:] = x * y  # MARK
    trace_error(k, "# MARK", "f32", "f16", "pypto.cast")


def test_unaligned_tile():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 1024], pypto.DT_FP16], y: pypto.Tensor[[8, 1024], pypto.DT_FP16]):
        pypto.set_vec_tile_shapes(8, 1000)
        y[:] = pypto.exp(x)  # MARK
    trace_error(k, "# MARK", "(8, 1000)", "32-byte aligned", "multiple of 16")


def test_wrong_rank_tile():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 4, 32], F32], y: pypto.Tensor[[8, 4, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        y[:] = pypto.exp(x)  # MARK
    trace_error(k, "# MARK", "rank 2", "rank 3", "one tile size per dim")


def test_no_tile_shape():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):
        y[:] = pypto.exp(x)  # MARK
    trace_error(k, "# MARK", "set_vec_tile_shapes")


def test_matmul_without_cube_tiles():
    @pypto.jit
    def k(a: pypto.Tensor[[32, 32], F32], b: pypto.Tensor[[32, 32], F32],
          c: pypto.Tensor[[32, 32], F32]):
        c[:] = pypto.matmul(a, b, F32)  # MARK
    trace_error(k, "# MARK", "set_cube_tile_shapes")


def test_cube_tiles_that_do_not_fit():
    @pypto.jit
    def k(a: pypto.Tensor[[1024, 1024], F32], b: pypto.Tensor[[1024, 1024], F32],
          c: pypto.Tensor[[1024, 1024], F32]):
        pypto.set_cube_tile_shapes([512, 512], [256, 256], [64, 64])
        c[:] = pypto.matmul(a, b, F32)  # MARK
    trace_error(k, "# MARK", "target host", "L0A", "512 KiB", "256 KiB",
                "smaller set_cube_tile_shapes")


def test_cube_tiles_are_checked_against_the_target_traced_for():
    @pypto.jit
    def k(a: pypto.Tensor[[512, 512], F32], b: pypto.Tensor[[512, 512], F32],
          c: pypto.Tensor[[512, 512], F32]):
        pypto.set_cube_tile_shapes([256, 256], [128, 128], [64, 64])   # L0A: 128 KiB of fp32
        c[:] = pypto.matmul(a, b, F32)  # MARK
    doc = k.trace()                          # the host's L0A holds 256 KiB
    assert "target" not in doc.attrs         # nothing chosen, nothing recorded
    trace_error(k, "# MARK", "target a2", "L0A", "128 KiB", "64 KiB", target="a2")
    recorded = k.trace(target=load_target("host")).attrs["target"]
    assert recorded == load_target("host").record()


def test_writing_an_input():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        y[:] = x + 1.0
        x[:] = y * 2.0  # MARK
    trace_error(k, "# MARK", "writing input 'x'", "output parameter")


def test_reading_a_local_before_writing():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        t = pypto.tensor([8, 32], F32)
        y[:] = t + x  # MARK
    trace_error(k, "# MARK", "reading local tensor", "assemble into it first")


def test_symbolic_value_where_an_int_is_needed():
    @pypto.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC, 32], F32], y: pypto.Tensor[[pypto.DYNAMIC, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        n = x.shape[0]
        for i in range(n):  # MARK
            y[:] = x
    trace_error(k, "# MARK", "symbolic value x_0", "Python int")


def test_value_escaping_a_loop():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        for i in pypto.loop(2):
            t = x * 2.0
        y[:] = t  # MARK
    trace_error(k, "# MARK", "inside a pypto.loop", "assemble")


def test_rebinding_an_output_warns(recwarn):
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32],
          z: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        z[:] = x + 1.0
        y = x * 2.0  # MARK
        return y
    seen = []
    from libpypto.errors import set_warning_handler
    set_warning_handler(lambda msg, loc=None: seen.append((msg, loc)))
    try:
        k.trace()
    finally:
        set_warning_handler(None)
    assert seen and "rebinds the name" in seen[0][0] and "y[:] = " in seen[0][0]
    assert seen[0][1].line == line_of(k.fn, "# MARK")


def test_a_kernel_that_writes_no_output_is_an_error_at_the_rebinding():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        t = x * 2.0
        y = t + 1.0  # MARK
    trace_error(k, "# MARK", "writes no output", "y[:] = ...")


def test_a_kernel_that_writes_no_output_and_rebinds_nothing_names_its_def():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):  # MARK
        pypto.set_vec_tile_shapes(8, 32)
        x * 2.0
    trace_error(k, "# MARK", "writes no output", "out[:] = ")


def test_an_op_that_raises_points_at_the_user_line():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 32], F32], y: pypto.Tensor[[8, 32], F32]):
        pypto.set_vec_tile_shapes(8, 32)
        raise ValueError("boom")  # MARK
    trace_error(k, "# MARK", "ValueError", "boom")
