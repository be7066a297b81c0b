"""Row runs in the C (libpypto/codegen/c_rows.py): rows read in place, passes over a run-time
number of valid columns."""
# no `from __future__ import annotations`: the kernels' annotations use local names
import numpy as np

import libpypto as pypto
from libpypto.jit import call_kernel
from libpypto.runtime import code_op

def test_reduction_over_a_run_time_width_steps_its_valid_chunks_untested():
    """A row reduction whose valid columns are known only at run time (a named H bounded by
    its tile) first steps the whole chunks of valid columns with no test per element (which
    kept gcc from vectorising the pass), then the rest with it: the same elements in the
    same lanes and order. A named H gives the static result bit for bit where the static
    tile needs no scalar tail (whose libm exp may differ from the vector one in the last
    bit: a width of 64 here), and within fp32 rounding of numpy for any width."""
    def softmax_of(h):
        @pypto.jit
        def softmax(x: pypto.Tensor[["T", h], pypto.DT_FP32],
                    y: pypto.Tensor[["T", h], pypto.DT_FP32]):
            pypto.set_vec_tile_shapes(4, 64)
            e = pypto.exp(x - pypto.amax(x, dim=-1, keepdim=True))
            y[:] = e / pypto.sum(e, dim=-1, keepdim=True)
        return softmax
    rng = np.random.default_rng(4)
    named = softmax_of("H")
    for width in (1, 37, 64):
        x = rng.standard_normal((6, width), dtype=np.float32)
        y = np.zeros_like(x)
        call_kernel(named, (x, y), {}, threads=1)
        e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
        assert np.allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-6, atol=1e-7)
        if width == 64:
            ys = np.zeros_like(x)
            call_kernel(softmax_of(width), (x, ys), {}, threads=1)
            assert np.array_equal(y.view(np.uint32), ys.view(np.uint32))
    src = code_op(named._cache[next(iter(named._cache))].doc).attrs["source"]
    run = src[src.index("one pass over the row"):]
    full = run.index("/ 16 * 16;")
    first, second = run.index("for (;", full), run.index("for (;", run.index("for (;", full) + 1)
    assert " < n" not in run[first:second] and " < n" in run[second:]


def test_a_loaded_row_is_read_in_place_unless_it_has_a_tail():
    """A row tile written only by its row load reads a fully valid row where it lies in GM;
    a row past the valid rows or with fewer valid columns goes to the row on the stack with
    its tail zeroed, as the copy made it: the same results as numpy either way."""
    @pypto.jit
    def rms(x: pypto.Tensor[["T", "H"], pypto.DT_FP32], g: pypto.Tensor[["H"], pypto.DT_FP32],
            y: pypto.Tensor[["T", "H"], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 64)
        y[:] = pypto.rms_norm(x, g)
    rng = np.random.default_rng(5)
    for rows, width in ((10, 64), (7, 40)):
        x = rng.standard_normal((rows, width), dtype=np.float32)
        g = rng.standard_normal(width, dtype=np.float32)
        y = np.zeros_like(x)
        call_kernel(rms, (x, g, y), {}, threads=2)
        x64 = x.astype(np.float64)
        want = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * g
        assert np.allclose(y, want, rtol=1e-5, atol=1e-6)
    src = code_op(rms._cache[next(iter(rms._cache))].doc).attrs["source"]
    assert "with a tail */" in src and " == 64) t" in src
