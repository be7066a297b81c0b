"""The JIT's call-plan cache: a repeated call with the same shapes, dtypes and constants
reuses the bound sizes, the plan and its access check; anything else misses and takes the
full path (and its errors). Results are checked against numpy on hits and misses, and are
the same bits for one thread and two."""
import importlib
import threading

import numpy as np
import pytest

import libpypto as pypto
from libpypto.errors import PyptoError, UsageError

pytestmark = pytest.mark.needs_cc

jitmod = importlib.import_module("libpypto.jit")     # libpypto.jit names the decorator


@pytest.fixture
def slow_calls(monkeypatch):
    """Counts the calls that take the full path (a call-plan cache miss)."""
    count = {"n": 0}
    real = jitmod._slow_call

    def counting(*args, **kwargs):
        count["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(jitmod, "_slow_call", counting)
    return count


def make_kernels():
    @pypto.jit
    def axpy(x: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
             y: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32],
             out: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32], a: float = 2.0):
        pypto.set_vec_tile_shapes(8, 64)
        out[:] = x * a + y

    @pypto.jit
    def anyplus(x: pypto.Tensor([8, 16]), out: pypto.Tensor([8, 16])):   # dtype from the argument
        pypto.set_vec_tile_shapes(8, 16)
        out[:] = x + x

    return axpy, anyplus


def data(rows: int, seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 64)).astype(dtype)
    y = rng.standard_normal((rows, 64)).astype(dtype)
    return x, y, np.zeros_like(x)


def check_axpy(x, y, out, a=2.0):
    np.testing.assert_allclose(out, x * np.float32(a) + y, rtol=1e-6, atol=1e-6)


def test_a_repeated_call_hits_and_stays_correct(slow_calls):
    axpy, _ = make_kernels()
    x, y, out = data(24)
    axpy(x, y, out)
    check_axpy(x, y, out)
    assert slow_calls["n"] == 1 and len(axpy._calls) == 1
    for seed in (1, 2, 3):                         # new data in the same arrays: hits
        x[...], y[...], out[...] = data(24, seed)
        axpy(x, y, out)
        check_axpy(x, y, out)
    x2, y2, out2 = data(24, 9)                     # other arrays of the same shape: a hit
    axpy(x2, y2, out2)
    check_axpy(x2, y2, out2)
    assert slow_calls["n"] == 1 and axpy.compiles == 1


def test_a_new_size_binding_or_constant_misses(slow_calls):
    axpy, _ = make_kernels()
    for rows in (16, 37, 16, 37):                  # two bindings of the DYNAMIC rows
        x, y, out = data(rows, rows)
        axpy(x, y, out)
        check_axpy(x, y, out)
    assert slow_calls["n"] == 2 and axpy.compiles == 1 and len(axpy._calls) == 2
    x, y, out = data(16, 5)
    axpy(x, y, out, 3.0)                           # a new constant: a new artifact and plan
    check_axpy(x, y, out, 3.0)
    axpy(x, y, out, a=3.0)                         # the same constant by keyword: a new key
    check_axpy(x, y, out, 3.0)
    assert slow_calls["n"] == 4 and axpy.compiles == 2
    axpy(x, y, out, 3.0)
    assert slow_calls["n"] == 4


def test_a_new_dtype_misses(slow_calls):
    import ml_dtypes
    _, anyplus = make_kernels()
    dtypes = (np.float32, np.float16, ml_dtypes.bfloat16)   # bf16: no buffer protocol export
    for dtype in dtypes + dtypes:
        x = (np.arange(8 * 16, dtype=np.float32).reshape(8, 16) / 7).astype(dtype)
        out = np.zeros_like(x)
        anyplus(x, out)
        np.testing.assert_array_equal(out.astype(np.float64),
                                      (x + x).astype(np.float64))
    assert slow_calls["n"] == 3 and anyplus.compiles == 3
    with pytest.raises(UsageError, match="dims"):  # rank 1: a new key, and refused
        anyplus(np.zeros(16, np.float32), np.zeros(16, np.float32))


def test_bad_calls_still_raise_after_a_cached_call():
    axpy, _ = make_kernels()
    x, y, out = data(16)
    axpy(x, y, out)
    axpy(x, y, out)
    with pytest.raises(UsageError, match="shape"):
        axpy(x, y, np.zeros((8, 64), np.float32))  # rows disagree
    with pytest.raises(UsageError, match="dtype"):
        axpy(x, y, np.zeros((16, 64), np.float64))
    with pytest.raises(UsageError, match="dims"):
        axpy(x, y, np.zeros((16, 64, 1), np.float32))
    with pytest.raises(UsageError, match="missing"):
        axpy(x, y)
    with pytest.raises(UsageError, match="shape"):
        axpy(x, y[:8], out)
    out[...] = 0
    axpy(x, y, out)                                # and the cached call still works
    check_axpy(x, y, out)


def test_views_and_read_only_arrays_take_the_full_path(slow_calls):
    axpy, _ = make_kernels()
    x, y, out = data(32)
    axpy(x, y, out)
    big = np.zeros((32, 128), np.float32)
    axpy(x, y, big[:, ::2])                        # a strided output: copied back
    check_axpy(x, y, big[:, ::2])
    np.testing.assert_array_equal(big[:, 1::2], 0)
    fx = np.asfortranarray(x)
    axpy(fx, y, out)
    check_axpy(x, y, out)
    ro = out.copy()
    ro.flags.writeable = False
    with pytest.raises(PyptoError, match="read-only"):
        axpy(x, y, ro)                             # refused before anything runs
    np.testing.assert_array_equal(ro, out)
    xr = x.copy()
    xr.flags.writeable = False                     # a read-only input is fine, and cached
    for _ in range(2):
        out[...] = 0
        axpy(xr, y, out)
        check_axpy(x, y, out)
    assert slow_calls["n"] == 5 and len(axpy._calls) == 2
    with pytest.raises(PyptoError, match="read-only"):
        axpy(xr, y, ro)                            # still refused with a cached input
    assert slow_calls["n"] == 6


def test_one_thread_and_two_give_the_same_bits():
    @pypto.jit
    def softmax(x: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32],
                y: pypto.Tensor[[pypto.DYNAMIC, 256], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 256)
        m = pypto.amax(x, dim=-1, keepdim=True)
        e = pypto.exp(x - m)
        y[:] = e / pypto.sum(e, dim=-1, keepdim=True)

    x = np.random.default_rng(3).standard_normal((200, 256), dtype=np.float32)
    outs = []
    for threads in (1, 2, 1, 2):
        y = np.zeros_like(x)
        softmax.options["threads"] = threads
        softmax(x, y)
        outs.append(y.tobytes())
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert len(set(outs)) == 1
    timeline = softmax.last_run
    assert len(timeline["start_ns"]) == 25 and (timeline["end_ns"] >= timeline["start_ns"]).all()


def test_concurrent_calls_of_one_kernel_are_each_correct():
    axpy, _ = make_kernels()
    x, y, out = data(64)
    axpy(x, y, out)
    errors = []

    def worker(seed: int) -> None:
        try:
            for k in range(50):
                xs, ys, outs = data(64, seed * 100 + k)
                axpy(xs, ys, outs)
                check_axpy(xs, ys, outs)
        except Exception as exc:          # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_tiny_plans_run_on_the_calling_thread():
    axpy, _ = make_kernels()
    x, y, out = data(8)
    axpy(x, y, out)
    (entry,) = axpy._calls.values()
    assert entry.tiny and set(axpy.last_run["core"].tolist()) == {0}
    xb, yb, outb = data(4096)                 # 1 MiB per tensor: worth a second thread
    axpy.options["threads"] = 2
    axpy(xb, yb, outb)
    check_axpy(xb, yb, outb)
    assert not axpy._calls[next(reversed(axpy._calls))].launcher.plan.tiny


def test_the_last_plan_runs_in_one_foreign_call_and_any_difference_misses(monkeypatch):
    """A call like the last one takes the fast call (no signature in Python: here it would
    raise); another size, dtype, layout, a resized or read-only array or an array-like
    falls through to the key's lookup and the full path, with their results and errors."""
    axpy, _ = make_kernels()
    x, y, out = data(24)
    axpy(x, y, out)
    fast = axpy._fast
    assert fast is not None and fast.nargs == 3
    real = jitmod._call_signature

    def no_signature(*args, **kwargs):
        raise AssertionError("the fast call should have run")

    monkeypatch.setattr(jitmod, "_call_signature", no_signature)
    out[...] = 0
    axpy(x, y, out)
    check_axpy(x, y, out)
    assert axpy.last_run is not None and len(axpy.last_run["start_ns"]) == 3
    monkeypatch.setattr(jitmod, "_call_signature", real)
    class Wrap:                                      # an array-like
        def __array__(self, dtype=None, copy=None):
            return x

    for args in (data(16), (np.asfortranarray(x), y, np.zeros_like(x)),
                 (Wrap(), y, np.zeros_like(x))):
        axpy(*args)
        check_axpy(np.asarray(args[0], np.float32), args[1], args[2])
    with pytest.raises(UsageError, match="dtype"):
        axpy(*(a.astype(np.float64) for a in data(24)))
    grown = x.copy()
    grown.resize((32, 64), refcheck=False)           # same object, new size
    out2 = np.zeros_like(grown)
    axpy(grown, np.zeros_like(grown), out2)
    check_axpy(grown, np.zeros_like(grown), out2)
    ro = out.copy()
    ro.flags.writeable = False
    axpy(x, y, out)                                  # the fast call is this plan's again
    with pytest.raises(PyptoError, match="read-only"):
        axpy(x, y, ro)
