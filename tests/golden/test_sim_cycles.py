"""Simulated cycles of every example on a2 (Tensor mode and Pro), compared with
sim_cycles_a2.expected: a lowering or cost-model change that slows (or speeds) a kernel
shows in review as a diff of this file. `make golden` (pytest tests/golden
--update-goldens) rewrites it; read the diff before keeping it.

Each line: the example, its simulated makespan in cycles and microseconds (launch
included), the bound the simulator names and the busiest resource. The sizes are the
examples' own (EXAMPLE), the run is the library's simulate (no host run needed)."""
from __future__ import annotations

import difflib
import importlib.util
import pathlib

import pytest

from libpypto.analysis import bind as B
from libpypto.driver import lower, simulate, trace

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXPECTED = HERE / "sim_cycles_a2.expected"
FILES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "examples/pro").glob("*.py"))


def example(path):
    spec = importlib.util.spec_from_file_location(f"simex_{path.stem}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.EXAMPLE


def line(path) -> str:
    ex = example(path)
    if path.parent.name == "pro":
        doc = trace(str(path), kernel=ex.get("kernel"), bind=ex.get("bind", {}),
                    consts=ex.get("const"), target="a2")
        r = simulate(doc, "a2", dict(ex.get("bind", {})), block_dim=ex.get("block_dim", 1))
    else:
        doc = lower(trace(str(path), target="a2"), target="a2")
        r = simulate(doc, "a2", B.bind(doc, {}, ex["bind"]))
    name = path.relative_to(ROOT).as_posix()
    return f"{name:40} {r['cycles']:>9} cycles {r['us']:>10.3f} us  bound {r['bound']:8} " \
           f"busiest {r['busiest']}"


def test_simulated_cycles_of_every_example_on_a2(request):
    actual = "".join(line(p) + "\n" for p in FILES)
    if request.config.getoption("--update-goldens"):
        EXPECTED.write_text(actual)
        return
    if not EXPECTED.exists():
        pytest.fail(f"no {EXPECTED.name}: run `make golden` and review it", pytrace=False)
    want = EXPECTED.read_text()
    if actual != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), actual.splitlines(True),
                                            EXPECTED.name, "actual"))
        pytest.fail(f"simulated cycles changed:\n{diff}", pytrace=False)
