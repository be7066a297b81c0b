"""The real-model kernels of examples/models/ (issue 11, item 7), run on both backends against
their numpy references (each module's check() raises on a mismatch); those whose shapes are
declared in the annotations also go through the pipe (trace, lower, schedule, emit, run)."""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import libpypto as pypto
from libpypto.frontend.tensor import STATIC
from libpypto.runtime import data as D

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.py"))
# written here from the mathematics: every dim declared, so the op file traces on its own
PIPED = {"glm_attention_pre_quant": "quant_attention_pre_kernel",
         "mla_prolog": "mla_prolog_kernel",
         "qwen3_next_gated_delta_rule": "chunk_gated_delta_rule_kernel"}


def load(name):
    spec = importlib.util.spec_from_file_location(f"model_{name}",
                                                  ROOT / "examples" / "models" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the reference's device options are warned
        spec.loader.exec_module(m)
    return m


def _cases():
    """(name, backend) for every example; the C runs of the three large kernels are slow
    (their first compile is 3-5 s of CPU), their numpy runs stay in make check."""
    for name in MODELS:
        yield pytest.param(name, "numpy", id=f"numpy-{name}")
        marks = [pytest.mark.needs_cc] + ([pytest.mark.slow] if name in PIPED else [])
        yield pytest.param(name, "c", marks=marks, id=f"c-{name}")


@pytest.mark.parametrize("name,backend", _cases())
def test_model_kernel_matches_numpy(name, backend):
    m = load(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.check(backend)


@pytest.mark.slow          # 2-10 s each; the kernels themselves are checked in process above
@pytest.mark.parametrize("name", sorted(PIPED))
@pytest.mark.parametrize("backend", [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"])
def test_model_kernel_through_the_pipe(name, backend):
    """The op file traced as pypto-trace does (STATIC dims bound from the data), lowered,
    scheduled, emitted and run; pypto-run's own check against the tensor level passes and
    the outputs match the example's numpy reference."""
    m = load(name)
    kernel = getattr(m, PIPED[name])
    ins, outs = m.make_inputs()
    arrays = dict(zip([n for n, _ in kernel.tensor_params], ins + outs))
    static = {f"{n}_{axis}": int(arrays[n].shape[axis]) for n, spec in kernel.tensor_params
              for axis, d in enumerate(spec.shape) if d is STATIC}
    path = str(ROOT / "examples" / "models" / f"{name}.py")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = pypto.trace(path, kernel=PIPED[name], bind=static)
        code = pypto.emit(pypto.schedule(pypto.lower(doc)), backend)
        rec = pypto.run(code, backend=backend, inputs=arrays)
    a = rec.body[0].attrs
    assert a["verdict"] == "pass", a["checks"]
    got = {o["name"]: np.frombuffer(o["data"], dtype=D.np_dtype(o["dtype"])).reshape(o["shape"])
           for o in a["outputs"]}
    out_names = [n for n, _ in kernel.tensor_params][len(ins):]
    m.compare([got[n] for n in out_names], _want(m, name, ins, outs))


@pytest.mark.slow          # 5-10 s each: every pass's result interpreted on numpy
@pytest.mark.parametrize("name", sorted(PIPED))
def test_model_kernel_agrees_at_every_level(name):
    """pypto-run --check-levels on the example's own data: the tile, block and exec levels
    after each pass agree with the tensor level."""
    from libpypto import driver
    m = load(name)
    kernel = getattr(m, PIPED[name])
    ins, outs = m.make_inputs()
    names = [n for n, _ in kernel.tensor_params]
    arrays = dict(zip(names, ins + outs))
    dims = [(f"{n}_{axis}", int(arrays[n].shape[axis]), d) for n, spec in kernel.tensor_params
            for axis, d in enumerate(spec.shape) if not isinstance(d, int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = driver.trace(str(ROOT / "examples" / "models" / f"{name}.py"), kernel=PIPED[name],
                           bind={k: v for k, v, d in dims if d is STATIC})
        rows = driver.check_levels(doc, inputs=dict(zip(names, ins)),
                                   bind={k: v for k, v, _ in dims})
    assert len(rows) > 3 and all(r["verdict"] == "pass" for r in rows[1:]), rows


def _want(m, name, ins, outs):
    if name == "glm_attention_pre_quant":
        return m.reference(*ins, q_size=outs[0].shape[1], kv_size=outs[1].shape[1])
    if name == "mla_prolog":
        return m.reference(*ins, heads=outs[0].shape[1])
    return m.reference(*ins)


def test_glm_gate_reference_sizes():
    """hidden 5120, 160 experts, 70 tokens (the reference's sizes; a tail block of 6)."""
    load("glm_gate").check("c", bs=70, ne=160, h_num=5120)


def test_select_experts_grouped():
    load("glm_select_experts").check("c", bs=7, topk_group=4, num_expert_group=8)


@pytest.mark.needs_cc
def test_gated_delta_rule_whole_chunks_and_empty_sequence():
    """Sequences of exactly one and two chunks, and one of no tokens (its state passes
    through unchanged)."""
    m = load("qwen3_next_gated_delta_rule")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = m.check("c", seqs=(16, 0, 32))
    ins, _ = m.make_inputs((16, 0, 32))
    np.testing.assert_allclose(outs[1][1], ins[5][1], rtol=0, atol=0)


@pytest.mark.needs_cc
def test_pre_quant_int8_saturates():
    """Activations scaled past the int8 range saturate to -128 / 127 as the reference's
    SaturationMode.ON cast does, and the outputs still match."""
    m = load("glm_attention_pre_quant")
    ins, outs = m.make_inputs(bs=3)
    ins[4] = m._bf16(np.full(ins[4].shape, 400.0))          # x_scale: far past +-127
    want = m.reference(*ins, q_size=outs[0].shape[1], kv_size=outs[1].shape[1])
    assert (np.abs(want["xq"].astype(int)) >= 127).mean() > 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.quant_attention_pre_kernel.options["backend"] = "c"
        m.quant_attention_pre_kernel(*ins, *outs)
    m.compare(outs, want)
