"""Edits of valid files and requests for the impossible end in one clear line, exit 2,
before the work starts: no hang, no allocation past memory, no crash (issue 7's list)."""
from __future__ import annotations

import os
import re
import pathlib
import subprocess
import sys

import pytest

from libpypto.analysis import limits
from libpypto.driver import parse_ir
from libpypto.errors import InputError
from libpypto.ir import expr as E
from libpypto.ir import serde
from libpypto.ir.types import TensorType

BIN = pathlib.Path(sys.executable).parent
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def tool(name, *args, env=None, timeout=120):
    e = {**os.environ, **(env or {})}
    return subprocess.run([str(BIN / f"pypto-{name}"), *map(str, args)], capture_output=True,
                          text=True, env=e, timeout=timeout)


def one_line(p, code=2) -> str:
    assert p.returncode == code, (p.returncode, p.stderr)
    line = p.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, p.stderr
    return line


def save(tmp_path, doc, name):
    f = tmp_path / name
    f.write_bytes(serde.dumps(doc))
    return f


def test_a_loop_of_a_trillion_trips_is_refused_before_it_starts(ex, tmp_path):
    doc = ex.doc("ffn_relu_dynamic", "exec")
    next(op for op in doc.body if op.name == "loop").attrs["stop"] = 10 ** 12
    f = save(tmp_path, doc, "big.exec")
    for t in ("sched", "run"):
        line = one_line(tool(t, f, "--bind", "h_0=64", "--bind", "out_0=64", "-o", os.devnull))
        assert "1,000,000,000,000" in line and "PYPTO_MAX_LAUNCHES" in line, line


def test_a_loop_step_of_zero_is_refused(ex, tmp_path):
    doc = ex.doc("ffn_relu_dynamic", "exec")
    next(op for op in doc.body if op.name == "loop").attrs["step"] = 0
    f = save(tmp_path, doc, "step.exec")
    line = one_line(tool("run", f, "--bind", "h_0=64", "--bind", "out_0=64", "-o", os.devnull))
    assert "step" in line, line


def test_tensors_past_memory_are_refused_before_allocating(ex, tmp_path):
    doc = ex.doc("add", "tensor")
    for op in doc.walk():
        for v in op.results:
            if isinstance(v.type, TensorType):
                v.type = TensorType(v.type.dtype, (1 << 20, 1 << 20))
    f = save(tmp_path, doc, "huge.ir")
    line = one_line(tool("run", f, "-o", os.devnull, timeout=60))
    assert "PYPTO_MAX_BYTES" in line, line


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.needs_cc)])
def test_a_bound_size_past_memory_is_refused(backend):
    p = tool("run", EXAMPLES / "softmax.py", "--bind", f"x_0={1 << 37}", "--backend", backend,
             "-o", os.devnull, timeout=60)
    assert "PYPTO_MAX_BYTES" in one_line(p)


def test_limits_are_configurable(monkeypatch):
    monkeypatch.setenv("PYPTO_MAX_INSTANCES", "3")
    assert limits.limit("INSTANCES") == 3
    with pytest.raises(limits.LimitError, match="PYPTO_MAX_INSTANCES") as info:
        limits.require("INSTANCES", 4, "task instances")
    assert info.value.exit_code == 2
    limits.require("INSTANCES", 3, "task instances")


def test_the_instance_limit_stops_a_run(ex, tmp_path):
    f = EXAMPLES / "softmax.py"
    line = one_line(tool("run", f, "--bind", "x_0=4096", "--backend", "numpy", "-o",
                         os.devnull, env={"PYPTO_MAX_INSTANCES": "10"}))
    assert "task instances" in line and "PYPTO_MAX_INSTANCES" in line, line


@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.needs_cc)])
def test_zero_size_runs_as_an_empty_op(backend):
    p = tool("run", EXAMPLES / "softmax.py", "--bind", "x_0=0", "--backend", backend,
             "-o", os.devnull)
    assert p.returncode == 0 and "softmax: pass" in p.stderr and "0 tasks" in p.stderr, p.stderr


def test_a_negative_size_is_refused():
    assert "negative" in one_line(tool("run", EXAMPLES / "softmax.py", "--bind", "x_0=-5",
                                       "-o", os.devnull))


def test_an_output_param_resized_in_the_embedded_graph_is_refused(ex):
    doc = ex.doc("add", "exec")
    src = next(op for op in doc.body if op.name == "source")
    p = next(op for op in src.regions[0] if op.name == "param" and op.attrs["role"] == "output")
    t = p.result.type
    p.result.type = TensorType(t.dtype, (t.shape[0] * 4,) + tuple(t.shape[1:]))
    with pytest.raises(InputError, match="does not match the tensor graph's param 'out'"):
        parse_ir(serde.dumps(doc), "edit.exec")


def test_a_param_without_its_gm_is_refused(ex):
    doc = ex.doc("add", "exec")
    gm = next(op for op in doc.body if op.name == "gm" and op.attrs.get("param") == "y")
    del gm.attrs["param"]
    with pytest.raises(InputError, match="the params y have no gm"):
        parse_ir(serde.dumps(doc), "edit.exec")


def test_a_schedule_without_its_target_record_runs_or_is_refused_cleanly(ex, tmp_path):
    doc = ex.doc("softmax", "sched")
    doc.attrs.pop("target", None)
    p = tool("run", save(tmp_path, doc, "notarget.sched"), "-o", os.devnull)
    if p.returncode:
        one_line(p)
    else:
        assert "softmax: pass" in p.stderr, p.stderr


# -- programs that reach outside their tensors (libpypto/analysis/access.py) -------------------

def _edit_store(doc, edit):
    prog = next(op for op in doc.body if op.name == "program")
    store = [op for op in prog.walk() if op.name == "tstore"][-1]
    edit(store.attrs)
    return doc


@pytest.mark.parametrize("edit, want", [
    (lambda a: a.update(offsets=[E.add(a["offsets"][0], 1)] + a["offsets"][1:]),
     "tstore touches .* in dim 0 of a tensor of shape \\[256, 512\\]"),
    (lambda a: a.update(offsets=[E.sub(a["offsets"][0], 1)] + a["offsets"][1:]),
     "tstore touches \\[-1:"),
    (lambda a: a.update(valid=[a["valid"][0], 1024]), "outside the tensor or the tile"),
])
@pytest.mark.parametrize("backend", ["numpy", pytest.param("c", marks=pytest.mark.needs_cc)])
def test_a_program_reaching_outside_its_tensor_is_refused_before_it_runs(ex, tmp_path, edit,
                                                                         want, backend):
    doc = _edit_store(ex.doc("add", "sched"), edit)
    line = one_line(tool("run", save(tmp_path, doc, "reach.sched"), "--backend", backend,
                         "-o", os.devnull))
    assert re.search(want, line) and "add.py:11" in line, line
