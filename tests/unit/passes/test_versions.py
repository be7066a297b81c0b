"""Bounded versions (analysis/versions.py): a named size known to fit its tile lowers like
a static one (no column loop, one fused program), runs right, and the JIT picks the bounded
or the general version per call (run-time versioning: two compiles at most)."""
from __future__ import annotations

import numpy as np
import pytest

import libpypto as pypto
from libpypto.analysis.versions import assume, fits, parse_assumption, tile_bounds
from libpypto.errors import UsageError
from libpypto.ir.text import parse_doc, print_doc
from libpypto.passes.tensor_to_tile import tensor_to_tile
from libpypto.targets import load_target

SOFTMAX = '''import libpypto as pypto

@pypto.jit
def softmax(x: pypto.Tensor[["T", "H"], pypto.DT_FP32], y: pypto.Tensor[["T", "H"], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(8, 512)
    m = pypto.amax(x, dim=-1, keepdim=True)
    e = pypto.exp(x - m)
    y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
'''


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_tile_bounds_finds_the_reduced_named_dim(op_runner):
    doc = pypto.trace(op_runner.write("sm", SOFTMAX))
    assert tile_bounds(doc) == {"H": 512}
    assert fits({"H": 512}, {"H": 512, "T": 9}) and not fits({"H": 512}, {"H": 513})
    assert not fits({"H": 512}, {"H": 0})


def test_tensor_to_tile_from_text_pins_bounded_counts(op_runner):
    """From text IR: the symbol's max makes the reduction loop-free and the elementwise grid
    one tile wide; without it both loop over cdiv(H, 512)."""
    doc = pypto.trace(op_runner.write("sm", SOFTMAX))
    text = print_doc(assume(doc, {"H": 512}))
    assert 'max=512' in text
    target = load_target("host")
    bounded = print_doc(tensor_to_tile(parse_doc(text), target=target))
    general = print_doc(tensor_to_tile(parse_doc(print_doc(doc)), target=target))
    assert "for {" not in bounded and "cdiv(H, 512)" not in bounded
    assert "for {" in general and "cdiv(H, 512)" in general


@pytest.mark.needs_cc
@pytest.mark.parametrize("h", [1, 300, 512])
def test_bounded_version_fuses_and_runs(op_runner, h):
    x = np.random.default_rng(h).standard_normal((19, h)).astype(np.float32)
    doc = pypto.trace(op_runner.write("sm", SOFTMAX))
    low = pypto.lower(assume(doc, {"H": 512}))
    assert op_runner.blocks(low) == [["amax", "sub", "exp", "sum", "div", "assemble"]]
    assert len(op_runner.blocks(pypto.lower(doc))) > 1
    code = pypto.emit(pypto.schedule(low))
    rec = pypto.run(code, inputs={"x": x}, threads=2, seed=1)
    y = next(o for o in rec.body[0].attrs["outputs"] if o["name"] == "y")
    got = np.frombuffer(y["data"], np.float32).reshape(19, h)
    np.testing.assert_allclose(got, _softmax(x), rtol=2e-6, atol=1e-7)


@pytest.mark.needs_cc
def test_jit_picks_the_version_per_call():
    @pypto.jit
    def softmax(x: pypto.Tensor[["T", "H"], pypto.DT_FP32],
                y: pypto.Tensor[["T", "H"], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 512)
        m = pypto.amax(x, dim=-1, keepdim=True)
        e = pypto.exp(x - m)
        y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
    rng = np.random.default_rng(0)
    for h, compiles in [(512, 1), (100, 1), (1300, 2), (7, 2), (2000, 2)]:
        x = rng.standard_normal((13, h)).astype(np.float32)
        y = np.zeros_like(x)
        softmax(x, y)
        np.testing.assert_allclose(y, _softmax(x), rtol=2e-6, atol=1e-7)
        assert softmax.compiles == compiles, h


def test_bad_assumptions_are_errors(op_runner):
    doc = pypto.trace(op_runner.write("sm", SOFTMAX))
    for bad in ("H<4", "H<=x", "<=3", "H<=0"):
        with pytest.raises(UsageError, match="expected NAME<=N"):
            parse_assumption(bad)
    with pytest.raises(UsageError, match="no symbol 'Q'"):
        assume(doc, {"Q": 4})
    assert parse_assumption(" H <= 64 ") == ("H", 64)
