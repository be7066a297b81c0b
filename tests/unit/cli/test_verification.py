"""Verification that cannot be blinded, and says where (libpypto/runtime/data.py).

The tolerance of an output element is its own: relative to the reference element plus a
floor from the dtype (or from the magnitudes the element was computed from), never from a
statistic of the whole output, so one huge element cannot hide a wrong one elsewhere. A
mismatch names its first index and both values.
"""
from __future__ import annotations

import ast
import re

import ml_dtypes
import numpy as np
import pytest

import libpypto as pypto
from libpypto.analysis import bind as B
from libpypto.runtime import data as D
from libpypto.runtime.interp import run_tensor

from toolrun import ADD, EX, ROOT, RUN_FAST, SOFTMAX, ok

BF16 = np.dtype(ml_dtypes.bfloat16)


def reference(path: str, bind: dict, inputs: dict, seed: int = 0):
    """The document, every parameter array (inputs given or generated) and the reference."""
    doc = pypto.trace(path)
    env = B.bind(doc, inputs, bind)
    arrays = D.prepare(doc, inputs, env, seed)
    want = {k: v.copy() for k, v in arrays.items()}
    run_tensor(doc, want, env)
    return doc, env, arrays, want


def test_one_huge_input_does_not_hide_a_wrong_element():
    x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    x[0, 0] = 1e12
    _, _, _, want = reference(ADD, {}, {"x": x})
    got = want["out"].copy()
    got[12, 40] += 1000.0
    c = D.compare("out", got, want["out"])
    assert not c["ok"] and c["mismatches"] == 1
    assert c["first"] == [12, 40] and c["want"] == float(want["out"][12, 40])
    # and the huge element itself is checked relative to its own size
    got = want["out"].copy()
    got[0, 0] *= 1 + 1e-6
    assert D.compare("out", got, want["out"])["ok"]


def test_one_huge_input_of_a_matmul_widens_only_what_it_touches():
    """With magnitudes, the elements computed from the huge input may carry its rounding;
    the others keep a tight tolerance."""
    path = str(EX / "matmul.py")
    a = np.random.default_rng(1).standard_normal((64, 512)).astype(np.float32)
    a[3, 7] = 1e12
    doc, env, arrays, want = reference(path, {}, {"a": a})
    mag = D.magnitudes(doc, arrays, env)["c"]
    tol = D.tolerance(want["c"], mag)
    assert tol[3].min() > 1e5                   # row 3 was computed from the huge element
    others = np.delete(tol, 3, axis=0)
    assert others.max() < 1e-2
    got = want["c"].copy()
    got[10, 20] += 0.5                           # wrong by less than row 3's tolerance
    c = D.compare("c", got, want["c"], mag)
    assert not c["ok"] and c["first"] == [10, 20]


def test_the_tolerance_is_per_element():
    want = np.array([1e6, 1.0, 1e-3, 0.0], np.float32)
    tol = D.tolerance(want)
    rtol, _, _, floor = D.TOLERANCE["f32"]
    np.testing.assert_allclose(tol, rtol * np.abs(want.astype(np.float64)) + floor)
    # nothing about one element changes another's tolerance
    want2 = want.copy()
    want2[0] = 1e30
    assert (D.tolerance(want2)[1:] == tol[1:]).all()


@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16])
def test_magnitudes_set_the_floor_where_they_are_known(dt):
    want = np.zeros(4, dt)
    mag = np.array([0.0, 1.0, 1e4, np.inf])
    rtol, atol, mtol, floor = D.TOLERANCE[{np.float32: "f32", np.float16: "f16"}.get(dt, "bf16")]
    want_tol = [floor, max(floor, atol + mtol), max(floor, atol + mtol * 1e4), floor]
    np.testing.assert_allclose(D.tolerance(want, mag), want_tol)
    assert D.tolerance(want, np.array([0.0, 0.0, 1e8, 0.0]))[2] > floor * 100


def test_specials_and_exact_dtypes():
    nan, inf = np.nan, np.inf
    w = np.array([nan, inf, -inf, 1.0], np.float32)
    assert D.compare("y", w.copy(), w)["ok"]
    bad = D.compare("y", np.array([1.0, inf, inf, nan], np.float32), w)
    assert bad["mismatches"] == 3 and bad["first"] == [0]
    ints = D.compare("i", np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]]))
    assert not ints["ok"] and ints["first"] == [1, 1] and ints["got"] == 4 and ints["want"] == 5


@pytest.mark.needs_cc
def test_a_mismatch_is_reported_with_its_first_index(cli, monkeypatch):
    """With no tolerance at all, the C and numpy orders of a softmax disagree in the last
    bits: pypto-run names the first mismatch, both values and the tolerance, and exits 1."""
    monkeypatch.setitem(D.TOLERANCE, "f32", (0.0, 0.0, 0.0, 0.0))
    p = cli("run", EX / "softmax.py", "--bind", "x_0=16", "--threads", "1", "-o", "-")
    err = p.stderr.decode().splitlines()
    assert p.returncode == 1, err
    line = next(ln for ln in err if ln.startswith("pypto-run: y: "))
    assert " mismatches; first at [" in line and "]: got " in line and ", want " in line
    assert line.endswith(" (tolerance 0)")
    assert err[-1] == "pypto-run: error: outputs differ from the numpy reference (y)"


@pytest.mark.slow
@pytest.mark.needs_cc
def test_the_examples_pass_with_magnitudes():
    """The magnitude floor is tight enough to matter and loose enough for real rounding:
    the C runs of the examples with the most cancellation pass with it."""
    for name in ("attention_proj", "matmul", "sdpa", "layernorm"):
        path = str(EX / f"{name}.py")
        text = (EX / f"{name}.py").read_text()
        bind = ast.literal_eval(re.search(r"^EXAMPLE = (.*)$", text, re.M).group(1))["bind"]
        doc, env, arrays, want = reference(path, bind, {}, seed=1)
        rec = pypto.run(doc, bind=bind, seed=1, threads=2)
        mags = D.magnitudes(doc, arrays, env)
        for o in rec.body[0].attrs["outputs"]:
            got = np.frombuffer(o["data"], D.np_dtype(o["dtype"])).reshape(o["shape"])
            c = D.compare(o["name"], got, want[o["name"]], mags[o["name"]])
            assert c["ok"], (name, c)


def test_pypto_run_passes_on_an_input_with_a_huge_element(cli, tmp_path):
    x = np.random.default_rng(3).standard_normal((256, 512)).astype(np.float32)
    x[5, 5] = 1e12
    np.save(tmp_path / "x.npy", x)
    p = ok(cli("run", ADD, "--input", f"x={tmp_path / 'x.npy'}", *RUN_FAST, "-o", "-"))
    assert "add: pass" in p.stderr.decode()


@pytest.mark.needs_cc
def test_pypto_prof_of_a_failing_run(cli, monkeypatch):
    """pypto-prof runs an earlier level as pypto-run would: the profile is printed, the
    mismatch named, and the exit status is 1."""
    monkeypatch.setitem(D.TOLERANCE, "f32", (0.0, 0.0, 0.0, 0.0))
    p = cli("prof", EX / "softmax.py", "--bind", "x_0=16", "--threads", "1")
    assert p.returncode == 1
    assert p.stdout.decode().startswith("kernel softmax: fail, c backend, 1 thread")
    err = p.stderr.decode().splitlines()
    assert err[0].startswith("pypto-prof: y: ") and " mismatches; first at [" in err[0]
    assert err[-1] == ("pypto-prof: error: outputs differ from the numpy reference (y); the "
                       "profile is of that run")


@pytest.mark.needs_cc
def test_a_matmul_of_large_inputs_passes_on_the_magnitudes_of_its_terms():
    """Inputs of scale 1e3: each element of a @ b sums 512 products of ~1e6, so its rounding
    is ~1e6 * 512 * eps whatever its own size. pypto-run's verification floors each element
    by the magnitude of its terms and passes; the constant dtype floor alone would report
    false mismatches where the sum cancels."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((64, 512)) * 1e3).astype(np.float32)
    b = (rng.standard_normal((512, 256)) * 1e3).astype(np.float32)
    rec = pypto.run(pypto.trace(str(EX / "matmul.py")), inputs={"a": a, "b": b}, seed=1)
    assert rec.body[0].attrs["verdict"] == "pass", rec.body[0].attrs["checks"]
    o = rec.body[0].attrs["outputs"][0]
    got = np.frombuffer(o["data"], np.float32).reshape(o["shape"])
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    assert not D.compare("c", got, want)["ok"]          # without magnitudes


def test_check_levels_prints_a_row_per_pass(cli, tmp_path):
    p = ok(cli("run", SOFTMAX, "--bind", "x_0=20", "--check-levels", *RUN_FAST,
               "--dump-tensors", tmp_path / "t", "-o", tmp_path / "r"))
    err = p.stderr.decode().splitlines()
    assert "pypto-run: wrote 5 tensors to " + str(tmp_path / "t") in err
    rows = [ln.split()[1:4] for ln in err
            if ln.split()[1:2] in (["tile"], ["block"], ["exec"])]
    assert [r[1] for r in rows] == ["tensor-to-tile", "assign-memory", "fuse", "mix-fuse",
                                    "l1-reuse", "nbuffer", "forward", "cse", "dce",
                                    "ooo-schedule", "alloc", "insert-sync", "make-exec",
                                    "gm-reuse"]
    assert all(r[2] == "pass" for r in rows)
    assert "pypto-run: softmax: pass (y: max abs err" in p.stderr.decode()
    assert len(list((tmp_path / "t").iterdir())) == 5


def test_check_levels_names_the_diverging_level_and_writer(cli, files, tmp_path):
    from libpypto.driver import dump_ir, read_ir
    doc = read_ir(str(files["exec"]))
    for op in doc.walk():          # a hand-edited exec file: the division became a product
        if op.name == "tdiv":
            op.name = "tmul"
    bad = tmp_path / "bad.exec"
    bad.write_bytes(dump_ir(doc, text=True))
    msg = one_error_line_of(cli("run", bad, "--bind", "x_0=20", "--check-levels", *RUN_FAST,
                                "-o", tmp_path / "r"), 1)
    assert msg.startswith("pypto-run: error: the exec level after (the given exec file) "
                          "diverges from the tensor level: y: ")
    assert not (tmp_path / "r").exists()


def test_check_levels_refuses_a_pro_kernel(cli):
    p = cli("run", ROOT / "examples" / "pro" / "vadd.py", "--check-levels", "--bind", "x_0=64")
    assert p.returncode == 2
    assert "--check-levels and --dump-tensors apply to Tensor-mode kernels" in p.stderr.decode()


def one_error_line_of(p, code: int) -> str:
    err = p.stderr.decode()
    assert p.returncode == code, err
    assert "Traceback" not in err
    return err.splitlines()[-1]
