"""A write whose box exceeds its destination is never dropped silently: a trace-time error
when the sizes are known, a runtime error naming the op-file line when they are bound (the
CLI on both backends, and the JIT)."""
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import CompileError, PyptoError

F32 = pypto.DT_FP32
D = pypto.DYNAMIC

OP_FILE = textwrap.dedent('''\
    import libpypto as pypto


    @pypto.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
          y: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 64)
        pypto.assemble(x * 2.0, [0, 0], y)
    ''')


@pytest.fixture
def op_file(tmp_path):
    p = tmp_path / "overflow.py"
    p.write_text(OP_FILE)
    return p


def run(*args):
    tool = pathlib.Path(sys.executable).parent / "pypto-run"
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.needs_cc)])
def test_the_cli_refuses_bound_sizes_that_drop_rows(op_file, backend):
    p = run(op_file, "--bind", "x_0=37", "--bind", "y_0=20", "--backend", backend,
            "-o", "/dev/null")
    assert p.returncode == 1, p.stderr
    line = p.stderr.strip()
    assert "\n" not in line and "overflow.py:8:" in line, line
    assert "fall off" in line and "x_0=37" in line and "y_0=20" in line, line


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.needs_cc)])
def test_the_cli_runs_sizes_that_fit(op_file, backend):
    p = run(op_file, "--bind", "x_0=20", "--bind", "y_0=37", "--backend", backend,
            "-o", "/dev/null")
    assert p.returncode == 0 and ": pass" in p.stderr, p.stderr


def test_the_jit_refuses_bound_sizes_that_drop_rows():
    @pypto.jit
    def k(x: pypto.Tensor[[D, 64], F32], y: pypto.Tensor[[D, 64], F32]):
        pypto.set_vec_tile_shapes(8, 64)
        pypto.assemble(x * 2.0, [0, 0], y)
    x = np.ones((37, 64), np.float32)
    y = np.zeros((20, 64), np.float32)
    with pytest.raises(PyptoError, match="fall off") as info:
        k(x, y)
    assert info.value.loc is not None and info.value.loc.line > 0
    y = np.zeros((40, 64), np.float32)
    k(x, y)
    np.testing.assert_array_equal(y[:37], x * 2)
    np.testing.assert_array_equal(y[37:], 0)


def test_known_sizes_that_drop_rows_are_a_trace_time_error():
    @pypto.jit
    def k(x: pypto.Tensor[[37, 64], F32], y: pypto.Tensor[[20, 64], F32]):
        pypto.set_vec_tile_shapes(8, 64)
        pypto.assemble(x * 2.0, [0, 0], y)
    with pytest.raises(CompileError, match=r"writes \[0:37\] in dim 0 of y, which has size 20"):
        k.trace()


def test_an_offset_past_the_end_is_checked_when_bound():
    @pypto.jit
    def k(x: pypto.Tensor[[8, 64], F32], y: pypto.Tensor[[D, 64], F32]):
        pypto.set_vec_tile_shapes(8, 64)
        pypto.assemble(x, [16, 0], y)
    x = np.ones((8, 64), np.float32)
    with pytest.raises(PyptoError, match="fall off"):
        k(x, np.zeros((20, 64), np.float32))
    y = np.zeros((24, 64), np.float32)
    k(x, y)
    np.testing.assert_array_equal(y[16:], 1)
