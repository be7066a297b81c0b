"""Data-dependent scalars (issue 11 item 4): `t[i, j]` on an integer input parameter reads one
element when the kernel runs, and the value serves as a loop bound, an offset or a condition,
on both backends and at every level; what cannot be known without the data says so."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto as pypto
from libpypto import driver
from libpypto.errors import CompileError, InputError, PyptoError, VerifyError


@pypto.jit
def seq_rows(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
             lens: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
             y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    """Block b of 16 rows: its first lens[b] rows (at most 16) doubled, the rest untouched."""
    pypto.set_vec_tile_shapes(16, 64)
    for b in pypto.loop(lens.shape[0]):
        for j in pypto.loop(lens[b].min(16)):
            y[b * 16 + j:, 0:] = pypto.view(x, [1, 64], [b * 16 + j, 0]) * 2.0


@pypto.jit
def gather_rows(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
                table: pypto.Tensor([pypto.DYNAMIC, 2], pypto.DT_INT32),
                y: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32)):
    """Row i of y is row table[i, 0] of x, negated where table[i, 1] is nonzero."""
    pypto.set_vec_tile_shapes(1, 32)
    for i in pypto.loop(table.shape[0]):
        row = pypto.view(x, [1, 32], [table[i, 0], 0])
        if pypto.cond(table[i, 1] != 0):
            y[i:, 0:] = -row
        else:
            y[i:, 0:] = row + 0.0


def seq_rows_ref(x, lens, y0):
    y = y0.copy()
    for b, n in enumerate(lens):
        n = max(0, min(int(n), 16))
        y[b * 16:b * 16 + n] = x[b * 16:b * 16 + n] * 2
    return y


@pytest.mark.parametrize("backend", [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"])
def test_a_read_is_a_loop_bound(backend):
    seq_rows.options["backend"] = backend
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64), dtype=np.float32)
    before = seq_rows.compiles
    for lens in ([3, 16, 0, 20], [1, 1, 1, 1], [16, 2, 9, 5]):
        lens = np.array(lens, np.int32)
        y = np.full_like(x, 7.0)
        seq_rows(x, lens, y)
        np.testing.assert_array_equal(y, seq_rows_ref(x, lens, np.full_like(x, 7.0)))
    assert seq_rows.compiles == before + 1          # data is not a compile key


@pytest.mark.parametrize("backend", [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"])
def test_reads_are_offsets_and_conditions(backend):
    gather_rows.options["backend"] = backend
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 32), dtype=np.float32)
    table = np.array([[3, 0], [9, 1], [0, 0], [3, 1], [7, 0]], np.int32)
    y = np.zeros((5, 32), np.float32)
    gather_rows(x, table, y)
    want = x[table[:, 0]] * np.where(table[:, 1] != 0, -1, 1)[:, None]
    np.testing.assert_array_equal(y, want.astype(np.float32))


@pypto.jit
def next_len(lens: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32),
             y: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    for b in pypto.loop(lens.shape[0]):
        for j in pypto.loop(lens[b + 1]):          # past the end on the last b
            y[j:, 0:] = pypto.full([1, 8], 1.0, pypto.DT_FP32)


@pytest.mark.parametrize("backend", [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"])
def test_a_read_outside_its_tensor_names_the_line(backend):
    next_len.options["backend"] = backend
    with pytest.raises(PyptoError, match=r"lens\[3\] is outside lens \(shape \[3\]\)") as e:
        next_len(np.array([1, 2, 3], np.int32), np.zeros((4, 8), np.float32))
    assert e.value.loc is not None and e.value.loc.line > 0


def test_the_graph_carries_read_ops_bound_for_what_follows():
    doc = seq_rows.trace()
    reads = [op for op in doc.walk() if op.name == "read"]
    assert [(r.attrs["param"], r.attrs["var"]) for r in reads] == [("lens", "r0")]
    text = driver.dump_ir(driver.lower(doc), text=True).decode()
    assert 'read {index=[i0], param="lens", var="r0"}' in text
    assert "stop=min(16, r0)" in text


def test_only_integer_inputs_are_read():
    @pypto.jit
    def bad_float(x: pypto.Tensor([4, 8], pypto.DT_FP32), y: pypto.Tensor([4, 8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(x[0, 0]):
            y[:] = x + 1.0
    with pytest.raises(CompileError, match="integer input parameters only"):
        bad_float.trace()

    @pypto.jit
    def written(n: pypto.Tensor([4], pypto.DT_INT32), y: pypto.Tensor([4], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(4)
        n[:] = y + 1
        for i in pypto.loop(n[0]):
            y[:] = y + 1
    with pytest.raises(CompileError, match=r"writing input|must be an input"):
        written.trace()


def test_the_verifier_checks_reads():
    doc = seq_rows.trace()
    for op in doc.walk():
        if op.name == "read":
            op.attrs["param"] = "x"            # a float tensor
    with pytest.raises(VerifyError, match="only integer input parameters are read"):
        driver.verify_or_raise(doc)
    doc = seq_rows.trace()
    for op in doc.walk():
        if op.name == "read":
            op.attrs["index"] = []
    with pytest.raises(VerifyError, match="takes 1 indices, not 0"):
        driver.verify_or_raise(doc)


def test_a_read_variable_is_bound_only_after_its_read():
    src = driver.dump_ir(driver.lower(seq_rows.trace()), text=True).decode()
    # move the loop that uses r0 before the read: the verifier refuses the file
    lines = src.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.strip().startswith("read "))
    j = next(n for n, ln in enumerate(lines) if "stop=min(16, r0)" in ln)
    lines[i], lines[j] = lines[j], lines[i]
    with pytest.raises(InputError, match="loop uses symbol 'r0', which is not bound there"):
        driver.parse_ir("\n".join(lines).encode() + b"\n")


def test_the_schedule_says_it_needs_the_data():
    doc = driver.schedule(driver.lower(seq_rows.trace()),
                          bind={"x_0": 64, "y_0": 64, "lens_0": 4})
    sched = next(op for op in doc.body if op.name == "schedule")
    assert sched.attrs["instances"] is None and sched.attrs["data_dependent"] == ["lens"]
    assert "data-dependent: loop bounds and offsets come from lens at run time" in \
        driver.dump_ir(doc, text=True).decode()
