"""pypto.function, pypto.frontend.function, pass_verify_print / pass_verify_save and
set_verify_golden_data (frontend/verify.py): the probes act in pypto's pass verify
(driver.check_levels, pypto-run --check-levels / --dump-tensors) and nowhere else."""
import numpy as np
import pytest

import libpypto as pypto
from libpypto import driver
from libpypto.errors import CompileError


@pypto.frontend.function
def twice(t):
    return t * 2.0


def kernel():
    @pypto.jit(verify_options={"enable_pass_verify": True})
    def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 32)
        with pypto.function("main", x, y):
            for i in pypto.loop(3):
                t = twice(x) + i
                pypto.pass_verify_print("t[0, :2] at", i, pypto.view(t, [1, 2], [0, 0]),
                                        cond=(i == 1))
                pypto.pass_verify_save(t, "t_loop_$idx", idx=i)
                pypto.pass_verify_save(t, "../../escape/$idx", cond=(i == 2), idx=i)
                y[:] = t
    return k


def test_probes_act_in_the_pass_verify(tmp_path, capsys):
    with pytest.warns(UserWarning) as rec:
        doc = kernel().trace()
    said = [str(w.message) for w in rec]
    assert any("a JIT call does not print" in t for t in said)
    assert any("a JIT call does not save" in t for t in said)
    x = np.arange(256, dtype=np.float32).reshape(8, 32)
    rows = driver.check_levels(doc, {"x": x}, dump=str(tmp_path))
    assert all(r["verdict"] in ("reference", "pass") for r in rows)
    err = capsys.readouterr().err
    assert err.count("pass_verify_print") == 1 and "t[0, :2] at 1 [[1. 3.]]" in err
    for i in range(3):
        np.testing.assert_array_equal(np.load(tmp_path / f"t_loop_{i}.npy"), x * 2 + i)
    assert (tmp_path / "_.._escape_2.npy").exists()          # never outside the directory
    assert not (tmp_path.parent.parent / "escape").exists()


def test_goldens_are_compared(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = kernel().trace()
    x = np.ones((8, 32), np.float32)
    try:
        pypto.set_verify_golden_data(goldens=[None, x * 2 + 2])
        rows = driver.check_levels(doc, {"x": x})
        assert rows[1]["after"] == "golden" and rows[1]["verdict"] == "pass"
        pypto.set_verify_golden_data(goldens=[None, x * 2])
        assert driver.check_levels(doc, {"x": x})[1]["verdict"] == "fail"
    finally:
        pypto.set_verify_golden_data()
    assert driver.check_levels(doc, {"x": x})[1]["after"] != "golden"


def test_function_rules():
    with pytest.raises(CompileError, match="write the body as a @pypto.jit kernel"):
        pypto.function("main")
    with pytest.raises(CompileError, match="call it from a @pypto.jit kernel"):
        twice(1)

    @pypto.frontend.function
    def again(t):
        return again(t)

    for body, match in ((lambda x: twice(t=x), "by position only"),
                        (again, "cannot call itself")):
        @pypto.jit
        def k(x: pypto.Tensor([8, 32], pypto.DT_FP32), y: pypto.Tensor([8, 32], pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 32)
            y[:] = body(x)
        with pytest.raises(CompileError, match=match):
            k.trace()
