"""The real-model kernels of examples/models/ (issue 11, item 7), each as the reference writes
it with only the import changed, run on both backends against its numpy reference (each
module's check() raises on a mismatch)."""
from __future__ import annotations

import importlib.util
import pathlib
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = sorted(p.stem for p in (ROOT / "examples" / "models").glob("*.py"))


def load(name):
    spec = importlib.util.spec_from_file_location(f"model_{name}",
                                                  ROOT / "examples" / "models" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the reference's device options are warned
        spec.loader.exec_module(m)
    return m


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("backend", [pytest.param("c", marks=pytest.mark.needs_cc), "numpy"])
def test_model_kernel_matches_numpy(name, backend):
    m = load(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.check(backend)


def test_glm_gate_reference_sizes():
    """hidden 5120, 160 experts, 70 tokens (the reference's sizes; a tail block of 6)."""
    load("glm_gate").check("c", bs=70, ne=160, h_num=5120)


def test_select_experts_grouped():
    load("glm_select_experts").check("c", bs=7, topk_group=4, num_expert_group=8)
