"""ooo-schedule on every example, lowered for a2: the simulated makespan with the pass is
never longer than without it, and the host computes the same bits either way."""
from __future__ import annotations

import functools
import importlib.util
import pathlib

import pytest

import libpypto as pypto
from libpypto.analysis import bind as B
from libpypto.ir.text import print_doc
from libpypto.passes import DEFAULT_PIPELINE

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
WITHOUT = DEFAULT_PIPELINE.replace("ooo-schedule", "ooo-schedule{enable=false}")


@functools.lru_cache(maxsize=None)
def _bind(name: str) -> dict:
    spec = importlib.util.spec_from_file_location(f"ooo_{name}", ROOT / "examples" / f"{name}.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return dict(m.EXAMPLE["bind"])


@functools.lru_cache(maxsize=None)
def _traced(name: str):
    return pypto.trace(str(ROOT / "examples" / f"{name}.py"), target="a2")


def lowered(name: str, pipeline: str):
    return pypto.lower(_traced(name), pipeline, target="a2")      # passes copy their input


def cycles(doc, name: str) -> int:
    from libpypto.driver import simulate
    return simulate(doc, "a2", B.bind(doc, {}, _bind(name)))["cycles"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_simulated_makespan_is_never_longer(name):
    with_, without = lowered(name, DEFAULT_PIPELINE), lowered(name, WITHOUT)
    assert cycles(with_, name) <= cycles(without, name)


def test_reordering_shortens_flash_attention():
    """On the unfused form (mix-fuse off): the mixed program's sections keep their order."""
    name = "flash_attention"
    unmixed = DEFAULT_PIPELINE.replace("mix-fuse", "mix-fuse{enable=false}")
    assert cycles(lowered(name, unmixed), name) < \
        cycles(lowered(name, unmixed.replace("ooo-schedule", "ooo-schedule{enable=false}")),
               name)


@pytest.mark.slow
@pytest.mark.needs_cc
@pytest.mark.parametrize("name", EXAMPLES)
def test_host_results_are_bit_identical(name):
    with_, without = lowered(name, DEFAULT_PIPELINE), lowered(name, WITHOUT)
    if print_doc(with_).split("\n", 3)[3] == print_doc(without).split("\n", 3)[3]:
        return          # the pass changed nothing here: the same program
    shas = []
    for doc in (with_, without):
        rec = pypto.run(doc, bind=_bind(name), backend="c", threads=2, seed=1)
        shas.append([o["sha256"] for o in rec.body[0].attrs["outputs"]])
    assert shas[0] == shas[1]
