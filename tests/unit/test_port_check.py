"""scripts/port_check.py without the reference: the import swap, the stand-ins for modules
that are not installed, sibling modules, and the verdicts, on small files written here."""
from __future__ import annotations

import importlib.util
import pathlib
import sys
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("port_check", ROOT / "scripts" / "port_check.py")
P = importlib.util.module_from_spec(spec)
spec.loader.exec_module(P)


def test_swap_imports_rewrites_only_pypto_lines():
    src = textwrap.dedent("""\
        import os
        import pypto
        import pypto.frontend as fe
        from pypto import DT_FP32
        from pypto.frontend import jit
        import pyptox
        # import pypto in a comment stays
        def f():
            import pypto
    """)
    out, changed = P.swap_imports(src)
    assert changed == [2, 3, 4, 5, 9]
    lines = out.splitlines()
    assert lines[1] == "import libpypto as pypto"
    assert lines[2] == "import libpypto.frontend as fe"
    assert lines[3] == "from libpypto import DT_FP32"
    assert lines[4] == "from libpypto.frontend import jit"
    assert lines[5] == "import pyptox" and lines[6].startswith("# import pypto")
    assert lines[8] == "    import libpypto as pypto"


KERNEL = '''\
from dataclasses import dataclass
from typing import Optional

import torch_npu                               # not installed anywhere pypto runs: stand-ins
from torch_npu._dynamo import allow_in_graph
from utils.get_format import get_format
from helper import SCALE                       # a sibling file, loaded with its import swapped

import pypto


@dataclass
class Cfg:
    rows: int
    dev: torch_npu.tensor = None


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 4})
def scale_kernel(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
                 y: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), cfg):
    pypto.set_vec_tile_shapes(cfg.rows, 8)
    y[:] = x * SCALE


@allow_in_graph
def torch_wrapper(a: torch_npu.Tensor, b: Optional[torch_npu.Tensor]):
    return torch_npu.npu_format_cast(a, 29)


lib = torch_npu.library.Library("pypto", "FRAGMENT")


@torch_npu.library.impl(lib, "scale", "NPU")
def registered(a):
    return a
'''

HELPER = "import pypto\n\nSCALE = 3.0 if pypto.DT_FP32 is not None else 0.0\n"


def test_load_runs_a_reference_style_file(tmp_path):
    (tmp_path / "kernel.py").write_text(KERNEL)
    (tmp_path / "helper.py").write_text(HELPER)
    before = set(sys.modules)
    ns, changed = P.load(tmp_path / "kernel.py")
    assert changed == [9]
    assert not {"torch_npu", "utils", "helper"} & set(sys.modules)
    assert {m for m in set(sys.modules) - before
            if not m.startswith("libpypto")} <= {"port_check_kernel"}
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    y = np.zeros_like(x)
    ns["scale_kernel"].options["backend"] = "numpy"
    ns["scale_kernel"](x, y, ns["Cfg"](rows=2))
    np.testing.assert_array_equal(y, 3 * x)
    with pytest.raises(TypeError, match="not installed"):
        np.asarray(ns["torch_npu"].zeros(3))


def test_stand_ins_do_not_leak_into_later_imports(tmp_path):
    (tmp_path / "k.py").write_text("import torch_npu\nimport pypto\n")
    P.load(tmp_path / "k.py")
    assert P._Finder not in [type(f) for f in sys.meta_path]
    assert not any(isinstance(m, P._AbsentModule) for m in list(sys.modules.values()))
    with pytest.raises(ImportError):
        import torch_npu                                         # noqa: F401


def test_torch_is_a_stand_in_even_where_installed(tmp_path, monkeypatch):
    """A CPU torch would refuse the files' NPU registrations: torch is always a stand-in
    while a reference file runs, and whatever torch was imported before is put back."""
    real = type(sys)("torch")
    monkeypatch.setitem(sys.modules, "torch", real)
    (tmp_path / "k.py").write_text("import torch\nimport pypto\n"
                                   "LIB = torch.library.Library('pypto', 'FRAGMENT')\n")
    ns, _ = P.load(tmp_path / "k.py")
    assert isinstance(ns["torch"], P._AbsentModule) and isinstance(ns["LIB"], P.Absent)
    assert sys.modules["torch"] is real


def test_main_refuses_a_directory_that_is_not_a_checkout(tmp_path, capsys):
    assert P.main([str(tmp_path)]) == 2
    assert "not a checkout" in capsys.readouterr().err
    assert P.main(["--list"]) == 0
    assert "gated_delta_rule" in capsys.readouterr().out


def test_check_reports_error_and_mismatch(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bad.py").write_text("import pypto\nraise ValueError('boom')\n")
    (tmp_path / "models" / "ok.py").write_text("import pypto\nVALUE = 2.0\n")
    monkeypatch.setitem(P.CASES, "bad", ("models/bad.py", lambda ns, be: []))
    monkeypatch.setitem(P.CASES, "off", ("models/ok.py",
                                         lambda ns, be: [("v", *P._err(ns["VALUE"], 2.5, 0, 0.1))]))
    monkeypatch.setitem(P.CASES, "on", ("models/ok.py",
                                        lambda ns, be: [("v", *P._err(ns["VALUE"], 2.0, 0, 0))]))
    bad, off, on = (P.check(tmp_path, n) for n in ("bad", "off", "on"))
    assert (bad["verdict"], bad["detail"]) == ("error", "ValueError: boom")
    assert off["verdict"] == "mismatch" and "max err 0.5" in off["detail"]
    assert on["verdict"] == "pass" and on["changed"] == [1]
